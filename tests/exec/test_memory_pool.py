"""engine.exec.memory: the pool's accounting, the fair share of spilling operators, the size parser
(its doctests), and spill files (Arrow IPC + LZ4) read back as written and removed with the pool."""
from __future__ import annotations

import doctest
import os

import numpy as np
import pyarrow as pa
import pytest

from engine.errors import BindError, MemoryLimitError
from engine.exec import memory
from engine.exec.memory import MemoryPool, parse_memory_limit


def test_doctests():
    assert doctest.testmod(memory).failed == 0


def test_reservations_count_against_the_limit_and_give_back_on_exit():
    pool = MemoryPool(1000)
    with pool.reservation("Sort") as a:
        a.grow(600)
        assert not a.try_grow(500) and pool.reserved == 600
        with pytest.raises(MemoryLimitError, match=r"^Sort needs more memory than memory_limit = 1000 bytes") as info:
            a.grow(500)
        assert info.value.operator == "Sort" and info.value.limit == 1000
        a.shrink(100)
        assert pool.reserved == 500 and pool.peak == 600
    assert pool.reserved == 0
    unlimited = MemoryPool(None)
    with unlimited.reservation("HashJoin") as b:
        b.grow(1 << 40)
    assert unlimited.reserved == 0 and unlimited.peak == 1 << 40


def test_spilling_reservations_get_a_fair_share():
    pool = MemoryPool(1000)
    output = pool.reservation("the output of stage 1")
    output.grow(200)                                  # unspillable: the shares are of the other 800
    first, second = pool.reservation("Sort", spillable=True), pool.reservation("HashJoin", spillable=True)
    assert first.try_grow(400) and not first.try_grow(1)
    assert second.try_grow(400) and not second.try_grow(1)
    second.close()                                    # one spilling reservation left: it may take the rest
    assert first.try_grow(400) and pool.reserved == 1000
    first.close()
    output.close()
    assert pool.reserved == 0


@pytest.mark.parametrize("value", ["lots", "12 parsecs", 0, "-1GB", "0.5KB", True, None])
def test_sizes_that_are_not_a_memory_limit(value):
    with pytest.raises(BindError, match="memory_limit"):
        parse_memory_limit(value)


def test_a_spill_file_reads_back_what_was_written_and_goes_with_its_pool(tmp_path, monkeypatch):
    monkeypatch.setenv("CANOPY_SPILL_DIR", str(tmp_path))
    pool = MemoryPool(1 << 20)
    rng = np.random.default_rng(3)
    table = pa.table({"k": rng.integers(0, 10, 5000), "s": pa.array([f"v{i % 37}" if i % 11 else None
                                                                     for i in range(5000)])})
    spilled = pool.spill_file(table.schema)
    for batch in table.to_batches(max_chunksize=700):
        spilled.write(batch)
    spilled.finish()
    assert os.path.dirname(spilled.path).startswith(str(tmp_path))
    assert os.path.getsize(spilled.path) < table.nbytes          # LZ4 compressed
    assert spilled.read_all().equals(table)
    assert pool.spilled_bytes == os.path.getsize(spilled.path)
    pool.close()
    assert list(tmp_path.iterdir()) == []


def test_spilling_past_the_disk_space_stops_the_query_clearly(tmp_path, monkeypatch):
    # an exploding join under a small memory_limit would otherwise fill the disk
    monkeypatch.setenv("CANOPY_SPILL_DIR", str(tmp_path))
    pool = MemoryPool(1 << 20)
    batch = pa.record_batch({"k": pa.array(np.arange(10_000))})
    spilled = pool.spill_file(batch.schema, "HashJoin")
    assert pool.disk_limit is not None and pool.disk_limit > 0      # 90% of the free space there
    spilled.write(batch)
    pool.disk_limit = 2 * batch.nbytes
    spilled.write(batch)
    with pytest.raises(MemoryLimitError, match=r"^HashJoin needs more than memory_limit = 1\.0 MiB and more disk"):
        spilled.write(batch)
    pool.close()
    assert list(tmp_path.iterdir()) == []
