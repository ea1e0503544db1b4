/* Exact DECIMAL arithmetic on 128-bit scaled integers, with 256-bit intermediates.
 *
 * A decimal128 value is its scaled integer: two little-endian int64 words (low, high). Quotients
 * and products are formed exactly and rounded half away from zero (MySQL's rule); a result whose
 * magnitude does not fit the result's precision is reported, never wrapped.
 *
 * The common case (operands and intermediate below 2**128) runs on the compiler's unsigned
 * __int128; the rest runs on a small unsigned 256-bit type (two u128 halves), whose division is
 * plain shift-and-subtract: slow, but only taken by values of more than ~38 digits in flight.
 */
#ifndef CANOPY_DECIMAL_H
#define CANOPY_DECIMAL_H

#include <stdint.h>

typedef __int128 cd_i128;
typedef unsigned __int128 cd_u128;

typedef struct { cd_u128 hi, lo; } cd_u256;

static inline cd_u128 cd_pow10(int k) {            /* 10**k for 0 <= k <= 38 */
    cd_u128 p = 1;
    for (int i = 0; i < k; i++) p *= 10;
    return p;
}

static inline cd_i128 cd_load(const int64_t *words) {
    return (cd_i128)(((cd_u128)(uint64_t)words[1] << 64) | (cd_u128)(uint64_t)words[0]);
}

static inline void cd_store(int64_t *words, cd_i128 v) {
    words[0] = (int64_t)(uint64_t)(cd_u128)v;
    words[1] = (int64_t)(uint64_t)((cd_u128)v >> 64);
}

/* whether a decimal128 value's high word is its low word's sign extension (it fits int64) */
static inline int cd_fits64(const int64_t *words) {
    return words[1] == (words[0] >> 63);
}

static inline cd_u128 cd_abs(cd_i128 v) {
    return v < 0 ? (cd_u128)0 - (cd_u128)v : (cd_u128)v;
}

/* --- unsigned 256-bit helpers -------------------------------------------------------------- */
static inline int cd_u256_cmp(cd_u256 a, cd_u256 b) {
    if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
    return 0;
}

static inline cd_u256 cd_u256_sub(cd_u256 a, cd_u256 b) {
    cd_u256 r;
    r.lo = a.lo - b.lo;
    r.hi = a.hi - b.hi - (a.lo < b.lo);
    return r;
}

static inline cd_u256 cd_u256_add_small(cd_u256 a, cd_u128 b) {
    cd_u256 r;
    r.lo = a.lo + b;
    r.hi = a.hi + (r.lo < b);
    return r;
}

/* a * b exactly, for a, b < 2**128 */
static inline cd_u256 cd_mul_u128(cd_u128 a, cd_u128 b) {
    uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64), b0 = (uint64_t)b, b1 = (uint64_t)(b >> 64);
    cd_u128 p00 = (cd_u128)a0 * b0, p01 = (cd_u128)a0 * b1, p10 = (cd_u128)a1 * b0, p11 = (cd_u128)a1 * b1;
    cd_u128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10;     /* < 3 * 2**64: no overflow */
    cd_u256 r;
    r.lo = (mid << 64) | (uint64_t)p00;
    r.hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    return r;
}

/* a * m for m < 2**64; returns 0 on overflow past 2**256 */
static inline int cd_u256_mul_u64(cd_u256 *a, uint64_t m) {
    cd_u256 lo = cd_mul_u128(a->lo, m), hi = cd_mul_u128(a->hi, m);
    if (hi.hi != 0) return 0;
    cd_u256 r;
    r.lo = lo.lo;
    r.hi = lo.hi + hi.lo;
    if (r.hi < hi.lo) return 0;
    *a = r;
    return 1;
}

/* a * 10**k; returns 0 on overflow past 2**256 */
static inline int cd_u256_scale10(cd_u256 *a, int k) {
    while (k > 0) {
        int step = k > 19 ? 19 : k;
        if (!cd_u256_mul_u64(a, (uint64_t)cd_pow10(step))) return 0;
        k -= step;
    }
    return 1;
}

/* n / d (d != 0): quotient and remainder by shift-and-subtract over 256 bits */
static inline cd_u256 cd_u256_divmod(cd_u256 n, cd_u256 d, cd_u256 *rem) {
    cd_u256 q = {0, 0}, r = {0, 0};
    for (int i = 255; i >= 0; i--) {
        cd_u128 bit = i >= 128 ? (n.hi >> (i - 128)) & 1 : (n.lo >> i) & 1;
        r.hi = (r.hi << 1) | (r.lo >> 127);
        r.lo = (r.lo << 1) | bit;
        if (cd_u256_cmp(r, d) >= 0) {
            r = cd_u256_sub(r, d);
            if (i >= 128) q.hi |= (cd_u128)1 << (i - 128); else q.lo |= (cd_u128)1 << i;
        }
    }
    *rem = r;
    return q;
}

/* How a quotient's magnitude is rounded: half away from zero (/), toward zero (DIV), or toward
 * minus / plus infinity (FLOOR, CEILING); `negative` is the quotient's sign. */
enum { CD_HALF_AWAY = 0, CD_TRUNCATE = 1, CD_FLOOR = 3, CD_CEILING = 4 };

static inline int cd_round_up(int mode, int negative, int half_or_more, int inexact) {
    switch (mode) {
        case CD_HALF_AWAY: return half_or_more;
        case CD_FLOOR: return negative && inexact;
        case CD_CEILING: return !negative && inexact;
        default: return 0;
    }
}

/* n / d rounded by `mode` into *out; returns 0 when the quotient does not fit below 2**128 */
static inline int cd_u256_div_round(cd_u256 n, cd_u256 d, int mode, int negative, cd_u128 *out) {
    cd_u256 r;
    cd_u256 q = cd_u256_divmod(n, d, &r);
    if (cd_round_up(mode, negative, cd_u256_cmp(r, cd_u256_sub(d, r)) >= 0, r.hi != 0 || r.lo != 0))
        q = cd_u256_add_small(q, 1);
    if (q.hi != 0) return 0;
    *out = q.lo;
    return 1;
}

/* --- the operations ------------------------------------------------------------------------ */
/* a * 10**sa / (b * 10**sb) rounded by `mode` (CD_HALF_AWAY for /, CD_TRUNCATE for DIV, ...) into
 * *out (b != 0). Returns 0 when the magnitude of the result is at least `limit` (the result
 * precision's 10**p) or the intermediate overflows. */
static inline int cd_divide(cd_i128 a, cd_i128 b, int sa, int sb, int mode, cd_u128 limit, cd_i128 *out) {
    int negative = (a < 0) != (b < 0);
    cd_u128 ua = cd_abs(a), ub = cd_abs(b), n, d, q;
    if (sa <= 38 && sb <= 38 && !__builtin_mul_overflow(ua, cd_pow10(sa), &n)
            && !__builtin_mul_overflow(ub, cd_pow10(sb), &d)) {
        q = n / d;
        cd_u128 r = n - q * d;
        if (cd_round_up(mode, negative, r >= d - r, r != 0)) q++;             /* r >= d - r: 2r >= d */
    } else {
        cd_u256 wn = {0, ua}, wd = {0, ub};
        if (!cd_u256_scale10(&wn, sa)) return 0;
        if (!cd_u256_scale10(&wd, sb)) { *out = 0; return 1; }        /* |a| < 2**128 << divisor */
        if (!cd_u256_div_round(wn, wd, mode, negative, &q)) return 0;
    }
    if (q >= limit) return 0;
    *out = negative ? -(cd_i128)q : (cd_i128)q;
    return 1;
}

/* round_half_away(a * b / 10**down) into *out; returns 0 when |result| >= limit. */
static inline int cd_multiply(cd_i128 a, cd_i128 b, int down, cd_u128 limit, cd_i128 *out) {
    int negative = (a < 0) != (b < 0);
    cd_u128 ua = cd_abs(a), ub = cd_abs(b), p, q;
    if (!__builtin_mul_overflow(ua, ub, &p) && down <= 38) {
        if (down == 0) {
            q = p;                      /* no rounding: skip the 128-bit division by 1 */
        } else {
            cd_u128 d = cd_pow10(down);
            q = p / d;
            cd_u128 r = p - q * d;
            if (r >= d - r) q++;
        }
    } else {
        cd_u256 wp = cd_mul_u128(ua, ub), wd = {0, 1};
        if (!cd_u256_scale10(&wd, down)) { *out = 0; return 1; }      /* product < 2**256 << 10**down */
        if (!cd_u256_div_round(wp, wd, CD_HALF_AWAY, negative, &q)) return 0;
    }
    if (q >= limit) return 0;
    *out = negative ? -(cd_i128)q : (cd_i128)q;
    return 1;
}

/* (a * 10**sa) mod (b * 10**sb) into *out (b != 0), with the sign of a (MySQL's %: truncated
 * division). Returns 0 when the remainder does not fit below `limit`. */
static inline int cd_mod(cd_i128 a, cd_i128 b, int sa, int sb, cd_u128 limit, cd_i128 *out) {
    cd_u128 ua = cd_abs(a), ub = cd_abs(b), n, d, r;
    if (sa <= 38 && sb <= 38 && !__builtin_mul_overflow(ua, cd_pow10(sa), &n)
            && !__builtin_mul_overflow(ub, cd_pow10(sb), &d)) {
        r = n % d;
    } else {
        cd_u256 wn = {0, ua}, wd = {0, ub}, wr;
        if (!cd_u256_scale10(&wn, sa)) return 0;
        if (!cd_u256_scale10(&wd, sb)) return 0;
        cd_u256_divmod(wn, wd, &wr);
        if (wr.hi != 0) return 0;
        r = wr.lo;
    }
    if (r >= limit) return 0;
    *out = a < 0 ? -(cd_i128)r : (cd_i128)r;
    return 1;
}

/* --- loops over arrays of words ----------------------------------------------------------- */
/* decimal_divide's operations: /, DIV, %, FLOOR and CEILING (of a / b); but for %, each is also
 * the rounding mode cd_divide takes */
enum { CD_DIVIDE = 0, CD_INT_DIVIDE = 1, CD_MOD = 2, CD_FLOOR_DIVIDE = 3, CD_CEILING_DIVIDE = 4 };

/* `a` and `b` hold two words per row (a step of 0 repeats one value: a scalar operand); `valid`
 * has one byte per row, 0 for a row left alone (a NULL operand). Both loops write `out` (two words
 * per row) and return -1, or the first row whose result does not fit (the rest is left unwritten). */
static inline int64_t cd_divide_words(const int64_t *a, int64_t a_step, const int64_t *b, int64_t b_step,
                                      int64_t n, int sa, int sb, int op, int precision, int64_t *out,
                                      uint8_t *valid) {
    cd_u128 limit = cd_pow10(precision);
    cd_i128 q;
    for (int64_t i = 0; i < n; i++) {
        if (!valid[i]) continue;
        cd_i128 y = cd_load(b + 2 * i * b_step);
        if (y == 0) { valid[i] = 0; continue; }              /* MySQL: x / 0 is NULL */
        int fits = op == CD_MOD ? cd_mod(cd_load(a + 2 * i * a_step), y, sa, sb, limit, &q)
                                : cd_divide(cd_load(a + 2 * i * a_step), y, sa, sb, op, limit, &q);
        if (!fits) return i;
        cd_store(out + 2 * i, q);
    }
    return -1;
}

static inline int64_t cd_multiply_words(const int64_t *a, int64_t a_step, const int64_t *b, int64_t b_step,
                                        int64_t n, int down, int precision, int64_t *out,
                                        const uint8_t *valid) {
    cd_u128 limit = cd_pow10(precision);
    cd_i128 p;
    for (int64_t i = 0; i < n; i++) {
        if (!valid[i]) continue;
        const int64_t *x = a + 2 * i * a_step, *y = b + 2 * i * b_step;
        if (down == 0 && cd_fits64(x) && cd_fits64(y)) {
            p = (cd_i128)x[0] * (cd_i128)y[0];         /* |p| <= 2**126: one 64x64->128 product */
            if (cd_abs(p) >= limit) return i;
        } else if (!cd_multiply(cd_load(x), cd_load(y), down, limit, &p)) {
            return i;
        }
        cd_store(out + 2 * i, p);
    }
    return -1;
}

/* a * 10**shift_a + b * 10**shift_b (or minus, `subtract`) per row, exact: the sum or difference
 * of two decimals brought to the result's scale (shifts 0..38). Returns -1, or the first row whose
 * result is at least 10**precision in magnitude or overflows 128 bits (the rest left unwritten). */
static inline int64_t cd_add_words(const int64_t *a, int64_t a_step, const int64_t *b, int64_t b_step,
                                   int64_t n, int shift_a, int shift_b, int subtract, int precision,
                                   int64_t *out, const uint8_t *valid) {
    cd_u128 limit = cd_pow10(precision);
    cd_i128 fa = (cd_i128)cd_pow10(shift_a), fb = (cd_i128)cd_pow10(shift_b);
    /* both factors below 2**62: int64 operands scale and add without overflowing 128 bits */
    int small = shift_a <= 18 && shift_b <= 18;
    int64_t fa64 = (int64_t)fa, fb64 = (int64_t)fb;
    cd_i128 r, u, v;
    for (int64_t i = 0; i < n; i++) {
        if (!valid[i]) continue;
        const int64_t *x = a + 2 * i * a_step, *y = b + 2 * i * b_step;
        if (small && cd_fits64(x) && cd_fits64(y)) {
            u = (cd_i128)x[0] * fa64;
            v = (cd_i128)y[0] * fb64;
            r = subtract ? u - v : u + v;
        } else {
            if (__builtin_mul_overflow(cd_load(x), fa, &u) || __builtin_mul_overflow(cd_load(y), fb, &v))
                return i;
            if (subtract ? __builtin_sub_overflow(u, v, &r) : __builtin_add_overflow(u, v, &r)) return i;
        }
        if (cd_abs(r) >= limit) return i;
        cd_store(out + 2 * i, r);
    }
    return -1;
}

#endif
