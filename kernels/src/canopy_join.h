/*
 * canopy_join.h -- the probe loops of the hash join (kernels/join.pyx).
 *
 * The build side's keys are numbered by hash group-by's table (canopy_groupby.h): a join's hash table
 * IS a group-by table over the build keys, ids dense in order of first occurrence. The functions here
 * only read such a table (lookup: key -> id, or -1 when no build row has that key) and walk the
 * build rows of an id, which the caller lays out CSR-style: the build rows with id g are
 * rows[starts[g] : starts[g + 1]], ascending.
 *
 * The lookups follow canopy_gb_factorize_*: same hash, same slot layout, same tag test; they never
 * insert, so a probe side's keys that the build side lacks cost one miss each and no memory.
 */
#ifndef CANOPY_JOIN_H
#define CANOPY_JOIN_H

#include <stdint.h>
#include <string.h>

#include "canopy_groupby.h"

/* rows hashed (and their slots prefetched) ahead of the probes */
#define CANOPY_JOIN_BLOCK 64

/* ids[i] = id of the `width` words at rows + i * width, -1 when absent; rows whose validity bit
 * (bit_offset + i) is clear get -2 (validity may be NULL). */
static inline void canopy_join_lookup_words_w(const canopy_gb_table *t, const int32_t width,
                                              const int64_t *rows, const uint8_t *validity,
                                              int64_t bit_offset, int64_t n, int64_t *ids) {
    uint64_t hashes[CANOPY_JOIN_BLOCK];
    const uint64_t mask = t->mask;
    const uint64_t *slots = t->slots;
    for (int64_t start = 0; start < n; start += CANOPY_JOIN_BLOCK) {
        int64_t m = n - start < CANOPY_JOIN_BLOCK ? n - start : CANOPY_JOIN_BLOCK;
        for (int64_t i = 0; i < m; i++) {
            hashes[i] = canopy_gb_hash_words(rows + (start + i) * width, width);
            __builtin_prefetch(&slots[hashes[i] & mask]);
        }
        for (int64_t i = 0; i < m; i++) {
            const int64_t r = start + i;
            if (!canopy_gb_is_valid(validity, bit_offset + r)) {
                ids[r] = -2;
                continue;
            }
            const int64_t *key = rows + r * width;
            const uint64_t h = hashes[i];
            const uint64_t tag = h >> 32;
            uint64_t pos = h & mask;
            int64_t found = -1;
            for (;;) {
                const uint64_t s = slots[pos];
                if (s == 0) break;
                if ((s >> 32) == tag) {
                    const int64_t g = (int64_t)(uint32_t)s - 1;
                    const int64_t *stored = t->words + g * width;
                    int32_t j = 0;
                    while (j < width && stored[j] == key[j]) j++;
                    if (j == width) {
                        found = g;
                        break;
                    }
                }
                pos = (pos + 1) & mask;
            }
            ids[r] = found;
        }
    }
}

static inline void canopy_join_lookup_words(const canopy_gb_table *t, const int64_t *rows,
                                            const uint8_t *validity, int64_t bit_offset, int64_t n,
                                            int64_t *ids) {
    switch (t->width) {
    case 1: canopy_join_lookup_words_w(t, 1, rows, validity, bit_offset, n, ids); break;
    case 2: canopy_join_lookup_words_w(t, 2, rows, validity, bit_offset, n, ids); break;
    default: canopy_join_lookup_words_w(t, t->width, rows, validity, bit_offset, n, ids); break;
    }
}

/* The id of one int64 key in a width-1 table, -1 when absent. */
static inline int64_t canopy_join_find_word(const canopy_gb_table *t, int64_t key) {
    const uint64_t h = canopy_hash_word((uint64_t)key);
    const uint64_t tag = h >> 32;
    uint64_t pos = h & t->mask;
    for (;;) {
        const uint64_t s = t->slots[pos];
        if (s == 0) return -1;
        if ((s >> 32) == tag) {
            const int64_t g = (int64_t)(uint32_t)s - 1;
            if (t->words[g] == key) return g;
        }
        pos = (pos + 1) & t->mask;
    }
}

/* Bytes mode: as canopy_join_lookup_words, row i being data[offsets[i] : offsets[i + 1]]. The caller
 * has checked the offsets. */
#define CANOPY_JOIN_DEFINE_LOOKUP_BYTES(NAME, OFFSET_T)                                               \
static inline void NAME(const canopy_gb_table *t, const OFFSET_T *offsets, const uint8_t *data,      \
                        const uint8_t *validity, int64_t bit_offset, int64_t n, int64_t *ids) {      \
    uint64_t hashes[CANOPY_JOIN_BLOCK];                                                              \
    const uint64_t mask = t->mask;                                                                   \
    const uint64_t *slots = t->slots;                                                                \
    for (int64_t start = 0; start < n; start += CANOPY_JOIN_BLOCK) {                                 \
        int64_t m = n - start < CANOPY_JOIN_BLOCK ? n - start : CANOPY_JOIN_BLOCK;                   \
        for (int64_t i = 0; i < m; i++) {                                                            \
            const int64_t r = start + i;                                                             \
            hashes[i] = canopy_hash_bytes(data + offsets[r], (size_t)(offsets[r + 1] - offsets[r])); \
            __builtin_prefetch(&slots[hashes[i] & mask]);                                            \
        }                                                                                            \
        for (int64_t i = 0; i < m; i++) {                                                            \
            const int64_t r = start + i;                                                             \
            if (!canopy_gb_is_valid(validity, bit_offset + r)) {                                     \
                ids[r] = -2;                                                                         \
                continue;                                                                            \
            }                                                                                        \
            const uint8_t *key = data + offsets[r];                                                  \
            const int64_t len = (int64_t)(offsets[r + 1] - offsets[r]);                              \
            const uint64_t h = hashes[i];                                                            \
            const uint64_t tag = h >> 32;                                                            \
            uint64_t pos = h & mask;                                                                 \
            int64_t found = -1;                                                                      \
            for (;;) {                                                                               \
                const uint64_t s = slots[pos];                                                       \
                if (s == 0) break;                                                                   \
                if ((s >> 32) == tag) {                                                              \
                    const int64_t g = (int64_t)(uint32_t)s - 1;                                      \
                    const int64_t glen = t->offsets[g + 1] - t->offsets[g];                          \
                    if (glen == len && (len == 0 || memcmp(t->data + t->offsets[g], key, (size_t)len) == 0)) { \
                        found = g;                                                                   \
                        break;                                                                       \
                    }                                                                                \
                }                                                                                    \
                pos = (pos + 1) & mask;                                                              \
            }                                                                                        \
            ids[r] = found;                                                                          \
        }                                                                                            \
    }                                                                                                \
}

CANOPY_JOIN_DEFINE_LOOKUP_BYTES(canopy_join_lookup_bytes32, int32_t)
CANOPY_JOIN_DEFINE_LOOKUP_BYTES(canopy_join_lookup_bytes64, int64_t)

/*
 * Emit (probe row, build row) pairs, probe rows in order from *row and, within one probe row, its
 * build rows in ascending order from the *offset-th. A probe row whose id is negative emits
 * (row, -1) when `outer` (left outer join) and nothing otherwise. Stops when `cap` pairs are written
 * or the probe rows run out; *row / *offset are left where the next call resumes. Returns the pairs
 * written. `cap` >= 1. `unique`: every id has exactly one build row (starts[g] == g), so rows[g] is
 it. An id of num_ids or more stops the loop with *row at that probe row and returns
 * -1 (the pairs before it are written).
 */
static inline int64_t canopy_join_emit(const int64_t *ids, int64_t n, const int64_t *starts,
                                       int64_t num_ids, const int64_t *rows, int unique, int outer, int64_t *row,
                                       int64_t *offset, int64_t cap, int64_t *out_probe,
                                       int64_t *out_build) {
    int64_t k = 0, i = *row, off = *offset;
    while (i < n && k < cap) {
        const int64_t g = ids[i];
        if (g >= num_ids) {
            *row = i;
            *offset = off;
            return -1;
        }
        if (g < 0) {
            if (outer) {
                out_probe[k] = i;
                out_build[k] = -1;
                k++;
            }
            i++;
            continue;
        }
        if (unique) {
            /* one build row per key: rows[g], no walk over starts */
            out_probe[k] = i;
            out_build[k] = rows[g];
            k++;
            i++;
            continue;
        }
        const int64_t lo = starts[g] + off, hi = starts[g + 1];
        int64_t take = hi - lo;
        if (take > cap - k) take = cap - k;
        for (int64_t j = 0; j < take; j++) {
            out_probe[k + j] = i;
            out_build[k + j] = rows[lo + j];
        }
        k += take;
        if (lo + take == hi) {
            i++;
            off = 0;
        } else {
            off += take;
        }
    }
    *row = i;
    *offset = off;
    return k;
}

/* The number of pairs canopy_join_emit writes for all n probe rows. */
static inline int64_t canopy_join_count(const int64_t *ids, int64_t n, const int64_t *starts,
                                        int64_t num_ids, int unique, int outer) {
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t g = ids[i];
        if (g < 0 || g >= num_ids) total += outer ? 1 : 0;
        else total += unique ? 1 : starts[g + 1] - starts[g];
    }
    return total;
}

#endif /* CANOPY_JOIN_H */
