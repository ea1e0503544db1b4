"""S3 pipelines against moto's server: thousands of objects, latency of a new file, bad files and a missing
bucket recorded while the pipeline keeps going, stop/restart and a failed commit never loading twice."""
from __future__ import annotations

import json
import threading
import time

import pytest

import engine
from engine.errors import BindError, ParseError, UnsupportedError
from engine.pipelines import CreatePipeline, parse_pipeline_statement
from engine.pipelines.registry import pipelines_of

CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture
def con():
    with engine.connect() as connection:
        connection.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(10), SHARD KEY (id))")
        yield connection


def create(con, endpoint, bucket, prefix="in/", name="p", extra_config=None, clauses=""):
    config = {"region": "us-east-1", "endpoint_url": endpoint, **(extra_config or {})}
    con.execute(f"CREATE PIPELINE {name} AS LOAD DATA S3 '{bucket}/{prefix}' CONFIG '{json.dumps(config)}' "
                f"CREDENTIALS '{json.dumps(CREDENTIALS)}' BATCH_INTERVAL 50 {clauses} "
                f"INTO TABLE t FIELDS TERMINATED BY ','")


def count(con) -> int:
    return con.execute("SELECT COUNT(*) FROM t").fetchone()[0]


def wait_for(predicate, timeout=30.0, step=0.02):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(step)


def objects(first: int, n: int, rows: int = 3, prefix="in/") -> dict[str, bytes]:
    return {f"{prefix}{i:06d}.csv": "".join(f"{i * rows + r},n{i}\n" for r in range(rows)).encode()
            for i in range(first, first + n)}


def file_states(con, pipeline="p") -> dict[str, str]:
    return dict(con.execute("SELECT file_name, file_state FROM information_schema.pipelines_files "
                            "WHERE pipeline_name = %s", (pipeline,)).fetchall())


# -- statements -------------------------------------------------------------------------------------
def test_parse_create_pipeline():
    s = parse_pipeline_statement(
        "CREATE OR REPLACE PIPELINE IF NOT EXISTS `my p` AS LOAD DATA S3 'bkt/a/b' "
        "CONFIG '{\"region\": \"eu-west-1\"}' CREDENTIALS '{\"aws_access_key_id\": \"k\", "
        "\"aws_secret_access_key\": \"s3cr3t\"}' BATCH_INTERVAL 250 "
        "SKIP PARSER ERRORS INTO TABLE db.t FIELDS TERMINATED BY '\\t' IGNORE 1 LINES (a, @b) SET c = @b")
    assert isinstance(s, CreatePipeline)
    assert (s.name, s.bucket, s.prefix, s.batch_interval_ms, s.or_replace, s.if_not_exists) == \
        ("my p", "bkt", "a/b", 250, True, True)
    assert s.config == {"region": "eu-west-1"}
    assert s.credentials == {"aws_access_key_id": "k", "aws_secret_access_key": "s3cr3t"}
    assert "s3cr3t" not in s.sql and "s3cr3t" not in repr(s)
    assert """CREDENTIALS '{"aws_access_key_id": "<redacted>", "aws_secret_access_key": "<redacted>"}'""" in s.sql
    assert (s.load.database, s.load.table, s.load.fields_terminated_by, s.load.ignore_lines, s.load.skip_errors) \
        == ("db", "t", "\t", 1, "PARSER")
    assert s.load.set_clauses == (("c", "@b"),)


@pytest.mark.parametrize("sql, error, match", [
    ("CREATE PIPELINE p AS LOAD DATA KAFKA 'h/t' INTO TABLE t", UnsupportedError, "KAFKA"),
    ("CREATE PIPELINE p AS LOAD DATA S3 'b/x' CONFIG '{bad' INTO TABLE t", ParseError, "CONFIG is not valid JSON"),
    ("CREATE PIPELINE p AS LOAD DATA S3 'b/x' CONFIG '[1]' INTO TABLE t", ParseError, "JSON object"),
    ("CREATE PIPELINE p AS LOAD DATA S3 'b/x'", ParseError, "INTO TABLE"),
    ("CREATE PIPELINE p AS LOAD DATA S3 'b/x' INTO t", ParseError, "TABLE"),
    ("START PIPELINE p FOREGROUND", UnsupportedError, "FOREGROUND"),
    ("STOP PIPELINE", ParseError, "pipeline name"),
])
def test_bad_pipeline_statements(con, sql, error, match):
    with pytest.raises(error, match=match):
        con.execute(sql)


def test_pipeline_ddl_errors(con, s3_endpoint):
    with pytest.raises(BindError, match="nope"):
        con.execute("CREATE PIPELINE p AS LOAD DATA S3 'bkt/x' INTO TABLE nope")
    create(con, s3_endpoint, "bkt")
    with pytest.raises(BindError, match="already exists"):
        create(con, s3_endpoint, "bkt")
    con.execute("CREATE PIPELINE IF NOT EXISTS p AS LOAD DATA S3 'other' INTO TABLE t")
    assert con.execute("SHOW PIPELINES").fetchall() == [("p", "Stopped", "0", "0", "0", None)]
    assert con.execute("SHOW PIPELINES LIKE 'q%'").fetchall() == []
    with pytest.raises(BindError, match="does not exist"):
        con.execute("START PIPELINE q")
    con.execute("DROP PIPELINE p")
    con.execute("DROP PIPELINE IF EXISTS p")
    with pytest.raises(BindError, match="does not exist"):
        con.execute("DROP PIPELINE p")


# -- loading from S3 ----------------------------------------------------------------------------------
# moto's server answers ~200 requests/s here: the default run puts hundreds of objects, `-m slow` thousands.
@pytest.mark.parametrize("n", [300, pytest.param(3000, marks=pytest.mark.slow)])
def test_many_objects_then_latency_of_a_new_one(con, s3, bucket, put_many, s3_endpoint, n):
    put_many(bucket, objects(0, n))
    s3.put_object(Bucket=bucket, Key="in/dir/", Body=b"")        # a folder marker is not a file
    s3.put_object(Bucket=bucket, Key="other/x.csv", Body=b"1,x\n")  # outside the prefix
    create(con, s3_endpoint, bucket)
    con.execute("START PIPELINE p")
    wait_for(lambda: count(con) == 3 * n, timeout=60)
    states = file_states(con)
    assert len(states) == n and set(states.values()) == {"Loaded"}
    assert con.execute("SELECT COUNT(DISTINCT id), MIN(id), MAX(id) FROM t").fetchone() == (3 * n, 0, 3 * n - 1)

    # a new file after the last key is found by the incremental listing, within seconds
    started = time.monotonic()
    s3.put_object(Bucket=bucket, Key="in/999999.csv", Body=b"100000,new\n")
    wait_for(lambda: count(con) == 3 * n + 1, timeout=10)
    latency = time.monotonic() - started
    assert latency < 5.0, latency
    row = con.execute("SELECT pipeline_name, state, files_loaded, rows_loaded, error "
                      "FROM information_schema.pipelines").fetchone()
    assert row == ("p", "Running", n + 1, 3 * n + 1, None)
    con.execute("STOP PIPELINE p")
    assert con.execute("SHOW PIPELINES").fetchone()[1] == "Stopped"


def test_late_key_is_caught_by_the_full_listing(con, s3, bucket, s3_endpoint):
    s3.put_object(Bucket=bucket, Key="in/b.csv", Body=b"1,b\n")
    create(con, s3_endpoint, bucket, extra_config={"full_listing_interval_s": 0.5})
    con.execute("START PIPELINE p")
    wait_for(lambda: count(con) == 1)
    s3.put_object(Bucket=bucket, Key="in/a.csv", Body=b"2,a\n")    # sorts before the last key seen
    wait_for(lambda: count(con) == 2, timeout=10)
    con.execute("STOP PIPELINE p")


def test_bad_file_and_missing_bucket_are_recorded_and_the_pipeline_keeps_going(con, s3, s3_endpoint, put_many):
    import uuid
    bucket = f"canopy-late-{uuid.uuid4().hex[:8]}"
    # objects put in parallel arrive out of key order: the full listing catches those behind the last key
    create(con, s3_endpoint, bucket, extra_config={"full_listing_interval_s": 0.3})
    con.execute("START PIPELINE p")
    wait_for(lambda: (con.execute("SHOW PIPELINES").fetchone()[5] or "").startswith("S3 NoSuchBucket"))
    assert con.execute("SHOW PIPELINES").fetchone()[1] == "Running"

    s3.create_bucket(Bucket=bucket)
    put_many(bucket, {**objects(0, 20), "in/000005.csv": b"5,ok\nnot-a-number,x\n",
                      "in/000007.csv.gz": b"not gzip"})
    # every outcome is recorded in its own round: wait for all of them, not just the rows
    wait_for(lambda: count(con) == 19 * 3 and file_states(con).get("in/000007.csv.gz") == "Failed"
             and file_states(con).get("in/000005.csv") == "Failed"
             and con.execute("SHOW PIPELINES").fetchone()[5] is None)
    errors = dict(con.execute("SELECT file_name, error FROM information_schema.pipelines_files "
                              "WHERE file_state = 'Failed'").fetchall())
    assert set(errors) == {"in/000005.csv", "in/000007.csv.gz"}
    assert "line 2, column 'id': invalid value for" in errors["in/000005.csv"]
    show = con.execute("SHOW PIPELINES").fetchone()
    assert show[1:5] == ("Running", "19", "2", str(count(con)))
    assert show[5] is None                          # the bucket exists now: no pipeline-level error
    con.execute("STOP PIPELINE p")


def test_skip_errors_in_a_pipeline(con, s3, bucket, s3_endpoint):
    s3.put_object(Bucket=bucket, Key="in/a.csv", Body=b"1,a\nx,b\n3,c\n")
    create(con, s3_endpoint, bucket, clauses="SKIP ALL ERRORS")
    con.execute("START PIPELINE p")
    wait_for(lambda: count(con) == 2)
    assert con.execute("SELECT rows_loaded, rows_skipped, file_state FROM information_schema.pipelines_files"
                       ).fetchone() == (2, 1, "Loaded")
    con.execute("STOP PIPELINE p")


def test_stop_and_restart_never_loads_a_file_twice(con, s3, bucket, put_many, s3_endpoint):
    put_many(bucket, objects(0, 150, rows=2))
    create(con, s3_endpoint, bucket)
    registry = pipelines_of(con.session.runner)
    pipeline = registry.get("canopy", "p")
    for _ in range(3):
        con.execute("START PIPELINE p")
        time.sleep(0.1)
        con.execute("STOP PIPELINE p")
        files, _ = pipeline.snapshot()
        loaded = [f for f in files if f.state == "Loaded"]
        # the invariant of exactly once: the table holds the rows of the Loaded files, no more, no less
        assert count(con) == sum(f.rows for f in loaded) == 2 * len(loaded)
    con.execute("START PIPELINE p")
    wait_for(lambda: count(con) == 300)
    time.sleep(0.3)                                     # more rounds: nothing is loaded again
    assert count(con) == 300
    assert con.execute("SELECT COUNT(DISTINCT id) FROM t").fetchone()[0] == 300
    con.execute("STOP PIPELINE p")


def test_a_failed_commit_loads_nothing_and_the_batch_is_retried(con, s3, bucket, put_many, s3_endpoint):
    put_many(bucket, objects(0, 50))
    create(con, s3_endpoint, bucket)
    runner = con.session.runner
    original = runner.begin_load
    failures = []

    def begin_load(table):
        writer = original(table)
        if not failures:
            failures.append(table.name)

            def crash(on_commit=None):
                raise OSError("disk on fire")       # dies before anything is appended or marked
            writer.commit = crash
        return writer

    runner.begin_load = begin_load
    try:
        con.execute("START PIPELINE p")
        wait_for(lambda: count(con) == 150)
    finally:
        runner.begin_load = original
    con.execute("STOP PIPELINE p")
    assert failures == ["t"]
    assert pipelines_of(runner).get("canopy", "p").errors == 1
    assert set(file_states(con).values()) == {"Loaded"}
    assert con.execute("SELECT COUNT(DISTINCT id) FROM t").fetchone()[0] == 150


def test_drop_pipeline_stops_its_thread_and_close_stops_all(s3_endpoint, bucket):
    con = engine.connect()
    con.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(10))")
    create(con, s3_endpoint, bucket, name="a")
    create(con, s3_endpoint, bucket, name="b")
    con.execute("START PIPELINE a")
    con.execute("START PIPELINE b")
    names = {t.name for t in threading.enumerate()}
    assert {"canopy-pipeline-a", "canopy-pipeline-b"} <= names
    con.execute("DROP PIPELINE a")
    assert "canopy-pipeline-a" not in {t.name for t in threading.enumerate()}
    con.close()
    assert "canopy-pipeline-b" not in {t.name for t in threading.enumerate()}


def test_doctests():
    import doctest

    import engine.pipelines.statements as module
    assert doctest.testmod(module).failed == 0


def test_a_batch_of_small_files_is_appended_as_few_blocks():
    import pyarrow as pa

    from engine.pipelines.pipeline import coalesced

    def block(first, n):
        return pa.record_batch([pa.array(range(first, first + n), pa.int64())], names=["id"])

    blocks = [block(i, 1) for i in range(10)] + [block(100, 50)] + [block(200, 3), block(203, 4)]
    out = list(coalesced(blocks, min_rows=6))
    # runs of small blocks become one block once they reach min_rows (six singles; the four singles
    # left and the 3-row block); a large block passes as it is; the last run goes out as it is
    assert [b.num_rows for b in out] == [6, 50, 7, 4]
    assert sorted(v for b in out for v in b.column(0).to_pylist()) == \
        sorted(v for b in blocks for v in b.column(0).to_pylist())
