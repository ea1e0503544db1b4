"""Run the simple conjuncts of a WHERE with the filter and IN-list kernels.

``KernelFilter.of(predicate)`` splits a bound predicate into the conjuncts the kernels evaluate —
``column <op> literal`` (=, <>, <, <=, >, >=; a ``>=`` and ``<=`` pair on one column, which is how
the binder spells BETWEEN, runs as one BETWEEN), ``column IN (literals)`` and ``column [NOT] LIKE``
with a pattern without ``_`` or escapes (``'abc%'``, ``'%abc'``, ``'%abc%'``; one with inner ``%``
prefiltered by its longest literal piece), ORs of ANDs of those (``KernelDisjunction``) — and a
residual that ``evaluate_predicate`` handles as before. ``apply`` ANDs the kernels' selections, filters the batch,
then filters what is left by the residual: the rows kept are exactly those the whole predicate
keeps (a conjunct that is NULL or FALSE drops the row either way; the kernels implement SQL's
three-valued logic so NOT LIKE and NOT IN agree with the evaluator on NULLs).

Built IN-lists are cached by (values, type), so a list is built once, not once per batch; the
evaluator's ``in_list`` (IN inside OR, CASE, a projection) shares the cache through
``in_list_contains``.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.core.collation_keys import collation_keys, list_keys
from engine.core.expressions import Call, ColumnRef, Expr, Literal, and_all, conjuncts
from engine.storage.columnstore.encoding import decode_batch, decode_column
from engine.exec.gather import take

_CACHED_DICTIONARIES = 16      # dictionaries whose entries one OR keeps (KernelDisjunction)

_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_FLIPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
# SQL kinds whose Arrow storage the filter kernels compare (bool and NULL-typed columns fall back).
_COMPARABLE_KINDS = ("int", "float", "decimal", "date", "datetime", "string")


@dataclass(frozen=True)
class KernelPredicate:
    """One conjunct the kernels evaluate: ``kind`` is "compare" (``op`` a comparison or
    "between"), "match" (``op`` a string match kind) or "in" ; ``negated`` wraps it in SQL NOT.
    ``key`` (collation, pad): the conjunct compares the column's collation keys, computed per stored
    dictionary entry (or run, or row of a plain column) before the kernel runs."""

    column: str
    kind: str
    op: str
    args: tuple
    negated: bool
    source: Expr          # the conjunct(s) it stands for, evaluated instead if a kernel refuses
    key: Optional[tuple] = None

    def evaluate(self, column: pa.Array) -> pa.Array:
        """The three-valued result over ``column`` (may raise TypeError: the caller falls back)."""
        if self.key is not None:
            column = collation_keys(column, *self.key)
        if self.kind == "compare":
            result = kernels.compare(column, self.op, *self.args)
        elif self.kind == "match" and self.op == "like":
            result = _prefiltered_like(column, *self.args)
        elif self.kind == "match":
            result = kernels.match_string(column, self.op, self.args[0])
        else:
            result = in_list_contains(self.args, column)
        return kernels.not_kleene(result) if self.negated else result

    # the entries of the last few dictionaries seen (KernelDisjunction's, which says why)
    _by_dictionary: dict = dataclasses.field(default_factory=dict, init=False, compare=False, repr=False)

    def __getstate__(self):         # shipped (Ray) without what it cached
        return {name: value for name, value in self.__dict__.items() if name != "_by_dictionary"}

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_by_dictionary", {})

    def select(self, batch: pa.RecordBatch) -> pa.BooleanArray:
        """The rows of ``batch`` (columns by field id, possibly encoded) where it is TRUE: a mask
        without nulls (may raise TypeError: the caller evaluates ``source`` instead). On a dictionary
        column it is evaluated once per entry of a dictionary (kept for the next batches sharing it,
        and for the same column taken at some positions), then looked up per row: the collation keys
        and the kernel's set-up per batch cost more than the rows of a batch a selective runtime
        filter leaves (TPC-DS q91's OR over two columns of customer_demographics, 20 rows a batch)."""
        column = batch.column(self.column)
        if pa.types.is_dictionary(column.type):
            entries = _cached_entries(self._by_dictionary, column.dictionary,
                                      lambda values: kernels.selection(self.evaluate(values)))
            return _looked_up(column, entries)
        return kernels.selection(self.evaluate(column))


@dataclass(frozen=True)
class KernelDisjunction:
    """A conjunct that is an OR of ANDs of kernel conjuncts (TPC-H Q19's ``(l_quantity BETWEEN 1 AND
    11) OR (l_quantity BETWEEN 10 AND 20) OR ...``, ``p_brand = 'a' OR p_brand = 'b'``): each
    conjunct runs in its kernel on the encoded columns, and the masks are ANDed and ORed. A WHERE
    keeps the rows where the OR is TRUE, which is where some disjunct has every conjunct TRUE, so
    two-valued masks (TRUE or not) combine exactly; NOT of such an OR is not taken here."""

    disjuncts: tuple[tuple[KernelPredicate, ...], ...]
    source: Expr
    # the entries of the last few dictionaries seen: the batches of one stored segment share its
    # dictionary, and keying a dictionary's values (collations) costs far more than looking them up
    _by_dictionary: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def __getstate__(self):         # shipped (Ray) without what it cached
        return {"disjuncts": self.disjuncts, "source": self.source, "_by_dictionary": {}}

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def select(self, batch: pa.RecordBatch) -> pa.BooleanArray:
        """As :meth:`KernelPredicate.select`. An OR over one dictionary or run-end column runs over
        its distinct stored values (or runs), then one lookup per row: not one per conjunct."""
        names = {p.column for conjunction in self.disjuncts for p in conjunction}
        if len(names) == 1:
            [name] = names
            column = batch.column(name)
            if pa.types.is_dictionary(column.type):
                entries = _cached_entries(self._by_dictionary, column.dictionary, lambda values: self._select(
                    pa.RecordBatch.from_arrays([values], names=[name])))
                return _looked_up(column, entries)
            if pa.types.is_run_end_encoded(column.type):
                entries = self._select(pa.RecordBatch.from_arrays([column.values], names=[name]))
                return kernels.selection(kernels.compare(_recoded(column, entries), "eq", 1))
        return self._select(batch)

    def _select(self, batch: pa.RecordBatch) -> pa.BooleanArray:
        result = None
        for conjunction in self.disjuncts:
            mask = None
            for p in conjunction:
                found = p.select(batch)
                mask = found if mask is None else kernels.and_kleene(mask, found)
            result = mask if result is None else kernels.or_kleene(result, mask)
        return result


def _cached_entries(cache: dict, values: pa.Array, compute) -> pa.Array:
    """``compute(values)`` (a mask over a dictionary's entries, no nulls) as int8 0 or 1, cached in
    ``cache`` by the buffers of ``values``: the cache holds ``values``, so no other array can take
    their addresses while the key stands (buffers never change). At most _CACHED_DICTIONARIES."""
    key = (values.type, len(values), values.offset,
           tuple(b.address if b is not None else 0 for b in values.buffers()))
    found = cache.get(key)
    if found is not None:
        return found[1]
    entries = compute(values).cast(pa.int8())
    if len(cache) >= _CACHED_DICTIONARIES:
        cache.clear()
    cache[key] = (values, entries)
    return entries


def _looked_up(column: pa.DictionaryArray, entries: pa.Array) -> pa.BooleanArray:
    """TRUE at the rows of ``column`` whose entry of ``entries`` (int8 0 or 1, one per dictionary
    entry) is 1; a NULL row is not TRUE."""
    return kernels.selection(kernels.compare(
        pa.DictionaryArray.from_arrays(column.indices, entries, safe=False), "eq", 1))


def _recoded(column: pa.Array, entries: pa.BooleanArray) -> pa.Array:
    """``column`` (dictionary or run-end encoded) with each stored value replaced by its entry of
    ``entries`` (one per dictionary value or run, no nulls) as an int8 0 or 1."""
    flags = entries.cast(pa.int8())
    if pa.types.is_dictionary(column.type):
        return pa.DictionaryArray.from_arrays(column.indices, flags, safe=False)
    return pa.RunEndEncodedArray.from_arrays(column.run_ends, flags).slice(column.offset, len(column))


def _disjunction(expr: Expr) -> Optional[KernelDisjunction]:
    """The kernel form of an OR whose every disjunct is an AND of kernel conjuncts, else None."""
    if not (isinstance(expr, Call) and expr.op == "or"):
        return None
    disjuncts = []
    for disjunct in _disjuncts(expr):
        preds = [_kernel_predicate(c) for c in conjuncts(disjunct)]
        if not preds or any(p is None for p in preds):
            return None
        disjuncts.append(tuple(_fuse_between(preds)))
    return KernelDisjunction(tuple(disjuncts), expr)


def _disjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Call) and expr.op == "or":
        return [d for arg in expr.args for d in _disjuncts(arg)]
    return [expr]


def _like_match(pattern: str) -> Optional[tuple[str, tuple]]:
    """(kind, args) for a LIKE pattern the string kernels match, or None. ``%`` at either end makes
    a prefix, suffix or contains match (args: the needle); inner ``%`` (``'%special%requests%'``)
    makes a "like" match (args: the pattern and its literal pieces, longest first, which every
    matching row contains); ``_`` and escapes go to the evaluator."""
    if "_" in pattern or "\\" in pattern:
        return None
    starts, ends = pattern.startswith("%"), pattern.endswith("%") and len(pattern) > 1
    needle = pattern[1 if starts else 0:len(pattern) - 1 if ends else len(pattern)]
    if "%" in needle:
        return "like", (pattern, *sorted({piece for piece in pattern.split("%") if piece}, key=len, reverse=True))
    if starts and ends:
        return "contains", (needle,)
    return ("suffix" if starts else "prefix" if ends else "equal"), (needle,)


def _prefiltered_like(column: pa.Array, pattern: str, *pieces: str) -> pa.Array:
    """``column LIKE pattern`` (``%`` wildcards only), three-valued: the contains kernel finds the
    rows holding every literal piece of the pattern (no other row can match), and Arrow's LIKE runs
    on those rows only (in what order the pieces come). TPC-H Q13's '%special%requests%': Arrow's
    LIKE over every o_comment was most of the scan."""
    contains = None
    for piece in pieces:
        found = kernels.match_string(column, "contains", piece)
        contains = found if contains is None else kernels.and_kleene(contains, found)
    if contains is None:                    # '%%': every string matches
        contains = kernels.match_string(column, "contains", "")
    rows = np.flatnonzero(np.asarray(kernels.selection(contains)))
    values = np.zeros(len(column), dtype=bool)
    if len(rows):
        if pa.types.is_run_end_encoded(column.type):        # Arrow takes no rows of run-end arrays
            column = decode_column(column)
        candidates = decode_column(column.take(pa.array(rows)))
        values[rows] = np.asarray(pc.match_like(candidates, pattern).fill_null(False))
    nulls = np.asarray(contains.is_null()) if contains.null_count else None
    return pa.array(values, type=pa.bool_(), mask=nulls)


def _kernel_predicate(expr: Expr) -> Optional[KernelPredicate]:
    """The kernel conjunct of ``expr``; one on ``collation_key(column)`` runs on the column's keys."""
    if isinstance(expr, Call) and expr.args:
        keyed = [i for i, a in enumerate(expr.args) if _key_of(a, ColumnRef)]
        if len(keyed) == 1:
            key = expr.args[keyed[0]].options
            args = tuple(a.args[0] if i == keyed[0] else
                         Literal(collation_keys(pa.scalar(a.args[0].value, pa.string()), *key).as_py(), a.type)
                         if _key_of(a, Literal) else a for i, a in enumerate(expr.args))
            options = expr.options
            if expr.op == "in_list":
                options = (list_keys(tuple(options[0]), *key), options[1])
            p = _plain_predicate(Call(expr.op, args, expr.type, options))
            return None if p is None else dataclasses.replace(p, key=key, source=expr)
    return _plain_predicate(expr)


def _key_of(e: Expr, kind: type) -> bool:
    return isinstance(e, Call) and e.op == "collation_key" and isinstance(e.args[0], kind)


def _plain_predicate(expr: Expr) -> Optional[KernelPredicate]:
    if not isinstance(expr, Call):
        return None
    if expr.op in _COMPARISONS and len(expr.args) == 2:
        a, b = expr.args
        op = expr.op
        if isinstance(a, Literal) and isinstance(b, ColumnRef):
            a, b, op = b, a, _FLIPPED[op]
        if not (isinstance(a, ColumnRef) and isinstance(b, Literal)) or b.value is None:
            return None
        if a.type.kind not in _COMPARABLE_KINDS or a.type.kind != b.type.kind:
            return None
        if a.type.kind == "string" and op not in ("eq", "ne"):
            return None
        return KernelPredicate(a.id, "compare", op, (b.value,), False, expr)
    if expr.op == "in_list" and isinstance(_widened_integer(expr.args[0]), ColumnRef):
        column = _widened_integer(expr.args[0])
        values, negated = expr.options
        if not kernels.supports_in_list(column.type.to_arrow()):
            return None
        return KernelPredicate(column.id, "in", "in", tuple(values), negated, expr)
    if expr.op in ("like", "not_like") and not expr.options:
        column, pattern = expr.args
        if not (isinstance(column, ColumnRef) and column.type.kind == "string"
                and isinstance(pattern, Literal) and isinstance(pattern.value, str)):
            return None
        match = _like_match(pattern.value)
        if match is None:
            return None
        return KernelPredicate(column.id, "match", match[0], match[1], expr.op == "not_like", expr)
    return None


def _widened_integer(expr: Expr) -> Expr:
    """The column under a widening integer cast (the binder types ``int_col IN (1, 2)`` as
    ``CAST(int_col AS BIGINT) IN ...``): membership is the same on the narrower column, whose
    list drops the values it cannot hold. Anything else is returned as it is."""
    if (isinstance(expr, Call) and expr.op == "cast" and isinstance(expr.args[0], ColumnRef)
            and expr.type.kind == "int" and expr.args[0].type.kind == "int"
            and expr.type.bits >= expr.args[0].type.bits):
        return expr.args[0]
    return expr


def _fuse_between(preds: list[KernelPredicate]) -> list[KernelPredicate]:
    """Replace one ``>=`` and one ``<=`` on the same column by a BETWEEN (one pass, not two)."""
    out: list[KernelPredicate] = []
    for p in preds:
        if p.kind == "compare" and p.op in ("ge", "le"):
            other = "le" if p.op == "ge" else "ge"
            for i, q in enumerate(out):
                if q.kind == "compare" and q.op == other and q.column == p.column:
                    low, high = (q, p) if q.op == "ge" else (p, q)
                    source = Call("and", (low.source, high.source), low.source.type)
                    out[i] = KernelPredicate(p.column, "compare", "between",
                                             (low.args[0], high.args[0]), False, source)
                    break
            else:
                out.append(p)
        else:
            out.append(p)
    return out


@dataclass(frozen=True)
class KernelFilter:
    """A predicate split into kernel conjuncts and a residual for ``evaluate_predicate``."""

    kernel: tuple[KernelPredicate, ...]
    residual: Optional[Expr]
    # conjuncts that are ORs of kernel conjuncts, run after ``kernel`` (on the rows it leaves)
    disjunctions: tuple[KernelDisjunction, ...] = ()

    @classmethod
    def of(cls, predicate: Optional[Expr]) -> "KernelFilter":
        preds, ors, rest = [], [], []
        for conjunct in conjuncts(predicate):
            p = _kernel_predicate(conjunct)
            if p is not None:
                preds.append(p)
            elif (d := _disjunction(conjunct)) is not None:
                ors.append(d)
            else:
                rest.append(conjunct)
        return cls(tuple(_fuse_between(preds)), and_all(rest), tuple(ors))

    def apply(self, batch: pa.RecordBatch, params: Sequence = (), keep: frozenset = frozenset(),
              output: Optional[list[str]] = None) -> pa.RecordBatch:
        """The rows of ``batch`` for which the predicate is TRUE (a new batch; input unmodified).

        ``batch`` may hold run-end or dictionary encoded columns (a columnstore scan's): the kernels
        compare them encoded and only the rows kept are decoded, so the result is plain arrays —
        but for the dictionary columns named in ``keep``, which stay dictionary arrays (when no
        residual predicate has to evaluate the batch). ``output``: the columns of the result, by
        name (None: all); the others are only filtered on, and never taken nor decoded."""
        # Imported here: the evaluator imports this module for in_list_contains.
        from engine.exec.evaluate import evaluate_predicate

        late = output if self.residual is not None else None      # the residual reads the batch
        if (self.kernel or self.disjunctions) and batch.num_rows:
            batch = self._kernel_rows(batch, params, keep if self.residual is None else frozenset(),
                                      None if late is not None else output)
        elif output is not None and late is None:
            batch = batch.select(output)
        batch = decode_batch(batch, keep=keep if self.residual is None else frozenset())
        if self.residual is not None and batch.num_rows:
            batch = batch.filter(evaluate_predicate(self.residual, batch, params))
        if late is not None:
            batch = batch.select(late)
        return batch

    def narrowed(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` (encoded, as stored) sliced to the span of the rows its conjuncts on run-end
        columns keep (none: no row), compared per run; every conjunct is still to be applied. A
        scan with runtime join filters narrows first, so that a range on the sort key spares the
        hashing of the rows outside it."""
        lo, hi = 0, batch.num_rows
        for p in self.kernel:
            column = batch.column(p.column)
            if not pa.types.is_run_end_encoded(column.type) or hi == lo:
                continue
            if hi - lo != batch.num_rows:
                column = column.slice(lo, hi - lo)
            try:
                result = kernels.selection(p.evaluate(column))
            except TypeError:
                continue
            if kernels.count_true(result) == 0:
                return batch.slice(0, 0)
            first, stop = true_span(result)
            lo, hi = lo + first, lo + stop
        return batch if hi - lo == batch.num_rows else batch.slice(lo, hi - lo)

    def apply_at(self, batch: pa.RecordBatch, positions: np.ndarray, params: Sequence = (),
                 keep: frozenset = frozenset(), output: Optional[list[str]] = None,
                 done: frozenset = frozenset()) -> pa.RecordBatch:
        """:meth:`apply` to the rows ``positions`` (ascending) of ``batch`` only, the conjuncts whose
        ids are in ``done`` already applied: each other kernel conjunct runs on its own columns taken
        at the positions left, then the output columns are taken once (and decoded), then the residual
        filters them. A scan's runtime join filters leave the positions (engine.exec.runtime_filtering)."""
        from engine.exec.evaluate import evaluate_predicate

        for p in (*self.kernel, *self.disjunctions):
            if id(p) in done:
                continue
            names = sorted({p.column} if isinstance(p, KernelPredicate) else
                           {q.column for conjunction in p.disjuncts for q in conjunction})
            columns = pa.RecordBatch.from_arrays([take_column(batch.column(n), positions) for n in names], names=names)
            try:
                result = p.select(columns)
            except TypeError:
                # A constant or column layout the kernels do not take: the evaluator's answer.
                result = kernels.selection(evaluate_predicate(p.source, decode_batch(columns), params))
            kept = kernels.count_true(result)
            if kept < len(result):
                positions = positions[mask_indices(result, kept)]
            if not len(positions):
                break
        late = output if self.residual is not None else None      # the residual reads the batch
        if output is not None and late is None:
            batch = batch.select(output)
        batch = take_encoded(batch, positions, keep=keep if self.residual is None else frozenset())
        if self.residual is not None and batch.num_rows:
            batch = batch.filter(evaluate_predicate(self.residual, batch, params))
        if late is not None:
            batch = batch.select(late)
        return batch

    def _kernel_rows(self, batch: pa.RecordBatch, params: Sequence, keep: frozenset,
                     output: Optional[list[str]] = None) -> pa.RecordBatch:
        """The rows of ``batch`` the kernel conjuncts keep: decoded but for ``keep`` when some were
        dropped, else ``batch`` itself (still encoded); only the columns ``output`` (None: all).

        The conjuncts on run-end columns go first (compared per run: cheap), and the rows looked at
        narrow to the span from the first to the last row kept so far: a range on the sort key (a
        segment is sorted by it, so its rows are one span of the segment) leaves the other conjuncts
        that span to compare and, when it keeps every row of it, a slice of the batch instead of a
        take. A conjunct that keeps no row ends the batch."""
        from engine.exec.evaluate import evaluate_predicate

        lo, hi = 0, batch.num_rows
        mask = None             # over rows [lo, hi): None while every row of the span is kept
        kept = hi
        preds = sorted(self.kernel, key=lambda p: not pa.types.is_run_end_encoded(batch.column(p.column).type)) \
            if len(self.kernel) > 1 else self.kernel
        for p in (*preds, *self.disjunctions):
            try:
                result = p.select(batch if hi - lo == batch.num_rows else batch.slice(lo, hi - lo))
            except TypeError:
                # A constant or column layout the kernels do not take: the evaluator's answer.
                result = evaluate_predicate(p.source, decode_batch(batch.slice(lo, hi - lo)), params)
            mask = result if mask is None else kernels.and_kleene(mask, result)
            kept = kernels.count_true(mask)
            if kept == 0:
                return decode_batch((batch if output is None else batch.select(output)).slice(0, 0), keep=keep)
            if kept == hi - lo:
                mask = None
                continue
            first, stop = true_span(mask)
            if stop - first < hi - lo:
                mask = mask.slice(first, stop - first)
                lo, hi = lo + first, lo + stop
                if kept == hi - lo:
                    mask = None
        if output is not None:
            batch = batch.select(output)
        if hi - lo == batch.num_rows and mask is None:
            return batch
        batch = batch.slice(lo, hi - lo) if hi - lo != batch.num_rows else batch
        return decode_batch(batch, keep=keep) if mask is None else _filter_encoded(batch, mask, keep, kept)


def is_cheap(p, batch: pa.RecordBatch) -> bool:
    """Whether ``p`` (a KernelPredicate, or a KernelDisjunction of them) costs less per row of
    ``batch`` (encoded, as stored) than a Bloom filter probe of a plain column (engine.exec.runtime_filtering)."""
    if isinstance(p, KernelDisjunction):
        # An OR over one encoded column is one lookup per row (KernelDisjunction.select). Over several
        # columns it is a pass per conjunct plus the ANDs and ORs of their masks: dearer than one
        # probe (TPC-DS q91's marital-and-education OR over 1.9M customer_demographics rows took
        # longer before its Bloom filter than the probe, which keeps 0.25% of them).
        names = {q.column for conjunction in p.disjuncts for q in conjunction}
        return len(names) == 1 and all(is_cheap(q, batch) for conjunction in p.disjuncts for q in conjunction)
    column_type = batch.column(p.column).type
    if pa.types.is_dictionary(column_type) or pa.types.is_run_end_encoded(column_type):
        return True
    return p.kind == "compare" and p.key is None and not (pa.types.is_string(column_type)
                                                          or pa.types.is_large_string(column_type))


def true_span(mask: pa.BooleanArray) -> tuple[int, int]:
    """(first, last + 1): the positions of the first and the last TRUE of a mask without nulls that
    holds at least one, found over the non-zero bytes of its bitmap (no per-row pass)."""
    start, stop = mask.offset, mask.offset + len(mask)
    data = np.frombuffer(mask.buffers()[1], dtype=np.uint8, count=(stop + 7) // 8 - start // 8,
                         offset=start // 8)
    last = len(data) - 1

    def bits(i: int) -> int:        # byte i of the span, without the bits outside the array
        value = int(data[i])
        if i == 0:
            value &= (0xFF << (start % 8)) & 0xFF
        if i == last and stop % 8:
            value &= (1 << (stop % 8)) - 1
        return value

    # only the first and the last byte have bits outside the array: two candidates at each end
    nonzero = np.flatnonzero(data)
    low_byte = next(i for i in nonzero[:2].tolist() if bits(i))
    low = bits(low_byte)
    high_byte = next(i for i in nonzero[-2:][::-1].tolist() if bits(i))
    base = (start // 8) * 8 - start
    return (base + low_byte * 8 + (low & -low).bit_length() - 1,
            base + high_byte * 8 + bits(high_byte).bit_length())


def _filter_encoded(batch: pa.RecordBatch, mask: pa.BooleanArray, keep: frozenset = frozenset(),
                    kept: Optional[int] = None) -> pa.RecordBatch:
    """The rows of ``batch`` where ``mask`` (no nulls) is TRUE, decoded (but dictionary columns named
    in ``keep``): see :func:`take_encoded`. ``kept``: the number of TRUE rows, when known."""
    return take_encoded(batch, mask_indices(mask, kept), keep=keep)


def mask_indices(mask: pa.BooleanArray, kept: Optional[int] = None) -> np.ndarray:
    """The positions (int64) of the TRUE rows of a boolean mask (``kept``: their number, when known;
    unused). Its bitmap unpacked by NumPy, then ``flatnonzero``: 65k rows, 2% / 50% / 90% TRUE, 16 /
    36 / 37 us, where Arrow's indices_nonzero took 47 / 196 / 120 us and ``to_numpy`` (a bool per
    row, converted one by one) then ``flatnonzero`` 75 / 94 / 95 us."""
    if mask.null_count:                 # NULL is not TRUE (an evaluator's three-valued answer)
        mask = kernels.selection(mask)
    if not len(mask):
        return np.zeros(0, dtype=np.int64)
    bits = np.frombuffer(mask.buffers()[1], dtype=np.uint8)
    unpacked = np.unpackbits(bits, count=mask.offset + len(mask), bitorder="little").view(bool)
    return np.flatnonzero(unpacked[mask.offset:] if mask.offset else unpacked)


def take_encoded(batch: pa.RecordBatch, indices: np.ndarray, decode: bool = True,
                 keep: frozenset = frozenset()) -> pa.RecordBatch:
    """The rows ``indices`` (ascending positions) of a batch whose columns may be run-end or dictionary
    encoded (a columnstore scan's). One ``take`` per column touches only the rows kept, where a
    boolean filter reads the whole mask again per column (a selective scan keeps a few percent of a
    batch): a dictionary column takes its codes, a run-end column (Arrow has no filter or take for
    those) finds each row's run by binary search instead of being decoded whole first. ``decode``:
    the result plain, but the columns named in ``keep``: dictionary arrays (a run-end one's over its
    runs' distinct values); False: dictionary columns stay encoded (a later filter compares codes),
    run-end ones come back plain."""
    positions = pa.array(indices, type=pa.int64())
    columns = []
    for name, column in zip(batch.schema.names, batch.columns):
        if decode and name in keep and pa.types.is_run_end_encoded(column.type):
            column = take_run_end(column, indices, coded=True)      # kept for a group-by: codes
        else:
            column = take_column(column, indices, positions)
        if decode and not (name in keep and pa.types.is_dictionary(column.type)):
            column = decode_column(column)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def take_column(column: pa.Array, indices: np.ndarray, positions: Optional[pa.Array] = None) -> pa.Array:
    """``column`` at ``indices`` (ascending), a dictionary column still encoded, a run-end one plain.
    ``positions``: the same indices as an Arrow array, when the caller has it."""
    if pa.types.is_run_end_encoded(column.type):
        return take_run_end(column, indices)
    return take(column, indices, positions=positions)


def take_run_end(column: pa.RunEndEncodedArray, indices: np.ndarray, coded: bool = False) -> pa.Array:
    """The values of a run-end array at ``indices`` (ascending), plain: each row's run found by binary
    search over the run ends (which count from the unsliced array's start, hence the offset).
    ``coded``: a dictionary array over the runs' distinct values instead (a group-by key)."""
    ends = column.run_ends.to_numpy(zero_copy_only=False)
    runs = np.searchsorted(ends, indices + column.offset, side="right")
    values = pc.dictionary_encode(column.values) if coded else column.values
    return values.take(pa.array(runs, type=pa.int64()))


@functools.lru_cache(maxsize=256)
def _built_in_list(values: tuple, value_type: pa.DataType) -> "kernels.InList":
    return kernels.InList(values, value_type)


def in_list_contains(values: tuple, column) -> pa.Array:
    """``column IN values`` (three-valued) with the list built once per (values, type) and cached.

    Parameters
    ----------
    values : tuple
        The IN-list's constants, coerced to the column's type by the binder (None is NULL).
    column : pyarrow.Array or pyarrow.ChunkedArray
        Of a type ``kernels.supports_in_list`` accepts. Not modified.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    value_type = column.type
    if pa.types.is_dictionary(value_type) or pa.types.is_run_end_encoded(value_type):
        value_type = value_type.value_type
    return _built_in_list(tuple(values), value_type).contains(column)
