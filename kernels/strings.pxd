# UTF-8 helpers of kernels/strings.pyx, inline so that other kernel families (LIKE, hashing of
# text) can cimport them. A character starts at every byte that is not 10xxxxxx; invalid UTF-8 is
# walked the same way (never past the row's end), it is not validated here.
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy


cdef inline bint _ascii_range(const uint8_t *p, int64_t n) noexcept nogil:
    cdef uint64_t acc = 0, w
    cdef int64_t i = 0
    while i + 32 <= n:          # four words per step: the OR chain vectorizes
        memcpy(&w, p + i, 8); acc |= w
        memcpy(&w, p + i + 8, 8); acc |= w
        memcpy(&w, p + i + 16, 8); acc |= w
        memcpy(&w, p + i + 24, 8); acc |= w
        if acc & 0x8080808080808080ULL:
            return False
        i += 32
    while i < n:
        acc |= p[i]
        i += 1
    return (acc & 0x8080808080808080ULL) == 0


cdef inline bint _continuation(uint8_t c) noexcept nogil:
    return (c & 0xC0) == 0x80


cdef inline int64_t _skip_forward(const uint8_t *s, int64_t p, int64_t n, int64_t k) noexcept nogil:
    """Byte position after ``k`` characters from ``p`` (a character start), at most ``n``."""
    while k > 0 and p < n:
        p += 1
        while p < n and _continuation(s[p]):
            p += 1
        k -= 1
    return p


cdef inline int64_t _count_chars(const uint8_t *s, int64_t n) noexcept nogil:
    cdef int64_t i, count = 0
    for i in range(n):
        count += not _continuation(s[i])
    return count


