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

/* One rate lambda_k ~ Gamma(shape, r) (ARD), kept positive. */
static inline double draw_rate(double shape, double r)
{
    const double l = rgamma(shape, 1.0 / r);
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

/* W_ik ~ Gamma(a + ZWt_ki, rate_k + RS_ki), k by k (rate_k: lambda_k with
 * ARD, else b); RS (K x I): the sums of H over the observed entries of each
 * row (bnmf_pois_obs_sums()). */
static void draw_W(int I, int K, const pois_prior *pp, const double *lam, const double *ZWt,
                   const double *RS, double *W)
{
    for (int k = 0; k < K; k++) {
        const double rk = lam ? lam[k] : pp->b;
        for (int i = 0; i < I; i++) {
            const size_t u = k + (size_t) i * K;
            W[i + (size_t) k * I] = rgamma(pp->a + ZWt[u], 1.0 / (rk + RS[u]));
        }
    }
}

/* H_kj ~ Gamma(c + ZH_kj, rate_k + RS_kj), in storage order (rate_k: lambda_k
 * with ARD, else d); RS (K x J): the sums of W over the observed entries of
 * each column. */
static void draw_H(int J, int K, const pois_prior *pp, const double *lam, const double *ZH,
                   const double *RS, double *H)
{
    for (int j = 0; j < J; j++)
        for (int k = 0; k < K; k++) {
            const size_t t = k + (size_t) j * K;
            H[t] = rgamma(pp->c + ZH[t], 1.0 / ((lam ? lam[k] : pp->d) + RS[t]));
        }
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
    double *Wt = (double *) R_alloc((size_t) K * I, sizeof(double));
    double *ZWt = (double *) R_alloc((size_t) K * I, sizeof(double));
    double *ZH = (double *) R_alloc((size_t) K * J, sizeof(double));
    double *RS = (double *) R_alloc((size_t) K * (I > J ? I : J), sizeof(double));
    double *p = (double *) R_alloc(K, sizeof(double)), *sb = (double *) R_alloc(I, sizeof(double));
    double *W = st->W, *H = st->H, *lam = pp->ard ? st->lambda : NULL;
    int kept = 0;
    for (int s = 0; s < n; s++) {
        bnmf_transpose(W, I, K, Wt);
        const double lik = gibbs_split(pd, Wt, H, ZWt, ZH, p, sb);
        if (s > 0) {
            tr[s - 1] = pois_loglik(pd, W, H, lik);
            tr[s - 1 + n] = tr[s - 1] + pois_log_prior(pd, pp, W, H, lam);
        }
        bnmf_pois_obs_sums(pd->d, H, 1, RS);
        draw_W(I, K, pp, lam, ZWt, RS, W);
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
        R_CheckUserInterrupt();
    }
    if (n > 0) {
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
    bnmf_rng_get(0);
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
    double *Wt = (double *) R_alloc((size_t) nW, sizeof(double));
    double *p = (double *) R_alloc(K, sizeof(double)), *sb = (double *) R_alloc(I, sizeof(double));
    int np = 0;
    SEXP v[N_GBLOCK_STATS + 1];
    v[0] = PROTECT(Rf_allocVector(REALSXP, nW)); np++;
    v[1] = PROTECT(Rf_allocVector(REALSXP, nW)); np++;
    v[2] = PROTECT(Rf_allocVector(REALSXP, K)); np++;
    v[3] = PROTECT(Rf_allocVector(REALSXP, K)); np++;
    bnmf_transpose(W, I, K, Wt);
    bnmf_rng_get(0);
    if (draw) {
        double *RSH = (double *) R_alloc((size_t) nH, sizeof(double));
        bnmf_pois_obs_sums(&d, W, 0, RSH);
        draw_H(J, K, &pp, lam, ZH, RSH, H);
        if (keep) add_moments(H, (size_t) nH, H_sum, H_sq);
    }
    const double lik = gibbs_split(&pd, Wt, H, REAL(v[0]), ZH, p, sb);
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
    bnmf_rng_get(0);
    draw_W(cs.I, cs.K, &pp, cs.lambda, ZWt, RS, cs.W);
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
        bnmf_rng_get(0);
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
