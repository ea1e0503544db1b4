"""S3 pipelines: a background thread per started pipeline that lists a bucket prefix and loads new files.

One round of a running pipeline::

    list (incremental: StartAfter = the last key seen; every full_listing_interval_s a full listing,
          which catches keys that arrived behind the last one)
    -> new keys recorded 'Unloaded'
    -> a batch of Unloaded files downloaded in parallel and parsed (the LOAD DATA reader)
    -> one LoadWriter for the batch: rows of every good file routed, then commit(on_commit=mark)

Exactly once: ``mark`` flips the batch's files to 'Loaded' inside the writer's commit, which on the
local runner runs under the write lock right after the rows are appended, so rows and marks become
visible together or not at all. A restart (STOP, START) resumes from the marks: Loaded files are never
read again, Unloaded ones are. A file that fails to download or parse is recorded 'Failed' with its
error and the pipeline moves on; a listing failure (bad credentials, missing bucket, endpoint down) is
the pipeline's error, shown by SHOW PIPELINES, and the next round retries.

With in-memory storage the marks live with the registry in memory, exactly as long as the rows do.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

import pyarrow as pa

from engine.errors import BindError, CanopyError, ExecutionError
from engine.load.delimited import LoadWarnings
from engine.load.loader import read_blocks
from engine.pipelines.statements import CreatePipeline

DEFAULT_FULL_LISTING_INTERVAL_S = 30.0
MAX_FILES_PER_BATCH = 128
MAX_BYTES_PER_BATCH = 256 << 20
DOWNLOAD_THREADS = 16
_COMPRESSION = {".gz": "gzip", ".gzip": "gzip", ".lz4": "lz4", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2"}


@dataclass
class FileRecord:
    key: str
    size: int
    state: str = "Unloaded"          # Unloaded -> Loaded | Failed
    rows: int = 0
    skipped_rows: int = 0
    error: Optional[str] = None
    loaded_at: Optional[float] = None  # time.time() of the commit


class Pipeline:
    def __init__(self, database: str, definition: CreatePipeline, runner, catalog):
        self.database = database
        self.definition = definition
        self.name = definition.name
        self.runner = runner
        self.catalog = catalog
        self.state = "Stopped"
        self.error: Optional[str] = None         # the last listing / pipeline-level error
        self.errors = 0                          # rounds that failed, since creation
        self.files: dict[str, FileRecord] = {}
        self.last_key: Optional[str] = None
        self.batches = 0
        self._lock = threading.Lock()            # guards files / state against the reporting side
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._next_full_listing = 0.0
        config = definition.config
        self.full_listing_interval = float(config.get("full_listing_interval_s", DEFAULT_FULL_LISTING_INTERVAL_S))
        self.interval = definition.batch_interval_ms / 1000.0

    # -- control ----------------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                raise ExecutionError(f"pipeline {self.name!r} is already running")
            self._stop.clear()
            self.state = "Running"
            self._next_full_listing = 0.0          # a (re)start lists everything once
            self._thread = threading.Thread(target=self._run, name=f"canopy-pipeline-{self.name}", daemon=True)
            self._thread.start()

    def stop(self, timeout: Optional[float] = 60.0) -> None:
        """Ask the thread to stop after its current batch (which commits whole or not at all), and wait."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with self._lock:
            self.state = "Stopped"
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the loop -----------------------------------------------------------------------------------
    def _run(self) -> None:
        client = None
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                if client is None:
                    client = make_client(self.definition)
                self._list(client)
                self.error = None
                while not self._stop.is_set() and self._load_batch(client):
                    pass
            except Exception as error:   # noqa: BLE001 - any failure of a round is the pipeline's error
                self.errors += 1
                self.error = describe_error(error, self.definition)
                if getattr(self.runner, "_closed", False):
                    break
            self._wake.wait(max(0.0, self.interval - (time.monotonic() - started)))
            self._wake.clear()

    def _list(self, client) -> None:
        now = time.monotonic()
        full = now >= self._next_full_listing
        start_after = None if full else self.last_key
        found = list_objects(client, self.definition.bucket, self.definition.prefix, start_after)
        if full:
            self._next_full_listing = now + self.full_listing_interval
        with self._lock:
            for key, size in found:
                if key not in self.files:
                    self.files[key] = FileRecord(key, size)
                if self.last_key is None or key > self.last_key:
                    self.last_key = key

    def _load_batch(self, client) -> bool:
        """Load the next batch of Unloaded files in one commit; False when there was nothing to load."""
        with self._lock:
            pending = sorted(k for k, f in self.files.items() if f.state == "Unloaded")
        batch, size = [], 0
        for key in pending:
            if batch and (len(batch) >= MAX_FILES_PER_BATCH or size >= MAX_BYTES_PER_BATCH):
                break
            batch.append(key)
            size += self.files[key].size
        if not batch:
            return False
        table = self.catalog.table(self.database if self.definition.load.database is None
                                   else self.definition.load.database, self.definition.load.table)
        with ThreadPoolExecutor(min(DOWNLOAD_THREADS, len(batch)), thread_name_prefix="canopy-s3") as pool:
            parsed = list(pool.map(lambda key: self._read(client, key, table), batch))
        writer = self.runner.begin_load(table)
        loaded: list[tuple[str, int, int]] = []
        failed: list[tuple[str, str]] = []
        try:
            for key, (blocks, warnings, error) in zip(batch, parsed):
                if error is not None:
                    failed.append((key, error))
                    continue
                rows = sum(b.num_rows for b in blocks)
                for block in blocks:
                    writer.add(block)
                loaded.append((key, rows, warnings.skipped))
            del parsed

            def mark() -> None:          # runs inside the commit: must not fail
                now = time.time()
                with self._lock:
                    for key, rows, skipped in loaded:
                        record = self.files[key]
                        record.state, record.rows, record.skipped_rows = "Loaded", rows, skipped
                        record.error, record.loaded_at = None, now
                    self.batches += 1

            writer.commit(on_commit=mark)
        except BaseException:
            writer.abort()
            raise
        with self._lock:
            for key, error in failed:
                record = self.files[key]
                record.state, record.error = "Failed", error
        return True

    def _read(self, client, key: str, table):
        """(blocks, warnings, None) or ([], None, error message) for one object."""
        statement = dataclasses.replace(self.definition.load, path=f"s3://{self.definition.bucket}/{key}")
        warnings = LoadWarnings()
        try:
            data = client.get_object(Bucket=self.definition.bucket, Key=key)["Body"].read()
            codec = next((c for ext, c in _COMPRESSION.items() if key.lower().endswith(ext)), None)
            if codec is not None:
                data = pa.input_stream(pa.BufferReader(data), compression=codec).read()
            return list(read_blocks(statement, table, warnings, data=data)), warnings, None
        except CanopyError as error:
            return [], None, str(error)
        except Exception as error:   # noqa: BLE001 - a download or decode failure belongs to this file
            return [], None, describe_error(error, self.definition)

    # -- reporting ----------------------------------------------------------------------------------
    def snapshot(self) -> tuple[list[FileRecord], dict]:
        with self._lock:
            files = [dataclasses.replace(f) for f in self.files.values()]
        summary = {"state": "Running" if self.running else self.state, "error": self.error,
                   "files_loaded": sum(f.state == "Loaded" for f in files),
                   "files_failed": sum(f.state == "Failed" for f in files),
                   "files_unloaded": sum(f.state == "Unloaded" for f in files),
                   "rows_loaded": sum(f.rows for f in files), "batches": self.batches}
        return files, summary


# -- S3 -------------------------------------------------------------------------------------------
def make_client(definition: CreatePipeline):
    import boto3
    from botocore.config import Config

    config, credentials = definition.config, definition.credentials
    return boto3.session.Session().client(
        "s3", region_name=config.get("region") or "us-east-1", endpoint_url=config.get("endpoint_url"),
        aws_access_key_id=credentials.get("aws_access_key_id"),
        aws_secret_access_key=credentials.get("aws_secret_access_key"),
        aws_session_token=credentials.get("aws_session_token"),
        config=Config(retries={"max_attempts": 2, "mode": "standard"}, connect_timeout=5, read_timeout=60,
                      max_pool_connections=DOWNLOAD_THREADS + 4))


def list_objects(client, bucket: str, prefix: str, start_after: Optional[str]) -> list[tuple[str, int]]:
    """(key, size) of every object under ``prefix`` after ``start_after`` (all of them when None)."""
    kwargs = {"Bucket": bucket, "Prefix": prefix}
    if start_after:
        kwargs["StartAfter"] = start_after
    found = []
    for page in client.get_paginator("list_objects_v2").paginate(**kwargs):
        for item in page.get("Contents", ()):
            if not item["Key"].endswith("/"):
                found.append((item["Key"], item["Size"]))
    return found


def describe_error(error: Exception, definition: CreatePipeline) -> str:
    """A short message for SHOW PIPELINES / PIPELINES_FILES, S3 error codes spelled out."""
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:
        code = response["Error"].get("Code", "")
        message = response["Error"].get("Message", "")
        hint = {"NoSuchBucket": f"bucket {definition.bucket!r} does not exist",
                "InvalidAccessKeyId": "bad credentials (unknown access key)",
                "SignatureDoesNotMatch": "bad credentials (secret key does not match)",
                "AccessDenied": "access denied", "NoSuchKey": "the object was deleted"}.get(code)
        return f"S3 {code}: {hint or message}"
    return f"{type(error).__name__}: {error}"


class PipelineRegistry:
    """The pipelines of one cluster (shared by its sessions), keyed by (database, name) lower-cased."""

    def __init__(self, runner):
        self.runner = runner
        self.pipelines: dict[tuple[str, str], Pipeline] = {}
        self._lock = threading.Lock()

    def create(self, database: str, definition: CreatePipeline) -> bool:
        key = (database.lower(), definition.name.lower())
        with self._lock:
            existing = self.pipelines.get(key)
            if existing is not None:
                if definition.if_not_exists:
                    return False
                if not definition.or_replace:
                    raise BindError(f"pipeline {definition.name!r} already exists in database {database!r}")
                existing.stop()
            target_db = definition.load.database or database
            self.runner.catalog.table(target_db, definition.load.table)     # the table must exist
            self.pipelines[key] = Pipeline(database, definition, self.runner, self.runner.catalog)
            return True

    def get(self, database: str, name: str) -> Pipeline:
        pipeline = self.pipelines.get((database.lower(), name.lower()))
        if pipeline is None:
            raise BindError(f"pipeline {name!r} does not exist in database {database!r}")
        return pipeline

    def drop(self, database: str, name: str, if_exists: bool) -> bool:
        with self._lock:
            pipeline = self.pipelines.get((database.lower(), name.lower()))
            if pipeline is None:
                if if_exists:
                    return False
                raise BindError(f"pipeline {name!r} does not exist in database {database!r}")
            del self.pipelines[(database.lower(), name.lower())]
        pipeline.stop()
        return True

    def of_database(self, database: Optional[str]) -> list[Pipeline]:
        return [p for (db, _), p in sorted(self.pipelines.items())
                if database is None or db == database.lower()]

    def stop_all(self) -> None:
        for pipeline in list(self.pipelines.values()):
            pipeline.stop()


def pipelines_of(runner) -> PipelineRegistry:
    registry = getattr(runner, "pipelines", None)
    if registry is None:
        registry = PipelineRegistry(runner)
        runner.pipelines = registry           # shared by every session of this cluster
    return registry
