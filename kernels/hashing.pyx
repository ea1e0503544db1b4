"""Row hashing and hash partitioning of Arrow columns.

Shard placement on INSERT/LOAD and the repartition exchange both route a row to partition
``partition_ids(hash_columns(keys), n)``, so the functions here define where data lives: two sides of
a colocated join agree only because they hash alike. The hash itself is defined once, in
``kernels/src/canopy_hash.h``; ``kernels/reference/hashing.py`` recomputes it with NumPy and the
tests hold the two to bit-identical results.

Value hashes (each column alone):

- integer-like (int8..int64, uint8..uint64, date32/64, time32/64, timestamp, duration, bool):
  ``canopy_hash_word`` of the value widened to int64, so equal values of different widths (int32 5
  and int64 5) hash alike. uint64 values above 2**63 - 1 hash as the int64 with the same bits;
  bool hashes as 0 / 1; temporal types hash their stored count in their own unit (callers cast both
  sides of a join to one unit first).
- float32 / float64: ``canopy_hash_word`` of the float64 bits after widening, with -0.0 turned to
  0.0 and every NaN turned to the quiet NaN 0x7FF8000000000000. Floats do not hash like integers.
- decimal (any width) and fixed_size_binary: XXH64 of the stored bytes, little-endian two's
  complement for decimals (callers cast both sides to one precision and scale first).
- string, large_string, binary, large_binary: XXH64 of the bytes; a string and a binary with the
  same bytes hash alike.
- dictionary arrays: the hash of the decoded value (the dictionary is hashed once, then gathered).
- null (and the null type): ``CANOPY_NULL_HASH``.

Rows of several columns fold left to right: ``h = combine(h, hash(column k))``; a one-column key
hashes as the column alone.

The low-level kernels take NumPy/memoryview buffers and write into caller-allocated outputs; they
release the GIL, so engine threads can hash batches in parallel.

This module is the family's public face (what kernels/__init__.py and the tests import: every name of
``__all__``); each job is a module of its own, sharing kernels/hashing.pxd (the hash's declarations):

- kernels/hashing_loops.pyx: the value-hash loops over buffers (``hash_integers`` ... ``combine_hashes``);
- kernels/hashing_columns.pyx: Arrow columns to row hashes (``hash_columns``);
- kernels/hashing_partition.pyx: hashes to partitions (``partition_ids``, ``scatter_indices``,
  ``split_batch``).
"""
from kernels.hashing_columns import NULL_HASH, hash_columns
from kernels.hashing_loops import (combine_hashes, hash_binary, hash_booleans, hash_dictionary_codes,
                                   hash_fixed_size_binary, hash_floats, hash_integers, set_null_hashes)
from kernels.hashing_partition import (MAX_PARTITIONS, counting_sort_partitions, fastrange_partitions,
                                       partition_ids, scatter_indices, split_batch)

__all__ = [
    "hash_columns",
    "partition_ids",
    "scatter_indices",
    "split_batch",
    "NULL_HASH",
    "MAX_PARTITIONS",
    "hash_integers",
    "hash_floats",
    "hash_booleans",
    "hash_fixed_size_binary",
    "hash_binary",
    "hash_dictionary_codes",
    "set_null_hashes",
    "combine_hashes",
    "fastrange_partitions",
    "counting_sort_partitions",
]
