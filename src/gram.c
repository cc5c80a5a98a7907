/*
 * gram.c -- the Gram matrices of the Gaussian conditional (cond.h): the
 * expected Gram matrix of the other side (VB), the rank-n updates of a Gram
 * matrix over a few of the other side's vectors, and the masked Gram matrix
 * of a row with missing entries,
 *   G_i = G_full - sum_{t missing} z_t z_t'   (or the sum over the observed t
 * when that is shorter), plus for VB the variances of the same terms on its
 * diagonal; only O(|missing| K^2) work is added to a sweep. And the
 * quadratic form z' G z.
 */
#include "bnmf_call.h"
#include "cond_kern.h"
#include <string.h>


/**
 * The (expected) Gram matrix of the other side: G = Zbar Zbar' +
 * diag(sum_t V_kt), the second moment E[Z Z'] when Z has independent
 * coordinates with means Zbar and variances V.
 * @param Z  the means, K x n (GRAM_ROWS) or n x K (GRAM_COLS)
 * @param V  the variances, same layout as Z, or NULL (G = Z Z': plain Gram)
 * @param layout GRAM_ROWS or GRAM_COLS
 * @param G  receives the K x K matrix
 */
void bnmf_expected_gram(const double *Z, const double *V, int K, int n,
                        gram_layout layout, double *G)
{
    if (layout == GRAM_ROWS) {
        bnmf_gram_rows(Z, K, n, G);
        if (!V) return;
        for (int t = 0; t < n; t++)
            for (int k = 0; k < K; k++) G[k + (size_t) k * K] += V[k + (size_t) t * K];
        return;
    }
    bnmf_gram_cols(Z, n, K, G);
    if (!V) return;
    for (int k = 0; k < K; k++) {
        const double *v = V + (size_t) k * n;
        double sv = 0.0;
        for (int t = 0; t < n; t++) sv += v[t];
        G[k + (size_t) k * K] += sv;
    }
}

/* G += sign * sum_m v_m v_m' (upper triangle), four vectors at a time: the
 * kernel for K too large for gram_update's buffer. */
static void gram_update_rank4(double *G, const double *base, int stride, const int *idx,
                              int n, int K, double sign)
{
    int m = 0;
    for (; m + 4 <= n; m += 4) {
        const double *v0 = base + (size_t) idx[m] * stride;
        const double *v1 = base + (size_t) idx[m + 1] * stride;
        const double *v2 = base + (size_t) idx[m + 2] * stride;
        const double *v3 = base + (size_t) idx[m + 3] * stride;
        for (int b = 0; b < K; b++) {
            const double b0 = sign * v0[b], b1 = sign * v1[b];
            const double b2 = sign * v2[b], b3 = sign * v3[b];
            double *Gb = G + (size_t) b * K;
            for (int a = 0; a <= b; a++)
                Gb[a] += v0[a] * b0 + v1[a] * b1 + v2[a] * b2 + v3[a] * b3;
        }
    }
    for (; m < n; m++) {
        const double *v = base + (size_t) idx[m] * stride;
        for (int b = 0; b < K; b++) {
            const double vb = sign * v[b];
            double *Gb = G + (size_t) b * K;
            for (int a = 0; a <= b; a++) Gb[a] += v[a] * vb;
        }
    }
}

#define GRAM_BUF 4096   /* doubles of stack buffer for gathered vectors (32 KB) */

#if defined(__GNUC__)
typedef double v4g __attribute__((vector_size(32)));

/* Columns b0..b0+3 of rows a0..a0+4nr-1 (nr = 1 or 2 four-row blocks, a
 * constant where inlined) summed over the nc gathered vectors of buf (Kp
 * apart): C[r][bb] lane aa = sum_t x_{a0+4r+aa} y_{b0+bb}, t in order, then
 * G = F + sign C on and above the diagonal. The 4 nr sums stay in
 * registers: per vector, nr loads and 4 broadcasts for 4 nr four-value
 * multiply-adds. (Twelve rows would need 12 sums, 4 broadcasts, the vector
 * and a product, more than the 16 AVX2 registers: the clone has no fused
 * multiply-add, so that its bits are the default build's; GCC spilled two
 * sums.) Each entry's sum is the same, term for term, as a four-row
 * block's alone. */
static ALWAYS_INLINE void gram_tile(double *G, const double *F, const double *buf,
                                    int nc, int Kp, int K, int a0, int b0, int nr,
                                    double sign)
{
    const v4g zero = {0.0, 0.0, 0.0, 0.0};
    v4g A0 = zero, A1 = zero, A2 = zero, A3 = zero;
    v4g B0 = zero, B1 = zero, B2 = zero, B3 = zero;
    const double *p = buf;
    for (int t = 0; t < nc; t++, p += Kp) {
        const double y0 = p[b0], y1 = p[b0 + 1], y2 = p[b0 + 2], y3 = p[b0 + 3];
        const v4g Y0 = {y0, y0, y0, y0}, Y1 = {y1, y1, y1, y1};
        const v4g Y2 = {y2, y2, y2, y2}, Y3 = {y3, y3, y3, y3};
        v4g x;
        memcpy(&x, p + a0, sizeof x);
        A0 += x * Y0;
        A1 += x * Y1;
        A2 += x * Y2;
        A3 += x * Y3;
        if (nr > 1) {
            memcpy(&x, p + a0 + 4, sizeof x);
            B0 += x * Y0;
            B1 += x * Y1;
            B2 += x * Y2;
            B3 += x * Y3;
        }
    }
    const v4g C[2][4] = {{A0, A1, A2, A3}, {B0, B1, B2, B3}};
    for (int r = 0; r < nr; r++) {
        const int ar = a0 + 4 * r;
        for (int bb = 0; bb < 4 && b0 + bb < K; bb++) {
            double *Gb = G + (size_t) (b0 + bb) * K;
            const double *Fb = F + (size_t) (b0 + bb) * K;
            for (int aa = 0; aa < 4 && ar + aa <= b0 + bb; aa++)
                Gb[ar + aa] = Fb[ar + aa] + sign * C[r][bb][aa];
        }
    }
}
#endif

/**
 * G = G0 + sign * sum_m v_m v_m' (upper triangle) over the vectors v_m =
 * base + idx[m] * stride (K contiguous values each); G0 NULL: G += the
 * same. (G0 read as the sums are written spares a copy of G0 into G per
 * row: at K = 10 the copy was 5% of a masked VB sweep.)
 *
 * The vectors are gathered, a chunk at a time, into a buffer of Kp = K
 * rounded up to 4 values each (zero padded; four values per copy, inline),
 * and each four columns of the upper triangle are accumulated over the
 * whole chunk in tiles of 8 rows (4 at the diagonal's end; gram_tile),
 * whose sums stay in registers
 * (BNMF_CLONES: one AVX2 register per four values in the AVX2 clone): per
 * vector and tile of 8 x 4, 2 loads and 4 broadcasts for 8 four-value
 * multiply-adds, where 4 x 4 blocks took 5 for 4, and a rank-one (or
 * rank-four) update of G in memory a load and a store of G per 4
 * multiply-adds. Each entry is summed as by 4 x 4 blocks: the same bits.
 * This is the masked Gram matrix of every row with missing entries (and
 * for ICM below SUB_MIN_K_ICM and VB below SUB_MIN_K_VB in nmf_sweep.h,
 * most of a sweep's work when entries are missing).
 */
BNMF_CLONES void bnmf_gram_update(double *G, const double *G0, const double *base,
                                  int stride, const int *idx, int n, int K,
                                  double sign)
{
    const int Kp = (K + 3) & ~3;
    const int chunk = GRAM_BUF / (Kp > 0 ? Kp : 4);
    if (G0 && (chunk < 16 || n == 0)) {
        memcpy(G, G0, sizeof(double) * K * K);
        G0 = NULL;
    }
    if (chunk < 16) {
        gram_update_rank4(G, base, stride, idx, n, K, sign);
        return;
    }
    double buf[GRAM_BUF];
    for (int m0 = 0; m0 < n; m0 += chunk) {
        /* the first chunk adds to G0, the others to G */
        const double *from = m0 == 0 && G0 ? G0 : G;
        const int nc = n - m0 < chunk ? n - m0 : chunk;
        for (int t = 0; t < nc; t++) {
            const double *v = base + (size_t) idx[m0 + t] * stride;
            double *bt = buf + (size_t) t * Kp;
            int k = 0;
#if defined(__GNUC__)
            /* four values per copy, and the last one to three with the
             * padding in one store: a loop of K copies, and the loops of
             * the tail and the padding, each became a call (memmove,
             * memset) per vector */
            for (; k + 4 <= K; k += 4) {
                v4g c;
                memcpy(&c, v + k, sizeof c);
                memcpy(bt + k, &c, sizeof c);
            }
            if (k < K) {
                const int rem = K - k;
                const v4g c = {v[k], rem > 1 ? v[k + 1] : 0.0, rem > 2 ? v[k + 2] : 0.0, 0.0};
                memcpy(bt + k, &c, sizeof c);
            }
#else
            for (; k < K; k++) bt[k] = v[k];
            for (; k < Kp; k++) bt[k] = 0.0;
#endif
        }
        for (int b0 = 0; b0 < Kp; b0 += 4) {
#if defined(__GNUC__)
            /* rows 0..b0+3 of the four columns, eight at a time */
            int a0 = 0;
            for (; a0 + 4 <= b0; a0 += 8)
                gram_tile(G, from, buf, nc, Kp, K, a0, b0, 2, sign);
            if (a0 <= b0) gram_tile(G, from, buf, nc, Kp, K, a0, b0, 1, sign);
#else
            for (int a0 = 0; a0 <= b0; a0 += 4) {
                double c00 = 0, c10 = 0, c20 = 0, c30 = 0, c01 = 0, c11 = 0, c21 = 0, c31 = 0;
                double c02 = 0, c12 = 0, c22 = 0, c32 = 0, c03 = 0, c13 = 0, c23 = 0, c33 = 0;
                const double *p = buf;
                for (int t = 0; t < nc; t++, p += Kp) {
                    const double x0 = p[a0], x1 = p[a0 + 1], x2 = p[a0 + 2], x3 = p[a0 + 3];
                    const double y0 = p[b0], y1 = p[b0 + 1], y2 = p[b0 + 2], y3 = p[b0 + 3];
                    c00 += x0 * y0; c10 += x1 * y0; c20 += x2 * y0; c30 += x3 * y0;
                    c01 += x0 * y1; c11 += x1 * y1; c21 += x2 * y1; c31 += x3 * y1;
                    c02 += x0 * y2; c12 += x1 * y2; c22 += x2 * y2; c32 += x3 * y2;
                    c03 += x0 * y3; c13 += x1 * y3; c23 += x2 * y3; c33 += x3 * y3;
                }
                const double c[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},
                                        {c20, c21, c22, c23}, {c30, c31, c32, c33}};
                for (int bb = 0; bb < 4 && b0 + bb < K; bb++) {
                    double *Gb = G + (size_t) (b0 + bb) * K;
                    const double *Fb = from + (size_t) (b0 + bb) * K;
                    for (int aa = 0; aa < 4 && a0 + aa <= b0 + bb; aa++)
                        Gb[a0 + aa] = Fb[a0 + aa] + sign * c[aa][bb];
                }
            }
#endif
        }
    }
}


/* Gi = Gfull minus the terms of the missing vectors, or the observed terms
 * summed directly when those are fewer. Returns 1 when it downdated, 0 when
 * it summed the observed terms (listed in `obs`, `*nobs` of them). */
static int gram_minus_missing(double *Gi, const double *Gfull, const double *other,
                              int ostride, int n, const int *miss, int nm, int K,
                              int *obs, int *nobs)
{
    if (2 * nm <= n) {
        bnmf_gram_update(Gi, Gfull, other, ostride, miss, nm, K, -1.0);
        bnmf_symmetrise(Gi, K);
        return 1;
    }
    memset(Gi, 0, sizeof(double) * K * K);
    const int no = observed_idx(miss, nm, n, obs);
    bnmf_gram_update(Gi, NULL, other, ostride, obs, no, K, 1.0);
    bnmf_symmetrise(Gi, K);
    *nobs = no;
    return 0;
}

#if defined(__GNUC__)
typedef double vs_v2 __attribute__((vector_size(16), aligned(8)));

/* vs[k0 + l] = sum_t V[idx[t] K + k0 + l] for l < 4 nc + rem (nc <= 10, a
 * constant where it is inlined; rem < 4): every sum in one pass over t, in
 * registers. Each coordinate's sum still adds its terms one after another
 * in t's order (the same values as a scalar loop); what the pass gains is
 * that all K sums are under way at once, so no addition waits on the one
 * before it in the same sum. */
static ALWAYS_INLINE void vs_chunk(double *restrict vs, const double *restrict V,
                                   const int *restrict idx, int nm, int K, int k0,
                                   int nc, int rem)
{
    bnmf_v4 s[10];
    vs_v2 s2 = {0.0, 0.0};
    double s1 = 0.0;
    VS_UNROLL
    for (int c = 0; c < nc; c++) s[c] = (bnmf_v4) {0.0, 0.0, 0.0, 0.0};
    const int k2 = k0 + 4 * nc;
    for (int t = 0; t < nm; t++) {
        const double *v = V + (size_t) idx[t] * K + k0;
        VS_UNROLL
        for (int c = 0; c < nc; c++) s[c] += *(const bnmf_v4 *) (v + 4 * c);
        if (rem >= 2) s2 += *(const vs_v2 *) (v + 4 * nc);
        if (rem & 1) s1 += v[4 * nc + (rem & 2)];
    }
    VS_UNROLL
    for (int c = 0; c < nc; c++)
        for (int l = 0; l < 4; l++) vs[k0 + 4 * c + l] = s[c][l];
    if (rem >= 2) vs[k2] = s2[0], vs[k2 + 1] = s2[1];
    if (rem & 1) vs[k2 + (rem & 2)] = s1;
}
#endif

/* vs[k] = sum_t V[idx[t] K + k], k < K: up to 40 coordinates a pass over
 * the vectors (vs_chunk; ten four-value sums in registers, with the loads'
 * fit in AVX2's sixteen), the last pass taking the K mod 4 left over. One
 * pass per sum in flight at a time was bound by the additions' latency (a
 * sum of eight coordinates waited four cycles a vector). The 2 K = 40 sums
 * of VB's imputing rows at K = 20 (fill_sums) take one pass instead of 32
 * then 8: each entry's five cache lines read once, its index once (0.96 of
 * the sweep's time, OpenBLAS, 1000 x 1000, 20% missing). */
BNMF_CLONES static void sub_var_sums(double *restrict vs, const double *restrict V,
                                     const int *restrict idx, int nm, int K)
{
#if defined(__GNUC__)
    for (int k0 = 0; k0 < K;) {
        const int left = K - k0;
        const int nc = left >= 44 ? 10 : left / 4, rem = left >= 44 ? 0 : left % 4;
        switch (nc) {
        case 0: vs_chunk(vs, V, idx, nm, K, k0, 0, rem); break;
        case 1: vs_chunk(vs, V, idx, nm, K, k0, 1, rem); break;
        case 2: vs_chunk(vs, V, idx, nm, K, k0, 2, rem); break;
        case 3: vs_chunk(vs, V, idx, nm, K, k0, 3, rem); break;
        case 4: vs_chunk(vs, V, idx, nm, K, k0, 4, rem); break;
        case 5: vs_chunk(vs, V, idx, nm, K, k0, 5, rem); break;
        case 6: vs_chunk(vs, V, idx, nm, K, k0, 6, rem); break;
        case 7: vs_chunk(vs, V, idx, nm, K, k0, 7, rem); break;
        case 8: vs_chunk(vs, V, idx, nm, K, k0, 8, rem); break;
        case 9: vs_chunk(vs, V, idx, nm, K, k0, 9, rem); break;
        default: vs_chunk(vs, V, idx, nm, K, k0, 10, rem); break;
        }
        k0 += 4 * nc + rem;
    }
#else
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (int t = 0; t < nm; t++) s += V[(size_t) idx[t] * K + k];
        vs[k] = s;
    }
#endif
}

/* vs[k] = sum_t V[idx[t] K + k] for k < K (sub_var_sums), for other files. */
void bnmf_idx_sums(double *vs, const double *V, const int *idx, int nm, int K)
{
    sub_var_sums(vs, V, idx, nm, K);
}

#define VSUM_MAX 256   /* the largest K whose variance sums are on the stack */

/* Gi[k, k] += sign * sum_m V[idx[m] * vstride + k * kstride], one
 * coordinate at a time, summed in registers (a sum into Gi itself waits on
 * a store and a load of Gi per term). */
static void masked_var_cols(double *Gi, double sign, const double *V, size_t vstride,
                            size_t kstride, const int *idx, int n, int K)
{
    for (int k = 0; k < K; k++) {
        const double *vk = V + (size_t) k * kstride;
        double s0 = 0.0, s1 = 0.0;
        int m = 0;
        for (; m + 2 <= n; m += 2) {
            s0 += vk[(size_t) idx[m] * vstride];
            s1 += vk[(size_t) idx[m + 1] * vstride];
        }
        if (m < n) s0 += vk[(size_t) idx[m] * vstride];
        Gi[k + (size_t) k * K] += sign * (s0 + s1);
    }
}

/* VB: the variance part of a masked expected Gram matrix. Gfull carries
 * diag(sum over all t of V_t) on its diagonal; a downdated Gi (down = 1)
 * loses the variances of the missing vectors, a directly summed one
 * (down = 0) gains those of the observed ones. */
static void masked_var_diag(double *Gi, int down, const double *V, size_t vstride,
                            size_t kstride, const int *idx, int n, int K)
{
    const double sign = down ? -1.0 : 1.0;
    if (vstride == (size_t) K && kstride == 1 && K <= VSUM_MAX) {
        /* each vector's K variances contiguous (the NMF sweeps): read a
         * vector at a time */
        double vs[VSUM_MAX];
        sub_var_sums(vs, V, idx, n, K);
        for (int k = 0; k < K; k++) Gi[k + (size_t) k * K] += sign * vs[k];
    } else {
        masked_var_cols(Gi, sign, V, vstride, kstride, idx, n, K);
    }
    for (int k = 0; k < K; k++)
        if (Gi[k + (size_t) k * K] < 0.0) Gi[k + (size_t) k * K] = 0.0;
}

/**
 * The Gram matrix of the other side for one row with nm missing entries.
 * @param Gi     K x K scratch that receives the masked matrix
 * @param Gfull  the (expected) Gram matrix over all n entries
 * @param other  the other side's n vectors of K contiguous values, ostride apart
 * @param miss   the nm missing indices among 0..n-1, sorted
 * @param obs    n ints of scratch
 * @param V      VB: the other side's variances, V_t[k] = V[t * vstride +
 *               k * kstride] (NULL otherwise)
 * @return Gfull itself when nothing is missing, otherwise Gi
 */
const double *bnmf_masked_gram(double *Gi, const double *Gfull, const double *other,
                               int ostride, int n, const int *miss, int nm, int K,
                               int *obs, const double *V, size_t vstride,
                               size_t kstride)
{
    if (nm == 0) return Gfull;
    int nobs = 0;
    const int down = gram_minus_missing(Gi, Gfull, other, ostride, n, miss, nm, K, obs,
                                        &nobs);
    if (V) masked_var_diag(Gi, down, V, vstride, kstride, down ? miss : obs,
                           down ? nm : nobs, K);
    return Gi;
}

/** z' G z for a K x K matrix G: sum_b z_b (G[, b]' z), in that order. The
 * inner sums of four columns are taken side by side (four independent
 * chains of multiply-adds instead of one); each is summed in the same order
 * as alone, so the result does not depend on the grouping. */
double bnmf_quad_form(const double *G, const double *z, int K)
{
    double s = 0.0;
    int b = 0;
    for (; b + 4 <= K; b += 4) {
        const double *G0 = G + (size_t) b * K, *G1 = G0 + K, *G2 = G1 + K, *G3 = G2 + K;
        double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
        for (int a = 0; a < K; a++) {
            const double za = z[a];
            t0 += G0[a] * za;
            t1 += G1[a] * za;
            t2 += G2[a] * za;
            t3 += G3[a] * za;
        }
        s += t0 * z[b];
        s += t1 * z[b + 1];
        s += t2 * z[b + 2];
        s += t3 * z[b + 3];
    }
    for (; b < K; b++) {
        const double *Gb = G + (size_t) b * K;
        double t = 0.0;
        for (int a = 0; a < K; a++) t += Gb[a] * z[a];
        s += t * z[b];
    }
    return s;
}

/* .Call entry (tests): G + sign * sum_t Z[, idx[t]] Z[, idx[t]]' for a K x n
 * matrix Z, 0-based idx, K x K matrix G; the upper triangle is updated and
 * the result symmetrised, as bnmf_masked_gram() does. */
SEXP bnmf_gram_update_call(SEXP G, SEXP Z, SEXP idx, SEXP sign)
{
    if (TYPEOF(Z) != REALSXP || !Rf_isMatrix(Z)) Rf_error("`Z` must be a double matrix");
    const int K = Rf_nrows(Z), n = Rf_ncols(Z);
    if (TYPEOF(G) != REALSXP || !Rf_isMatrix(G) || Rf_nrows(G) != K || Rf_ncols(G) != K)
        Rf_error("`G` must be a double K x K matrix");
    if (TYPEOF(idx) != INTSXP) Rf_error("`idx` must be an integer vector");
    if (TYPEOF(sign) != REALSXP || XLENGTH(sign) != 1) Rf_error("`sign` must be a number");
    const int m = (int) XLENGTH(idx);
    const int *ix = INTEGER(idx);
    for (int t = 0; t < m; t++)
        if (ix[t] == NA_INTEGER || ix[t] < 0 || ix[t] >= n)
            Rf_error("`idx` holds an index outside 0..ncol(Z) - 1");
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, K, K));
    bnmf_gram_update(REAL(out), REAL(G), REAL(Z), K, ix, m, K, REAL(sign)[0]);
    bnmf_symmetrise(REAL(out), K);
    UNPROTECT(1);
    return out;
}
