/*
 * cond_sub.c -- the conditional of a row with a few missing entries without
 * forming its Gram matrix: the full Gram matrix less the terms of the
 * gathered missing vectors (cond_sub in cond.h; ICM and VB,
 * bnmf_cond_row_sub), and the multiplicative rule's masked row
 * (bnmf_mult_row_masked).
 */
#include "bnmf_call.h"
#include "cond_kern.h"
#include <string.h>


/* cond_sub's vectors are stored np = nm rounded up to even apart, zero
 * padded, so that its loops run two values at a time */
static inline int sub_stride(int nm)
{
    return (nm + 1) & ~1;
}

/* r += a o over np (even) values when a != 0 (o NULL: a must be 0), then
 * c = o2' r (o2 NULL: 0), in eight partial sums (the lanes of two four-value
 * vectors: an addition's latency would otherwise bound the loop), then two
 * at a time, folded as ((s0 + s1) + (s2 + s3)). With sq (a constant where
 * inlined), *osq = o2' o2 from the same loads in the same partial sums. r is
 * only read when a = 0. */
static ALWAYS_INLINE double axpy_dot_loop(double *r, const double *o, double a,
                                          const double *o2, int np, double *osq,
                                          const int sq, const int upd)
{
#if defined(__GNUC__)
    typedef double v2u __attribute__((vector_size(16), aligned(8)));
    bnmf_v4 S0 = {0.0, 0.0, 0.0, 0.0}, S1 = S0, Q0 = S0, Q1 = S0;
    const bnmf_v4 av4 = {a, a, a, a};
    const v2u av = {a, a};
    int t = 0;
    if (!o2) {
        if (!upd) return 0.0;
        for (; t + 4 <= np; t += 4) {
            bnmf_v4 r0 = *(bnmf_v4 *) (r + t);
            r0 += av4 * *(const bnmf_v4 *) (o + t);
            *(bnmf_v4 *) (r + t) = r0;
        }
        if (t < np) {
            v2u r0 = *(v2u *) (r + t);
            r0 += av * *(const v2u *) (o + t);
            *(v2u *) (r + t) = r0;
        }
        return 0.0;
    }
    for (; t + 8 <= np; t += 8) {
        bnmf_v4 r0 = *(bnmf_v4 *) (r + t), r1 = *(bnmf_v4 *) (r + t + 4);
        if (upd) {
            r0 += av4 * *(const bnmf_v4 *) (o + t);
            r1 += av4 * *(const bnmf_v4 *) (o + t + 4);
            *(bnmf_v4 *) (r + t) = r0;
            *(bnmf_v4 *) (r + t + 4) = r1;
        }
        const bnmf_v4 p0 = *(const bnmf_v4 *) (o2 + t);
        const bnmf_v4 p1 = *(const bnmf_v4 *) (o2 + t + 4);
        S0 += p0 * r0;
        S1 += p1 * r1;
        if (sq) {
            Q0 += p0 * p0;
            Q1 += p1 * p1;
        }
    }
    v2u s0 = {S0[0], S0[1]}, s1 = {S0[2], S0[3]}, s2 = {S1[0], S1[1]}, s3 = {S1[2], S1[3]};
    v2u q0 = {Q0[0], Q0[1]}, q1 = {Q0[2], Q0[3]}, q2 = {Q1[0], Q1[1]}, q3 = {Q1[2], Q1[3]};
    for (; t < np; t += 2) {
        v2u r0 = *(v2u *) (r + t);
        if (upd) {
            r0 += av * *(const v2u *) (o + t);
            *(v2u *) (r + t) = r0;
        }
        const v2u p0 = *(const v2u *) (o2 + t);
        s0 += p0 * r0;
        if (sq) q0 += p0 * p0;
    }
    s0 += s1;
    s2 += s3;
    s0 += s2;
    if (sq) {
        q0 += q1;
        q2 += q3;
        q0 += q2;
        *osq = q0[0] + q0[1];
    }
    return s0[0] + s0[1];
#else
    double c = 0.0, q = 0.0;
    for (int t = 0; t < np; t++) {
        if (upd) r[t] += a * o[t];
        if (o2) c += o2[t] * r[t];
        if (sq && o2) q += o2[t] * o2[t];
    }
    if (sq) *osq = q;
    return c;
#endif
}

/* axpy_dot_loop with the update's test (a != 0) out of its loops */
static ALWAYS_INLINE double axpy_dot_body(double *r, const double *o, double a,
                                          const double *o2, int np, double *osq,
                                          const int sq)
{
    return a != 0.0 ? axpy_dot_loop(r, o, a, o2, np, osq, sq, 1)
                    : axpy_dot_loop(r, o, a, o2, np, osq, sq, 0);
}

/* sum_t a[t] b[t] over np (even) values, in axpy_dot_body's partial sums */
BNMF_CLONES static double dot_even(const double *a, const double *b, int np)
{
    return axpy_dot_body((double *) b, NULL, 0.0, a, np, NULL, 0);
}

/* r += a o (a = 0: r unchanged), then o2' r (o2 NULL: 0); np even */
BNMF_CLONES static double sub_axpy_dot(double *r, const double *o, double a,
                                       const double *o2, int np)
{
    return axpy_dot_body(r, o, a, o2, np, NULL, 0);
}

/* sub_axpy_dot, and *osq = o2' o2 (o2 not NULL), the value dot_even(o2, o2,
 * np) gives */
BNMF_CLONES static double sub_axpy_dot_sq(double *r, const double *o, double a,
                                          const double *o2, int np, double *osq)
{
    return axpy_dot_body(r, o, a, o2, np, osq, 1);
}

/* The vectors other + idx[t] K (K contiguous values each) by coordinate
 * into O (np apart, zero padded): one store per four values; and r[t] =
 * z' o_t, summed over k in order as it is stored (the values of r = 0 and
 * then r += z_k o_k for k = 0, 1, ...: zero terms add nothing, as the
 * values are finite), r[nm] = 0 when np > nm. */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define BNMF_HAVE_SHUF 1
#define BNMF_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#endif

#if defined(__GNUC__)
typedef double gat_v2 __attribute__((vector_size(16), aligned(8)));

/* Coordinate k of the four vectors other + idx[0..3] K into Ot[k np], and
 * *R += z_k times it */
static ALWAYS_INLINE void gather_one(double *restrict Ot, int np,
                                     const double *restrict other,
                                     const int *restrict idx, int K, int k,
                                     const double *restrict z, bnmf_v4 *R)
{
    const double *o0 = other + (size_t) idx[0] * K, *o1 = other + (size_t) idx[1] * K;
    const double *o2 = other + (size_t) idx[2] * K, *o3 = other + (size_t) idx[3] * K;
    const bnmf_v4 c0 = {o0[k], o1[k], o2[k], o3[k]}, z0 = {z[k], z[k], z[k], z[k]};
    *(bnmf_v4 *) (Ot + (size_t) k * np) = c0;
    *R += z0 * c0;
}

#if defined(BNMF_HAVE_SHUF)
/* gather_one for coordinates k and k + 1, read as pairs, {o0[k], o0[k + 1],
 * o2[k], o2[k + 1]} and the same of o1 and o3, and interleaved into the two
 * stores (a 4 x 2 transpose: two shuffles for eight values, where building
 * each store from four scalars took three) */
static ALWAYS_INLINE void gather_pair(double *restrict Ot, int np,
                                      const double *restrict other,
                                      const int *restrict idx, int K, int k,
                                      const double *restrict z, bnmf_v4 *R)
{
    const double *o0 = other + (size_t) idx[0] * K, *o1 = other + (size_t) idx[1] * K;
    const double *o2 = other + (size_t) idx[2] * K, *o3 = other + (size_t) idx[3] * K;
    const gat_v2 p0 = *(const gat_v2 *) (o0 + k), p1 = *(const gat_v2 *) (o1 + k);
    const gat_v2 p2 = *(const gat_v2 *) (o2 + k), p3 = *(const gat_v2 *) (o3 + k);
    const bnmf_v4 a = BNMF_SHUF(p0, p2, 0, 1, 2, 3), b = BNMF_SHUF(p1, p3, 0, 1, 2, 3);
    const bnmf_v4 c0 = BNMF_SHUF(a, b, 0, 4, 2, 6), c1 = BNMF_SHUF(a, b, 1, 5, 3, 7);
    const bnmf_v4 z0 = {z[k], z[k], z[k], z[k]};
    const bnmf_v4 z1 = {z[k + 1], z[k + 1], z[k + 1], z[k + 1]};
    *(bnmf_v4 *) (Ot + (size_t) k * np) = c0;
    *(bnmf_v4 *) (Ot + (size_t) (k + 1) * np) = c1;
    *R += z0 * c0;
    *R += z1 * c1;
}
#endif
#endif

BNMF_CLONES static void sub_gather(double *restrict O, int np,
                                   const double *restrict other,
                                   const int *restrict idx, int nm, int K,
                                   const double *restrict z, double *restrict r)
{
    int t = 0;
#if defined(__GNUC__)
    typedef bnmf_v4 bnmf_v4;
#if defined(BNMF_HAVE_SHUF)
    /* four vectors at a time, coordinate k of all four in one store, two
     * coordinates at a time (gather_pair) */
    for (; t + 8 <= nm; t += 8) {
        /* two groups of four side by side: the sums of r, k after k, are
         * two chains instead of one */
        bnmf_v4 RA = {0.0, 0.0, 0.0, 0.0}, RB = RA;
        int k = 0;
        for (; k + 2 <= K; k += 2) {
            gather_pair(O + t, np, other, idx + t, K, k, z, &RA);
            gather_pair(O + t + 4, np, other, idx + t + 4, K, k, z, &RB);
        }
        if (k < K) {
            gather_one(O + t, np, other, idx + t, K, k, z, &RA);
            gather_one(O + t + 4, np, other, idx + t + 4, K, k, z, &RB);
        }
        *(bnmf_v4 *) (r + t) = RA;
        *(bnmf_v4 *) (r + t + 4) = RB;
    }
    for (; t + 4 <= nm; t += 4) {
        bnmf_v4 R = {0.0, 0.0, 0.0, 0.0};
        int k = 0;
        for (; k + 2 <= K; k += 2) gather_pair(O + t, np, other, idx + t, K, k, z, &R);
        if (k < K) gather_one(O + t, np, other, idx + t, K, k, z, &R);
        *(bnmf_v4 *) (r + t) = R;
    }
#else
    /* four vectors at a time: coordinate k of all four in one store */
    for (; t + 4 <= nm; t += 4) {
        bnmf_v4 R = {0.0, 0.0, 0.0, 0.0};
        for (int k = 0; k < K; k++) gather_one(O + t, np, other, idx + t, K, k, z, &R);
        *(bnmf_v4 *) (r + t) = R;
    }
#endif
#endif
    for (; t < nm; t++) {
        const double *o = other + (size_t) idx[t] * K;
        double s = 0.0;
        for (int k = 0; k < K; k++) {
            O[t + (size_t) k * np] = o[k];
            s += z[k] * o[k];
        }
        r[t] = s;
    }
    if (np > nm) {
        for (int k = 0; k < K; k++) O[nm + (size_t) k * np] = 0.0;
        r[nm] = 0.0;
    }
}

/**
 * Gather the terms a row's Gram matrix lacks (bnmf_cond_row_sub): the nm
 * vectors other + idx[t] K (K contiguous values each) by coordinate into
 * cs->O, r_t = z' o_t into cs->r for the row's current values z, and VB
 * the sums of the vectors' variances (laid out as the vectors in V, NULL
 * otherwise) into cs->gkk. The first pass of bnmf_cond_row_sub completes
 * cs->osq (the vectors' sums of squares) and cs->gkk (the row's Gram
 * diagonal G_kk - sum_t o_tk^2, VB less the variances; clamped at 0 like
 * masked_var_diag) as it reaches each coordinate. cs->O holds K (nm + 1)
 * values.
 */
void bnmf_cond_sub_gather(cond_sub *cs, const double *other, const double *V,
                          const int *idx, int nm, int K, const double *z)
{
    const int np = sub_stride(nm);
    cs->nm = nm;
    sub_gather(cs->O, np, other, idx, nm, K, z, cs->r);
    if (V) bnmf_idx_sums(cs->gkk, V, idx, nm, K);
    else for (int k = 0; k < K; k++) cs->gkk[k] = 0.0;
}



#if defined(__GNUC__)
/* den += sign sum_t (o_t' z) o_t over the ni vectors o_t = other + idx[t] K,
 * K = 4 nc + rem (nc <= 10 and rem < 4 constants where inlined): the same
 * sums as bnmf_dot4 and bnmf_axpy4 term by term, with den held in registers over
 * t (through memory, each term's additions waited on the last term's
 * stores) */
static ALWAYS_INLINE void mr_terms(double *den, const double *z, const double *other,
                                   const int *idx, int ni, int K, double sign, int nc,
                                   int rem)
{
    bnmf_v4 dv[10];
    double dr[3] = {0.0, 0.0, 0.0};
    VS_UNROLL
    for (int c = 0; c < nc; c++) dv[c] = *(const bnmf_v4 *) (den + 4 * c);
    for (int l = 0; l < rem; l++) dr[l] = den[4 * nc + l];
    for (int t = 0; t < ni; t++) {
        const double *o = other + (size_t) idx[t] * K;
        bnmf_v4 a = {0.0, 0.0, 0.0, 0.0};
        VS_UNROLL
        for (int c = 0; c < nc; c++)
            a += *(const bnmf_v4 *) (o + 4 * c) * *(const bnmf_v4 *) (z + 4 * c);
        double s0 = a[0];
        const int k = 4 * nc;
        for (int l = 0; l < rem; l++) s0 += o[k + l] * z[k + l];
        const double r = sign * ((s0 + a[1]) + (a[2] + a[3]));
        const bnmf_v4 rv = {r, r, r, r};
        VS_UNROLL
        for (int c = 0; c < nc; c++) dv[c] += rv * *(const bnmf_v4 *) (o + 4 * c);
        for (int l = 0; l < rem; l++) dr[l] += r * o[k + l];
    }
    VS_UNROLL
    for (int c = 0; c < nc; c++) *(bnmf_v4 *) (den + 4 * c) = dv[c];
    for (int l = 0; l < rem; l++) den[4 * nc + l] = dr[l];
}
#endif

/**
 * The multiplicative (Lee-Seung) update of a row with missing entries,
 * z_k <- z_k max(b_k, 0) / den_k (where den_k > 0), den = Gi z, Gi the Gram
 * matrix of the other side's vectors at the row's observed entries, without
 * forming Gi (O(nm K), against O(nm K^2) for Gi itself):
 *   den = G z - sum_{t missing} (o_t' z) o_t,
 * or, when more than half the entries are missing (where that difference
 * would cancel), den = sum_{t observed} (o_t' z) o_t.
 * @param z      the row (K values), updated in place
 * @param G      the Gram matrix of all n vectors
 * @param b      the row's data projected on the observed vectors
 * @param other  the other side's n vectors, K contiguous values each
 * @param miss   the nm missing indices among 0..n-1, sorted
 * @param obs    n ints of scratch
 * @param den    K doubles of scratch
 * @param q      NULL, or receives z' Gi z for the new z (the row's term of
 *               the SSE's quadratic part)
 * @return sum_k |change of z_k|
 */
BNMF_CLONES double bnmf_mult_row_masked(double *z, const double *G, const double *b,
                                        const double *other, int n, const int *miss,
                                        int nm, int K, int *obs, double *den, double *q)
{
    const int down = 2 * nm <= n;
    const int ni = down ? nm : observed_idx(miss, nm, n, obs);
    const int *idx = down ? miss : obs;
    if (down) mult_gz(G, z, K, den);
    else memset(den, 0, sizeof(double) * K);
    const double sign = down ? -1.0 : 1.0;
#if defined(__GNUC__)
    if (K <= 43) {
        switch (K / 4) {
        case 0: mr_terms(den, z, other, idx, ni, K, sign, 0, K % 4); break;
        case 1: mr_terms(den, z, other, idx, ni, K, sign, 1, K % 4); break;
        case 2: mr_terms(den, z, other, idx, ni, K, sign, 2, K % 4); break;
        case 3: mr_terms(den, z, other, idx, ni, K, sign, 3, K % 4); break;
        case 4: mr_terms(den, z, other, idx, ni, K, sign, 4, K % 4); break;
        case 5: mr_terms(den, z, other, idx, ni, K, sign, 5, K % 4); break;
        case 6: mr_terms(den, z, other, idx, ni, K, sign, 6, K % 4); break;
        case 7: mr_terms(den, z, other, idx, ni, K, sign, 7, K % 4); break;
        case 8: mr_terms(den, z, other, idx, ni, K, sign, 8, K % 4); break;
        case 9: mr_terms(den, z, other, idx, ni, K, sign, 9, K % 4); break;
        default: mr_terms(den, z, other, idx, ni, K, sign, 10, K % 4); break;
        }
    } else
#endif
    for (int t = 0; t < ni; t++) {
        const double *o = other + (size_t) idx[t] * K;
        bnmf_axpy4(den, sign * bnmf_dot4(o, z, K), o, K);
    }
    const double change = mult_apply(z, b, den, K);
    if (q) {
        double s = down ? bnmf_quad_form(G, z, K) : 0.0, r = 0.0;
        for (int t = 0; t < ni; t++) {
            const double e = bnmf_dot4(other + (size_t) idx[t] * K, z, K);
            r += e * e;
        }
        *q = s + sign * r;
    }
    return change;
}

/* cs->osq[k] = q, and cs->gkk[k] (holding the variance sum) the row's Gram
 * diagonal G_kk - q - the variance sum, clamped at 0 */
static inline void sub_diag(cond_sub *cs, const double *G, int k, int K, double q)
{
    cs->osq[k] = q;
    const double d = G[k + (size_t) k * K] - q - cs->gkk[k];
    cs->gkk[k] = d > 0.0 ? d : 0.0;
}

/* b_k - sum_{l != k} G_kl z_l, the sum in four partial sums (bnmf_dot4) */
static inline double sub_gz(const double *G, const double *b, const double *z, int k,
                            int K)
{
    const double *gk = G + (size_t) k * K;
    return b[k] - bnmf_dot4(gk, z, K) + gk[k] * z[k];
}

/* One pass of bnmf_cond_row_sub: bnmf_cond_row_pass on the full G, each
 * coordinate's sum corrected by the gathered vectors,
 *   s_k = b_k - sum_{l != k} G_kl z_l + sum_t o_tk (r_t - o_tk z_k),
 * and r_t = z' o_t moved along with z_k (in the same loop as the next
 * coordinate's sum). The first pass (first = 1) also sums each
 * coordinate's squares, from the loads of its sum, just before it needs
 * them (sub_diag). */
BNMF_CLONES static double cond_row_sub_pass(double *z, const double *G, const double *b,
                                const double *lam, int ls, double tau, int K,
                                nmf_rule rule, double *v, double *ent, cond_sub *cs,
                                int first)
{
    const int np = sub_stride(cs->nm);
    double *r = cs->r;
    double change = 0.0, q = 0.0;
    double c;
    if (first) {
        c = sub_axpy_dot_sq(r, NULL, 0.0, cs->O, np, &q);
        sub_diag(cs, G, 0, K, q);
    } else {
        c = dot_even(cs->O, r, np);
    }
    /* sg: coordinate k's sum on the full G (sub_gz). ICM takes it for
     * k + 1 as soon as z_k is set, before the loop over the vectors, so
     * that the two overlap (0.95 of the sweep's time); VB after that loop
     * (the other order cost VB 1.03: its step's calls into libm come
     * between) */
    const int early = rule == RULE_MODE;
    double sg = sub_gz(G, b, z, 0, K);
    for (int k = 0; k < K; k++) {
        const double *ok = cs->O + (size_t) k * np;
        const double s = sg + (c - cs->osq[k] * z[k]);
        const double znew = cond_step(rule, s, cs->gkk[k], lam[(size_t) k * ls], tau, z[k],
                                      v + k, ent + k);
        const double dz = znew - z[k];
        z[k] = znew;
        if (early && k + 1 < K) sg = sub_gz(G, b, z, k + 1, K);
        if (first && k + 1 < K) {
            c = sub_axpy_dot_sq(r, ok, dz, ok + np, np, &q);
            sub_diag(cs, G, k + 1, K, q);
        } else {
            c = sub_axpy_dot(r, ok, dz, k + 1 < K ? ok + np : NULL, np);
        }
        if (!early && k + 1 < K) sg = sub_gz(G, b, z, k + 1, K);
        change += fabs(dz);
    }
    return change;
}

/**
 * bnmf_cond_row() for ICM or VB (all K coordinates) on a row whose Gram
 * matrix is G less the terms gathered in cs (bnmf_cond_sub_gather, for the
 * row's current z), without forming that matrix: a pass costs about 2 K
 * multiply-adds per gathered vector where forming the matrix costs
 * K (K + 1) / 2. The same passes as bnmf_cond_row (ICM: until the row stops
 * moving, at most ICM_MAX_PASSES); the same values up to rounding. On
 * return cs->r holds z' o_t, cs->osq and cs->gkk the row's sums of squares
 * and Gram diagonal.
 */
void bnmf_cond_row_sub(double *z, const double *G, const double *b, const double *lam,
                       int ls, double tau, int K, nmf_rule rule, double *v, double *ent,
                       cond_sub *cs)
{
    double change = cond_row_sub_pass(z, G, b, lam, ls, tau, K, rule, v, ent, cs, 1);
    if (rule != RULE_MODE) return;
    for (int pass = 1; pass < ICM_MAX_PASSES && icm_row_moves(z, K, change); pass++)
        change = cond_row_sub_pass(z, G, b, lam, ls, tau, K, rule, v, ent, cs, 0);
}

/**
 * The row's terms of the (expected) SSE after bnmf_cond_row_sub, with r_t =
 * z' o_t in cs->r: z' G_i z, G_i = G less the gathered terms with the
 * diagonal cs->gkk; VB (v, the row's variances, else NULL) plus
 * sum_k G_i[k, k] v_k, as bnmf_h_sse_terms in nmf.h.
 */
double bnmf_cond_sub_quad(const cond_sub *cs, const double *G, const double *z,
                          const double *v, int K)
{
    double q = bnmf_quad_form(G, z, K) - dot_even(cs->r, cs->r, sub_stride(cs->nm));
    for (int k = 0; k < K; k++) {
        /* the diagonal: the row's own (VB: its variances out) */
        q += z[k] * z[k] * (cs->gkk[k] + cs->osq[k] - G[k + (size_t) k * K]);
        if (v) q += cs->gkk[k] * v[k];
    }
    return q;
}


/* .Call entry (tests): bnmf_cond_row_sub on one row (z, b, lam: K values)
 * whose Gram matrix is G less the terms of the columns of the K x nm matrix
 * O (VB, with V: K x nm variances, their sums off the diagonal too; V a
 * zero-length vector: none). par = c(tau, rule: 1 ICM, 2 VB). Returns
 * list(z, v, ent, r = O' z, gkk). */
SEXP bnmf_cond_row_sub_call(SEXP G, SEXP O, SEXP V, SEXP B, SEXP Z, SEXP L, SEXP par)
{
    if (TYPEOF(O) != REALSXP || !Rf_isMatrix(O)) Rf_error("`O` must be a double matrix");
    const int K = Rf_nrows(O), nm = Rf_ncols(O);
    if (K < 1) Rf_error("`O` must have at least one row");
    if (TYPEOF(G) != REALSXP || !Rf_isMatrix(G) || Rf_nrows(G) != K || Rf_ncols(G) != K)
        Rf_error("`G` must be a double K x K matrix");
    if (TYPEOF(V) != REALSXP || (XLENGTH(V) > 0 && XLENGTH(V) != XLENGTH(O)))
        Rf_error("`V` must be a double matrix of the shape of `O`, or numeric()");
    const int has_v = XLENGTH(V) > 0;
    if (TYPEOF(B) != REALSXP || XLENGTH(B) != K) Rf_error("`B` must hold K doubles");
    if (TYPEOF(Z) != REALSXP || XLENGTH(Z) != K) Rf_error("`Z` must hold K doubles");
    if (TYPEOF(L) != REALSXP || XLENGTH(L) != K) Rf_error("`L` must hold K doubles");
    if (TYPEOF(par) != REALSXP || XLENGTH(par) != 2) Rf_error("`par` must be c(tau, rule)");
    const double tau = REAL(par)[0];
    const int r = (int) REAL(par)[1];
    if (!(tau > 0.0) || !R_FINITE(tau)) Rf_error("`tau` must be positive and finite");
    if (r != RULE_MODE && r != RULE_MOMENT) Rf_error("`rule` must be 1 (ICM) or 2 (VB)");
    const size_t np = (size_t) sub_stride(nm);
    int *idx = (int *) R_alloc(nm > 0 ? nm : 1, sizeof(int));
    for (int t = 0; t < nm; t++) idx[t] = t;
    cond_sub cs;
    cs.O = (double *) R_alloc(np * K + 1, sizeof(double));
    cs.r = (double *) R_alloc(np + 1, sizeof(double));
    cs.osq = (double *) R_alloc(K, sizeof(double));
    cs.gkk = (double *) R_alloc(K, sizeof(double));
    const char *nms[] = {"z", "v", "ent", "r", "gkk", ""};
    SEXP out = PROTECT(Rf_mkNamed(VECSXP, nms));
    SEXP z = PROTECT(Rf_duplicate(Z));
    SEXP v = PROTECT(Rf_allocVector(REALSXP, K));
    SEXP ent = PROTECT(Rf_allocVector(REALSXP, K));
    SEXP rr = PROTECT(Rf_allocVector(REALSXP, nm));
    SEXP gkk = PROTECT(Rf_allocVector(REALSXP, K));
    SET_VECTOR_ELT(out, 0, z);
    SET_VECTOR_ELT(out, 1, v);
    SET_VECTOR_ELT(out, 2, ent);
    SET_VECTOR_ELT(out, 3, rr);
    SET_VECTOR_ELT(out, 4, gkk);
    for (int k = 0; k < K; k++) REAL(v)[k] = REAL(ent)[k] = 0.0;
    bnmf_cond_sub_gather(&cs, REAL(O), has_v ? REAL(V) : NULL, idx, nm, K, REAL(z));
    bnmf_cond_row_sub(REAL(z), REAL(G), REAL(B), REAL(L), 1, tau, K, (nmf_rule) r, REAL(v),
                      REAL(ent), &cs);
    memcpy(REAL(gkk), cs.gkk, sizeof(double) * K);
    if (nm > 0) memcpy(REAL(rr), cs.r, sizeof(double) * nm);
    UNPROTECT(6);
    return out;
}
