"""Fixture tests of the logical rewrite rules: ``tests/fixtures/optimizer/<rule>.sql``.

Each file holds cases of SQL over the TPC-H schema (and ``keyed_customer``: customer's columns with its
PRIMARY KEY declared) and the logical plan (``Query.pretty()``) expected after
binding it and applying the file's rule, compared exactly (columns whose names clash across table
aliases are shown as ``alias.column``). The file header names the rule and the rules
that run before it (in order) so that the case means what it does in the real pipeline::

    -- rule: order_joins
    -- after: factor_or, pushdown_filters, transitive_predicates
    -- (free text: what the rule does, what the cases show)

    -- name: q3_joins_smallest_first
    -- (free text)
    SELECT ...
    ----
    <expected plan>

``-- rule: binder`` applies no rule: the expected text is the bound plan (constant folding and subquery
decorrelation happen in the binder). A case with a ``-- unchanged`` line asserts that the rule leaves
the plan as it found it (a case where it must not fire); every other case asserts that it changed it.

Estimates come from fixed, hand-given statistics (TPC-H SF 0.01 row counts, key NDVs equal to the
referenced table's rows, 25 distinct values elsewhere, no histograms), so estimate-driven rules
(order_joins, reduce_aggregates) give the same plan on every machine. ``CANOPY_UPDATE_FIXTURES=1``
rewrites the expected text of every case from what the rules produce now, for review with ``git diff``.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

import engine
from engine.optimizer.cardinality import Estimator
from engine.optimizer.context import OptimizerContext
from engine.catalog import TableDef
from engine.plan.binder import Binder
from engine.core.expressions import ColumnRef
from engine.plan.logical import Query
from engine.sql.parser import parse_one
from engine.workloads import tpch

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "optimizer"
UPDATE = os.environ.get("CANOPY_UPDATE_FIXTURES") == "1"
SEPARATOR = "----"

# TPC-H SF 0.01 row counts
ROWS = {"region": 5, "nation": 25, "supplier": 100, "customer": 1_500, "part": 2_000, "partsupp": 8_000,
        "orders": 15_000, "lineitem": 60_175, "keyed_customer": 1_500}
# TPC-H's schema declares no keys; customer with its PRIMARY KEY, for the rules that read keys
KEYED_CUSTOMER = ("CREATE TABLE keyed_customer (c_custkey BIGINT PRIMARY KEY, c_name VARCHAR(25) NOT NULL, "
                  "c_nationkey BIGINT NOT NULL, c_acctbal DECIMAL(15,2) NOT NULL)")
# a key column has as many values as the table it identifies
KEYS = {"regionkey": "region", "nationkey": "nation", "suppkey": "supplier", "custkey": "customer",
        "partkey": "part", "orderkey": "orders"}


class FixedStatistics:
    """Deterministic statistics: exact-looking row counts, NDVs by column name, no histograms."""

    def table_rows(self, table) -> int:
        return ROWS[table.name]

    def column_ndv(self, table, column: str) -> int:
        key = column.split("_", 1)[1]
        if key in KEYS:
            return min(ROWS[KEYS[key]], ROWS[table.name])
        return min(25, ROWS[table.name])

    def column_stats(self, table, column: str):
        return None


@dataclass
class Case:
    name: str
    comments: list[str]
    sql: str
    expected: str
    unchanged: bool


@dataclass
class FixtureFile:
    path: Path
    header: list[str]
    rule: str
    after: list[str]
    cases: list[Case]


def parse_fixture(path: Path) -> FixtureFile:
    lines = path.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("-- name:")]
    if not starts:
        raise ValueError(f"{path.name}: no '-- name:' case")
    header = lines[:starts[0]]
    directives = {}
    for line in header:
        m = re.fullmatch(r"-- (rule|after): *(.*)", line)
        if m:
            directives[m.group(1)] = m.group(2).strip()
    if "rule" not in directives:
        raise ValueError(f"{path.name}: the header has no '-- rule:' line")
    after = [r.strip() for r in directives.get("after", "").split(",") if r.strip()]
    cases = []
    for start, end in zip(starts, starts[1:] + [len(lines)]):
        block = lines[start:end]
        name = block[0][len("-- name:"):].strip()
        if SEPARATOR not in block:
            raise ValueError(f"{path.name}: case {name!r} has no '{SEPARATOR}' line")
        sep = block.index(SEPARATOR)
        comments = [l for l in block[1:sep] if l.startswith("--")]
        sql = "\n".join(l for l in block[1:sep] if not l.startswith("--")).strip()
        if not sql:
            raise ValueError(f"{path.name}: case {name!r} has no SQL")
        expected = "\n".join(block[sep + 1:]).strip("\n")
        cases.append(Case(name, comments, sql, expected, "-- unchanged" in comments))
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"{path.name}: duplicate case names")
    return FixtureFile(path, header, directives["rule"], after, cases)


def write_fixture(fixture: FixtureFile) -> None:
    out = list(fixture.header)
    for case in fixture.cases:
        out += [f"-- name: {case.name}", *case.comments, case.sql, SEPARATOR, case.expected, ""]
    fixture.path.write_text("\n".join(out))


def rule_function(name: str):
    module = importlib.import_module(f"engine.optimizer.rules.{name}")
    return getattr(module, name)


def apply_rules(query: Query, rules, ctx: OptimizerContext) -> Query:
    def run(plan):
        for rule in rules:
            plan = rule(plan, ctx)
        return plan
    return Query(run(query.root), query.names,
                 tuple(Query(run(sub.root), sub.names, sub.subqueries) for sub in query.subqueries))


def _map(value, fn):
    """``value`` rebuilt with ``fn`` applied to every ColumnRef in it (plans, expressions, tuples)."""
    if isinstance(value, ColumnRef):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(_map(v, fn) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, TableDef)):
        return type(value)(**{f.name: _map(getattr(value, f.name), fn) for f in dataclasses.fields(value) if f.init})
    return value


def qualified(query: Query) -> Query:
    """The query with the columns whose names clash across table aliases named ``alias.column``: a
    self-join (TPC-H Q21's ``l2.l_suppkey <> l1.l_suppkey``) reads as written, not ``l_suppkey <> l_suppkey``.
    Scan columns have ids ``<alias or table>.<column>#<n>``."""
    qualifiers = defaultdict(set)

    def collect(ref):
        m = re.fullmatch(r"(.+)\.([^.#]+)#\d+", ref.id)
        if m:
            qualifiers[ref.name].add(m.group(1))
        return ref
    _map(query, collect)

    def rename(ref):
        m = re.fullmatch(r"(.+)\.([^.#]+)#\d+", ref.id)
        if m and len(qualifiers[ref.name]) > 1:
            return dataclasses.replace(ref, name=f"{m.group(1)}.{ref.name}")
        return ref
    return _map(query, rename)


def render(query: Query) -> str:
    return qualified(query).pretty()


@pytest.fixture(scope="module")
def catalog():
    con = engine.connect()
    tpch.create_schema(con)
    con.execute(KEYED_CUSTOMER)
    yield con.session.catalog, con.session.database
    con.close()


FILES = sorted(FIXTURES.glob("*.sql"))


def test_every_rule_has_a_fixture_file():
    rules = {p.stem for p in (Path(engine.__file__).parent / "optimizer" / "rules").glob("*.py")} - {"__init__"}
    assert rules <= {parse_fixture(p).rule for p in FILES}
    for path in FILES:
        fixture = parse_fixture(path)
        assert fixture.rule == path.stem or fixture.rule == "binder", path.name
        assert 2 <= len(fixture.cases) <= 6, path.name
        assert any(c.unchanged for c in fixture.cases) or fixture.rule == "binder", \
            f"{path.name}: no case where the rule must not fire"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_fixture(path, catalog):
    fixture = parse_fixture(path)
    prior = [rule_function(r) for r in fixture.after]
    rule = [] if fixture.rule == "binder" else [rule_function(fixture.rule)]
    failures = []
    for case in fixture.cases:
        ctx = OptimizerContext(Estimator(FixedStatistics()))
        bound = Binder(*catalog).bind_statement(parse_one(case.sql))
        before = apply_rules(bound, prior, ctx)
        got = render(apply_rules(before, rule, ctx))
        if rule and case.unchanged != (got == render(before)):
            failures.append(f"{case.name}: the rule {'changed' if case.unchanged else 'did not change'} "
                            f"the plan\n{got}")
        if UPDATE:
            case.expected = got
        elif got != case.expected:
            failures.append(f"{case.name}: expected\n{case.expected}\ngot\n{got}")
    if UPDATE:
        write_fixture(fixture)
    assert not failures, f"{path.name}:\n" + "\n\n".join(failures)


def test_parse_errors_are_precise(tmp_path):
    bad = tmp_path / "x.sql"
    bad.write_text("-- rule: top_n\n-- name: a\nSELECT 1\n")
    with pytest.raises(ValueError, match="case 'a' has no '----' line"):
        parse_fixture(bad)
    bad.write_text("-- name: a\nSELECT 1\n----\nValues\n")
    with pytest.raises(ValueError, match="no '-- rule:' line"):
        parse_fixture(bad)


def test_a_scan_filter_is_estimated_against_the_unfiltered_scan(catalog):
    """An equality on a column with only a distinct count (no histogram) selects 1/NDV of the rows:
    estimated against the scan that carries it, it used to pin its own column to one value first and
    keep every row (p_brand = 'Brand#23': 2,000 rows of part instead of 80)."""
    from engine.optimizer import optimize_logical
    from engine.plan.logical import Scan
    estimator = Estimator(FixedStatistics())
    ctx = OptimizerContext(estimator)
    query = Binder(*catalog).bind_statement(parse_one("SELECT p_partkey FROM part WHERE p_brand = 'Brand#23'"))
    plan = optimize_logical(query.root, ctx)
    scans = []

    def walk(node):
        if isinstance(node, Scan):
            scans.append(node)
        for child in node.inputs:
            walk(child)
    walk(plan)
    assert [s.filters != () for s in scans] == [True]
    assert estimator.rows(scans[0]) == pytest.approx(2_000 / 25)
