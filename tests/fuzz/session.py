"""A fuzz session: mutated TPC-H / TPC-DS queries run against small loaded data until a time budget
is spent; every statement must answer or raise a clear engine error.

A failure is a :class:`engine.errors.InternalError` (a bug by definition), or any exception that is not
one of Canopy's errors (a raw Python exception escaping the engine). A crash ends the process, so the
test fails with it. Each statement runs under ``statement_timeout`` (a mutation can turn a join into a
cross product), on tables cut down to a few thousand rows.

``python -m tests.fuzz.session SECONDS [SEED [tpcds]]`` runs one on TPC-H SF 0.01 (or TPC-DS SF 0.01)
and prints what failed.
"""
from __future__ import annotations

import dataclasses
import random
import time

from sqlglot import parse_one

from engine.errors import Error, InternalError
from tests.fuzz.mutations import Schema, mutate

# TPC-H SF 0.01 cut down (keys kept consistent): ~1,500 orders, ~6,000 lineitems, 800 partsupps
TPCH_CUTS = {"lineitem": "l_orderkey <= 6000", "orders": "o_orderkey <= 6000", "customer": "c_custkey <= 300",
             "part": "p_partkey <= 200", "partsupp": "ps_partkey <= 200"}


@dataclasses.dataclass
class Failure:
    query: str
    mutations: list
    sql: str
    error: BaseException

    def __str__(self) -> str:
        return f"{self.query} {self.mutations}: {type(self.error).__name__}: {str(self.error)[:300]}\n    {self.sql}"


@dataclasses.dataclass
class Outcome:
    statements: int = 0
    answered: int = 0
    refused: dict = dataclasses.field(default_factory=dict)     # error class -> count
    failures: list = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        refused = ", ".join(f"{k} {v}" for k, v in sorted(self.refused.items(), key=lambda kv: -kv[1]))
        return f"{self.statements} statements: {self.answered} answered; refused: {refused}; " \
               f"{len(self.failures)} failures"


def schema_of(session) -> Schema:
    """Table -> column name -> "number" / "text" / "date", for every table of ``database``."""
    schema = {}
    for table in session.runner.catalog.tables(session.database):
        kinds = schema[table.name.lower()] = {}
        for column in table.columns:
            kind = column.type.kind
            kinds[column.name.lower()] = "number" if kind in ("int", "decimal", "float", "bool") else \
                "date" if kind in ("date", "datetime", "timestamp", "time") else "text"
    return schema


def run(session, queries: list[tuple[str, str]], seconds: float, seed: int, *, max_mutations: int = 3) -> Outcome:
    """Mutate ``queries`` ((name, sql) pairs) at random with ``seed`` and run them in ``session`` (an
    engine.session.Session) until ``seconds`` have passed."""
    rng = random.Random(seed)
    schema = schema_of(session)
    trees = [(name, parse_one(sql, read="mysql")) for name, sql in queries]
    outcome = Outcome()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        name, tree = rng.choice(trees)
        mutated, what = mutate(tree, rng, schema, rng.randint(1, max_mutations))
        sql = mutated.sql(dialect="mysql")
        outcome.statements += 1
        try:
            session.execute(sql)
            outcome.answered += 1
        except Error as error:
            if isinstance(error, InternalError):
                outcome.failures.append(Failure(name, what, sql, error))
            else:
                outcome.refused[type(error).__name__] = outcome.refused.get(type(error).__name__, 0) + 1
        except Exception as error:      # noqa: BLE001 - a raw exception escaping the engine: a failure
            outcome.failures.append(Failure(name, what, sql, error))
    return outcome


def tpch_session(con, statement_timeout_ms: int = 1000):
    """A session on ``con``'s cluster, which holds TPC-H in database ``canopy``, over a cut-down copy
    of it (TPCH_CUTS) in database ``fuzz_tpch``, with ``statement_timeout``. ``con`` is left as it was."""
    from engine.session import Session
    from engine.workloads import tpch

    session = Session(con.session.runner, database="fuzz_tpch")
    for statement in tpch.schema_statements():
        session.execute(statement)
    for table in session.runner.catalog.tables("fuzz_tpch"):
        where = f" WHERE {TPCH_CUTS[table.name]}" if table.name in TPCH_CUTS else ""
        session.execute(f"INSERT INTO fuzz_tpch.{table.name} SELECT * FROM canopy.{table.name}{where}")
    session.execute(f"SET statement_timeout = {statement_timeout_ms}")
    return session


def tpch_connection():
    """A connection holding TPC-H SF 0.01 (generated once, cached) in database ``canopy``."""
    import engine
    from engine.workloads import tpch

    data_dir = tpch.generate(0.01, tpch.default_cache_dir())
    con = engine.connect(load_dir=str(data_dir))
    tpch.create_schema(con)
    tpch.load(con, data_dir)
    return con


def tpcds_connection(data_dir):
    """A connection holding TPC-DS (at SF 0.01 the largest tables are time_dim and date_dim, 86k and
    73k rows; store_sales has 29k) in database ``canopy``."""
    import engine
    from engine.workloads import tpcds

    con = engine.connect(load_dir=str(data_dir))
    tpcds.create_schema(con)
    tpcds.load(con, data_dir)
    return con


def timed_session(con, statement_timeout_ms: int = 1000):
    """A session of its own on ``con``'s cluster, in database ``canopy``, with ``statement_timeout``."""
    from engine.session import Session

    session = Session(con.session.runner)
    session.execute(f"SET statement_timeout = {statement_timeout_ms}")
    return session


if __name__ == "__main__":
    import sys

    from engine.workloads import tpch

    from engine.workloads import tpcds

    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if len(sys.argv) > 3 and sys.argv[3] == "tpcds":
        connection = tpcds_connection(tpcds.generate(0.01, tpcds.default_cache_dir()))
        session, workload = timed_session(connection), tpcds.queries()
    else:
        connection = tpch_connection()
        session, workload = tpch_session(connection), tpch.queries()
    result = run(session, workload, seconds, seed)
    print(result.summary())
    for failure in result.failures:
        print(failure)
    connection.close()
