"""Several small group-by keys packed into 64-bit words (``KeyPacking``), so that a composite key is
hashed and compared as one word (the ``HashTable``'s inline mode), or as few, instead of a word per
column.

Each key column is a column of int64 words (an integer-like value, or a byte-string column's dense
id from its own factorizer). Column ``j`` holds ``bits[j]`` bits of one of the words, from bit
``shift[j]``: the code ``value - base[j] + 1``, 0 standing for null. A layout is chosen from the
ranges the columns have shown so far, with a spare bit where no more words are needed (ids of new
strings and later values then still fit); a batch outside it gets a wider layout (``widened``), and
the caller re-packs its groups (``unpack`` then ``pack``), or, past the words it allows, stops
packing. The layout never depends on anything but the values seen: no statistics, no column names.
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
    """A layout: per column its ``base`` (the value coded 1), ``bits``, and the ``word`` and
    ``shift`` where its code lies (a column never straddles two words); ``words`` in all."""

    def __init__(self, bases, bits, places=None):
        self.bases = list(bases)
        self.bits = list(bits)
        if places is None:                   # one word (or as many as the bits need), in order
            places = _first_fit(self.bits)
        self.word = [w for w, _ in places]
        self.shifts = [s for _, s in places]
        self.words = max(self.word) + 1 if self.word else 1

    @staticmethod
    def fit(ranges, growing=(), max_words=1):
        """The layout for columns of these ``ranges`` ((low, high) or None) in at most
        ``max_words`` words, or None. Each column gets the bits of its codes (1 .. high - low + 1,
        and 0 for null), and a spare bit where that needs no more words: first the ``growing``
        columns' (dense ids that grow with new keys), then the others'."""
        bases, bits = [], []
        for r in ranges:
            low, high = r if r is not None else (0, 0)
            if low <= -(1 << 63):         # base - 1 would not be an int64
                return None
            bases.append(low)
            bits.append(max(1, (high - low + 1).bit_length()))
        if max(bits) > 64:
            return None
        places = _first_fit(bits)
        words = max(w for w, _ in places) + 1
        if words > max_words:
            return None
        order = [j for j in range(len(bits)) if j in growing] + [j for j in range(len(bits)) if j not in growing]
        for j in order:
            if bits[j] < 64:
                bits[j] += 1
                wider = _first_fit(bits)
                if max(w for w, _ in wider) + 1 > words:
                    bits[j] -= 1
                else:
                    places = wider
        return KeyPacking(bases, bits, places)

    def covers(self, ranges) -> bool:
        """Whether every column's ``(low, high)`` (or None) codes within its bits."""
        for r, base, b in zip(ranges, self.bases, self.bits):
            if r is not None and (r[0] < base or r[1] - base + 1 >= (1 << b)):
                return False
        return True

    def widened(self, ranges, growing=(), max_words=1):
        """A layout covering this one's values and ``ranges`` (None past ``max_words`` words)."""
        merged = []
        for r, base, b in zip(ranges, self.bases, self.bits):
            high = base + (1 << b) - 2          # the highest value this layout codes
            merged.append((base, high) if r is None else (min(base, r[0]), max(high, r[1])))
        return KeyPacking.fit(merged, growing, max_words)

    def pack(self, columns, valids) -> np.ndarray:
        """The packed words, int64 of shape (n, words) (their bits as uint64), of rows whose column
        values are ``columns`` (int64 arrays) with validity ``valids`` (bool masks or None)."""
        n = len(columns[0])
        out = [np.zeros(n, dtype=np.uint64) for _ in range(self.words)]
        for words, valid, base, w, shift in zip(columns, valids, self.bases, self.word, self.shifts):
            code = (words - np.int64(base - 1)).view(np.uint64) if base != 1 else words.view(np.uint64)
            if valid is not None:
                code = np.where(valid, code, np.uint64(0))
            if shift:
                code = code << np.uint64(shift)
            out[w] |= code
        if self.words == 1:
            return out[0].view(np.int64).reshape(n, 1)
        return np.ascontiguousarray(np.stack(out, axis=1)).view(np.int64)

    def unpack(self, packed: np.ndarray):
        """[(values int64, null mask or None)] per column of packed words ((n, words) int64)."""
        words = packed.view(np.uint64)
        out = []
        for base, b, w, shift in zip(self.bases, self.bits, self.word, self.shifts):
            column = words[:, w]
            code = (column >> np.uint64(shift)) & np.uint64((1 << b) - 1) if b < 64 else column.copy()
            null = code == 0
            values = code.view(np.int64) + np.int64(base - 1)
            out.append((values, null if null.any() else None))
        return out


def _first_fit(bits):
    """(word, shift) of each column of these bit widths, in order, a column going to the first word
    with room for it."""
    used = []
    places = []
    for b in bits:
        for w, u in enumerate(used):
            if u + b <= 64:
                places.append((w, u))
                used[w] += b
                break
        else:
            places.append((len(used), 0))
            used.append(b)
    return places
