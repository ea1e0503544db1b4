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
