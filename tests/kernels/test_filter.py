"""Filter kernels against the pyarrow.compute reference, and the engine's use of them.

Random columns are generated from a NumPy seed that hypothesis draws (so thousands of rows cost no
more than ten), with nulls, slices at odd offsets, dictionary and run-end encodings, lengths 0, 1
and around the kernels' 2048-row blocks, and constants taken from the column or from the extremes.
"""
import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
import kernels
from engine.exec.kernel_filters import KernelFilter, KernelPredicate, _like_match
from kernels.reference import filter as reference

try:
    from kernels import filter as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None

needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels are not built")
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.date32(),
         pa.timestamp("us"), pa.decimal128(18, 2), pa.decimal128(38, 4), pa.string(), pa.large_string()]
# Dates and timestamps that Python's datetime can hold (years 1 to 9999), so the reference can read them.
TEMPORAL_RANGES = {"date32[day]": (-719162, 2932896),
                   "timestamp[us]": (-62135596800 * 10**6, 253402300799 * 10**6)}
LENGTHS = st.sampled_from([0, 1, 2, 7, 8, 9, 63, 2047, 2048, 2049, 4100]) | st.integers(0, 300)


def column(t, n, seed, null_fraction, small_domain):
    """``n`` values of type ``t`` (storage from a NumPy generator), about ``null_fraction`` null."""
    rng = np.random.default_rng(seed)
    valid = rng.random(n) >= null_fraction
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        alphabet = np.array(list("abc") if small_domain else list("abcdefghij"))
        words = ["".join(rng.choice(alphabet, rng.integers(0, 6))) for _ in range(n)]
        return pa.array([w if ok else None for w, ok in zip(words, valid)], type=t)
    if pa.types.is_floating(t):
        values = rng.integers(-5, 5, n).astype(np.float64) if small_domain else rng.standard_normal(n) * 1e6
        values[rng.random(n) < 0.02] = np.nan
        return pa.array(values, type=t, mask=~valid)
    bits = 32 if pa.types.is_date32(t) else 64 if not pa.types.is_integer(t) else t.bit_width
    lo, hi = TEMPORAL_RANGES.get(str(t), (np.iinfo(np.dtype(f"int{bits}")).min, np.iinfo(np.dtype(f"int{bits}")).max))
    if small_domain:
        ints = rng.integers(-5, 5, n)
    else:
        ints = rng.integers(lo, hi, n, endpoint=True, dtype=np.dtype(f"int{bits}"))
        ints[rng.random(n) < 0.05] = lo
        ints[rng.random(n) < 0.05] = hi
    if pa.types.is_decimal(t):
        ints = ints.astype(np.int64)
        words = np.empty(2 * n, dtype=np.uint64)
        words[0::2] = ints.view(np.uint64)
        words[1::2] = np.where(ints < 0, np.uint64(2**64 - 1), np.uint64(0))
        validity = pa.array(valid).buffers()[1] if not valid.all() else None
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(words)])
    storage = pa.array(ints.astype(np.dtype(f"int{bits}")), mask=~valid)
    return storage if pa.types.is_integer(t) else storage.view(t)


def encode(arr, encoding, pad):
    if encoding == "dictionary" and len(arr):
        arr = arr.dictionary_encode()
    elif encoding == "ree" and len(arr):
        arr = pc.run_end_encode(arr)
    return arr.slice(pad, max(len(arr) - 2 * pad, 0)) if len(arr) > 2 * pad else arr


@st.composite
def columns(draw, types=TYPES):
    t = draw(st.sampled_from(types))
    n = draw(LENGTHS)
    arr = column(t, n, draw(st.integers(0, 2**32)), draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])),
                 draw(st.booleans()))
    return encode(arr, draw(st.sampled_from(["plain", "plain", "dictionary", "ree"])),
                  draw(st.integers(0, 9)))


def plain_type(t):
    return t.value_type if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t) else t


def constant(draw, arr):
    """A constant of the column's kind: one of its values, or an extreme, or (decimals) another scale."""
    t = plain_type(arr.type)
    present = [v for v in reference._decode(arr).to_pylist() if v is not None] if len(arr) else []
    if present and draw(st.booleans()):
        return draw(st.sampled_from(present))
    if pa.types.is_integer(t):
        return draw(st.sampled_from([0, 1, -1, 2**(t.bit_width - 1) - 1, -2**(t.bit_width - 1),
                                     2**(t.bit_width - 1), -2**63, 2**63 - 1]))
    if pa.types.is_floating(t):
        return draw(st.sampled_from([0.0, -0.0, 1.5, float("inf"), float("-inf"), float("nan")]))
    if pa.types.is_date32(t):
        return draw(st.sampled_from([datetime.date(1970, 1, 1), datetime.date(1, 1, 1), datetime.date(9999, 12, 31)]))
    if pa.types.is_timestamp(t):
        return draw(st.sampled_from([datetime.datetime(1970, 1, 1), datetime.datetime(2024, 2, 29, 1, 2, 3)]))
    if pa.types.is_decimal(t):
        digits = draw(st.integers(-10**30, 10**30) | st.integers(-100, 100))
        return decimal.Decimal(digits).scaleb(-draw(st.integers(0, 8)))
    return draw(st.sampled_from(["", "a", "ab", "abc", "zz"]))


@st.composite
def comparisons(draw):
    arr = draw(columns())
    t = plain_type(arr.type)
    ops = ["eq", "ne"] if pa.types.is_string(t) or pa.types.is_large_string(t) else list(reference.OPERATORS)
    op = draw(st.sampled_from(ops))
    a = constant(draw, arr)
    b = constant(draw, arr) if op == "between" else None
    if op == "between" and draw(st.booleans()):
        try:
            a, b = min(a, b), max(a, b)
        except TypeError:
            pass
    return arr, op, a, b


# ---------------------------------------------------------------------------------------------------
# Kernel vs reference


@needs_compiled
@PROPERTY
@given(comparisons())
def test_compare_matches_reference(case):
    arr, op, a, b = case
    expected = reference.compare(arr, op, a, b)
    result = compiled.compare(arr, op, a, b)
    assert result.offset == 0 and len(result) == len(arr)
    assert result.equals(expected), (arr.type, op, a, b)
    assert compiled.count_matches(arr, op, a, b) == reference.count_true(expected)


@needs_compiled
@PROPERTY
@given(columns(types=[pa.string(), pa.large_string()]), st.sampled_from(reference.STRING_MATCHES),
       st.sampled_from(["", "a", "b", "ab", "bca", "abcab", "ü"]))
def test_match_string_matches_reference(arr, kind, needle):
    assert compiled.match_string(arr, kind, needle).equals(reference.match_string(arr, kind, needle))


def tristate(seed, n, offset):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 3, n + offset)
    return pa.array([None if v == 2 else bool(v) for v in values], type=pa.bool_()).slice(offset)


@needs_compiled
@PROPERTY
@given(st.integers(0, 2**32), LENGTHS, st.integers(0, 9), st.integers(0, 9))
def test_kleene_logic_matches_pyarrow(seed, n, off_a, off_b):
    a, b = tristate(seed, n, off_a), tristate(seed + 1, n, off_b)
    assert compiled.and_kleene(a, b).equals(pc.and_kleene(a, b))
    assert compiled.or_kleene(a, b).equals(pc.or_kleene(a, b))
    assert compiled.not_kleene(a).equals(pc.invert(a))
    mask = compiled.selection(a)
    assert mask.null_count == 0 and mask.equals(pc.fill_null(a, False))
    assert compiled.count_true(a) == reference.count_true(a)


# ---------------------------------------------------------------------------------------------------
# Semantics on either implementation (the one `kernels` exports)


def test_null_constant_makes_every_row_null():
    arr = pa.array([1, None, 3], pa.int32())
    assert kernels.compare(arr, "eq", None).to_pylist() == [None, None, None]
    assert kernels.compare(arr, "between", 1, None).to_pylist() == [None, None, None]


def test_integer_constants_outside_the_type_clamp():
    arr = pa.array([-128, 0, 127, None], pa.int8())
    assert kernels.compare(arr, "lt", 300).to_pylist() == [True, True, True, None]
    assert kernels.compare(arr, "eq", 300).to_pylist() == [False, False, False, None]
    assert kernels.compare(arr, "ne", -2**63).to_pylist() == [True, True, True, None]


def test_decimal_constant_at_a_finer_scale_is_exact():
    arr = pa.array([decimal.Decimal("1.00"), decimal.Decimal("1.01"), decimal.Decimal("-1.01")],
                   pa.decimal128(10, 2))
    assert kernels.compare(arr, "lt", decimal.Decimal("1.005")).to_pylist() == [True, False, True]
    assert kernels.compare(arr, "gt", decimal.Decimal("-1.005")).to_pylist() == [True, True, False]
    assert kernels.compare(arr, "eq", decimal.Decimal("1.005")).to_pylist() == [False, False, False]
    assert kernels.compare(arr, "between", decimal.Decimal("0.995"), 1).to_pylist() == [True, False, False]


def test_count_matches_over_runs_never_expands_them():
    # 300 billion logical rows in three runs: expanding them could not finish.
    runs = pa.RunEndEncodedArray.from_arrays(pa.array([10**11, 2 * 10**11, 3 * 10**11], pa.int64()),
                                             pa.array([1, 2, None], pa.int32()))
    if kernels.IMPLEMENTATION == "reference":
        pytest.skip("the reference expands runs")
    assert kernels.count_matches(runs, "eq", 2) == 10**11
    assert kernels.count_matches(runs.slice(5, 10**11), "ge", 1) == 10**11


def test_unsupported_types_raise_type_error():
    with pytest.raises(TypeError):
        kernels.compare(pa.array([True]), "eq", True)
    with pytest.raises(TypeError):
        kernels.compare(pa.array(["a"]), "lt", "b")


# ---------------------------------------------------------------------------------------------------
# Engine wiring: which conjuncts go to the kernels, and results equal to DuckDB's


@pytest.mark.parametrize("pattern, expected", [
    ("abc%", ("prefix", ("abc",))), ("%abc", ("suffix", ("abc",))), ("%abc%", ("contains", ("abc",))),
    ("abc", ("equal", ("abc",))), ("%", ("suffix", ("",))), ("%%", ("contains", ("",))),
    ("a_c%", None), ("a%cd", ("like", ("a%cd", "cd", "a"))), ("a\\%%", None),
    ("%special%requests%", ("like", ("%special%requests%", "requests", "special"))),
])
def test_like_patterns_the_kernels_take(pattern, expected):
    assert _like_match(pattern) == expected


@pytest.mark.parametrize("encoding", ["plain", "dictionary", "run_end"])
@pytest.mark.parametrize("pattern", ["%p%e%", "a%t", "%a%a%", "%%a%%", "b%n%", "%zz%z%", "%ap%le"])
def test_prefiltered_like_matches_arrow(encoding, pattern):
    """A pattern with inner %: rows holding its longest piece, then Arrow's LIKE on those only;
    NULLs stay NULL, on stored (encoded) columns too."""
    values = ["apple", None, "banana", "apricot", "", "grape ap", "papaya", "apt", "Apple", None] * 3
    plain = pa.array(values, pa.string())
    column = {"plain": plain, "dictionary": plain.dictionary_encode(),
              "run_end": pc.run_end_encode(pa.array(sorted(values, key=lambda v: (v is None, v or "")), pa.string()))}[encoding]
    kind, args = _like_match(pattern)
    assert kind == "like"
    got = KernelPredicate("s", "match", "like", args, False, None).evaluate(column)
    decoded = column.cast(pa.string()) if encoding == "dictionary" else \
        pc.run_end_decode(column) if encoding == "run_end" else column
    assert got.to_pylist() == pc.match_like(decoded, pattern).to_pylist()


SCHEMA = "CREATE TABLE f (id INT, i INT, b BIGINT, d DECIMAL(10,2), s VARCHAR(20), dt DATE, x DOUBLE)"
ROWS = [
    (1, 5, 10, "1.00", "apple", "2024-01-01", 1.5),
    (2, -3, None, "-2.50", "banana", "2023-06-30", None),
    (3, None, 7, None, None, None, 2.0),
    (4, 100, -1, "99.99", "apricot", "2024-12-31", -0.5),
    (5, 5, 0, "0.00", "", "2000-02-29", 0.0),
    (6, 0, 3, "1.01", "grape ap", "2024-01-02", 7.25),
]
WHERES = [
    "i = 5", "i <> 5", "5 < i", "i BETWEEN 0 AND 10", "i >= 0 AND i <= 5 AND b > 0",
    "d < 1.005", "d >= -2.5", "d = 1.00", "s = 'apple'", "s <> 'apple'", "s LIKE 'ap%'",
    "s NOT LIKE 'ap%'", "s LIKE '%ap%'", "s LIKE '%e'", "s LIKE 'a_ple'", "s LIKE '%p%e%'",
    "s NOT LIKE '%a%a%'", "s LIKE 'a%t'", "s NOT LIKE '%ap%le'", "dt >= DATE '2024-01-01'",
    "x > 1", "i IN (5, 100)", "i NOT IN (5, 100)", "i IN (5, NULL)", "i NOT IN (5, NULL)",
    "s IN ('apple', 'grape ap')", "s NOT IN ('apple', NULL)", "b IN (" + ", ".join(map(str, range(-1, 40))) + ")",
    "b NOT IN (" + ", ".join(map(str, range(0, 40))) + ")", "i = 5 OR s LIKE 'b%'", "i > 0 AND b * 2 > 5",
    # ORs of ANDs of kernel conjuncts (KernelDisjunction), NULLs and NOTs inside them
    "(i >= 0 AND i <= 5) OR (i >= 50 AND i <= 200) OR dt < DATE '2001-01-01'",
    "(i BETWEEN 0 AND 5 AND d > 0) OR (s IN ('banana', 'x') AND x IS NULL)",
    "s NOT LIKE 'a%' OR i IN (5, NULL)", "i NOT IN (0, NULL) OR d < 0", "(b > 0 AND s <> '') OR (i < 0 OR d = 1.01)",
    "id > 1 AND (i = 5 OR (s LIKE '%ap%' AND x > 0))", "i = 5 OR b * 2 > 5",
]


@pytest.fixture(scope="module")
def both():
    duckdb = pytest.importorskip("duckdb")
    con = engine.connect(database="filters")
    duck = duckdb.connect(":memory:")
    for db in (con, duck):
        db.execute(SCHEMA)
    con.executemany("INSERT INTO f VALUES (%s, %s, %s, %s, %s, %s, %s)", ROWS)
    duck.executemany("INSERT INTO f VALUES (?, ?, ?, ?, ?, ?, ?)", ROWS)
    yield con, duck
    con.close()
    duck.close()


@pytest.mark.parametrize("where", WHERES)
def test_where_matches_duckdb(both, where):
    con, duck = both
    sql = f"SELECT id FROM f WHERE {where} ORDER BY id"
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()


def test_kernel_filter_splits_simple_conjuncts(both):
    con, _ = both
    from engine.core.expressions import Call, ColumnRef, Literal
    from engine.types import BOOLEAN, INT, TEXT

    i, s = ColumnRef("i", INT, "i"), ColumnRef("s", TEXT, "s")
    ge, le = Call("ge", (i, Literal(1, INT)), BOOLEAN), Call("le", (i, Literal(9, INT)), BOOLEAN)
    like = Call("like", (s, Literal("ab%", TEXT)), BOOLEAN)
    other = Call("gt", (Call("add", (i, i), INT), Literal(3, INT)), BOOLEAN)
    split = KernelFilter.of(Call("and", (Call("and", (ge, like), BOOLEAN), Call("and", (le, other), BOOLEAN)),
                                 BOOLEAN))
    assert [(p.column, p.kind, p.op, p.args) for p in split.kernel] == [
        ("i", "compare", "between", (1, 9)), ("s", "match", "prefix", ("ab",))]
    assert split.residual == other


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns(), st.integers(0, 2**32), st.sampled_from([0.0, 0.03, 0.5, 1.0]), st.booleans(), st.booleans())
def test_take_encoded_matches_a_filter_of_the_decoded_column(arr, seed, fraction, keep, nulls):
    """A scan's selection by positions (engine.exec.kernel_filters.take_encoded: a dictionary column
    takes its codes, a sliced run-end column finds each row's run) equals Arrow's filter of the decoded
    column (a NULL in the mask drops the row); ``keep`` leaves dictionary columns encoded and turns
    run-end ones into dictionary arrays (codes for a GROUP BY), with the same values."""
    from engine.exec.kernel_filters import _filter_encoded, take_encoded
    rng = np.random.default_rng(seed)
    mask = pa.array(rng.random(len(arr)) < fraction, type=pa.bool_(),
                    mask=rng.random(len(arr)) < 0.2 if nulls else None)
    batch = pa.RecordBatch.from_arrays([arr, pa.array(np.arange(len(arr)))], names=["c", "i"])
    expected = reference._decode(arr).filter(mask)
    taken = _filter_encoded(batch, mask, frozenset(["c"]) if keep else frozenset())
    got = taken.column(0)
    if pa.types.is_dictionary(got.type):
        assert keep and (pa.types.is_dictionary(arr.type) or pa.types.is_run_end_encoded(arr.type))
        got = got.dictionary_decode()
    assert _same(got, expected)
    positions = np.flatnonzero(mask.fill_null(False).to_numpy(zero_copy_only=False))
    assert taken.column(1).equals(pa.array(positions))
    encoded = take_encoded(batch, positions, decode=False).column(0)
    assert not pa.types.is_run_end_encoded(encoded.type)
    assert _same(reference._decode(encoded), expected)


def _same(a, b) -> bool:
    """Equal arrays, NaN equal to NaN."""
    if pa.types.is_floating(a.type):
        return a.is_null().equals(b.is_null()) and np.array_equal(
            a.fill_null(0).to_numpy(zero_copy_only=False), b.fill_null(0).to_numpy(zero_copy_only=False), equal_nan=True)
    return a.equals(b)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 200), st.integers(0, 2**32), st.sampled_from([0.0, 0.02, 0.5, 0.98, 1.0]),
       st.integers(0, 20), st.booleans())
def test_true_span_finds_the_first_and_last_true(n, seed, fraction, pad, inverted):
    """true_span reads only the bitmap's bytes: bits outside a sliced array (before its offset, past
    its end, set by a NOT over the padding) never count."""
    from engine.exec.kernel_filters import true_span
    rng = np.random.default_rng(seed)
    values = rng.random(n + 2 * pad) < fraction
    values[pad + rng.integers(0, n)] = True
    mask = kernels.selection(kernels.not_kleene(pa.array(~values))) if inverted else pa.array(values)
    rows = np.flatnonzero(values[pad:pad + n])
    assert true_span(mask.slice(pad, n)) == (rows[0], rows[-1] + 1)


@st.composite
def sorted_batches(draw):
    """An encoded batch as a segment holds it: ``k`` sorted (run-end encoded, as a sort key is
    stored), ``d`` dictionary-encoded, ``x`` plain, each maybe with nulls, maybe sliced."""
    n = draw(st.integers(1, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    nulls = draw(st.booleans())
    k = np.sort(rng.integers(0, draw(st.sampled_from([3, 50, 1000])), n))
    k_valid = np.arange(n) >= (rng.integers(0, n // 10 + 1) if nulls else 0)    # NULLs sort first
    d = rng.integers(-3, 4, n)
    x = rng.integers(-50, 50, n)
    plain = [pa.array(k, pa.int64(), mask=~k_valid), pa.array(d, pa.int32(), mask=(rng.random(n) < 0.1) if nulls else None),
             pa.array(x, pa.int64())]
    columns = [pc.run_end_encode(plain[0]), plain[1].dictionary_encode(), plain[2]]
    pad = draw(st.integers(0, min(9, (n - 1) // 2)))
    length = n - 2 * pad
    return (pa.RecordBatch.from_arrays([c.slice(pad, length) for c in columns], names=["k", "d", "x"]),
            pa.RecordBatch.from_arrays([c.slice(pad, length) for c in plain], names=["k", "d", "x"]))


def test_kernel_filter_takes_ors_of_kernel_conjuncts():
    from engine.core.expressions import Call, ColumnRef, Literal
    from engine.types import BOOLEAN, INT

    i, j = ColumnRef("i", INT, "i"), ColumnRef("j", INT, "j")
    ge, le = Call("ge", (i, Literal(1, INT)), BOOLEAN), Call("le", (i, Literal(9, INT)), BOOLEAN)
    eq = Call("eq", (j, Literal(3, INT)), BOOLEAN)
    other = Call("gt", (Call("add", (i, j), INT), Literal(3, INT)), BOOLEAN)
    split = KernelFilter.of(Call("or", (Call("and", (ge, le), BOOLEAN), eq), BOOLEAN))
    assert split.kernel == () and split.residual is None
    [d] = split.disjunctions
    assert [[(p.column, p.op, p.args) for p in c] for c in d.disjuncts] == [
        [("i", "between", (1, 9))], [("j", "eq", (3,))]]
    mixed = Call("or", (ge, other), BOOLEAN)         # a disjunct the kernels do not take: residual
    assert KernelFilter.of(mixed).disjunctions == () and KernelFilter.of(mixed).residual == mixed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sorted_batches(), st.lists(st.lists(st.tuples(st.sampled_from(["k", "d", "x"]),
                                                     st.sampled_from(["le", "ne", "gt", "eq"]),
                                                     st.integers(-60, 1005)), min_size=1, max_size=3),
                                  min_size=2, max_size=3), st.booleans())
def test_kernel_disjunction_on_an_encoded_batch_matches_arrow(batches, disjuncts, keep):
    """An OR of ANDs of kernel conjuncts over an encoded batch (nulls in k and d) keeps exactly the
    rows where Arrow's three-valued OR of ANDs over the decoded batch is TRUE."""
    from engine.core.expressions import Call, ColumnRef, Literal
    from engine.types import BIGINT, BOOLEAN, INT

    encoded, plain = batches
    types = {"k": BIGINT, "d": INT, "x": BIGINT}
    arrow_ops = {"le": pc.less_equal, "ne": pc.not_equal, "gt": pc.greater, "eq": pc.equal}
    predicate = expected = None
    for conjunction in disjuncts:
        conj = want = None
        for name, op, value in conjunction:
            call = Call(op, (ColumnRef(name, types[name], name), Literal(value, types[name])), BOOLEAN)
            result = arrow_ops[op](plain.column(name), value)
            conj = call if conj is None else Call("and", (conj, call), BOOLEAN)
            want = result if want is None else pc.and_kleene(want, result)
        predicate = conj if predicate is None else Call("or", (predicate, conj), BOOLEAN)
        expected = want if expected is None else pc.or_kleene(expected, want)
    split = KernelFilter.of(predicate)
    assert len(split.disjunctions) == 1 and split.residual is None
    got = split.apply(encoded, keep=frozenset(["d"]) if keep else frozenset())
    want = plain.filter(expected.fill_null(False))
    assert got.num_rows == want.num_rows
    for name in ("k", "d", "x"):
        column = got.column(name)
        if pa.types.is_dictionary(column.type) or pa.types.is_run_end_encoded(column.type):
            column = reference._decode(column)
        assert column.equals(want.column(name)), name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sorted_batches(), st.integers(-5, 1005), st.integers(-5, 1005), st.sampled_from(["ge", "lt", "between", "eq"]),
       st.sampled_from([None, ("d", "le", 1), ("d", "ne", 0), ("x", "gt", 0), ("x", "lt", -60)]),
       st.booleans())
def test_kernel_filter_on_an_encoded_batch_matches_arrow(batches, a, b, op, other, keep):
    """KernelFilter.apply over an encoded batch (its conjuncts on run-end columns first, the rows
    narrowed to the span of the rows kept so far, a slice where the span is all kept) keeps exactly
    the rows Arrow's filter of the decoded batch keeps, in order."""
    from engine.core.expressions import Call, ColumnRef, Literal
    from engine.types import BIGINT, BOOLEAN, INT

    encoded, plain = batches
    types = {"k": BIGINT, "d": INT, "x": BIGINT}
    ref = {name: ColumnRef(name, types[name], name) for name in types}
    low, high = min(a, b), max(a, b)
    conjuncts = ([Call("ge", (ref["k"], Literal(low, BIGINT)), BOOLEAN), Call("le", (ref["k"], Literal(high, BIGINT)), BOOLEAN)]
                 if op == "between" else [Call(op, (ref["k"], Literal(a, BIGINT)), BOOLEAN)])
    expected = {"between": lambda k: pc.and_kleene(pc.greater_equal(k, low), pc.less_equal(k, high)),
                "ge": lambda k: pc.greater_equal(k, a), "lt": lambda k: pc.less(k, a),
                "eq": lambda k: pc.equal(k, a)}[op](plain.column("k"))
    if other is not None:
        name, other_op, value = other
        conjuncts.insert(0, Call(other_op, (ref[name], Literal(value, types[name])), BOOLEAN))
        arrow_op = {"le": pc.less_equal, "ne": pc.not_equal, "gt": pc.greater, "lt": pc.less}[other_op]
        expected = pc.and_kleene(expected, arrow_op(plain.column(name), value))
    predicate = conjuncts[0]
    for c in conjuncts[1:]:
        predicate = Call("and", (predicate, c), BOOLEAN)
    got = KernelFilter.of(predicate).apply(encoded, keep=frozenset(["d"]) if keep else frozenset())
    want = plain.filter(expected.fill_null(False))
    assert got.num_rows == want.num_rows
    for name in ("k", "d", "x"):
        column = got.column(name)
        if pa.types.is_dictionary(column.type) or pa.types.is_run_end_encoded(column.type):
            column = reference._decode(column)
        assert column.equals(want.column(name)), name


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 100), st.integers(0, 140),
       st.sampled_from([np.int8, np.int16, np.int32]))
def test_gather_bits_gives_each_row_its_entry_bit(seed, n, size, dtype):
    """gather_bits (int8 codes: a byte table, eight rows a byte) gives row i the bit of entry
    codes[i], and 0 for a negative code or one past the table (allowed under NULL rows)."""
    from kernels.filter import gather_bits

    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    codes = rng.integers(max(info.min, -200), min(info.max, 200) + 1, n).astype(dtype)
    bits = rng.integers(0, 2, size).astype(np.uint8)
    table = np.packbits(bits, bitorder="little") if size else np.zeros(1, np.uint8)
    out = np.zeros((n + 7) // 8, np.uint8)
    gather_bits(table, size, codes, out)
    c = codes.astype(np.int64)
    inside = (c >= 0) & (c < size)
    want = np.zeros(n, np.uint8)
    want[inside] = bits[c[inside]]
    assert np.unpackbits(out, bitorder="little")[:n].tolist() == want.tolist()
