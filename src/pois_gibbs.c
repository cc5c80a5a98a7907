/*
 * pois_gibbs.c -- the auxiliary-variable Gibbs sampler of Poisson-Gamma NMF
 * (see pois_nmf.c for the model) and its .Call entry.
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
        lambda[k] = rgamma(shape, 1.0 / r);
        if (!(lambda[k] > 0.0)) lambda[k] = DBL_MIN; /* an underflow of the draw */
    }
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
        for (int k = 0; k < K; k++) {
            const double rk = lam ? lam[k] : pp->b;
            for (int i = 0; i < I; i++) {
                const size_t u = k + (size_t) i * K;
                W[i + (size_t) k * I] = rgamma(pp->a + ZWt[u], 1.0 / (rk + RS[u]));
            }
        }
        bnmf_pois_obs_sums(pd->d, W, 0, RS);
        if (lam) {
            for (int j = 0; j < J; j++)
                for (int k = 0; k < K; k++) {
                    const size_t t = k + (size_t) j * K;
                    H[t] = rgamma(pp->c + ZH[t], 1.0 / (lam[k] + RS[t]));
                }
            draw_lambda(pd, pp, W, H, lam);
        } else {
            for (size_t t = 0; t < (size_t) K * J; t++)
                H[t] = rgamma(pp->c + ZH[t], 1.0 / (pp->d + RS[t]));
        }
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
