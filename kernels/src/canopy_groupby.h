/*
 * canopy_groupby.h -- the open-addressing hash table behind hash group-by (kernels/groupby.pyx).
 *
 * A table maps keys to dense group ids 0, 1, 2, ... in order of first insertion. A key is either
 *
 *   - words mode (width >= 1): `width` int64 words, row-major in the input (integers widened to
 *     int64, decimal128 as its two words, or several columns' words side by side), or
 *   - bytes mode (width == 0): a variable-length byte string (Arrow string/binary offsets + data).
 *
 * Either mode takes an optional Arrow validity bitmap: a row whose bit is clear is the null key,
 * which is one more group (SQL GROUP BY puts all nulls together), numbered where it first occurs.
 *
 * Layout: `slots` is a power-of-two array of uint64, 0 for empty, else (tag << 32) | (id + 1) with
 * tag the high 32 bits of the key's hash. The table indexes by the LOW bits of the hash (the high
 * bits pick the shard, canopy_fastrange32, so inside one shard they barely vary), and a probe
 * compares the tag before touching the stored key, so a collision costs a key comparison only when
 * 32 more bits of hash agree. Keys live once, densely, by group id (`words` or `offsets` + `data`):
 * that is also the table's memory of which key each id stands for. Linear probing; the table
 * doubles when more than half full, rehashing from the stored keys (no per-group hash is kept).
 *
 * Memory per group in words mode: 8 * width bytes of key + 16..32 bytes of slots (load 1/4..1/2),
 * plus what the caller keeps per group (aggregate states).
 *
 * Hashes are the project's row hash (canopy_hash.h): canopy_hash_word per word folded with
 * canopy_hash_combine, canopy_hash_bytes for byte strings.
 *
 * Not thread-safe: one table per thread (a partial aggregate per partition owns its own).
 * Every function that can allocate returns 0, or CANOPY_GB_ENOMEM / CANOPY_GB_ETOOMANY with the
 * table left consistent (the rows before the failing one are inserted, ids written for them).
 */
#ifndef CANOPY_GROUPBY_H
#define CANOPY_GROUPBY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "canopy_hash.h"

#define CANOPY_GB_ENOMEM (-1)
#define CANOPY_GB_ETOOMANY (-2)
/* ids are stored as id + 1 in 32 bits */
#define CANOPY_GB_MAX_GROUPS ((int64_t)UINT32_MAX - 1)
/* rows hashed (and their slots prefetched) ahead of the probes */
#define CANOPY_GB_BLOCK 128

typedef struct {
    uint64_t *slots;
    uint64_t mask;          /* capacity - 1 */
    int64_t ngroups;        /* groups, the null group included */
    int64_t null_group;     /* id of the null key, -1 until one is seen */
    int32_t width;          /* words per key; 0 = bytes mode */
    int64_t key_cap;        /* groups the key storage has room for */
    int64_t *words;         /* words mode: key of group g at words[g * width] */
    int64_t *offsets;       /* bytes mode: key of group g is data[offsets[g] : offsets[g + 1]] */
    uint8_t *data;
    int64_t data_len, data_cap;
    int64_t *fresh;         /* rows that created groups in the last factorize call, in id order */
    int64_t fresh_cap;
} canopy_gb_table;

static inline uint64_t canopy_gb_hash_words(const int64_t *row, int32_t width) {
    uint64_t h = canopy_hash_word((uint64_t)row[0]);
    for (int32_t j = 1; j < width; j++) h = canopy_hash_combine(h, canopy_hash_word((uint64_t)row[j]));
    return h;
}

static inline int canopy_gb_init(canopy_gb_table *t, int32_t width) {
    memset(t, 0, sizeof(*t));
    t->width = width;
    t->null_group = -1;
    t->mask = 1023;
    t->key_cap = 256;
    t->slots = (uint64_t *)calloc(t->mask + 1, sizeof(uint64_t));
    if (width > 0) {
        t->words = (int64_t *)malloc((size_t)t->key_cap * (size_t)width * sizeof(int64_t));
    } else {
        t->offsets = (int64_t *)malloc((size_t)(t->key_cap + 1) * sizeof(int64_t));
        t->data_cap = 4096;
        t->data = (uint8_t *)malloc((size_t)t->data_cap);
    }
    if (t->offsets) t->offsets[0] = 0;
    if (!t->slots || (width > 0 ? !t->words : (!t->offsets || !t->data))) return CANOPY_GB_ENOMEM;
    return 0;
}

static inline void canopy_gb_free(canopy_gb_table *t) {
    free(t->slots);
    free(t->words);
    free(t->offsets);
    free(t->data);
    free(t->fresh);
    t->fresh = NULL;
    t->slots = NULL;
    t->words = t->offsets = NULL;
    t->data = NULL;
}

/* Bytes the table holds, for the memory-per-group figure. */
static inline int64_t canopy_gb_memory(const canopy_gb_table *t) {
    int64_t m = (int64_t)(t->mask + 1) * 8;
    if (t->width > 0) return m + t->key_cap * t->width * 8;
    return m + (t->key_cap + 1) * 8 + t->data_cap;
}

static inline uint64_t canopy_gb_group_hash(const canopy_gb_table *t, int64_t g) {
    if (t->width > 0) return canopy_gb_hash_words(t->words + g * t->width, t->width);
    return canopy_hash_bytes(t->data + t->offsets[g], (size_t)(t->offsets[g + 1] - t->offsets[g]));
}

static inline int canopy_gb_grow_slots(canopy_gb_table *t) {
    uint64_t cap = (t->mask + 1) * 2, mask = cap - 1;
    uint64_t *slots = (uint64_t *)calloc(cap, sizeof(uint64_t));
    if (!slots) return CANOPY_GB_ENOMEM;
    uint64_t *old = t->slots, oldcap = t->mask + 1;
    for (uint64_t s = 0; s < oldcap; s++) {
        uint64_t v = old[s];
        if (!v) continue;
        uint64_t pos = canopy_gb_group_hash(t, (int64_t)(uint32_t)v - 1) & mask;
        while (slots[pos]) pos = (pos + 1) & mask;
        slots[pos] = v;
    }
    free(old);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

static inline int canopy_gb_reserve_keys(canopy_gb_table *t) {
    if (t->ngroups < t->key_cap) return 0;
    int64_t cap = t->key_cap * 2;
    if (t->width > 0) {
        int64_t *w = (int64_t *)realloc(t->words, (size_t)cap * (size_t)t->width * sizeof(int64_t));
        if (!w) return CANOPY_GB_ENOMEM;
        t->words = w;
    } else {
        int64_t *o = (int64_t *)realloc(t->offsets, (size_t)(cap + 1) * sizeof(int64_t));
        if (!o) return CANOPY_GB_ENOMEM;
        t->offsets = o;
    }
    t->key_cap = cap;
    return 0;
}

/* A new group id for row `row` (recorded as t->fresh[(*n_new)++]); the caller stores its key
 * (words or bytes) right after. */
static inline int canopy_gb_new_group(canopy_gb_table *t, int64_t *id, int64_t row, int64_t *n_new) {
    if (t->ngroups >= CANOPY_GB_MAX_GROUPS) return CANOPY_GB_ETOOMANY;
    if (canopy_gb_reserve_keys(t)) return CANOPY_GB_ENOMEM;
    if (*n_new >= t->fresh_cap) {
        int64_t cap = t->fresh_cap ? 2 * t->fresh_cap : 1024;
        int64_t *f = (int64_t *)realloc(t->fresh, (size_t)cap * sizeof(int64_t));
        if (!f) return CANOPY_GB_ENOMEM;
        t->fresh = f;
        t->fresh_cap = cap;
    }
    t->fresh[(*n_new)++] = row;
    *id = t->ngroups++;
    return 0;
}

static inline int canopy_gb_is_valid(const uint8_t *validity, int64_t bit) {
    return !validity || ((validity[bit >> 3] >> (bit & 7)) & 1);
}

/* The null group's id, created on first use. */
static inline int canopy_gb_null_id(canopy_gb_table *t, int64_t *id, int64_t row, int64_t *n_new) {
    if (t->null_group < 0) {
        int rc = canopy_gb_new_group(t, &t->null_group, row, n_new);
        if (rc) return rc;
        if (t->width > 0) {
            memset(t->words + t->null_group * t->width, 0, (size_t)t->width * sizeof(int64_t));
        } else {
            t->offsets[t->null_group + 1] = t->offsets[t->null_group];
        }
    }
    *id = t->null_group;
    return 0;
}

/*
 * Words mode: ids[i] = group of the `width` words at rows + i * width (or of the null key where
 * validity bit bit_offset + i is clear; validity may be NULL). *n_new = groups created by the call;
 * t->fresh[k] = the row that created group (ngroups before the call) + k. `width` is passed separately so that calls with a literal width specialise.
 */
static inline int canopy_gb_factorize_words_w(canopy_gb_table *t, const int32_t width,
                                              const int64_t *rows, const uint8_t *validity,
                                              int64_t bit_offset, int64_t n, int64_t *ids,
                                              int64_t *n_new) {
    uint64_t hashes[CANOPY_GB_BLOCK];
    int rc;
    *n_new = 0;
    for (int64_t start = 0; start < n; start += CANOPY_GB_BLOCK) {
        int64_t m = n - start < CANOPY_GB_BLOCK ? n - start : CANOPY_GB_BLOCK;
        for (int64_t i = 0; i < m; i++) {
            hashes[i] = canopy_gb_hash_words(rows + (start + i) * width, width);
            __builtin_prefetch(&t->slots[hashes[i] & t->mask]);
        }
        for (int64_t i = 0; i < m; i++) {
            const int64_t r = start + i;
            if (!canopy_gb_is_valid(validity, bit_offset + r)) {
                if ((rc = canopy_gb_null_id(t, &ids[r], r, n_new))) return rc;
                continue;
            }
            const int64_t *key = rows + r * width;
            const uint64_t h = hashes[i];
            const uint64_t tag = h >> 32;
            uint64_t pos = h & t->mask;
            for (;;) {
                const uint64_t s = t->slots[pos];
                if (s == 0) {
                    int64_t g;
                    if ((rc = canopy_gb_new_group(t, &g, r, n_new))) return rc;
                    memcpy(t->words + g * width, key, (size_t)width * sizeof(int64_t));
                    t->slots[pos] = (tag << 32) | (uint64_t)(g + 1);
                    ids[r] = g;
                    if ((uint64_t)t->ngroups * 2 > t->mask + 1 && (rc = canopy_gb_grow_slots(t))) return rc;
                    break;
                }
                if ((s >> 32) == tag) {
                    const int64_t g = (int64_t)(uint32_t)s - 1;
                    const int64_t *stored = t->words + g * width;
                    int32_t j = 0;
                    while (j < width && stored[j] == key[j]) j++;
                    if (j == width) {
                        ids[r] = g;
                        break;
                    }
                }
                pos = (pos + 1) & t->mask;
            }
        }
    }
    return 0;
}

static inline int canopy_gb_factorize_words(canopy_gb_table *t, const int64_t *rows,
                                            const uint8_t *validity, int64_t bit_offset, int64_t n,
                                            int64_t *ids, int64_t *n_new) {
    switch (t->width) {
    case 1: return canopy_gb_factorize_words_w(t, 1, rows, validity, bit_offset, n, ids, n_new);
    case 2: return canopy_gb_factorize_words_w(t, 2, rows, validity, bit_offset, n, ids, n_new);
    case 3: return canopy_gb_factorize_words_w(t, 3, rows, validity, bit_offset, n, ids, n_new);
    default:
        return canopy_gb_factorize_words_w(t, t->width, rows, validity, bit_offset, n, ids, n_new);
    }
}

static inline int canopy_gb_append_bytes(canopy_gb_table *t, int64_t g, const uint8_t *p, int64_t len) {
    if (t->data_len + len > t->data_cap) {
        int64_t cap = t->data_cap * 2;
        while (cap < t->data_len + len) cap *= 2;
        uint8_t *d = (uint8_t *)realloc(t->data, (size_t)cap);
        if (!d) return CANOPY_GB_ENOMEM;
        t->data = d;
        t->data_cap = cap;
    }
    if (len) memcpy(t->data + t->data_len, p, (size_t)len);
    t->data_len += len;
    t->offsets[g + 1] = t->data_len;
    return 0;
}

/* Bytes mode: as canopy_gb_factorize_words, row i being data[offsets[i] : offsets[i + 1]]. The
 * caller has checked the offsets (non-decreasing, within data). OFFSET_T: int32_t or int64_t. */
#define CANOPY_GB_DEFINE_FACTORIZE_BYTES(NAME, OFFSET_T)                                              \
static inline int NAME(canopy_gb_table *t, const OFFSET_T *offsets, const uint8_t *data,             \
                       const uint8_t *validity, int64_t bit_offset, int64_t n, int64_t *ids,         \
                       int64_t *n_new) {                                          \
    uint64_t hashes[CANOPY_GB_BLOCK];                                                                \
    int rc;                                                                                          \
    *n_new = 0;                                                                                      \
    for (int64_t start = 0; start < n; start += CANOPY_GB_BLOCK) {                                   \
        int64_t m = n - start < CANOPY_GB_BLOCK ? n - start : CANOPY_GB_BLOCK;                       \
        for (int64_t i = 0; i < m; i++) {                                                            \
            const int64_t r = start + i;                                                             \
            hashes[i] = canopy_hash_bytes(data + offsets[r], (size_t)(offsets[r + 1] - offsets[r])); \
            __builtin_prefetch(&t->slots[hashes[i] & t->mask]);                                      \
        }                                                                                            \
        for (int64_t i = 0; i < m; i++) {                                                            \
            const int64_t r = start + i;                                                             \
            if (!canopy_gb_is_valid(validity, bit_offset + r)) {                                     \
                if ((rc = canopy_gb_null_id(t, &ids[r], r, n_new))) return rc;             \
                continue;                                                                            \
            }                                                                                        \
            const uint8_t *key = data + offsets[r];                                                  \
            const int64_t len = (int64_t)(offsets[r + 1] - offsets[r]);                              \
            const uint64_t h = hashes[i];                                                            \
            const uint64_t tag = h >> 32;                                                            \
            uint64_t pos = h & t->mask;                                                              \
            for (;;) {                                                                               \
                const uint64_t s = t->slots[pos];                                                    \
                if (s == 0) {                                                                        \
                    int64_t g;                                                                       \
                    if ((rc = canopy_gb_new_group(t, &g, r, n_new))) return rc;                                \
                    if ((rc = canopy_gb_append_bytes(t, g, key, len))) {                             \
                        t->ngroups--;                                                                \
                        (*n_new)--;                                                                  \
                        return rc;                                                                   \
                    }                                                                                \
                    t->slots[pos] = (tag << 32) | (uint64_t)(g + 1);                                 \
                    ids[r] = g;                                                                      \
                    if ((uint64_t)t->ngroups * 2 > t->mask + 1 && (rc = canopy_gb_grow_slots(t)))    \
                        return rc;                                                                   \
                    break;                                                                           \
                }                                                                                    \
                if ((s >> 32) == tag) {                                                              \
                    const int64_t g = (int64_t)(uint32_t)s - 1;                                      \
                    const int64_t glen = t->offsets[g + 1] - t->offsets[g];                          \
                    if (glen == len && (len == 0 || memcmp(t->data + t->offsets[g], key, (size_t)len) == 0)) { \
                        ids[r] = g;                                                                  \
                        break;                                                                       \
                    }                                                                                \
                }                                                                                    \
                pos = (pos + 1) & t->mask;                                                           \
            }                                                                                        \
        }                                                                                            \
    }                                                                                                \
    return 0;                                                                                        \
}

CANOPY_GB_DEFINE_FACTORIZE_BYTES(canopy_gb_factorize_bytes32, int32_t)
CANOPY_GB_DEFINE_FACTORIZE_BYTES(canopy_gb_factorize_bytes64, int64_t)

#endif /* CANOPY_GROUPBY_H */
