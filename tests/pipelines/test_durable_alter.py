"""Pipelines across a restart (definitions and loaded-file marks in the data_dir, committed with the
rows; a SIGKILL in the middle of loading neither loses nor doubles a file) and ALTER PIPELINE."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from engine.errors import BindError, ExecutionError, ParseError, UnsupportedError
from engine.pipelines import AlterPipeline, parse_pipeline_statement

CRASH_SCRIPT = Path(__file__).with_name("crash_pipeline.py")
sys.path.insert(0, str(CRASH_SCRIPT.parent))
from test_pipelines import count, create, file_states, objects, wait_for  # noqa: E402


def _open(data_dir):
    con = engine.connect(data_dir=str(data_dir))
    con.execute("CREATE TABLE IF NOT EXISTS t (id BIGINT NOT NULL, name VARCHAR(10), SHARD KEY (id))")
    return con


def _distinct_ok(con, expected: int) -> None:
    assert con.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM t").fetchone() == (expected, expected)


# -- ALTER PIPELINE: statements ------------------------------------------------------------------------
def test_parse_alter_pipeline():
    s = parse_pipeline_statement("ALTER PIPELINE p SET OFFSETS LATEST, BATCH_INTERVAL 250 "
                                 "SET MAX_PARTITIONS_PER_BATCH 4 DROP FILE 'in/a.csv'")
    assert s == AlterPipeline("p", offsets="LATEST", batch_interval_ms=250, max_partitions_per_batch=4,
                              drop_file="in/a.csv")
    assert parse_pipeline_statement("alter pipeline `my p` set offsets earliest") == \
        AlterPipeline("my p", offsets="EARLIEST")


@pytest.mark.parametrize("sql, error, match", [
    ("ALTER PIPELINE p SET OFFSETS '{\"in/a.csv\": 1}'", UnsupportedError, "OFFSETS '<json offsets>'"),
    ("ALTER PIPELINE p SET TRANSFORM ('http://x')", UnsupportedError, "SET TRANSFORM"),
    ("ALTER PIPELINE p SET CONFIG '{}'", UnsupportedError, "SET CONFIG"),
    ("ALTER PIPELINE p SET CREDENTIALS '{\"aws_access_key_id\": \"k\"}'", ParseError, "needs both"),
    ("ALTER PIPELINE p SET RESOURCE POOL x", UnsupportedError, "SET RESOURCE"),
    ("ALTER PIPELINE p DROP ORPHAN FILES", UnsupportedError, "DROP ORPHAN FILES"),
    ("ALTER PIPELINE p DROP PARTITION 'x'", UnsupportedError, "DROP PARTITION"),
    ("ALTER PIPELINE p STOP_ON_ERROR ON", UnsupportedError, "STOP_ON_ERROR"),
    ("ALTER PIPELINE p FIELDS TERMINATED BY ';'", UnsupportedError, "FIELDS"),
    ("ALTER PIPELINE p", ParseError, "needs SET"),
    ("ALTER PIPELINE p SET OFFSETS NEWEST", ParseError, "EARLIEST or LATEST"),
    ("ALTER PIPELINE p SET BATCH_INTERVAL fast", ParseError, "whole number"),
    ("ALTER PIPELINE p SET MAX_PARTITIONS_PER_BATCH 0", ParseError, "at least 1"),
    ("ALTER PIPELINE p SET BATCH_INTERVAL 1 BATCH_INTERVAL 2", ParseError, "given twice"),
    ("ALTER PIPELINE p DROP FILE", ParseError, "DROP FILE"),
])
def test_bad_alter_pipeline(sql, error, match):
    with engine.connect() as con:
        with pytest.raises(error, match=match):
            con.execute(sql)


# -- ALTER PIPELINE: behaviour ---------------------------------------------------------------------------
def test_alter_pipeline_offsets_drop_file_and_settings(s3, bucket, put_many, s3_endpoint):
    from engine.pipelines.registry import pipelines_of
    with engine.connect() as con:
        con.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(10), SHARD KEY (id))")
        put_many(bucket, objects(0, 10))
        create(con, s3_endpoint, bucket)
        with pytest.raises(BindError, match="does not exist"):
            con.execute("ALTER PIPELINE q SET BATCH_INTERVAL 10")
        con.execute("ALTER PIPELINE p SET OFFSETS LATEST")            # the 10 files there now: skipped
        assert set(file_states(con).values()) == {"Skipped"}
        put_many(bucket, objects(10, 2))
        con.execute("ALTER PIPELINE p SET BATCH_INTERVAL 20 MAX_PARTITIONS_PER_BATCH 1")
        pipeline = pipelines_of(con.session.runner).get("canopy", "p")
        assert (pipeline.interval, pipeline.max_files_per_batch) == (0.02, 1)
        con.execute("START PIPELINE p")
        wait_for(lambda: count(con) == 6)
        assert pipeline.batches == 2                                  # one file a batch
        with pytest.raises(ExecutionError, match="stop the pipeline first"):
            con.execute("ALTER PIPELINE p DROP FILE 'in/000010.csv'")
        con.execute("STOP PIPELINE p")
        with pytest.raises(BindError, match="has no file 'in/nope.csv'"):
            con.execute("ALTER PIPELINE p DROP FILE 'in/nope.csv'")
        con.execute("ALTER PIPELINE p DROP FILE 'in/000010.csv'")       # forgotten: loads again
        assert "in/000010.csv" not in file_states(con)
        con.execute("START PIPELINE p")
        wait_for(lambda: count(con) == 9)
        assert con.execute("SELECT COUNT(*) FROM t WHERE id BETWEEN 30 AND 32").fetchone()[0] == 6
        con.execute("STOP PIPELINE p")
        con.execute("ALTER PIPELINE p SET OFFSETS EARLIEST")          # everything loads again
        con.execute("START PIPELINE p")
        wait_for(lambda: count(con) == 9 + 36)
        wait_for(lambda: set(file_states(con).values()) == {"Loaded"} and len(file_states(con)) == 12)
        con.execute("STOP PIPELINE p")


# -- durable marks and definitions -----------------------------------------------------------------------
def test_pipeline_and_marks_survive_a_reopen(tmp_path, s3, bucket, put_many, s3_endpoint):
    put_many(bucket, objects(0, 40))
    s3.put_object(Bucket=bucket, Key="in/bad.csv", Body=b"x,y\n")
    con = _open(tmp_path)
    create(con, s3_endpoint, bucket)
    con.execute("ALTER PIPELINE p SET MAX_PARTITIONS_PER_BATCH 7")
    con.execute("START PIPELINE p")
    wait_for(lambda: count(con) == 120 and file_states(con).get("in/bad.csv") == "Failed")
    con.close()                                        # closed while running: resumes on reopen

    put_many(bucket, objects(40, 5))                  # arrive while closed
    con = _open(tmp_path)
    wait_for(lambda: count(con) == 135)
    _distinct_ok(con, 135)
    states = file_states(con)
    assert len(states) == 46 and states["in/bad.csv"] == "Failed"
    show = con.execute("SHOW PIPELINES").fetchone()
    assert show[:5] == ("p", "Running", "45", "1", "135")
    from engine.pipelines.registry import pipelines_of
    assert pipelines_of(con.session.runner).get("canopy", "p").max_files_per_batch == 7
    con.execute("STOP PIPELINE p")
    con.close()

    con = _open(tmp_path)                              # stopped stays stopped
    assert con.execute("SHOW PIPELINES").fetchone()[:2] == ("p", "Stopped")
    con.execute("DROP PIPELINE p")
    con.close()
    con = _open(tmp_path)
    assert con.execute("SHOW PIPELINES").fetchall() == []
    assert con.execute("SELECT COUNT(*) FROM information_schema._pipeline_marks").fetchone()[0] == 0
    _distinct_ok(con, 135)
    con.close()


def test_sigkill_while_loading_neither_loses_nor_doubles_a_file(tmp_path, bucket, put_many, s3_endpoint):
    put_many(bucket, objects(0, 120, rows=2))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for attempt in range(2):              # killed twice, at different points of the load
        process = subprocess.Popen([sys.executable, str(CRASH_SCRIPT), str(tmp_path), s3_endpoint, bucket],
                                   stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert process.stdout.readline().strip() == "ready"
            target = 40 + 80 * attempt             # rows committed before the kill
            for line in process.stdout:
                if int(line) >= target:
                    break
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait(30)
    con = _open(tmp_path)                             # resumes the pipeline
    try:
        wait_for(lambda: count(con) == 240, timeout=60)
        _distinct_ok(con, 240)
        states = file_states(con)
        assert len(states) == 120 and set(states.values()) == {"Loaded"}
        assert con.execute("SELECT SUM(rows_loaded) FROM information_schema.pipelines_files").fetchone()[0] == 240
        con.execute("STOP PIPELINE p")
    finally:
        con.close()
