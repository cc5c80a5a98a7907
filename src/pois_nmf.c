/*
 * pois_nmf.c -- Bayesian Poisson-Gamma NMF (Cemgil 2009): variational Bayes
 * (pois_vb.c) and the auxiliary-variable Gibbs sampler (pois_gibbs.c); this
 * file: the data and the kernels they share.
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
#include "vlog.h"

/* ---- the data ----------------------------------------------------------- */

static void pois_rows_fill(const pois_data *pd, int *rp, int *cj, double *rx);
static void pois_rows_make(pois_data *pd);

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
    if (by_row) pois_rows_make(pd);
}

/* pd's row layout, made here (R_alloc) */
static void pois_rows_make(pois_data *pd)
{
    const size_t n = pd->nnz ? (size_t) pd->nnz : 1;
    pd->rp = (int *) R_alloc((size_t) pd->I + 1, sizeof(int));
    pd->cj = (int *) R_alloc(n, sizeof(int));
    pd->rx = (double *) R_alloc(n, sizeof(double));
    pois_rows_fill(pd, pd->rp, pd->cj, pd->rx);
}

/* The row layout of pd's counts into rp (I + 1), cj and rx (nnz each): the
 * columns of each row in increasing order. */
static void pois_rows_fill(const pois_data *pd, int *rp, int *cj, double *rx)
{
    const int I = pd->I;
    int *next = (int *) R_alloc((size_t) I + 1, sizeof(int));
    for (int i = 0; i <= I; i++) rp[i] = 0;
    for (int q = 0; q < pd->nnz; q++) rp[pd->ri[q] + 1]++;
    for (int i = 0; i < I; i++) rp[i + 1] += rp[i];
    for (int i = 0; i < I; i++) next[i] = rp[i];
    for (int j = 0; j < pd->J; j++)
        for (int q = pd->cp[j]; q < pd->cp[j + 1]; q++) {
            const int r = next[pd->ri[q]]++;
            cj[r] = j;
            rx[r] = pd->xv[q];
        }
}

/*
 * The row layout of the counts for the VB sweeps' ratio passes in row order
 * (bnmf_pois_ratio_rows), from ctrl$rows: absent or NULL, none; TRUE, built
 * here for this call; or list(rp, cj, rx) as bnmf_pois_rows_call() made it
 * for the same counts (kept by the caller across calls: not built again).
 */
static void pois_rows_attach(SEXP ctrl, pois_data *pd)
{
    SEXP r = bnmf_list_get_opt(ctrl, "rows");
    if (r == R_NilValue) return;
    if (TYPEOF(r) == LGLSXP && XLENGTH(r) == 1 && LOGICAL(r)[0] == TRUE) {
        pois_rows_make(pd);
        return;
    }
    SEXP rp = bnmf_list_get(r, "rp"), cj = bnmf_list_get(r, "cj"), rx = bnmf_list_get(r, "rx");
    if (TYPEOF(rp) != INTSXP || XLENGTH(rp) != (R_xlen_t) pd->I + 1 || TYPEOF(cj) != INTSXP ||
        XLENGTH(cj) != pd->nnz || TYPEOF(rx) != REALSXP || XLENGTH(rx) != pd->nnz ||
        INTEGER(rp)[0] != 0 || INTEGER(rp)[pd->I] != pd->nnz)
        Rf_error("bnmf internal error: ctrl$rows is not the row layout of these counts");
    /* the passes index by them: in bounds */
    const int *p = INTEGER(rp), *c = INTEGER(cj);
    for (int i = 0; i < pd->I; i++)
        if (p[i + 1] < p[i]) Rf_error("bnmf internal error: ctrl$rows$rp must not decrease");
    for (int q = 0; q < pd->nnz; q++)
        if (c[q] < 0 || c[q] >= pd->J) Rf_error("bnmf internal error: ctrl$rows$cj out of range");
    pd->rp = INTEGER(rp);
    pd->cj = INTEGER(cj);
    pd->rx = REAL(rx);
}

/* .Call entry: the row layout of the positive observed counts of x (data,
 * x as for the VB sweeps), list(rp, cj, rx), for ctrl$rows of the VB calls
 * on the same counts. */
SEXP bnmf_pois_rows_call(SEXP data, SEXP x)
{
    nmf_data d; pois_data pd;
    bnmf_read_data(data, 1, &d);
    if (TYPEOF(x) != REALSXP || XLENGTH(x) != d.nx)
        Rf_error("bnmf internal error: x must be a double vector of the data's length");
    bnmf_pois_data(&d, REAL(x), 0, &pd);
    SEXP v[3];
    v[0] = PROTECT(Rf_allocVector(INTSXP, (R_xlen_t) pd.I + 1));
    v[1] = PROTECT(Rf_allocVector(INTSXP, pd.nnz));
    v[2] = PROTECT(Rf_allocVector(REALSXP, pd.nnz));
    pois_rows_fill(&pd, INTEGER(v[0]), INTEGER(v[1]), REAL(v[2]));
    const char *names[] = {"rp", "cj", "rx"};
    SEXP out = bnmf_named_list(3, names, v);
    UNPROTECT(3);
    return out;
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

/* Read the arguments of a .Call entry: the data, the counts, the prior. */
void bnmf_pois_read_args(SEXP data, SEXP x, SEXP prior, int by_row, int beta, nmf_data *d,
                         pois_data *pd, pois_prior *pp)
{
    bnmf_pois_read(data, x, 1, by_row, d, pd);
    bnmf_pois_read_prior(prior, beta, pp);
}

/* The arguments of a .Call entry on counts (Poisson VB in memory and by
 * blocks, Gibbs by blocks): the counts (data, x: the columns as
 * prepare_data() lays them out), the prior, and ctrl$known (what an
 * earlier call on the same x found, as bnmf_pois_data_known takes it; NA
 * until then). */
void bnmf_pois_read_known(SEXP data, SEXP x, SEXP prior, SEXP ctrl, nmf_data *d, pois_data *pd,
                          pois_prior *pp)
{
    bnmf_read_data(data, 1, d);
    if (TYPEOF(x) != REALSXP || XLENGTH(x) != d->nx)
        Rf_error("bnmf internal error: x must be a double vector of the data's length");
    bnmf_pois_data_known(d, REAL(x), 0, bnmf_real_elt(ctrl, "known", 2), pd);
    pois_rows_attach(ctrl, pd);
    bnmf_pois_read_prior(prior, 0, pp);
}

/* The list a block's .Call entry returns: its n statistics v[0..n-1]
 * (protected by the caller) named by `names`, then `known` = c(nnz, lfact)
 * of pd for the block's next call (bnmf_pois_data_known). */
SEXP bnmf_pois_block_list(int n, const char **names, SEXP *v, const pois_data *pd)
{
    const char *nm[16];
    if (n > 15) Rf_error("bnmf internal error: a block returns at most 15 statistics");
    for (int t = 0; t < n; t++) nm[t] = names[t];
    nm[n] = "known";
    v[n] = PROTECT(Rf_allocVector(REALSXP, 2));
    REAL(v[n])[0] = pd->nnz;
    REAL(v[n])[1] = pd->lfact;
    SEXP out = bnmf_named_list(n + 1, nm, v);
    UNPROTECT(1);
    return out;
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
    const int K = pd->K, qend = pd->cp[j1];
    for (int j = j0; j < j1; j++) {
        const double *bj = B + (size_t) j * K;
        double *nb = NB ? NB + (size_t) j * K : NULL;
        const int q0 = pd->cp[j];
        for (int q = q0; q < pd->cp[j + 1]; q++) {
            const int i = pd->ri[q];
            const double *ai = At + (size_t) i * K;
            if (q + BNMF_POIS_PF < qend) {
                const size_t i2 = (size_t) pd->ri[q + BNMF_POIS_PF] * K;
                BNMF_PF_ROW(At + i2, K, 0);
                if (NAt) BNMF_PF_ROW(NAt + i2, K, 1);
            }
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

/* Rows [i0, i1) of the ratio pass in row order (pd->rp, cj, rx): each row's
 * NAt[, i] = sum_j r_ij B[, j] added up in the order of the columns j, as
 * the column-order pass adds them into the row (the same bits), and, unless
 * lik is NULL, the row's sum x log s (bnmf_xlog_sum over its rates in sb)
 * added to *lik in row order. B's columns are read at random places (the
 * smaller of the two factors when J < I), NAt's row stays in the cache. */
BNMF_CLONES static void ratio_rows(const pois_data *pd, const double *At, const double *B,
                                   double *NAt, double *lik, double *sb, int i0, int i1)
{
    const int K = pd->K, qend = pd->rp[i1];
    for (int i = i0; i < i1; i++) {
        const double *ai = At + (size_t) i * K;
        double *na = NAt ? NAt + (size_t) i * K : NULL;
        const int q0 = pd->rp[i];
        for (int q = q0; q < pd->rp[i + 1]; q++) {
            const double *bj = B + (size_t) pd->cj[q] * K;
            if (q + BNMF_POIS_PF < qend) BNMF_PF_ROW(B + (size_t) pd->cj[q + BNMF_POIS_PF] * K, K, 0);
            double s = bnmf_dot4(ai, bj, K);
            if (s < DBL_MIN) s = DBL_MIN;
            sb[q - q0] = s;
            if (na) bnmf_axpy4(na, pd->rx[q] / s, bj, K);
        }
        if (lik) *lik += bnmf_xlog_sum(pd->rx + q0, sb, (size_t) (pd->rp[i + 1] - q0));
    }
}

/**
 * The ratio pass of bnmf_pois_ratio_pass() without NB, in row order (pd
 * laid out by row too): NAt (K x I) gets the same values, bit for bit; the
 * log likelihood is summed by row, so its last bits differ from the
 * column-order pass's. With pd->threads = T > 1 each block of rows is split
 * into T ranges of about equal counts: the threads write disjoint rows of NAt
 * (no private copies) and their partial log likelihoods are added in thread
 * order.
 */
double bnmf_pois_ratio_rows(const pois_data *pd, const double *At, const double *B, double *NAt,
                            int want_lik)
{
    const int K = pd->K, I = pd->I;
    if (NAt) memset(NAt, 0, sizeof(double) * (size_t) K * I);
    int T = pd->threads;
#ifndef _OPENMP
    T = 1;
#endif
    if (T > I) T = I > 0 ? I : 1;
    double *part = (double *) R_alloc(T, sizeof(double));
    double *sb = (double *) R_alloc((size_t) T * (pd->J > 0 ? pd->J : 1), sizeof(double));
    for (int t = 0; t < T; t++) part[t] = 0.0;
    const int block = 4096;
    for (int i0 = 0; i0 < I; i0 += block) {
        const int i1 = I - i0 < block ? I : i0 + block;
        if (T == 1) {
            ratio_rows(pd, At, B, NAt, want_lik ? part : NULL, sb, i0, i1);
        } else {
#ifdef _OPENMP
#pragma omp parallel for num_threads(T) schedule(static, 1)
#endif
            for (int t = 0; t < T; t++) {
                const int a = split_col(pd->rp, i0, i1, t, T), b = split_col(pd->rp, i0, i1, t + 1, T);
                ratio_rows(pd, At, B, NAt, want_lik ? part + t : NULL, sb + (size_t) t * pd->J, a, b);
            }
        }
        R_CheckUserInterrupt();
    }
    double lik = 0.0;
    for (int t = 0; t < T; t++) lik += part[t];
    return lik;
}

/* sum of log Gamma(shape, rate) densities of n values: (shape - 1) times
 * the sum of their logs (four at a time, bnmf_log4, within about an ulp of
 * log(); a group of four with a value that is not positive, normal and
 * finite by log(); none for shape 1, the exponential density) less rate
 * times their sum. */
BNMF_CLONES double bnmf_gamma_log_prior(const double *Z, R_xlen_t n, double shape, double rate)
{
    double sl = 0.0, sz = 0.0;
    R_xlen_t t = 0;
    const double cst = (double) n * (shape * log(rate) - lgammafn(shape));
    if (shape == 1.0) {
        for (; t < n; t++) sz += Z[t];
        return cst - rate * sz;
    }
#if defined(__GNUC__)
    const bnmf_v4 zero = {0.0, 0.0, 0.0, 0.0};
    bnmf_v4 al = zero, az = zero;
    for (; t + 4 <= n; t += 4) {
        const bnmf_v4 z = *(const bnmf_v4 *) (Z + t);
        const bnmf_v4i ex = ((bnmf_v4i) z >> 52) & 0x7FF;
        const bnmf_v4i odd = (ex == 0) | (ex == 0x7FF) | (z < zero);
        az += z;
        if (odd[0] | odd[1] | odd[2] | odd[3]) {
            for (int l = 0; l < 4; l++) al[l] += log(z[l]);
            continue;
        }
        bnmf_v4 lg;
        bnmf_log4(&lg, &z);
        al += lg;
    }
    sl = (al[0] + al[1]) + (al[2] + al[3]);
    sz = (az[0] + az[1]) + (az[2] + az[3]);
#endif
    for (; t < n; t++) {
        sl += log(Z[t]);
        sz += Z[t];
    }
    return (shape - 1.0) * sl - rate * sz + cst;
}
