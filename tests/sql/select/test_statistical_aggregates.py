"""STDDEV / VARIANCE / CORR / COVAR, MEDIAN / PERCENTILE_CONT / PERCENTILE_DISC, GROUP_CONCAT, BIT_AND /
BIT_OR / BIT_XOR, ANY_VALUE and APPROX_COUNT_DISTINCT against DuckDB (MySQL's names translated to
DuckDB's: MySQL's STD / STDDEV / VARIANCE are the population statistics), with NULLs, all-NULL and
one-row groups, an empty input, many groups over the partitions, partial states merged on the
aggregator and inside ROLLUP."""
import math

import numpy as np
import pyarrow as pa
import pytest

from oracle import assert_same_rows, canopy_and_duckdb

DUCKDB_NAMES = {"STD(": "STDDEV_POP(", "STDDEV(": "STDDEV_POP(", "VARIANCE(": "VAR_POP("}


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(5)
    n = 4000
    g = rng.integers(0, 300, n)
    g[:5] = 1000                     # a group of 5 ...
    g[5] = 1001                      # ... one of one row
    x = rng.normal(1e6, 2.0, n)      # large mean, small spread: naive sums of squares would cancel
    data = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "g": g,
        "h": pa.array(rng.integers(0, 4, n).astype(np.int32)),
        "x": pa.array(x, mask=(rng.random(n) < 0.1) | (g == 1000)),      # group 1000: x all NULL
        "y": pa.array(3 * x + rng.normal(0, 1, n), mask=rng.random(n) < 0.1),
        "v": pa.array(rng.integers(-1000, 1000, n), mask=rng.random(n) < 0.05),
        "d": pa.array(rng.integers(0, 10**5, n).astype(np.int32)).cast(pa.decimal128(10, 0)).cast(pa.decimal128(12, 2)),
        "s": pa.array([f"s{i}" for i in rng.integers(0, 50, n)], mask=rng.random(n) < 0.05),
    })
    con, duck = canopy_and_duckdb("CREATE TABLE t (id BIGINT, g BIGINT, h INT, x DOUBLE, y DOUBLE, v BIGINT, "
                                  "d DECIMAL(12,2), s VARCHAR(4), SHARD KEY (id))", "t", data)
    yield con, duck
    con.close()


def _duck(sql: str) -> str:
    for mine, theirs in DUCKDB_NAMES.items():
        sql = sql.replace(mine, theirs)
    return sql


def _nan_as_null(rows):
    return [tuple(None if isinstance(v, float) and math.isnan(v) else v for v in r) for r in rows]


CASES = [
    "SELECT g, STDDEV_SAMP(x), STDDEV_POP(x), VAR_SAMP(x), VAR_POP(x), STD(v), STDDEV(d), VARIANCE(v) FROM t GROUP BY g",
    "SELECT STDDEV_SAMP(x), VAR_POP(v), STDDEV_SAMP(d) FROM t",
    "SELECT STDDEV_SAMP(x), VAR_SAMP(v) FROM t WHERE id < 0",                     # no rows: NULL
    "SELECT STDDEV_SAMP(x), STDDEV_POP(x) FROM t WHERE id = 7",                   # one row
    "SELECT h, COUNT(*), AVG(x), STDDEV_SAMP(v) FROM t GROUP BY h",
    "SELECT g, COVAR_SAMP(x, y), COVAR_POP(x, y), CORR(x, y) FROM t GROUP BY g",
    "SELECT g, MEDIAN(v), PERCENTILE_CONT(0.25) WITHIN GROUP (ORDER BY x), "
    "PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY v) FROM t GROUP BY g",
    "SELECT MEDIAN(x), PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY s) FROM t",
    "SELECT g, ANY_VALUE(g * 2), COUNT(*) FROM t GROUP BY g",
    "SELECT h, g, STDDEV_SAMP(x), SUM(v) FROM t GROUP BY ROLLUP(h, g)",
    "SELECT h, MEDIAN(v), COUNT(DISTINCT s) FROM t GROUP BY ROLLUP(h)",
]


@pytest.mark.parametrize("sql", CASES)
def test_matches_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), _nan_as_null(duck.execute(_duck(sql)).fetchall()), rel=1e-7)


@pytest.mark.parametrize("sql", [
    "SELECT g, BIT_AND(v), BIT_OR(v), BIT_XOR(v) FROM t WHERE v IS NOT NULL GROUP BY g",
    "SELECT BIT_AND(v), BIT_OR(v), BIT_XOR(v) FROM t",
    "SELECT h, BIT_OR(v), BIT_XOR(v + 1) FROM t GROUP BY ROLLUP(h)",
])
def test_bit_aggregates_are_unsigned(both, sql):
    """MySQL's BIT_AND / BIT_OR / BIT_XOR are BIGINT UNSIGNED: DuckDB's signed answers read as the same
    64 bits unsigned (partial states merged on the aggregator, and in ROLLUP)."""
    con, duck = both
    result = con.execute(sql)
    assert [d[1] for d in result.description if d[0].startswith("BIT_")] == ["BIGINT UNSIGNED"] * \
        sum(d[0].startswith("BIT_") for d in result.description)
    bits = [i for i, d in enumerate(result.description) if d[0].startswith("BIT_")]
    want = [tuple(v % 2**64 if i in bits and v is not None else v for i, v in enumerate(r))
            for r in duck.execute(sql).fetchall()]
    assert_same_rows(result.fetchall(), want)


def test_one_value_groups_and_all_null_groups(both):
    """MySQL: a sample statistic of one value is NULL, of none NULL; the population variance of one is 0;
    BIT_AND of no values is all ones (18446744073709551615, BIGINT UNSIGNED), BIT_OR 0."""
    con, _ = both
    rows = con.execute("SELECT g, STDDEV_SAMP(v), VAR_POP(v), STDDEV_SAMP(x), BIT_AND(x), BIT_OR(x), "
                       "GROUP_CONCAT(x) FROM t WHERE g IN (1000, 1001) GROUP BY g ORDER BY g").fetchall()
    assert rows[0][3] is None and rows[0][4] == 2**64 - 1 and rows[0][5] == 0 and rows[0][6] is None
    assert rows[1][1] is None and rows[1][2] == 0.0


@pytest.mark.parametrize("mine, duckdb", [
    ("GROUP_CONCAT(s)", "STRING_AGG(s, ',')"),
    ("GROUP_CONCAT(s ORDER BY id DESC SEPARATOR '; ')", "STRING_AGG(s, '; ' ORDER BY id DESC)"),
    ("GROUP_CONCAT(DISTINCT s ORDER BY s)", "STRING_AGG(DISTINCT s, ',' ORDER BY s)"),
    ("GROUP_CONCAT(v ORDER BY v, id)", "STRING_AGG(CAST(v AS VARCHAR), ',' ORDER BY v, id)"),
])
def test_group_concat(both, mine, duckdb):
    con, duck = both
    got = con.execute(f"SELECT g, {mine} FROM t GROUP BY g").fetchall()
    want = duck.execute(f"SELECT g, {duckdb} FROM t GROUP BY g").fetchall()
    if "ORDER BY" in mine:
        assert sorted(got, key=repr) == sorted(want, key=repr)
    else:       # no order: the same values per group
        assert {g: sorted((v or "").split(",")) for g, v in got} == {g: sorted((v or "").split(",")) for g, v in want}


def test_approx_count_distinct_is_close(both):
    con, duck = both
    got = dict(con.execute("SELECT h, APPROX_COUNT_DISTINCT(v) FROM t GROUP BY h").fetchall())
    want = dict(duck.execute("SELECT h, COUNT(DISTINCT v) FROM t GROUP BY h").fetchall())
    assert got.keys() == want.keys()
    for h, exact in want.items():
        assert abs(got[h] - exact) <= 0.06 * exact, (h, got[h], exact)
    (total,), = con.execute("SELECT APPROX_COUNT_DISTINCT(id) FROM t").fetchall()
    assert abs(total - 4000) <= 0.06 * 4000


def test_explain_shows_partial_states_merged(both):
    con, _ = both
    text = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT STDDEV_SAMP(x) FROM t"))
    assert "HashAggregate partial" in text and "stddev_samp(x)" in text, text
    text = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT g, MEDIAN(v) FROM t GROUP BY g"))
    assert "HashAggregate partial" not in text, text


@pytest.mark.parametrize("sql, message", [
    ("SELECT PERCENTILE_CONT(2) WITHIN GROUP (ORDER BY x) FROM t", "between 0 and 1"),
    ("SELECT STDDEV_SAMP(DISTINCT x) FROM t", "DISTINCT"),
    ("SELECT STDDEV_SAMP(SUM(x)) FROM t", "nested"),
])
def test_errors(both, sql, message):
    import engine
    con, _ = both
    with pytest.raises(engine.Error, match=message):
        con.execute(sql)


def test_hll_estimates_match_the_kernel():
    """The per-group estimator, vectorised over groups, gives kernels.hll_estimate's value per sketch."""
    import kernels
    from engine.exec import extended_aggregates as ea

    rng = np.random.default_rng(3)
    m = 1 << ea.HLL_PRECISION
    sketches = np.zeros((5, m), np.uint8)
    for row, distinct in zip(sketches, (0, 1, 50, 5000, 200000)):
        kernels.hll_add(rng.integers(0, 2**63, distinct).astype(np.uint64) * np.uint64(2) + np.uint64(1), row)
    got = ea._estimates(sketches)
    want = [kernels.hll_estimate(row) for row in sketches]
    np.testing.assert_allclose(got, want, rtol=1e-9)
