"""The background merger: small segments are combined off the query path.

Every flush adds a segment of about ``flush_rows`` rows, and a DELETE leaves deleted rows inside
segments. A partition with many small segments costs every scan and every metadata answer a file, a
checksum and a zone-map check per segment, and a segment whose rows are mostly deleted is read for
nothing; so a partition is *due* when it holds ``merge_segments`` (default 4) segments under half of
``segment_rows`` live rows, or a segment with a quarter of its rows deleted
(``ColumnstorePartitionStore._merge_candidates``). Four: merging fewer at a time rewrites each row
more often (a row is rewritten about log4(segment_rows / flush_rows) = 3 times on its way from an
8-flush segment of 128K rows to a full 1M-row one, against 7 times merging pairs), while waiting for
more lets scans pay for more small files. A quarter deleted: below that a merge costs more than
skipping the deleted rows saves.

A statement that leaves a partition due hands it to this thread and returns. The thread reads the
candidates and writes the merged segments holding no lock, then installs them by the atomic manifest
swap under the commit lock's *shared* side (like an INSERT: no DELETE or TRUNCATE is between prepare
and apply then), abandoning the merge when a candidate changed meanwhile. Readers never wait: a scan
keeps the segments of the snapshot it started with. ``close`` stops the thread (a merge in progress
is abandoned at its next segment) and waits for it.

With ``flushes`` (a Ray leaf) the thread also flushes a submitted partition's write buffer first, under
the commit lock's exclusive side (a flush swaps the WAL: no statement may be between prepare and apply),
so a statement returns once its rows are durable and visible, never after a flush or a merge.
"""
from __future__ import annotations

import logging
import threading
from typing import Iterable

log = logging.getLogger(__name__)


class BackgroundMerger:
    def __init__(self, commit_lock, flushes: bool = False) -> None:
        self._commit_lock = commit_lock
        self.flushes = flushes
        self._cond = threading.Condition()
        self._due: dict[int, object] = {}          # id(store) -> store, in arrival order
        self._busy = False
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.merged = 0                             # segments merged so far
        self.errors: list[BaseException] = []       # merges that failed (each also logged)

    def submit(self, stores: Iterable) -> None:
        """Merge these partitions' candidates soon (each partition once however often submitted)."""
        with self._cond:
            if self._stopped:
                return
            for store in stores:
                self._due[id(store)] = store
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="canopy-merger", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is due or being merged; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._due and not self._busy, timeout)

    def close(self) -> None:
        with self._cond:
            self._stopped = True
            self._due.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _stopping(self) -> bool:
        return self._stopped

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._due or self._stopped)
                if self._stopped:
                    return
                store = self._due.pop(next(iter(self._due)))
                self._busy = True
            try:
                if self.flushes and store.needs_flush():
                    with self._commit_lock.exclusive():
                        store.flush()                   # a no-op once the store is closed
                while True:
                    count = store.merge(commit_lock=self._commit_lock.shared, stop=self._stopping)
                    if not count:
                        break
                    self.merged += count
            except Exception as error:          # noqa: BLE001 - logged and kept; the next statement retries
                if not getattr(store, "closed", False):
                    log.warning("background merge of %s failed: %s", getattr(store, "directory", store), error)
                    self.errors.append(error)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
