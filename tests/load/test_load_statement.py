"""LOAD DATA through a connection: SET, SKIP ... ERRORS with SHOW WARNINGS, globs loaded atomically, the
load directory, FORMAT PARQUET, the Python loading API and the progress bar switch."""
from __future__ import annotations

import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine.errors import BadDataError, BindError, ConstraintError, ExecutionError, UnsupportedError
from engine.load.loader import progress_bar

CSV = "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'"


@pytest.fixture
def con(tmp_path):
    with engine.connect(load_dir=str(tmp_path)) as connection:
        connection.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(5) NOT NULL, amount DECIMAL(6,2), "
                           "SHARD KEY (id))")
        yield connection


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def rows(con, sql="SELECT id, name, amount FROM t ORDER BY id"):
    return con.execute(sql).fetchall()


# -- SET ------------------------------------------------------------------------------------------
def test_set_with_variables_and_columns(con, tmp_path):
    path = write(tmp_path, "a.csv", "1,ab,2.50\n2,cd,1\n")
    cur = con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV} (id, @n, @a) "
                      f"SET name = CONCAT(UPPER(@n), id), amount = @a * 2 + id")
    assert cur.rowcount == 2
    assert rows(con) == [(1, "AB1", Decimal("6.00")), (2, "CD2", Decimal("4.00"))]


def test_set_result_is_checked_like_a_file_value(con, tmp_path):
    path = write(tmp_path, "a.csv", "1,ab\n")
    with pytest.raises(BadDataError, match="too long for VARCHAR"):
        con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV} (id, @n) SET name = CONCAT(@n, @n, @n)")
    with pytest.raises(BindError, match="@missing"):
        con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV} (id, @n) SET name = @missing")
    assert rows(con) == []


# -- SKIP ... ERRORS and SHOW WARNINGS --------------------------------------------------------------
BAD = "1,ok,1\n2,ok,2,extra\nx,ok,3\n4,toolong,4\n5,\\N,5\n6,ok,99999\n7,ok,7\n"


def test_bad_rows_fail_the_whole_load_by_default(con, tmp_path):
    path = write(tmp_path, "bad.csv", BAD)
    with pytest.raises(BadDataError, match="line 2: expected 3 fields, got 4"):
        con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV}")
    assert con.execute("SHOW WARNINGS").fetchall()[0][0] == "Error"
    assert rows(con) == []


@pytest.mark.parametrize("kind, kept, lines", [
    ("ALL", [1, 7], [2, 3, 4, 5, 6]),
    ("PARSER", None, None),        # the parser errors go, then NULL into NOT NULL still fails
    ("CONSTRAINT", None, None),    # the field-count error is a parser error: fails
])
def test_skip_errors(con, tmp_path, kind, kept, lines):
    path = write(tmp_path, "bad.csv", BAD)
    sql = f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV} SKIP {kind} ERRORS"
    if kept is None:
        with pytest.raises((BadDataError, ConstraintError)):
            con.execute(sql)
        assert rows(con) == []
        return
    cur = con.execute(sql)
    assert cur.rowcount == len(kept)
    warnings = con.execute("SHOW WARNINGS").fetchall()
    assert [r[0] for r in rows(con)] == kept
    assert sorted(int(m.split("line ")[1].split(":")[0].split(",")[0]) for _, _, m in warnings) == lines
    assert {int(code) for _, code, _ in warnings} == {1262, 1366, 1406, 1048}
    assert len(cur.messages) == len(lines)
    # any other statement clears them
    assert con.execute("SHOW WARNINGS").fetchall() == []


def test_skip_parser_errors_alone(con, tmp_path):
    path = write(tmp_path, "bad.csv", "1,ok,1\n2,ok\nx,ok,3\n4,ok,4\n")
    assert con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV} SKIP PARSER ERRORS").rowcount == 2
    assert [m for _, _, m in con.execute("SHOW WARNINGS").fetchall()] == [
        f"LOAD DATA {path}: line 2: expected 3 fields, got 2",
        f"LOAD DATA {path}: line 3, column 'id': invalid value for BIGINT"]


def test_skip_constraint_errors_alone(con, tmp_path):
    path = write(tmp_path, "bad.csv", "1,ok,1\n2,\\N,2\n3,waytoolong,3\n4,ok,4\n")
    assert con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV} SKIP CONSTRAINT ERRORS").rowcount == 2
    assert [r[0] for r in rows(con)] == [1, 4]


# -- several files, atomic --------------------------------------------------------------------------
def test_a_glob_loads_every_file_or_nothing(con, tmp_path):
    for i in range(3):
        write(tmp_path, f"part-{i}.csv", "".join(f"{i * 100 + j},n{j},1\n" for j in range(50)))
    assert con.execute(f"LOAD DATA INFILE '{tmp_path}/part-*.csv' INTO TABLE t {CSV}").rowcount == 150
    write(tmp_path, "part-3.csv", "999,ok,1\n1000,bad,not-a-number\n")
    with pytest.raises(BadDataError, match="part-3.csv: line 2"):
        con.execute(f"LOAD DATA INFILE '{tmp_path}/part-*.csv' INTO TABLE t {CSV}")
    assert rows(con, "SELECT COUNT(*) FROM t") == [(150,)]   # the good files of the failed load: not visible
    with pytest.raises(ExecutionError, match="no file matches"):
        con.execute(f"LOAD DATA INFILE '{tmp_path}/nothing-*.csv' INTO TABLE t {CSV}")


# -- the load directory (secure_file_priv) ----------------------------------------------------------
def test_paths_outside_the_load_directory_are_refused(con, tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.csv"
    outside.write_text("1,ok,1\n")
    try:
        for path in (str(outside), f"{tmp_path}/../{outside.name}"):
            with pytest.raises(ExecutionError, match="outside the load directory"):
                con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV}")
        os.symlink(outside, tmp_path / "link.csv")
        with pytest.raises(ExecutionError, match="outside the load directory"):
            con.execute(f"LOAD DATA INFILE '{tmp_path}/link.csv' INTO TABLE t {CSV}")
        with pytest.raises(ExecutionError, match="outside the load directory"):
            con.execute(f"LOAD DATA INFILE '{tmp_path}/*.csv' INTO TABLE t {CSV}")   # the glob finds the link
    finally:
        outside.unlink()
    os.unlink(tmp_path / "link.csv")
    write(tmp_path, "inside.csv", "1,ok,1\n")
    assert con.execute(f"LOAD DATA INFILE '{tmp_path}/inside.csv' INTO TABLE t {CSV}").rowcount == 1
    # a relative path names a file inside the load directory
    assert con.execute(f"LOAD DATA INFILE 'inside.csv' INTO TABLE t {CSV}").rowcount == 1


def test_without_a_load_directory_load_data_is_refused(tmp_path):
    path = write(tmp_path, "a.csv", "1,ok,1\n")
    with engine.connect() as con:
        con.execute("CREATE TABLE t (id BIGINT, name VARCHAR(5), amount DECIMAL(6,2))")
        for sql in (f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV}", f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t {CSV}",
                    "LOAD DATA INFILE '/etc/passwd' INTO TABLE t FIELDS TERMINATED BY ':'"):
            with pytest.raises(ExecutionError, match=r"no load directory; connect\(load_dir="):
                con.execute(sql)
        assert rows(con) == []


def test_errors_name_the_place_never_the_bytes(con, tmp_path):
    """A failed load (a glob over files of the wrong shape, a bad value, a bad quote) says the file,
    line and column, and echoes none of the file's contents."""
    secret = "s3cr3t-pa55"
    write(tmp_path, "a.txt", f"root:{secret}:0:0\n")
    for sql in (f"LOAD DATA INFILE '{tmp_path}/*.txt' INTO TABLE t {CSV}",
                f"LOAD DATA INFILE '{tmp_path}/*.txt' INTO TABLE t FIELDS TERMINATED BY ':'"):
        with pytest.raises(BadDataError, match="a.txt: line 1") as error:
            con.execute(sql)
        assert secret not in str(error.value)
    write(tmp_path, "b.csv", f'1,"{secret}\n')
    with pytest.raises(BadDataError, match="unterminated quoted field") as error:
        con.execute(f"LOAD DATA INFILE '{tmp_path}/b.csv' INTO TABLE t {CSV}")
    assert secret not in str(error.value)


# -- FORMAT PARQUET -------------------------------------------------------------------------------
def test_parquet(con, tmp_path):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"ID": [3, 1, 2], "name": ["c", "a", "b"], "amount": [1.5, 2.0, None]}), path,
                   row_group_size=2)
    assert con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t FORMAT PARQUET").rowcount == 3
    assert rows(con) == [(1, "a", Decimal("2.00")), (2, "b", None), (3, "c", Decimal("1.50"))]
    pq.write_table(pa.table({"id": [4], "name": [None]}), path)
    with pytest.raises(ConstraintError, match="NOT NULL column 'name'"):
        con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t FORMAT PARQUET")
    (tmp_path / "not.parquet").write_text("hello")
    with pytest.raises(BadDataError, match="not a Parquet file"):
        con.execute(f"LOAD DATA INFILE '{tmp_path}/not.parquet' INTO TABLE t FORMAT PARQUET")
    with pytest.raises(UnsupportedError, match="FORMAT JSON"):
        con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t FORMAT JSON")


# -- the Python API -------------------------------------------------------------------------------
def test_load_table_from_arrow_pandas_and_polars(con):
    pd = pytest.importorskip("pandas")
    assert con.load_table("t", pa.table({"id": [1], "name": ["a"], "amount": [1.25]})) == 1
    assert con.load_table("canopy.t", pd.DataFrame({"NAME": ["b", "c"], "id": [2, 3]})) == 2
    polars = pytest.importorskip("polars")
    assert con.load_table("t", polars.DataFrame({"id": [4], "name": ["d"]})) == 1
    assert rows(con) == [(1, "a", Decimal("1.25")), (2, "b", None), (3, "c", None), (4, "d", None)]
    with pytest.raises(ConstraintError, match="row 2: NULL in NOT NULL column 'name'"):
        con.load_table("t", pa.table({"id": [5, 6], "name": ["e", None]}))
    with pytest.raises(BadDataError, match="row 1, column 'id': cannot convert 'x'"):
        con.load_table("t", pa.table({"id": ["x"], "name": ["e"]}))
    with pytest.raises(BindError, match="nope"):
        con.load_table("t", pa.table({"id": [5], "name": ["e"], "nope": [1]}))
    with pytest.raises(engine.ProgrammingError):
        con.load_table("t", [1, 2, 3])
    assert rows(con, "SELECT COUNT(*) FROM t") == [(4,)]


def test_progress_bar_switch():
    assert progress_bar(10, "x", False) is None
    bar = progress_bar(10, "x", True)
    assert bar is not None and bar.delay == 2.0
    bar.close()
    # auto: off when stderr is not a terminal (pytest captures it)
    assert progress_bar(10, "x", None) is None or os.isatty(2)


def test_warning_rows_are_capped_but_all_counted(con, tmp_path):
    from engine.load.delimited import MAX_WARNINGS
    path = write(tmp_path, "many.csv", "x,a,1\n" * (MAX_WARNINGS + 5) + "1,a,1\n")
    cur = con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV} SKIP ALL ERRORS")
    assert cur.rowcount == 1
    assert len(con.execute("SHOW WARNINGS").fetchall()) == MAX_WARNINGS
    assert cur._result.message.startswith(f"Records: {MAX_WARNINGS + 6}") and f"Skipped: {MAX_WARNINGS + 5}" in cur._result.message


def test_doctests():
    import doctest

    import engine.load.arrow_input as module
    assert doctest.testmod(module).failed == 0
