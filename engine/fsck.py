"""``python -m engine.fsck DATA_DIR``: check a data directory offline, changing nothing.

Reports every problem it finds — a file failing its checksum or not parsing (``cluster.json``,
``catalog.json``, ``statistics.json``, ``commit.log``, each partition's manifest, deltas, WAL, segments
and delete files), a file a manifest names that is missing, a committed statement's WAL record that
is missing or cut short, commit records missing from the end of the log — one line each, naming the
file and the byte offset where known. A torn tail (the last record of a log cut short by a crash) is
not a problem: opening the directory drops it. Exit status 0: clean; 1: problems found; 2: not a
data directory. Run it on a directory no process has open (it does not take the lock, so it can
inspect one whose owner hangs, but then it may see a write half done).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.errors import StorageCorruptionError
from engine.storage.columnstore.commit import CommitLogContents
from engine.storage.columnstore.files import read_checked_json
from engine.storage.columnstore.verify import check_partitions


def check(data_dir: Path) -> list[StorageCorruptionError]:
    """Every problem of ``data_dir`` (deep: segment and delete-file checksums included)."""
    from engine.catalog_store import PersistentCatalog, check_statistics_file

    data_dir = Path(data_dir)
    problems: list[StorageCorruptionError] = []
    try:
        shape, _ = read_checked_json(data_dir / "cluster.json", "cluster file")
        leaves, per_leaf = int(shape["leaves"]), int(shape["partitions_per_leaf"])
    except FileNotFoundError:
        raise NotADirectoryError(f"{data_dir} is not a Canopy data directory (no cluster.json)") from None
    except StorageCorruptionError as error:
        return [error]              # without the shape no partition can be found
    except (KeyError, TypeError, ValueError) as error:
        return [StorageCorruptionError(f"cluster file {data_dir / 'cluster.json'} is corrupt ({error!r})",
                                       data_dir / "cluster.json")]
    tables = []
    try:
        if (data_dir / "catalog.json").exists():
            tables = PersistentCatalog(data_dir / "catalog.json").all_tables()
    except StorageCorruptionError as error:
        problems.append(error)
    try:
        check_statistics_file(data_dir / "statistics.json")
    except StorageCorruptionError as error:
        problems.append(error)
    log = CommitLogContents.read(data_dir / "commit.log")
    try:
        log.check()
    except StorageCorruptionError as error:
        problems.append(error)
    problems.extend(check_partitions(data_dir, [(t.table_id, t.reference, t.arrow_schema) for t in tables],
                                     leaves, per_leaf, log, deep=True))
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.fsck", description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path)
    args = parser.parse_args(argv)
    try:
        problems = check(args.data_dir)
    except NotADirectoryError as error:
        print(error, file=sys.stderr)
        return 2
    for problem in problems:
        where = f" [byte {problem.offset}]" if problem.offset is not None else ""
        print(f"{problem.path or args.data_dir}{where}: {problem}")
    print(f"{args.data_dir}: {len(problems)} problem{'s' if len(problems) != 1 else ''}"
          f"{'' if problems else ' (clean)'}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
