/*
 * canopy_filter.h -- comparison loops of the filter kernels (kernels/filter.pyx) and the probe
 * loops of the IN-list kernels (kernels/inlist.pyx).
 *
 * Every predicate writes a packed bitmap: bit i of out (LSB first, Arrow's order) is row i's result,
 * bits past n in the last byte are zero. The loops work in blocks of CANOPY_FILTER_BLOCK rows: a
 * branch-free compare writes one byte per row into a stack buffer (gcc -O3 vectorizes these loops
 * with the baseline SIMD of the target: SSE2 on x86-64, NEON on aarch64), and canopy_pack_bytes then
 * packs 8 bytes into one bitmap byte with a multiply. No intrinsics, so the scalar path is the only
 * path and builds everywhere; -march=native (CANOPY_NATIVE=1) widens the same loops to AVX2/AVX-512.
 *
 * Integer comparisons are all range tests lo <= v <= hi (optionally negated, for <>): the Cython
 * wrapper turns =, <, <=, >, >=, BETWEEN and <> into one, clamped to the type's range. The range test
 * is one subtraction and one unsigned comparison: (UT)(v - lo) <= (UT)(hi - lo).
 */
#ifndef CANOPY_FILTER_H
#define CANOPY_FILTER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CANOPY_FILTER_BLOCK 2048

/* Float comparison operators (integers and decimals use ranges instead). */
enum { CANOPY_EQ = 0, CANOPY_NE, CANOPY_LT, CANOPY_LE, CANOPY_GT, CANOPY_GE, CANOPY_BETWEEN };

/* Pack n bytes that are each 0 or 1 into ceil(n / 8) bitmap bytes. Multiplying 8 such bytes by
 * 0x0102040810204080 moves byte k's bit to bit 56 + k, with no carries between the partial
 * products (each lands on a distinct bit), so the top byte is the 8 bits in Arrow order. */
static inline void canopy_pack_bytes(const uint8_t *m, size_t n, uint8_t *out) {
    size_t full = n / 8, i;
    for (i = 0; i < full; i++) {
        uint64_t x;
        memcpy(&x, m + 8 * i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
#endif
        out[i] = (uint8_t)((x * UINT64_C(0x0102040810204080)) >> 56);
    }
    if (n % 8) {
        uint8_t byte = 0;
        for (i = 0; i < n % 8; i++) byte |= (uint8_t)(m[8 * full + i] << i);
        out[full] = byte;
    }
}

/* canopy_range_<T>(v, n, lo, hi, negate, out): bit i = (lo <= v[i] <= hi) != negate. lo <= hi. */
#define CANOPY_DEFINE_RANGE(T, UT, NAME)                                                           \
    static inline void NAME(const T *v, size_t n, T lo, T hi, int negate, uint8_t *out) {          \
        uint8_t m[CANOPY_FILTER_BLOCK];                                                            \
        const UT width = (UT)((UT)hi - (UT)lo);                                                    \
        const uint8_t flip = negate ? 1 : 0;                                                       \
        size_t start, i;                                                                           \
        for (start = 0; start < n; start += CANOPY_FILTER_BLOCK) {                                 \
            size_t len = n - start < CANOPY_FILTER_BLOCK ? n - start : CANOPY_FILTER_BLOCK;        \
            const T *p = v + start;                                                                \
            for (i = 0; i < len; i++) m[i] = (uint8_t)(((UT)((UT)p[i] - (UT)lo) <= width) ^ flip); \
            canopy_pack_bytes(m, len, out + start / 8);                                            \
        }                                                                                          \
    }

CANOPY_DEFINE_RANGE(int8_t, uint8_t, canopy_range_i8)
CANOPY_DEFINE_RANGE(int16_t, uint16_t, canopy_range_i16)
CANOPY_DEFINE_RANGE(int32_t, uint32_t, canopy_range_i32)
CANOPY_DEFINE_RANGE(int64_t, uint64_t, canopy_range_i64)

/* Membership in a short list of values (IN with up to CANOPY_SHORT_LIST values): one compare per
 * value and row, OR-ed; for 1-8 values this beats any hash table, and it vectorizes. */
#define CANOPY_SHORT_LIST 8
#define CANOPY_DEFINE_ANY_EQ(T, NAME)                                                              \
    static inline void NAME(const T *v, size_t n, const T *list, size_t k, uint8_t *out) {         \
        uint8_t m[CANOPY_FILTER_BLOCK];                                                            \
        size_t start, i, j;                                                                        \
        for (start = 0; start < n; start += CANOPY_FILTER_BLOCK) {                                 \
            size_t len = n - start < CANOPY_FILTER_BLOCK ? n - start : CANOPY_FILTER_BLOCK;        \
            const T *p = v + start;                                                                \
            for (i = 0; i < len; i++) m[i] = (uint8_t)(p[i] == list[0]);                           \
            for (j = 1; j < k; j++) {                                                              \
                const T x = list[j];                                                               \
                for (i = 0; i < len; i++) m[i] |= (uint8_t)(p[i] == x);                            \
            }                                                                                      \
            canopy_pack_bytes(m, len, out + start / 8);                                            \
        }                                                                                          \
    }

CANOPY_DEFINE_ANY_EQ(int8_t, canopy_any_eq_i8)
CANOPY_DEFINE_ANY_EQ(int16_t, canopy_any_eq_i16)
CANOPY_DEFINE_ANY_EQ(int32_t, canopy_any_eq_i32)
CANOPY_DEFINE_ANY_EQ(int64_t, canopy_any_eq_i64)

/* One loop per operator so the operator test stays out of the loop body. NaN compares false under
 * every operator except <>, as in IEEE 754 and pyarrow.compute. */
#define CANOPY_FLOAT_LOOP(EXPR)                                                                    \
    for (start = 0; start < n; start += CANOPY_FILTER_BLOCK) {                                     \
        size_t len = n - start < CANOPY_FILTER_BLOCK ? n - start : CANOPY_FILTER_BLOCK;            \
        const T *p = v + start;                                                                    \
        for (i = 0; i < len; i++) { const T x = p[i]; m[i] = (uint8_t)(EXPR); }                    \
        canopy_pack_bytes(m, len, out + start / 8);                                                \
    }

#define CANOPY_DEFINE_FLOAT_CMP(T, NAME)                                                           \
    static inline void NAME(const T *v, size_t n, int op, T a, T b, uint8_t *out) {                \
        uint8_t m[CANOPY_FILTER_BLOCK];                                                            \
        size_t start, i;                                                                           \
        switch (op) {                                                                              \
        case CANOPY_EQ: CANOPY_FLOAT_LOOP(x == a) break;                                           \
        case CANOPY_NE: CANOPY_FLOAT_LOOP(x != a) break;                                           \
        case CANOPY_LT: CANOPY_FLOAT_LOOP(x < a) break;                                            \
        case CANOPY_LE: CANOPY_FLOAT_LOOP(x <= a) break;                                           \
        case CANOPY_GT: CANOPY_FLOAT_LOOP(x > a) break;                                            \
        case CANOPY_GE: CANOPY_FLOAT_LOOP(x >= a) break;                                           \
        default: CANOPY_FLOAT_LOOP((x >= a) & (x <= b)) break;                                     \
        }                                                                                          \
    }

#define T float
CANOPY_DEFINE_FLOAT_CMP(float, canopy_cmp_f32)
#undef T
#define T double
CANOPY_DEFINE_FLOAT_CMP(double, canopy_cmp_f64)
#undef T

/* decimal128 as little-endian (low, high) int64 pairs: bit i = (lo <= v[i] <= hi) != negate, with
 * lo, hi given as halves too (Cython has no 128-bit literal type). */
static inline void canopy_range_d128(const uint64_t *words, size_t n, uint64_t lo_low, int64_t lo_high,
                                     uint64_t hi_low, int64_t hi_high, int negate, uint8_t *out) {
    uint8_t m[CANOPY_FILTER_BLOCK];
    const __int128 lo = (__int128)(((unsigned __int128)(uint64_t)lo_high << 64) | lo_low);
    const __int128 hi = (__int128)(((unsigned __int128)(uint64_t)hi_high << 64) | hi_low);
    const uint8_t flip = negate ? 1 : 0;
    size_t start, i;
    for (start = 0; start < n; start += CANOPY_FILTER_BLOCK) {
        size_t len = n - start < CANOPY_FILTER_BLOCK ? n - start : CANOPY_FILTER_BLOCK;
        const uint64_t *p = words + 2 * start;
        for (i = 0; i < len; i++) {
            const __int128 x = (__int128)(((unsigned __int128)p[2 * i + 1] << 64) | p[2 * i]);
            m[i] = (uint8_t)(((x >= lo) & (x <= hi)) ^ flip);
        }
        canopy_pack_bytes(m, len, out + start / 8);
    }
}

/* String matches of row [s, s + len) against needle [q, q + k). */
enum { CANOPY_STR_EQUAL = 0, CANOPY_STR_PREFIX, CANOPY_STR_SUFFIX, CANOPY_STR_CONTAINS };

static inline int canopy_str_contains(const uint8_t *s, size_t len, const uint8_t *q, size_t k) {
    const uint8_t *p, *end;
    if (k == 0) return 1;
    if (len < k) return 0;
    /* memchr finds candidates for the first byte with SIMD inside libc; memcmp confirms. */
    end = s + (len - k) + 1;
    for (p = s; p < end; p++) {
        p = (const uint8_t *)memchr(p, q[0], (size_t)(end - p));
        if (p == NULL) return 0;
        if (memcmp(p + 1, q + 1, k - 1) == 0) return 1;
    }
    return 0;
}

static inline int canopy_str_match(int kind, const uint8_t *s, size_t len, const uint8_t *q, size_t k) {
    switch (kind) {
    case CANOPY_STR_EQUAL: return len == k && memcmp(s, q, k) == 0;
    case CANOPY_STR_PREFIX: return len >= k && memcmp(s, q, k) == 0;
    case CANOPY_STR_SUFFIX: return len >= k && memcmp(s + (len - k), q, k) == 0;
    default: return canopy_str_contains(s, len, q, k);
    }
}

/* ---- IN-list: a blocked Bloom filter in front of an exact open-addressing hash set ----------
 *
 * The Bloom filter is one 64-bit word per key (a "register-blocked" filter): the key's hash picks
 * the word with its top bits and three bits inside it with its low 18 bits, so a probe is one load
 * and one AND, and the filter for a 904-value list (2 KiB at 16 bits per key) sits in L1. Only the
 * few rows that pass (all members, ~1-2% of the others) reach the exact set.
 */
/* MurmurHash3's 64-bit finalizer: every output bit depends on every input bit. One multiply and a
 * shift were not enough: the mask reads the hash's low bits, and keys with many trailing zero bits
 * (multiples of 2^k, INT64_MIN, rounded timestamps) all hashed to the same few mask bits, so a
 * one-key filter passed every INT64_MIN row (5.7% false positives instead of ~0.01%). */
static inline uint64_t canopy_int_key_hash(int64_t v) {
    uint64_t h = (uint64_t)v;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    return h ^ (h >> 33);
}

static inline uint64_t canopy_bloom_mask(uint64_t h) {
    return (UINT64_C(1) << (h & 63)) | (UINT64_C(1) << ((h >> 6) & 63)) |
           (UINT64_C(1) << ((h >> 12) & 63));
}

/* Word index from the top bits (log2_words in [0, 63]); the mask uses the low bits. */
static inline size_t canopy_bloom_word(uint64_t h, int log2_words) {
    return log2_words == 0 ? 0 : (size_t)(h >> (64 - log2_words));
}

#endif /* CANOPY_FILTER_H */
