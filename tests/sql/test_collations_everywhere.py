"""Collations beyond comparisons and GROUP BY (engine/collation.py): ROLLUP / CUBE / GROUPING SETS,
window functions (MIN / MAX OVER, PARTITION BY, ORDER BY), GREATEST / LEAST, GROUP_CONCAT's ORDER BY and
DISTINCT, APPROX_COUNT_DISTINCT, and string literals in the session's collation_connection. The oracle
is Python's (the keys of test_collations.ci / bin_key); MariaDB's is test_collation_mariadb.py. Both
runners (CANOPY_RUNNER=ray)."""
from __future__ import annotations

from collections import Counter, defaultdict

import pytest

import engine
from tests.sql.test_collations import bin_key, ci, con, rows  # noqa: F401 - con is the shared fixture


def present(people):
    return {i: v for i, v in people.items() if v is not None}


def test_rollup_cube_and_grouping_sets_group_under_the_collation(con):  # noqa: F811
    con, people = con
    want = Counter(ci(v) for v in people.values())
    for clause in ("ROLLUP(name)", "CUBE(name)", "GROUPING SETS ((name), ())", "name WITH ROLLUP"):
        got = rows(con, f"SELECT name, COUNT(*), GROUPING(name) FROM people GROUP BY {clause}")
        groups = [(v, n) for v, n, rolled in got if not rolled]
        assert Counter({ci(v): n for v, n in groups}) == want and len(groups) == len(want), clause
        assert all(v is None or v in people.values() for v, _ in groups)     # a stored value, not a key
        assert [(v, n) for v, n, rolled in got if rolled] == [(None, len(people))], clause
    # two keys, one rolled up: the string key is NULL where rolled up, a stored value elsewhere
    got = rows(con, "SELECT id % 2, name, COUNT(*), GROUPING(name) FROM people GROUP BY id % 2, name WITH ROLLUP")
    leaves = Counter({(g, ci(v)): n for g, v, n, rolled in got if g is not None and not rolled})
    assert leaves == Counter((i % 2, ci(v)) for i, v in people.items())
    assert {g: n for g, v, n, rolled in got if rolled} == dict(Counter(i % 2 for i in people)) | {None: len(people)}
    got = rows(con, "SELECT exact, COUNT(*), GROUPING(exact) FROM people GROUP BY ROLLUP(exact)")   # _bin: exact
    assert Counter({bin_key(v): n for v, n, rolled in got if not rolled}) == Counter(map(bin_key, people.values()))


def test_window_min_max_partition_and_order_follow_the_collation(con):  # noqa: F811
    con, people = con
    live = present(people)
    got = rows(con, "SELECT id, MIN(name) OVER (PARTITION BY id % 4), MAX(name) OVER (PARTITION BY id % 4), "
                    "MAX(exact) OVER (PARTITION BY id % 4) FROM people")
    groups = defaultdict(list)
    for i, v in live.items():
        groups[i % 4].append(v)
    for i, low, high, exact_high in got:
        assert ci(low) == min(map(ci, groups[i % 4])) and ci(high) == max(map(ci, groups[i % 4]))
        assert low in groups[i % 4] and high in groups[i % 4]       # one of the rows' values
        assert bin_key(exact_high) == max(map(bin_key, groups[i % 4]))
    # a running MAX over ORDER BY id: the largest key so far
    got = dict(rows(con, "SELECT id, MAX(name) OVER (ORDER BY id) FROM people"))
    best = None
    for i in sorted(people):
        if people[i] is not None and (best is None or ci(people[i]) > ci(best)):
            best = people[i]
        assert ci(got[i]) == ci(best)
    # PARTITION BY / ORDER BY a string inside OVER: peers under the collation
    got = rows(con, "SELECT id, DENSE_RANK() OVER (ORDER BY name), COUNT(*) OVER (PARTITION BY name) "
                    "FROM people WHERE name IS NOT NULL")
    ranks = {k: r for r, k in enumerate(sorted({ci(v) for v in live.values()}), 1)}
    sizes = Counter(ci(v) for v in live.values())
    assert sorted(got) == sorted((i, ranks[ci(v)], sizes[ci(v)]) for i, v in live.items())


def test_greatest_and_least_compare_under_the_collation(con):  # noqa: F811
    con, people = con
    got = rows(con, "SELECT id, GREATEST(name, 'm'), LEAST(name, 'M', 'b'), GREATEST(exact, 'm') FROM people")
    for i, high, low, exact_high in got:
        v = people[i]
        if v is None:
            assert (high, low, exact_high) == (None, None, None)
            continue
        assert ci(high) == max(ci(v), "M") and ci(low) == min(ci(v), "M", "B")
        assert bin_key(exact_high) == max(bin_key(v), "m")
    assert rows(con, "SELECT GREATEST('a', 'B'), LEAST('b', 'A'), GREATEST('a' COLLATE utf8mb4_bin, 'B'), "
                     "LEAST('x', NULL)") == [("B", "A", "a", None)]


def test_group_concat_orders_and_deduplicates_under_the_collation(con):  # noqa: F811
    con, people = con
    live = present(people)
    (text,), = rows(con, "SELECT GROUP_CONCAT(id ORDER BY name, id) FROM people WHERE name IS NOT NULL "
                         "AND id < 120")
    chosen = {i: v for i, v in live.items() if i < 120}
    assert [int(x) for x in text.split(",")] == sorted(chosen, key=lambda i: (ci(chosen[i]), i))
    (text,), = rows(con, "SELECT GROUP_CONCAT(DISTINCT name SEPARATOR '|') FROM people")
    values = text.split("|")
    assert sorted(map(ci, values)) == sorted({ci(v) for v in live.values()})
    (text,), = rows(con, "SELECT GROUP_CONCAT(DISTINCT exact SEPARATOR '|') FROM people")
    assert sorted(map(bin_key, text.split("|"))) == sorted({bin_key(v) for v in live.values()})
    assert rows(con, "SELECT APPROX_COUNT_DISTINCT(name) FROM people") == [(len({ci(v) for v in live.values()}),)]


def test_literals_take_the_connection_collation():
    own = engine.connect()
    try:
        own.execute("CREATE TABLE t (s VARCHAR(10), b VARCHAR(10) COLLATE utf8mb4_bin)")
        own.execute("INSERT INTO t VALUES ('a', 'a'), ('A', 'A'), ('á', 'á')")
        checks = "SELECT 'a' = 'A', 'a' IN ('A'), 'a' LIKE 'A', GREATEST('a', 'B'), 'a' = 'a  '"
        assert rows(own, checks) == [(1, 1, 1, "B", 1)]
        own.execute("SET NAMES utf8mb4 COLLATE utf8mb4_bin")
        assert rows(own, "SELECT @@collation_connection") == [("utf8mb4_bin",)]
        assert rows(own, checks) == [(0, 0, 0, "a", 1)]           # _bin is PAD SPACE too
        # a column's collation beats a literal's (coercibility), an explicit COLLATE beats both
        assert rows(own, "SELECT COUNT(*) FROM t WHERE s = 'A'") == [(3,)]
        assert rows(own, "SELECT COUNT(*) FROM t WHERE b = 'A'") == [(1,)]
        assert rows(own, "SELECT 'a' = 'A' COLLATE utf8mb4_general_ci") == [(1,)]
        own.execute("SET collation_connection = utf8mb4_general_ci")
        assert rows(own, checks) == [(1, 1, 1, "B", 1)]
        own.execute("SET collation_connection = 'utf8mb4_bin'")
        assert rows(own, "SELECT 'a' = 'A'") == [(0,)]
        own.execute("SET character_set_connection = utf8mb4")      # resets to the charset's default
        assert rows(own, "SELECT @@collation_connection, 'a' = 'A'") == [("utf8mb4_general_ci", 1)]
        own.execute("SET collation_connection = utf8mb4_bin")
        own.execute("SET collation_connection = DEFAULT")
        assert rows(own, "SELECT @@collation_connection, 'a' = 'A'") == [("utf8mb4_general_ci", 1)]
        # a collation Canopy does not compare by is refused, and nothing changes
        for sql in ("SET collation_connection = 'latin1_swedish_ci'",
                    "SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci", "SET collation_connection = NULL"):
            with pytest.raises(engine.Error):
                own.execute(sql)
            assert rows(own, "SELECT @@collation_connection") == [("utf8mb4_general_ci",)]
    finally:
        own.close()


def test_connection_collation_is_not_shared_through_the_plan_cache():
    """The plan cache is shared by the sessions of a cluster: a literal bound under one session's
    collation must not serve another's."""
    from engine.session import Session
    first = engine.connect()
    second = Session(first.session.runner)
    try:
        second.execute("SET NAMES utf8mb4 COLLATE utf8mb4_bin")
        for _ in range(3):
            assert rows(first, "SELECT 'q' = 'Q'") == [(1,)]
            assert second.execute("SELECT 'q' = 'Q'").table.column(0).to_pylist() == [0]
    finally:
        second.close()
        first.close()


def test_string_shard_keys_place_rows_by_collation_key_so_joins_are_colocated():
    """Rows are placed by the hash of a string shard key's collation key (cluster/placement.py), the
    hash a join's, GROUP BY's or PARTITION BY's exchange of collation_key(k) computes: tables sharded on
    string keys join without moving rows, and 'a' / 'A ' meet. Stored (dictionary-encoded, loaded)
    and plain (inserted) rows alike; a keyless side is moved to the sharded side's partitions."""
    import random

    import pyarrow as pa
    rng = random.Random(5)
    words = ["alpha", "Beta", "gamma", "DELTA", "épsilon", "Zeta", "eta", "théta", "straße", "ǆemal"]

    def variant(w):
        return "".join(c.upper() if rng.random() < 0.5 else c for c in w) + rng.choice(["", " "])

    left = [variant(rng.choice(words)) for _ in range(2000)]
    right = [variant(w) for w in words] + ["nobody"]
    own = engine.connect()
    try:
        own.execute("CREATE TABLE a (k VARCHAR(20), x INT, SHARD KEY (k))")
        own.execute("CREATE TABLE b (k VARCHAR(20), v INT, SHARD KEY (k))")
        own.execute("CREATE TABLE c (k VARCHAR(20), v INT)")                           # keyless
        own.execute("CREATE TABLE d (k VARCHAR(20) COLLATE utf8mb4_bin, v INT, SHARD KEY (k))")
        own.load_table("a", pa.table({"k": pa.array(left).dictionary_encode(), "x": pa.array(range(2000), pa.int32())}))
        values = ", ".join(f"('{w}', {i})" for i, w in enumerate(right))
        for table in "bcd":
            own.execute(f"INSERT INTO {table} VALUES {values}")
        for table, key in (("b", ci), ("c", ci), ("d", bin_key)):
            sql = f"SELECT a.x, {table}.v FROM a JOIN {table} ON a.k = {table}.k"
            # a _ci column against a _bin one compares under _bin (MySQL's coercibility)
            want = sorted((i, j) for i, u in enumerate(left) for j, w in enumerate(right) if key(u) == key(w))
            assert sorted(rows(own, sql)) == want, table
            plan = "\n".join(r[0] for r in rows(own, "EXPLAIN " + sql))
            if table == "b":
                assert "[colocated]" in plan and "repartition" not in plan, plan
            if table == "c":        # only the keyless side moves
                assert plan.count("Exchange repartition") == 1 and "Scan c" in plan.split("Exchange repartition")[1]
        plan = "\n".join(r[0] for r in rows(own, "EXPLAIN SELECT k, COUNT(*) FROM a GROUP BY k"))
        assert "repartition" not in plan, plan
        got = rows(own, "SELECT k, COUNT(*) FROM a GROUP BY k")
        assert Counter({ci(k): n for k, n in got}) == Counter(map(ci, left)) and len(got) == len(set(map(ci, left)))
    finally:
        own.close()


def test_a_table_placed_before_collated_placement_keeps_its_placement(tmp_path):
    """The catalog records a table's placement (engine.catalog.TableDef.collated_placement): a catalog
    written before it had none, and its string-key tables are read as placed by the stored values, so
    their joins move both sides again (correct for rows of either placement)."""
    from engine.storage.columnstore.files import read_checked_json, write_checked_json
    own = engine.connect(data_dir=str(tmp_path))
    own.execute("CREATE TABLE a (k VARCHAR(10), x INT, SHARD KEY (k))")
    own.execute("CREATE TABLE b (k VARCHAR(10), y INT, SHARD KEY (k))")
    own.execute("INSERT INTO a VALUES ('q', 1), ('Q ', 2), ('r', 3)")
    own.execute("INSERT INTO b VALUES ('Q', 10), ('R', 20)")
    join = "SELECT x, y FROM a JOIN b ON a.k = b.k ORDER BY x"
    assert "[colocated]" in "\n".join(r[0] for r in rows(own, "EXPLAIN " + join))
    own.close()
    path = tmp_path / "catalog.json"
    document, _ = read_checked_json(path, "catalog")
    for database in document["databases"]:
        for table in database["tables"]:
            assert table.pop("collated_placement") is True
    write_checked_json(path, document)
    own = engine.connect(data_dir=str(tmp_path))
    try:
        plan = "\n".join(r[0] for r in rows(own, "EXPLAIN " + join))
        assert plan.count("Exchange repartition") == 2, plan
        own.execute("INSERT INTO a VALUES ('R  ', 4)")
        assert rows(own, join) == [(1, 10), (2, 10), (3, 20), (4, 20)]
    finally:
        own.close()
