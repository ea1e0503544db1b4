/*
 * canopy_bitpack.h -- frame-of-reference bit-packing of 64-value blocks.
 *
 * Format (the contract kernels/reference/bitpack.py recomputes bit for bit, and that stored
 * segments depend on):
 *
 *   value i is stored as the delta d_i = value_i - base (wrapping, in uint64), which must fit in
 *   w bits (0 <= w <= 64), at bits [i*w, i*w + w) of one little-endian bit stream: bit k of the
 *   stream is bit (k % 64) of word k / 64. n values take canopy_bp_words(n, w) = ceil(n*w / 64)
 *   uint64 words; bits past n*w in the last word are zero.
 *
 * Because 64 values of w bits are exactly w words, block b of 64 values owns words [b*w, b*w + w)
 * and the block functions below need no bit offset. canopy_bp_pack_block / canopy_bp_unpack_block
 * switch once per block on w into a copy of the block loop with w a compile-time constant, fully
 * unrolled, so every shift and word index folds to a constant: straight-line shifts and ors, no
 * branches, in portable C (no intrinsics, no -march needed).
 *
 * Everything is static inline: this header is the single definition, included by
 * kernels/bitpack.pyx through kernels/bitpack.pxd.
 */
#ifndef CANOPY_BITPACK_H
#define CANOPY_BITPACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CANOPY_BP_BLOCK 64

#if defined(__clang__)
#define CANOPY_BP_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define CANOPY_BP_UNROLL _Pragma("GCC unroll 64")
#else
#define CANOPY_BP_UNROLL
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CANOPY_BP_INLINE static inline __attribute__((always_inline))
#else
#define CANOPY_BP_INLINE static inline
#endif

/* Words needed for n values of w bits. n * w cannot overflow for any array that fits in memory. */
static inline size_t canopy_bp_words(size_t n, unsigned w) { return (n * (size_t)w + 63) / 64; }

/* Bits needed for deltas up to `range` (0 for 0). */
static inline unsigned canopy_bp_width(uint64_t range) {
    return range ? 64u - (unsigned)__builtin_clzll(range) : 0u;
}

/* Pack 64 deltas, each < 2^w, into out[0..w). 0 < w < 64. */
CANOPY_BP_INLINE void canopy_bp_pack_block_w(const uint64_t *in, uint64_t *out, const unsigned w) {
    uint64_t acc = 0;
    unsigned fill = 0, o = 0;
    CANOPY_BP_UNROLL
    for (unsigned i = 0; i < CANOPY_BP_BLOCK; i++) {
        uint64_t v = in[i];
        acc |= v << fill;
        fill += w;
        if (fill >= 64) {
            out[o++] = acc;
            fill -= 64;
            /* The bits of v that did not fit start the next word. */
            acc = fill ? v >> (w - fill) : 0;
        }
    }
}

/* Unpack 64 values of w bits from in[0..w) into out[0..64). 0 < w < 64. */
CANOPY_BP_INLINE void canopy_bp_unpack_block_w(const uint64_t *in, uint64_t *out, const unsigned w) {
    const uint64_t mask = (UINT64_C(1) << w) - 1;
    CANOPY_BP_UNROLL
    for (unsigned i = 0; i < CANOPY_BP_BLOCK; i++) {
        unsigned bit = i * w, word = bit >> 6, shift = bit & 63;
        uint64_t v = in[word] >> shift;
        if (shift + w > 64) v |= in[word + 1] << (64 - shift);
        out[i] = v & mask;
    }
}

#define CANOPY_BP_CASES(X)                                                                         \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17)     \
    X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32) X(33) \
    X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) X(48) X(49) \
    X(50) X(51) X(52) X(53) X(54) X(55) X(56) X(57) X(58) X(59) X(60) X(61) X(62) X(63)

#define CANOPY_BP_PACK_CASE(W)                                                                     \
    case W:                                                                                        \
        canopy_bp_pack_block_w(in, out, W);                                                        \
        return;
#define CANOPY_BP_UNPACK_CASE(W)                                                                   \
    case W:                                                                                        \
        canopy_bp_unpack_block_w(in, out, W);                                                      \
        return;

/* Pack one full block of 64 deltas (each < 2^w) into out[0..w). */
static inline void canopy_bp_pack_block(const uint64_t *in, uint64_t *out, unsigned w) {
    switch (w) {
    case 0:
        return;
    case 64:
        memcpy(out, in, CANOPY_BP_BLOCK * sizeof(uint64_t));
        return;
        CANOPY_BP_CASES(CANOPY_BP_PACK_CASE)
    default:
        return;
    }
}

/* Unpack one full block: out[0..64) from in[0..w). */
static inline void canopy_bp_unpack_block(const uint64_t *in, uint64_t *out, unsigned w) {
    switch (w) {
    case 0:
        memset(out, 0, CANOPY_BP_BLOCK * sizeof(uint64_t));
        return;
    case 64:
        memcpy(out, in, CANOPY_BP_BLOCK * sizeof(uint64_t));
        return;
        CANOPY_BP_CASES(CANOPY_BP_UNPACK_CASE)
    default:
        return;
    }
}

/* Pack the last r < 64 deltas: out gets canopy_bp_words(r, w) words, zero past r*w bits. */
static inline void canopy_bp_pack_tail(const uint64_t *in, size_t r, uint64_t *out, unsigned w) {
    uint64_t block[CANOPY_BP_BLOCK] = {0}, words[CANOPY_BP_BLOCK];
    memcpy(block, in, r * sizeof(uint64_t));
    canopy_bp_pack_block(block, words, w);
    memcpy(out, words, canopy_bp_words(r, w) * sizeof(uint64_t));
}

/* Unpack the last r < 64 values from canopy_bp_words(r, w) words into out[0..r). */
static inline void canopy_bp_unpack_tail(const uint64_t *in, size_t r, uint64_t *out, unsigned w) {
    uint64_t words[CANOPY_BP_BLOCK] = {0}, block[CANOPY_BP_BLOCK];
    memcpy(words, in, canopy_bp_words(r, w) * sizeof(uint64_t));
    canopy_bp_unpack_block(words, block, w);
    memcpy(out, block, r * sizeof(uint64_t));
}

#endif /* CANOPY_BITPACK_H */
