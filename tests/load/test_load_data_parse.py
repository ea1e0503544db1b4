"""LOAD DATA statement parsing: every clause, MySQL string escapes, and the errors."""
from __future__ import annotations

import pytest

from engine.errors import ParseError, UnsupportedError
from engine.load import LoadDataStatement, is_load_data, parse_load_data

TPCH = ("LOAD DATA INFILE '/abs/path/lineitem.csv' INTO TABLE lineitem "
        "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\n' IGNORE 1 LINES")


def test_minimal_statement_has_mysql_defaults():
    s = parse_load_data("LOAD DATA INFILE 'f.tsv' INTO TABLE t")
    assert s == LoadDataStatement(path="f.tsv", local=False, database=None, table="t", duplicates=None)
    assert (s.fields_terminated_by, s.fields_enclosed_by, s.fields_escaped_by) == ("\t", "", "\\")
    assert (s.lines_starting_by, s.lines_terminated_by, s.ignore_lines) == ("", "\n", 0)


def test_tpch_load_statement():
    s = parse_load_data(TPCH)
    assert s.path == "/abs/path/lineitem.csv" and s.table == "lineitem" and not s.local
    assert s.fields_terminated_by == ","
    assert s.fields_enclosed_by == '"' and s.fields_optionally_enclosed
    assert s.lines_terminated_by == "\n"
    assert s.ignore_lines == 1


def test_every_clause():
    sql = r"""/* bulk */ LOAD DATA LOW_PRIORITY LOCAL INFILE '/d/t.csv.gz' REPLACE INTO TABLE `my db`.`T 1`
        CHARACTER SET utf8mb4
        COLUMNS TERMINATED BY '|' ENCLOSED BY '''' ESCAPED BY '\\'
        LINES STARTING BY 'xx' TERMINATED BY '\r\n'
        IGNORE 3 ROWS
        (a, @skip, `c d`, E)
        SET e = UPPER(@skip), f = CONCAT(a, ',', (1 + 2))
        SKIP PARSER ERRORS;"""
    s = parse_load_data(sql)
    assert s.local and s.path == "/d/t.csv.gz"
    assert (s.database, s.table, s.duplicates) == ("my db", "T 1", "REPLACE")
    assert s.character_set == "utf8mb4"
    assert s.fields_terminated_by == "|"
    assert s.fields_enclosed_by == "'" and not s.fields_optionally_enclosed
    assert s.fields_escaped_by == "\\"
    assert s.lines_starting_by == "xx" and s.lines_terminated_by == "\r\n"
    assert s.ignore_lines == 3
    assert s.columns == ("a", "@skip", "c d", "E")
    assert s.set_clauses == (("e", "UPPER(@skip)"), ("f", "CONCAT(a, ',', (1 + 2))"))
    assert s.skip_errors == "PARSER"


@pytest.mark.parametrize("literal, value", [
    (r"'\t'", "\t"), (r"'\n'", "\n"), (r"'\r\n'", "\r\n"), (r"'\\'", "\\"), (r"'\''", "'"),
    ("''''", "'"), (r"'\"'", '"'), ("'\"'", '"'), (r"'\0'", "\x00"), ("X'09'", "\t"), ("';'", ";"),
])
def test_string_escapes_become_real_characters(literal, value):
    s = parse_load_data(f"LOAD DATA INFILE 'f' INTO TABLE t FIELDS TERMINATED BY {literal}")
    assert s.fields_terminated_by == value


def test_escaped_by_empty_and_enclosed_by_double_quote_in_double_quotes():
    s = parse_load_data("load data infile 'f' into table t fields escaped by '' enclosed by '\"'")
    assert s.fields_escaped_by == "" and s.fields_enclosed_by == '"'


def test_ignore_duplicates_and_ignore_lines_are_told_apart():
    s = parse_load_data("LOAD DATA INFILE 'f' IGNORE INTO TABLE t IGNORE 2 LINES")
    assert s.duplicates == "IGNORE" and s.ignore_lines == 2


@pytest.mark.parametrize("sql, kind", [
    ("LOAD DATA INFILE 'f' SKIP CONSTRAINT ERRORS INTO TABLE t", "CONSTRAINT"),
    ("LOAD DATA INFILE 'f' INTO TABLE t SKIP ALL ERRORS", "ALL"),
    ("LOAD DATA INFILE 'f' INTO TABLE t (a) SKIP DUPLICATE KEY ERRORS", "DUPLICATE KEY"),
])
def test_singlestore_skip_errors(sql, kind):
    assert parse_load_data(sql).skip_errors == kind


def test_fields_sub_clauses_in_any_order_and_charset_spelling():
    s = parse_load_data("LOAD DATA INFILE 'f' INTO TABLE t CHARSET latin1 "
                        "FIELDS ESCAPED BY '!' OPTIONALLY ENCLOSED BY '\"' TERMINATED BY ';'")
    assert (s.character_set, s.fields_escaped_by, s.fields_enclosed_by, s.fields_terminated_by) == \
        ("latin1", "!", '"', ";")


def test_keywords_are_case_insensitive_and_column_names_keep_their_case():
    s = parse_load_data("load data local infile 'F' replace into table Db.Tbl (ColA, @V)")
    assert (s.database, s.table, s.columns, s.duplicates) == ("Db", "Tbl", ("ColA", "@V"), "REPLACE")


@pytest.mark.parametrize("sql, token, message", [
    ("LOAD DATA INFILE f INTO TABLE t", "f", "INFILE needs a quoted string"),
    ("LOAD DATA INFILE 'f' INTO t", "t", "expected TABLE"),
    ("LOAD DATA INFILE 'f' INTO TABLE t LINES TERMINATED BY '\\n' FIELDS TERMINATED BY ','",
     "FIELDS", "MySQL's order"),
    ("LOAD DATA INFILE 'f' INTO TABLE t FIELDS", None, "FIELDS needs"),
    ("LOAD DATA INFILE 'f' INTO TABLE t FIELDS TERMINATED ','", "','", "expected BY"),
    ("LOAD DATA INFILE 'f' INTO TABLE t FIELDS ENCLOSED BY 'ab'", "'ab'", "one character"),
    ("LOAD DATA INFILE 'f' INTO TABLE t FIELDS TERMINATED BY ',' TERMINATED BY ';'", "TERMINATED",
     "given twice"),
    ("LOAD DATA INFILE 'f' INTO TABLE t IGNORE x LINES", "x", "whole number"),
    ("LOAD DATA INFILE 'f' INTO TABLE t IGNORE 1", None, "expected LINES or ROWS"),
    ("LOAD DATA INFILE 'f' INTO TABLE t (a b)", "b", "expected ',' or ')'"),
    ("LOAD DATA INFILE 'f' INTO TABLE t (a,", None, "expected a column name"),
    ("LOAD DATA INFILE 'f' INTO TABLE t SET a =", None, "SET needs an expression"),
    ("LOAD DATA INFILE 'f' INTO TABLE t SET a = 1 +* 2", "1", "invalid SET expression"),
    ("LOAD DATA INFILE 'f' INTO TABLE t SKIP SOME ERRORS", "SOME", "after SKIP"),
    ("LOAD DATA INFILE '' INTO TABLE t", "''", "non-empty file name"),
    ("LOAD DATA INFILE 'f' INTO TABLE t; SELECT 1", ";", "unexpected token"),
])
def test_syntax_errors_name_the_token(sql, token, message):
    with pytest.raises(ParseError) as info:
        parse_load_data(sql)
    assert message in str(info.value)
    assert info.value.token == token
    assert info.value.line == 1 and info.value.column is not None


def test_error_position_is_line_and_column_of_the_token():
    with pytest.raises(ParseError) as info:
        parse_load_data("LOAD DATA INFILE 'f'\n  INTO TABLE t\n  FIELDS TERMINATED BY 7")
    assert (info.value.line, info.value.column, info.value.token) == (3, 24, "7")
    assert "at line 3, column 24 near '7'" in str(info.value)


@pytest.mark.parametrize("sql, construct", [
    ("LOAD DATA INFILE 'f' INTO TABLE t TRAILING NULLCOLS", "TRAILING NULLCOLS"),
    ("LOAD DATA INFILE 'f' INTO TABLE t NULL DEFINED BY 'x'", "NULL DEFINED BY"),
    ("LOAD DATA INFILE 'f' INTO TABLE t (a) WHERE a > 1", "WHERE"),
    ("LOAD DATA INFILE 'f' INTO TABLE t MAX_ERRORS 10", "MAX_ERRORS"),
    ("LOAD DATA INFILE 'f' INTO TABLE t FORMAT JSON", "FORMAT"),
    ("LOAD DATA INFILE 'f' INTO TABLE t PARTITION (p0)", "PARTITION"),
    ("LOAD DATA S3 'bucket/f' INTO TABLE t", "LOAD DATA S3"),
    ("LOAD XML INFILE 'f' INTO TABLE t", "LOAD XML"),
])
def test_valid_but_unsupported_options(sql, construct):
    with pytest.raises(UnsupportedError, match=construct):
        parse_load_data(sql)


@pytest.mark.parametrize("sql, expected", [
    ("LOAD DATA INFILE 'f' INTO TABLE t", True),
    ("  \n\tload   data local infile 'f' into table t", True),
    ("-- comment\n/* block\n comment */ # hash\nLOAD DATA INFILE 'f' INTO TABLE t", True),
    ("SELECT 'LOAD DATA'", False),
    ("LOAD DATABASE", False),
    ("LOADDATA", False),
    ("", False),
])
def test_is_load_data(sql, expected):
    assert is_load_data(sql) is expected


def test_doctests():
    import doctest

    import engine.load.load_data as module
    assert doctest.testmod(module).failed == 0
