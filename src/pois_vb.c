/*
 * pois_vb.c -- variational Bayes for Poisson-Gamma NMF (see pois_nmf.c for
 * the model, the updates and the ELBO), and its .Call entries.
 */
#include <float.h>
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

/* ---- ARD: q(lambda_k) = Gamma(alL_k, beL_k) -------------------------------- */

/* Per factor k of q(W) (by_col: I x K, the factor a column) or of q(H)
 * (K x J, a row): T[k] = sum of (shape - 1) E log z + H[q(z)] and S[k] = sum
 * of E[z] over its entries. */
static void ard_terms(const double *al, const double *be, int r, int c, int by_col, double shape,
                      double *T, double *S)
{
    const int K = by_col ? c : r;
    for (int k = 0; k < K; k++) T[k] = S[k] = 0.0;
    for (int j = 0; j < c; j++)
        for (int i = 0; i < r; i++) {
            const size_t t = i + (size_t) j * r;
            const int k = by_col ? j : i;
            double lg, dg;
            lgamma_digamma(al[t], &lg, &dg);
            T[k] += gamma_elbo_term(al[t], be[t], dg, log(be[t]), lg, shape, 0.0);
            S[k] += al[t] / be[t];
        }
}

/* The Gamma terms of the ELBO under ARD, given the sums of ard_terms():
 *   sum_k [T^W_k - E[lambda_k] S^W_k + I (a E log lambda_k - lgamma(a))]
 *       + [T^H_k - E[lambda_k] S^H_k + J (c E log lambda_k - lgamma(c))]
 *       + E log p(lambda_k) + H[q(lambda_k)]. */
static double ard_gamma_elbo(const pois_data *pd, const pois_prior *pp, const pois_vb_state *q,
                             const double *TW, const double *SW, const double *TH,
                             const double *SH)
{
    const double lga = lgammafn(pp->a), lgc = lgammafn(pp->c);
    const double cL = pp->alpha0 * log(pp->beta0) - lgammafn(pp->alpha0);
    double e = 0.0;
    for (int k = 0; k < pd->K; k++) {
        double lg, dg;
        lgamma_digamma(q->alL[k], &lg, &dg);
        const double lb = log(q->beL[k]), El = q->alL[k] / q->beL[k], Ell = dg - lb;
        e += TW[k] - El * SW[k] + pd->I * (pp->a * Ell - lga);
        e += TH[k] - El * SH[k] + pd->J * (pp->c * Ell - lgc);
        e += gamma_elbo_term(q->alL[k], q->beL[k], dg, lb, lg, pp->alpha0, pp->beta0) + cL;
    }
    return e;
}

/* q(lambda_k) = Gamma(alpha0 + I a + J c, beta0 + sum_i E[W_ik] + sum_j E[H_kj]). */
static void ard_update(const pois_data *pd, const pois_prior *pp, pois_vb_state *q,
                       const double *SW, const double *SH)
{
    const double sh = pp->alpha0 + pd->I * pp->a + pd->J * pp->c;
    for (int k = 0; k < pd->K; k++) {
        q->alL[k] = sh;
        q->beL[k] = pp->beta0 + SW[k] + SH[k];
    }
}

/**
 * Advance q by n sweeps (in place); tr[s] receives the ELBO after sweep s.
 * Stops when the relative change of the ELBO is at most tol. Returns the
 * number of sweeps done. With ARD (pp->ard) a sweep updates q(W) and q(H)
 * with the rates E[lambda_k], then q(lambda).
 */
static int pois_vb(const pois_data *pd, const pois_prior *pp, pois_vb_state *q, int n,
                   double tol, double *tr, int *converged)
{
    const int I = pd->I, J = pd->J, K = pd->K, ard = pp->ard;
    pois_vb_work w;
    vb_work(pd, &w);
    vb_logmeans(q->alW, q->beW, I, K, 1, w.LWt);
    vb_logmeans(q->alH, q->beH, K, J, 0, w.LH);
    const R_xlen_t nW = (R_xlen_t) I * K, nH = (R_xlen_t) K * J;
    double eW, eH, cW = 0.0, cH = 0.0;
    double *TW = NULL, *SW = NULL, *TH = NULL, *SH = NULL, *El = NULL;
    if (ard) {
        TW = (double *) R_alloc(5 * (size_t) K, sizeof(double));
        SW = TW + K; TH = SW + K; SH = TH + K; El = SH + K;
        ard_terms(q->alW, q->beW, I, K, 1, pp->a, TW, SW);
        ard_terms(q->alH, q->beH, K, J, 0, pp->c, TH, SH);
        eW = ard_gamma_elbo(pd, pp, q, TW, SW, TH, SH);
        eH = 0.0;
    } else {
        cW = (double) nW * (pp->a * log(pp->b) - lgammafn(pp->a));
        cH = (double) nH * (pp->c * log(pp->d) - lgammafn(pp->c));
        eW = gamma_elbo_terms(q->alW, q->beW, nW, pp->a, pp->b);
        eH = gamma_elbo_terms(q->alH, q->beH, nH, pp->c, pp->d);
    }
    /* without ARD the Gamma terms of q(W) carry the prior's rate (with ARD
     * they are summed per factor and the rate enters in ard_gamma_elbo()) */
    const double bW = ard ? 0.0 : pp->b, bH = ard ? 0.0 : pp->d;
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
        if (ard)
            for (int k = 0; k < K; k++) El[k] = q->alL[k] / q->beL[k];
        bnmf_pois_obs_sums(pd->d, q->H, 1, w.RS);
        eW = 0.0;
        for (int k = 0; k < K; k++) {
            const double rk = ard ? El[k] : pp->b;
            double tk = 0.0, sk = 0.0;
            for (int i = 0; i < I; i++) {
                const size_t t = i + (size_t) k * I, u = k + (size_t) i * K;
                const double e = vb_set(pp->a + w.LWt[u] * w.NWt[u], rk + w.RS[u], pp->a, bW,
                                        q->alW + t, q->beW + t, q->W + t, w.LWt + u);
                if (ard) {
                    tk += e;
                    sk += q->W[t];
                } else eW += e;
            }
            if (ard) {
                TW[k] = tk;
                SW[k] = sk;
            }
        }
        eW += cW;
        R_CheckUserInterrupt();
        bnmf_pois_ratio_pass(pd, w.LWt, w.LH, NULL, w.NH, 0);
        bnmf_pois_obs_sums(pd->d, q->W, 0, w.RS);
        eH = 0.0;
        if (ard)
            for (int k = 0; k < K; k++) TH[k] = SH[k] = 0.0;
        for (int j = 0; j < J; j++)
            for (int k = 0; k < K; k++) {
                const size_t t = k + (size_t) j * K;
                const double e = vb_set(pp->c + w.LH[t] * w.NH[t], (ard ? El[k] : pp->d) + w.RS[t],
                                        pp->c, bH, q->alH + t, q->beH + t, q->H + t, w.LH + t);
                if (ard) {
                    TH[k] += e;
                    SH[k] += q->H[t];
                } else eH += e;
            }
        eH += cH;
        if (ard) {
            ard_update(pd, pp, q, SW, SH);
            eW = ard_gamma_elbo(pd, pp, q, TW, SW, TH, SH);
            eH = 0.0;
        }
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
    bnmf_pois_read_vb_state(state, &pd, &q);
    if (pp.ard) bnmf_pois_read_vb_lambda(state, &pd, &q);
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

/* .Call entry: the ELBO of q (as read by the VB sweeps) for counts x; with
 * ARD, q(lambda) is read from the state too. */
SEXP bnmf_pois_elbo_call(SEXP state, SEXP data, SEXP x, SEXP prior)
{
    nmf_data d; pois_data pd; pois_prior pp; pois_vb_state q;
    bnmf_pois_read_args(data, x, prior, 0, 0, &d, &pd, &pp);
    bnmf_pois_read_vb_state(state, &pd, &q);
    pois_vb_work w;
    vb_work(&pd, &w);
    vb_logmeans(q.alW, q.beW, pd.I, pd.K, 1, w.LWt);
    vb_logmeans(q.alH, q.beH, pd.K, pd.J, 0, w.LH);
    const double lik = bnmf_pois_ratio_pass(&pd, w.LWt, w.LH, NULL, NULL, 1);
    if (pp.ard) {
        bnmf_pois_read_vb_lambda(state, &pd, &q);
        double *T = (double *) R_alloc(4 * (size_t) pd.K, sizeof(double));
        double *S = T + pd.K, *TH = S + pd.K, *SH = TH + pd.K;
        ard_terms(q.alW, q.beW, pd.I, pd.K, 1, pp.a, T, S);
        ard_terms(q.alH, q.beH, pd.K, pd.J, 0, pp.c, TH, SH);
        return Rf_ScalarReal(vb_elbo(&pd, &q, lik, ard_gamma_elbo(&pd, &pp, &q, T, S, TH, SH),
                                     0.0));
    }
    return Rf_ScalarReal(vb_elbo(&pd, &q, lik,
                                 gamma_elbo_terms(q.alW, q.beW, (R_xlen_t) pd.I * pd.K, pp.a, pp.b),
                                 gamma_elbo_terms(q.alH, q.beH, (R_xlen_t) pd.K * pd.J, pp.c, pp.d)));
}
