"""A query reads one cut of committed statements across all partitions: while statements that each
add (or delete) rows in every partition commit concurrently, every query's count is a multiple of the
statement size, never a statement half seen. In memory and durable."""
import threading

import numpy as np
import pyarrow as pa
import pytest

import engine

ROWS_PER_STATEMENT = 800          # spread over all 8 partitions by the shard key


@pytest.fixture(params=["memory", "durable"])
def con(request, tmp_path):
    options = {"data_dir": str(tmp_path / "data")} if request.param == "durable" else {}
    con = engine.connect(**options)
    con.execute("CREATE TABLE t (id BIGINT, g BIGINT, SHARD KEY (id))")
    yield con
    con.close()


def test_queries_never_see_half_a_statement(con):
    writer_con_error = []
    stop = threading.Event()

    def write():
        try:
            for round_ in range(25):
                ids = np.arange(round_ * ROWS_PER_STATEMENT, (round_ + 1) * ROWS_PER_STATEMENT)
                con.load_table("t", pa.table({"id": ids, "g": np.full(len(ids), round_)}))
                if round_ % 5 == 4:          # and whole statements' rows leave again
                    con.cursor().execute(f"DELETE FROM t WHERE g = {round_ - 2}")
        except Exception as error:        # noqa: BLE001 - reported by the test thread
            writer_con_error.append(error)
        finally:
            stop.set()

    writer = threading.Thread(target=write)
    writer.start()
    cursor = con.cursor()
    seen = []
    while not stop.is_set():
        cursor.execute("SELECT COUNT(*), COUNT(DISTINCT g) FROM t WHERE id >= 0")
        count, groups = cursor.fetchone()
        seen.append(count)
        assert count == groups * ROWS_PER_STATEMENT, f"{count} rows in {groups} statements"
    writer.join()
    assert not writer_con_error, writer_con_error
    assert len(seen) > 1
