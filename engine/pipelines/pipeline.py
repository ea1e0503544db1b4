"""S3 pipelines: a background thread per started pipeline that lists a bucket prefix and loads new files.

One round (tick) of a running pipeline::

    list incrementally: StartAfter = the last key seen, so a tick reads only the keys after it
    -> new keys recorded 'Unloaded'
    -> a batch of Unloaded files downloaded in parallel and parsed (the LOAD DATA reader)
    -> one LoadWriter for the batch: rows of every good file routed, then commit(on_commit=mark)

Exactly once: the batch's marks (one row per file, Loaded or Failed) go into the internal table
``information_schema._PIPELINE_MARKS`` through the same LoadWriter as its rows
(:mod:`engine.pipelines.durable`), so on the embedded runner rows and marks are one transaction —
durable with ``connect(data_dir=...)``, where a crash leaves a file loaded and marked or neither; the
in-memory view (``files``) flips inside the same commit. A restart (STOP and START, or reopening the
data_dir, which restores the pipelines and starts those that were running) resumes from the marks:
Loaded files are never read again, Unloaded ones are.

A round that loaded files is followed by the next one at once (more may have arrived meanwhile); an
idle pipeline lists every BATCH_INTERVAL.

The full re-listing, which catches keys that arrived behind the last one seen (S3 lists in key order,
uploads finish in any order), runs on its own thread every ``full_listing_interval_s``, page by page
(1000 keys a request) up to the last key seen when it began. It gives way to the loading thread: a
page is requested only while that thread is idle between rounds, and after each page it rests three
times as long as the request took. Each page's unknown keys are recorded as it arrives and wake the
loading thread, and no tick ever waits for it. So the time from ``put_object`` to queryable is one
incremental listing plus one batch, whatever the number of keys under the prefix (on our side: the
endpoint's own time for a listing request may grow with the keys, as moto's server does).

A file that fails to parse or decompress, or was deleted, is recorded 'Failed' with its error and the
pipeline moves on. A download refused for a reason outside the file (credentials, permissions,
throttling, the network) leaves it Unloaded with the error shown against it, and it is retried. A
listing failure (bad credentials, missing bucket, endpoint down) is the pipeline's error, shown by SHOW
PIPELINES, and the next round retries. ALTER PIPELINE ... SET CREDENTIALS swaps the keys of a running
pipeline (its threads make new clients). Credentials are never shown back and are kept apart from the
definition at rest (:mod:`engine.pipelines.durable`).

With in-memory storage the marks table is in memory too, exactly as long as the rows.

ALTER PIPELINE changes a pipeline between runs (:meth:`Pipeline.alter`): SET OFFSETS EARLIEST forgets
every mark (everything loads again), SET OFFSETS LATEST marks every file listed now 'Skipped', DROP FILE
forgets one file's mark (it loads again), SET BATCH_INTERVAL / MAX_PARTITIONS_PER_BATCH tune the loop,
SET CREDENTIALS replaces the keys.

The S3 client, listing and error words are :mod:`engine.pipelines.s3`; the cluster's set of pipelines
and the statements' changes to it are :mod:`engine.pipelines.registry`.
"""
from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

import pyarrow as pa

from engine.errors import BindError, CanopyError, ExecutionError
from engine.load.delimited import LoadWarnings
from engine.load.loader import read_blocks
from engine.pipelines import durable
from engine.load.keys import begin_load
from engine.pipelines.s3 import (_FILE_ERRORS, DOWNLOAD_THREADS, _error_code, check_credentials_destination,
                                 describe_error, list_pages, make_client)
from engine.pipelines.statements import AlterPipeline, CreatePipeline, with_credentials

DEFAULT_FULL_LISTING_INTERVAL_S = 30.0
MAX_FILES_PER_BATCH = 128
MAX_BYTES_PER_BATCH = 256 << 20
# A batch's small files are appended as blocks of at least this many rows: one block per file would leave
# a table of thousands of tiny batches that every later scan iterates (COUNT(*) over 10,000 one-row files
# took 70 ms instead of 1 ms).
COALESCE_ROWS = 64 * 1024
# The full re-listing rests this many times as long as each page request took: at most a quarter of the
# endpoint's time, the rest left to the incremental listings and the downloads.
FULL_LISTING_REST = 3.0
_COMPRESSION = {".gz": "gzip", ".gzip": "gzip", ".lz4": "lz4", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2"}


@dataclass
class FileRecord:
    key: str
    size: int
    state: str = "Unloaded"          # Unloaded -> Loaded | Failed; Skipped (SET OFFSETS LATEST)
    rows: int = 0
    skipped_rows: int = 0
    error: Optional[str] = None
    loaded_at: Optional[float] = None  # time.time() of the commit


class Pipeline:
    def __init__(self, database: str, definition: CreatePipeline, runner, catalog,
                 pipeline_id: Optional[str] = None):
        self.id = pipeline_id or uuid.uuid4().hex       # marks belong to this id (a REPLACE gets a new one)
        self.database = database
        self.definition = definition
        self.name = definition.name
        self.runner = runner
        self.catalog = catalog
        self.state = "Stopped"
        self.error: Optional[str] = None         # the last listing / pipeline-level error
        self.errors = 0                          # rounds that failed, since creation
        self.files: dict[str, FileRecord] = {}
        self._pending: set[str] = set()          # keys of the Unloaded files (guarded by _lock)
        self.last_key: Optional[str] = None
        self.batches = 0
        self._lock = threading.Lock()            # guards files / state against the reporting side
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._idle = threading.Event()           # set while the loading thread waits between rounds
        self._thread: Optional[threading.Thread] = None
        self._lister: Optional[threading.Thread] = None
        self.full_listings = 0                   # full re-listings completed, since creation
        config = definition.config
        self.full_listing_interval = float(config.get("full_listing_interval_s", DEFAULT_FULL_LISTING_INTERVAL_S))
        self.interval = definition.batch_interval_ms / 1000.0
        self.max_files_per_batch = MAX_FILES_PER_BATCH
        self.wanted_running = False              # START'ed and not STOP'ped: resumed when reopened
        self._seq = 0                            # the last SEQ of this pipeline's mark rows
        self._definition_version = 0             # bumped by SET CREDENTIALS: the threads make new clients

    # -- control ----------------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                raise ExecutionError(f"pipeline {self.name!r} is already running")
            self._stop.clear()
            self.state = "Running"
            self._thread = threading.Thread(target=self._run, name=f"canopy-pipeline-{self.name}", daemon=True)
            self._lister = threading.Thread(target=self._run_full_listings, daemon=True,
                                            name=f"canopy-pipeline-{self.name}-listing")
            self._thread.start()
            self._lister.start()

    def stop(self, timeout: Optional[float] = 60.0) -> None:
        """Ask the thread to stop after its current batch (which commits whole or not at all), and wait."""
        self._stop.set()
        self._wake.set()
        for thread in (self._thread, self._lister):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout)
        with self._lock:
            self.state = "Stopped"
            self._thread = self._lister = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the loop -----------------------------------------------------------------------------------
    def _run(self) -> None:
        client, version = None, -1
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                self._idle.clear()
                found = False
                try:
                    if client is None or version != self._definition_version:
                        version = self._definition_version
                        client = make_client(self.definition)
                    found = self._list(client) > 0
                    self.error = None
                    while not self._stop.is_set() and self._load_batch(client):
                        found = True
                except Exception as error:   # noqa: BLE001 - any failure of a round is the pipeline's error
                    found = False                # retried after the interval, not at once
                    self.errors += 1
                    self.error = describe_error(error, self.definition)
                    if getattr(self.runner, "_closed", False):
                        break
                if found:
                    # A round that loaded files lists again at once: more may have arrived while it
                    # loaded (SingleStore starts the next batch right away after a full one).
                    continue
                self._idle.set()
                self._wake.wait(max(0.0, self.interval - (time.monotonic() - started)))
                self._wake.clear()
        finally:
            self._idle.set()

    def _list(self, client) -> int:
        """The incremental listing of a tick: the keys after the last one seen (all keys the first
        time); the number of new keys."""
        return sum(self._record(page) for page in
                   list_pages(client, self.definition.bucket, self.definition.prefix, self.last_key))

    def _record(self, found: list[tuple[str, int]]) -> int:
        """Record the unknown keys of ``found`` as Unloaded; the number recorded."""
        new = 0
        with self._lock:
            for key, size in found:
                if key not in self.files:
                    self.files[key] = FileRecord(key, size)
                    self._pending.add(key)
                    new += 1
                if self.last_key is None or key > self.last_key:
                    self.last_key = key
        return new

    def _run_full_listings(self) -> None:
        """The full re-listing thread: every full_listing_interval_s, list the prefix a page at a time
        up to the last key seen when it began (the keys after it are the incremental listing's),
        recording each page's unknown keys (late arrivals behind the last key) as it comes.

        It gives way to the loading thread: a page is requested only while that thread waits between
        rounds (or after waiting a whole interval for it, so a pipeline that never idles still re-lists),
        and after each page it rests FULL_LISTING_REST times as long as the request took. An endpoint
        that serves one request at a time (moto's server) then answers a tick's listing without a
        full-listing page ahead of it most of the time."""
        client, version = None, -1
        # A restart lists everything once at once (keys may have arrived behind the last one while
        # stopped); a first start's tick lists everything anyway.
        wait = 0.0 if self.last_key is not None else self.full_listing_interval
        while not self._stop.wait(wait):
            wait = self.full_listing_interval
            try:
                if client is None or version != self._definition_version:
                    version = self._definition_version
                    client = make_client(self.definition)
                with self._lock:
                    horizon = self.last_key
                if horizon is None:          # nothing listed yet: the next tick lists everything
                    continue
                pages = list_pages(client, self.definition.bucket, self.definition.prefix, None)
                while True:
                    self._idle.wait(self.full_listing_interval)
                    if self._stop.is_set():
                        return
                    started = time.monotonic()
                    page = next(pages, None)
                    took = time.monotonic() - started
                    if page is None:
                        break
                    if self._record(page):
                        self._wake.set()
                    if page and page[-1][0] >= horizon:
                        break
                    if self._stop.wait(FULL_LISTING_REST * took):
                        return
                self.full_listings += 1
            except Exception as error:   # noqa: BLE001 - the loading thread's next listing reports it too
                self.error = describe_error(error, self.definition)

    def _load_batch(self, client) -> bool:
        """Load the next batch of Unloaded files in one commit; False when there was nothing to load."""
        with self._lock:
            pending = sorted(self._pending)
        batch, size = [], 0
        for key in pending:
            if batch and (len(batch) >= self.max_files_per_batch or size >= MAX_BYTES_PER_BATCH):
                break
            batch.append(key)
            size += self.files[key].size
        if not batch:
            return False
        table = self.catalog.table(self.database if self.definition.load.database is None
                                   else self.definition.load.database, self.definition.load.table)
        with ThreadPoolExecutor(min(DOWNLOAD_THREADS, len(batch)), thread_name_prefix="canopy-s3") as pool:
            parsed = list(pool.map(lambda key: self._read(client, key, table), batch))
        retry = [(key, error) for key, (_, _, error, retriable) in zip(batch, parsed) if retriable]
        if retry:
            # Not the file's fault (credentials, permissions, the endpoint): it stays Unloaded with
            # the error shown against it and is tried again; the pipeline reports the error too.
            with self._lock:
                for key, error in retry:
                    self.files[key].error = error
            self.error = retry[0][1]
            if len(retry) == len(batch):
                return False                    # nothing to commit: the next round tries again
            keep = [i for i, (_, _, _, retriable) in enumerate(parsed) if not retriable]
            batch, parsed = [batch[i] for i in keep], [parsed[i] for i in keep]
        writer = begin_load(self.runner, table)
        loaded: list[tuple[str, int, int]] = []
        failed: list[tuple[str, str]] = []
        try:
            good: list[pa.RecordBatch] = []
            for key, (blocks, warnings, error, _) in zip(batch, parsed):
                if error is not None:
                    failed.append((key, error))
                    continue
                loaded.append((key, sum(b.num_rows for b in blocks), warnings.skipped))
                good.extend(b for block in blocks for b in block.to_batches() if b.num_rows)
            del parsed
            for block in coalesced(good, COALESCE_ROWS):
                writer.add(block)
            del good
            now = time.time()
            seq = self._next_seqs(len(batch))
            marks = [(self.id, seq + i, key, self.files[key].size, "Loaded", rows, skipped, now, None)
                     for i, (key, rows, skipped) in enumerate(loaded)]
            marks += [(self.id, seq + len(loaded) + i, key, self.files[key].size, "Failed", 0, 0, None, error)
                      for i, (key, error) in enumerate(failed)]
            writer.add_related(*durable.mark_rows(self.runner, marks))

            def mark() -> None:          # runs inside the commit: must not fail
                with self._lock:
                    for key, rows, skipped in loaded:
                        record = self.files[key]
                        record.state, record.rows, record.skipped_rows = "Loaded", rows, skipped
                        record.error, record.loaded_at = None, now
                        self._pending.discard(key)
                    for key, error in failed:
                        record = self.files[key]
                        record.state, record.error = "Failed", error
                        self._pending.discard(key)
                    self.batches += 1

            writer.commit(on_commit=mark)
        except BaseException:
            writer.abort()
            raise
        return True

    def _next_seqs(self, n: int) -> int:
        """The first of ``n`` new SEQ numbers for mark rows."""
        with self._lock:
            first = self._seq + 1
            self._seq += n
            return first

    def _read(self, client, key: str, table):
        """(blocks, warnings, None, False) for one object; ([], None, error message, retriable) when it
        fails. Retriable: the download failed for a reason outside the file (credentials, permissions,
        throttling, the network); a missing object or bad content fails the file for good."""
        statement = dataclasses.replace(self.definition.load, path=f"s3://{self.definition.bucket}/{key}")
        warnings = LoadWarnings()
        try:
            data = client.get_object(Bucket=self.definition.bucket, Key=key)["Body"].read()
        except Exception as error:   # noqa: BLE001 - every download failure is reported against the file
            return [], None, describe_error(error, self.definition), _error_code(error) not in _FILE_ERRORS
        try:
            codec = next((c for ext, c in _COMPRESSION.items() if key.lower().endswith(ext)), None)
            if codec is not None:
                data = pa.input_stream(pa.BufferReader(data), compression=codec).read()
            return list(read_blocks(statement, table, warnings, data=data)), warnings, None, False
        except CanopyError as error:
            return [], None, str(error), False
        except Exception as error:   # noqa: BLE001 - a decode failure belongs to this file
            return [], None, describe_error(error, self.definition), False

    # -- restore and ALTER ---------------------------------------------------------------------------
    def restore(self, marks: pa.Table, last_seq: int) -> None:
        """The files' states from their current mark rows (durable.current_marks) after a reopen."""
        columns = {name: marks[name].to_pylist() for name in
                   ("FILE_NAME", "FILE_SIZE", "FILE_STATE", "ROWS_LOADED", "ROWS_SKIPPED", "LOADED_AT", "ERROR")}
        with self._lock:
            self._seq = max(self._seq, last_seq)
            for key, size, state, rows, skipped, loaded_at, error in zip(*columns.values()):
                self.files[key] = FileRecord(key, size or 0, state, rows or 0, skipped or 0, error, loaded_at)
                if self.last_key is None or key > self.last_key:
                    self.last_key = key
            self.batches = 0

    def alter(self, statement: AlterPipeline) -> None:
        """Apply ALTER PIPELINE's changes; OFFSETS and DROP FILE only while stopped (no batch is in
        flight to race with), their marks written before the in-memory state changes."""
        if (statement.offsets is not None or statement.drop_file is not None) and self.running:
            raise ExecutionError(f"ALTER PIPELINE {self.name} SET OFFSETS / DROP FILE: stop the pipeline "
                                 f"first (STOP PIPELINE {self.name})")
        if statement.drop_file is not None:
            key = statement.drop_file
            with self._lock:
                record = self.files.get(key)
            if record is None:
                raise BindError(f"pipeline {self.name!r} has no file {key!r}")
            self._insert_marks([(self.id, self._next_seqs(1), key, record.size, "Dropped", 0, 0, None, None)])
            with self._lock:           # forgotten: the next start's full listing finds it as new
                del self.files[key]
                self._pending.discard(key)
        if statement.offsets == "EARLIEST":
            self._insert_marks([(self.id, self._next_seqs(1), None, None, "Reset", 0, 0, None, None)])
            with self._lock:
                self.files.clear()
                self._pending.clear()
                self.last_key = None
        elif statement.offsets == "LATEST":
            found = [item for page in list_pages(make_client(self.definition), self.definition.bucket,
                                                 self.definition.prefix, None) for item in page]
            self._record(found)
            with self._lock:
                skipped = [f for f in self.files.values() if f.state in ("Unloaded", "Failed")]
            first = self._next_seqs(len(skipped))
            self._insert_marks([(self.id, first + i, f.key, f.size, "Skipped", 0, 0, None, None)
                                for i, f in enumerate(skipped)])
            with self._lock:
                for f in skipped:
                    f.state, f.error = "Skipped", None
                    self._pending.discard(f.key)
        if statement.credentials is not None:
            check_credentials_destination(with_credentials(self.definition, statement.credentials))
            self.definition = with_credentials(self.definition, statement.credentials)
            self._definition_version += 1       # the threads make new clients before their next request
            self._wake.set()
        if statement.batch_interval_ms is not None:
            self.interval = statement.batch_interval_ms / 1000.0
            self._wake.set()
        if statement.max_partitions_per_batch is not None:
            self.max_files_per_batch = statement.max_partitions_per_batch

    def _insert_marks(self, rows: list[tuple]) -> None:
        if rows:
            self.runner.insert(*durable.mark_rows(self.runner, rows))

    # -- reporting ----------------------------------------------------------------------------------
    def snapshot(self) -> tuple[list[FileRecord], dict]:
        with self._lock:
            files = [dataclasses.replace(f) for f in self.files.values()]
        summary = {"state": "Running" if self.running else self.state, "error": self.error,
                   "files_loaded": sum(f.state == "Loaded" for f in files),
                   "files_failed": sum(f.state == "Failed" for f in files),
                   "files_unloaded": sum(f.state == "Unloaded" for f in files),
                   "files_skipped": sum(f.state == "Skipped" for f in files),
                   "rows_loaded": sum(f.rows for f in files), "batches": self.batches}
        return files, summary


def coalesced(batches: list[pa.RecordBatch], min_rows: int):
    """``batches`` with each run of small ones concatenated into one batch of about ``min_rows`` rows
    (large ones pass through as they are)."""
    run: list[pa.RecordBatch] = []
    run_rows = 0
    for batch in batches:
        if batch.num_rows >= min_rows:
            yield batch
            continue
        run.append(batch)
        run_rows += batch.num_rows
        if run_rows >= min_rows:
            yield run[0] if len(run) == 1 else pa.concat_batches(run)
            run, run_rows = [], 0
    if run:
        yield run[0] if len(run) == 1 else pa.concat_batches(run)
