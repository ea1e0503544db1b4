/*
 * canopy_hash.h -- the row hash shared by every Canopy kernel that hashes keys.
 *
 * Shard placement, the repartition exchange and (later) hash join and hash group-by must agree on
 * these functions bit for bit: a row written to shard p on INSERT has to be found in shard p by a
 * colocated join. Change nothing here without changing kernels/reference/hashing.py and expecting
 * every stored table to be resharded.
 *
 * Definitions (all arithmetic on uint64_t, wrapping):
 *
 *   canopy_hash_bytes(p, n)   XXH64 of the n bytes at p with seed 0 (the published algorithm, so
 *                             the values can be checked against any xxHash implementation).
 *   canopy_hash_word(w)       XXH64 of the 8 little-endian bytes of w with seed 0, unrolled. Every
 *                             integer-like value is hashed as its value widened to int64, so int32 5
 *                             and int64 5 hash alike.
 *   canopy_hash_combine(h,c)  avalanche(rotl(h, 27) * P1 + c): folds column c's hash into the hash h
 *                             of the columns to its left; a bijection in each argument, and not
 *                             symmetric, so (a, b) and (b, a) differ.
 *   CANOPY_NULL_HASH          the hash of a null, whatever the column type.
 *   canopy_fastrange32(h, n)  ((h >> 32) * n) >> 32: partition of h among n < 2^32 partitions. It
 *                             uses the HIGH 32 bits so that hash tables built inside one partition
 *                             can index by the low bits without every partition's table clustering.
 *
 * Everything is static inline: this header is the single definition, included by each extension
 * that needs it (kernels/hashing.pxd re-exports it to Cython through `cdef extern`).
 */
#ifndef CANOPY_HASH_H
#define CANOPY_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CANOPY_P1 UINT64_C(0x9E3779B185EBCA87)
#define CANOPY_P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define CANOPY_P3 UINT64_C(0x165667B19E3779F9)
#define CANOPY_P4 UINT64_C(0x85EBCA77C2B2AE63)
#define CANOPY_P5 UINT64_C(0x27D4EB2F165667C5)

/* Arbitrary odd constant; only has to be fixed forever. */
#define CANOPY_NULL_HASH UINT64_C(0x6E756C6C6E756C6D)

/* Bits of the one NaN that every float NaN is normalised to before hashing (the quiet NaN). */
#define CANOPY_CANONICAL_NAN_BITS UINT64_C(0x7FF8000000000000)

static inline uint64_t canopy_rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian unaligned loads. memcpy compiles to a single mov on every target we care about. */
static inline uint64_t canopy_read64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint32_t canopy_read32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint64_t canopy_xxh_round(uint64_t acc, uint64_t input) {
    acc += input * CANOPY_P2;
    acc = canopy_rotl64(acc, 31);
    return acc * CANOPY_P1;
}

static inline uint64_t canopy_xxh_merge_round(uint64_t acc, uint64_t val) {
    acc ^= canopy_xxh_round(0, val);
    return acc * CANOPY_P1 + CANOPY_P4;
}

static inline uint64_t canopy_xxh_avalanche(uint64_t h) {
    h ^= h >> 33;
    h *= CANOPY_P2;
    h ^= h >> 29;
    h *= CANOPY_P3;
    h ^= h >> 32;
    return h;
}

static inline uint64_t canopy_hash_word(uint64_t w) {
    uint64_t h = CANOPY_P5 + 8;
    h ^= canopy_xxh_round(0, w);
    h = canopy_rotl64(h, 27) * CANOPY_P1 + CANOPY_P4;
    return canopy_xxh_avalanche(h);
}

static inline uint64_t canopy_hash_bytes(const uint8_t *p, size_t len) {
    const uint8_t *const end = p + len;
    uint64_t h;

    if (len >= 32) {
        const uint8_t *const limit = end - 32;
        uint64_t v1 = CANOPY_P1 + CANOPY_P2;
        uint64_t v2 = CANOPY_P2;
        uint64_t v3 = 0;
        uint64_t v4 = (uint64_t)0 - CANOPY_P1;
        do {
            v1 = canopy_xxh_round(v1, canopy_read64(p));
            v2 = canopy_xxh_round(v2, canopy_read64(p + 8));
            v3 = canopy_xxh_round(v3, canopy_read64(p + 16));
            v4 = canopy_xxh_round(v4, canopy_read64(p + 24));
            p += 32;
        } while (p <= limit);
        h = canopy_rotl64(v1, 1) + canopy_rotl64(v2, 7) + canopy_rotl64(v3, 12) + canopy_rotl64(v4, 18);
        h = canopy_xxh_merge_round(h, v1);
        h = canopy_xxh_merge_round(h, v2);
        h = canopy_xxh_merge_round(h, v3);
        h = canopy_xxh_merge_round(h, v4);
    } else {
        h = CANOPY_P5;
    }
    h += (uint64_t)len;

    while (p + 8 <= end) {
        h ^= canopy_xxh_round(0, canopy_read64(p));
        h = canopy_rotl64(h, 27) * CANOPY_P1 + CANOPY_P4;
        p += 8;
    }
    if (p + 4 <= end) {
        h ^= (uint64_t)canopy_read32(p) * CANOPY_P1;
        h = canopy_rotl64(h, 23) * CANOPY_P2 + CANOPY_P3;
        p += 4;
    }
    while (p < end) {
        h ^= (uint64_t)(*p) * CANOPY_P5;
        h = canopy_rotl64(h, 11) * CANOPY_P1;
        p++;
    }
    return canopy_xxh_avalanche(h);
}

static inline uint64_t canopy_hash_combine(uint64_t h, uint64_t c) {
    return canopy_xxh_avalanche(canopy_rotl64(h, 27) * CANOPY_P1 + c);
}

/* -0.0 and +0.0 compare equal, and so must hash equal; every NaN hashes as one NaN. */
static inline uint64_t canopy_double_bits(double d) {
    uint64_t bits;
    if (d == 0.0) d = 0.0;
    memcpy(&bits, &d, 8);
    return d != d ? CANOPY_CANONICAL_NAN_BITS : bits;
}

static inline uint32_t canopy_fastrange32(uint64_t h, uint32_t n) {
    return (uint32_t)(((h >> 32) * (uint64_t)n) >> 32);
}

#endif /* CANOPY_HASH_H */
