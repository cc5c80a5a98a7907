/*
 * pois_ssvi.c -- doubly sparse Poisson NMF with beta-process masks by
 * structured stochastic variational inference (Hoffman & Blei 2014; Liang &
 * Hoffman 2014; Park's DS-NMF, Algorithm 1 with its typos fixed).
 *
 * Model (I x J counts; F = I features, T = J samples in Park's notation):
 *
 *   X_ij ~ Poisson(sum_k W_ik SW_ik H_kj SH_kj)
 *   W_ik ~ Gamma(a, b),  H_kj ~ Gamma(c, d)                      (shape, rate)
 *   SW_ik ~ Bernoulli(piW_k),  piW_k ~ Beta(a0W / K, b0W (K - 1) / K)
 *   SH_kj ~ Bernoulli(piH_k),  piH_k ~ Beta(a0H / K, b0H (K - 1) / K)
 *
 * q = prod q(W_ik) q(H_kj) q(piW_k) q(piH_k) x p(S, Z | W, H, pi, X), with
 * q(W_ik) = Gamma(nuW, rhoW), q(H_kj) = Gamma(nuH, rhoH), q(pi) = Beta.
 *
 * The collapsed Gibbs sampler of the masks (Z summed out): with
 * lam_ij = sum_m W_im SW_im H_mj SH_mj and lam^-k its value without factor k,
 *
 *   log P(SW_ik = 1 | rest) / P(SW_ik = 0 | rest) = log piW_k - log(1 - piW_k)
 *       + sum_{j in Omega_i, X_ij > 0} X_ij log(1 + W_ik H_kj SH_kj / lam^-k_ij)
 *       - W_ik sum_{j in Omega_i} H_kj SH_kj
 *
 * (the same for SH_kj with the roles of W and H exchanged). Only positive
 * counts enter the sum; the last term is a column sum of H * SH less those of
 * the row's missing entries. A sweep costs O(nnz K) + O((I + J) K + nmiss K).
 *
 * One iteration i (Algorithm 1, corrected): draw W ~ q(W), H ~ q(H) (H from
 * its own parameters nuH, rhoH), piW ~ q(piW), piH ~ q(piH) (each from its
 * own Beta); run `mask_sweeps` sweeps of the sampler, continuing from the
 * masks of the previous iteration (never reset), and average over the last
 * `mask_samples` of them the expected sufficient statistics
 *
 *   phi_ijk = W_ik SW_ik H_kj SH_kj / lam_ij,
 *   ZW_ik = sum_j X_ij phi_ijk,  RW_ik = SW_ik sum_{j in Omega_i} H_kj SH_kj,
 *   ZH_kj = sum_i X_ij phi_ijk,  RH_kj = SH_kj sum_{i in Omega_j} W_ik SW_ik,
 *   CW_k = sum_i SW_ik,  CH_k = sum_j SH_kj;
 *
 * then, with eta = (t0 + i)^-kappa, step the natural parameters:
 *
 *   nuW  <- (1 - eta) nuW  + eta (a + ZW),     rhoW <- (1 - eta) rhoW + eta (b + RW)
 *   nuH  <- (1 - eta) nuH  + eta (c + ZH),     rhoH <- (1 - eta) rhoH + eta (d + RH)
 *   alW_k <- (1 - eta) alW_k + eta (a0W / K + CW_k)
 *   beW_k <- (1 - eta) beW_k + eta (b0W (K - 1) / K + I - CW_k)   (H alike, J)
 *
 * Without a mask of W (sparsity "coef") SW = 1 and piW is not used; without
 * masks ("none") the iteration is stochastic VI with phi from the draws.
 */
#include <float.h>
#include "bnmf_call.h"
#include "pois.h"

typedef struct {
    int n, update, accumulate, mask_sweeps, mask_samples, maskW, maskH;
    double t0, kappa;
} ssvi_ctrl;

typedef struct {
    double *Wt, *Ht;         /* K x I: W SW (transposed); K x J: H SH */
    double *RS, *lam;        /* K x max(I, J) sums; per-count rates of a unit */
    double *ZW, *ZH, *RW, *RH, *CW, *CH, *N1, *N2;
    double *lp1W, *lp0W, *lp1H, *lp0H;
} ssvi_work;

/*
 * One half sweep of the mask sampler over n_units units (rows of W, or
 * columns of H). Unit u has its positive counts up[u] .. up[u + 1] with the
 * other index uo[] and counts ux[]; its factor values F[u fu + k fk] and
 * masks S (same strides); Eu (K x n_units) its masked factor, updated;
 * Eo (K x n_other) the other side's masked factor; RS[, u] the sums of Eo
 * over the unit's observed entries (bnmf_pois_obs_sums()); lp1, lp0 the log
 * prior probabilities of a mask 1 and 0.
 */
static void mask_half(int n_units, const int *up, const int *uo, const double *ux,
                      const double *F, int *S, size_t fu, size_t fk, double *Eu,
                      const double *Eo, const double *RS, const double *lp1,
                      const double *lp0, int K, double *lam)
{
    for (int u = 0; u < n_units; u++) {
        double *eu = Eu + (size_t) u * K;
        const int lo = up[u], nc = up[u + 1] - up[u];
        for (int q = 0; q < nc; q++) {
            const double *eo = Eo + (size_t) uo[lo + q] * K;
            double s = 0.0;
            for (int k = 0; k < K; k++) s += eu[k] * eo[k];
            lam[q] = s;
        }
        for (int k = 0; k < K; k++) {
            const size_t t = u * fu + k * fk;
            const double f = F[t];
            const int cur = S[t];
            double ll = 0.0;
            int forced = 0;
            for (int q = 0; q < nc; q++) {
                const double tk = f * Eo[k + (size_t) uo[lo + q] * K];
                const double l0 = cur ? lam[q] - tk : lam[q];
                if (!(l0 > 0.0)) {
                    if (tk > 0.0) forced = 1; /* S = 0 leaves a positive count a zero rate */
                    continue;
                }
                ll += ux[lo + q] * log1p(tk / l0);
            }
            int nw;
            if (forced) nw = 1;
            else {
                const double lo_odds = lp1[k] - lp0[k] + ll - f * RS[k + (size_t) u * K];
                nw = bnmf_unif() < plogis(lo_odds, 0.0, 1.0, 1, 0);
            }
            if (nw != cur) {
                const double sg = nw ? 1.0 : -1.0;
                for (int q = 0; q < nc; q++)
                    lam[q] += sg * f * Eo[k + (size_t) uo[lo + q] * K];
                S[t] = nw;
                eu[k] = nw ? f : 0.0;
            }
        }
    }
}

/* Masked factors: Wt[k, i] = W_ik SW_ik, Ht[k, j] = H_kj SH_kj. */
static void masked_factors(const pois_data *pd, const double *W, const double *H,
                           const int *SW, const int *SH, double *Wt, double *Ht)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    for (int k = 0; k < K; k++)
        for (int i = 0; i < I; i++) {
            const size_t t = i + (size_t) k * I;
            Wt[k + (size_t) i * K] = SW[t] ? W[t] : 0.0;
        }
    for (size_t t = 0; t < (size_t) K * J; t++) Ht[t] = SH[t] ? H[t] : 0.0;
}

/* One sweep of the mask sampler: SW row by row, then SH column by column. */
static void mask_sweep(const pois_data *pd, const double *W, const double *H, int *SW,
                       int *SH, int maskW, int maskH, ssvi_work *w)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    if (maskW) {
        bnmf_pois_obs_sums(pd->d, w->Ht, 1, w->RS);
        mask_half(I, pd->rp, pd->cj, pd->rx, W, SW, 1, (size_t) I, w->Wt, w->Ht, w->RS,
                  w->lp1W, w->lp0W, K, w->lam);
    }
    if (maskH) {
        /* sums of W SW over each column's observed entries (Wt is K x I) */
        bnmf_transpose(w->Wt, K, I, w->N1);
        bnmf_pois_obs_sums(pd->d, w->N1, 0, w->RS);
        mask_half(J, pd->cp, pd->ri, pd->xv, H, SH, (size_t) K, 1, w->Ht, w->Wt, w->RS,
                  w->lp1H, w->lp0H, K, w->lam);
    }
}

/* Log prior probabilities of the masks from pi (K values each). */
static void mask_logprobs(const double *pi, int K, double *lp1, double *lp0)
{
    for (int k = 0; k < K; k++) {
        lp1[k] = log(pi[k]);
        lp0[k] = log1p(-pi[k]);
    }
}

static void ssvi_work_alloc(const pois_data *pd, ssvi_work *w)
{
    const size_t I = pd->I, J = pd->J, K = pd->K, M = I > J ? I : J;
    int maxc = 1;
    for (int i = 0; i < pd->I; i++)
        if (pd->rp[i + 1] - pd->rp[i] > maxc) maxc = pd->rp[i + 1] - pd->rp[i];
    for (int j = 0; j < pd->J; j++)
        if (pd->cp[j + 1] - pd->cp[j] > maxc) maxc = pd->cp[j + 1] - pd->cp[j];
    w->Wt = (double *) R_alloc(K * I, sizeof(double));
    w->Ht = (double *) R_alloc(K * J, sizeof(double));
    w->RS = (double *) R_alloc(K * M, sizeof(double));
    w->lam = (double *) R_alloc(maxc, sizeof(double));
    w->ZW = (double *) R_alloc(K * I, sizeof(double));
    w->RW = (double *) R_alloc(K * I, sizeof(double));
    w->N1 = (double *) R_alloc(K * M, sizeof(double));
    w->ZH = (double *) R_alloc(K * J, sizeof(double));
    w->RH = (double *) R_alloc(K * J, sizeof(double));
    w->N2 = (double *) R_alloc(K * J, sizeof(double));
    w->CW = (double *) R_alloc(K, sizeof(double));
    w->CH = (double *) R_alloc(K, sizeof(double));
    w->lp1W = (double *) R_alloc(K, sizeof(double));
    w->lp0W = (double *) R_alloc(K, sizeof(double));
    w->lp1H = (double *) R_alloc(K, sizeof(double));
    w->lp0H = (double *) R_alloc(K, sizeof(double));
}

/*
 * Add wt times the sufficient statistics of the current masks and draws to
 * ZW, RW (K x I), ZH, RH (K x J), CW, CH. Returns log p(X | W SW, H SH).
 */
static double ssvi_stats(const pois_data *pd, const int *SW, const int *SH, double wt,
                         ssvi_work *w)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    const double lik = bnmf_pois_ratio_pass(pd, w->Wt, w->Ht, w->N1, w->N2, 1);
    for (int i = 0; i < I; i++)
        for (int k = 0; k < K; k++) {
            const size_t u = k + (size_t) i * K;
            w->ZW[u] += wt * w->Wt[u] * w->N1[u];
        }
    for (size_t t = 0; t < (size_t) K * J; t++) w->ZH[t] += wt * w->Ht[t] * w->N2[t];
    bnmf_pois_obs_sums(pd->d, w->Ht, 1, w->RS);
    for (int i = 0; i < I; i++)
        for (int k = 0; k < K; k++)
            if (SW[i + (size_t) k * I]) {
                w->RW[k + (size_t) i * K] += wt * w->RS[k + (size_t) i * K];
                w->CW[k] += wt;
            }
    bnmf_transpose(w->Wt, K, I, w->N1);
    bnmf_pois_obs_sums(pd->d, w->N1, 0, w->RS);
    for (size_t t = 0; t < (size_t) K * J; t++)
        if (SH[t]) {
            w->RH[t] += wt * w->RS[t];
            w->CH[t % K] += wt;
        }
    /* sum_Omega (W SW)(H SH): N1 holds W SW (I x K) */
    return lik - pd->lfact - bnmf_pois_sum_obs_wh(pd->d, w->N1, w->Ht);
}

/* log p(S | pi) of the masks in use. */
static double mask_log_prior(const pois_data *pd, const int *SW, const int *SH,
                             const ssvi_ctrl *c, const ssvi_work *w)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    double s = 0.0;
    if (c->maskW)
        for (int k = 0; k < K; k++)
            for (int i = 0; i < I; i++)
                s += SW[i + (size_t) k * I] ? w->lp1W[k] : w->lp0W[k];
    if (c->maskH)
        for (size_t t = 0; t < (size_t) K * J; t++)
            s += SH[t] ? w->lp1H[t % K] : w->lp0H[t % K];
    return s;
}

/* The Robbins-Monro step z <- (1 - eta) z + eta (prior + stat) on n values
 * (stat in K x n_units layout when transposed, else the same as z). */
static void rm_step(double *z, const double *stat, int r, int cdim, int transposed,
                    double prior, double eta)
{
    for (int j = 0; j < cdim; j++)
        for (int i = 0; i < r; i++) {
            const size_t t = i + (size_t) j * r;
            const double st = stat[transposed ? j + (size_t) i * cdim : t];
            z[t] = (1.0 - eta) * z[t] + eta * (prior + st);
        }
}

/* Draw W, H and pi from q (pi only for the masks in use). */
static void ssvi_draw(const pois_data *pd, const ssvi_state *st, const ssvi_ctrl *c,
                      double *piW, double *piH, ssvi_work *w)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    for (size_t t = 0; t < (size_t) I * K; t++) st->W[t] = rgamma(st->nuW[t], 1.0 / st->rhoW[t]);
    for (size_t t = 0; t < (size_t) K * J; t++) st->H[t] = rgamma(st->nuH[t], 1.0 / st->rhoH[t]);
    for (int k = 0; k < K; k++) {
        piW[k] = c->maskW ? rbeta(st->alW[k], st->beW[k]) : 1.0;
        piH[k] = c->maskH ? rbeta(st->alH[k], st->beH[k]) : 1.0;
    }
    mask_logprobs(piW, K, w->lp1W, w->lp0W);
    mask_logprobs(piH, K, w->lp1H, w->lp0H);
}

/* Add the current masks and masked draws to the final averages. */
static void ssvi_accumulate(const pois_data *pd, ssvi_state *st)
{
    const size_t nW = (size_t) pd->I * pd->K, nH = (size_t) pd->K * pd->J;
    for (size_t t = 0; t < nW; t++) {
        st->SW_sum[t] += st->SW[t];
        st->WS_sum[t] += st->SW[t] ? st->W[t] : 0.0;
    }
    for (size_t t = 0; t < nH; t++) {
        st->SH_sum[t] += st->SH[t];
        st->HS_sum[t] += st->SH[t] ? st->H[t] : 0.0;
    }
    *st->n_acc += 1.0;
}

/* n iterations of Algorithm 1; tr (n x 2): log p(X | W SW, H SH) and the
 * local log joint log p(X, S | W, H, pi) of the last mask sample. */
static void pois_ssvi(const pois_data *pd, const pois_prior *pp, ssvi_state *st,
                      const ssvi_ctrl *c, double *tr)
{
    const int I = pd->I, J = pd->J, K = pd->K;
    ssvi_work w;
    ssvi_work_alloc(pd, &w);
    double *piW = (double *) R_alloc(K, sizeof(double));
    double *piH = (double *) R_alloc(K, sizeof(double));
    const int masks = c->maskW || c->maskH;
    const int sweeps = masks ? c->mask_sweeps : 1;
    const int samples = masks ? c->mask_samples : 1;
    for (int it = 0; it < c->n; it++) {
        ssvi_draw(pd, st, c, piW, piH, &w);
        masked_factors(pd, st->W, st->H, st->SW, st->SH, w.Wt, w.Ht);
        memset(w.ZW, 0, sizeof(double) * K * I);
        memset(w.RW, 0, sizeof(double) * K * I);
        memset(w.ZH, 0, sizeof(double) * K * J);
        memset(w.RH, 0, sizeof(double) * K * J);
        memset(w.CW, 0, sizeof(double) * K);
        memset(w.CH, 0, sizeof(double) * K);
        double loglik = 0.0;
        for (int m = 0; m < sweeps; m++) {
            if (masks) mask_sweep(pd, st->W, st->H, st->SW, st->SH, c->maskW, c->maskH, &w);
            if (m < sweeps - samples) continue;
            loglik = ssvi_stats(pd, st->SW, st->SH, 1.0 / samples, &w);
            if (c->accumulate) ssvi_accumulate(pd, st);
        }
        tr[it] = loglik;
        tr[it + c->n] = loglik + mask_log_prior(pd, st->SW, st->SH, c, &w);
        if (c->update) {
            *st->steps += 1.0;
            const double eta = pow(c->t0 + *st->steps, -c->kappa);
            rm_step(st->nuW, w.ZW, I, K, 1, pp->a, eta);
            rm_step(st->rhoW, w.RW, I, K, 1, pp->b, eta);
            rm_step(st->nuH, w.ZH, K, J, 0, pp->c, eta);
            rm_step(st->rhoH, w.RH, K, J, 0, pp->d, eta);
            for (int k = 0; k < K; k++) {
                if (c->maskW) {
                    st->alW[k] = (1 - eta) * st->alW[k] + eta * (pp->a0W / K + w.CW[k]);
                    st->beW[k] = (1 - eta) * st->beW[k] +
                        eta * (pp->b0W * (K - 1) / K + I - w.CW[k]);
                }
                if (c->maskH) {
                    st->alH[k] = (1 - eta) * st->alH[k] + eta * (pp->a0H / K + w.CH[k]);
                    st->beH[k] = (1 - eta) * st->beH[k] +
                        eta * (pp->b0H * (K - 1) / K + J - w.CH[k]);
                }
            }
        }
        R_CheckUserInterrupt();
    }
}

/*
 * .Call entry: ctrl$n iterations of SSVI on a state (read_ssvi_state(),
 * modified in place). ctrl: list(n, update, accumulate, mask_sweeps,
 * mask_samples, mask_W, mask_H, t0, kappa) (numbers; flags 0/1). Returns the
 * trace, n x 2 (loglik, local log joint).
 */
SEXP bnmf_pois_ssvi_call(SEXP state, SEXP data, SEXP x, SEXP prior, SEXP ctrl)
{
    nmf_data d; pois_data pd; pois_prior pp; ssvi_state st; ssvi_ctrl c;
    bnmf_pois_read_args(data, x, prior, 1, 1, &d, &pd, &pp);
    bnmf_pois_read_ssvi_state(state, &pd, &st);
    const char *ints[] = {"n", "update", "accumulate", "mask_sweeps", "mask_samples",
        "mask_W", "mask_H"};
    int *iv[] = {&c.n, &c.update, &c.accumulate, &c.mask_sweeps, &c.mask_samples, &c.maskW,
        &c.maskH};
    for (int t = 0; t < 7; t++) *iv[t] = bnmf_pois_count(ctrl, ints[t], 0);
    c.t0 = bnmf_pois_ctrl(ctrl, "t0");
    c.kappa = bnmf_pois_ctrl(ctrl, "kappa");
    if (c.n < 0 || c.mask_sweeps < 1 || c.mask_samples < 1 ||
        c.mask_samples > c.mask_sweeps || !(c.t0 >= 0.0) || !(c.kappa > 0.0))
        Rf_error("bnmf internal error: bad SSVI controls");
    SEXP tr = PROTECT(Rf_allocMatrix(REALSXP, c.n, 2));
    bnmf_rng_get(0);
    pois_ssvi(&pd, &pp, &st, &c, REAL(tr));
    bnmf_rng_put();
    UNPROTECT(1);
    return tr;
}

/*
 * .Call entry: n sweeps of the collapsed mask sampler (both masks) with W,
 * H, pi fixed; state: list(W, H, SW, SH, pi_W, pi_H), SW and SH modified in
 * place. Returns NULL.
 */
SEXP bnmf_pois_masks_call(SEXP state, SEXP data, SEXP x, SEXP n)
{
    nmf_data d;
    pois_data pd;
    bnmf_pois_read(data, x, 1, 1, &d, &pd);
    const int I = pd.I, J = pd.J, K = pd.K;
    double *W = bnmf_real_elt(state, "W", (R_xlen_t) I * K);
    double *H = bnmf_real_elt(state, "H", (R_xlen_t) K * J);
    bnmf_check_factors(W, H, I, J, K);
    int *SW = bnmf_pois_mask_elt(state, "SW", (R_xlen_t) I * K);
    int *SH = bnmf_pois_mask_elt(state, "SH", (R_xlen_t) K * J);
    const double *piW = bnmf_real_elt(state, "pi_W", K);
    const double *piH = bnmf_real_elt(state, "pi_H", K);
    for (int k = 0; k < K; k++)
        if (!(piW[k] >= 0.0 && piW[k] <= 1.0 && piH[k] >= 0.0 && piH[k] <= 1.0))
            Rf_error("bnmf internal error: pi must lie in [0, 1]");
    if (TYPEOF(n) != INTSXP || XLENGTH(n) != 1 || INTEGER(n)[0] < 0)
        Rf_error("bnmf internal error: n must be a count");
    ssvi_work w;
    ssvi_work_alloc(&pd, &w);
    mask_logprobs(piW, K, w.lp1W, w.lp0W);
    mask_logprobs(piH, K, w.lp1H, w.lp0H);
    masked_factors(&pd, W, H, SW, SH, w.Wt, w.Ht);
    bnmf_rng_get(0);
    for (int s = 0; s < INTEGER(n)[0]; s++) {
        mask_sweep(&pd, W, H, SW, SH, 1, 1, &w);
        R_CheckUserInterrupt();
    }
    bnmf_rng_put();
    return R_NilValue;
}
