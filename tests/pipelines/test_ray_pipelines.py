"""Pipelines on the Ray runner with a data_dir: a batch's rows and its files' marks are one transaction
(one commit record over the leaves' partitions of both tables), so they become visible together or not
at all, and a batch whose commit failed is loaded again exactly once — also across a reopen."""
from __future__ import annotations

import dataclasses
import threading
import time

import engine
from engine.pipelines import durable
from engine.pipelines.registry import pipelines_of
from test_pipelines import create, objects, wait_for

SMALL = {"flush_rows": 64, "segment_rows": 256, "chunk_rows": 32}


def _counts(con) -> tuple[int, int, int]:
    """(rows of t, distinct ids of t, current Loaded marks)."""
    rows, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM t").fetchone()
    marks = con.execute("SELECT COUNT(*) FROM information_schema.pipelines_files "
                        "WHERE pipeline_name = 'p' AND file_state = 'Loaded'").fetchone()[0]
    return rows, distinct, marks


def test_rows_and_marks_commit_together_on_ray(ray_session, tmp_path, s3, bucket, put_many, s3_endpoint,
                                               monkeypatch):
    put_many(bucket, objects(0, 40))                  # 40 files of 3 rows
    con = engine.connect(cluster="ray", data_dir=str(tmp_path), **SMALL)
    try:
        con.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(10), SHARD KEY (id))")
        create(con, s3_endpoint, bucket)
        runner = con.session.runner
        pipeline = pipelines_of(runner).get("canopy", "p")

        # The marks of every batch go to a table no leaf holds until `allow` is set: each leaf has
        # prepared the batch's rows when the marks' prepare fails, so the transaction aborts everywhere.
        allow = threading.Event()
        original = durable.mark_rows

        def mark_rows(runner_, rows):
            marks, data = original(runner_, rows)
            return (marks if allow.is_set() else dataclasses.replace(marks, table_id=10 ** 9)), data

        monkeypatch.setattr(durable, "mark_rows", mark_rows)
        con.execute("START PIPELINE p")
        wait_for(lambda: pipeline.errors >= 2, timeout=60)
        assert _counts(con) == (0, 0, 0)              # neither the rows nor the marks are visible
        allow.set()
        wait_for(lambda: _counts(con)[2] == 40, timeout=60)
        assert _counts(con) == (120, 120, 40)         # every file loaded exactly once
        time.sleep(0.3)                               # more rounds: nothing loads again
        assert _counts(con) == (120, 120, 40)
        con.execute("STOP PIPELINE p")
    finally:
        con.close()

    put_many(bucket, objects(40, 10))                 # reopened, the pipeline loads only the new files
    con = engine.connect(cluster="ray", data_dir=str(tmp_path), **SMALL)
    try:
        con.execute("START PIPELINE p")
        wait_for(lambda: _counts(con)[2] == 50, timeout=60)
        time.sleep(0.3)
        assert _counts(con) == (150, 150, 50)
        con.execute("STOP PIPELINE p")
    finally:
        con.close()
