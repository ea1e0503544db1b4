"""The plan cache: other parameter values reuse the plan and still give their own answers; any
non-query statement drops the cached plans."""
import numpy as np
import pyarrow as pa
import pytest

from cluster.local import LocalRunner
from engine.session import Session

SQL = "SELECT COUNT(id) FROM sbtest1 WHERE big_int_col > %s"


@pytest.fixture()
def session():
    runner = LocalRunner(leaves=2, partitions_per_leaf=2)
    s = Session(runner)
    s.execute("CREATE TABLE sbtest1 (id BIGINT NOT NULL, big_int_col BIGINT NOT NULL, name VARCHAR(20), "
              "SORT KEY (big_int_col))")
    values = np.random.default_rng(7).integers(-1000, 1000, 2000)
    s.load_table("sbtest1", pa.table({"id": np.arange(2000), "big_int_col": values,
                                      "name": [f"n{i % 10}" for i in range(2000)]}))
    # statistics now: a histogram collected in the background would drop the cached plans mid-test
    s.execute("ANALYZE TABLE sbtest1")
    s.values = values
    yield s
    runner.shutdown()


def test_other_values_reuse_the_plan_and_answer_right(session):
    cache = session.plan_cache
    for bound in (0, -500, 999, 250, -2000, 0):
        assert session.execute(SQL, (bound,)).table.column(0)[0].as_py() == int((session.values > bound).sum())
    assert cache.misses == 1 and cache.hits == 5


def test_strings_ranges_and_in_lists(session):
    sql = "SELECT COUNT(*) FROM sbtest1 WHERE name = %s AND big_int_col BETWEEN %s AND %s"
    names = np.array([f"n{i % 10}" for i in range(2000)])
    for name, low, high in (("n1", -100, 100), ("n2", 0, 900), ("n3", -1000, -1), ("zz", 0, 1)):
        expected = int(((names == name) & (session.values >= low) & (session.values <= high)).sum())
        assert session.execute(sql, (name, low, high)).table.column(0)[0].as_py() == expected
    sql = "SELECT COUNT(*) FROM sbtest1 WHERE big_int_col IN (%s, %s, %s)"
    for triple in ((1, 2, 3), (5, 5, 7), (-4, 10, 999)):
        assert session.execute(sql, triple).table.column(0)[0].as_py() == int(np.isin(session.values, triple).sum())


def test_folded_values_are_not_cached_wrongly(session):
    sql = "SELECT COUNT(*) FROM sbtest1 WHERE big_int_col > %s + 10 LIMIT %s"
    for bound, limit in ((0, 1), (100, 5), (-300, 1)):
        assert session.execute(sql, (bound, limit)).table.column(0)[0].as_py() == int((session.values > bound + 10).sum())


def test_ddl_and_writes_invalidate(session):
    cache = session.plan_cache
    assert session.execute(SQL, (0,)).table.column(0)[0].as_py() == int((session.values > 0).sum())
    session.execute("INSERT INTO sbtest1 VALUES (5000, 5000, 'x')")
    assert not cache.entries
    assert session.execute(SQL, (0,)).table.column(0)[0].as_py() == int((session.values > 0).sum()) + 1
    session.execute("DROP TABLE sbtest1")
    session.execute("CREATE TABLE sbtest1 (id BIGINT NOT NULL, big_int_col BIGINT NOT NULL)")
    session.execute("INSERT INTO sbtest1 VALUES (1, 10), (2, 20)")
    assert session.execute(SQL, (15,)).table.column(0)[0].as_py() == 1
    assert session.execute(SQL, (0,)).table.column(0)[0].as_py() == 2


def test_literal_queries_are_cached_by_shape(session):
    cache = session.plan_cache
    misses, hits = cache.misses, cache.hits
    for bound in (0, 500, 999, 250, 999, 3):
        sql = f"SELECT COUNT(id) FROM sbtest1 WHERE big_int_col > {bound}"
        assert session.execute(sql).table.column(0)[0].as_py() == int((session.values > bound).sum())
    # seen once (planned as written), templated the second time, served from the template after
    assert (cache.misses - misses, cache.hits - hits) == (1, 4)


def test_lifted_literals_keep_their_meaning(session):
    names = np.array([f"n{i % 10}" for i in range(2000)])
    for _ in range(3):
        rows = session.execute("SELECT name, COUNT(*) FROM sbtest1 WHERE name IN ('n1', 'n2') "
                               "GROUP BY 1 ORDER BY 1 LIMIT 5").table.to_pylist()
        assert rows == [{"name": "n1", "COUNT(*)": 200}, {"name": "n2", "COUNT(*)": 200}]
        assert session.execute("SELECT COUNT(*) FROM sbtest1 WHERE name LIKE 'n1%'").table.column(0)[0].as_py() \
            == int((names == "n1").sum())
        assert session.execute("SELECT COUNT(*) FROM sbtest1 WHERE big_int_col BETWEEN -10.5 AND 10.25") \
            .table.column(0)[0].as_py() == int(((session.values >= -10.5) & (session.values <= 10.25)).sum())
        # a literal that is syntax: the ordinal and the LIMIT stay text
        assert session.execute("SELECT id FROM sbtest1 ORDER BY 1 DESC LIMIT 2").table.column(0).to_pylist() \
            == [1999, 1998]


def test_wider_literals_do_not_reuse_a_narrower_plan(session):
    for bound in (5, 6, 7, 3_000_000_000, -3_000_000_000, 10**20):
        sql = f"SELECT COUNT(*) FROM sbtest1 WHERE big_int_col < {bound}"
        assert session.execute(sql).table.column(0)[0].as_py() == int((session.values < min(bound, 2**62)).sum())
    for bound in ("0.5", "0.25", "0.125", "12.5", "-0.5"):
        sql = f"SELECT COUNT(*) FROM sbtest1 WHERE big_int_col < {bound}"
        assert session.execute(sql).table.column(0)[0].as_py() == int((session.values < float(bound)).sum())


def test_errors_of_lifted_queries_are_the_statement_s(session):
    from engine.errors import BindError
    for _ in range(3):
        with pytest.raises(BindError, match="nope"):
            session.execute("SELECT nope FROM sbtest1 WHERE big_int_col > 5")
    assert session.execute("SELECT COUNT(*) FROM sbtest1 WHERE big_int_col > 5000").table.column(0)[0].as_py() == 0


def test_parameter_doctests():
    import doctest

    from engine.sql import parameters
    assert doctest.testmod(parameters).failed == 0


def test_repeated_text_runs_from_its_own_entry(session):
    """``SELECT 1`` cannot be a literal template (its literal names its column): its exact text is
    cached from its second run, and later runs neither parse nor plan."""
    cache = session.plan_cache
    for _ in range(4):
        result = session.execute("SELECT 1")
        assert result.table.column(0).to_pylist() == [1] and [c.name for c in result.columns] == ["1"]
    assert ("SELECT 1", "canopy", session.runner.num_partitions, "text") in cache.entries
    import engine.session as session_module
    real_parse = session_module.parse
    session_module.parse = None           # a hit must not reach the parser
    try:
        hits = cache.hits
        assert session.execute("SELECT 1").table.column(0).to_pylist() == [1]
        assert cache.hits == hits + 1
    finally:
        session_module.parse = real_parse


def test_text_without_a_template_is_a_hit_on_its_third_run(session):
    """A query whose literals make no template (``5 + 10`` is folded into one constant) keeps its own
    text's plan on its second run, so the third runs it without parsing or planning."""
    cache = session.plan_cache
    sql = "SELECT COUNT(*) FROM sbtest1 WHERE big_int_col > 5 + 10"
    expected = int((session.values > 15).sum())
    hits = cache.hits
    for _ in range(2):
        assert session.execute(sql).table.column(0)[0].as_py() == expected
    assert cache.hits == hits
    assert cache.entries.get((sql, "canopy", session.runner.num_partitions, "text")) is not None
    assert session.execute(sql).table.column(0)[0].as_py() == expected
    assert cache.hits == hits + 1


def test_text_entries_follow_writes_and_session_state(session):
    sql = "SELECT COUNT(*), MAX(id) FROM sbtest1"
    for _ in range(3):
        assert session.execute(sql).table.to_pylist()[0] == {"COUNT(*)": 2000, "MAX(id)": 1999}
    session.execute("INSERT INTO sbtest1 VALUES (5000, 5000, 'x')")
    for _ in range(3):
        assert session.execute(sql).table.to_pylist()[0] == {"COUNT(*)": 2001, "MAX(id)": 5000}
    for value in ("a", "b", "c"):                  # a variable is read on every run, never cached
        session.execute(f"SET @v = '{value}'")
        assert session.execute("SELECT @v").table.column(0).to_pylist() == [value]
        assert session.execute("SELECT @v").table.column(0).to_pylist() == [value]
    session.execute("CREATE DATABASE other")
    session.execute("CREATE TABLE other.sbtest1 (id BIGINT NOT NULL)")
    session.execute("USE other")                  # the same text in another database: its own entry
    for _ in range(2):
        assert session.execute("SELECT COUNT(*) FROM sbtest1").table.column(0).to_pylist() == [0]
    session.execute("USE canopy")
    assert session.execute("SELECT COUNT(*) FROM sbtest1").table.column(0).to_pylist() == [2001]


def test_locking_reads_are_not_cached(session):
    session.set_autocommit(False)
    for _ in range(3):
        session.execute("SELECT id FROM sbtest1 WHERE id = 3 FOR UPDATE")
    from engine.sql.plan_cache import UNCACHEABLE
    assert all(entry is UNCACHEABLE for key, entry in session.plan_cache.entries.items() if "FOR UPDATE" in key[0])
    session.rollback()


def test_instant_queries_are_those_cached_without_tables(session):
    """The wire server runs these on its event loop (no thread hand-off): only cached plans that read
    no table qualify, and they answer as execute() does."""
    assert session.execute_if_instant("SELECT 1 + 1") is None          # not cached yet: nothing run
    questions = session.questions
    for _ in range(3):       # seen, then its literal template refused (folded), then its text cached
        session.execute("SELECT 1 + 1")
    result = session.execute_if_instant("SELECT 1 + 1")
    assert result is not None and result.table.column(0).to_pylist() == [2]
    assert session.questions == questions + 4                           # counted as a statement
    for _ in range(3):
        session.execute("SELECT COUNT(*) FROM sbtest1")
    assert session.execute_if_instant("SELECT COUNT(*) FROM sbtest1") is None


@pytest.mark.parametrize("sql", ["SELECT 1 / 0", "SELECT CONCAT('a', 'b'), 2.5, NULL",
                                 "SELECT CAST('12abc' AS SIGNED)", "SELECT 1 UNION ALL SELECT 2"])
def test_instant_queries_answer_and_warn_as_execute(session, sql):
    """An instant query runs in the caller's thread without the scheduler (engine.exec.inline): the
    same rows, column descriptions and warnings (SHOW WARNINGS) as the runner's run of the plan."""
    for _ in range(3):
        expected = session.execute(sql)
        expected_warnings = session.execute("SHOW WARNINGS").table
    result = session.execute_if_instant(sql)
    assert result is not None and result.table.equals(expected.table) and result.columns == expected.columns
    assert session.execute("SHOW WARNINGS").table.equals(expected_warnings)


def test_errors_of_repeated_texts_are_the_statement_s(session):
    from engine.errors import Error
    for _ in range(3):
        with pytest.raises(Error, match="no_such_table"):
            session.execute("SELECT * FROM no_such_table")
        assert "no_such_table" in session.execute("SHOW WARNINGS").table.column(2)[0].as_py()
    session.execute("CREATE TABLE no_such_table (a BIGINT)")
    for _ in range(3):
        assert session.execute("SELECT * FROM no_such_table").table.num_rows == 0


def test_what_operators_derive_follows_their_fields_and_stays_home(session):
    """A cached plan's operators keep what they derive from their description (the filter split for
    the kernels, the metadata plan of a count): a plan bound to other values derives it afresh from
    its own filters, and a stage shipped to another process carries only the description."""
    import pickle

    from engine.exec.operators.scan import ScanExec
    from engine.exec.stages import decode_stage, encode_stage
    answers = {}
    for bound in (0, 500, -999, 0, 500):
        got = session.execute(SQL, (bound,)).table.column(0)[0].as_py()
        assert got == int((session.values > bound).sum())
        answers.setdefault(bound, got)
    entry = next(e for k, e in session.plan_cache.entries.items() if k[0].startswith("SELECT COUNT(id)"))
    bound = entry.bind([-999])
    stage = next(s for s in bound.stages if s.scanned)

    def scans(op):
        return [op] if isinstance(op, ScanExec) else [s for c in op.children for s in scans(c)]
    scan = scans(stage.root)[0]
    assert scan.kernel_filter() is not None and any(k.startswith("_derived_") for k in vars(scan))
    assert not any(k.startswith("_derived_") for k in vars(pickle.loads(pickle.dumps(scan))))
    shipped = scans(decode_stage(encode_stage(stage)).root)[0]
    assert shipped.kernel_filter().kernel[0].args == scan.kernel_filter().kernel[0].args
    assert session.execute(SQL, (-999,)).table.column(0)[0].as_py() == answers[-999]


def test_constant_queries_run_in_one_stage(session):
    """Rows no table holds (SELECT 1, a UNION of them) are made where they are read: no stage on a leaf and
    no exchange to the aggregator."""
    from engine.sql.query import plan_query
    from engine.sql.parser import parse
    for sql in ("SELECT 1", "SELECT 1 + 2 AS x, 'a' AS y", "SELECT 1 AS a UNION ALL SELECT 2"):
        planned = plan_query(parse(sql)[0].node, session.catalog, session.database, session.statistics,
                             session.runner.num_partitions)
        assert len(planned.stages) == 1, sql
    assert session.execute("SELECT 1 AS a UNION ALL SELECT 2 ORDER BY a DESC").table.column(0).to_pylist() \
        == [2, 1]


def test_dates_datetimes_and_decimals_reuse_the_plan(session):
    """Parameters of every cacheable type: each shape gets its plan once, later values are bound
    into it and answer as a fresh planning would (checked against Python over the same rows)."""
    import datetime
    import decimal
    session.execute("CREATE TABLE events (id BIGINT NOT NULL, d DATE, ts DATETIME(6), amount DECIMAL(10,2))")
    base = datetime.datetime(2020, 1, 1)
    rows = [(i, (base + datetime.timedelta(days=i * 7)).date(), base + datetime.timedelta(hours=i * 13, microseconds=i),
             decimal.Decimal(i * 37 % 1000) / 4) for i in range(200)]
    session.load_table("events", pa.table({"id": [r[0] for r in rows], "d": [r[1] for r in rows],
                                           "ts": pa.array([r[2] for r in rows], pa.timestamp("us")),
                                           "amount": pa.array([r[3] for r in rows], pa.decimal128(10, 2))}))
    session.execute("ANALYZE TABLE events")      # statistics now, not in the background mid-test
    cache = session.plan_cache
    sql = "SELECT COUNT(*) FROM events WHERE d >= %s AND ts < %s AND amount > %s"
    probes = [(datetime.date(2020, 6, 1), datetime.datetime(2022, 1, 1), decimal.Decimal("10.50")),
              (datetime.date(2021, 2, 3), datetime.datetime(2020, 3, 1), decimal.Decimal("99.75")),
              (datetime.date(2019, 1, 1), datetime.datetime(2030, 1, 1), decimal.Decimal("12.25")),
              (datetime.date(2020, 6, 1), datetime.datetime(2022, 1, 1, 0, 0, 0, 5), decimal.Decimal("10.50"))]
    hits = cache.hits
    for day, moment, amount in probes:
        expected = sum(1 for _, d, ts, a in rows if d >= day and ts < moment and a > amount)
        assert session.execute(sql, (day, moment, amount)).table.column(0)[0].as_py() == expected
    # the first planned; the next two bound into it; the datetime with microseconds is its own shape
    assert cache.hits - hits == 2
    key_shapes = {k[1] for k in cache.entries if k[0].startswith("SELECT COUNT(*) FROM events")}
    assert len(key_shapes) == 2


def test_prepared_statements_bind_into_the_cached_plan(session):
    """Session.prepare / execute_prepared (the wire server's COM_STMT_PREPARE / EXECUTE): the markers
    are numbered once; each execution answers for its values and reuses the plan."""
    prepared = session.prepare("SELECT COUNT(*) FROM sbtest1 WHERE big_int_col > %s AND name LIKE 'n1%%'", 1)
    names = np.array([f"n{i % 10}" for i in range(2000)])
    hits = session.plan_cache.hits
    for bound in (0, 500, -700, 0):
        expected = int(((session.values > bound) & np.char.startswith(names, "n1")).sum())
        assert session.execute_prepared(prepared, [bound]).table.column(0)[0].as_py() == expected
    assert session.plan_cache.hits - hits == 3
    from engine.errors import Error
    with pytest.raises(Error, match="1 parameters but 2"):
        session.execute_prepared(prepared, [1, 2])


def test_a_plan_made_on_a_cache_miss_checks_privileges_first(session):
    """The run that fills the cache (a statement's first run with parameters, a lifted-literal
    shape's second) plans outside the ordinary path: it must refuse what that path refuses."""
    from engine.errors import AccessDeniedError

    for ddl in ["CREATE DATABASE open_db", "CREATE TABLE open_db.t (k INT)", "CREATE USER reader IDENTIFIED BY 'pw'",
                "GRANT SELECT ON open_db.* TO reader"]:
        session.execute(ddl)
    reader = Session(session.runner, "open_db", user="reader")
    try:
        for sql, params in [("SELECT COUNT(id) FROM canopy.sbtest1 WHERE big_int_col > %s", (0,))] + \
                [("SELECT COUNT(id) FROM canopy.sbtest1 WHERE big_int_col > 5", None)] * 4:
            with pytest.raises(AccessDeniedError):
                reader.execute(sql, params)
        assert reader.execute("SELECT COUNT(*) FROM t WHERE k > %s", (0,)).table.column(0)[0].as_py() == 0
    finally:
        reader.close()


def test_plans_equal_up_to_a_renaming_of_fresh_column_ids():
    """Optimizer rules name the columns they make from a counter every planning advances (magic
    sets: ``p_partkey#m10``, then ``#m19``): two plannings that differ by one consistent renaming of
    those ids are the same plan (TPC-H Q02, Q17, Q20 were planned on every run); a renaming that is
    not one to one, or any other difference, is not."""
    from dataclasses import dataclass
    from types import SimpleNamespace

    from engine.sql.plan_cache import plans_equal

    @dataclass(frozen=True)
    class Node:
        ids: tuple
        schema: pa.Schema
        label: str = "scan"

    def planned(ids, label="scan", schema_ids=None):
        schema = pa.schema([(i, pa.int64()) for i in (schema_ids or ids)])
        return SimpleNamespace(init_plans=(), recursive=(), stages=(Node(tuple(ids), schema, label),), names=["a"], fields=())

    first = planned(["a#m10", "b#m11", "a#m10", "c#3"])
    assert plans_equal(first, planned(["a#m19", "b#m20", "a#m19", "c#3"]))
    assert not plans_equal(first, planned(["a#m19", "b#m19", "a#m19", "c#3"]))       # two ids merged
    assert not plans_equal(first, planned(["a#m19", "b#m20", "a#m21", "c#3"]))       # one id split
    assert not plans_equal(first, planned(["a#m19", "b#m20", "a#m19", "c#4"]))       # a binder id
    assert not plans_equal(first, planned(["a#m19", "b#m20", "a#m19", "c#3"], label="other"))
    assert not plans_equal(first, planned(["a#m19", "b#m20", "a#m19", "c#3"],
                                          schema_ids=["a#m20", "b#m19", "a#m20", "c#3"]))  # schema disagrees
    # an id equal in both plans counts as renamed to itself: another cannot become it
    assert not plans_equal(planned(["a#m10", "b#m11"]), planned(["a#m11", "b#m11"]))


def test_a_magic_set_query_is_planned_once():
    """A query whose plan holds a magic set's fresh ids (a correlated subquery over an aggregate)
    is cached by its text like any other, and answers the same from the cache."""
    runner = LocalRunner(leaves=2, partitions_per_leaf=2)
    s = Session(runner)
    try:
        s.execute("CREATE TABLE p (pk BIGINT NOT NULL, brand VARCHAR(10), PRIMARY KEY (pk))")
        s.execute("CREATE TABLE l (pk BIGINT NOT NULL, qty BIGINT NOT NULL, price BIGINT NOT NULL)")
        rng = np.random.default_rng(3)
        s.load_table("p", pa.table({"pk": np.arange(200), "brand": [f"b{i % 20}" for i in range(200)]}))
        s.load_table("l", pa.table({"pk": rng.integers(0, 200, 5000), "qty": rng.integers(1, 50, 5000),
                                    "price": rng.integers(1, 1000, 5000)}))
        s.execute("ANALYZE TABLE p")
        s.execute("ANALYZE TABLE l")
        sql = ("SELECT SUM(price) FROM l, p WHERE p.pk = l.pk AND brand = 'b3' "
               "AND qty < (SELECT 0.2 * AVG(qty) FROM l AS l2 WHERE l2.pk = p.pk)")
        answers = [s.execute(sql).table.column(0)[0].as_py() for _ in range(4)]
        assert len(set(answers)) == 1
        entry = s.plan_cache.entries.get((sql, s.database, runner.num_partitions, "text"))
        assert entry is not None and type(entry).__name__ == "PlannedQuery"
    finally:
        runner.shutdown()


def test_a_join_on_computed_keys_is_planned_once(session):
    """A join whose keys are expressions hashes columns the physical planner computes under fresh ids
    (``lkey0#k12``); the text cache takes the plan (ids drawn from object addresses made every
    planning differ, so such queries were planned on every run), and it answers from the cache."""
    sql = "SELECT COUNT(*), SUM(a.id) FROM sbtest1 AS a JOIN sbtest1 AS b ON a.big_int_col = b.id + b.id"
    values = session.values
    ids = np.arange(2000)
    counts = np.bincount(ids + ids, minlength=5000)
    keep = (values >= 0) & (values < counts.size)
    expected = (int(counts[values[keep]].sum()), int((ids[keep] * counts[values[keep]]).sum()))
    answers = [tuple(c[0].as_py() for c in session.execute(sql).table.columns) for _ in range(3)]
    assert answers == [expected] * 3
    entry = session.plan_cache.entries.get((sql, session.database, session.runner.num_partitions, "text"))
    assert entry is not None and type(entry).__name__ == "PlannedQuery"
    hits = session.plan_cache.hits
    assert tuple(c[0].as_py() for c in session.execute(sql).table.columns) == expected
    assert session.plan_cache.hits == hits + 1
