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
 * Inline mode (width 1 only, opt-in with canopy_gb_init_inline): a slot is two words, the key itself
 * and id + 1 (0 for empty), so a probe compares the key in the slot's own cache line instead of
 * loading words[g] from elsewhere: one cache miss per row instead of two once the table outgrows
 * the cache. The keys are still stored by id in `words`. canopy_join.h reads the default layout
 * only: a join's table is never inline.
 *
 * canopy_gb_reserve sizes a table for a number of groups up front (one allocation instead of a
 * rehash per doubling) when the caller knows or has estimated how many will come.
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

#if defined(__linux__)
#include <sys/mman.h>
#endif

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
    int32_t inline_key;     /* inline mode: slot s is slots[2s] = key, slots[2s + 1] = id + 1 */
} canopy_gb_table;

/* Slot arrays of 2 MiB and more are 2 MiB-aligned and asked to be backed by transparent huge
 * pages: a probe is a random access, and with 4 KiB pages a table of tens of MiB costs a TLB miss
 * on nearly every probe and a page fault per 4 KiB on first touch. Freed with free(). */
static inline void *canopy_gb_alloc_slots(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= ((size_t)1 << 21)) {
        void *p = NULL;
        if (posix_memalign(&p, (size_t)1 << 21, bytes)) return NULL;
        madvise(p, bytes, MADV_HUGEPAGE);
        return p;
    }
#endif
    return malloc(bytes);
}

static inline void *canopy_gb_zeroed_slots(size_t bytes) {
    void *p = canopy_gb_alloc_slots(bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

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

/* An inline-mode table (width 1); see the header comment. */
static inline int canopy_gb_init_inline(canopy_gb_table *t) {
    int rc = canopy_gb_init(t, 1);
    if (rc) return rc;
    free(t->slots);
    t->inline_key = 1;
    t->slots = (uint64_t *)canopy_gb_zeroed_slots(2 * (t->mask + 1) * sizeof(uint64_t));
    return t->slots ? 0 : CANOPY_GB_ENOMEM;
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
    int64_t m = (int64_t)(t->mask + 1) * (t->inline_key ? 16 : 8);
    if (t->width > 0) return m + t->key_cap * t->width * 8;
    return m + (t->key_cap + 1) * 8 + t->data_cap;
}

static inline uint64_t canopy_gb_group_hash(const canopy_gb_table *t, int64_t g) {
    if (t->width > 0) return canopy_gb_hash_words(t->words + g * t->width, t->width);
    return canopy_hash_bytes(t->data + t->offsets[g], (size_t)(t->offsets[g + 1] - t->offsets[g]));
}

/* Rehash into `cap` slots (a power of two above the group count). The inline layout moves keys in
 * blocks: hashed and their new slots prefetched, then placed. */
static inline int canopy_gb_resize_slots(canopy_gb_table *t, uint64_t cap) {
    const uint64_t mask = cap - 1, oldcap = t->mask + 1;
    uint64_t *old = t->slots;
    uint64_t *slots = (uint64_t *)canopy_gb_zeroed_slots((t->inline_key ? 2 * cap : cap) * sizeof(uint64_t));
    if (!slots) return CANOPY_GB_ENOMEM;
    if (t->inline_key) {
        uint64_t hashes[CANOPY_GB_BLOCK], from[CANOPY_GB_BLOCK];
        uint64_t s = 0;
        while (s < oldcap) {
            int m = 0;
            for (; s < oldcap && m < CANOPY_GB_BLOCK; s++) {
                if (!old[2 * s + 1]) continue;
                from[m] = s;
                hashes[m] = canopy_hash_word(old[2 * s]) & mask;
                __builtin_prefetch(&slots[2 * hashes[m]], 1);
                m++;
            }
            for (int i = 0; i < m; i++) {
                uint64_t pos = hashes[i];
                while (slots[2 * pos + 1]) pos = (pos + 1) & mask;
                slots[2 * pos] = old[2 * from[i]];
                slots[2 * pos + 1] = old[2 * from[i] + 1];
            }
        }
    } else {
        /* By group id, not by old slot: the keys are read in order (a walk of the old slots read
         * each group's key at a random place, a cache miss per group on every doubling), and the
         * new slots of a block are prefetched before they are filled. The null group has no slot. */
        uint64_t hashes[CANOPY_GB_BLOCK];
        for (int64_t start = 0; start < t->ngroups; start += CANOPY_GB_BLOCK) {
            int64_t m = t->ngroups - start < CANOPY_GB_BLOCK ? t->ngroups - start : CANOPY_GB_BLOCK;
            for (int64_t i = 0; i < m; i++) {
                hashes[i] = canopy_gb_group_hash(t, start + i);
                __builtin_prefetch(&slots[hashes[i] & mask], 1);
            }
            for (int64_t i = 0; i < m; i++) {
                const int64_t g = start + i;
                if (g == t->null_group) continue;
                uint64_t pos = hashes[i] & mask;
                while (slots[pos]) pos = (pos + 1) & mask;
                slots[pos] = ((hashes[i] >> 32) << 32) | (uint64_t)(g + 1);
            }
        }
    }
    free(old);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

static inline int canopy_gb_grow_slots(canopy_gb_table *t) {
    return canopy_gb_resize_slots(t, (t->mask + 1) * 2);
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

/* Room for `groups` groups in all: slots at load <= 1/2 (one rehash, straight to the size) and,
 * in words mode, the key storage. Never shrinks. */
static inline int canopy_gb_reserve(canopy_gb_table *t, int64_t groups) {
    if (groups > CANOPY_GB_MAX_GROUPS) groups = CANOPY_GB_MAX_GROUPS;
    uint64_t cap = t->mask + 1;
    while ((uint64_t)groups * 2 > cap) cap *= 2;
    if (cap != t->mask + 1) {
        int rc = canopy_gb_resize_slots(t, cap);
        if (rc) return rc;
    }
    if (t->width > 0 && groups > t->key_cap) {
        int64_t *w = (int64_t *)realloc(t->words, (size_t)groups * (size_t)t->width * sizeof(int64_t));
        if (!w) return CANOPY_GB_ENOMEM;
        t->words = w;
        t->key_cap = groups;
    }
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

/* Inline mode: as canopy_gb_factorize_words for one-word keys. The table grows before each block
 * rather than inside it, so the slots prefetched for the block are the ones probed. */
static inline int canopy_gb_factorize_inline(canopy_gb_table *t, const int64_t *rows,
                                             const uint8_t *validity, int64_t bit_offset, int64_t n,
                                             int64_t *ids, int64_t *n_new) {
    uint64_t hashes[CANOPY_GB_BLOCK];
    int rc;
    *n_new = 0;
    for (int64_t start = 0; start < n; start += CANOPY_GB_BLOCK) {
        int64_t m = n - start < CANOPY_GB_BLOCK ? n - start : CANOPY_GB_BLOCK;
        while ((uint64_t)(t->ngroups + m) * 2 > t->mask + 1)
            if ((rc = canopy_gb_grow_slots(t))) return rc;
        uint64_t *slots = t->slots;
        const uint64_t mask = t->mask;
        for (int64_t i = 0; i < m; i++) {
            hashes[i] = canopy_hash_word((uint64_t)rows[start + i]);
            __builtin_prefetch(&slots[2 * (hashes[i] & mask)]);
        }
        for (int64_t i = 0; i < m; i++) {
            const int64_t r = start + i;
            if (!canopy_gb_is_valid(validity, bit_offset + r)) {
                if ((rc = canopy_gb_null_id(t, &ids[r], r, n_new))) return rc;
                continue;
            }
            const uint64_t key = (uint64_t)rows[r];
            uint64_t pos = hashes[i] & mask;
            for (;;) {
                uint64_t *s = slots + 2 * pos;
                if (s[1] == 0) {
                    int64_t g;
                    if ((rc = canopy_gb_new_group(t, &g, r, n_new))) return rc;
                    t->words[g] = (int64_t)key;
                    s[0] = key;
                    s[1] = (uint64_t)g + 1;
                    ids[r] = g;
                    break;
                }
                if (s[0] == key) {
                    ids[r] = (int64_t)s[1] - 1;
                    break;
                }
                pos = (pos + 1) & mask;
            }
        }
    }
    return 0;
}

static inline int canopy_gb_factorize_words(canopy_gb_table *t, const int64_t *rows,
                                            const uint8_t *validity, int64_t bit_offset, int64_t n,
                                            int64_t *ids, int64_t *n_new) {
    if (t->inline_key) return canopy_gb_factorize_inline(t, rows, validity, bit_offset, n, ids, n_new);
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

/*
 * canopy_ds_set -- a set of int64 keys that only counts them: COUNT(DISTINCT integer column).
 *
 * No ids, no payload: a slot is the key itself (CANOPY_DS_EMPTY for an empty slot; the key with
 * that value is remembered by a flag), so an insert is one hash and one probe of one cache line.
 * Indexed by the low bits of canopy_hash_word, linear probing, load <= 1/2 (8..16 bytes per key);
 * it grows before each block of CANOPY_GB_BLOCK rows, never inside one, so the slots prefetched for
 * the block are the ones probed. canopy_ds_reserve sizes it once for a known number of keys.
 * Return codes as the group-by table's. Not thread-safe.
 */
#define CANOPY_DS_EMPTY INT64_MIN

typedef struct {
    int64_t *slots;
    uint64_t mask;
    int64_t size;            /* keys in slots (the CANOPY_DS_EMPTY key not included) */
    int32_t has_empty_key;   /* CANOPY_DS_EMPTY itself was inserted */
} canopy_ds_set;

static inline int canopy_ds_alloc(canopy_ds_set *t, uint64_t cap) {
    int64_t *slots = (int64_t *)canopy_gb_alloc_slots((size_t)cap * sizeof(int64_t));
    if (!slots) return CANOPY_GB_ENOMEM;
    for (uint64_t s = 0; s < cap; s++) slots[s] = CANOPY_DS_EMPTY;
    int64_t *old = t->slots;
    const uint64_t oldcap = old ? t->mask + 1 : 0, mask = cap - 1;
    uint64_t hashes[CANOPY_GB_BLOCK];
    int64_t keys[CANOPY_GB_BLOCK];
    uint64_t s = 0;
    while (s < oldcap) {       /* in blocks: hashed, new slots prefetched, then placed */
        int m = 0;
        for (; s < oldcap && m < CANOPY_GB_BLOCK; s++) {
            if (old[s] == CANOPY_DS_EMPTY) continue;
            keys[m] = old[s];
            hashes[m] = canopy_hash_word((uint64_t)old[s]) & mask;
            __builtin_prefetch(&slots[hashes[m]], 1);
            m++;
        }
        for (int i = 0; i < m; i++) {
            uint64_t pos = hashes[i];
            while (slots[pos] != CANOPY_DS_EMPTY) pos = (pos + 1) & mask;
            slots[pos] = keys[i];
        }
    }
    free(old);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

static inline int canopy_ds_init(canopy_ds_set *t) {
    memset(t, 0, sizeof(*t));
    return canopy_ds_alloc(t, 1024);
}

static inline void canopy_ds_free(canopy_ds_set *t) {
    free(t->slots);
    t->slots = NULL;
}

/* Room for `keys` keys at load <= 1/2 (one rehash straight to the size). Never shrinks. */
static inline int canopy_ds_reserve(canopy_ds_set *t, int64_t keys) {
    uint64_t cap = t->mask + 1;
    while ((uint64_t)keys * 2 > cap) cap *= 2;
    return cap == t->mask + 1 ? 0 : canopy_ds_alloc(t, cap);
}

/* Distinct keys inserted so far. */
static inline int64_t canopy_ds_count(const canopy_ds_set *t) { return t->size + t->has_empty_key; }

/* Insert keys[i] for the n rows (rows whose validity bit bit_offset + i is clear are skipped;
 * validity may be NULL). */
static inline int canopy_ds_insert(canopy_ds_set *t, const int64_t *keys, const uint8_t *validity,
                                   int64_t bit_offset, int64_t n) {
    uint64_t hashes[CANOPY_GB_BLOCK];
    int rc;
    for (int64_t start = 0; start < n; start += CANOPY_GB_BLOCK) {
        const int64_t m = n - start < CANOPY_GB_BLOCK ? n - start : CANOPY_GB_BLOCK;
        if ((uint64_t)(t->size + m) * 2 > t->mask + 1 && (rc = canopy_ds_reserve(t, t->size + m)))
            return rc;
        int64_t *slots = t->slots;
        const uint64_t mask = t->mask;
        const int64_t *block = keys + start;
        for (int64_t i = 0; i < m; i++) {
            hashes[i] = canopy_hash_word((uint64_t)block[i]);
            __builtin_prefetch(&slots[hashes[i] & mask], 1);
        }
        for (int64_t i = 0; i < m; i++) {
            if (!canopy_gb_is_valid(validity, bit_offset + start + i)) continue;
            const int64_t k = block[i];
            if (k == CANOPY_DS_EMPTY) {
                t->has_empty_key = 1;
                continue;
            }
            uint64_t pos = hashes[i] & mask;
            for (;;) {
                const int64_t s = slots[pos];
                if (s == k) break;
                if (s == CANOPY_DS_EMPTY) {
                    slots[pos] = k;
                    t->size++;
                    break;
                }
                pos = (pos + 1) & mask;
            }
        }
    }
    return 0;
}

#endif /* CANOPY_GROUPBY_H */
