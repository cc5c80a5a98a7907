/*
 * pois_nmf.c -- Bayesian Poisson-Gamma NMF (Cemgil 2009): variational Bayes
 * and the auxiliary-variable Gibbs sampler.
 *
 * Model (I x J counts, K factors; only the observed entries Omega enter):
 *
 *   X_ij = sum_k Z_ijk,  Z_ijk ~ Poisson(W_ik H_kj),  so X_ij ~ Poisson((WH)_ij)
 *   W_ik ~ Gamma(a, b),  H_kj ~ Gamma(c, d)            (shape, rate)
 *
 * Given W and H the split of a count is multinomial,
 *   Z_ij. | X_ij ~ Mult(X_ij, phi_ij),  phi_ijk = W_ik H_kj / (WH)_ij,
 * and given Z the factors are conjugate:
 *   W_ik | Z, H ~ Gamma(a + sum_j Z_ijk, b + sum_{j in Omega_i} H_kj)
 *   H_kj | Z, W ~ Gamma(c + sum_i Z_ijk, d + sum_{i in Omega_j} W_ik).
 *
 * Gibbs (one sweep): Z | W, H (multinomial split of every positive count),
 * then W | Z, H, then H | Z, W (the new W), all exact conditionals.
 *
 * VB: q(W_ik) = Gamma(alW_ik, beW_ik), q(H_kj) = Gamma(alH_kj, beH_kj),
 * q(Z_ij.) = Mult(X_ij, phi_ij) with phi_ijk proportional to LW_ik LH_kj,
 * LW = exp(E log W) = exp(digamma(alW)) / beW (and LH alike). With q(Z) at
 * its optimum the coordinate updates are
 *   alW_ik = a + LW_ik sum_j (X_ij / (LW LH)_ij) LH_kj,  beW_ik = b + sum_{j in Omega_i} E[H_kj]
 *   alH_kj = c + LH_kj sum_i (X_ij / (LW LH)_ij) LW_ik,  beH_kj = d + sum_{i in Omega_j} E[W_ik]
 * (q(Z) recomputed between the two halves) and the ELBO is, exactly,
 *   L = sum_Omega [X_ij log (LW LH)_ij - log X_ij!] - sum_Omega (E[W] E[H])_ij
 *       + sum_ik (E log p(W_ik) + H[q(W_ik)]) + sum_kj (E log p(H_kj) + H[q(H_kj)]),
 *   E log p(W_ik) = a log b - lgamma(a) + (a - 1)(digamma(alW) - log beW) - b alW / beW,
 * which no coordinate step decreases.
 *
 * Costs: a zero count adds nothing to the split, so a sweep reads only the
 * positive observed counts (one pass per half, O(nnz K)); the rates are the
 * column sums of E[H] (row sums of E[W]) less those of each row's (column's)
 * missing entries, O((I + J) K + nmiss K). Dense and sparse X are laid out
 * the same way (the positive counts in column order, bnmf_pois_data()), so
 * they give the same numbers bit for bit.
 */
#include <float.h>
#include <limits.h>
#include "bnmf_call.h"
#include "pois.h"

/*
 * log Gamma(x) and digamma(x) together, x > 0, for the VB updates (one pair
 * per entry of W and H per sweep). Below 10 both use the recurrence through
 * P = x (x + 1) ... (x + n - 1) and its derivative D (updated as D <- D y + P,
 * P <- P y), so that sum 1 / (x + i) = D / P and sum log(x + i) = log P cost
 * one division and one log; at x + n >= 10 Stirling's series for log Gamma
 * (terms to 1 / (1188 x^9): truncation error below 2e-14) and the asymptotic
 * series of digamma. Absolute error about 1e-14 (checked against Rmath on
 * 10^-6 to 10^3: relative error below 3e-14); tiny or
 * non-finite x go to Rmath.
 */
static inline void lgamma_digamma(double x, double *lg, double *dg)
{
    if (!(x >= 1e-6) || !R_FINITE(x)) {
        *lg = lgammafn(x);
        *dg = digamma(x);
        return;
    }
    double P = 1.0, D = 0.0;
    while (x < 10.0) {
        D = D * x + P;
        P *= x;
        x += 1.0;
    }
    const double ix = 1.0 / x, f = ix * ix, lx = log(x);
    const double psi = lx - 0.5 * ix -
        f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))));
    const double lgam = (x - 0.5) * lx - x + M_LN_SQRT_2PI +
        ix * (1.0 / 12 - f * (1.0 / 360 - f * (1.0 / 1260 - f * (1.0 / 1680 - f / 1188))));
    *dg = D > 0.0 ? psi - D / P : psi;
    *lg = P != 1.0 ? lgam - log(P) : lgam;
}

/* ---- the data ----------------------------------------------------------- */

/**
 * Lay out the positive observed counts of x (dense I x J, or the values of a
 * CSC matrix; NA is missing) by column and, if by_row, by row.
 */
void bnmf_pois_data(const nmf_data *d, const double *x, int by_row, pois_data *pd)
{
    bnmf_pois_data_known(d, x, by_row, NULL, pd);
}

/* The dgCMatrix's own column layout as that of the positive counts (every
 * stored value is one): no copy, no row layout. */
static void pois_data_in_place(const nmf_data *d, const double *x, pois_data *pd)
{
    pd->nnz = d->xp[d->J];
    pd->cp = d->xp;
    pd->ri = d->xi;
    pd->xv = x;
    pd->rp = pd->cj = NULL;
    pd->rx = NULL;
}

/* As bnmf_pois_data(); `known`, if not NULL and finite, holds what an earlier
 * call on the same x found: the number of positive counts and their sum of
 * log x!. When every stored value of a dgCMatrix is a positive count, the
 * two passes over the values that find them are then skipped (they would
 * be repeated for every chunk of sweeps). */
void bnmf_pois_data_known(const nmf_data *d, const double *x, int by_row, const double *known,
                          pois_data *pd)
{
    const int I = d->I, J = d->J;
    pd->d = d;
    pd->I = I; pd->J = J; pd->K = d->K;
    pd->threads = 1;
    if (known && d->sparse && R_FINITE(known[0]) && R_FINITE(known[1]) &&
        known[0] == (double) d->xp[J] && !by_row) {
        pois_data_in_place(d, x, pd);
        pd->lfact = known[1];
        return;
    }
    int *cp = (int *) R_alloc((size_t) J + 1, sizeof(int));
    R_xlen_t nnz = 0;
    for (int j = 0; j < J; j++) {
        cp[j] = (int) nnz;
        R_xlen_t lo = d->sparse ? d->xp[j] : (R_xlen_t) j * I;
        R_xlen_t hi = d->sparse ? d->xp[j + 1] : (R_xlen_t) (j + 1) * I;
        for (R_xlen_t p = lo; p < hi; p++)
            if (!ISNAN(x[p]) && x[p] > 0.0) nnz++;
        if (nnz > INT_MAX) Rf_error("bnmf: more than 2^31 - 1 positive counts");
    }
    cp[J] = (int) nnz;
    pd->nnz = (int) nnz;
    double lf = 0.0, lfc[256];   /* log x! of the small counts, cached */
    for (int t = 0; t < 256; t++) lfc[t] = lgammafn(t + 1.0);
    if (d->sparse && nnz == d->xp[J]) {
        /* Every stored value is a positive count: the dgCMatrix's own
         * layout, without a copy (this runs once per chunk of sweeps). */
        pois_data_in_place(d, x, pd);
        for (R_xlen_t q = 0; q < nnz; q++)
            lf += x[q] < 256.0 ? lfc[(int) x[q]] : lgammafn(x[q] + 1.0);
    } else {
        int *ri = (int *) R_alloc(nnz ? nnz : 1, sizeof(int));
        double *xv = (double *) R_alloc(nnz ? nnz : 1, sizeof(double));
        for (int j = 0; j < J; j++) {
            R_xlen_t lo = d->sparse ? d->xp[j] : (R_xlen_t) j * I;
            R_xlen_t hi = d->sparse ? d->xp[j + 1] : (R_xlen_t) (j + 1) * I;
            int q = cp[j];
            for (R_xlen_t p = lo; p < hi; p++) {
                if (ISNAN(x[p]) || !(x[p] > 0.0)) continue;
                ri[q] = d->sparse ? d->xi[p] : (int) (p - lo);
                xv[q++] = x[p];
                lf += x[p] < 256.0 ? lfc[(int) x[p]] : lgammafn(x[p] + 1.0);
            }
        }
        pd->cp = cp;
        pd->ri = ri;
        pd->xv = xv;
    }
    pd->lfact = lf;
    pd->rp = pd->cj = NULL;
    pd->rx = NULL;
    if (!by_row) return;
    pd->rp = (int *) R_alloc((size_t) I + 1, sizeof(int));
    pd->cj = (int *) R_alloc(nnz ? nnz : 1, sizeof(int));
    pd->rx = (double *) R_alloc(nnz ? nnz : 1, sizeof(double));
    int *next = (int *) R_alloc((size_t) I + 1, sizeof(int));
    for (int i = 0; i <= I; i++) pd->rp[i] = 0;
    for (int q = 0; q < pd->nnz; q++) pd->rp[pd->ri[q] + 1]++;
    for (int i = 0; i < I; i++) pd->rp[i + 1] += pd->rp[i];
    for (int i = 0; i < I; i++) next[i] = pd->rp[i];
    for (int j = 0; j < J; j++)
        for (int q = pd->cp[j]; q < pd->cp[j + 1]; q++) {
            const int r = next[pd->ri[q]]++;
            pd->cj[r] = j;
            pd->rx[r] = pd->xv[q];
        }
}

/* Read the data description (prepare_data()) and the counts x (the dense
 * matrix or the dgCMatrix's values). */
void bnmf_pois_read(SEXP data, SEXP x, int K_needed, int by_row, nmf_data *d,
                    pois_data *pd)
{
    bnmf_read_data(data, K_needed, d);
    if (TYPEOF(x) != REALSXP || XLENGTH(x) != d->nx)
        Rf_error("bnmf internal error: x must be a double vector of the data's length");
    bnmf_pois_data(d, REAL(x), by_row, pd);
}

/* The prior: list(a, b, c, d) and, for the beta process, a0W, b0W, a0H, b0H. */
void bnmf_pois_read_prior(SEXP prior, int beta, pois_prior *pp)
{
    pp->a = *bnmf_real_elt(prior, "a", 1);
    pp->b = *bnmf_real_elt(prior, "b", 1);
    pp->c = *bnmf_real_elt(prior, "c", 1);
    pp->d = *bnmf_real_elt(prior, "d", 1);
    if (!(pp->a > 0.0 && pp->b > 0.0 && pp->c > 0.0 && pp->d > 0.0) || !R_FINITE(pp->a) ||
        !R_FINITE(pp->b) || !R_FINITE(pp->c) || !R_FINITE(pp->d))
        Rf_error("bnmf internal error: Gamma shapes and rates must be finite and > 0");
    pp->a0W = pp->b0W = pp->a0H = pp->b0H = 1.0;
    if (!beta) return;
    pp->a0W = *bnmf_real_elt(prior, "a0W", 1);
    pp->b0W = *bnmf_real_elt(prior, "b0W", 1);
    pp->a0H = *bnmf_real_elt(prior, "a0H", 1);
    pp->b0H = *bnmf_real_elt(prior, "b0H", 1);
    if (!(pp->a0W > 0.0 && pp->b0W > 0.0 && pp->a0H > 0.0 && pp->b0H > 0.0))
        Rf_error("bnmf internal error: beta-process parameters must be > 0");
}

/* ---- shared kernels ------------------------------------------------------- */

/**
 * Sums of one factor over the observed entries of each row (rows_of_W = 1:
 * M = H, K x J; out[k, i] = sum_{j in Omega_i} H_kj) or of each column
 * (rows_of_W = 0: M = W, I x K; out[k, j] = sum_{i in Omega_j} W_ik): the
 * full sums less those of the missing entries. out is K x I or K x J.
 */
void bnmf_pois_obs_sums(const nmf_data *d, const double *M, int rows_of_W,
                        double *out)
{
    const int K = d->K;
    const int n_other = rows_of_W ? d->J : d->I, n_units = rows_of_W ? d->I : d->J;
    const size_t mk = rows_of_W ? 1 : (size_t) d->I, mo = rows_of_W ? (size_t) K : 1;
    const int *ptr = rows_of_W ? d->mrow_ptr : d->mcol_ptr;
    const int *idx = rows_of_W ? d->mrow_j : d->miss_i;
    double *tot = out; /* the first unit's column holds the totals at first */
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (int o = 0; o < n_other; o++) s += M[k * mk + (size_t) o * mo];
        tot[k] = s;
    }
    for (int u = n_units - 1; u >= 0; u--) {
        double *ou = out + (size_t) u * K;
        for (int k = 0; k < K; k++) {
            double s = tot[k];
            for (int m = ptr[u]; m < ptr[u + 1]; m++) s -= M[k * mk + (size_t) idx[m] * mo];
            ou[k] = s;
        }
    }
}

/* sum over the observed entries of (WH)_ij (W I x K, H K x J). */
double bnmf_pois_sum_obs_wh(const nmf_data *d, const double *W, const double *H)
{
    const int I = d->I, K = d->K;
    double tot = 0.0;
    for (int k = 0; k < K; k++) {
        double a = 0.0, b = 0.0;
        for (int i = 0; i < I; i++) a += W[i + (size_t) k * I];
        for (int j = 0; j < d->J; j++) b += H[k + (size_t) j * K];
        tot += a * b;
    }
    for (int m = 0; m < d->nmiss; m++)
        tot -= bnmf_wh_entry(W, H, I, K, d->miss_i[m], d->miss_j[m]);
    return tot;
}

/* Columns [j0, j1) of the ratio pass into NAt (K x I, added to), NB and,
 * unless lik is NULL, the log likelihood: each column's sum x log s
 * (bnmf_xlog_sum over its rates, collected in sb: the logs four at a time;
 * log() one at a time took a ninth of a Poisson VB sweep) added to *lik in
 * column order, as gibbs_split adds them, so that both give the same bits. */
BNMF_CLONES static void ratio_cols(const pois_data *pd, const double *At, const double *B,
                                   double *NAt, double *NB, double *lik, double *sb, int j0,
                                   int j1)
{
    const int K = pd->K;
    for (int j = j0; j < j1; j++) {
        const double *bj = B + (size_t) j * K;
        double *nb = NB ? NB + (size_t) j * K : NULL;
        const int q0 = pd->cp[j];
        for (int q = q0; q < pd->cp[j + 1]; q++) {
            const int i = pd->ri[q];
            const double *ai = At + (size_t) i * K;
            double s = bnmf_dot4(ai, bj, K);
            if (s < DBL_MIN) s = DBL_MIN;
            const double r = pd->xv[q] / s;
            sb[q - q0] = s;
            if (NAt) bnmf_axpy4(NAt + (size_t) i * K, r, bj, K);
            if (nb) bnmf_axpy4(nb, r, ai, K);
        }
        if (lik) *lik += bnmf_xlog_sum(pd->xv + q0, sb, (size_t) (pd->cp[j + 1] - q0));
    }
}

/* The first column of range t of T in [j0, j1), the ranges holding about
 * equal numbers of counts: the smallest j with cp[j] - cp[j0] >= t / T of
 * the block's counts (j0 for t = 0, j1 for t = T). */
static int split_col(const int *cp, int j0, int j1, int t, int T)
{
    if (t <= 0) return j0;
    if (t >= T) return j1;
    const double target = cp[j0] + (double) (cp[j1] - cp[j0]) * t / T;
    int lo = j0, hi = j1;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (cp[mid] >= target) hi = mid; else lo = mid + 1;
    }
    return lo;
}

/**
 * One pass over the positive counts with At (K x I) and B (K x J):
 * s_ij = sum_k At[k, i] B[k, j]; returns sum X_ij log s_ij, and adds the
 * ratios r_ij = X_ij / s_ij into NAt[, i] += r_ij B[, j] (K x I) and
 * NB[, j] += r_ij At[, i] (K x J), each if not NULL (zeroed first). With
 * want_lik = 0 the log is skipped and 0 returned.
 *
 * With pd->threads = T > 1 (OpenMP), each block of columns is split into T
 * contiguous ranges of about equal counts, one per thread: NB's columns are disjoint, NAt gets a
 * private copy per thread (but the first's) and the log-likelihood a
 * partial sum per thread; both are added up in thread order afterwards, so
 * the result depends on T but not on the scheduling. Interrupts are
 * checked between blocks, outside the parallel region.
 */
double bnmf_pois_ratio_pass(const pois_data *pd, const double *At, const double *B,
                            double *NAt, double *NB, int want_lik)
{
    const int K = pd->K, J = pd->J;
    const size_t nA = (size_t) K * pd->I;
    if (NAt) memset(NAt, 0, sizeof(double) * nA);
    if (NB) memset(NB, 0, sizeof(double) * K * J);
    int T = pd->threads;
#ifndef _OPENMP
    T = 1;
#endif
    if (T > J) T = J > 0 ? J : 1;
    double *priv = NULL, *part = (double *) R_alloc(T, sizeof(double));
    /* each thread's rates of a column */
    double *sb = (double *) R_alloc((size_t) T * pd->I, sizeof(double));
    if (T > 1 && NAt) {
        priv = (double *) R_alloc((size_t) (T - 1) * nA, sizeof(double));
        memset(priv, 0, sizeof(double) * (T - 1) * nA);
    }
    for (int t = 0; t < T; t++) part[t] = 0.0;
    const int block = 4096;
    for (int j0 = 0; j0 < J; j0 += block) {
        const int j1 = J - j0 < block ? J : j0 + block;
        if (T == 1) {
            ratio_cols(pd, At, B, NAt, NB, want_lik ? part : NULL, sb, j0, j1);
        } else {
#ifdef _OPENMP
#pragma omp parallel for num_threads(T) schedule(static, 1)
#endif
            for (int t = 0; t < T; t++) {
                const int a = split_col(pd->cp, j0, j1, t, T), b = split_col(pd->cp, j0, j1, t + 1, T);
                double *na = NAt ? (t == 0 ? NAt : priv + (size_t) (t - 1) * nA) : NULL;
                ratio_cols(pd, At, B, na, NB, want_lik ? part + t : NULL,
                           sb + (size_t) t * pd->I, a, b);
            }
        }
        R_CheckUserInterrupt();
    }
    double lik = 0.0;
    for (int t = 0; t < T; t++) lik += part[t];
    for (int t = 1; t < T && NAt; t++) {
        const double *p = priv + (size_t) (t - 1) * nA;
        for (size_t u = 0; u < nA; u++) NAt[u] += p[u];
    }
    return lik;
}

/* sum of log Gamma(shape, rate) densities of n values. */
double bnmf_gamma_log_prior(const double *Z, R_xlen_t n, double shape, double rate)
{
    double s = 0.0;
    for (R_xlen_t t = 0; t < n; t++) s += (shape - 1.0) * log(Z[t]) - rate * Z[t];
    return s + (double) n * (shape * log(rate) - lgammafn(shape));
}

/* E log Gamma(z; a, b) + H[q] for q(z) = Gamma(al, be), but for the
 * constant a log b - lgamma(a); dg = digamma(al), lb = log(be), lg = lgamma(al). */
static inline double gamma_elbo_term(double al, double be, double dg, double lb, double lg,
                                     double a, double b)
{
    return (a - 1.0) * (dg - lb) - b * al / be + al - lb + lg + (1.0 - al) * dg;
}

/* Set one factor of q to Gamma(al, be): its shape, rate, mean and
 * exp(E log z); returns its ELBO term (gamma_elbo_term()). */
static inline double vb_set(double al, double be, double a, double b, double *alo,
                            double *beo, double *mean, double *L)
{
    double lg, dg;
    lgamma_digamma(al, &lg, &dg);
    const double lb = log(be);
    *alo = al;
    *beo = be;
    *mean = al / be;
    *L = exp(dg - lb);
    return gamma_elbo_term(al, be, dg, lb, lg, a, b);
}

/* sum over n Gamma(al, be) factors of q of E log Gamma(z; a, b) + H[q]. */
static double gamma_elbo_terms(const double *al, const double *be, R_xlen_t n, double a,
                               double b)
{
    double s = 0.0;
    for (R_xlen_t t = 0; t < n; t++) {
        double lg, dg;
        lgamma_digamma(al[t], &lg, &dg);
        s += gamma_elbo_term(al[t], be[t], dg, log(be[t]), lg, a, b);
    }
    return s + (double) n * (a * log(b) - lgammafn(a));
}

/* ---- variational Bayes ---------------------------------------------------- */

typedef struct {
    double *alW, *beW, *alH, *beH, *W, *H, *elbo;
} pois_vb_state;

typedef struct {
    double *LWt, *LH, *NWt, *NH, *RS;
} pois_vb_work;

/* exp(E log Z) = exp(digamma(al)) / be into L (transposed for W: K x I). */
static void vb_logmeans(const double *al, const double *be, int r, int c, int transpose,
                        double *L)
{
    for (int j = 0; j < c; j++)
        for (int i = 0; i < r; i++) {
            const size_t t = i + (size_t) j * r;
            double lg, dg;
            lgamma_digamma(al[t], &lg, &dg);
            L[transpose ? j + (size_t) i * c : t] = exp(dg - log(be[t]));
        }
}

/* The ELBO given lik = sum X log (LW LH) of the same q and the Gamma terms
 * eW, eH of q(W), q(H) (gamma_elbo_terms()). */
static double vb_elbo(const pois_data *pd, const pois_vb_state *q, double lik, double eW,
                      double eH)
{
    return lik - pd->lfact - bnmf_pois_sum_obs_wh(pd->d, q->W, q->H) + eW + eH;
}

static void vb_work(const pois_data *pd, pois_vb_work *w)
{
    const size_t I = pd->I, J = pd->J, K = pd->K;
    w->LWt = (double *) R_alloc(K * I, sizeof(double));
    w->NWt = (double *) R_alloc(K * I, sizeof(double));
    w->LH = (double *) R_alloc(K * J, sizeof(double));
    w->NH = (double *) R_alloc(K * J, sizeof(double));
    w->RS = (double *) R_alloc(K * (I > J ? I : J), sizeof(double));
}

/**
 * Advance q by n sweeps (in place); tr[s] receives the ELBO after sweep s.
 * Stops when the relative change of the ELBO is at most tol. Returns the
 * number of sweeps done.
 */
static int pois_vb(const pois_data *pd, const pois_prior *pp, pois_vb_state *q, int n,
                   double tol, double *tr, int *converged)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    pois_vb_work w;
    vb_work(pd, &w);
    vb_logmeans(q->alW, q->beW, I, K, 1, w.LWt);
    vb_logmeans(q->alH, q->beH, K, J, 0, w.LH);
    const R_xlen_t nW = (R_xlen_t) I * K, nH = (R_xlen_t) K * J;
    const double cW = (double) nW * (pp->a * log(pp->b) - lgammafn(pp->a));
    const double cH = (double) nH * (pp->c * log(pp->d) - lgammafn(pp->c));
    double eW = gamma_elbo_terms(q->alW, q->beW, nW, pp->a, pp->b);
    double eH = gamma_elbo_terms(q->alH, q->beH, nH, pp->c, pp->d);
    double prev = *q->elbo;
    int done = 0;
    *converged = 0;
    for (int s = 0; s < n; s++) {
        /* q(Z) of the current q(W), q(H), and the ELBO of the state after
         * sweep s - 1 */
        const double lik = bnmf_pois_ratio_pass(pd, w.LWt, w.LH, w.NWt, NULL, 1);
        if (s > 0) {
            const double cur = vb_elbo(pd, q, lik, eW, eH);
            tr[s - 1] = cur;
            if (tol > 0.0 && R_FINITE(prev) && fabs(cur - prev) <= tol * fabs(cur)) {
                *q->elbo = cur;
                *converged = 1;
                return done;
            }
            prev = cur;
        }
        bnmf_pois_obs_sums(pd->d, q->H, 1, w.RS);
        eW = 0.0;
        for (int k = 0; k < K; k++)
            for (int i = 0; i < I; i++) {
                const size_t t = i + (size_t) k * I, u = k + (size_t) i * K;
                eW += vb_set(pp->a + w.LWt[u] * w.NWt[u], pp->b + w.RS[u], pp->a, pp->b,
                             q->alW + t, q->beW + t, q->W + t, w.LWt + u);
            }
        eW += cW;
        R_CheckUserInterrupt();
        bnmf_pois_ratio_pass(pd, w.LWt, w.LH, NULL, w.NH, 0);
        bnmf_pois_obs_sums(pd->d, q->W, 0, w.RS);
        eH = 0.0;
        for (size_t t = 0; t < (size_t) K * J; t++)
            eH += vb_set(pp->c + w.LH[t] * w.NH[t], pp->d + w.RS[t], pp->c, pp->d,
                         q->alH + t, q->beH + t, q->H + t, w.LH + t);
        eH += cH;
        done = s + 1;
        R_CheckUserInterrupt();
    }
    if (done > 0) {
        const double cur = vb_elbo(pd, q, bnmf_pois_ratio_pass(pd, w.LWt, w.LH, NULL, NULL, 1),
                                   eW, eH);
        tr[done - 1] = cur;
        *q->elbo = cur;
        if (tol > 0.0 && R_FINITE(prev) && fabs(cur - prev) <= tol * fabs(cur))
            *converged = 1;
    }
    return done;
}

/* Gamma shapes and rates of q, finite and > 0, read by name. */
static double *gamma_part(SEXP state, const char *name, R_xlen_t n)
{
    double *v = bnmf_real_elt(state, name, n);
    for (R_xlen_t t = 0; t < n; t++)
        if (!(v[t] > 0.0) || !R_FINITE(v[t]))
            Rf_error("bnmf internal error: '%s' must be finite and > 0", name);
    return v;
}

/** Read the Gamma factors of q: shape_W, rate_W (I x K), shape_H, rate_H (K x J). */
void bnmf_pois_read_q(SEXP state, const pois_data *pd, double **alW, double **beW,
                      double **alH, double **beH)
{
    const R_xlen_t nW = (R_xlen_t) pd->I * pd->K, nH = (R_xlen_t) pd->K * pd->J;
    *alW = gamma_part(state, "shape_W", nW);
    *beW = gamma_part(state, "rate_W", nW);
    *alH = gamma_part(state, "shape_H", nH);
    *beH = gamma_part(state, "rate_H", nH);
}

/* A control: one finite number. */
double bnmf_pois_ctrl(SEXP ctrl, const char *name)
{
    const double v = *bnmf_real_elt(ctrl, name, 1);
    if (!R_FINITE(v)) Rf_error("bnmf internal error: ctrl$%s must be finite", name);
    return v;
}

/* A count control: a whole number in [lo, 2^31). */
int bnmf_pois_count(SEXP ctrl, const char *name, int lo)
{
    const double v = bnmf_pois_ctrl(ctrl, name);
    if (v < lo || v > INT_MAX || v != floor(v))
        Rf_error("bnmf internal error: ctrl$%s must be a whole number in [%d, 2^31)", name, lo);
    return (int) v;
}

/* Read the arguments of a .Call entry: the data, the counts, the prior. */
void bnmf_pois_read_args(SEXP data, SEXP x, SEXP prior, int by_row, int beta, nmf_data *d,
                         pois_data *pd, pois_prior *pp)
{
    bnmf_pois_read(data, x, 1, by_row, d, pd);
    bnmf_pois_read_prior(prior, beta, pp);
}

/* Read q: its Gamma factors, W, H (the means) and elbo. */
static void read_vb_state(SEXP state, const pois_data *pd, pois_vb_state *q)
{
    bnmf_pois_read_q(state, pd, &q->alW, &q->beW, &q->alH, &q->beH);
    q->W = bnmf_real_elt(state, "W", (R_xlen_t) pd->I * pd->K);
    q->H = bnmf_real_elt(state, "H", (R_xlen_t) pd->K * pd->J);
    q->elbo = bnmf_real_elt(state, "elbo", 1);
}

/*
 * .Call entry: advance a VB state (list(shape_W, rate_W, shape_H, rate_H, W,
 * H, elbo), modified in place) by ctrl$n sweeps. x: the counts (dense
 * matrix or dgCMatrix values); prior: list(a, b, c, d); ctrl: list(n, tol,
 * threads, known = c(NA, NA) or the `known` of an earlier call on the same
 * data, see bnmf_pois_data_known()).
 * Returns list(trace = the ELBO after each sweep, converged, known).
 */
SEXP bnmf_pois_vb_call(SEXP state, SEXP data, SEXP x, SEXP prior, SEXP ctrl)
{
    nmf_data d; pois_data pd; pois_prior pp; pois_vb_state q;
    bnmf_read_data(data, 1, &d);
    if (TYPEOF(x) != REALSXP || XLENGTH(x) != d.nx)
        Rf_error("bnmf internal error: x must be a double vector of the data's length");
    const double *known = bnmf_real_elt(ctrl, "known", 2);
    bnmf_pois_data_known(&d, REAL(x), 0, known, &pd);
    bnmf_pois_read_prior(prior, 0, &pp);
    read_vb_state(state, &pd, &q);
    pd.threads = bnmf_pois_count(ctrl, "threads", 1);
    const int n = bnmf_pois_count(ctrl, "n", 0);
    const double tol = bnmf_pois_ctrl(ctrl, "tol");
    int converged = 0;
    SEXP v[3];
    double *tr = (double *) R_alloc(n > 0 ? n : 1, sizeof(double));
    const int done = pois_vb(&pd, &pp, &q, n, tol, tr, &converged);
    v[0] = PROTECT(Rf_allocVector(REALSXP, done));
    memcpy(REAL(v[0]), tr, sizeof(double) * done);
    v[1] = PROTECT(Rf_ScalarLogical(converged));
    v[2] = PROTECT(Rf_allocVector(REALSXP, 2));
    REAL(v[2])[0] = pd.nnz;
    REAL(v[2])[1] = pd.lfact;
    const char *names[] = {"trace", "converged", "known"};
    SEXP out = bnmf_named_list(3, names, v);
    UNPROTECT(3);
    return out;
}

/* .Call entry: the ELBO of q (as read by the VB sweeps) for counts x. */
SEXP bnmf_pois_elbo_call(SEXP state, SEXP data, SEXP x, SEXP prior)
{
    nmf_data d; pois_data pd; pois_prior pp; pois_vb_state q;
    bnmf_pois_read_args(data, x, prior, 0, 0, &d, &pd, &pp);
    read_vb_state(state, &pd, &q);
    pois_vb_work w;
    vb_work(&pd, &w);
    vb_logmeans(q.alW, q.beW, pd.I, pd.K, 1, w.LWt);
    vb_logmeans(q.alH, q.beH, pd.K, pd.J, 0, w.LH);
    const double lik = bnmf_pois_ratio_pass(&pd, w.LWt, w.LH, NULL, NULL, 1);
    return Rf_ScalarReal(vb_elbo(&pd, &q, lik,
                                 gamma_elbo_terms(q.alW, q.beW, (R_xlen_t) pd.I * pd.K, pp.a, pp.b),
                                 gamma_elbo_terms(q.alH, q.beH, (R_xlen_t) pd.K * pd.J, pp.c, pp.d)));
}

/* ---- the Gibbs sampler ----------------------------------------------------- */

typedef struct {
    double *W, *H, *logpost, *n_kept;
    double *W_sum, *W_sq, *H_sum, *H_sq, *WH_sum; /* WH_sum: NULL unless dense */
} pois_gibbs_state;

/*
 * Split every positive count multinomially over the factors,
 * Z_ij. ~ Mult(X_ij, W_i. H_.j / (WH)_ij): a count X_ij <= K unit by unit
 * (one uniform each, placed by the cumulative sums of the probabilities),
 * a larger one by successive binomials; adds the splits into ZWt (K x I)
 * and ZH (K x J), zeroed first. Returns sum X_ij log (WH)_ij, summed as
 * the ratio pass sums it (sb: I doubles of scratch).
 */
BNMF_CLONES static double gibbs_split(const pois_data *pd, const double *Wt, const double *H,
                                      double *ZWt, double *ZH, double *p, double *sb)
{
    const int K = pd->K;
    memset(ZWt, 0, sizeof(double) * K * pd->I);
    memset(ZH, 0, sizeof(double) * K * pd->J);
    double lik = 0.0;
    for (int j = 0; j < pd->J; j++) {
        const double *hj = H + (size_t) j * K;
        double *zh = ZH + (size_t) j * K;
        if ((j & 1023) == 1023) R_CheckUserInterrupt();
        for (int q = pd->cp[j]; q < pd->cp[j + 1]; q++) {
            const int i = pd->ri[q];
            const double *wi = Wt + (size_t) i * K;
            double *zw = ZWt + (size_t) i * K;
            /* (WH)_ij and the log likelihood summed as the ratio pass sums
             * them, so that both give the same bits */
            const double s = bnmf_dot4(wi, hj, K);
            for (int k = 0; k < K; k++) p[k] = wi[k] * hj[k];
            const double x = pd->xv[q];
            sb[q - pd->cp[j]] = s < DBL_MIN ? DBL_MIN : s;
            if (x == 1.0 && s >= DBL_MIN) {
                /* the commonest count: the cumulative sums only as far as
                 * the first above the uniform (the same k as below) */
                const double v = bnmf_unif() * s;
                double c = p[0];
                int k = 0;
                while (k < K - 1 && c <= v) c += p[++k];
                zw[k] += 1.0;
                zh[k] += 1.0;
                continue;
            }
            if (x <= K && s >= DBL_MIN) {
                for (int k = 1; k < K; k++) p[k] += p[k - 1]; /* cumulative sums */
                for (int u = 0; u < (int) x; u++) {
                    const double v = bnmf_unif() * s;
                    int k = 0;
                    while (k < K - 1 && p[k] <= v) k++;
                    zw[k] += 1.0;
                    zh[k] += 1.0;
                }
                continue;
            }
            double left = x, rest = s;
            for (int k = 0; k < K && left > 0.0; k++) {
                double z;
                if (k == K - 1) z = left;
                else if (rest > 0.0) {
                    const double pr = p[k] / rest;
                    z = pr >= 1.0 ? left : rbinom(left, pr);
                } else z = rbinom(left, 1.0 / (K - k)); /* underflow: all alike */
                zw[k] += z;
                zh[k] += z;
                left -= z;
                rest -= p[k];
            }
        }
        lik += bnmf_xlog_sum(pd->xv + pd->cp[j], sb, (size_t) (pd->cp[j + 1] - pd->cp[j]));
    }
    return lik;
}

/* log p(X | W, H) given lik = sum X log WH. */
static double pois_loglik(const pois_data *pd, const double *W, const double *H, double lik)
{
    return lik - pd->lfact - bnmf_pois_sum_obs_wh(pd->d, W, H);
}

static double pois_log_prior(const pois_data *pd, const pois_prior *pp, const double *W,
                             const double *H)
{
    return bnmf_gamma_log_prior(W, (R_xlen_t) pd->I * pd->K, pp->a, pp->b) +
        bnmf_gamma_log_prior(H, (R_xlen_t) pd->K * pd->J, pp->c, pp->d);
}

/* Add the state to the running sums (and W H to WH_sum for dense X). */
static void gibbs_accumulate(const pois_data *pd, pois_gibbs_state *st)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    for (size_t t = 0; t < (size_t) I * K; t++) {
        st->W_sum[t] += st->W[t];
        st->W_sq[t] += st->W[t] * st->W[t];
    }
    for (size_t t = 0; t < (size_t) K * J; t++) {
        st->H_sum[t] += st->H[t];
        st->H_sq[t] += st->H[t] * st->H[t];
    }
    if (st->WH_sum) {
        const double one = 1.0;
        F77_CALL(dgemm)("N", "N", &I, &J, &K, &one, st->W, &I, st->H, &K, &one, st->WH_sum,
                        &I FCONE FCONE);
    }
    *st->n_kept += 1.0;
}

/**
 * n Gibbs sweeps (Z, then W, then H); tr (n x 2) receives log p(X | W, H)
 * and the log joint density after each sweep. With accumulate, every
 * thin-th sweep enters the running sums (and, with draws, is copied into
 * Wd, Hd).
 */
static void pois_gibbs(const pois_data *pd, const pois_prior *pp, pois_gibbs_state *st,
                       int n, int accumulate, int thin, double *Wd, double *Hd,
                       double *tr)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    double *Wt = (double *) R_alloc((size_t) K * I, sizeof(double));
    double *ZWt = (double *) R_alloc((size_t) K * I, sizeof(double));
    double *ZH = (double *) R_alloc((size_t) K * J, sizeof(double));
    double *RS = (double *) R_alloc((size_t) K * (I > J ? I : J), sizeof(double));
    double *p = (double *) R_alloc(K, sizeof(double)), *sb = (double *) R_alloc(I, sizeof(double));
    double *W = st->W, *H = st->H;
    int kept = 0;
    for (int s = 0; s < n; s++) {
        bnmf_transpose(W, I, K, Wt);
        const double lik = gibbs_split(pd, Wt, H, ZWt, ZH, p, sb);
        if (s > 0) {
            tr[s - 1] = pois_loglik(pd, W, H, lik);
            tr[s - 1 + n] = tr[s - 1] + pois_log_prior(pd, pp, W, H);
        }
        bnmf_pois_obs_sums(pd->d, H, 1, RS);
        for (int k = 0; k < K; k++)
            for (int i = 0; i < I; i++) {
                const size_t u = k + (size_t) i * K;
                W[i + (size_t) k * I] = rgamma(pp->a + ZWt[u], 1.0 / (pp->b + RS[u]));
            }
        bnmf_pois_obs_sums(pd->d, W, 0, RS);
        for (size_t t = 0; t < (size_t) K * J; t++)
            H[t] = rgamma(pp->c + ZH[t], 1.0 / (pp->d + RS[t]));
        if (accumulate && (s + 1) % thin == 0) {
            gibbs_accumulate(pd, st);
            if (Wd) {
                memcpy(Wd + (size_t) kept * I * K, W, sizeof(double) * I * K);
                memcpy(Hd + (size_t) kept * K * J, H, sizeof(double) * K * J);
            }
            kept++;
        }
        R_CheckUserInterrupt();
    }
    if (n > 0) {
        bnmf_transpose(W, I, K, Wt);
        const double lik = bnmf_pois_ratio_pass(pd, Wt, H, NULL, NULL, 1);
        tr[n - 1] = pois_loglik(pd, W, H, lik);
        tr[2 * n - 1] = tr[n - 1] + pois_log_prior(pd, pp, W, H);
        *st->logpost = tr[2 * n - 1];
    }
}

/* Read a Gibbs state: W, H, logpost, n_kept, W_sum, W_sq, H_sum, H_sq,
 * WH_sum (length I J, or 0: not kept). */
static void read_gibbs_state(SEXP state, const pois_data *pd, pois_gibbs_state *st)
{
    const R_xlen_t nW = (R_xlen_t) pd->I * pd->K, nH = (R_xlen_t) pd->K * pd->J;
    st->W = bnmf_real_elt(state, "W", nW);
    st->H = bnmf_real_elt(state, "H", nH);
    bnmf_check_factors(st->W, st->H, pd->I, pd->J, pd->K);
    st->logpost = bnmf_real_elt(state, "logpost", 1);
    st->n_kept = bnmf_real_elt(state, "n_kept", 1);
    st->W_sum = bnmf_real_elt(state, "W_sum", nW);
    st->W_sq = bnmf_real_elt(state, "W_sq", nW);
    st->H_sum = bnmf_real_elt(state, "H_sum", nH);
    st->H_sq = bnmf_real_elt(state, "H_sq", nH);
    SEXP wh = bnmf_list_get(state, "WH_sum");
    st->WH_sum = NULL;
    if (XLENGTH(wh) > 0)
        st->WH_sum = bnmf_real_elt(state, "WH_sum", (R_xlen_t) pd->I * pd->J);
}

/*
 * .Call entry: advance a Gibbs state (read_gibbs_state(), modified in place)
 * by ctrl$n sweeps; ctrl: list(n, accumulate, thin, keep_draws) (numbers
 * and 0/1 flags). Returns list(trace = n x 2 (loglik, logpost), W_draws,
 * H_draws (the kept draws, one column each, or 0 columns)).
 */
SEXP bnmf_pois_gibbs_call(SEXP state, SEXP data, SEXP x, SEXP prior, SEXP ctrl)
{
    nmf_data d; pois_data pd; pois_prior pp; pois_gibbs_state st;
    bnmf_pois_read_args(data, x, prior, 0, 0, &d, &pd, &pp);
    read_gibbs_state(state, &pd, &st);
    const int n = bnmf_pois_count(ctrl, "n", 0), thin = bnmf_pois_count(ctrl, "thin", 1);
    const int accumulate = bnmf_pois_ctrl(ctrl, "accumulate") != 0.0;
    const int keep = bnmf_pois_ctrl(ctrl, "keep_draws") != 0.0;
    if (n < 0 || thin < 1) Rf_error("bnmf internal error: bad ctrl$n or ctrl$thin");
    const int nk = accumulate && keep ? n / thin : 0;
    SEXP v[3];
    v[0] = PROTECT(Rf_allocMatrix(REALSXP, n, 2));
    v[1] = PROTECT(Rf_allocMatrix(REALSXP, pd.I * pd.K, nk));
    v[2] = PROTECT(Rf_allocMatrix(REALSXP, pd.K * pd.J, nk));
    bnmf_rng_get(0);
    pois_gibbs(&pd, &pp, &st, n, accumulate, thin, nk ? REAL(v[1]) : NULL,
               nk ? REAL(v[2]) : NULL, REAL(v[0]));
    bnmf_rng_put();
    const char *names[] = {"trace", "W_draws", "H_draws"};
    SEXP out = bnmf_named_list(3, names, v);
    UNPROTECT(3);
    return out;
}
