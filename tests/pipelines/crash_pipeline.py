"""The process a pipeline crash test kills with SIGKILL: opens ``data_dir`` (which resumes the pipeline
when it was running), creates the table and the pipeline the first time, starts it, and prints the
table's row count every few milliseconds so the test knows when batches are committing.

    python crash_pipeline.py DATA_DIR ENDPOINT BUCKET
"""
from __future__ import annotations

import json
import sys
import time

CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def main() -> None:
    import engine
    data_dir, endpoint, bucket = sys.argv[1:4]
    con = engine.connect(data_dir=data_dir, flush_rows=50, segment_rows=200)
    con.execute("CREATE TABLE IF NOT EXISTS t (id BIGINT NOT NULL, name VARCHAR(10), SHARD KEY (id))")
    if not con.execute("SHOW PIPELINES").fetchall():
        config = json.dumps({"region": "us-east-1", "endpoint_url": endpoint})
        con.execute(f"CREATE PIPELINE p AS LOAD DATA S3 '{bucket}/in/' CONFIG '{config}' "
                    f"CREDENTIALS '{json.dumps(CREDENTIALS)}' BATCH_INTERVAL 20 INTO TABLE t FIELDS TERMINATED BY ','")
        con.execute("ALTER PIPELINE p SET MAX_PARTITIONS_PER_BATCH 3")     # many small commits
        con.execute("START PIPELINE p")
    print("ready", flush=True)
    while True:
        print(con.execute("SELECT COUNT(*) FROM t").fetchone()[0], flush=True)
        time.sleep(0.005)


if __name__ == "__main__":
    main()
