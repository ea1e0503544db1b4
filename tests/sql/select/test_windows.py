"""Window functions against DuckDB: every function, frame kind and window shape over a small sharded
table with NULLs, ties, one-row and all-NULL partitions (DuckDB told MySQL's NULL order: first
ascending, last descending). Runs on both runners (``CANOPY_RUNNER=ray``)."""
import decimal
import math

import pytest

from engine.errors import BindError, UnsupportedError

duckdb = pytest.importorskip("duckdb")

# k is unique (ties broken by it where a function's result depends on the order among peers);
# g has NULL and one-row groups; x and p have NULLs and ties; f has NULLs and negatives
ROWS = ("(1,1,10,1.50,1.5,'a'),(2,1,20,2.25,NULL,'b'),(3,1,20,NULL,3.0,NULL),(4,2,NULL,3.00,4.0,'c'),"
        "(5,2,5,0.50,-1.0,'a'),(6,NULL,7,7.00,2.0,'z'),(7,NULL,NULL,NULL,NULL,NULL),(8,3,1,1.00,1.0,'q'),"
        "(9,1,20,2.25,0.5,'b'),(10,2,5,-1.25,2.5,'d'),(11,4,NULL,NULL,NULL,NULL),(12,1,-3,0.00,-2.5,'e')")
COLUMNS = "k INT, g INT, x INT, p DECIMAL(10,2), f DOUBLE, s VARCHAR(10)"


@pytest.fixture(scope="module")
def both():
    import engine
    con, duck = engine.connect(), duckdb.connect()
    con.execute("CREATE DATABASE w")
    con.execute("USE w")
    con.execute(f"CREATE TABLE t ({COLUMNS}, SHARD KEY (k))")
    con.execute(f"CREATE TABLE r ({COLUMNS}, SHARD KEY (g))")
    duck.execute("SET default_null_order = 'nulls_first_on_asc_last_on_desc'")
    for table in ("t", "r"):
        con.execute(f"INSERT INTO {table} VALUES {ROWS}")
        duck.execute(f"CREATE TABLE {table} ({COLUMNS})")
        duck.execute(f"INSERT INTO {table} VALUES {ROWS}")
    yield con, duck
    con.close()


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, (int, float, decimal.Decimal)) and isinstance(b, (int, float, decimal.Decimal)) \
            and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-4)
    return a == b


def check(both, sql, duck_sql=None):
    con, duck = both
    got = con.execute(sql).fetchall()
    want = duck.execute(duck_sql or sql).fetchall()
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert len(g) == len(w) and all(_same(a, b) for a, b in zip(g, w)), (sql, got, want)


RANKING = [
    "SELECT k, ROW_NUMBER() OVER (PARTITION BY g ORDER BY x, k) FROM t ORDER BY k",
    "SELECT k, ROW_NUMBER() OVER (ORDER BY k DESC) FROM t ORDER BY k",
    "SELECT k, RANK() OVER (PARTITION BY g ORDER BY x), DENSE_RANK() OVER (PARTITION BY g ORDER BY x) FROM t ORDER BY k",
    "SELECT k, RANK() OVER (ORDER BY x DESC), DENSE_RANK() OVER (ORDER BY p) FROM t ORDER BY k",
    "SELECT k, PERCENT_RANK() OVER (PARTITION BY g ORDER BY x), CUME_DIST() OVER (PARTITION BY g ORDER BY x) FROM t ORDER BY k",
    "SELECT k, PERCENT_RANK() OVER (ORDER BY s), CUME_DIST() OVER (ORDER BY s DESC) FROM t ORDER BY k",
    "SELECT k, RANK() OVER (), CUME_DIST() OVER (), PERCENT_RANK() OVER (PARTITION BY g) FROM t ORDER BY k",
    "SELECT k, NTILE(3) OVER (ORDER BY k), NTILE(5) OVER (PARTITION BY g ORDER BY k), NTILE(1) OVER (ORDER BY k) FROM t ORDER BY k",
    "SELECT k, NTILE(20) OVER (ORDER BY k DESC) FROM t ORDER BY k",
    "SELECT k, RANK() OVER (PARTITION BY g, s ORDER BY f) FROM t ORDER BY k",
    "SELECT k, RANK() OVER (PARTITION BY g % 2 ORDER BY x + 1) FROM t ORDER BY k",
]

OFFSETS = [
    "SELECT k, LAG(x) OVER (ORDER BY k), LEAD(x) OVER (ORDER BY k) FROM t ORDER BY k",
    "SELECT k, LAG(x, 2) OVER (PARTITION BY g ORDER BY k), LEAD(s, 2, 'none') OVER (PARTITION BY g ORDER BY k) FROM t ORDER BY k",
    "SELECT k, LAG(p, 1, 0) OVER (PARTITION BY g ORDER BY k), LEAD(f, 1, -1) OVER (ORDER BY k), LAG(x, 0) OVER (ORDER BY k) FROM t ORDER BY k",
    "SELECT k, LAG(x, 1, k) OVER (PARTITION BY g ORDER BY k) FROM t ORDER BY k",
    "SELECT k, FIRST_VALUE(x) OVER (PARTITION BY g ORDER BY k), LAST_VALUE(x) OVER (PARTITION BY g ORDER BY k) FROM t ORDER BY k",
    "SELECT k, LAST_VALUE(s) OVER (PARTITION BY g ORDER BY x, k), NTH_VALUE(s, 2) OVER (PARTITION BY g ORDER BY k) FROM t ORDER BY k",
    "SELECT k, FIRST_VALUE(p) OVER (PARTITION BY g ORDER BY k ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), "
    "LAST_VALUE(p) OVER (PARTITION BY g ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), "
    "NTH_VALUE(f, 3) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) FROM t ORDER BY k",
    "SELECT k, FIRST_VALUE(k) OVER (PARTITION BY g ORDER BY k DESC), LAST_VALUE(x) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM t ORDER BY k",
]

AGGREGATES = [
    "SELECT k, SUM(x) OVER (PARTITION BY g ORDER BY x) FROM t ORDER BY k",
    "SELECT k, SUM(p) OVER (PARTITION BY g), AVG(p) OVER (PARTITION BY g), COUNT(*) OVER (), COUNT(x) OVER (ORDER BY k) FROM t ORDER BY k",
    "SELECT k, SUM(f) OVER (ORDER BY k), AVG(f) OVER (PARTITION BY g ORDER BY k), AVG(x) OVER (PARTITION BY g) FROM t ORDER BY k",
    "SELECT k, MIN(x) OVER (PARTITION BY g ORDER BY k), MAX(x) OVER (PARTITION BY g ORDER BY k), MIN(s) OVER (), MAX(p) OVER (ORDER BY x) FROM t ORDER BY k",
    "SELECT k, COUNT(*) OVER (PARTITION BY g ORDER BY x), COUNT(s) OVER (PARTITION BY g ORDER BY x DESC) FROM t ORDER BY k",
    "SELECT k, STDDEV_POP(x) OVER (PARTITION BY g), STDDEV_SAMP(p) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), "
    "VAR_POP(f) OVER (ORDER BY k), VAR_SAMP(x) OVER (PARTITION BY g ORDER BY k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) "
    "FROM t ORDER BY k",
]

FRAMES = [
    "SELECT k, SUM(x) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), "
    "SUM(x) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), "
    "SUM(x) OVER (ORDER BY k ROWS 3 PRECEDING) FROM t ORDER BY k",
    "SELECT k, SUM(p) OVER (PARTITION BY g ORDER BY k ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), "
    "COUNT(*) OVER (PARTITION BY g ORDER BY k ROWS BETWEEN 2 FOLLOWING AND 3 FOLLOWING), "
    "SUM(x) OVER (PARTITION BY g ORDER BY k ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) FROM t ORDER BY k",
    "SELECT k, MIN(x) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING), "
    "MAX(s) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND 3 FOLLOWING), "
    "MIN(p) OVER (PARTITION BY g ORDER BY k ROWS BETWEEN 1 FOLLOWING AND 2 FOLLOWING), "
    "MAX(f) OVER (ORDER BY k ROWS BETWEEN 4 PRECEDING AND 2 PRECEDING) FROM t ORDER BY k",
    "SELECT k, SUM(x) OVER (ORDER BY x RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING), "
    "COUNT(*) OVER (ORDER BY x RANGE BETWEEN 10 PRECEDING AND CURRENT ROW), "
    "MAX(k) OVER (ORDER BY x DESC RANGE BETWEEN 5 PRECEDING AND 1 FOLLOWING) FROM t ORDER BY k",
    "SELECT k, SUM(f) OVER (PARTITION BY g ORDER BY p RANGE BETWEEN 1.5 PRECEDING AND 0.75 FOLLOWING), "
    "AVG(x) OVER (ORDER BY f RANGE BETWEEN 1 PRECEDING AND 1 PRECEDING), "
    "MIN(s) OVER (ORDER BY p DESC RANGE BETWEEN CURRENT ROW AND 2 FOLLOWING) FROM t ORDER BY k",
    "SELECT k, SUM(x) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), "
    "SUM(x) OVER (ORDER BY x RANGE UNBOUNDED PRECEDING), "
    "SUM(x) OVER (ORDER BY x, k ROWS UNBOUNDED PRECEDING), "
    "SUM(x) OVER (ORDER BY x RANGE BETWEEN 2 FOLLOWING AND UNBOUNDED FOLLOWING) FROM t ORDER BY k",
]

SHAPES = [
    # named windows, a window refining another, several windows in one SELECT
    "SELECT k, RANK() OVER (w ORDER BY x), SUM(x) OVER w, LAG(k) OVER (w ORDER BY k) FROM t "
    "WINDOW w AS (PARTITION BY g) ORDER BY k",
    "SELECT k, RANK() OVER w, SUM(x) OVER w, CUME_DIST() OVER w FROM t WINDOW w AS (PARTITION BY g ORDER BY x) ORDER BY k",
    "SELECT k, SUM(x) OVER w2, ROW_NUMBER() OVER w2 FROM t "
    "WINDOW w1 AS (PARTITION BY g), w2 AS (w1 ORDER BY k) ORDER BY k",
    # windows over aggregates, in expressions, after HAVING, ordered and limited by their results
    "SELECT g, SUM(x), RANK() OVER (ORDER BY SUM(x) DESC) AS r FROM t GROUP BY g ORDER BY r, g",
    "SELECT g, SUM(x) * 100 / SUM(SUM(x)) OVER () AS share FROM t GROUP BY g ORDER BY g",
    "SELECT g, s, SUM(p) / SUM(SUM(p)) OVER (PARTITION BY g) FROM t GROUP BY g, s ORDER BY g, s",
    "SELECT g, COUNT(*) AS c, AVG(COUNT(*)) OVER (ORDER BY g ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) "
    "FROM t GROUP BY g HAVING COUNT(*) > 1 ORDER BY g",
    "SELECT k, x - AVG(x) OVER (PARTITION BY g) AS d FROM t ORDER BY d DESC, k LIMIT 5",
    "SELECT k FROM t ORDER BY ROW_NUMBER() OVER (ORDER BY p DESC, k) LIMIT 4",
    "SELECT DISTINCT g, COUNT(*) OVER (PARTITION BY g) FROM t ORDER BY g",
    # the window in a derived table, filtered outside (a filter on the partition key is pushed below)
    "SELECT * FROM (SELECT k, g, RANK() OVER (PARTITION BY g ORDER BY x DESC) AS r FROM t) v "
    "WHERE r <= 2 AND g > 1 ORDER BY k",
    "SELECT k, SUM(x) OVER (PARTITION BY g ORDER BY k) FROM r ORDER BY k",
    "SELECT t.k, SUM(r.x) OVER (PARTITION BY t.g ORDER BY t.k) FROM t JOIN r ON t.k = r.k ORDER BY t.k",
    "SELECT k, SUM(x) OVER () FROM t WHERE k > 100",
    # in subqueries: an IN over a ranked derived table (TPC-DS q70's shape), a correlated scalar one
    # (the outer values join the window's partitions) and one under OR (unnested, not a semi join)
    "SELECT k FROM t WHERE g IN (SELECT g FROM (SELECT g, RANK() OVER (ORDER BY SUM(x) DESC) AS r FROM t "
    "GROUP BY g) z WHERE r <= 2) ORDER BY k",
    "SELECT k, (SELECT SUM(COUNT(*)) OVER () FROM t t2 WHERE t2.g = t.g) FROM t ORDER BY k",
    "SELECT k, (SELECT MAX(r) FROM (SELECT RANK() OVER (PARTITION BY g ORDER BY x) AS r FROM r) z) FROM t ORDER BY k",
    "SELECT k FROM t WHERE k < 3 OR x IN (SELECT LAG(x) OVER (ORDER BY k) FROM r) ORDER BY k",
]


@pytest.mark.parametrize("sql", RANKING + OFFSETS + AGGREGATES + FRAMES + SHAPES)
def test_matches_duckdb(both, sql):
    check(both, sql)


def test_variance_of_a_large_mean_keeps_its_digits(both):
    con, duck = both
    sql = ("SELECT k, VAR_POP(k + 1e9) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), "
           "STDDEV_SAMP(k * 1e-3 + 1e12) OVER (ORDER BY k) FROM t ORDER BY k")
    check(both, sql)


def test_range_frames_over_dates_and_datetimes_by_interval(both):
    """RANGE offsets over a DATE key in days / weeks and over a DATETIME key in fixed-length units, ascending
    and descending, with NULL keys (their own peer group), against DuckDB."""
    con, duck = both
    days = ", ".join(f"({k}, {k % 3}, DATE '2020-02-25' + INTERVAL {k * k % 11} DAY, "
                     f"TIMESTAMP '2020-02-28 22:00:00' + INTERVAL {k * 37 % 300} MINUTE, {k * 7 % 13})"
                     for k in range(1, 40)) + ", (40, 1, NULL, NULL, 5)"
    for db in (con, duck):
        db.execute("CREATE TABLE dated (k INT, g INT, d DATE, ts DATETIME, v INT)" if db is con else
                   "CREATE TABLE dated (k INT, g INT, d DATE, ts TIMESTAMP, v INT)")
        db.execute(f"INSERT INTO dated VALUES {days}")
    check(both, "SELECT k, SUM(v) OVER (PARTITION BY g ORDER BY d RANGE BETWEEN INTERVAL 3 DAY PRECEDING AND "
                "CURRENT ROW), COUNT(*) OVER (ORDER BY d DESC RANGE BETWEEN INTERVAL 1 WEEK PRECEDING AND "
                "INTERVAL 1 DAY FOLLOWING) FROM dated ORDER BY k")
    check(both, "SELECT k, MAX(v) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 90 MINUTE PRECEDING AND INTERVAL 1 HOUR "
                "FOLLOWING), SUM(v) OVER (ORDER BY ts RANGE INTERVAL 2 HOUR PRECEDING) FROM dated ORDER BY k")
    with pytest.raises(UnsupportedError, match="INTERVAL 1 MONTH over a DATE key"):
        con.execute("SELECT SUM(v) OVER (ORDER BY d RANGE INTERVAL 1 MONTH PRECEDING) FROM dated")
    with pytest.raises(BindError, match="takes INTERVAL offsets"):
        con.execute("SELECT SUM(v) OVER (ORDER BY d RANGE 3 PRECEDING) FROM dated")
    with pytest.raises(BindError, match="needs a DATE or DATETIME ORDER BY key"):
        con.execute("SELECT SUM(v) OVER (ORDER BY v RANGE INTERVAL 1 DAY PRECEDING) FROM dated")


def test_windows_in_a_cte_joined_back(both):
    sql = ("WITH v AS (SELECT g, k, AVG(x) OVER (PARTITION BY g) AS a FROM t) "
           "SELECT v.k, v.a, w.k FROM v JOIN v w ON v.g = w.g AND w.k = v.k + 1 ORDER BY v.k")
    check(both, sql)


@pytest.mark.parametrize("sql, error, fragment", [
    ("SELECT k FROM t WHERE ROW_NUMBER() OVER (ORDER BY k) > 1", BindError, "not allowed in WHERE"),
    ("SELECT g FROM t GROUP BY g HAVING RANK() OVER (ORDER BY g) > 1", BindError, "not allowed in HAVING"),
    ("SELECT SUM(ROW_NUMBER() OVER (ORDER BY k)) OVER () FROM t", BindError, "not allowed in the argument"),
    ("SELECT RANK() OVER w FROM t", BindError, "window 'w' is not defined"),
    ("SELECT SUM(x) OVER (ORDER BY s RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t", UnsupportedError,
     "RANGE frame with an offset"),
    ("SELECT SUM(x) OVER (ORDER BY k, x RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t", BindError,
     "exactly one ORDER BY"),
    ("SELECT COUNT(DISTINCT x) OVER () FROM t", UnsupportedError, "DISTINCT"),
    ("SELECT MEDIAN(x) OVER () FROM t", UnsupportedError, "MEDIAN as a window function"),
    ("SELECT NTILE(0) OVER (ORDER BY k) FROM t", BindError, "NTILE"),
    ("SELECT SUM(x) OVER (ORDER BY k ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM t", BindError, "empty"),
    ("SELECT SUM(x) OVER (w ORDER BY k) FROM t WINDOW w AS (ORDER BY x)", BindError, "ORDER BY already"),
    ("SELECT SUM(x) OVER (ORDER BY k GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t", UnsupportedError,
     "GROUPS window frame"),
    ("SELECT SUM(x) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW) FROM t",
     UnsupportedError, "EXCLUDE"),
    ("SELECT RANK() OVER w FROM t WINDOW w AS (ORDER BY k), w AS (ORDER BY x)", BindError, "defined twice"),
])
def test_errors_name_the_construct(both, sql, error, fragment):
    con, _ = both
    with pytest.raises(error, match=fragment):
        con.execute(sql)


def _explain(con, sql) -> str:
    return "\n".join(row[0] for row in con.execute("EXPLAIN " + sql).fetchall())


def test_explain_repartitions_by_the_partition_keys(both):
    con, _ = both
    text = _explain(con, "SELECT k, RANK() OVER (PARTITION BY g ORDER BY x) FROM t")
    lines = text.splitlines()
    window = next(i for i, line in enumerate(lines) if "Window partition=[g]" in line)
    assert "Exchange repartition" in lines[window + 1], text


def test_explain_no_exchange_when_distributed_on_the_keys(both):
    con, _ = both
    sharded = _explain(con, "SELECT k, RANK() OVER (PARTITION BY g ORDER BY x) FROM r")
    assert "repartition" not in sharded, sharded
    grouped = _explain(con, "SELECT s, g, RANK() OVER (PARTITION BY s, g ORDER BY SUM(x)) FROM t GROUP BY g, s")
    # the GROUP BY's rows are placed by the group keys, or finished on the aggregator: either way the
    # window's partitions are complete where the aggregate finishes, and no exchange sits under it
    lines = grouped.splitlines()
    window = next(i for i, line in enumerate(lines) if line.strip().startswith("Window"))
    assert "Exchange" not in lines[window + 1], grouped


def test_explain_gathers_without_partition_by(both):
    con, _ = both
    text = _explain(con, "SELECT k, ROW_NUMBER() OVER (ORDER BY k) FROM t")
    lines = text.splitlines()
    window = next(i for i, line in enumerate(lines) if "Window order=[k ASC]" in line)
    assert "Exchange gather" in lines[window + 1], text


def test_a_filter_on_partition_keys_goes_below_the_window(both):
    con, _ = both
    text = _explain(con, "SELECT * FROM (SELECT k, g, RANK() OVER (PARTITION BY g ORDER BY x) AS r FROM t) v "
                         "WHERE g > 1 AND r = 1 AND k > 2")
    lines = text.splitlines()
    window = next(i for i, line in enumerate(lines) if line.strip().startswith("Window"))
    below, above = "\n".join(lines[window:]), "\n".join(lines[:window])
    # g > 1 keeps or drops whole partitions: it is read by the scan; r = 1 and k > 2 are not
    assert "(g > 1)" in below and "(k > 2)" not in below and "(rank = 1)" in above, text


# A filter keeping each partition's first ranks: the window takes only those rows (its other calls
# still computed over all rows); ties at the bound (RANK), NULL partitions and order keys, a sum over
# the whole partition and a LEAD beside the rank (in the same window), both sides of the comparison, N past every partition and N = 0
TOP_RANKS = [
    "SELECT * FROM (SELECT k, g, x, RANK() OVER (PARTITION BY g ORDER BY x DESC) AS r FROM t) v WHERE r <= 2 ORDER BY k",
    "SELECT * FROM (SELECT k, g, s, ROW_NUMBER() OVER (PARTITION BY g ORDER BY x, k) AS r, "
    "SUM(x) OVER (PARTITION BY g ORDER BY x, k ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS total, "
    "LEAD(s) OVER (PARTITION BY g ORDER BY x, k) AS next FROM t) v "
    "WHERE r < 3 ORDER BY k",
    "SELECT * FROM (SELECT k, p, DENSE_RANK() OVER (ORDER BY p) AS r FROM r) v WHERE 2 >= r AND k > 1 ORDER BY k",
    "SELECT * FROM (SELECT k, s, RANK() OVER (PARTITION BY s ORDER BY f) AS r FROM t) v WHERE r = 1 ORDER BY k",
    "SELECT * FROM (SELECT k, RANK() OVER (PARTITION BY g ORDER BY x) AS r FROM t) v WHERE r <= 100 ORDER BY k",
    "SELECT * FROM (SELECT k, RANK() OVER (PARTITION BY g ORDER BY x) AS r FROM t) v WHERE r < 1 ORDER BY k",
    "SELECT g, s, r FROM (SELECT g, s, SUM(x) AS t, RANK() OVER (PARTITION BY g ORDER BY SUM(x) DESC) AS r "
    "FROM r GROUP BY g, s) v WHERE r <= 1 ORDER BY g, s",
]


@pytest.mark.parametrize("sql", TOP_RANKS)
def test_top_ranks_match_duckdb(both, sql):
    con, _ = both
    assert " keep " in _explain(con, sql), _explain(con, sql)
    check(both, sql)
