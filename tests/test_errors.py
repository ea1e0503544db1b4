"""Errors a user can cause (issue 2, item 9): each has its PEP 249 class, a message that says what and
where, no trace of engine internals, and leaves the connection usable.

One connection serves the module; after every error the next test (and ``assert_still_usable``) runs a
query on it, so a session left broken by an error fails the suite.
"""
from __future__ import annotations

import pytest

import engine


@pytest.fixture(scope="module")
def con():
    connection = engine.connect(database="errors")
    connection.execute("CREATE TABLE orders (o_orderkey INT NOT NULL, o_status CHAR(1), o_total DECIMAL(10,2), "
                       "o_date DATE, o_comment VARCHAR(10), SHARD KEY (o_orderkey))")
    connection.execute("INSERT INTO orders VALUES (1, 'F', 10.50, '2024-01-01', 'ok'), "
                       "(2, 'O', NULL, '2024-02-01', NULL)")
    yield connection
    connection.close()


def assert_clean(error: engine.Error) -> str:
    """The message a user sees: no traceback, no 'internal error', not an engine bug."""
    message = str(error)
    assert not isinstance(error, engine.InternalError), message
    for leak in ("Traceback", "internal error", 'File "', "sqlglot.expressions", "<class ",
                 # Arrow's words: users read SQL types and MySQL's messages
                 "ArrowInvalid", "Invalid:", "scalar of type", "int64", "int32", "large_string", "timestamp[us]",
                 "decimal128", "date32", "was truncated converting"):
        assert leak not in message, f"{leak!r} leaks into {message!r}"
    return message


def assert_still_usable(con) -> None:
    assert con.execute("SELECT COUNT(*), SUM(o_total) FROM orders").fetchall() == [(2, 10.50)]


def expect(con, sql, error_class, *fragments, params=None) -> engine.Error:
    with pytest.raises(error_class) as info:
        con.execute(sql, params).fetchall()
    message = assert_clean(info.value)
    for fragment in fragments:
        assert fragment.lower() in message.lower(), f"{fragment!r} not in {message!r}"
    assert_still_usable(con)
    return info.value


# --- syntax errors: line, column and the offending token -------------------------------------------
def test_syntax_error_names_line_column_and_token(con):
    error = expect(con, "SELECT o_orderkey,\n       o_total\nFROM orders\nWHERE o_total > 5 6",
                   engine.ProgrammingError, "line 4, column 19", "'6'")
    assert (error.line, error.column, error.token) == (4, 19, "6")


def test_syntax_error_in_first_line(con):
    error = expect(con, "SELECT o_total FROM orders LIMIT x y", engine.ProgrammingError, "line 1", "'y'")
    assert (error.line, error.token) == (1, "y")


def test_syntax_error_unbalanced_parenthesis(con):
    expect(con, "SELECT (1 + 2 FROM orders", engine.ProgrammingError, "line 1", "column")


def test_syntax_error_misspelled_keyword(con):
    expect(con, "SELECT o_orderkey FORM orders", engine.ProgrammingError, "line 1", "orders")


@pytest.mark.parametrize("sql", ["SELECT * FROM orders WHERE", "SELECT o_total FROM orders WHERE o_total >"])
def test_syntax_error_messages_speak_sql_not_parser_internals(con, sql):
    expect(con, sql, engine.ProgrammingError, "syntax error", "line 1")


def test_unterminated_string_names_its_position(con):
    expect(con, "SELECT 'abc FROM orders", engine.ProgrammingError, "line 1")


# --- unknown names, with the nearest existing name ----------------------------------------------------
def test_unknown_table_suggests_nearest(con):
    expect(con, "SELECT * FROM order", engine.ProgrammingError, "unknown table 'order'", "did you mean 'orders'")


def test_unknown_table_without_close_match(con):
    error = expect(con, "SELECT * FROM lineitem", engine.ProgrammingError, "unknown table 'lineitem'")
    assert "did you mean" not in str(error)


def test_unknown_column_suggests_nearest(con):
    expect(con, "SELECT o_orderky FROM orders", engine.ProgrammingError,
           "unknown column 'o_orderky'", "did you mean 'o_orderkey'")


def test_unknown_qualified_column_suggests_column_of_that_table(con):
    expect(con, "SELECT o.o_totl FROM orders o", engine.ProgrammingError,
           "unknown column 'o.o_totl'", "did you mean 'o.o_total'")


def test_unknown_table_alias(con):
    """MySQL's error 1054: an unknown qualifier is an unknown column, named with its clause."""
    expect(con, "SELECT x.o_total FROM orders o", engine.ProgrammingError, "unknown column 'x.o_total' in 'SELECT'")
    expect(con, "SELECT 1 FROM orders o WHERE x.o_total > 0", engine.ProgrammingError,
           "unknown column 'x.o_total' in 'WHERE'")


def test_unknown_column_in_where_group_order(con):
    expect(con, "SELECT COUNT(*) FROM orders WHERE o_stauts = 'F'", engine.ProgrammingError, "o_stauts", "o_status")
    expect(con, "SELECT COUNT(*) FROM orders GROUP BY o_dat", engine.ProgrammingError, "o_dat", "o_date")
    expect(con, "SELECT o_orderkey FROM orders ORDER BY o_totl", engine.ProgrammingError, "o_totl", "o_total")


def test_unknown_database(con):
    expect(con, "SELECT * FROM nodb.orders", engine.ProgrammingError, "nodb")
    expect(con, "USE erors", engine.ProgrammingError, "unknown database 'erors'", "did you mean 'errors'")


def test_ambiguous_column(con):
    expect(con, "SELECT o_total FROM orders a JOIN orders b ON a.o_orderkey = b.o_orderkey",
           engine.ProgrammingError, "o_total", "ambiguous")


# --- type mismatches name the expression ------------------------------------------------------------
def test_string_plus_date(con):
    expect(con, "SELECT 'a' + DATE '2020-01-01'", (engine.ProgrammingError, engine.DataError), "+", "'a'", "DATE")


def test_sum_of_a_date(con):
    expect(con, "SELECT SUM(o_date) FROM orders", (engine.ProgrammingError, engine.DataError), "SUM(o_date)")


def test_date_times_number(con):
    expect(con, "SELECT o_date * 2 FROM orders", (engine.ProgrammingError, engine.DataError), "o_date * 2")


def test_date_function_of_a_number(con):
    expect(con, "SELECT YEAR(o_orderkey) FROM orders", (engine.ProgrammingError, engine.DataError),
           "YEAR(o_orderkey)")


def test_bad_value_in_data_names_the_column(con):
    expect(con, "INSERT INTO orders (o_orderkey, o_comment) VALUES (3, 'far too long')", engine.DataError,
           "o_comment")
    expect(con, "INSERT INTO orders (o_orderkey, o_total) VALUES (3, NULL), (NULL, 1)", engine.IntegrityError,
           "o_orderkey")


def test_unparsable_date_names_the_value(con):
    expect(con, "SELECT CAST('2024-13-45' AS DATE)", engine.DataError, "2024-13-45")


def test_overflow_is_a_data_error(con):
    expect(con, "SELECT o_orderkey + 9223372036854775807 FROM orders", engine.DataError,
           "BIGINT value is out of range in '(o_orderkey + 9223372036854775807)'")


@pytest.mark.parametrize("sql, fragment", [
    ("SELECT CAST('2020-13-45' AS DATE)", "Incorrect DATE value: '2020-13-45'"),
    ("SELECT CAST('2020-01-01 99:00:00' AS DATETIME)", "Incorrect DATETIME value"),
    # a CAST past its range clips with a warning in a query (MariaDB) and fails in a write (strict mode)
    ("CREATE TABLE c AS SELECT CAST(99999999999999999999 AS SIGNED) AS x",
     "Got overflow when converting '99999999999999999999' to INT"),
    ("CREATE TABLE c AS SELECT CAST(1e40 AS DECIMAL(10,2)) AS x",      # the item's alias, as MariaDB
     "Out of range value for column 'x'"),
    ("CREATE TABLE c AS SELECT CAST('99999999999999999999' AS SIGNED) AS x",
     "Truncated incorrect INTEGER value: '99999999999999999999'"),
    ("SELECT ABS(-9223372036854775808)", "BIGINT value is out of range"),
    ("SELECT LPAD('a', 1e20, 'b')", "out of range for BIGINT"),
    ("SELECT DATE_ADD('x', INTERVAL 1 DAY)", "Incorrect DATE value: 'x'"),
    ("INSERT INTO orders (o_orderkey) VALUES ('abc')", "Incorrect integer value: 'abc' for column 'o_orderkey' at row 1"),
    ("INSERT INTO orders (o_orderkey) VALUES (1), (1e30)", "Out of range value for column 'o_orderkey' at row 2"),
    ("INSERT INTO orders (o_orderkey, o_date) VALUES (3, '2024-02-30')", "Incorrect date value: '2024-02-30' for column 'o_date'"),
])
def test_bad_values_are_named_in_sql_words(con, sql, fragment):
    expect(con, sql, engine.DataError, fragment)


# --- unsupported syntax names the construct ----------------------------------------------------------
@pytest.mark.parametrize("sql, construct", [
    ("SELECT SUM(o_total) OVER (ORDER BY o_orderkey GROUPS 1 PRECEDING) FROM orders", "GROUPS window frame"),
    ("SELECT SUM(o_total) OVER (ORDER BY o_orderkey ROWS 1 PRECEDING EXCLUDE TIES) FROM orders", "EXCLUDE"),
    ("SELECT SQL_CALC_FOUND_ROWS o_total FROM orders LIMIT 1", "SQL_CALC_FOUND_ROWS"),
    ("SELECT NO_SUCH_FUNCTION(o_total) FROM orders", "NO_SUCH_FUNCTION"),
    ("CREATE TABLE t2 (a INT, UNIQUE KEY u (a))", "unique key 'u' on keyless table"),
    ("CREATE TABLE t2 (a GEOMETRY)", "GEOMETRY"),
])
def test_unsupported_names_the_construct(con, sql, construct):
    expect(con, sql, engine.NotSupportedError, construct)


# --- parameters -----------------------------------------------------------------------------------
def test_too_few_parameters(con):
    expect(con, "SELECT %s, %s", engine.ProgrammingError, "2", "1", params=(1,))


def test_too_many_parameters(con):
    expect(con, "SELECT %s", engine.ProgrammingError, "1", "2", params=(1, 2))


def test_missing_named_parameter(con):
    expect(con, "SELECT %(a)s, %(b)s", engine.ProgrammingError, "'b'", params={"a": 1})


def test_named_marker_with_positional_parameters(con):
    expect(con, "SELECT %(a)s", engine.ProgrammingError, "sequence", params=(1,))


def test_parameter_of_unbindable_type(con):
    expect(con, "SELECT %s", engine.ProgrammingError, "object", params=(object(),))


def test_parameter_value_cannot_change_the_statement(con):
    hostile = "x'; DROP TABLE orders; --"
    rows = con.execute("SELECT COUNT(*) FROM orders WHERE o_comment = %s", (hostile,)).fetchall()
    assert rows == [(0,)]
    assert_still_usable(con)


# --- the connection and its cursors survive ----------------------------------------------------------
def test_cursor_reusable_after_error(con):
    cursor = con.cursor()
    with pytest.raises(engine.ProgrammingError):
        cursor.execute("SELECT nope FROM orders")
    cursor.execute("SELECT o_status FROM orders ORDER BY o_orderkey")
    assert cursor.fetchall() == [("F",), ("O",)]


def test_error_in_one_of_several_statements_leaves_earlier_ones_done():
    with engine.connect(multi_statements=True) as con:       # one statement per execute() otherwise
        with pytest.raises(engine.ProgrammingError):
            con.execute("CREATE TABLE scratch (a INT); INSERT INTO scratch VALUES (1); SELECT nope FROM scratch")
        assert con.execute("SELECT a FROM scratch").fetchall() == [(1,)]


def test_runtime_error_on_the_leaves_leaves_the_session_usable(con):
    # the overflow happens while a leaf evaluates the projection, not while planning
    con.execute("CREATE TABLE big (v BIGINT)")
    con.execute("INSERT INTO big VALUES (1), (9223372036854775807)")
    expect(con, "SELECT v * 2 FROM big", engine.DataError)
    assert con.execute("SELECT COUNT(*) FROM big").fetchall() == [(2,)]


def test_every_error_is_a_pep249_error(con):
    for sql in ["SELEC 1", "SELECT * FROM nope", "CREATE TEMPORARY TABLE tmp (a INT)",
                "SELECT SUM(o_date) FROM orders", "SELECT CAST('x' AS DATE)"]:
        with pytest.raises(engine.DatabaseError) as info:
            con.execute(sql)
        assert_clean(info.value)
    assert_still_usable(con)


# --- bad constants and ragged VALUES -----------------------------------------------------------------
def test_values_rows_of_different_lengths(con):
    expect(con, "INSERT INTO orders (o_orderkey, o_status) VALUES (5, 'F'), (6)", engine.ProgrammingError,
           "row 2")


def test_number_out_of_range_literals(con):
    expect(con, "SELECT 1e400", engine.DataError, "1e400")
    expect(con, "SELECT 123456789012345678901234567890123456789012", engine.DataError, "38 digits")
