"""One statement per execute() unless the connection opts in (issue 14: "SELECT 1; DROP TABLE t" ran
both, so an injected "; DROP ..." rode along with any statement built from text)."""
from __future__ import annotations

import pytest

import engine


def test_several_statements_are_refused_and_none_runs():
    with engine.connect() as con:
        con.execute("CREATE TABLE t (a INT)")
        con.execute("INSERT INTO t VALUES (1)")
        cur = con.cursor()
        for sql in ("SELECT 1; DROP TABLE t", "INSERT INTO t VALUES (2); DELETE FROM t",
                    "SELECT a FROM t WHERE a = 1; DROP TABLE t; --"):
            with pytest.raises(engine.ProgrammingError, match="statements in one execute.*multi_statements=True"):
                cur.execute(sql)
        assert con.execute("SELECT a FROM t").fetchall() == [(1,)]
        assert con.execute("SELECT 1;").fetchall() == [(1,)]          # a trailing ; is one statement
        with pytest.raises(engine.ProgrammingError, match="statements in one execute"):
            cur.executemany("INSERT INTO t VALUES (%s); DROP TABLE t", [(3,), (4,)])
        assert con.execute("SELECT COUNT(*) FROM t").fetchall() == [(1,)]


def test_a_connection_may_opt_in():
    with engine.connect(multi_statements=True) as con:
        cur = con.execute("CREATE TABLE t (a INT); INSERT INTO t VALUES (1), (2); SELECT SUM(a) FROM t")
        assert cur.fetchall() == [(3,)]                                # the last statement's result
