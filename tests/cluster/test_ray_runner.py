"""The Ray runner behind the DB-API: tables of every distribution, writes, statistics hooks, errors raised
on a leaf arriving as the engine's own, and a second driver reconnecting to a detached deployment."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import engine


def test_distributions_dml_and_joins(ray_con):
    cur = ray_con.cursor()
    cur.execute("CREATE TABLE s (k INT, v VARCHAR(10), SHARD KEY (k))")
    cur.execute("CREATE TABLE kl (k INT, n INT)")
    cur.execute("CREATE REFERENCE TABLE r (k INT, name VARCHAR(10))")
    cur.executemany("INSERT INTO s VALUES (%s, %s)", [(i, f"v{i % 5}") for i in range(200)])
    cur.execute("INSERT INTO kl SELECT k, k * 2 FROM s")
    cur.execute("INSERT INTO r VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    cur.execute("SELECT COUNT(*), COUNT(DISTINCT v), SUM(k) FROM s")
    assert cur.fetchall() == [(200, 5, 19900)]
    cur.execute("SELECT r.name, SUM(kl.n) FROM kl JOIN r ON kl.k = r.k GROUP BY r.name ORDER BY 1")
    assert cur.fetchall() == [("one", 2), ("three", 6), ("two", 4)]
    cur.execute("SELECT v, COUNT(*) FROM s JOIN kl ON s.v = CONCAT('v', kl.n % 5) GROUP BY v ORDER BY v")
    assert cur.fetchall() == [(f"v{j}", 40 * 40) for j in range(5)]     # 40 rows of each v on both sides
    cur.execute("SELECT name FROM r ORDER BY k LIMIT 2")
    assert cur.fetchall() == [("one",), ("two",)]
    cur.execute("DELETE FROM s WHERE k >= 100")
    cur.execute("UPDATE r SET name = 'uno' WHERE k = 1")
    cur.execute("SELECT COUNT(*) FROM s")
    assert cur.fetchall() == [(100,)]
    cur.execute("SELECT name FROM r WHERE k = 1")
    assert cur.fetchall() == [("uno",)]
    cur.execute("ANALYZE TABLE s")
    cur.execute("TRUNCATE TABLE kl")
    cur.execute("SELECT COUNT(*) FROM kl")
    assert cur.fetchall() == [(0,)]
    cur.execute("DROP TABLE kl")


def test_leaf_errors_arrive_as_engine_errors(ray_con):
    cur = ray_con.cursor()
    cur.execute("CREATE TABLE big (k BIGINT, SHARD KEY (k))")
    cur.execute("INSERT INTO big VALUES (9223372036854775807), (1)")
    with pytest.raises(engine.DataError) as info:
        cur.execute("SELECT k * 2 FROM big")
    assert "traceback" not in str(info.value).lower() and "ray" not in str(info.value).lower()
    cur.execute("SELECT COUNT(*) FROM big")          # the connection goes on
    assert cur.fetchall() == [(2,)]


def test_leaves_are_ray_actors_in_their_own_processes(ray_con):
    import os

    info = ray_con.session.runner.leaf_info()
    assert [leaf["leaf"] for leaf in info] == [0, 1]
    assert len({leaf["pid"] for leaf in info} | {os.getpid()}) == 3


@pytest.mark.slow          # a second Python process joins the Ray cluster: ~10 s
def test_a_second_driver_reconnects_by_name(ray_session):
    address = ray_session.get_runtime_context().gcs_address
    name = "canopy-reconnect-test"
    con = engine.connect(cluster="ray", name=name, detached=True)
    try:
        con.execute("CREATE TABLE t (k INT, SHARD KEY (k))")
        con.execute("INSERT INTO t VALUES (1), (2), (3)")
        con.close()             # detached: the leaves keep their data
        script = textwrap.dedent(f"""
            import engine
            con = engine.connect(cluster="ray", address={address!r}, name={name!r}, detached=True)
            con.execute("INSERT INTO t VALUES (4)")
            con.execute("CREATE TABLE u (x INT)")
            print(con.execute("SELECT SUM(k) FROM t").fetchall())
            con.close()
        """)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().splitlines()[-1] == "[(Decimal('10'),)]"
        con = engine.connect(cluster="ray", name=name, detached=True)
        assert con.execute("SELECT COUNT(*) FROM t").fetchall() == [(4,)]
        assert con.execute("SELECT COUNT(*) FROM u").fetchall() == [(0,)]   # the other driver's DDL
    finally:
        con.session.runner.destroy()
        con.close()
