"""The buffer helpers every kernel family shares through kernels/buffers.pxd, seen through their users:
``_check_offsets`` (malformed string offsets are refused, naming the row, before any loop reads them),
``_data_ptr`` (an empty data buffer is read as zero bytes, never through a pointer into nothing) and
``_validity_ptr`` (a bitmap too short for the rows is refused)."""
import re

import numpy as np
import pytest

hashing = pytest.importorskip("kernels.hashing_loops")
from kernels import filter_compare, hashtable, inlist, join_bloom, join_probe, moments  # noqa: E402

_LOG2 = 4


def _bytes_table(keys: list[bytes]) -> hashtable.HashTable:
    table = hashtable.HashTable(0)
    offsets = np.cumsum([0] + [len(k) for k in keys]).astype(np.int64)
    table.factorize_bytes(offsets, np.frombuffer(b"".join(keys), np.uint8).copy(), None, 0,
                          np.empty(len(keys), np.int64))
    return table


def _string_set(keys: list[bytes]):
    """A one-key-per-slot string set for ``probe_string_set`` (built as kernels/inlist.pyx builds it)."""
    key_offsets = np.cumsum([0] + [len(k) for k in keys]).astype(np.int64)
    key_data = np.frombuffer(b"".join(keys) or b"\0", np.uint8)[:key_offsets[-1]].copy()
    hashes, bloom = np.zeros(len(keys), np.uint64), np.zeros(1 << _LOG2, np.uint64)
    table = np.full(16, -1, np.int64)
    inlist._build_string_set(key_offsets, key_data, hashes, bloom, _LOG2, table)
    return bloom, table, key_offsets, key_data, hashes


def _users():
    """Each kernel that reads string offsets, as ``call(offsets, data)``."""
    strings = _string_set([b"ab", b""])
    table = _bytes_table([b"ab", b""])
    bloom = np.zeros(1 << _LOG2, np.uint64)
    return {
        "hash_binary": lambda o, d: hashing.hash_binary(o, d, np.empty(len(o) - 1, np.uint64)),
        "match_strings": lambda o, d: filter_compare.match_strings(o, d, 0, np.frombuffer(b"ab", np.uint8).copy(),
                                                                   np.zeros(1, np.uint8)),
        "probe_string_set": lambda o, d: inlist.probe_string_set(o, d, strings[0], _LOG2, *strings[1:],
                                                                 np.zeros(1, np.uint8)),
        "bloom_insert_bytes": lambda o, d: join_bloom.bloom_insert_bytes(o, d, bloom.copy(), _LOG2),
        "bloom_probe_bytes": lambda o, d: join_bloom.bloom_probe_bytes(o, d, bloom, _LOG2, np.zeros(1, np.uint8)),
        "lookup_bytes": lambda o, d: join_probe.lookup_bytes(table, o, d, None, 0, np.empty(len(o) - 1, np.int64)),
        "factorize_bytes": lambda o, d: _bytes_table([]).factorize_bytes(o, d, None, 0,
                                                                         np.empty(len(o) - 1, np.int64)),
    }


@pytest.mark.parametrize("name", sorted(_users()))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_malformed_offsets_are_refused_naming_the_row(name, dtype):
    call = _users()[name]
    data = np.frombuffer(b"abcd", np.uint8).copy()
    for offsets, row in (([0, 3, 2], 1), ([0, 1, 9], 1), ([-1, 1, 2], 0)):
        message = f"row {row} has offsets [{offsets[row]}, {offsets[row + 1]}) outside the 4-byte data buffer"
        with pytest.raises(ValueError, match=re.escape(message)):
            call(np.array(offsets, dtype), data)


@pytest.mark.parametrize("name", sorted(_users()))
def test_empty_strings_over_an_empty_buffer_read_as_over_any_buffer(name):
    """Rows of zero bytes read the same from an empty data buffer (the shared 8-byte stand-in) as from
    a non-empty one."""
    call = _users()[name]
    offsets = np.zeros(3, np.int64)
    if name == "factorize_bytes":
        assert list(call(offsets, np.zeros(0, np.uint8))) == list(call(offsets, np.zeros(4, np.uint8))) == [0]
        return
    if name == "hash_binary":
        a, b = np.empty(2, np.uint64), np.empty(2, np.uint64)
        hashing.hash_binary(offsets, np.zeros(0, np.uint8), a)
        hashing.hash_binary(offsets, np.zeros(4, np.uint8), b)
        assert a[0] == a[1] == b[0] == b[1]
        return
    call(offsets, np.zeros(0, np.uint8))      # no error, no read past the stand-in
    call(offsets, np.zeros(4, np.uint8))


def test_moments_refuse_a_short_validity_bitmap():
    states = [np.zeros(1, np.int64), np.zeros(1), np.zeros(1)]
    with pytest.raises(ValueError, match="too short"):
        moments.moments_update(np.zeros(20, np.int64), np.ones(20), np.full(1, 0xFF, np.uint8), 0, *states)
    # an empty bitmap still means no nulls
    moments.moments_update(np.zeros(20, np.int64), np.ones(20), np.zeros(0, np.uint8), 0, *states)
    assert states[0][0] == 20 and states[1][0] == 1.0
