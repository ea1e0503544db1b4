"""One Canopy server per test module (``python -m engine.server`` in a child process on a free port of
127.0.0.1), with a data_dir and the TPC-H SF 0.01 files as its load_dir."""
from __future__ import annotations

import pytest

pymysql = pytest.importorskip("pymysql")

from engine.server.process import ServerProcess  # noqa: E402

ADMIN, PASSWORD = "admin", "s3cret"


@pytest.fixture(scope="module")
def server(tmp_path_factory, tpch_dir_sf001):
    data_dir = tmp_path_factory.mktemp("server-data")
    process = ServerProcess("--data-dir", str(data_dir), "--load-dir", str(tpch_dir_sf001),
                            user=ADMIN, password=PASSWORD)
    process.data_dir = data_dir
    yield process
    status = process.stop()
    assert status == 0, "\n".join(process.log[-30:])
    assert any("stopped" in line for line in process.log), process.log[-10:]


def connect(server, user=ADMIN, password=PASSWORD, database="canopy", **options):
    """A PyMySQL connection in autocommit mode (PyMySQL's own default turns autocommit off, so every
    write would wait for a COMMIT, as on MySQL)."""
    options.setdefault("autocommit", True)
    return pymysql.connect(host=server.host, port=server.port, user=user, password=password, database=database,
                           **options)
