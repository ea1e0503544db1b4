"""Several small group-by keys packed into one 64-bit word (``KeyPacking``), so that a composite key
is hashed and compared as one word (the ``HashTable``'s inline mode) instead of a row of words.

Each key column is a column of int64 words (an integer-like value, or a byte-string column's dense
id from its own factorizer). Column ``j`` holds ``bits[j]`` bits of the packed word from bit
``shift[j]``: the code ``value - base[j] + 1``, 0 standing for null. A layout is chosen from the
ranges the columns have shown so far, with a spare bit where the 64 bits allow (ids of new strings
and later values then still fit); a batch outside it gets a wider layout (``widened``), and the
caller re-packs its groups (``unpack`` then ``pack``), or, past 64 bits, stops packing. The layout
never depends on anything but the values seen: no statistics, no column names.
See kernels/groupby_factorize.pyx (``Factorizer``) for its use.
"""
from __future__ import annotations

import numpy as np

__all__ = ["KeyPacking", "column_range"]


def column_range(words: np.ndarray, valid):
    """(lowest, highest) valid value of an int64 column as Python ints, or None when no row is
    valid. ``valid``: a bool mask, or None for every row."""
    if valid is not None:
        words = words[valid]
    if not len(words):
        return None
    return int(words.min()), int(words.max())


class KeyPacking:
    """A layout: per column its ``base`` (the value coded 1) and ``bits``; ``shift`` follows."""

    def __init__(self, bases, bits):
        self.bases = list(bases)
        self.bits = list(bits)
        self.shifts = []
        at = 0
        for b in self.bits:
            self.shifts.append(at)
            at += b
        self.total = at

    @staticmethod
    def fit(ranges, growing=()):
        """The layout for columns of these ``ranges`` ((low, high) or None), or None past 64 bits.
        Each column gets the bits of its codes (1 .. high - low + 1, and 0 for null), then, while
        bits are left, a spare bit: first the ``growing`` columns' (dense ids that grow with new
        keys), then the others'."""
        bases, bits = [], []
        for r in ranges:
            low, high = r if r is not None else (0, 0)
            if low <= -(1 << 63):         # base - 1 would not be an int64
                return None
            bases.append(low)
            bits.append(max(1, (high - low + 1).bit_length()))
        if sum(bits) > 64:
            return None
        order = [j for j in range(len(bits)) if j in growing] + [j for j in range(len(bits)) if j not in growing]
        for j in order:
            if sum(bits) < 64:
                bits[j] += 1
        return KeyPacking(bases, bits)

    def covers(self, ranges) -> bool:
        """Whether every column's ``(low, high)`` (or None) codes within its bits."""
        for r, base, b in zip(ranges, self.bases, self.bits):
            if r is not None and (r[0] < base or r[1] - base + 1 >= (1 << b)):
                return False
        return True

    def widened(self, ranges, growing=()):
        """A layout covering this one's values and ``ranges`` (None past 64 bits)."""
        merged = []
        for r, base, b in zip(ranges, self.bases, self.bits):
            high = base + (1 << b) - 2          # the highest value this layout codes
            merged.append((base, high) if r is None else (min(base, r[0]), max(high, r[1])))
        return KeyPacking.fit(merged, growing)

    def pack(self, columns, valids) -> np.ndarray:
        """The packed words (int64, their bits as uint64) of rows whose column values are
        ``columns`` (int64 arrays) with validity ``valids`` (bool masks or None)."""
        n = len(columns[0])
        out = np.zeros(n, dtype=np.uint64)
        for words, valid, base, shift in zip(columns, valids, self.bases, self.shifts):
            code = (words - np.int64(base - 1)).view(np.uint64) if base != 1 else words.view(np.uint64)
            if valid is not None:
                code = np.where(valid, code, np.uint64(0))
            if shift:
                code = code << np.uint64(shift)
            out |= code
        return out.view(np.int64)

    def unpack(self, packed: np.ndarray):
        """[(values int64, null mask or None)] per column of packed words."""
        words = packed.view(np.uint64)
        out = []
        for base, b, shift in zip(self.bases, self.bits, self.shifts):
            code = (words >> np.uint64(shift)) & np.uint64((1 << b) - 1) if b < 64 else words
            null = code == 0
            values = code.view(np.int64) + np.int64(base - 1)
            out.append((values, null if null.any() else None))
        return out
