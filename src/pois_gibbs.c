/*
 * pois_gibbs.c -- the auxiliary-variable Gibbs sampler of Poisson-Gamma NMF
 * (see pois_nmf.c for the model) and its .Call entries: the sampler of data
 * in memory and the steps of the sampler by blocks of samples (columns).
 * Both run the same kernels: the split (gibbs_split), H's draw (draw_H),
 * W's draw given the sums of H (draw_W) and lambda's draw (draw_rate).
 */
#include "bnmf_call.h"
#include "pois.h"

/*
 * Split every positive count multinomially over the factors,
 * Z_ij. ~ Mult(X_ij, W_i. H_.j / (WH)_ij): a count X_ij <= K unit by unit
 * (one uniform U each: the factor whose interval holds U (WH)_ij), a larger
 * one by successive binomials; adds the splits into the counts of WZ's
 * rows (WZ: 2K x I, row i = W_i. and then its counts, wz_rows(); the
 * count and the factor a split reads lie side by side) and ZH (K x J),
 * both zeroed first. Returns sum X_ij log (WH)_ij, summed as the ratio
 * pass sums it (sb: I doubles of scratch; C: K doubles).
 *
 * The intervals of a unit: the products p_k = W_ik H_kj laid end to end
 * over [0, (WH)_ij) in the order of the four lanes of bnmf_dot4 (lane l
 * holds the factors k = l, l + 4, l + 8, ... below 4 floor(K / 4), each
 * lane's in turn), then the rest k = 4 floor(K / 4), ..., K - 1. The
 * running lane sums of the rate (as bnmf_dot4 forms it) are the ends of
 * the intervals within each lane; with the lanes' offsets the ends
 * of all intervals, in that order. The unit's factor is the one whose
 * interval holds U (WH)_ij: its place in that order is the number of ends
 * at or below U (WH)_ij, counted without a branch, four at a time (the
 * last factor in that order if the ends, summed in another order than the
 * rate, fall short of it by rounding). For K < 4 the order is k = 0, ...,
 * K - 1.
 */
BNMF_CLONES static double gibbs_split(const pois_data *pd, double *WZ, const double *H,
                                      double *ZH, double *p, double *sb,
                                      double *C, const int *kmap)
{
    const int K = pd->K, nb = K / 4, K4 = 4 * nb, nnz = pd->cp[pd->J];
    for (int i = 0; i < pd->I; i++) memset(WZ + (size_t) i * 2 * K + K, 0, sizeof(double) * K);
    memset(ZH, 0, sizeof(double) * K * pd->J);
    double lik = 0.0;
    for (int j = 0; j < pd->J; j++) {
        const double *hj = H + (size_t) j * K;
        double *zh = ZH + (size_t) j * K;
        if ((j & 1023) == 1023) bnmf_rng_interrupt();
        for (int q = pd->cp[j]; q < pd->cp[j + 1]; q++) {
            const int i = pd->ri[q];
            const double *wi = WZ + (size_t) i * 2 * K;
            double *zw = WZ + (size_t) i * 2 * K + K;
            const double x = pd->xv[q];
            if (q + BNMF_POIS_PF < nnz) {
                BNMF_PF_ROW(WZ + (size_t) pd->ri[q + BNMF_POIS_PF] * 2 * K, 2 * K, 1);
            }
            /* (WH)_ij as bnmf_dot4 sums it (the ratio pass sums the log
             * likelihood from the same bits), keeping the running lane
             * sums: C[4 b + l] = sum_{b' <= b} p_{4 b' + l} */
            double s, g0, g1, g2, g3;
            {
                int l = 0;
#if defined(__GNUC__)
                bnmf_v4 S = {0.0, 0.0, 0.0, 0.0};
                for (; l + 4 <= K; l += 4) {
                    S += *(const bnmf_v4 *) (wi + l) * *(const bnmf_v4 *) (hj + l);
                    *(bnmf_v4 *) (C + l) = S;
                }
                g0 = S[0]; g1 = S[1]; g2 = S[2]; g3 = S[3];
#else
                g0 = g1 = g2 = g3 = 0.0;
                for (; l + 4 <= K; l += 4) {
                    C[l] = g0 += wi[l] * hj[l];
                    C[l + 1] = g1 += wi[l + 1] * hj[l + 1];
                    C[l + 2] = g2 += wi[l + 2] * hj[l + 2];
                    C[l + 3] = g3 += wi[l + 3] * hj[l + 3];
                }
#endif
                double r = g0;
                for (; l < K; l++) r += wi[l] * hj[l];
                s = (r + g1) + (g2 + g3);
            }
            sb[q - pd->cp[j]] = s < DBL_MIN ? DBL_MIN : s;
            if (x <= K && s >= DBL_MIN) {
                /* the lanes' offsets, and the ends of the rest */
                const double o1 = g0, o2 = o1 + g1, o3 = o2 + g2;
                double e = o3 + g3;
                for (int l = K4; l < K; l++) C[l] = e += wi[l] * hj[l];
                for (int u = 0; u < (int) x; u++) {
                    const double v = bnmf_unif() * s;
                    int n = 0;
#if defined(__GNUC__)
                    const bnmf_v4 O = {0.0, o1, o2, o3}, V = {v, v, v, v};
                    bnmf_v4i N = {0, 0, 0, 0};
                    for (int l = 0; l < K4; l += 4) N -= (*(const bnmf_v4 *) (C + l) + O) <= V;
                    n = (int) ((N[0] + N[1]) + (N[2] + N[3]));
#else
                    for (int l = 0; l < K4; l += 4)
                        n += (C[l] <= v) + (C[l + 1] + o1 <= v) + (C[l + 2] + o2 <= v) +
                            (C[l + 3] + o3 <= v);
#endif
                    for (int l = K4; l < K; l++) n += C[l] <= v;
                    const int k = kmap[n < K ? n : K - 1];
                    zw[k] += 1.0;
                    zh[k] += 1.0;
                }
                continue;
            }
            /* R's rbinom() draws from R's own state */
            const int lent = bnmf_rng_lend();
            for (int k = 0; k < K; k++) p[k] = wi[k] * hj[k];
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
            bnmf_rng_reclaim(lent);
        }
        lik += bnmf_xlog_sum(pd->xv + pd->cp[j], sb, (size_t) (pd->cp[j + 1] - pd->cp[j]));
    }
    return lik;
}

/* W (I x K) into the rows of WZ (2K x I): row i holds W_i. and then
 * gibbs_split()'s counts of row i. */
static void wz_rows(const double *W, int I, int K, double *WZ)
{
    for (int i = 0; i < I; i++)
        for (int k = 0; k < K; k++) WZ[(size_t) i * 2 * K + k] = W[i + (size_t) k * I];
}

/* The factor of each place in the order of gibbs_split()'s intervals (K
 * ints). */
static int *split_order(int K)
{
    int *kmap = (int *) R_alloc(K, sizeof(int));
    const int nb = K / 4;
    for (int n = 0; n < K; n++) kmap[n] = n < 4 * nb ? 4 * (n % nb) + n / nb : n;
    return kmap;
}

/* log p(X | W, H) given lik = sum X log WH. */
static double pois_loglik(const pois_data *pd, const double *W, const double *H, double lik)
{
    return lik - pd->lfact - bnmf_pois_sum_obs_wh(pd->d, W, H);
}

/* log p(W, H) (with ARD: log p(W, H | lambda) + log p(lambda)). */
static double pois_log_prior(const pois_data *pd, const pois_prior *pp, const double *W,
                             const double *H, const double *lambda)
{
    if (!pp->ard)
        return bnmf_gamma_log_prior(W, (R_xlen_t) pd->I * pd->K, pp->a, pp->b) +
            bnmf_gamma_log_prior(H, (R_xlen_t) pd->K * pd->J, pp->c, pp->d);
    const int I = pd->I, J = pd->J, K = pd->K;
    double s = bnmf_gamma_log_prior(lambda, K, pp->alpha0, pp->beta0);
    for (int k = 0; k < K; k++) {
        s += bnmf_gamma_log_prior(W + (size_t) k * I, I, pp->a, lambda[k]);
        for (int j = 0; j < J; j++) {
            const double h = H[k + (size_t) j * K];
            s += (pp->c - 1.0) * log(h) - lambda[k] * h;
        }
        s += J * (pp->c * log(lambda[k]) - lgammafn(pp->c));
    }
    return s;
}

/*
 * Gamma draws from bnmf_unif() alone (so that the sweeps hold the uniform
 * generator's state, bnmf_rng_get(1)), exact:
 *   shape 1: Exp(1), the exponential ziggurat (bnmf_exp_zig());
 *   shape a > 1: Marsaglia and Tsang (2000), with d = a - 1/3,
 *     c = 1 / sqrt(9 d): X ~ N(0, 1) (the normal ziggurat, bnmf_norm_std()),
 *     V = (1 + c X)^3, accepted (return d V) if V > 0 and
 *     log U < X^2 / 2 + d (1 - V + log V), U uniform (the squeeze
 *     U < 1 - 0.0331 X^4 accepts most without the logs); rejection, so
 *     the draw has the Gamma(a, 1) density exactly;
 *   shape a < 1: Gamma(a + 1, 1) U^(1 / a) (Marsaglia and Tsang, section 6).
 * The shapes of a sweep are a prior's shape plus a count: d and c of the
 * first GT of them are tabulated (gamma_table()).
 *
 *   Marsaglia, G. and Tsang, W. W. (2000). A simple method for generating
 *     gamma variables. ACM Transactions on Mathematical Software 26(3),
 *     363-372.
 */
#define GT 64
typedef struct {
    double a;               /* the prior's shape */
    double d[GT], c[GT];    /* of shape a + z, z = 0, ..., GT - 1 (a + z > 1) */
} gamma_tab;

static void gamma_table(double a, gamma_tab *gt)
{
    gt->a = a;
    for (int z = 0; z < GT; z++) {
        const double sh = a + z < 1.0 ? a + z + 1.0 : a + z;
        gt->d[z] = sh - 1.0 / 3.0;
        gt->c[z] = 1.0 / sqrt(9.0 * gt->d[z]);
    }
}

/* Gamma(d + 1/3, 1) given d and c = 1 / sqrt(9 d) (Marsaglia and Tsang) */
static inline double gamma_mt(double d, double c)
{
    for (;;) {
        double x, v;
        do {
            x = bnmf_norm_std();
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        const double u = bnmf_unif(), x2 = x * x;
        if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
        if (log(u) < 0.5 * x2 + d * (1.0 - v + log(v))) return d * v;
    }
}

/* Gamma(sh, 1) for sh = gt->a + z (z >= 0 a count: the table's d, c for
 * z < GT) or, with gt NULL, any sh > 0. */
static inline double gamma_draw(double sh, double z, const gamma_tab *gt)
{
    if (sh == 1.0) return bnmf_exp_zig();
    double d, c;
    if (gt && z < GT && z == (int) z) {
        d = gt->d[(int) z];
        c = gt->c[(int) z];
    } else {
        d = (sh < 1.0 ? sh + 1.0 : sh) - 1.0 / 3.0;
        c = 1.0 / sqrt(9.0 * d);
    }
    const double g = gamma_mt(d, c);
    if (sh >= 1.0) return g;
    /* the boost: U^(1 / sh) = exp(log(U) / sh) */
    return g * exp(log(bnmf_unif()) / sh);
}

/* One rate lambda_k ~ Gamma(shape, r) (ARD), kept positive. */
static inline double draw_rate(double shape, double r)
{
    const double l = gamma_draw(shape, 0.0, NULL) / r;
    return l > 0.0 ? l : DBL_MIN; /* an underflow of the draw */
}

/* ARD: lambda_k ~ Gamma(alpha0 + I a + J c, beta0 + sum_i W_ik + sum_j H_kj),
 * drawn for k = 1, ..., K in turn. */
static void draw_lambda(const pois_data *pd, const pois_prior *pp, const double *W,
                        const double *H, double *lambda)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    const double shape = pp->alpha0 + I * pp->a + J * pp->c;
    for (int k = 0; k < K; k++) {
        double r = pp->beta0;
        for (int i = 0; i < I; i++) r += W[i + (size_t) k * I];
        for (int j = 0; j < J; j++) r += H[k + (size_t) j * K];
        lambda[k] = draw_rate(shape, r);
    }
}

/* W_ik ~ Gamma(a + Z_ik, rate_k + RS_ki), row by row (rate_k: lambda_k
 * with ARD, else b; Z_ik = ZWt[k + i zs]); RS (K x I): the sums of H over
 * the observed entries of each row (bnmf_pois_obs_sums()). Into W (I x K)
 * and, unless NULL, Wt[k + i ws] (the rows of WZ, which the next split
 * reads). */
static void draw_W(int I, int K, const pois_prior *pp, const double *lam, const double *ZWt,
                   size_t zs, const double *RS, double *W, double *Wt, size_t ws)
{
    gamma_tab gt;
    gamma_table(pp->a, &gt);
    for (int i = 0; i < I; i++)
        for (int k = 0; k < K; k++) {
            const double z = ZWt[k + i * zs];
            const double w = gamma_draw(pp->a + z, z, &gt) /
                ((lam ? lam[k] : pp->b) + RS[k + (size_t) i * K]);
            W[i + (size_t) k * I] = w;
            if (Wt) Wt[k + i * ws] = w;
        }
}

/* H_kj ~ Gamma(c + ZH_kj, rate_k + RS_kj), in storage order (rate_k: lambda_k
 * with ARD, else d); RS (K x J): the sums of W over the observed entries of
 * each column. */
static void draw_H(int J, int K, const pois_prior *pp, const double *lam, const double *ZH,
                   const double *RS, double *H)
{
    gamma_tab gt;
    gamma_table(pp->c, &gt);
    for (int j = 0; j < J; j++)
        for (int k = 0; k < K; k++) {
            const size_t t = k + (size_t) j * K;
            H[t] = gamma_draw(pp->c + ZH[t], ZH[t], &gt) / ((lam ? lam[k] : pp->d) + RS[t]);
        }
}

/*
 * .Call entry (tests): n draws of Gamma(a + z, 1) as the sweeps draw them
 * (gamma_draw() with the table of shape a; z >= 0), from R's random
 * number state.
 */
SEXP bnmf_pois_rgamma_call(SEXP n_, SEXP a_, SEXP z_)
{
    const double dn = Rf_asReal(n_), a = Rf_asReal(a_), z = Rf_asReal(z_);
    if (!(dn >= 0.0 && dn <= 1e7) || dn != floor(dn))
        Rf_error("bnmf internal error: n must be a whole number from 0 to 1e7");
    if (!(a > 0.0) || !R_FINITE(a) || !(z >= 0.0) || !R_FINITE(z))
        Rf_error("bnmf internal error: a must be positive and z non-negative");
    const R_xlen_t n = (R_xlen_t) dn;
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    gamma_tab gt;
    gamma_table(a, &gt);
    bnmf_rng_get(1);   /* draws through bnmf_unif() only */
    for (R_xlen_t t = 0; t < n; t++) REAL(out)[t] = gamma_draw(a + z, z, &gt);
    bnmf_rng_put();
    UNPROTECT(1);
    return out;
}

/* Running sums and sums of squares of n entries. */
static void add_moments(const double *Z, size_t n, double *sum, double *sq)
{
    for (size_t t = 0; t < n; t++) {
        sum[t] += Z[t];
        sq[t] += Z[t] * Z[t];
    }
}

/* Add the state to the running sums (and W H to WH_sum for dense X). */
static void gibbs_accumulate(const pois_data *pd, pois_gibbs_state *st)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    add_moments(st->W, (size_t) I * K, st->W_sum, st->W_sq);
    add_moments(st->H, (size_t) K * J, st->H_sum, st->H_sq);
    if (st->WH_sum) {
        const double one = 1.0;
        F77_CALL(dgemm)("N", "N", &I, &J, &K, &one, st->W, &I, st->H, &K, &one, st->WH_sum,
                        &I FCONE FCONE);
    }
    if (st->lambda)
        for (int k = 0; k < K; k++) st->lambda_sum[k] += st->lambda[k];
    *st->n_kept += 1.0;
}

/**
 * n Gibbs sweeps (Z, then W, then H, then with ARD lambda); tr (n x 2) receives log p(X | W, H)
 * and the log joint density after each sweep. With accumulate, every
 * thin-th sweep enters the running sums (and, with draws, is copied into
 * Wd, Hd).
 */
static void pois_gibbs(const pois_data *pd, const pois_prior *pp, pois_gibbs_state *st,
                       int n, int accumulate, int thin, double *Wd, double *Hd,
                       double *tr)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    /* W's rows and their counts side by side, K + K values a row: the
     * split reads and adds into one place of a row */
    double *WZ = (double *) R_alloc((size_t) 2 * K * I, sizeof(double));
    double *ZH = (double *) R_alloc((size_t) K * J, sizeof(double));
    double *RS = (double *) R_alloc((size_t) K * (I > J ? I : J), sizeof(double));
    double *p = (double *) R_alloc(K, sizeof(double)), *sb = (double *) R_alloc(I, sizeof(double));
    double *C = (double *) R_alloc(K, sizeof(double));
    const int *kmap = split_order(K);
    double *W = st->W, *H = st->H, *lam = pp->ard ? st->lambda : NULL;
    int kept = 0;
    wz_rows(W, I, K, WZ);   /* then kept by draw_W() */
    for (int s = 0; s < n; s++) {
        const double lik = gibbs_split(pd, WZ, H, ZH, p, sb, C, kmap);
        if (s > 0) {
            tr[s - 1] = pois_loglik(pd, W, H, lik);
            tr[s - 1 + n] = tr[s - 1] + pois_log_prior(pd, pp, W, H, lam);
        }
        bnmf_pois_obs_sums(pd->d, H, 1, RS);
        draw_W(I, K, pp, lam, WZ + K, 2 * (size_t) K, RS, W, WZ, 2 * (size_t) K);
        bnmf_pois_obs_sums(pd->d, W, 0, RS);
        draw_H(J, K, pp, lam, ZH, RS, H);
        if (lam) draw_lambda(pd, pp, W, H, lam);
        if (accumulate && (s + 1) % thin == 0) {
            gibbs_accumulate(pd, st);
            if (Wd) {
                memcpy(Wd + (size_t) kept * I * K, W, sizeof(double) * I * K);
                memcpy(Hd + (size_t) kept * K * J, H, sizeof(double) * K * J);
            }
            kept++;
        }
        bnmf_rng_interrupt();
    }
    if (n > 0) {
        double *Wt = RS;   /* K x I of scratch */
        bnmf_transpose(W, I, K, Wt);
        const double lik = bnmf_pois_ratio_pass(pd, Wt, H, NULL, NULL, 1);
        tr[n - 1] = pois_loglik(pd, W, H, lik);
        tr[2 * n - 1] = tr[n - 1] + pois_log_prior(pd, pp, W, H, lam);
        *st->logpost = tr[2 * n - 1];
    }
}


/*
 * .Call entry: advance a Gibbs state (bnmf_pois_read_gibbs_state(), modified in place)
 * by ctrl$n sweeps (with ARD, prior$ard = c(alpha0, beta0), the state
 * also holds lambda and lambda_sum); ctrl: list(n, accumulate, thin, keep_draws) (numbers
 * and 0/1 flags). Returns list(trace = n x 2 (loglik, logpost), W_draws,
 * H_draws (the kept draws, one column each, or 0 columns)).
 */
SEXP bnmf_pois_gibbs_call(SEXP state, SEXP data, SEXP x, SEXP prior, SEXP ctrl)
{
    nmf_data d; pois_data pd; pois_prior pp; pois_gibbs_state st;
    bnmf_pois_read_args(data, x, prior, 0, 0, &d, &pd, &pp);
    bnmf_pois_read_gibbs_state(state, &pd, &st);
    if (pp.ard) bnmf_pois_read_gibbs_lambda(state, &pd, &st);
    const int n = bnmf_pois_count(ctrl, "n", 0), thin = bnmf_pois_count(ctrl, "thin", 1);
    const int accumulate = bnmf_pois_ctrl(ctrl, "accumulate") != 0.0;
    const int keep = bnmf_pois_ctrl(ctrl, "keep_draws") != 0.0;
    if (n < 0 || thin < 1) Rf_error("bnmf internal error: bad ctrl$n or ctrl$thin");
    const int nk = accumulate && keep ? n / thin : 0;
    SEXP v[3];
    v[0] = PROTECT(Rf_allocMatrix(REALSXP, n, 2));
    v[1] = PROTECT(Rf_allocMatrix(REALSXP, pd.I * pd.K, nk));
    v[2] = PROTECT(Rf_allocMatrix(REALSXP, pd.K * pd.J, nk));
    bnmf_rng_get(1);   /* draws through bnmf_unif() and bnmf_rng_lend() only */
    pois_gibbs(&pd, &pp, &st, n, accumulate, thin, nk ? REAL(v[1]) : NULL,
               nk ? REAL(v[2]) : NULL, REAL(v[0]));
    bnmf_rng_put();
    const char *names[] = {"trace", "W_draws", "H_draws"};
    SEXP out = bnmf_named_list(3, names, v);
    UNPROTECT(3);
    return out;
}

/* ---- Gibbs sampling by blocks of samples ---------------------------------- */

/*
 * Given W (and lambda with ARD), H[, j] and the split of column j's counts
 * read column j of X only, and W's draw needs of the columns only sums over
 * them. So a sweep of the sampler by blocks of samples (columns) is the
 * sweep above, Z, W, H, lambda, with its steps moved between the chain and
 * the blocks:
 *
 *   block b (bnmf_pois_gibbs_block_call), given W and the rates:
 *     1. H[, b] from its split ZH_b (draw_H(); not in a chain's first call);
 *     2. the split of its counts given W and H[, b] (gibbs_split()),
 *        ZH_b kept for the next sweep, and the sums of the chain's next
 *        steps: ZWt_b (K x I), RS_b[k, i] = sum_{j in b, j in Omega_i} H_kj,
 *        SH_b[k] = sum_{j in b} H_kj, LH_b[k] = sum_{j in b} log H_kj, and
 *        its terms of log p(X | W, H);
 *   the chain (bnmf_pois_gibbs_finish_call, then bnmf_pois_gibbs_wstep_call),
 *   given those summed in block order: lambda (ARD; it follows H's draw as
 *   in one process), the running sums and the trace of the state, then W
 *   (draw_W()).
 *
 * A block draws from its own stream, the chain from the chain's: the fit
 * is the same bit for bit, for a given partition, wherever the blocks are
 * read or held.
 */

/* The list of a block's sums, as the chain adds them. */
static const char *gblock_stat_names[] = {"ZWt", "RS", "SH", "LH", "lik", "lfact", "wh"};
#define N_GBLOCK_STATS 7

/*
 * .Call entry, block b: its counts (data, x: its columns as prepare_data()
 * lays them out) and its state bstate = list(H, ZH, H_sum, H_sq) (K x J_b,
 * modified in place); wq = list(W (I x K)[, lambda (K), with ARD]). ctrl:
 * list(draw, keep, known): draw = 1 draws H[, b] before the split (keep =
 * 1 adds it to the running sums), known as for bnmf_pois_vb_call. Draws
 * from R's random number state (the block's stream). Returns the block's
 * sums list(ZWt, RS, SH, LH, lik, lfact, wh) and `known`.
 */
SEXP bnmf_pois_gibbs_block_call(SEXP bstate, SEXP data, SEXP x, SEXP prior, SEXP wq, SEXP ctrl)
{
    nmf_data d; pois_data pd; pois_prior pp;
    bnmf_pois_read_known(data, x, prior, ctrl, &d, &pd, &pp);
    const int draw = bnmf_pois_count(ctrl, "draw", 0), keep = bnmf_pois_count(ctrl, "keep", 0);
    const int I = d.I, J = d.J, K = d.K;
    const R_xlen_t nH = (R_xlen_t) K * J, nW = (R_xlen_t) I * K;
    double *H = bnmf_real_elt(bstate, "H", nH), *ZH = bnmf_real_elt(bstate, "ZH", nH);
    double *H_sum = bnmf_real_elt(bstate, "H_sum", nH), *H_sq = bnmf_real_elt(bstate, "H_sq", nH);
    const double *W = bnmf_real_elt(wq, "W", nW);
    const double *lam = pp.ard ? bnmf_real_elt(wq, "lambda", K) : NULL;
    double *WZ = (double *) R_alloc((size_t) 2 * nW, sizeof(double));
    double *p = (double *) R_alloc(K, sizeof(double)), *sb = (double *) R_alloc(I, sizeof(double));
    double *C = (double *) R_alloc(K, sizeof(double));
    const int *kmap = split_order(K);
    int np = 0;
    SEXP v[N_GBLOCK_STATS + 1];
    v[0] = PROTECT(Rf_allocVector(REALSXP, nW)); np++;
    v[1] = PROTECT(Rf_allocVector(REALSXP, nW)); np++;
    v[2] = PROTECT(Rf_allocVector(REALSXP, K)); np++;
    v[3] = PROTECT(Rf_allocVector(REALSXP, K)); np++;
    wz_rows(W, I, K, WZ);
    bnmf_rng_get(1);   /* draws through bnmf_unif() and bnmf_rng_lend() only */
    if (draw) {
        double *RSH = (double *) R_alloc((size_t) nH, sizeof(double));
        bnmf_pois_obs_sums(&d, W, 0, RSH);
        draw_H(J, K, &pp, lam, ZH, RSH, H);
        if (keep) add_moments(H, (size_t) nH, H_sum, H_sq);
    }
    const double lik = gibbs_split(&pd, WZ, H, ZH, p, sb, C, kmap);
    for (int i = 0; i < I; i++)
        memcpy(REAL(v[0]) + (size_t) i * K, WZ + (size_t) i * 2 * K + K, sizeof(double) * K);
    bnmf_rng_put();
    bnmf_pois_obs_sums(&d, H, 1, REAL(v[1]));
    double *SH = REAL(v[2]), *LH = REAL(v[3]);
    for (int k = 0; k < K; k++) SH[k] = LH[k] = 0.0;
    for (int j = 0; j < J; j++)
        for (int k = 0; k < K; k++) {
            const double h = H[k + (size_t) j * K];
            SH[k] += h;
            LH[k] += log(h);
        }
    const double wh = bnmf_pois_sum_obs_wh(&d, W, H);
    v[4] = PROTECT(Rf_ScalarReal(lik)); np++;
    v[5] = PROTECT(Rf_ScalarReal(pd.lfact)); np++;
    v[6] = PROTECT(Rf_ScalarReal(wh)); np++;
    SEXP out = bnmf_pois_block_list(N_GBLOCK_STATS, gblock_stat_names, v, &pd);
    UNPROTECT(np);
    return out;
}

/* The chain's state: ws = list(W, W_sum, W_sq, n_kept[, lambda,
 * lambda_sum]); dims = c(I, J, K) of the whole data. */
typedef struct {
    int I, J, K;
    double *W, *W_sum, *W_sq, *n_kept, *lambda, *lambda_sum;
} gibbs_chain_state;

static void read_ws(SEXP ws, SEXP dims, const pois_prior *pp, gibbs_chain_state *cs)
{
    if (TYPEOF(dims) != REALSXP || XLENGTH(dims) != 3)
        Rf_error("bnmf internal error: dims must be c(I, J, K)");
    for (int t = 0; t < 3; t++)
        if (!(REAL(dims)[t] >= 1.0 && REAL(dims)[t] <= INT_MAX))
            Rf_error("bnmf internal error: dims must be c(I, J, K)");
    cs->I = (int) REAL(dims)[0]; cs->J = (int) REAL(dims)[1]; cs->K = (int) REAL(dims)[2];
    const R_xlen_t nW = (R_xlen_t) cs->I * cs->K;
    cs->W = bnmf_real_elt(ws, "W", nW);
    cs->W_sum = bnmf_real_elt(ws, "W_sum", nW);
    cs->W_sq = bnmf_real_elt(ws, "W_sq", nW);
    cs->n_kept = bnmf_real_elt(ws, "n_kept", 1);
    cs->lambda = pp->ard ? bnmf_real_elt(ws, "lambda", cs->K) : NULL;
    cs->lambda_sum = pp->ard ? bnmf_real_elt(ws, "lambda_sum", cs->K) : NULL;
}

/*
 * .Call entry, the chain's W: W | Z, H (with ARD given lambda) from the
 * blocks' sums acc = list(ZWt, RS) (K x I, summed in block order), in place
 * in ws (read_ws()), from R's random number state (the chain's stream).
 */
SEXP bnmf_pois_gibbs_wstep_call(SEXP ws, SEXP acc, SEXP prior, SEXP dims)
{
    pois_prior pp; gibbs_chain_state cs;
    bnmf_pois_read_prior(prior, 0, &pp);
    read_ws(ws, dims, &pp, &cs);
    const R_xlen_t nW = (R_xlen_t) cs.I * cs.K;
    const double *ZWt = bnmf_real_elt(acc, "ZWt", nW), *RS = bnmf_real_elt(acc, "RS", nW);
    bnmf_rng_get(1);   /* draws through bnmf_unif() and bnmf_rng_lend() only */
    draw_W(cs.I, cs.K, &pp, cs.lambda, ZWt, (size_t) cs.K, RS, cs.W, NULL, 0);
    bnmf_rng_put();
    return R_NilValue;
}

/*
 * .Call entry, the end of a sweep by blocks, given the blocks' sums acc =
 * list(SH, LH, lik, lfact, wh) at their new H: with ARD lambda | W, H (in
 * place in ws, from the chain's stream); with ctrl$keep = 1 the state
 * enters the running sums. Returns c(log p(X | W, H), log joint density)
 * of the state, as the sampler in one process computes them (the sums of
 * H by factor in place of its entries).
 */
SEXP bnmf_pois_gibbs_finish_call(SEXP ws, SEXP acc, SEXP prior, SEXP dims, SEXP ctrl)
{
    pois_prior pp; gibbs_chain_state cs;
    bnmf_pois_read_prior(prior, 0, &pp);
    read_ws(ws, dims, &pp, &cs);
    const int keep = bnmf_pois_count(ctrl, "keep", 0);
    const int I = cs.I, J = cs.J, K = cs.K;
    const double *SH = bnmf_real_elt(acc, "SH", K), *LH = bnmf_real_elt(acc, "LH", K);
    const double lik = *bnmf_real_elt(acc, "lik", 1), lfact = *bnmf_real_elt(acc, "lfact", 1);
    const double wh = *bnmf_real_elt(acc, "wh", 1);
    double *lam = cs.lambda;
    double lp;
    if (lam) {
        const double shape = pp.alpha0 + I * pp.a + J * pp.c;
        bnmf_rng_get(1);   /* draws through bnmf_unif() and bnmf_rng_lend() only */
        for (int k = 0; k < K; k++) {
            double r = pp.beta0;
            for (int i = 0; i < I; i++) r += cs.W[i + (size_t) k * I];
            lam[k] = draw_rate(shape, r + SH[k]);
        }
        bnmf_rng_put();
        lp = bnmf_gamma_log_prior(lam, K, pp.alpha0, pp.beta0);
        for (int k = 0; k < K; k++) {
            lp += bnmf_gamma_log_prior(cs.W + (size_t) k * I, I, pp.a, lam[k]);
            lp += (pp.c - 1.0) * LH[k] - lam[k] * SH[k];
            lp += J * (pp.c * log(lam[k]) - lgammafn(pp.c));
        }
    } else {
        lp = bnmf_gamma_log_prior(cs.W, (R_xlen_t) I * K, pp.a, pp.b);
        for (int k = 0; k < K; k++) lp += (pp.c - 1.0) * LH[k] - pp.d * SH[k];
        lp += (double) K * J * (pp.c * log(pp.d) - lgammafn(pp.c));
    }
    if (keep) {
        add_moments(cs.W, (size_t) I * K, cs.W_sum, cs.W_sq);
        if (lam)
            for (int k = 0; k < K; k++) cs.lambda_sum[k] += lam[k];
        *cs.n_kept += 1.0;
    }
    SEXP out = PROTECT(Rf_allocVector(REALSXP, 2));
    REAL(out)[0] = lik - lfact - wh;
    REAL(out)[1] = REAL(out)[0] + lp;
    UNPROTECT(1);
    return out;
}
