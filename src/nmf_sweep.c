/*
 * nmf_sweep.c -- Gibbs sampling and iterated conditional modes (ICM) for
 * Bayesian NMF with a Gaussian likelihood and exponential priors
 * (Schmidt, Winther & Hansen 2009, Algorithms 1 and 2).
 *
 * Model, for the observed entries (i, j) in Omega:
 *   X_ij ~ N((WH)_ij, 1/tau),  W_ik ~ Exp(lamW_ik),  H_kj ~ Exp(lamH_kj),
 *   tau ~ Gamma(alpha, beta)   (shape, rate).
 *
 * One sweep, two uses. Row i of W, given H and tau, has the conditional
 *   p(w_i | .) propto exp(-tau/2 w_i' G_i w_i + tau w_i' b_i - lamW_i' w_i),  w_i >= 0
 * with G_i = sum_{j in Omega_i} h_j h_j' and b_i = sum_{j in Omega_i} X_ij h_j.
 * Coordinate k of it is N+(mu, 1/p) (a normal truncated to [0, inf)) with
 *   p  = tau G_i[k,k],
 *   mu = (b_ik - sum_{l != k} G_i[k,l] w_il - lamW_ik / tau) / G_i[k,k].
 * The Gibbs sampler draws it (rtnorm); ICM takes its mode max(mu, 0). The
 * columns h_j of H are updated by the same kernel with the roles swapped.
 * Rows of W are conditionally independent given H, so updating them row by
 * row (all k of row i, then row i + 1) is the same transition as Schmidt's
 * column-by-column order.
 *
 * Complete data: G_i = H H' for every row and b_i is row i of D = X H'; the
 * products D = X H' and F = W' X are the only O(I J K) work of a sweep
 * (Schmidt's Algorithm 1). The noise needs no I x J residual:
 *   SSE = ||X||^2 - 2 sum_j h_j' f_j + sum_j h_j' G_j h_j.
 *
 * Missing entries, two exact strategies:
 *  - augmented (Gibbs): the missing X_ij are latent variables, redrawn each
 *    sweep from N((WH)_ij, 1/tau); the sweep then runs at complete-data speed.
 *    tau is drawn with the missing entries integrated out (the block
 *    (tau, X_miss) is drawn jointly from p(tau | W, H, X_obs) p(X_miss | ...)).
 *  - masked (ICM; available to Gibbs): the data hold zeros at missing entries
 *    and G_i = H H' - sum_{j missing in row i} h_j h_j' (or the sum over the
 *    observed j when that is shorter), so only O(|missing| K^2) work is added.
 *
 * tau | W, H ~ Gamma(alpha + |Omega|/2, beta + SSE/2); its mode for ICM is
 * (alpha + |Omega|/2 - 1) / (beta + SSE/2).
 *
 * The Gibbs sampler adds an exact move along the scale of each factor
 * (scale_move), which WH does not see and coordinate updates explore slowly.
 * ICM also maximises each row's block fully (repeated coordinate passes) and
 * the scale of each factor (balance_scales): both are exact maximisations of
 * the joint posterior along a set of directions, so the log posterior still
 * never decreases and the fixed points are the KKT points of the MAP problem.
 */
#include <limits.h>
#include "bnmf_call.h"
#include "nmf.h"

/* ------------------------------------------------------------------------ */
/* Kernels                                                                  */
/* ------------------------------------------------------------------------ */

/**
 * Update the K coordinates of one row of a factor in turn.
 * @param z    the row (K values, contiguous), updated in place
 * @param G    K x K Gram matrix of the other factor for this row
 * @param b    K values: the data projected on the other factor
 * @param lam  K exponential rates (stride ls)
 * @param tau  noise precision
 * @param rule RULE_DRAW (Gibbs) or RULE_MODE (ICM)
 */
static double update_row_once(double *z, const double *G, const double *b,
                              const double *lam, int ls, double tau, int K,
                              nmf_rule rule)
{
    double change = 0.0;
    for (int k = 0; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        const double gkk = gk[k];
        const double lk = lam[(size_t) k * ls];
        double s = b[k];
        for (int l = 0; l < K; l++) s -= gk[l] * z[l];
        s += gkk * z[k];
        double znew;
        if (gkk > 0.0) {
            const double mu = (s - lk / tau) / gkk;
            if (rule == RULE_DRAW)
                znew = bnmf_rtnorm1(mu, 1.0 / sqrt(tau * gkk), 0.0, R_PosInf);
            else
                znew = mu > 0.0 ? mu : 0.0;
        } else {
            /* The data say nothing about this coordinate: its conditional is
             * the prior Exp(lk) (proper, lk > 0, for Gibbs). */
            if (rule == RULE_DRAW)
                znew = exp_rand() / lk;
            else
                znew = lk > 0.0 ? 0.0 : z[k];
        }
        change += fabs(znew - z[k]);
        z[k] = znew;
    }
    return change;
}

/* ICM makes up to ICM_MAX_PASSES coordinate passes over a row (stopping
 * early once the row no longer moves): a pass costs O(K^2) against O(J K)
 * for the row's share of the products, and a few passes move the row much
 * closer to its block maximum. Measured at I = J = 1000, K = 20 (bench/):
 * with 3 passes a sweep costs about 1.15x the products and reaches RcppML's
 * error in about 0.96x its time; 10 passes reach it sooner (0.6-0.85x) but
 * cost about 1.5x per sweep. The Gibbs sampler makes one pass. */
#define ICM_MAX_PASSES 3

static void update_row(double *z, const double *G, const double *b,
                       const double *lam, int ls, double tau, int K,
                       nmf_rule rule)
{
    double change = update_row_once(z, G, b, lam, ls, tau, K, rule);
    if (rule != RULE_MODE) return;
    for (int pass = 1; pass < ICM_MAX_PASSES; pass++) {
        double size = 0.0;
        for (int k = 0; k < K; k++) size += z[k];
        if (change <= 1e-8 * size) break;
        change = update_row_once(z, G, b, lam, ls, tau, K, rule);
    }
}

/**
 * G += sign * sum_m v_m v_m' (upper triangle) over the vectors v_m = base +
 * idx[m] * stride (K contiguous values each). Four vectors at a time, so that
 * G is read and written once per four rank-one terms.
 */
static void gram_update(double *G, const double *base, int stride,
                        const int *idx, int n, int K, double sign)
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

static void symmetrise(double *G, int K)
{
    for (int b = 0; b < K; b++)
        for (int a = b + 1; a < K; a++)
            G[a + (size_t) b * K] = G[b + (size_t) a * K];
}

/**
 * Gram matrix of the other factor restricted to the observed entries of one
 * row (or column): G_full minus the terms of the missing entries, or the
 * observed terms summed directly when those are fewer. `other` holds n
 * vectors of K contiguous values, `ostride` apart; `miss` lists the nm
 * missing ones, sorted.
 */
static void masked_gram(double *Gi, const double *Gfull, const double *other,
                        int ostride, int n, const int *miss, int nm, int K,
                        int *obs)
{
    if (2 * nm <= n) {
        memcpy(Gi, Gfull, sizeof(double) * K * K);
        gram_update(Gi, other, ostride, miss, nm, K, -1.0);
    } else {
        memset(Gi, 0, sizeof(double) * K * K);
        int m = 0, no = 0;
        for (int t = 0; t < n; t++) {
            if (m < nm && miss[m] == t) { m++; continue; }
            obs[no++] = t;
        }
        gram_update(Gi, other, ostride, obs, no, K, 1.0);
    }
    symmetrise(Gi, K);
}

static double quad_form(const double *G, const double *z, int K)
{
    double s = 0.0;
    for (int b = 0; b < K; b++) {
        const double *Gb = G + (size_t) b * K;
        double t = 0.0;
        for (int a = 0; a < K; a++) t += Gb[a] * z[a];
        s += t * z[b];
    }
    return s;
}

/* sum_t log(lam_t) over the proper (lam_t > 0) entries: the constant part of
 * the exponential log prior, computed once per call. */
static double sum_log_rates(const double *lam, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++)
        if (lam[t] > 0.0) s += log(lam[t]);
    return s;
}

/* -sum_t lam_t z_t: the part of the exponential log prior that varies. */
static double exp_log_kernel(const double *z, const double *lam, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s -= lam[t] * z[t];
    return s;
}

/* Scratch space of a sweep, from R_alloc. */
typedef struct {
    double *D, *F, *G, *Gi, *zrow, *brow;
    double *Wt, *Ht;  /* K x I and J x K transposes of W and H */
    int *obs;         /* observed indices of a row or column */
} sweep_work;

/**
 * Update every row of W given H and tau.
 * Masked: rows with missing entries use their own Gram matrix.
 */
static void update_W(const nmf_data *d, const nmf_prior *pr, const double *x,
                     double *W, const double *H, double tau, nmf_rule rule,
                     int masked, sweep_work *ws)
{
    const int I = d->I, J = d->J, K = d->K;
    bnmf_x_ht(d, x, H, ws->D, ws->Ht);
    bnmf_gram_rows(H, K, J, ws->G);
    for (int i = 0; i < I; i++) {
        const double *G = ws->G;
        if (masked) {
            const int nm = d->mrow_ptr[i + 1] - d->mrow_ptr[i];
            if (nm > 0) {
                masked_gram(ws->Gi, ws->G, H, K, J,
                            d->mrow_j + d->mrow_ptr[i], nm, K, ws->obs);
                G = ws->Gi;
            }
        }
        for (int k = 0; k < K; k++) {
            ws->zrow[k] = W[i + (size_t) k * I];
            ws->brow[k] = ws->D[i + (size_t) k * I];
        }
        update_row(ws->zrow, G, ws->brow, pr->lamW + i, I, tau, K, rule);
        for (int k = 0; k < K; k++) W[i + (size_t) k * I] = ws->zrow[k];
    }
}

/**
 * Update every column of H given W and tau; returns the pieces of the SSE
 * for the new H: *lin = sum_j h_j' f_j and *quad = sum_j h_j' G_j h_j.
 */
static void update_H(const nmf_data *d, const nmf_prior *pr, const double *x,
                     const double *W, double *H, double tau, nmf_rule rule,
                     int masked, int update, sweep_work *ws, double *lin,
                     double *quad)
{
    const int I = d->I, J = d->J, K = d->K;
    bnmf_wt_x(d, x, W, ws->F, ws->Wt);
    bnmf_gram_cols(W, I, K, ws->G);
    double sl = 0.0, sq = 0.0;
    for (int j = 0; j < J; j++) {
        const double *G = ws->G;
        if (masked) {
            const int nm = d->mcol_ptr[j + 1] - d->mcol_ptr[j];
            if (nm > 0) {
                masked_gram(ws->Gi, ws->G, ws->Wt, K, I,
                            d->miss_i + d->mcol_ptr[j], nm, K, ws->obs);
                G = ws->Gi;
            }
        }
        double *hj = H + (size_t) j * K;
        const double *fj = ws->F + (size_t) j * K;
        if (update)
            update_row(hj, G, fj, pr->lamH + (size_t) j * K, 1, tau, K, rule);
        for (int k = 0; k < K; k++) sl += hj[k] * fj[k];
        sq += quad_form(G, hj, K);
    }
    *lin = sl;
    *quad = sq;
}

/* A_k = sum_i lamW_ik W_ik and B_k = sum_j lamH_kj H_kj: the prior's pull on
 * the scale of factor k. */
static void scale_sums(const nmf_data *d, const nmf_prior *pr, const double *W,
                       const double *H, int k, double *A, double *B)
{
    const int I = d->I, J = d->J, K = d->K;
    double a = 0.0, b = 0.0;
    for (int i = 0; i < I; i++) a += pr->lamW[i + (size_t) k * I] * W[i + (size_t) k * I];
    for (int j = 0; j < J; j++) b += pr->lamH[k + (size_t) j * K] * H[k + (size_t) j * K];
    *A = a;
    *B = b;
}

/* W[, k] c and H[k, ] / c. */
static void rescale_factor(const nmf_data *d, double *W, double *H, int k, double c)
{
    const int I = d->I, J = d->J, K = d->K;
    for (int i = 0; i < I; i++) W[i + (size_t) k * I] *= c;
    for (int j = 0; j < J; j++) H[k + (size_t) j * K] /= c;
}

/**
 * ICM only: maximise the log posterior along the scale path of each factor,
 * W[, k] c and H[k, ] / c, which leaves WH (so the likelihood) unchanged. The
 * log prior -c A_k - B_k / c, with A_k = sum_i lamW_ik W_ik and
 * B_k = sum_j lamH_kj H_kj, is largest at c = sqrt(B_k / A_k). Every MAP
 * satisfies A_k = B_k; coordinate updates alone approach that balance only
 * slowly, because the posterior is nearly flat along this path.
 */
static void balance_scales(const nmf_data *d, const nmf_prior *pr, double *W,
                           double *H)
{
    for (int k = 0; k < d->K; k++) {
        double A, B;
        scale_sums(d, pr, W, H, k, &A, &B);
        if (A > 0.0 && B > 0.0) rescale_factor(d, W, H, k, sqrt(B / A));
    }
}

/**
 * Gibbs only: a move along the scale path of each factor, W[, k] c and
 * H[k, ] / c, which leaves WH unchanged and which single-coordinate updates
 * traverse only slowly (the scale of a factor is set by the prior alone).
 * By the generalised Gibbs sampler of Liu & Sabatti (2000), drawing the group
 * element u = log c from
 *   p(u) propto pi(c W, H / c) |Jacobian| = exp(-A_k c - B_k / c) c^(I - J)
 * (A_k = sum_i lamW_ik W_ik, B_k = sum_j lamH_kj H_kj; Lebesgue measure in u is
 * the Haar measure of the scale group), or taking any Metropolis-Hastings
 * step from u = 0 that leaves p(u) invariant, preserves the posterior.
 * log p(u) = -A e^u - B e^-u + (I - J) u is concave with the mode
 * e^u* = ((I - J) + sqrt((I - J)^2 + 4 A B)) / (2 A) and curvature
 * A e^u* + B e^-u*; its tails are lighter than Gaussian, so an independence
 * proposal from the Laplace approximation N(u*, 1 / curvature) is uniformly
 * ergodic and accepts nearly always.
 */
static void scale_move(const nmf_data *d, const nmf_prior *pr, double *W,
                       double *H)
{
    const double p = (double) d->I - (double) d->J;
    for (int k = 0; k < d->K; k++) {
        double A, B;
        scale_sums(d, pr, W, H, k, &A, &B);
        if (!(A > 0.0) || !(B > 0.0)) continue;
        const double y = (p + sqrt(p * p + 4.0 * A * B)) / (2.0 * A);
        const double mode = log(y);
        const double sd = 1.0 / sqrt(A * y + B / y);
        const double u = mode + sd * norm_rand();
        /* log target minus log proposal, at the proposal and at u = 0. */
        const double z1 = (u - mode) / sd, z0 = mode / sd;
        const double log_ratio = (-A * exp(u) - B * exp(-u) + p * u + 0.5 * z1 * z1) -
            (-A - B + 0.5 * z0 * z0);
        if (log(unif_rand()) >= log_ratio) continue;
        rescale_factor(d, W, H, k, exp(u));
    }
}

/* ------------------------------------------------------------------------ */
/* The .Call entry point                                                    */
/* ------------------------------------------------------------------------ */

static SEXP list_get(SEXP list, const char *name)
{
    SEXP names = Rf_getAttrib(list, R_NamesSymbol);
    if (TYPEOF(names) != STRSXP || XLENGTH(names) != XLENGTH(list))
        Rf_error("bnmf internal error: a named list is expected (looking for '%s')", name);
    for (R_xlen_t t = 0; t < XLENGTH(list); t++)
        if (strcmp(CHAR(STRING_ELT(names, t)), name) == 0)
            return VECTOR_ELT(list, t);
    Rf_error("bnmf internal error: component '%s' is missing", name);
    return R_NilValue; /* not reached */
}

static double *real_elt(SEXP list, const char *name, R_xlen_t len)
{
    SEXP v = list_get(list, name);
    if (TYPEOF(v) != REALSXP || (len >= 0 && XLENGTH(v) != len))
        Rf_error("bnmf internal error: '%s' must be a double vector of length %lld",
                 name, (long long) len);
    return REAL(v);
}

static const int *int_elt(SEXP list, const char *name, R_xlen_t len)
{
    SEXP v = list_get(list, name);
    if (TYPEOF(v) != INTSXP || (len >= 0 && XLENGTH(v) != len))
        Rf_error("bnmf internal error: '%s' must be an integer vector of length %lld",
                 name, (long long) len);
    return INTEGER(v);
}

/* Welford update of a running mean and sum of squared deviations. */
static inline void welford(double *mean, double *m2, double v, double n)
{
    const double delta = v - *mean;
    *mean += delta / n;
    *m2 += delta * (v - *mean);
}

/* Accumulate the running moments of WH on the entries the fit keeps. */
static void accumulate_wh(const nmf_data *d, const double *W, const double *H,
                          double *mean, double *m2, double n)
{
    const int I = d->I, J = d->J, K = d->K;
    if (d->sparse) {
        for (int j = 0; j < J; j++)
            for (int p = d->xp[j]; p < d->xp[j + 1]; p++)
                welford(mean + p, m2 + p,
                        bnmf_wh_entry(W, H, I, K, d->xi[p], j), n);
        return;
    }
    const int nb = J < 64 ? J : 64;
    double *S = (double *) R_alloc((size_t) I * nb, sizeof(double));
    const double one = 1.0, zero = 0.0;
    for (int j0 = 0; j0 < J; j0 += nb) {
        int m = J - j0 < nb ? J - j0 : nb;
        F77_CALL(dgemm)("N", "N", &I, &m, &K, &one, W, &I, H + (size_t) j0 * K,
                        &K, &zero, S, &I FCONE FCONE);
        double *mu = mean + (size_t) j0 * I, *s2 = m2 + (size_t) j0 * I;
        for (size_t t = 0; t < (size_t) I * m; t++) welford(mu + t, s2 + t, S[t], n);
    }
}

/*
 * Advance a fit's state by ctrl[0] sweeps, in place.
 *
 * state: list(W, H, tau, x, sumsq, logpost, n_kept, and the running moments
 *        W_mean, W_m2, H_mean, H_m2, tau_mean, tau_m2, WH_mean, WH_m2);
 * data:  list(dims = c(I, J, K), sparse, xi, xp, miss_pos, miss_i, miss_j,
 *        mcol_ptr, mrow_ptr, mrow_j, sumsq_obs, n_obs);
 * prior: list(lamW, lamH, alpha, beta);
 * ctrl:  c(n_sweeps, rule, masked, accumulate, thin, keep_draws, update_W,
 *        update_H, update_tau, tol).
 * Returns list(trace = n x 3 matrix (loglik, tau, logpost), W_draws, H_draws).
 */
SEXP bnmf_nmf_sweeps_call(SEXP state, SEXP data, SEXP prior, SEXP ctrl)
{
    if (TYPEOF(state) != VECSXP || TYPEOF(data) != VECSXP ||
        TYPEOF(prior) != VECSXP)
        Rf_error("bnmf internal error: state, data and prior must be lists");
    if (TYPEOF(ctrl) != REALSXP || XLENGTH(ctrl) != 10)
        Rf_error("bnmf internal error: ctrl must be a double vector of length 10");
    const double *c = REAL(ctrl);
    for (int t = 0; t < 10; t++)
        if (!R_FINITE(c[t]))
            Rf_error("bnmf internal error: ctrl[%d] is not finite", t + 1);
    if (c[0] < 0 || c[0] > INT_MAX || c[4] < 1 || c[4] > INT_MAX)
        Rf_error("bnmf internal error: need 0 <= n_sweeps and 1 <= thin, both below 2^31");
    const int n_sweeps = (int) c[0], thin = (int) c[4];
    const nmf_rule rule = c[1] == 0 ? RULE_DRAW : RULE_MODE;
    const int masked = c[2] != 0, accumulate = c[3] != 0, keep_draws = c[5] != 0;
    const int upd_W = c[6] != 0, upd_H = c[7] != 0, upd_tau = c[8] != 0;
    const double tol = c[9];
    if (n_sweeps < 0 || thin < 1)
        Rf_error("bnmf internal error: need n_sweeps >= 0 and thin >= 1");

    /* data */
    nmf_data d;
    const int *dims = int_elt(data, "dims", 3);
    d.I = dims[0]; d.J = dims[1]; d.K = dims[2];
    if (d.I < 1 || d.J < 1 || d.K < 1)
        Rf_error("bnmf internal error: dimensions must be positive");
    const int I = d.I, J = d.J, K = d.K;
    d.sparse = *int_elt(data, "sparse", 1) != 0;
    R_xlen_t nx = (R_xlen_t) I * J;
    if (d.sparse) {
        d.xp = int_elt(data, "xp", (R_xlen_t) J + 1);
        nx = d.xp[J];
        d.xi = int_elt(data, "xi", nx);
        if (d.xp[0] != 0 || nx < 0)
            Rf_error("bnmf internal error: bad column pointers");
        for (int j = 0; j < J; j++)
            if (d.xp[j + 1] < d.xp[j])
                Rf_error("bnmf internal error: bad column pointers");
        for (R_xlen_t p = 0; p < nx; p++)
            if (d.xi[p] < 0 || d.xi[p] >= I)
                Rf_error("bnmf internal error: row index out of range");
    } else {
        d.xi = d.xp = NULL;
    }
    d.nmiss = (int) XLENGTH(list_get(data, "miss_pos"));
    d.miss_pos = int_elt(data, "miss_pos", d.nmiss);
    d.miss_i = int_elt(data, "miss_i", d.nmiss);
    d.miss_j = int_elt(data, "miss_j", d.nmiss);
    d.mcol_ptr = int_elt(data, "mcol_ptr", (R_xlen_t) J + 1);
    d.mrow_ptr = int_elt(data, "mrow_ptr", (R_xlen_t) I + 1);
    d.mrow_j = int_elt(data, "mrow_j", d.nmiss);
    for (int m = 0; m < d.nmiss; m++)
        if (d.miss_pos[m] < 0 || d.miss_pos[m] >= nx || d.miss_i[m] < 0 ||
            d.miss_i[m] >= I || d.miss_j[m] < 0 || d.miss_j[m] >= J ||
            d.mrow_j[m] < 0 || d.mrow_j[m] >= J)
            Rf_error("bnmf internal error: missing-entry index out of range");
    if (d.mcol_ptr[0] != 0 || d.mcol_ptr[J] != d.nmiss || d.mrow_ptr[0] != 0 ||
        d.mrow_ptr[I] != d.nmiss)
        Rf_error("bnmf internal error: bad missing-entry pointers");
    for (int j = 0; j < J; j++)
        if (d.mcol_ptr[j + 1] < d.mcol_ptr[j])
            Rf_error("bnmf internal error: bad missing-entry pointers");
    for (int i = 0; i < I; i++)
        if (d.mrow_ptr[i + 1] < d.mrow_ptr[i])
            Rf_error("bnmf internal error: bad missing-entry pointers");
    d.sumsq_obs = *real_elt(data, "sumsq_obs", 1);
    d.n_obs = *real_elt(data, "n_obs", 1);

    /* prior */
    nmf_prior pr;
    pr.lamW = real_elt(prior, "lamW", (R_xlen_t) I * K);
    pr.lamH = real_elt(prior, "lamH", (R_xlen_t) K * J);
    pr.alpha = *real_elt(prior, "alpha", 1);
    pr.beta = *real_elt(prior, "beta", 1);

    /* state */
    double *W = real_elt(state, "W", (R_xlen_t) I * K);
    double *H = real_elt(state, "H", (R_xlen_t) K * J);
    double *tau = real_elt(state, "tau", 1);
    double *x = real_elt(state, "x", nx);
    double *sumsq = real_elt(state, "sumsq", 1);
    double *logpost_last = real_elt(state, "logpost", 1);
    double *n_kept = real_elt(state, "n_kept", 1);
    double *W_mean = NULL, *W_m2 = NULL, *H_mean = NULL, *H_m2 = NULL;
    double *tau_mean = NULL, *tau_m2 = NULL, *WH_mean = NULL, *WH_m2 = NULL;
    if (accumulate) {
        W_mean = real_elt(state, "W_mean", (R_xlen_t) I * K);
        W_m2 = real_elt(state, "W_m2", (R_xlen_t) I * K);
        H_mean = real_elt(state, "H_mean", (R_xlen_t) K * J);
        H_m2 = real_elt(state, "H_m2", (R_xlen_t) K * J);
        tau_mean = real_elt(state, "tau_mean", 1);
        tau_m2 = real_elt(state, "tau_m2", 1);
        R_xlen_t nwh = XLENGTH(list_get(state, "WH_mean"));
        if (nwh > 0) {
            WH_mean = real_elt(state, "WH_mean", nx);
            WH_m2 = real_elt(state, "WH_m2", nx);
        }
    }
    const int augmented = d.nmiss > 0 && !masked;
    if (rule == RULE_DRAW) {
        for (R_xlen_t t = 0; t < (R_xlen_t) I * K; t++)
            if (!(pr.lamW[t] > 0.0)) Rf_error("bnmf internal error: Gibbs needs rates > 0");
        for (R_xlen_t t = 0; t < (R_xlen_t) K * J; t++)
            if (!(pr.lamH[t] > 0.0)) Rf_error("bnmf internal error: Gibbs needs rates > 0");
    }

    const int n_draws = keep_draws ? n_sweeps / thin : 0;
    if (keep_draws && ((double) I * K > INT_MAX || (double) K * J > INT_MAX))
        Rf_error("the factors are too large to keep their draws; use keep = \"summary\"");
    int nprotect = 0;
    SEXP trace = PROTECT(Rf_allocMatrix(REALSXP, n_sweeps, 3)); nprotect++;
    SEXP Wd = PROTECT(Rf_allocMatrix(REALSXP, keep_draws ? I * K : 0, n_draws)); nprotect++;
    SEXP Hd = PROTECT(Rf_allocMatrix(REALSXP, keep_draws ? K * J : 0, n_draws)); nprotect++;
    double *tr = REAL(trace);

    sweep_work ws;
    ws.D = (double *) R_alloc((size_t) I * K, sizeof(double));
    ws.F = (double *) R_alloc((size_t) K * J, sizeof(double));
    ws.G = (double *) R_alloc((size_t) K * K, sizeof(double));
    ws.Gi = (double *) R_alloc((size_t) K * K, sizeof(double));
    ws.zrow = (double *) R_alloc(K, sizeof(double));
    ws.brow = (double *) R_alloc(K, sizeof(double));
    ws.Wt = (double *) R_alloc((size_t) K * I, sizeof(double));
    ws.Ht = (double *) R_alloc((size_t) J * K, sizeof(double));
    ws.obs = (int *) R_alloc(I > J ? I : J, sizeof(int));
    double *wh_miss = augmented ? (double *) R_alloc(d.nmiss, sizeof(double)) : NULL;
    const double log2pi = log(2.0 * M_PI);
    const double lgamma_alpha = lgammafn(pr.alpha);
    const double log_rates = sum_log_rates(pr.lamW, (size_t) I * K) +
        sum_log_rates(pr.lamH, (size_t) K * J);

    GetRNGstate();
    int s, kept = 0;
    for (s = 0; s < n_sweeps; s++) {
        if (upd_W)
            update_W(&d, &pr, x, W, H, *tau, rule, masked, &ws);
        double lin, quad;
        update_H(&d, &pr, x, W, H, *tau, rule, masked, upd_H, &ws, &lin, &quad);
        if (upd_W && upd_H) {
            if (rule == RULE_MODE)
                balance_scales(&d, &pr, W, H);
            else
                scale_move(&d, &pr, W, H);
        }
        double sse = *sumsq - 2.0 * lin + quad;
        if (augmented) {
            /* SSE over the observed entries: remove the latent ones. */
            for (int m = 0; m < d.nmiss; m++) {
                wh_miss[m] = bnmf_wh_entry(W, H, I, K, d.miss_i[m], d.miss_j[m]);
                const double r = x[d.miss_pos[m]] - wh_miss[m];
                sse -= r * r;
            }
        }
        if (sse < 0.0) sse = 0.0; /* rounding of the trace identity */
        if (upd_tau) {
            const double shape = pr.alpha + 0.5 * d.n_obs;
            const double rate = pr.beta + 0.5 * sse;
            if (rule == RULE_DRAW)
                *tau = rgamma(shape, 1.0 / rate);
            else
                *tau = shape > 1.0 ? (shape - 1.0) / rate : 0.0;
            if (!(*tau > 0.0) || !R_FINITE(*tau))
                Rf_error("the noise precision tau became %g (shape %g, rate %g): "
                         "the data may be constant or the noise prior degenerate",
                         *tau, shape, rate);
        }
        if (augmented) {
            const double sd = 1.0 / sqrt(*tau);
            double ss = d.sumsq_obs;
            for (int m = 0; m < d.nmiss; m++) {
                const double v = wh_miss[m] + sd * norm_rand();
                x[d.miss_pos[m]] = v;
                ss += v * v;
            }
            *sumsq = ss;
        }
        const double loglik = 0.5 * d.n_obs * (log(*tau) - log2pi) - 0.5 * *tau * sse;
        const double logpost = loglik + log_rates +
            exp_log_kernel(W, pr.lamW, (size_t) I * K) +
            exp_log_kernel(H, pr.lamH, (size_t) K * J) +
            pr.alpha * log(pr.beta) - lgamma_alpha + (pr.alpha - 1.0) * log(*tau) -
            pr.beta * *tau;
        tr[s] = loglik;
        tr[s + n_sweeps] = *tau;
        tr[s + 2 * (R_xlen_t) n_sweeps] = logpost;

        if ((s + 1) % thin == 0) {
            if (accumulate) {
                const double n = ++(*n_kept);
                for (R_xlen_t t = 0; t < (R_xlen_t) I * K; t++)
                    welford(W_mean + t, W_m2 + t, W[t], n);
                for (R_xlen_t t = 0; t < (R_xlen_t) K * J; t++)
                    welford(H_mean + t, H_m2 + t, H[t], n);
                welford(tau_mean, tau_m2, *tau, n);
                if (WH_mean) accumulate_wh(&d, W, H, WH_mean, WH_m2, n);
            }
            if (keep_draws && kept < n_draws) {
                memcpy(REAL(Wd) + (size_t) kept * I * K, W, sizeof(double) * I * K);
                memcpy(REAL(Hd) + (size_t) kept * K * J, H, sizeof(double) * K * J);
                kept++;
            }
        }
        const double prev = *logpost_last;
        *logpost_last = logpost;
        if (rule == RULE_MODE && tol > 0.0 && R_FINITE(prev) &&
            fabs(logpost - prev) <= tol * fabs(logpost)) {
            s++;
            break;
        }
        PutRNGstate();
        R_CheckUserInterrupt();
        GetRNGstate();
    }
    PutRNGstate();

    /* Trim the trace if ICM converged early. */
    if (s < n_sweeps) {
        SEXP tr2 = PROTECT(Rf_allocMatrix(REALSXP, s, 3)); nprotect++;
        for (int col = 0; col < 3; col++)
            memcpy(REAL(tr2) + (size_t) col * s, tr + (size_t) col * n_sweeps,
                   sizeof(double) * s);
        trace = tr2;
    }
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 3)); nprotect++;
    SET_VECTOR_ELT(out, 0, trace);
    SET_VECTOR_ELT(out, 1, Wd);
    SET_VECTOR_ELT(out, 2, Hd);
    SEXP nms = PROTECT(Rf_allocVector(STRSXP, 3)); nprotect++;
    SET_STRING_ELT(nms, 0, Rf_mkChar("trace"));
    SET_STRING_ELT(nms, 1, Rf_mkChar("W_draws"));
    SET_STRING_ELT(nms, 2, Rf_mkChar("H_draws"));
    Rf_setAttrib(out, R_NamesSymbol, nms);
    UNPROTECT(nprotect);
    return out;
}
