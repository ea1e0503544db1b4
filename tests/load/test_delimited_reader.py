"""read_delimited: LOAD DATA files into Arrow tables of a TableDef's schema, and its precise errors."""
from __future__ import annotations

import datetime
import gzip
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from engine.catalog import ColumnDef, TableDef
from engine.errors import (BadDataError, BindError, ConstraintError, ExecutionError, UnsupportedError)
from engine.load import parse_load_data, read_delimited
from engine.types import BIGINT, DATE, DATETIME, DOUBLE, INT, TEXT, decimal_type, varchar

D152 = decimal_type(15, 2)
CSV = "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\n'"


def table(*columns: ColumnDef, name: str = "t") -> TableDef:
    return TableDef("db", name, tuple(columns))


def col(name, sql_type, nullable=True, **default) -> ColumnDef:
    return ColumnDef(name, sql_type, nullable=nullable, **default)


def load(path: Path, tbl: TableDef, clauses: str = CSV) -> pa.Table:
    sql = f"LOAD DATA INFILE '{path}' INTO TABLE {tbl.name} {clauses}"
    return read_delimited(parse_load_data(sql), tbl)


def write(tmp_path: Path, text: str | bytes, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


NATION = table(col("n_nationkey", BIGINT, False), col("n_name", varchar(25, "CHAR"), False),
               col("n_regionkey", BIGINT, False), col("n_comment", varchar(152), False), name="nation")


# -- the success path -----------------------------------------------------------------------------
def test_tpch_style_file(tmp_path):
    path = write(tmp_path, 'n_nationkey,n_name,n_regionkey,n_comment\n'
                           '0,ALGERIA,0," haggle, carefully final deposits"\n'
                           '1,ARGENTINA,1,"al foxes ""promise"" slyly"\n'
                           '2,BRAZIL,1,plain comment\n')
    result = load(path, NATION, CSV + " IGNORE 1 LINES")
    assert result.schema == NATION.arrow_schema
    assert result.to_pydict() == {
        "n_nationkey": [0, 1, 2], "n_name": ["ALGERIA", "ARGENTINA", "BRAZIL"], "n_regionkey": [0, 1, 1],
        "n_comment": [" haggle, carefully final deposits", 'al foxes "promise" slyly', "plain comment"]}


def test_types_decimals_dates_timestamps_floats(tmp_path):
    tbl = table(col("i", INT), col("d", D152), col("day", DATE), col("ts", DATETIME), col("f", DOUBLE))
    path = write(tmp_path, "7\t-12.5\t1998-12-01\t1998-12-01 10:11:12.5\t1e3\n")
    result = load(path, tbl, "")  # MySQL defaults: tab between fields, no enclosure
    assert result.schema == tbl.arrow_schema
    assert result.to_pylist() == [{"i": 7, "d": Decimal("-12.50"), "day": datetime.date(1998, 12, 1),
                                   "ts": datetime.datetime(1998, 12, 1, 10, 11, 12, 500000), "f": 1000.0}]


def test_backslash_n_is_null_and_empty_text_stays_empty(tmp_path):
    tbl = table(col("a", BIGINT), col("b", TEXT), col("c", D152))
    path = write(tmp_path, "1,\\N,\\N\n\\N,,2.5\n3,\"\",1\n")
    assert load(path, tbl).to_pydict() == {"a": [1, None, 3], "b": [None, "", ""],
                                           "c": [None, Decimal("2.50"), Decimal("1.00")]}


def test_mysql_escape_sequences(tmp_path):
    tbl = table(col("a", TEXT), col("b", TEXT))
    # \t \n \0 \Z control characters, \\ a backslash, \, a comma, \N inside a field is N, \\N is text.
    path = write(tmp_path, "x\\ty\\nz,a\\0b\\Zc\nback\\\\slash,comma\\,here\nmid\\Nfield,\\\\N\n"
                           "\"quoted \\\" escape\",\\N\n")
    assert load(path, tbl).to_pydict() == {
        "a": ["x\ty\nz", "back\\slash", "midNfield", 'quoted " escape'],
        "b": ["a\x00b\x1ac", "comma,here", "\\N", None]}


def test_many_escapes_take_the_bulk_rewrite_path(tmp_path):
    tbl = table(col("a", TEXT), col("b", INT))
    path = write(tmp_path, "a\\tb\\\\,\\N\n" * 12_000)  # more escapes than are visited one by one
    result = load(path, tbl)
    assert result.num_rows == 12_000 and result.column("b").null_count == 12_000
    assert set(result.column("a").to_pylist()) == {"a\tb\\"}


def test_escaped_by_empty_makes_backslash_ordinary(tmp_path):
    tbl = table(col("a", TEXT), col("b", TEXT))
    path = write(tmp_path, "\\N,c:\\dir\\n\n")
    clauses = "FIELDS TERMINATED BY ',' ESCAPED BY ''"
    assert load(path, tbl, clauses).to_pydict() == {"a": ["\\N"], "b": ["c:\\dir\\n"]}


def test_other_escape_character(tmp_path):
    tbl = table(col("a", TEXT), col("b", INT))
    path = write(tmp_path, "x!,y!!z,!N\n")
    result = load(path, tbl, "FIELDS TERMINATED BY ',' ESCAPED BY '!'")
    assert result.to_pydict() == {"a": ["x,y!z"], "b": [None]}


def test_quoted_field_with_newline(tmp_path):
    tbl = table(col("a", INT), col("b", TEXT))
    path = write(tmp_path, '1,"two\nlines"\n2,one\n')
    assert load(path, tbl).to_pydict() == {"a": [1, 2], "b": ["two\nlines", "one"]}


def test_crlf_line_ends(tmp_path):
    tbl = table(col("a", INT), col("b", TEXT))
    path = write(tmp_path, "h1,h2\r\n1,x\r\n2,y\r\n")
    result = load(path, tbl, CSV.replace("'\\n'", "'\\r\\n'") + " IGNORE 1 LINES")
    assert result.to_pydict() == {"a": [1, 2], "b": ["x", "y"]}


def test_column_list_user_variables_and_defaults(tmp_path):
    tbl = table(col("id", BIGINT, False), col("name", TEXT),
                col("qty", INT, False, default=5, has_default=True),
                col("note", TEXT), col("price", D152, True, default=Decimal("1.25"), has_default=True))
    path = write(tmp_path, "x-ignored,Ann,1\ny-ignored,Bob,2\n")
    result = load(path, tbl, CSV + " (@skip, NAME, ID)")  # names match case-insensitively
    assert result.schema == tbl.arrow_schema
    assert result.to_pydict() == {"id": [1, 2], "name": ["Ann", "Bob"], "qty": [5, 5], "note": [None, None],
                                  "price": [Decimal("1.25")] * 2}


def test_gzip_and_lz4_input(tmp_path):
    text = b"n_nationkey,n_name,n_regionkey,n_comment\n0,ALGERIA,0,\"a, b\"\n1,ARGENTINA,1,c\n"
    gz = write(tmp_path, gzip.compress(text), "nation.csv.gz")
    assert load(gz, NATION, CSV + " IGNORE 1 LINES").num_rows == 2
    lz4_frame = pytest.importorskip("lz4.frame")
    lz = write(tmp_path, lz4_frame.compress(text), "nation.csv.lz4")
    assert load(lz, NATION, CSV + " IGNORE 1 LINES").column("n_comment").to_pylist() == ["a, b", "c"]


def test_empty_file_and_ignore_past_the_end(tmp_path):
    empty = write(tmp_path, "", "empty.csv")
    assert load(empty, NATION).num_rows == 0
    header_only = write(tmp_path, "a,b,c,d\n", "header.csv")
    result = load(header_only, NATION, CSV + " IGNORE 5 LINES")
    assert result.num_rows == 0 and result.schema == NATION.arrow_schema


def test_latin1_character_set(tmp_path):
    tbl = table(col("a", TEXT))
    path = write(tmp_path, "caf\xe9\n".encode("latin-1"))
    assert load(path, tbl, "CHARACTER SET latin1").column("a").to_pylist() == ["café"]


# -- errors --------------------------------------------------------------------------------------
def bad(path, tbl, clauses=CSV, error=BadDataError) -> str:
    with pytest.raises(error) as info:
        load(path, tbl, clauses)
    return str(info.value)


def test_wrong_number_of_fields_names_file_and_line(tmp_path):
    path = write(tmp_path, "h,h,h,h\n0,A,0,x\n1,B,1\n2,C,2,z\n")
    message = bad(path, NATION, CSV + " IGNORE 1 LINES")
    assert str(path) in message and "line 3" in message and "expected 4 fields, got 3" in message


def test_too_many_fields(tmp_path):
    path = write(tmp_path, "0,A,0,x\n1,B,1,y,extra\n")
    message = bad(path, NATION)
    assert "line 2" in message and "expected 4 fields, got 5" in message


def test_unparsable_decimal_names_line_and_column(tmp_path):
    rows = "".join(f"{i},N{i},0,c\n" for i in range(1000))
    tbl = table(col("k", BIGINT), col("price", D152), col("r", BIGINT), col("c", TEXT))
    path = write(tmp_path, "header\n" + rows.replace("500,N500", "500,x1.5") )
    message = bad(path, tbl, CSV + " IGNORE 1 LINES")
    assert str(path) in message
    assert "line 2" in message and "column 'price'" in message and "N0" not in message     # no file bytes echoed
    path = write(tmp_path, "k,price,r,c\n" + "".join(f"{i},{i}.5,0,c\n" for i in range(999)) + "9,1.5x,0,c\n")
    message = bad(path, tbl, CSV + " IGNORE 1 LINES")
    assert "line 1001, column 'price': invalid value for DECIMAL(15,2)" in message


def test_unparsable_date_and_int_overflow(tmp_path):
    tbl = table(col("k", INT), col("day", DATE))
    message = bad(write(tmp_path, "1,1998-01-01\n2,1998-13-01\n"), tbl)
    assert "line 2, column 'day': invalid value for DATE" in message
    message = bad(write(tmp_path, "1,1998-01-01\n99999999999,1998-01-01\n"), tbl)
    assert "line 2, column 'k': Out of range value 99999999999 for INT" in message


@pytest.mark.parametrize("precision, value", [(5, "1000.00"), (15, "12345678901234.5"), (15, "-1e13")])
def test_decimal_out_of_precision(tmp_path, precision, value):
    # pyarrow's CSV conversion checks the precision for some values only; the reader checks the rest.
    tbl = table(col("d", decimal_type(precision, 2)))
    message = bad(write(tmp_path, f"1.5\n999.99\n{value}\n"), tbl)
    assert "line 3, column 'd'" in message and f"for DECIMAL({precision},2)" in message


def test_empty_numeric_field_is_an_error(tmp_path):
    tbl = table(col("a", INT), col("b", TEXT))
    message = bad(write(tmp_path, "1,x\n,y\n"), tbl)
    assert "line 2, column 'a': invalid value for INT" in message


def test_string_longer_than_char_n(tmp_path):
    path = write(tmp_path, "0,ALGERIA,0,x\n1," + "A" * 26 + ",1,y\n")
    message = bad(path, NATION)
    assert "line 2, column 'n_name'" in message and "26 characters is too long for CHAR(25)" in message


def test_unterminated_quote(tmp_path):
    path = write(tmp_path, '0,A,0,"fine, quoted"\n1,B,1,"never closed\n2,C,2,z\n')
    message = bad(path, NATION)
    assert str(path) in message and "line 2" in message and "unterminated quoted field" in message


def test_stray_quote_inside_an_unquoted_field_is_text(tmp_path):
    tbl = table(col("a", TEXT), col("b", TEXT))
    assert load(write(tmp_path, 'say "hi,x\n'), tbl).to_pydict() == {"a": ['say "hi'], "b": ["x"]}


def test_invalid_utf8(tmp_path):
    tbl = table(col("a", INT), col("b", TEXT))
    message = bad(write(tmp_path, b"1,ok\n2,caf\xe9\n"), tbl)
    assert "line 2, column 'b'" in message and "UTF-8" in message


def test_null_in_not_null_column(tmp_path):
    path = write(tmp_path, "0,A,0,x\n1,\\N,1,y\n")
    with pytest.raises(ConstraintError, match=r"line 2: NULL \(\\N\) in NOT NULL column 'n_name'"):
        load(path, NATION)


def test_not_null_column_missing_from_the_column_list(tmp_path):
    with pytest.raises(ConstraintError, match="'n_regionkey' is NOT NULL"):
        load(write(tmp_path, "0,A,x\n"), NATION, CSV + " (n_nationkey, n_name, n_comment)")


def test_unknown_and_duplicate_columns_in_the_list(tmp_path):
    path = write(tmp_path, "0\n")
    with pytest.raises(BindError, match="unknown column 'n_nationky'.*did you mean 'n_nationkey'"):
        load(path, NATION, CSV + " (n_nationky)")
    with pytest.raises(BindError, match="appears twice"):
        load(path, NATION, CSV + " (n_name, N_NAME)")


def test_missing_file_directory_and_permission(tmp_path):
    with pytest.raises(ExecutionError, match="not found") as info:
        load(tmp_path / "nope.csv", NATION)
    assert str(tmp_path / "nope.csv") in str(info.value)
    with pytest.raises(ExecutionError, match="is a directory"):
        load(tmp_path, NATION)
    locked = write(tmp_path, "0,A,0,x\n", "locked.csv")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as a user that can read any file")
        with pytest.raises(ExecutionError, match="permission denied"):
            load(locked, NATION)
    finally:
        locked.chmod(0o644)


def test_corrupt_gzip(tmp_path):
    message = bad(write(tmp_path, b"not gzip at all", "x.csv.gz"), NATION)
    assert "gzip" in message and "x.csv.gz" in message


@pytest.mark.parametrize("clauses, construct", [
    ("FIELDS TERMINATED BY '::'", "FIELDS TERMINATED BY '::'"),
    ("LINES TERMINATED BY ';'", "LINES TERMINATED BY ';'"),
    ("LINES STARTING BY 'x'", "LINES STARTING BY 'x'"),
    ("CHARACTER SET klingon", "CHARACTER SET klingon"),
    ("FIELDS ENCLOSED BY '\"' ESCAPED BY '\"'", "ESCAPED BY"),
])
def test_unsupported_options(tmp_path, clauses, construct):
    with pytest.raises(UnsupportedError, match=construct):
        load(write(tmp_path, "0\tA\t0\tx\n"), NATION, clauses)


def test_set_overrides_a_column_from_the_file(tmp_path):
    result = load(write(tmp_path, "0,a,0,x\n"), NATION, CSV + " SET n_name = UPPER(n_comment)")
    assert result.column("n_name").to_pylist() == ["X"]


# -- real tpchgen-cli files against DuckDB -------------------------------------------------------
LINEITEM = table(
    *(col(n, BIGINT, False) for n in ("l_orderkey", "l_partkey", "l_suppkey")),
    col("l_linenumber", INT, False),
    *(col(n, D152, False) for n in ("l_quantity", "l_extendedprice", "l_discount", "l_tax")),
    col("l_returnflag", varchar(1, "CHAR"), False), col("l_linestatus", varchar(1, "CHAR"), False),
    *(col(n, DATE, False) for n in ("l_shipdate", "l_commitdate", "l_receiptdate")),
    col("l_shipinstruct", varchar(25, "CHAR"), False), col("l_shipmode", varchar(10, "CHAR"), False),
    col("l_comment", varchar(44), False), name="lineitem")


@pytest.fixture(scope="module")
def tpchgen_dir(tmp_path_factory) -> Path:
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).with_name("tpchgen-cli"))
    if not Path(exe).exists():
        pytest.skip("tpchgen-cli is not installed")
    out = tmp_path_factory.mktemp("tpchgen")
    subprocess.run([exe, "csv", "-s", "0.01", "--tables", "nation,lineitem", "--output-dir", str(out)],
                   check=True, capture_output=True)
    return out


@pytest.mark.parametrize("tbl", [NATION, LINEITEM], ids=lambda t: t.name)
def test_tpchgen_files_match_duckdb(tpchgen_dir, tbl):
    duckdb = pytest.importorskip("duckdb")
    path = tpchgen_dir / f"{tbl.name}.csv"
    result = load(path, tbl, CSV + " IGNORE 1 LINES")
    assert result.schema == tbl.arrow_schema
    con = duckdb.connect()
    types = ", ".join(f"'{c.name}': '{c.type}'" for c in tbl.columns)
    expected = con.sql(f"SELECT * FROM read_csv('{path}', header=true, columns={{{types}}})").to_arrow_table()
    assert result.num_rows == expected.num_rows > 0
    for name in tbl.arrow_schema.names:
        ours, theirs = result.column(name), expected.column(name)
        assert ours.equals(theirs.cast(ours.type)), name


# -- the one-row-a-line fast parse of quoted files ---------------------------------------------------------
@pytest.mark.parametrize("with_newlines", [False, True])
@pytest.mark.parametrize("blank_line", [False, True])
def test_quoted_file_in_many_blocks(tmp_path, monkeypatch, with_newlines, blank_line):
    """Many small blocks (pyarrow splits at line ends): quoted values with commas always, with line
    ends inside them or blank lines only in some files; each file reads exactly as written, whichever
    parse ends up answering."""
    import engine.load.delimited as delimited
    monkeypatch.setattr(delimited, "BLOCK_SIZE", 256)
    two = table(col("a", BIGINT), col("b", TEXT))
    values = [f"v{i}, with a comma" + ("\nand a second line" if with_newlines and i % 7 == 3 else "")
              for i in range(400)]
    lines = [f'{i},"{v}"\n' for i, v in enumerate(values)]
    if blank_line:
        lines.insert(200, "\n")
    calls = []
    original = delimited._Reader._parse

    def parse(self, buffer, *args, **kwargs):
        calls.append(kwargs.get("newlines_in_values"))
        return original(self, buffer, *args, **kwargs)
    monkeypatch.setattr(delimited._Reader, "_parse", parse)
    result = load(write(tmp_path, "".join(lines)), two)
    assert result.to_pydict() == {"a": list(range(400)), "b": values}
    # the fast parse answered alone exactly when every line is a row
    assert calls[0] is False
    assert len(calls) == (2 if with_newlines or blank_line else 1)


def test_one_field_quoted_file_parses_carefully(tmp_path, monkeypatch):
    import engine.load.delimited as delimited
    monkeypatch.setattr(delimited, "BLOCK_SIZE", 64)
    one = table(col("s", TEXT))
    values = [f"row {i}" + ("\nsecond" if i % 3 == 0 else "") for i in range(60)]
    result = load(write(tmp_path, "".join(f'"{v}"\n' for v in values)), one)
    assert result.column("s").to_pylist() == values
