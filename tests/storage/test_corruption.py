"""Damage at random offsets of every kind of file in a data directory: each case is recovered exactly
or refused with StorageCorruptionError — never a silent difference, never a raw exception.

One small data directory is built per module (segments, delete files, WAL records, a commit log with
deletes and updates in it, statistics). Each case copies it, flips one bit or truncates one file at
a seeded random offset, then opens it and reads every row (and a filtered count that segment
elimination answers from the zone maps). Accepted outcomes:

* the rows of the last committed state;
* the rows before the last statement, when the damage lies in the commit log's last record (the
  torn tail a crash between a statement's WAL and its commit record leaves: it never committed);
* StorageCorruptionError from ``connect`` with every file byte for byte as it was, or from the
  query (segment and delete-file checksums are checked as they are read) — and ``python -m
  engine.fsck`` reports a problem.

The default run takes a few cases of each file kind; ``-m slow`` runs hundreds.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

import engine
from engine import fsck
from engine.errors import StorageCorruptionError
from engine.storage.columnstore.wal import HEADER

SHAPE = dict(leaves=2, partitions_per_leaf=1)
OPTIONS = dict(flush_rows=200, segment_rows=400, chunk_rows=100)
KINDS = {
    "wal": "leaf-*/table-*/part-*/wal-*.log",
    "commit log": "commit.log",
    "manifest": "leaf-*/table-*/part-*/manifest.json",
    "segment": "leaf-*/table-*/part-*/seg-*.arrow",
    "delete file": "leaf-*/table-*/part-*/dels-*.bin",
    "catalog": "catalog.json",
    "statistics": "statistics.json",
    "cluster": "cluster.json",
}
ROWS = "SELECT id, k, v FROM t ORDER BY id, k, v"
FILTERED = "SELECT COUNT(*) FROM t WHERE k = 7"


def _read(con) -> tuple:
    return con.execute(ROWS).fetchall(), con.execute(FILTERED).fetchall()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """(data directory, rows after the last statement, rows before it)."""
    path = tmp_path_factory.mktemp("pristine")
    con = engine.connect(data_dir=str(path), **SHAPE, **OPTIONS)
    con.execute("CREATE TABLE t (id BIGINT NOT NULL, k INT, v VARCHAR(10), SHARD KEY (id), SORT KEY (k))")
    values = ", ".join(f"({i}, {i % 13}, 'v{i % 5}')" for i in range(600))
    con.execute(f"INSERT INTO t VALUES {values}")                      # straight to segments
    for start in range(600, 660, 20):                                  # WAL records
        con.execute("INSERT INTO t VALUES " + ", ".join(f"({i}, {i % 13}, 'w{i % 3}')" for i in range(start, start + 20)))
    con.execute("DELETE FROM t WHERE id % 7 = 0")                      # delete files, a WAL rewrite
    con.execute("UPDATE t SET v = 'u' WHERE id % 11 = 0")
    con.execute("ANALYZE TABLE t")
    con.execute("INSERT INTO t VALUES (700, 7, 'x'), (701, 7, 'y'), (702, 7, 'z'), (703, 7, 'q')")
    before = _read(con)
    con.execute("INSERT INTO t VALUES (800, 7, 'a'), (801, 7, 'b'), (802, 7, 'c'), (803, 7, 'd')")
    after = _read(con)
    con.session.statistics.wait()
    con.close()
    for kind, pattern in KINDS.items():
        assert list(path.glob(pattern)), f"the pristine directory has no {kind}"
    return path, after, before


def _last_record_start(data: bytes) -> int:
    offset = last = 0
    while offset + HEADER.size <= len(data):
        last = offset
        offset += HEADER.size + HEADER.unpack_from(data, offset)[2]
    return last


def _snapshot(path: Path) -> dict:
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file() and p.name != "LOCK"}


def _damage_and_check(pristine, tmp_path, kind: str, how: str, seed: int) -> str:
    source, after, before = pristine
    path = tmp_path / "data"
    shutil.copytree(source, path)
    rng = random.Random(f"{kind}/{how}/{seed}")
    victim = rng.choice(sorted(path.glob(KINDS[kind])))
    data = bytearray(victim.read_bytes())
    offset = rng.randrange(len(data))
    if how == "flip":
        data[offset] ^= 1 << rng.randrange(8)
    else:
        del data[offset:]
    victim.write_bytes(bytes(data))
    case = f"{how} of {victim.relative_to(path)} at byte {offset}"
    torn_last = kind == "commit log" and offset >= _last_record_start(bytes(source.joinpath("commit.log").read_bytes()))
    files = _snapshot(path)
    try:
        con = engine.connect(data_dir=str(path), **SHAPE)
    except StorageCorruptionError as error:
        assert _snapshot(path) == files, f"{case}: refused ({error}) but files changed"
        assert fsck.check(path), f"{case}: refused at open, but fsck finds nothing"
        return "refused"
    try:
        seen = _read(con)
    except StorageCorruptionError:
        return "refused on read"
    finally:
        con.close()
    if seen == after:
        return "recovered"
    assert torn_last and seen == before, f"{case}: a silent difference"
    return "torn tail dropped"


CASES = [(kind, how) for kind in KINDS for how in ("flip", "truncate")]


@pytest.mark.parametrize("kind,how", CASES)
@pytest.mark.parametrize("seed", range(2))
def test_damage_is_recovered_or_refused(pristine, tmp_path, kind, how, seed):
    _damage_and_check(pristine, tmp_path, kind, how, seed)


@pytest.mark.slow
@pytest.mark.parametrize("kind,how", CASES)
def test_damage_is_recovered_or_refused_many(pristine, tmp_path, kind, how):
    outcomes: dict[str, int] = {}
    for seed in range(2, 32):
        case_dir = tmp_path / str(seed)
        case_dir.mkdir()
        outcome = _damage_and_check(pristine, case_dir, kind, how, seed)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        shutil.rmtree(case_dir)
    print(kind, how, outcomes)


def test_fsck_reports_without_changing(pristine, tmp_path, capsys):
    source, _, _ = pristine
    path = tmp_path / "data"
    shutil.copytree(source, path)
    assert fsck.main([str(path)]) == 0
    wal = sorted(path.glob(KINDS["wal"]))[0]
    data = bytearray(wal.read_bytes())
    data[HEADER.size + 3] ^= 0x10                   # inside the first record's payload
    wal.write_bytes(bytes(data))
    manifest = sorted(path.glob(KINDS["manifest"]))[-1]          # the other partition's
    manifest.write_bytes(manifest.read_bytes().replace(b'"max": ', b'"max":  ', 1))
    files = _snapshot(path)
    assert fsck.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{wal.name} is corrupt at byte 0" in out and f"manifest {manifest}" in out
    assert _snapshot(path) == files
    with pytest.raises(StorageCorruptionError, match="more problems?: python -m engine.fsck"):
        engine.connect(data_dir=str(path), **SHAPE)
    assert _snapshot(path) == files


def test_a_committed_record_missing_from_a_wal_is_reported(pristine, tmp_path):
    """The issue's case: a commit record whose WAL record is gone (the WAL cut at a record boundary,
    which looks like a clean end) is refused, naming the WAL."""
    source, _, _ = pristine
    path = tmp_path / "data"
    shutil.copytree(source, path)
    wal = max(path.glob(KINDS["wal"]), key=lambda p: p.stat().st_size)
    data = wal.read_bytes()
    wal.write_bytes(data[:_last_record_start(data)])
    with pytest.raises(StorageCorruptionError, match=f"{wal.name} .*lacks the records of committed statements"):
        engine.connect(data_dir=str(path), **SHAPE)
