"""jupysql's ``%sql`` / ``%%sql`` magics through IPython, on the embedded ``canopy://`` dialect and on
the server (``mysql+pymysql://``): a notebook's way in, with the answers checked against Python's own
computation over the rows the test inserted."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("sql.magic", reason="jupysql is not installed (pip install 'canopy[notebook]')")
InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell

from tests.server.conftest import ADMIN, PASSWORD  # noqa: E402

ROWS = [(i, f"s{i % 3}" if i % 4 else None, i * 1.5) for i in range(1, 41)]


@pytest.fixture(scope="module")
def shell():
    os.environ["PLOOMBER_STATS_ENABLED"] = "false"       # jupysql's usage telemetry: off in tests
    from sqlalchemy.dialects import registry
    registry.register("canopy", "engine.sa_dialect", "CanopyDialect")     # as the entry point does
    shell = InteractiveShell.instance()
    _run(shell, "%load_ext sql")
    _run(shell, "%config SqlMagic.displaylimit = 0")
    yield shell
    from sql.connection import ConnectionManager
    ConnectionManager.close_all()       # now, while the shell can still display jupysql's goodbye


def _run(shell, cell: str):
    result = shell.run_cell(cell)
    if not result.success:
        raise AssertionError(f"{cell!r} failed: {result.error_before_exec or result.error_in_exec!r}")
    return result.result


@pytest.fixture(params=["embedded", "server"])
def url(request, shell):
    if request.param == "embedded":
        return "canopy:///jupysql?partitions_per_leaf=2"
    server = request.getfixturevalue("server")
    return f"mysql+pymysql://{ADMIN}:{PASSWORD}@{server.host}:{server.port}/canopy"


def test_sql_magics(shell, url):
    _run(shell, f"%sql {url} --alias canopy_test")
    _run(shell, "%sql DROP TABLE IF EXISTS jq_items")
    _run(shell, "%sql CREATE TABLE jq_items (id BIGINT NOT NULL, label VARCHAR(10), price DOUBLE)")
    values = ", ".join(f"({i}, {'NULL' if s is None else repr(s)}, {p})" for i, s, p in ROWS)
    _run(shell, f"%sql INSERT INTO jq_items VALUES {values}")

    # a line magic's result set, read back as tuples and as a DataFrame
    shell.user_ns["low"] = 10
    rows = _run(shell, "%sql SELECT id, label FROM jq_items WHERE id <= {{low}} ORDER BY id")
    assert [tuple(r) for r in rows] == [(i, s) for i, s, _ in ROWS if i <= 10]
    frame = rows.DataFrame()
    assert list(frame.columns) == ["id", "label"] and frame["id"].tolist() == list(range(1, 11))

    # a cell magic, its result kept in a variable (<<)
    _run(shell, "%%sql by_label <<\n"
                "SELECT label, COUNT(*) AS n, SUM(price) AS total\n"
                "FROM jq_items\n"
                "GROUP BY label\n"
                "ORDER BY label")
    expected: dict = {}
    for _, label, price in ROWS:
        n, total = expected.get(label, (0, 0.0))
        expected[label] = (n + 1, total + price)
    got = {r[0]: (r[1], float(r[2])) for r in shell.user_ns["by_label"]}
    assert got == expected          # sums of halves: exact in binary floating point
    _run(shell, "%sql DROP TABLE jq_items")
    _run(shell, "%sql --close canopy_test")
