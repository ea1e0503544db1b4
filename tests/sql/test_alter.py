"""ALTER TABLE ADD / DROP / MODIFY / CHANGE / RENAME COLUMN, RENAME TO, and RENAME TABLE: the rows after
each change, keys kept and renamed, refusals, durability in a data_dir and a kill -9 before the catalog
swap. Runs on either runner (``CANOPY_RUNNER=ray``)."""
from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import pytest

import engine
from engine.errors import IntegrityError, NotSupportedError

ROOT = Path(__file__).resolve().parents[2]
_names = itertools.count()


@pytest.fixture(scope="module")
def con():
    connection = engine.connect()
    yield connection
    connection.close()


@pytest.fixture
def name(con):
    table = f"al{next(_names)}"
    con.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v TEXT, n INT DEFAULT 3)")
    con.execute(f"INSERT INTO {table} (id, v) VALUES (1, 'a'), (2, 'b')")
    yield table
    for suffix in ("", "_renamed", "_x", "_y"):
        con.execute(f"DROP TABLE IF EXISTS {table}{suffix}")


def test_add_columns(con, name):
    con.execute(f"ALTER TABLE {name} ADD COLUMN d DECIMAL(5,2) DEFAULT 1.5, ADD f INT FIRST, ADD g TEXT AFTER id")
    assert [r[0] for r in con.execute(f"DESCRIBE {name}").fetchall()] == ["f", "id", "g", "v", "n", "d"]
    assert con.execute(f"SELECT * FROM {name} ORDER BY id").fetchall() == [
        (None, 1, None, "a", 3, Decimal("1.50")), (None, 2, None, "b", 3, Decimal("1.50"))]
    con.execute(f"INSERT INTO {name} (id, v) VALUES (3, 'c')")          # the new defaults apply
    assert con.execute(f"SELECT d FROM {name} WHERE id = 3").fetchall() == [(Decimal("1.50"),)]


def test_modify_change_rename_drop(con, name):
    con.execute(f"ALTER TABLE {name} MODIFY COLUMN n BIGINT NOT NULL")
    con.execute(f"ALTER TABLE {name} CHANGE v label VARCHAR(10)")
    con.execute(f"ALTER TABLE {name} RENAME COLUMN id TO ident")
    con.execute(f"ALTER TABLE {name} DROP COLUMN n")
    assert con.execute(f"DESCRIBE {name}").fetchall() == [
        ("ident", "int", "NO", "PRI", None, ""), ("label", "varchar(10)", "YES", "", None, "")]
    assert con.execute(f"SELECT ident, label FROM {name} ORDER BY ident").fetchall() == [(1, "a"), (2, "b")]
    with pytest.raises(IntegrityError, match="Duplicate entry '1' for key 'PRIMARY'"):
        con.execute(f"INSERT INTO {name} VALUES (1, 'dup')")            # the renamed key is enforced


def test_a_failed_change_changes_nothing(con, name):
    with pytest.raises(engine.DataError):
        con.execute(f"ALTER TABLE {name} MODIFY COLUMN v INT")           # 'a' is no number
    with pytest.raises(engine.IntegrityError):
        con.execute(f"ALTER TABLE {name} ADD COLUMN z INT NOT NULL")     # MySQL would fill 0 (documented)
    with pytest.raises(NotSupportedError, match="shard, sort or unique key"):
        con.execute(f"ALTER TABLE {name} DROP COLUMN id")
    assert con.execute(f"SELECT * FROM {name} ORDER BY id").fetchall() == [(1, "a", 3), (2, "b", 3)]


def test_rename_table(con, name):
    con.execute(f"ALTER TABLE {name} RENAME TO {name}_x")
    con.execute(f"RENAME TABLE {name}_x TO {name}_y, {name}_y TO {name}_renamed")
    assert con.execute(f"SELECT COUNT(*) FROM {name}_renamed").fetchall() == [(2,)]
    tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
    assert f"{name}_renamed" in tables and name not in tables and f"{name}_x" not in tables


def test_alter_is_durable(tmp_path):
    if os.environ.get("CANOPY_RUNNER", "local") != "local":
        pytest.skip("data_dir reopening runs on the embedded runner here")
    data_dir = str(tmp_path / "data")
    with engine.connect(data_dir=data_dir) as first:
        first.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        first.execute("INSERT INTO t VALUES (1, 'a')")
        first.execute("ALTER TABLE t ADD COLUMN n INT DEFAULT 7, RENAME COLUMN v TO w")
        first.execute("RENAME TABLE t TO u")
    with engine.connect(data_dir=data_dir) as again:
        assert again.execute("SELECT id, w, n FROM u").fetchall() == [(1, "a", 7)]


KILLED_ALTER = textwrap.dedent("""
    import os, signal, sys
    import engine
    from engine.catalog_store import PersistentCatalog
    con = engine.connect(data_dir=sys.argv[1])
    PersistentCatalog.replace_tables = lambda self, changes: os.kill(os.getpid(), signal.SIGKILL)
    con.execute("ALTER TABLE t ADD COLUMN n INT DEFAULT 7")     # killed before the catalog swap
""")


def test_kill_before_the_catalog_swap_keeps_the_old_table(tmp_path):
    if os.environ.get("CANOPY_RUNNER", "local") != "local":
        pytest.skip("the data_dir crash test runs on the embedded runner")
    data_dir = tmp_path / "data"
    with engine.connect(data_dir=str(data_dir)) as setup:
        setup.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        setup.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    script = tmp_path / "alter.py"
    script.write_text(KILLED_ALTER)
    process = subprocess.run([sys.executable, str(script), str(data_dir)], cwd=ROOT, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert process.returncode == -signal.SIGKILL, process.stderr
    with engine.connect(data_dir=str(data_dir)) as reopened:
        assert reopened.execute("SELECT * FROM t ORDER BY id").fetchall() == [(1, "a"), (2, "b")]
        kept = {f"table-{t.table_id}" for t in reopened.session.catalog.all_tables()}
    assert {p.name for p in (data_dir / "leaf-0").glob("table-*")} == kept     # the new table's files went
