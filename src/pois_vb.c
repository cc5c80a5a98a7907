/*
 * pois_vb.c -- variational Bayes for Poisson-Gamma NMF (see pois_nmf.c for
 * the model, the updates and the ELBO), and its .Call entries.
 */
#include <float.h>
#include "bnmf_call.h"
#include "pois.h"
#include "vlog.h"

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


#if defined(__GNUC__)
/* exp(x), four at a time, for x in [-708, 709] (the caller checks): x =
 * n log 2 + r with n the nearest integer to x / log 2 (by adding 1.5 2^52:
 * n is then also the difference of the bits of the sum and of 1.5 2^52)
 * and |r| <= log(2) / 2 + 2^-40, r formed exactly with log 2 in two parts
 * (the first of 42 significant bits, so that n times it is exact); exp(r)
 * by its Taylor series to r^13 (the rest below 2e-17 of the result); times
 * 2^n from its bits. (Tested through exp(E log z), against R's exp and
 * digamma, in test-poisson-exact.R.) */
static ALWAYS_INLINE void exp4(bnmf_v4 *out, const bnmf_v4 *xp)
{
    const bnmf_v4 x = *xp;
    const double shift = 0x1.8p52;
    const double ln2_hi = 0x1.62e42fefa3800p-1, ln2_lo = 0x1.ef35793c76730p-45;
    const bnmf_v4 sv = {shift, shift, shift, shift};
    const bnmf_v4 t = x * M_LOG2E + sv;
    const bnmf_v4 n = t - sv;
    const bnmf_v4 r = (x - n * ln2_hi) - n * ln2_lo;
    const double c13 = 1.0 / 6227020800.0;
    bnmf_v4 p = {c13, c13, c13, c13};
    p = 1.0 / 479001600.0 + r * p;
    p = 1.0 / 39916800.0 + r * p;
    p = 1.0 / 3628800.0 + r * p;
    p = 1.0 / 362880.0 + r * p;
    p = 1.0 / 40320.0 + r * p;
    p = 1.0 / 5040.0 + r * p;
    p = 1.0 / 720.0 + r * p;
    p = 1.0 / 120.0 + r * p;
    p = 1.0 / 24.0 + r * p;
    p = 1.0 / 6.0 + r * p;
    p = 0.5 + r * p;
    p = 1.0 + r * p;
    p = 1.0 + r * p;
    const bnmf_v4i ni = (bnmf_v4i) t - (bnmf_v4i) sv;
    *out = p * (bnmf_v4) ((ni + 1023) << 52);
}

#endif

/* E log Gamma(z; a, b) + H[q] for q(z) = Gamma(al, be), but for the
 * constant a log b - lgamma(a); dg = digamma(al), lb = log(be), lg = lgamma(al). */
static inline double gamma_elbo_term(double al, double be, double dg, double lb, double lg,
                                     double a, double b)
{
    return (a - 1.0) * (dg - lb) - b * al / be + al - lb + lg + (1.0 - al) * dg;
}

/**
 * n factors of q, Gamma(al[t], be[t]): their means al / be into mean[t] and
 * exp(E log z) = exp(digamma(al) - log(be)) into L[t] (each unless NULL),
 * their terms E log Gamma(z; a, b) + H[q] (gamma_elbo_term()) into e[t]
 * (unless NULL); returns the sum of the terms (four partial sums, one per
 * place of t modulo 4, added as (s0 + s1) + (s2 + s3)). The lgamma,
 * digamma, logs and exp of four factors at a time (lgamma_digamma4(),
 * bnmf_log4(), exp4(); the last group padded), those of a factor with a
 * shape outside [1e-6, 1e300], a rate not positive, normal and finite, or
 * E log z outside [-708, 709] one at a time by lgamma_digamma(), log() and
 * exp(); so every factor gets
 * the same bits wherever it stands in the arrays.
 */
BNMF_CLONES static double gamma_factors(R_xlen_t n, const double *al, const double *be, double a,
                                        double b, double *mean, double *L, double *e)
{
    R_xlen_t t = 0;
    double sum[4] = {0.0, 0.0, 0.0, 0.0};
#if defined(__GNUC__)
    /* G groups of four at a time, stage by stage, so that the processor
     * overlaps the groups' long chains of dependent operations */
    enum { G = 16 };
    const bnmf_v4 zero = {0.0, 0.0, 0.0, 0.0}, one = zero + 1.0;
    bnmf_v4 A[G], B[G], x[G], P[G], D[G], lg[G], dg[G], lb[G], Lv[G], Mv[G], ev[G];
    bnmf_v4i odd[G];
    bnmf_v4 sv = zero;
    for (; t < n; t += 4 * G) {
        const R_xlen_t left = n - t;
        const int ng = left >= 4 * G ? G : (int) ((left + 3) / 4);
        for (int g = 0; g < ng; g++) {
            const R_xlen_t tg = t + 4 * g;
            if (n - tg >= 4) {
                A[g] = *(const bnmf_v4 *) (al + tg);
                B[g] = *(const bnmf_v4 *) (be + tg);
            } else {
                A[g] = B[g] = one;
                for (int l = 0; l < n - tg; l++) {
                    A[g][l] = al[tg + l];
                    B[g][l] = be[tg + l];
                }
            }
            const bnmf_v4i ex = ((bnmf_v4i) B[g] >> 52) & 0x7FF;
            odd[g] = (A[g] < 1e-6) | (A[g] > 1e300) | (A[g] != A[g]) | (ex == 0) | (ex == 0x7FF) |
                (B[g] < zero);
            /* the odd lanes computed as 1's, then again one at a time */
            x[g] = (bnmf_v4) (((bnmf_v4i) A[g] & ~odd[g]) | ((bnmf_v4i) one & odd[g]));
            B[g] = (bnmf_v4) (((bnmf_v4i) B[g] & ~odd[g]) | ((bnmf_v4i) one & odd[g]));
            A[g] = x[g];
            P[g] = one;
            D[g] = zero;
        }
        /* lgamma_digamma()'s recurrence up to x >= 10, lane by lane */
        for (int it = 0; it < 10; it++) {
            bnmf_v4i any = {0, 0, 0, 0};
            for (int g = 0; g < ng; g++) {
                const bnmf_v4i m = x[g] < 10.0;
                any |= m;
                const bnmf_v4 D1 = D[g] * x[g] + P[g], P1 = P[g] * x[g], x1 = x[g] + 1.0;
                D[g] = (bnmf_v4) (((bnmf_v4i) D1 & m) | ((bnmf_v4i) D[g] & ~m));
                P[g] = (bnmf_v4) (((bnmf_v4i) P1 & m) | ((bnmf_v4i) P[g] & ~m));
                x[g] = (bnmf_v4) (((bnmf_v4i) x1 & m) | ((bnmf_v4i) x[g] & ~m));
            }
            if (!(any[0] | any[1] | any[2] | any[3])) break;
        }
        for (int g = 0; g < ng; g++) {
            bnmf_v4 lx, lP;
            const bnmf_v4 xg = x[g], ix = 1.0 / xg, f = ix * ix;
            bnmf_log4(&lx, &xg);
            bnmf_log4(&lP, P + g);
            bnmf_log4(lb + g, B + g);
            const bnmf_v4 psi = lx - 0.5 * ix -
                f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))));
            const bnmf_v4 lgam = (xg - 0.5) * lx - xg + M_LN_SQRT_2PI +
                ix * (1.0 / 12 - f * (1.0 / 360 - f * (1.0 / 1260 - f * (1.0 / 1680 - f / 1188))));
            dg[g] = psi - D[g] / P[g];   /* D = 0 (no step): psi itself */
            lg[g] = lgam - lP;           /* P = 1: log 1 = 0 */
        }
        for (int g = 0; g < ng; g++) {
            const bnmf_v4 y = dg[g] - lb[g];
            odd[g] |= (y < -708.0) | (y > 709.0);
            const bnmf_v4 yv = (bnmf_v4) (((bnmf_v4i) y & ~odd[g]) | ((bnmf_v4i) zero & odd[g]));
            exp4(Lv + g, &yv);
            Mv[g] = A[g] / B[g];
            ev[g] = (a - 1.0) * (dg[g] - lb[g]) - b * Mv[g] + A[g] - lb[g] + lg[g] +
                (1.0 - A[g]) * dg[g];
        }
        for (int g = 0; g < ng; g++) {
            const R_xlen_t tg = t + 4 * g;
            const bnmf_v4i og = odd[g];
            if (n - tg >= 4 && !(og[0] | og[1] | og[2] | og[3])) {
                if (mean) *(bnmf_v4 *) (mean + tg) = Mv[g];
                if (L) *(bnmf_v4 *) (L + tg) = Lv[g];
                if (e) *(bnmf_v4 *) (e + tg) = ev[g];
                sv += ev[g];
                continue;
            }
            for (int l = 0; l < 4 && tg + l < n; l++) {
                double el = ev[g][l], ml = Mv[g][l], Ll = Lv[g][l];
                if (og[l]) {
                    double lgs, dgs;
                    const double as = al[tg + l], bs = be[tg + l], lbs = log(bs);
                    lgamma_digamma(as, &lgs, &dgs);
                    ml = as / bs;
                    Ll = exp(dgs - lbs);
                    el = gamma_elbo_term(as, bs, dgs, lbs, lgs, a, b);
                }
                if (mean) mean[tg + l] = ml;
                if (L) L[tg + l] = Ll;
                if (e) e[tg + l] = el;
                sum[l] += el;
            }
        }
    }
    for (int l = 0; l < 4; l++) sum[l] += sv[l];
#endif
    for (; t < n; t++) {
        double lg, dg;
        lgamma_digamma(al[t], &lg, &dg);
        const double lb = log(be[t]);
        const double el = gamma_elbo_term(al[t], be[t], dg, lb, lg, a, b);
        if (mean) mean[t] = al[t] / be[t];
        if (L) L[t] = exp(dg - lb);
        if (e) e[t] = el;
        sum[t & 3] += el;
    }
    return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

/* ---- variational Bayes ---------------------------------------------------- */

typedef struct {
    double *LWt, *LH, *NWt, *NH, *RS;
} pois_vb_work;

/* exp(E log Z) = exp(digamma(al)) / be into L (transposed for W: K x I);
 * returns the sum of the factors' Gamma terms for the prior Gamma(a, b)
 * (but for the prior's constant n (a log b - lgamma(a))), which come with
 * the same logs. */
static double vb_logmeans(const double *al, const double *be, int r, int c, int transpose,
                          double *L, double a, double b)
{
    if (!transpose) return gamma_factors((R_xlen_t) r * c, al, be, a, b, NULL, L, NULL);
    double *col = (double *) R_alloc(r, sizeof(double)), e = 0.0;
    for (int j = 0; j < c; j++) {
        e += gamma_factors(r, al + (size_t) j * r, be + (size_t) j * r, a, b, NULL, col, NULL);
        for (int i = 0; i < r; i++) L[j + (size_t) i * c] = col[i];
    }
    return e;
}

/* The ELBO given lik = sum X log (LW LH) of the same q and the Gamma terms
 * eW, eH of q(W), q(H) (with the prior's constants). */
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
    double *e = (double *) R_alloc(r, sizeof(double)), *m = (double *) R_alloc(r, sizeof(double));
    for (int j = 0; j < c; j++) {
        gamma_factors(r, al + (size_t) j * r, be + (size_t) j * r, shape, 0.0, m, NULL, e);
        for (int i = 0; i < r; i++) {
            const int k = by_col ? j : i;
            T[k] += e[i];
            S[k] += m[i];
        }
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
 * q(W) from the sums of the ratio pass NWt (K x I, sum_j r_ij LH_kj) and of
 * the rates RS (K x I, sum_{j in Omega_i} E[H_kj]): every entry's shape,
 * rate, mean W, and LWt (K x I) = exp(E log W). The rates are El[k] (ARD)
 * or the prior's b. Returns the sum of the entries' Gamma terms (without
 * the prior's constants); with ARD (TW, SW not NULL) their sums and the
 * sums of E[W_ik] per factor go to TW[k], SW[k] instead. The update of the
 * one-process sweeps and of the sweeps by blocks of samples (the reduce).
 */
static double vb_update_W(int I, int K, const pois_prior *pp, const double *El,
                          pois_vb_state *q, double *LWt, const double *NWt, const double *RS,
                          double *TW, double *SW)
{
    const int ard = pp->ard;
    const double bW = ard ? 0.0 : pp->b;
    double eW = 0.0;
    if (ard)
        for (int k = 0; k < K; k++) TW[k] = SW[k] = 0.0;
    /* by tiles of rows: the shapes and rates from the transposed sums, then
     * each column's part at once (gamma_factors()), then exp(E log W) back
     * into LWt */
    const int tile = 512;
    double *Lc = (double *) R_alloc((size_t) tile * K, sizeof(double));
    for (int i0 = 0; i0 < I; i0 += tile) {
        const int n = I - i0 < tile ? I - i0 : tile;
        for (int i = i0; i < i0 + n; i++)
            for (int k = 0; k < K; k++) {
                const size_t t = i + (size_t) k * I, u = k + (size_t) i * K;
                q->alW[t] = pp->a + LWt[u] * NWt[u];
                q->beW[t] = (ard ? El[k] : pp->b) + RS[u];
            }
        for (int k = 0; k < K; k++) {
            const size_t t0 = i0 + (size_t) k * I;
            const double e = gamma_factors(n, q->alW + t0, q->beW + t0, pp->a, bW, q->W + t0,
                                           Lc + (size_t) k * tile, NULL);
            if (ard) {
                TW[k] += e;
                for (int i = 0; i < n; i++) SW[k] += q->W[t0 + i];
            } else eW += e;
        }
        for (int i = 0; i < n; i++)
            for (int k = 0; k < K; k++) LWt[k + (size_t) (i0 + i) * K] = Lc[i + (size_t) k * tile];
    }
    return eW;
}

/**
 * q(H) of J samples (columns) from the sums of the ratio pass NH (K x J,
 * sum_i r_ij LW_ik) and of the rates RS (K x J, sum_{i in Omega_j} E[W_ik]):
 * alH, beH, the means H and LH = exp(E log H), all K x J, updated in
 * place. Returns the sum of the entries' Gamma terms; with ARD the sums
 * per factor go to TH[k], SH[k] (zeroed first) instead. Each sample's
 * update needs its own column of X only: the map of the sweeps by blocks
 * of samples.
 */
static double vb_update_H(int J, int K, const pois_prior *pp, const double *El, double *alH,
                          double *beH, double *H, double *LH, const double *NH,
                          const double *RS, double *TH, double *SH)
{
    const int ard = pp->ard;
    const double bH = ard ? 0.0 : pp->d;
    double eH = 0.0;
    if (ard)
        for (int k = 0; k < K; k++) TH[k] = SH[k] = 0.0;
    /* by tiles of samples: the shapes and rates, then gamma_factors() */
    const int tile = 512;
    double *e = ard ? (double *) R_alloc((size_t) tile * K, sizeof(double)) : NULL;
    for (int j0 = 0; j0 < J; j0 += tile) {
        const int n = J - j0 < tile ? J - j0 : tile;
        const size_t t0 = (size_t) j0 * K, nt = (size_t) n * K;
        for (size_t t = t0; t < t0 + nt; t += K)
            for (int k = 0; k < K; k++) {
                alH[t + k] = pp->c + LH[t + k] * NH[t + k];
                beH[t + k] = (ard ? El[k] : pp->d) + RS[t + k];
            }
        const double s = gamma_factors((R_xlen_t) nt, alH + t0, beH + t0, pp->c, bH, H + t0,
                                       LH + t0, e);
        if (ard) {
            for (size_t t = 0; t < nt; t += K)
                for (int k = 0; k < K; k++) {
                    TH[k] += e[t + k];
                    SH[k] += H[t0 + t + k];
                }
        } else eH += s;
    }
    return eH;
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
    double eW, eH;
    /* exp(E log) of q, and its Gamma terms without ARD */
    eW = vb_logmeans(q->alW, q->beW, I, K, 1, w.LWt, pp->a, pp->b);
    eH = vb_logmeans(q->alH, q->beH, K, J, 0, w.LH, pp->c, pp->d);
    const R_xlen_t nW = (R_xlen_t) I * K, nH = (R_xlen_t) K * J;
    double cW = 0.0, cH = 0.0;
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
        eW += cW;
        eH += cH;
    }
    double prev = *q->elbo;
    int done = 0;
    *converged = 0;
    for (int s = 0; s < n; s++) {
        /* q(Z) of the current q(W), q(H), and the ELBO of the state after
         * sweep s - 1; in row order when the rows are laid out (q(W)'s sums
         * the same bits, read from the smaller factor when J < I, no sums
         * at random places) */
        const double lik = pd->rp ? bnmf_pois_ratio_rows(pd, w.LWt, w.LH, w.NWt, 1)
                                  : bnmf_pois_ratio_pass(pd, w.LWt, w.LH, w.NWt, NULL, 1);
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
        eW = vb_update_W(I, K, pp, El, q, w.LWt, w.NWt, w.RS, TW, SW);
        eW += cW;
        R_CheckUserInterrupt();
        bnmf_pois_ratio_pass(pd, w.LWt, w.LH, NULL, w.NH, 0);
        bnmf_pois_obs_sums(pd->d, q->W, 0, w.RS);
        eH = vb_update_H(J, K, pp, El, q->alH, q->beH, q->H, w.LH, w.NH, w.RS, TH, SH);
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
        const double lik = pd->rp ? bnmf_pois_ratio_rows(pd, w.LWt, w.LH, NULL, 1)
                                  : bnmf_pois_ratio_pass(pd, w.LWt, w.LH, NULL, NULL, 1);
        const double cur = vb_elbo(pd, q, lik, eW, eH);
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
 * data, see bnmf_pois_data_known(), rows = the counts' row layout made by
 * bnmf_pois_rows_call() or TRUE to make it for this call; without it the
 * pass that forms q(W)'s sums runs in column order)
 * Returns list(trace = the ELBO after each sweep, converged, known).
 */
SEXP bnmf_pois_vb_call(SEXP state, SEXP data, SEXP x, SEXP prior, SEXP ctrl)
{
    nmf_data d; pois_data pd; pois_prior pp; pois_vb_state q;
    bnmf_pois_read_known(data, x, prior, ctrl, &d, &pd, &pp);
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
    const double eW = vb_logmeans(q.alW, q.beW, pd.I, pd.K, 1, w.LWt, pp.a, pp.b);
    const double eH = vb_logmeans(q.alH, q.beH, pd.K, pd.J, 0, w.LH, pp.c, pp.d);
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
                                 eW + (double) pd.I * pd.K * (pp.a * log(pp.b) - lgammafn(pp.a)),
                                 eH + (double) pd.K * pd.J * (pp.c * log(pp.d) - lgammafn(pp.c))));
}

/* ---- VB by blocks of samples ---------------------------------------------- */

/*
 * Given q(W), the update of q(H[, j]) reads column j of X only, and q(W)'s
 * update needs of the columns only sums over them. So a sweep is a map over
 * blocks of samples (columns) and a reduce:
 *
 *   map, block b (bnmf_pois_vb_block_call), given E[W], LW = exp(E log W)
 *   (and E[lambda] with ARD):
 *     1. q(H[, b]) from the ratio pass over its counts (vb_update_H(), the
 *        update of the one-process sweeps);
 *     2. its statistics, at the new q(H[, b]): the ratio sums
 *        NWt_b[k, i] = sum_{j in b} X_ij LH_kj / (LW LH)_ij and the rates
 *        RS_b[k, i] = sum_{j in b, j in Omega_i} E[H_kj] of W's next update;
 *        for the ELBO sum_b X log (LW LH), sum_b log X!, sum over its
 *        observed entries of (E[W] E[H])_ij and its Gamma terms (with ARD
 *        per factor, TH_b, and SH_b = sum_{j in b} E[H_kj]);
 *   reduce (bnmf_pois_vb_add_call, in block order, then
 *   bnmf_pois_vb_finish_call and bnmf_pois_vb_wstep_call): the sums, q(lambda)
 *   (ARD), the ELBO of the state, and q(W) (vb_update_W()).
 *
 * The sums start from zero and add the blocks in their order, so a fit is
 * the same bit for bit for a given partition wherever its blocks are read
 * or held; with one block it is the one-process fit's when that runs in
 * column order (without the row layout), and otherwise its q, with the log
 * likelihood summed in the other order.
 */

/* The list of a block's statistics, as bnmf_pois_vb_add_call() sums them. */
static const char *block_stat_names[] = {"NWt", "RS", "TH", "SH", "lik", "lfact", "wh", "eH"};
#define N_BLOCK_STATS 8

/*
 * .Call entry, the map: block b's counts (data, x: its columns as
 * prepare_data() lays them out) and its q(H[, b]) (bstate = list(shape_H,
 * rate_H, H, LH), K x J_b, modified in place when ctrl$update = 1); wq =
 * list(W (I x K), LWt (K x I), El (K; ARD only)): the current q(W). ctrl:
 * list(update, threads, known: as for bnmf_pois_vb_call; the passes in
 * column order, see R's pois_rows()). Returns the
 * block's statistics list(NWt, RS, TH, SH, lik, lfact, wh, eH) and `known`.
 */
SEXP bnmf_pois_vb_block_call(SEXP bstate, SEXP data, SEXP x, SEXP prior, SEXP wq, SEXP ctrl)
{
    nmf_data d; pois_data pd; pois_prior pp;
    bnmf_pois_read_known(data, x, prior, ctrl, &d, &pd, &pp);
    pd.threads = bnmf_pois_count(ctrl, "threads", 1);
    const int update = bnmf_pois_count(ctrl, "update", 0);
    const int I = d.I, J = d.J, K = d.K;
    const R_xlen_t nH = (R_xlen_t) K * J, nW = (R_xlen_t) I * K;
    double *alH = bnmf_real_elt(bstate, "shape_H", nH), *beH = bnmf_real_elt(bstate, "rate_H", nH);
    double *H = bnmf_real_elt(bstate, "H", nH), *LH = bnmf_real_elt(bstate, "LH", nH);
    const double *W = bnmf_real_elt(wq, "W", nW), *LWt = bnmf_real_elt(wq, "LWt", nW);
    const double *El = pp.ard ? bnmf_real_elt(wq, "El", K) : NULL;
    int np = 0;
    SEXP v[N_BLOCK_STATS + 1];
    v[0] = PROTECT(Rf_allocVector(REALSXP, nW)); np++;
    v[1] = PROTECT(Rf_allocVector(REALSXP, nW)); np++;
    v[2] = PROTECT(Rf_allocVector(REALSXP, K)); np++;
    v[3] = PROTECT(Rf_allocVector(REALSXP, K)); np++;
    double *TH = REAL(v[2]), *SH = REAL(v[3]);
    for (int k = 0; k < K; k++) TH[k] = SH[k] = 0.0;
    double eH = 0.0;
    if (update) {
        double *NH = (double *) R_alloc((size_t) nH, sizeof(double));
        double *RSH = (double *) R_alloc((size_t) nH, sizeof(double));
        bnmf_pois_ratio_pass(&pd, LWt, LH, NULL, NH, 0);
        bnmf_pois_obs_sums(&d, W, 0, RSH);
        eH = vb_update_H(J, K, &pp, El, alH, beH, H, LH, NH, RSH, TH, SH);
    }
    const double lik = bnmf_pois_ratio_pass(&pd, LWt, LH, REAL(v[0]), NULL, 1);
    bnmf_pois_obs_sums(&d, H, 1, REAL(v[1]));
    const double wh = bnmf_pois_sum_obs_wh(&d, W, H);
    v[4] = PROTECT(Rf_ScalarReal(lik)); np++;
    v[5] = PROTECT(Rf_ScalarReal(pd.lfact)); np++;
    v[6] = PROTECT(Rf_ScalarReal(wh)); np++;
    v[7] = PROTECT(Rf_ScalarReal(eH)); np++;
    SEXP out = bnmf_pois_block_list(N_BLOCK_STATS, block_stat_names, v, &pd);
    UNPROTECT(np);
    return out;
}

/* .Call entry, the reduce: add a block's statistics (bnmf_pois_vb_block_call)
 * into acc (the same names and lengths), in place. */
SEXP bnmf_pois_vb_add_call(SEXP acc, SEXP stats)
{
    for (int t = 0; t < N_BLOCK_STATS; t++) {
        SEXP a = bnmf_list_get(acc, block_stat_names[t]);
        const double *b = bnmf_real_elt(stats, block_stat_names[t], XLENGTH(a));
        if (TYPEOF(a) != REALSXP)
            Rf_error("bnmf internal error: '%s' must be a double vector", block_stat_names[t]);
        double *pa = REAL(a);
        for (R_xlen_t u = 0; u < XLENGTH(a); u++) pa[u] += b[u];
    }
    return R_NilValue;
}

/* The master's q(W) (and q(lambda)): wq = list(shape_W, rate_W, W, LWt, El,
 * TW, SW, eW[, shape_lambda, rate_lambda]); dims = c(I, J, K) of the whole
 * data. */
static void read_wq(SEXP wq, SEXP dims, const pois_prior *pp, pois_data *pd, pois_vb_state *q,
                    double **LWt, double **El, double **TW, double **SW, double **eW)
{
    if (TYPEOF(dims) != REALSXP || XLENGTH(dims) != 3)
        Rf_error("bnmf internal error: dims must be c(I, J, K)");
    memset(pd, 0, sizeof(pois_data));
    pd->I = (int) REAL(dims)[0]; pd->J = (int) REAL(dims)[1]; pd->K = (int) REAL(dims)[2];
    const R_xlen_t nW = (R_xlen_t) pd->I * pd->K;
    memset(q, 0, sizeof(pois_vb_state));
    q->alW = bnmf_real_elt(wq, "shape_W", nW);
    q->beW = bnmf_real_elt(wq, "rate_W", nW);
    q->W = bnmf_real_elt(wq, "W", nW);
    *LWt = bnmf_real_elt(wq, "LWt", nW);
    *El = bnmf_real_elt(wq, "El", pd->K);
    *TW = bnmf_real_elt(wq, "TW", pd->K);
    *SW = bnmf_real_elt(wq, "SW", pd->K);
    *eW = bnmf_real_elt(wq, "eW", 1);
    if (pp->ard) bnmf_pois_read_vb_lambda(wq, pd, q);
}

/*
 * .Call entry, the reduce: q(W) from the summed statistics acc (of the
 * blocks at the current q(H)), in place in wq (read_wq()): with ARD first
 * El = E[lambda] of the current q(lambda), the rates of this sweep's
 * updates of q(W) and (in the blocks) q(H). Keeps the Gamma terms of q(W)
 * in wq$eW (with ARD their sums per factor in TW, SW).
 */
SEXP bnmf_pois_vb_wstep_call(SEXP wq, SEXP acc, SEXP prior, SEXP dims)
{
    pois_prior pp; pois_data pd; pois_vb_state q;
    double *LWt, *El, *TW, *SW, *eW;
    bnmf_pois_read_prior(prior, 0, &pp);
    read_wq(wq, dims, &pp, &pd, &q, &LWt, &El, &TW, &SW, &eW);
    const R_xlen_t nW = (R_xlen_t) pd.I * pd.K;
    const double *NWt = bnmf_real_elt(acc, "NWt", nW), *RS = bnmf_real_elt(acc, "RS", nW);
    if (pp.ard)
        for (int k = 0; k < pd.K; k++) El[k] = q.alL[k] / q.beL[k];
    const double cW = pp.ard ? 0.0 : (double) nW * (pp.a * log(pp.b) - lgammafn(pp.a));
    double e = vb_update_W(pd.I, pd.K, &pp, El, &q, LWt, NWt, RS, TW, SW);
    e += cW;
    *eW = e;
    return R_NilValue;
}

/*
 * .Call entry, the end of a sweep by blocks: given the statistics acc summed
 * over the blocks after their update of q(H), with ARD q(lambda) (in place
 * in wq), and returns the ELBO of the state, as the one-process sweeps
 * compute it.
 */
SEXP bnmf_pois_vb_finish_call(SEXP wq, SEXP acc, SEXP prior, SEXP dims)
{
    pois_prior pp; pois_data pd; pois_vb_state q;
    double *LWt, *El, *TW, *SW, *eW;
    bnmf_pois_read_prior(prior, 0, &pp);
    read_wq(wq, dims, &pp, &pd, &q, &LWt, &El, &TW, &SW, &eW);
    const int K = pd.K;
    const double *TH = bnmf_real_elt(acc, "TH", K), *SH = bnmf_real_elt(acc, "SH", K);
    const double lik = *bnmf_real_elt(acc, "lik", 1), lfact = *bnmf_real_elt(acc, "lfact", 1);
    const double wh = *bnmf_real_elt(acc, "wh", 1);
    double eWv = *eW, eH = *bnmf_real_elt(acc, "eH", 1);
    if (pp.ard) {
        ard_update(&pd, &pp, &q, SW, SH);
        eWv = ard_gamma_elbo(&pd, &pp, &q, TW, SW, TH, SH);
        eH = 0.0;
    } else {
        const R_xlen_t nH = (R_xlen_t) K * pd.J;
        eH += (double) nH * (pp.c * log(pp.d) - lgammafn(pp.c));
    }
    return Rf_ScalarReal(lik - lfact - wh + eWv + eH);
}

/* .Call entry: exp(E log Z) of q(Z) = Gamma(al, be), r x c (dims = c(r,
 * c)), transposed (c x r) when transpose = TRUE: LWt of q(W), LH of q(H). */
SEXP bnmf_pois_vb_logmeans_call(SEXP al, SEXP be, SEXP dims, SEXP transpose)
{
    if (TYPEOF(dims) != REALSXP || XLENGTH(dims) != 2)
        Rf_error("bnmf internal error: dims must be c(rows, columns)");
    const int r = (int) REAL(dims)[0], c = (int) REAL(dims)[1];
    const R_xlen_t n = (R_xlen_t) r * c;
    if (TYPEOF(al) != REALSXP || TYPEOF(be) != REALSXP || XLENGTH(al) != n || XLENGTH(be) != n)
        Rf_error("bnmf internal error: al, be must be double vectors of length rows x columns");
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    vb_logmeans(REAL(al), REAL(be), r, c, Rf_asLogical(transpose) == TRUE, REAL(out), 1.0, 0.0);
    UNPROTECT(1);
    return out;
}
