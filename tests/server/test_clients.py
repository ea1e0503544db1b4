"""TPC-H SF 0.01 through the MySQL drivers (PyMySQL, mysqlclient) against the in-process DB-API's answers,
and SQLAlchemy 2 with pandas over ``mysql+pymysql://``."""
from __future__ import annotations

import decimal

import pytest

from engine.workloads import tpch
from tests.server.conftest import ADMIN, PASSWORD, connect
from tests.tpch.compare import assert_same_result, has_order_by

QUERIES = tpch.queries()


@pytest.fixture(scope="module")
def loaded(server, tpch_dir_sf001):
    """The 8 TPC-H tables created and loaded through PyMySQL (LOAD DATA INFILE inside --load-dir)."""
    con = connect(server)
    with con.cursor() as cur:
        for statement in tpch.schema_statements():
            cur.execute(statement)
        for table in tpch.TABLES:
            path = str((tpch_dir_sf001 / f"{table}.csv").resolve())
            assert cur.execute(tpch.LOAD_DATA_SQL.format(path=path, table=table)) > 0
    con.close()
    return server


def _pymysql(server):
    return connect(server)


def _mysqlclient(server):
    MySQLdb = pytest.importorskip("MySQLdb", reason="mysqlclient is not installed (needs libmariadb-dev)")
    return MySQLdb.connect(host=server.host, port=server.port, user=ADMIN, password=PASSWORD, database="canopy")


@pytest.mark.parametrize("driver", [_pymysql, _mysqlclient], ids=["pymysql", "mysqlclient"])
def test_tpch_answers_equal_the_dbapis(loaded, tpch_canopy_sf001, driver):
    con = driver(loaded)
    try:
        for name, sql in QUERIES:
            cur = con.cursor()
            cur.execute(sql)
            actual = cur.fetchall()
            cur.close()
            expected = tpch_canopy_sf001.execute(sql).fetchall()
            assert_same_result(list(actual), expected, ordered=has_order_by(sql), label=name)
            assert len(actual) == len(expected)
    finally:
        con.close()


def test_sqlalchemy_and_pandas(loaded):
    sqlalchemy = pytest.importorskip("sqlalchemy")
    pd = pytest.importorskip("pandas")
    url = f"mysql+pymysql://{ADMIN}:{PASSWORD}@{loaded.host}:{loaded.port}/canopy"
    db = sqlalchemy.create_engine(url)
    try:
        inspector = sqlalchemy.inspect(db)
        assert set(tpch.TABLES) <= set(inspector.get_table_names())
        columns = {c["name"]: c for c in inspector.get_columns("orders")}
        assert isinstance(columns["o_totalprice"]["type"], sqlalchemy.types.DECIMAL)
        assert columns["o_orderkey"]["nullable"] is False
        frame = pd.read_sql("SELECT n_nationkey, n_name FROM nation ORDER BY n_nationkey", db)
        assert list(frame.columns) == ["n_nationkey", "n_name"] and len(frame) == 25
        df = pd.DataFrame({"k": [1, 2, 3], "name": ["a", None, "c"], "score": [0.5, 1.5, None]})
        assert df.to_sql("frame", db, index=False) == 3
        back = pd.read_sql("SELECT * FROM frame ORDER BY k", db)
        assert back["k"].tolist() == [1, 2, 3] and back["name"].tolist()[::2] == ["a", "c"] and pd.isna(back["name"][1])
        with db.connect() as conn:
            value = conn.execute(sqlalchemy.text("SELECT SUM(o_totalprice) FROM orders WHERE o_orderkey < :k"),
                                 {"k": 100}).scalar()
        assert isinstance(value, decimal.Decimal) and value > 0
    finally:
        db.dispose()


def test_prepared_statements_use_the_binary_protocol(loaded):
    """COM_STMT_PREPARE / EXECUTE driven through PyMySQL's packet layer (no Python driver here prepares
    server-side): parameters are bound as values, rows come back binary-encoded."""
    from pymysql.constants import COMMAND
    con = connect(loaded)
    try:
        sql = "SELECT n_name, n_regionkey FROM nation WHERE n_nationkey = ? OR n_name = ?"
        con._execute_command(COMMAND.COM_STMT_PREPARE, sql)
        ok = con._read_packet()
        statement_id = int.from_bytes(ok._data[1:5], "little")
        params = int.from_bytes(ok._data[7:9], "little")
        assert params == 2
        for _ in range(params):               # parameter definitions, then EOF/OK
            con._read_packet()
        con._read_packet()
        name = "x' OR '1'='1"                 # a value, never SQL: matches no row
        values = [(8, (3).to_bytes(8, "little", signed=True)),          # LONGLONG 3
                  (253, bytes([len(name)]) + name.encode())]              # VAR_STRING
        body = (statement_id.to_bytes(4, "little") + b"\x00" + (1).to_bytes(4, "little")
                + b"\x00" + b"\x01" + b"".join(bytes([t, 0]) for t, _ in values) + b"".join(v for _, v in values))
        con._execute_command(COMMAND.COM_STMT_EXECUTE, body)
        assert con._read_packet()._data == b"\x02"                  # two columns
        con._read_packet(), con._read_packet()                        # their definitions
        packets = []
        while True:
            packet = con._read_packet()
            if packet.is_eof_packet() or packet.is_ok_packet() and packets:
                if packets:
                    break
                continue                                              # the EOF after the definitions
            packets.append(packet._data)
        assert len(packets) == 1
        row = packets[0]                   # binary row: 0x00, NULL bitmap, then each value in its type
        assert row[0] == 0 and row[2] == len("CANADA") and row[3:9] == b"CANADA"
        assert int.from_bytes(row[9:17], "little") == 1               # n_regionkey, an 8-byte BIGINT
    finally:
        con.close()
