"""Hash join: build a table over one side's keys, probe it with the other's, get row-index pairs.

``JoinTable(build_columns)`` numbers the build side's distinct keys 0, 1, 2, ... in order of first
occurrence (the hash group-by table of kernels/groupby.pyx does the numbering: a join's hash table is
a group-by over the build keys) and lays the build rows out by key number, CSR-style. ``lookup``
gives each probe row the number of the build key equal to its key (a read-only probe of the same
table, kernels/src/canopy_join.h), and from those numbers:

- inner join: ``pairs(ids)`` yields (probe row, build row) int64 index arrays, in chunks of at most
  ``max_pairs`` (a key with a huge fan-out never materializes all its pairs at once); probe rows
  ascending, each probe row's build rows ascending;
- left outer join: ``pairs(ids, outer=True)``, a probe row without a match paired with build row -1;
- semi / anti join: ``semi(ids)`` / ``anti(ids)`` select probe rows; ``anti(ids, null_aware=True)``
  is NOT IN: nothing survives a build side with a NULL key, a probe row with a NULL key survives only
  an empty build side;
- the build side's view (when the smaller input is the SQL's left side): ``build_hits(ids)``.

Keys are one or several columns compared by value: integer-like columns (any width or sign, bool,
date, time, timestamp, duration; both sides integers or both the same temporal type) as int64,
decimal128 as its 128-bit scaled integer (both sides the same scale), string / binary (and large)
by their bytes; dictionary columns by their decoded values. A row with a NULL in any key column
never matches. Several columns form one composite key of int64 words, byte-string columns entering
as their number in a table of the build side's distinct strings.

``JoinBloom`` is the runtime join filter: a Bloom filter over the build side's distinct keys (one
column) in the IN-list's layout (kernels/src/canopy_filter.h), probed by a scan of the other side to
drop rows that cannot match before they are decoded.

``kernels/reference/join.py`` defines the same results with NumPy and pyarrow; the tests hold both
to the same key numbers, pairs and selections.

This module is the family's public face (what kernels/__init__.py and the tests import); each job is
a module of its own: kernels/join_keys.pyx (key types and their words), kernels/join_table.pyx
(``JoinTable``, the build), kernels/join_probe.pyx (the lookups), kernels/join_pairs.pyx (build rows
by key, pairs gathered), kernels/join_bloom.pyx (``JoinBloom``).
"""
from kernels.join_bloom import (JoinBloom, bloom_insert_bytes, bloom_insert_ints, bloom_probe_bytes,
                                bloom_probe_ints)
from kernels.join_keys import supports_join_key
from kernels.join_pairs import count_pairs, emit_pairs, group_rows
from kernels.join_probe import lookup_bytes, lookup_dense, lookup_ints_filtered, lookup_words
from kernels.join_table import (DEFAULT_MAX_PAIRS, DENSE_MIN_SLOTS, DENSE_SLOTS_PER_KEY,
                                FILTERED_LOOKUP_MAX_KEYS, JoinTable)

__all__ = [
    "JoinTable",
    "JoinBloom",
    "supports_join_key",
    "lookup_words",
    "lookup_bytes",
    "lookup_dense",
    "lookup_ints_filtered",
    "group_rows",
    "emit_pairs",
    "count_pairs",
    "bloom_insert_ints",
    "bloom_insert_bytes",
    "bloom_probe_ints",
    "bloom_probe_bytes",
]
