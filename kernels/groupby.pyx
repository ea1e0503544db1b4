"""Hash group-by: factorize keys into dense group ids, then aggregate by id.

Factorizing (``Factorizer``, ``factorize``) numbers the distinct keys of one or several columns
0, 1, 2, ... in order of first occurrence, across as many batches as the caller feeds one factorizer
(its hash table lives between calls, so an aggregate streams its input). Keys compare by value:

- integer-like columns (int8..int64, uint8..uint64, bool, date32/64, time, timestamp, duration) by
  their value widened to int64; decimal128 by its 128-bit scaled integer; string/binary (and large)
  by their bytes; dictionary arrays by their decoded value (the codes are numbered first, so each
  distinct code of a batch is hashed once: grouping a dictionary column costs a pass over the codes);
- null is one more key, in every column (SQL GROUP BY).

Aggregating by id (``GroupedAggregate`` over the low-level ``group_*`` kernels) accumulates per group
into arrays that grow with the number of groups: COUNT(*), COUNT(col) (nulls skipped), SUM of
integers and decimals into 128-bit integers (exact: no int64 wrap, no overflow below DECIMAL(38)),
SUM of floats into float64, MIN and MAX of integers, floats, dates and decimals. Partial states
merge with the same aggregates (SUM of sums and of counts, MIN of mins), so the final phase of a
distributed aggregate is one more factorize-and-aggregate over the partials.

The table is plain C (kernels/src/canopy_groupby.h). ``kernels/reference/groupby.py`` defines the
results with pyarrow; the tests hold both to the same ids, keys and aggregates.

This module is the family's public face (what kernels/__init__.py and the tests import); each job is
a module of its own:

- kernels/hashtable.pyx: the C hash table (``HashTable``, ``DistinctSet``), shared with the join;
- kernels/groupby_keys.pyx: key types, a column's rows as words, dictionary-code loops;
- kernels/groupby_factorize.pyx: ``Factorizer``, ``factorize``, ``DistinctCount``, ``estimate_distinct``;
- kernels/groupby_packing.py: a composite key's columns packed into few 64-bit words (``KeyPacking``);
- kernels/groupby_accumulate.pyx: the per-group ``group_*`` loops;
- kernels/groupby_aggregate.pyx: ``GroupedAggregate`` (state over batches, final result).
"""
from kernels.groupby_accumulate import (group_count, group_count_valid, group_max, group_max_decimal128,
                                        group_min, group_min_decimal128, group_sum_decimal128,
                                        group_sum_float, group_sum_int, group_sum_int64, total_sum_int)
from kernels.groupby_aggregate import GroupedAggregate, supports_aggregate
from kernels.groupby_factorize import (DistinctCount, Factorizer, estimate_distinct, factorize,
                                       sketch_words)
from kernels.groupby_keys import count_codes, dense_codes, mix_codes, supports_group_key
from kernels.hashtable import DistinctSet, HashTable

__all__ = [
    "Factorizer",
    "factorize",
    "DistinctCount",
    "DistinctSet",
    "estimate_distinct",
    "sketch_words",
    "GroupedAggregate",
    "supports_group_key",
    "supports_aggregate",
    "HashTable",
    "dense_codes",
    "count_codes",
    "group_count",
    "group_count_valid",
    "group_sum_int",
    "group_sum_int64",
    "total_sum_int",
    "group_sum_decimal128",
    "group_sum_float",
    "group_min",
    "group_max",
    "group_min_decimal128",
    "group_max_decimal128",
]
