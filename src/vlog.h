/* vlog.h -- the natural log of four doubles at a time (GCC's vector
 * extension), for loops that take one per entry (the I-divergence's loss,
 * linalg.c). */
#ifndef BNMF_VLOG_H
#define BNMF_VLOG_H

#include "bnmf.h"

#if defined(__GNUC__)
/* log r, four values at a time, for r positive, normal and finite (the
 * caller checks). With r = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1
 * (exact) and s = f / (2 + f), log m = 2 atanh(s) = 2 s + 2 s sum_{n >= 1}
 * s^(2n) / (2n + 1) = f - s (f - P), P = 2 sum_n s^(2n) / (2n + 1), taken to
 * n = 9 (|s| <= 0.1716: the rest below 2^-55 of the result); then e log 2
 * added in two parts, the first with 42 significant bits, so that e times
 * it is exact. f is exact and the correction s (f - P) at most 0.18 f, so
 * the result is within about one ulp (tested against R's log()). */
static ALWAYS_INLINE void bnmf_log4(bnmf_v4 *lg, const bnmf_v4 *rp)
{
    const bnmf_v4 r = *rp;
    const bnmf_v4i u = (bnmf_v4i) r;
    const bnmf_v4i mant = (u & 0x000FFFFFFFFFFFFFLL) | 0x3FF0000000000000LL;
    const bnmf_v4i ex = (u >> 52) & 0x7FF;
    bnmf_v4 m = (bnmf_v4) mant;
    /* e = ex - 1023 as a double: 2^52 + ex from its bits, less 2^52 + 1023 */
    bnmf_v4 e = (bnmf_v4) (ex | 0x4330000000000000LL) - (0x1p52 + 1023.0);
    const bnmf_v4i big = m > 1.4142135623730951;
    const bnmf_v4 one = {1.0, 1.0, 1.0, 1.0};
    m = (bnmf_v4) (((bnmf_v4i) m & ~big) | ((bnmf_v4i) (0.5 * m) & big));
    e += (bnmf_v4) ((bnmf_v4i) one & big);
    const bnmf_v4 f = m - 1.0;
    const bnmf_v4 sv = f / (2.0 + f), z = sv * sv;
    const bnmf_v4 P =
        z * (2.0 / 3 + z * (2.0 / 5 + z * (2.0 / 7 + z * (2.0 / 9 + z * (2.0 / 11 +
        z * (2.0 / 13 + z * (2.0 / 15 + z * (2.0 / 17 + z * (2.0 / 19)))))))));
    const double ln2_hi = 0x1.62e42fefa3800p-1, ln2_lo = 0x1.ef35793c76730p-45;
    *lg = e * ln2_hi + (f - (sv * (f - P) - e * ln2_lo));
}
#endif

#endif
