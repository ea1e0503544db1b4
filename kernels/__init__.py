"""Canopy's kernels: the per-row work of the engine, compiled from kernels/*.pyx.

The engine imports kernels from here, never from a family module, so that ``CANOPY_KERNELS`` can
swap in the pure NumPy/pyarrow references of ``kernels/reference`` (read once, at import):

- unset or ``compiled``: the Cython extensions (build them with ``pip install -e .
  --no-build-isolation`` or ``python setup.py build_ext --inplace``);
- ``reference``: the references, which give the same results, slower.

``IMPLEMENTATION`` says which one was loaded.
"""
import os as _os

_choice = _os.environ.get("CANOPY_KERNELS", "") or "compiled"

if _choice == "reference":
    from kernels.reference.filter import (and_kleene, compare, count_matches, count_true,
                                          match_string, not_kleene, or_kleene, selection,
                                          supports_compare)
    from kernels.reference.hashing import hash_columns, partition_ids, scatter_indices, split_batch
    from kernels.reference.inlist import InList, supports_in_list
    from kernels.reference.hll import hll_add, hll_estimate, hll_merge
    from kernels.reference.moments import comoments_merge, comoments_update, moments_merge, moments_update
    from kernels.reference.groupby import (DistinctCount, Factorizer, GroupedAggregate, count_codes,
                                           estimate_distinct, factorize, supports_aggregate,
                                           supports_group_key)
    from kernels.reference.bitpack import bit_width_of, pack, unpack
    from kernels.reference.join import JoinBloom, JoinTable, supports_join_key
    from kernels.reference.strings import char_length, substring, substring_length
    from kernels.reference.decimals import DIVIDE as DECIMAL_DIVIDE, INT_DIVIDE as DECIMAL_INT_DIVIDE
    from kernels.reference.decimals import MOD as DECIMAL_MOD, decimal_add, decimal_divide, decimal_multiply
    from kernels.reference.decimals import (CEILING_DIVIDE as DECIMAL_CEILING_DIVIDE,
                                            FLOOR_DIVIDE as DECIMAL_FLOOR_DIVIDE)
    from kernels.reference.collation import collation_key, expanding_key
    from kernels.reference.window import (range_frame, segment_bounds, window_arg_extreme, window_count,
                                          window_sum_float, window_sum_words)
elif _choice == "compiled":
    try:
        from kernels.filter import (and_kleene, compare, count_matches, count_true, match_string,
                                    not_kleene, or_kleene, selection, supports_compare)
        from kernels.hashing import hash_columns, partition_ids, scatter_indices, split_batch
        from kernels.inlist import InList, supports_in_list
        from kernels.hll import hll_add, hll_estimate, hll_merge
        from kernels.moments import comoments_merge, comoments_update, moments_merge, moments_update
        from kernels.groupby import (DistinctCount, Factorizer, GroupedAggregate, count_codes,
                                     estimate_distinct, factorize, supports_aggregate, supports_group_key)
        from kernels.bitpack import bit_width_of, pack, unpack
        from kernels.join import JoinBloom, JoinTable, supports_join_key
        from kernels.strings import char_length, substring, substring_length
        from kernels.decimals import DIVIDE as DECIMAL_DIVIDE, INT_DIVIDE as DECIMAL_INT_DIVIDE
        from kernels.decimals import MOD as DECIMAL_MOD, decimal_divide, decimal_multiply
        try:
            from kernels.decimals import decimal_add
        except ImportError:     # a decimals module built before decimal_add: Arrow's path until rebuilt
            decimal_add = None
        from kernels.decimals import (CEILING_DIVIDE as DECIMAL_CEILING_DIVIDE,
                                      FLOOR_DIVIDE as DECIMAL_FLOOR_DIVIDE)
        from kernels.collation import collation_key
        from kernels import collation as _collation
        if getattr(_collation, "SUPPLEMENTARY", False):
            from kernels.collation import expanding_key
        else:   # a collation module built before tables of every code point: NumPy's until rebuilt
            from kernels.reference.collation import expanding_key
        from kernels.window import (range_frame, segment_bounds, window_arg_extreme, window_count,
                                    window_sum_float, window_sum_words)
    except ImportError as exc:
        raise ImportError(
            "the compiled kernels are not built: run `pip install -e . --no-build-isolation` or "
            "`python setup.py build_ext --inplace`, or set CANOPY_KERNELS=reference"
        ) from exc
else:
    raise ImportError(f"CANOPY_KERNELS must be 'compiled' or 'reference', not {_choice!r}")

IMPLEMENTATION = _choice

__all__ = ["IMPLEMENTATION", "hash_columns", "partition_ids", "scatter_indices", "split_batch",
           "hll_add", "hll_merge", "hll_estimate",
           "moments_update", "moments_merge", "comoments_update", "comoments_merge",
           # filter
           "compare", "match_string", "count_matches", "and_kleene", "or_kleene", "not_kleene",
           "selection", "count_true", "supports_compare",
           # IN-list
           "InList", "supports_in_list",
           # hash group-by
           "Factorizer", "factorize", "GroupedAggregate", "supports_group_key", "supports_aggregate",
           "DistinctCount", "estimate_distinct", "count_codes",
           # frame-of-reference bit-packing
           "pack", "unpack", "bit_width_of",
           # hash join and its runtime Bloom filter
           "JoinTable", "JoinBloom", "supports_join_key",
           # strings (MySQL character positions)
           "char_length", "substring", "substring_length",
           # collation keys (case- and accent-insensitive comparison as binary strings)
           "collation_key", "expanding_key",
           # window functions over sorted partitions
           "segment_bounds", "range_frame", "window_count", "window_sum_float", "window_sum_words",
           "window_arg_extreme",
           # exact DECIMAL /, DIV, % and * (MySQL rounding, overflow reported)
           "decimal_add", "decimal_divide", "decimal_multiply", "DECIMAL_DIVIDE", "DECIMAL_INT_DIVIDE", "DECIMAL_MOD",
           "DECIMAL_FLOOR_DIVIDE", "DECIMAL_CEILING_DIVIDE"]
