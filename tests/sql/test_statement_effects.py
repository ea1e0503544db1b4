"""Each statement of tests/sql/statement_effects.py has its effect on Canopy (both runners:
``CANOPY_RUNNER=ray``); test_mariadb_oracle.py checks the same cases against MariaDB."""
from __future__ import annotations

import itertools

import pytest

import engine
from tests.sql.statement_effects import CASES, ERROR, QUERY, ROWCOUNT

_databases = itertools.count()


def normalized(rows) -> list:
    """Values as text (NULL as None): MariaDB and Canopy differ in Python types (Decimal / int,
    SHOW WARNINGS' code), not in the values a client sees."""
    return [tuple(None if v is None else str(v) for v in row) for row in rows]


def run_case(execute, steps: list) -> None:
    """Run a case's steps through ``execute(sql) -> (rowcount, rows or None)``, which raises on an
    error; assert every expectation."""
    for step in steps:
        if isinstance(step, str):
            execute(step)
        elif step[1] == ERROR:
            with pytest.raises(Exception) as failure:
                execute(step[0])
            if "Duplicate" in str(failure.value):       # PEP 249's class for a key violation, on both
                assert any(c.__name__ == "IntegrityError" for c in type(failure.value).__mro__), failure.value
            if len(step) > 2:                           # MySQL's message, on both
                assert step[2] in str(failure.value), (step[0], str(failure.value))
        elif step[1] == ROWCOUNT:
            assert execute(step[0])[0] == step[2], step[0]
        else:
            assert step[0] == QUERY
            assert normalized(execute(step[1])[1]) == normalized(step[2]), step[1]


@pytest.fixture(scope="module")
def con():
    connection = engine.connect()
    yield connection
    connection.close()


def canopy_executor(con):
    database = f"effects{next(_databases)}"
    con.execute(f"CREATE DATABASE {database}")
    con.execute(f"USE {database}")

    def execute(sql: str):
        cursor = con.execute(sql)
        return cursor.rowcount, (cursor.fetchall() if cursor.description else None)
    return execute


@pytest.mark.parametrize("case", list(CASES))
def test_statement_effects(con, case):
    try:
        run_case(canopy_executor(con), CASES[case])
    finally:
        con.session.rollback()
        con.session.set_autocommit(True)
