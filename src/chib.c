/*
 * chib.c -- Chib's (1995) reduced runs and the scale-orbit integral.
 *
 * One run of Chib's (1995) estimator of log p(X) (R/chib.R): the Gibbs
 * sampler of the posterior with some blocks held at a point theta*
 * (W*, H*, tau*, lambda*), returning, once per draw, the full conditional
 * log density of the next block at theta*. The chain rule goes
 *   p(theta* | X) = prod_b p(W*[, b] | W*[, <b], X)          block W
 *                 x p(tau*, lambda* | W*, X)                 block tau
 *                 x prod_b p(H*[b, ] | H*[<b, ], W*, tau*, lambda*, X)  block H
 * block W, index b: W[, <b] fixed; W[, b..K], H, tau, lambda free. Target
 *   W[, b]; the sweep is restricted to the free coordinates and keeps the
 *   scale move for the factors whose W column and H row are both free.
 * block tau: W fixed; H, tau, lambda free. Target (tau, lambda), whose
 *   conditional given W and H is a product of Gamma densities.
 * block H, index b: W, tau, lambda and H[<b, ] fixed. Given them the
 *   columns of H are independent Markov chains (each column's update reads
 *   only itself), so p(H*[b, ] | ...) is the product over j of
 *   p(H*[b, j] | ...), each of which is estimated by its own average; the
 *   routine returns the per-column log densities (n_samples x J; the other
 *   blocks give an n_samples x 1 matrix), and the
 *   product of the averages has a far smaller variance than the average of
 *   the products.
 * Missing entries are masked (x must hold 0 there).
 *
 * Labels. The posterior is invariant under permuting the factors when their
 * priors are exchangeable, and a chain rarely visits all K! relabellings.
 * Chib's average E[p(W[, b] = W*[, b] | rest)] over the reduced posterior
 * equals the average of its symmetrisation over the permutations of the free
 * labels b..K, which the chain only needs to sample up to labelling. For a
 * column of W that symmetrisation is the mean over k in b..K of the density
 * of W*[, b] as column k of the draw (given the draw's other factors and the
 * rate of label k), so with sym = 1 block W returns log mean_k exp(acc_k).
 * Once W is fixed the labels are no longer exchangeable.
 *
 * The scale average (orbit): see chib_orbit below.
 */
#include <float.h>
#include "bnmf_call.h"
#include "nmf.h"

static void chib_interrupt_point(void);

/* What a reduced run evaluates of the conditionals of its half sweeps'
 * rows (eval_row, chib_update_W, chib_update_H). */
typedef struct {
    const double *target; /* the block's fixed values, stride tstride */
    size_t tstride;
    int last;             /* labels first..last-1 */
    int wblock;           /* 1: a column of W (store a, e, d); 0: a row of H */
    double *acc;          /* K accumulators of log densities */
    double *a, *e, *dd;   /* I x K: the conditionals of the W column */
    double *each;         /* rows of H: the log density of each column j */
} chib_hook;

/*
 * Chib's method (chib_run below) needs the full conditional density of one
 * block of the factors at a fixed point: a column b of W at W*[, b] (the rows
 * of W are conditionally independent, so it is a product over the rows of
 * the coordinate conditionals N+(mu_ib, 1/p_ib)) or a row b of H at H*[b, ]
 * (a product over the columns). The run's own half sweeps (chib_update_W,
 * chib_update_H, from the sweep's building blocks in nmf_sweep.c) take them
 * from each row's Gram matrix and right side (eval_row), for the state
 * before the row is updated: that is the previous sweep's draw, whatever row
 * comes first.
 *
 * Rows of H: each[j] receives the log density of H*[b, j] (the columns of
 * H are independent given W, tau and lambda, see chib_run).
 * Columns of W: for each label k in first..last-1 (see chib_run) the kernel
 * stores the conditional of W*[i, b] as entry k of row i in the form
 *   mu_i(c) = c a_i - c^2 e_i,  sd_i(c) = c d_i,
 * where c = 1 is the draw itself and c is the scale move of factor k
 * (W[, k] c, H[k, ] / c): with H[k, ] / c the row's Gram entries and data
 * projections scale as G_kk / c^2, G_kl / c and b_k / c, while W[i, l] H[l, ]
 * (l != k) do not move. chib_orbit() then integrates over c.
 */
/**
 * Store the conditional of entry i of the target block, before the row is
 * updated (see above).
 * @param i     the row of W (or column of H) of the entry
 * @param xstar the target value of the entry
 * @param z, G, b, lam, ls, tau, K, first  the row's conditional, as for
 *              bnmf_cond_row
 */
static void eval_row(const chib_hook *hk, int i, int I, double xstar, const double *z,
                     const double *G, const double *b, const double *lam, int ls,
                     double tau, int K, int first)
{
    for (int k = first; k < hk->last; k++) {
        const double *gk = G + (size_t) k * K;
        const double gkk = gk[k];
        const double lk = lam[(size_t) k * ls];
        const size_t t = (size_t) i + (size_t) k * I;
        if (gkk > 0.0) {
            double s = b[k];
            for (int l = 0; l < K; l++) s -= gk[l] * z[l];
            s += gkk * z[k];
            const double sd = 1.0 / sqrt(tau * gkk);
            if (hk->wblock) {
                hk->a[t] = s / gkk;
                hk->e[t] = lk / (tau * gkk);
                hk->dd[t] = sd;
            } else {
                hk->each[i] = bnmf_tn_pos_logdens(xstar, (s - lk / tau) / gkk, sd);
            }
        } else {
            /* No data on this coordinate: the conditional is the prior
             * Exp(lk), the same for every scale c. */
            if (hk->wblock) {
                hk->acc[k] += log(lk) - lk * xstar;
                hk->dd[t] = 0.0;
            } else {
                hk->each[i] = log(lk) - lk * xstar;
            }
        }
    }
}

/*
 * Chib's average over the scale of a factor. A draw theta of the posterior
 * moved along the scale path of factor k, (W[, k] c, H[k, ] / c), with c drawn
 * from its conditional
 *   g(c | theta) propto exp(-A_k c - B_k / c) c^(I - J)   (u = log c)
 * (the scale move above) is again a draw of the posterior, so Chib's average
 * of the conditional density f of the target column may average, for each
 * draw, f(c) over g(c | theta) instead of taking f(1). This is exact, and it
 * matters: along the scale path the posterior is wide (the prior alone sets
 * a factor's scale) while the column's conditional is narrow, so f(1) varies
 * over many orders of magnitude between draws and its plain average is
 * dominated by a few of them. The scale of the other factors does not change
 * f. The integral over u is taken by the trapezoidal rule on a grid placed
 * around the maximum of the integrand with a step below its width, which for
 * smooth, unimodal, rapidly decaying integrands converges geometrically.
 */
typedef struct {
    const double *x, *a, *e, *dd, *ldd; /* ldd: log(dd) */
    int I;
    double A, B, p;
    int with_f, with_g;
} orbit_fn;

static double orbit_eval(const orbit_fn *o, double u)
{
    const double c = exp(u);
    double s = 0.0;
    if (o->with_g) s += -o->A * c - o->B / c + o->p * u;
    if (!o->with_f) return s;
    for (int i = 0; i < o->I; i++) {
        if (!(o->dd[i] > 0.0)) continue;
        const double sd = c * o->dd[i], mu = c * o->a[i] - c * c * o->e[i];
        if (mu > 8.0 * sd) {
            /* log Phi(mu / sd) > -7e-16: a plain normal density */
            const double z = (o->x[i] - mu) / sd;
            s += -0.5 * z * z - u - o->ldd[i] - M_LN_SQRT_2PI;
        } else {
            s += bnmf_tn_pos_logdens(o->x[i], mu, sd);
        }
    }
    return s;
}

/* Whether an integrand of width h around u = m is beyond what differences
 * can resolve: h below the spacing of doubles near m, or log values v so
 * large that their rounding exceeds 1e-3 (near-exact data, a draw far from
 * theta* in units of the noise). Its integral is then the Laplace value
 * v + log(sqrt(2 pi) h) with the width of the Gaussian approximation; such
 * a density is at most exp(-1e13) and does not move Chib's average unless
 * every draw gives one. */
static int orbit_unresolved(double m, double h, double v)
{
    return h < 8.0 * DBL_EPSILON * fmax(1.0, fabs(m)) || fabs(v) * DBL_EPSILON > 1e-3;
}

/* log of the integral of exp(orbit_eval(u)) du, for an integrand with one
 * maximum near m and width about h: a few parabolic (Newton) steps find the
 * maximum u* and the curvature there, then the trapezoidal rule with a step
 * of 0.8 / sqrt(curvature) walks out from u* on both sides until the
 * integrand is exp(-40) below its maximum. */
static double orbit_integral(const orbit_fn *o, double m, double h)
{
    double v0 = orbit_eval(o, m), curv = 0.0;
    const double h0 = h;
    double vbest = v0;
    for (int it = 0; it < 60; it++) {
        const double vp = orbit_eval(o, m + h), vm = orbit_eval(o, m - h);
        if (!R_FINITE(v0) && !R_FINITE(vp) && !R_FINITE(vm)) return R_NegInf;
        vbest = fmax(vbest, fmax(v0, fmax(vp, vm)));
        curv = (vp - 2.0 * v0 + vm) / (h * h);
        const double grad = (vp - vm) / (2.0 * h);
        double step;
        if (R_FINITE(curv) && curv < 0.0) {
            step = -grad / curv;
            if (step > 4.0 * h) step = 4.0 * h;
            if (step < -4.0 * h) step = -4.0 * h;
        } else {
            step = grad > 0.0 ? 4.0 * h : -4.0 * h; /* not concave here: climb */
        }
        if (fabs(step) < 0.05 * h && R_FINITE(curv) && curv < 0.0) {
            /* converged; keep h near the width for the last curvature */
            const double w = 1.0 / sqrt(-curv);
            if (h < 2.0 * w && h > 0.1 * w) break;
            h = 0.5 * w;
            continue;
        }
        m += step;
        v0 = orbit_eval(o, m);
        if (fabs(step) >= 4.0 * h) h *= 1.5; /* far away: larger probes */
    }
    if (!(curv < 0.0) || !R_FINITE(curv)) {
        if (orbit_unresolved(m, h0, vbest)) return vbest + log(h0) + M_LN_SQRT_2PI;
        Rf_error("bnmf internal error: the scale integral of Chib's method has no maximum");
    }
    const double s = 0.8 / sqrt(-curv);
    double vmax = v0, sum = 1.0; /* sum of exp(v - vmax) */
    for (int dir = -1; dir <= 1; dir += 2) {
        for (int t = 1; t <= 400; t++) {
            const double v = orbit_eval(o, m + dir * t * s);
            if (v > vmax) {
                sum = sum * exp(vmax - v) + 1.0;
                vmax = v;
            } else {
                sum += exp(v - vmax);
            }
            if (v < vmax - 40.0) break;
            if (t == 400 && orbit_unresolved(m, s, vmax))
                return vmax + log(s / 0.8) + M_LN_SQRT_2PI;
            if (t == 400)
                Rf_error("bnmf internal error: the scale integral of Chib's method did not settle");
        }
    }
    return vmax + log(sum * s);
}

/* log of the average of the target column's conditional density over the
 * scale of factor k (a, e, dd: its conditionals; A, B: the draw's scale
 * sums). */
static double chib_orbit(const double *x, const double *a, const double *e,
                         const double *dd, int I, double A, double B, double p,
                         double *ldd)
{
    for (int i = 0; i < I; i++) ldd[i] = dd[i] > 0.0 ? log(dd[i]) : 0.0;
    orbit_fn o = {x, a, e, dd, ldd, I, A, B, p, 1, 0};
    if (!(A > 0.0) || !(B > 0.0)) return orbit_eval(&o, 0.0);
    /* g: its mode, width and normalising constant */
    const double y = (p + sqrt(p * p + 4.0 * A * B)) / (2.0 * A);
    const double ug = log(y), kg = A * y + B / y;
    orbit_fn og = {x, a, e, dd, ldd, I, A, B, p, 0, 1};
    const double logZ = orbit_integral(&og, ug, 1.0 / sqrt(kg));
    /* f: with v = 1/c its Gaussian part is quadratic in v,
     * sum_i (x_i v - a_i)^2 / (2 d_i^2), smallest at v* = Sxa / Sxx. */
    double sxa = 0.0, sxx = 0.0;
    for (int i = 0; i < I; i++) {
        if (!(dd[i] > 0.0)) continue;
        const double w = 1.0 / (dd[i] * dd[i]);
        sxa += x[i] * a[i] * w;
        sxx += x[i] * x[i] * w;
    }
    double m = ug, prec = kg;
    if (sxa > 0.0 && sxx > 0.0) {
        const double vs = sxa / sxx, kf = vs * vs * sxx;
        m = (-log(vs) * kf + ug * kg) / (kf + kg);
        prec = kf + kg;
    }
    o.with_g = 1;
    return orbit_integral(&o, m, 1.0 / sqrt(prec)) - logZ;
}


/*
 * Chib's half sweeps: the Gibbs sampler's masked half sweep (bnmf_update_W,
 * bnmf_update_H) while nothing is held and nothing evaluated; else row by
 * row (no blocks of rows), with the coordinates k < first held fixed and,
 * with hk, the target's conditionals evaluated before each row is drawn.
 */
static void chib_update_W(const nmf_data *d, const nmf_prior *pr, const double *x,
                          double *W, const double *H, double tau, int first,
                          sweep_work *ws, const chib_hook *hk)
{
    if (first == 0 && !hk) {
        bnmf_update_W(d, pr, x, W, H, tau, RULE_DRAW, 1, ws, NULL);
        return;
    }
    const int I = d->I, K = d->K;
    bnmf_W_products(d, x, H, ws, NULL);
    for (int i = 0; i < I; i++) {
        bnmf_row_interrupt(i);
        bnmf_W_row_load(d, W, i, ws);
        const double *G = bnmf_W_row_gram(d, H, i, 1, ws, NULL);
        if (hk)
            eval_row(hk, i, I, hk->target[i * hk->tstride], ws->zrow, G, ws->brow,
                     pr->lamW + i, I, tau, K, first);
        bnmf_cond_row(ws->zrow, G, ws->brow, pr->lamW + i, I, tau, K, first, RULE_DRAW,
                      ws->vrow, ws->erow);
        bnmf_W_rows_store(d, W, i, 1, ws, NULL);
    }
}

/* The columns of H, as chib_update_W; the SSE's pieces into *lin and *quad
 * (bnmf_update_H). */
static void chib_update_H(const nmf_data *d, const nmf_prior *pr, const double *x,
                          const double *W, double *H, double tau, int first,
                          sweep_work *ws, const chib_hook *hk, double *lin, double *quad)
{
    if (first == 0 && !hk) {
        bnmf_update_H(d, pr, x, W, H, tau, RULE_DRAW, 1, 1, ws, NULL, lin, quad);
        return;
    }
    const int J = d->J, K = d->K;
    bnmf_H_products(d, x, W, ws, NULL);
    double sl = 0.0, sq = 0.0;
    for (int j = 0; j < J; j++) {
        bnmf_row_interrupt(j);
        double *hj = H + (size_t) j * K;
        const double *fj = ws->F + (size_t) j * K, *lam = pr->lamH + (size_t) j * K;
        const double *G = bnmf_H_col_gram(d, j, 1, ws, NULL);
        if (hk) eval_row(hk, j, J, hk->target[j * hk->tstride], hj, G, fj, lam, 1, tau, K, first);
        bnmf_cond_row(hj, G, fj, lam, 1, tau, K, first, RULE_DRAW, ws->vrow, ws->erow);
        bnmf_h_sse_terms(G, H, ws->F, NULL, j, K, &sl, &sq);
    }
    *lin = sl;
    *quad = sq;
}

/**
 * One reduced run (see the top of the file).
 * @param st     the run's state (W, H, tau, x with missing entries masked,
 *               sumsq, lambda with ARD), modified in place
 * @param target theta*
 * @param c      the controls (block, index, burn-in, samples, sym, orbit)
 * @param po     receives the log densities: samples x J (block H), else
 *               samples x 1
 */
void bnmf_chib_run(const nmf_data *d, nmf_prior *pr, nmf_state *st,
                   const nmf_point *target, const chib_ctrl *c, double *po)
{
    const int I = d->I, J = d->J, K = d->K;
    const int n_burn = c->burnin, n_samp = c->samples, index = c->index;
    const chib_block block = c->block;
    double *W = st->W, *H = st->H, *tau = st->tau, *lambda = st->lambda;
    const double *x = st->x;
    const double sumsq = *st->sumsq;
    const double *lambda_star = target->lambda;
    const double tau_star = target->tau;
    if (pr->ard) bnmf_ard_fill_rates(d, pr, lambda);
    sweep_work ws;
    bnmf_sweep_work(d, &ws, NULL);
    chib_hook hk;
    hk.acc = (double *) R_alloc(K, sizeof(double));
    hk.a = hk.e = hk.dd = hk.each = NULL;
    hk.target = NULL;
    hk.tstride = 0;
    hk.wblock = block == CHIB_W;
    hk.last = index + 1;
    double *scaleA = NULL, *scaleB = NULL, *ldd = NULL;
    if (block == CHIB_W) {
        hk.target = target->W + (size_t) index * I;
        hk.tstride = 1;
        hk.last = c->sym ? K : index + 1;
        hk.a = (double *) R_alloc((size_t) I * K, sizeof(double));
        hk.e = (double *) R_alloc((size_t) I * K, sizeof(double));
        hk.dd = (double *) R_alloc((size_t) I * K, sizeof(double));
        scaleA = (double *) R_alloc(K, sizeof(double));
        scaleB = (double *) R_alloc(K, sizeof(double));
        ldd = (double *) R_alloc(I, sizeof(double));
    } else if (block == CHIB_H) {
        hk.target = target->H + index;
        hk.tstride = (size_t) K;
    }
    double *each = block == CHIB_H ? (double *) R_alloc(J, sizeof(double)) : NULL;
    hk.each = each;
    const double tau_shape = pr->alpha + 0.5 * d->n_obs;
    const double lam_shape = pr->alpha0 + I + J;
    /* block H holds tau and lambda at theta* */
    if (block == CHIB_H) {
        *tau = tau_star;
        if (pr->ard) {
            for (int k = 0; k < K; k++) lambda[k] = lambda_star[k];
            bnmf_ard_fill_rates(d, pr, lambda);
        }
    }

    /* Interrupts are checked every few sweeps (about every 2^24 products of
     * the data with a factor's entries, well under 0.1 s) and, on large data,
     * also between the two factors of a sweep. */
    const double work = ((double) d->nx + I + J) * K;
    const int every = work >= 16777216.0 ? 1 : (int) fmin(64.0, 16777216.0 / work);
    const int mid = work >= 16777216.0;
    bnmf_rng_get(1);   /* draws through bnmf_unif() and bnmf_rng_lend() only */
    for (int s = 0; s < n_burn + n_samp; s++) {
        const int eval = s >= n_burn;
        const R_xlen_t row = s - n_burn;
        for (int k = 0; k < K; k++) hk.acc[k] = 0.0;
        double lin, quad;
        if (block == CHIB_W) {
            if (eval)
                for (int k = index; k < hk.last; k++)
                    bnmf_scale_sums(d, pr, W, H, k, scaleA + k, scaleB + k);
            chib_update_W(d, pr, x, W, H, *tau, index, &ws, eval ? &hk : NULL);
            if (eval) {
                for (int k = index; k < hk.last; k++) {
                    const size_t o = (size_t) k * I;
                    hk.acc[k] += c->orbit ?
                        chib_orbit(hk.target, hk.a + o, hk.e + o, hk.dd + o, I,
                                   scaleA[k], scaleB[k], (double) I - J, ldd) :
                        chib_orbit(hk.target, hk.a + o, hk.e + o, hk.dd + o, I,
                                   0.0, 0.0, 0.0, ldd);
                }
            }
            if (mid) chib_interrupt_point();
            bnmf_update_H(d, pr, x, W, H, *tau, RULE_DRAW, 1, 1, &ws, NULL, &lin, &quad);
            bnmf_scale_move(d, pr, W, H, index);
        } else {
            chib_update_H(d, pr, x, W, H, *tau, block == CHIB_H ? index : 0, &ws,
                          block == CHIB_H && eval ? &hk : NULL, &lin, &quad);
        }
        double sse = bnmf_sse(d, x, W, H, NULL, sumsq, sumsq - 2.0 * lin + quad);
        if (sse < 0.0) sse = 0.0;
        if (block == CHIB_TAU && eval) {
            /* p(tau*, lambda* | W*, H): Gamma densities */
            double v = dgamma(tau_star, tau_shape, 1.0 / (pr->beta + 0.5 * sse), 1);
            if (pr->ard)
                for (int k = 0; k < K; k++)
                    v += dgamma(lambda_star[k], lam_shape,
                                1.0 / (pr->beta0 + bnmf_factor_mass(d, W, H, k)), 1);
            po[row] = v;
        }
        if (block != CHIB_H) {
            const int lent = bnmf_rng_lend();   /* rgamma() draws from R's own state */
            *tau = rgamma(tau_shape, 1.0 / (pr->beta + 0.5 * sse));
            bnmf_rng_reclaim(lent);
            if (!(*tau > 0.0) || !R_FINITE(*tau)) {
                bnmf_rng_put();
                Rf_error("the noise precision tau became %g in Chib's reduced run", *tau);
            }
            if (pr->ard) {
                bnmf_ard_update(d, pr, RULE_DRAW, lambda, NULL, W, H);
                bnmf_ard_fill_rates(d, pr, lambda);
            }
        }
        if (eval && block == CHIB_W) {
            /* log of the mean of exp(acc_k) over the labels evaluated */
            double mx = R_NegInf;
            for (int k = index; k < hk.last; k++) if (hk.acc[k] > mx) mx = hk.acc[k];
            double se = 0.0;
            if (R_FINITE(mx))
                for (int k = index; k < hk.last; k++) se += exp(hk.acc[k] - mx);
            po[row] = R_FINITE(mx) ? mx + log(se / (hk.last - index)) : mx;
        } else if (eval && block == CHIB_H) {
            for (int j = 0; j < J; j++) po[row + (R_xlen_t) j * n_samp] = each[j];
        }
        if ((s + 1) % every == 0) chib_interrupt_point();
    }
    bnmf_rng_put();
}

/* Check for an interrupt, with the RNG state saved first (an interrupt
 * jumps out of the run). */
static void chib_interrupt_point(void)
{
    bnmf_rng_interrupt();
}

/* Rates > 0 everywhere (Chib's densities need proper priors). */
static void check_proper(const nmf_data *d, const nmf_prior *pr)
{
    for (R_xlen_t t = 0; !pr->ard && t < (R_xlen_t) d->I * d->K; t++)
        if (!(pr->lamW[t] > 0.0))
            Rf_error("bnmf internal error: Chib's method needs rates > 0");
    for (R_xlen_t t = 0; !pr->ard && t < (R_xlen_t) d->K * d->J; t++)
        if (!(pr->lamH[t] > 0.0))
            Rf_error("bnmf internal error: Chib's method needs rates > 0");
}

/* Read and check the arguments of chib_run. */
static void read_chib_args(SEXP state, SEXP data, SEXP prior, SEXP target, SEXP ctrl,
                           nmf_data *d, nmf_prior *pr, nmf_state *st, nmf_point *pt,
                           chib_ctrl *c)
{
    bnmf_read_chib_ctrl(ctrl, c);
    bnmf_read_data(data, 1, d);
    if (c->index >= d->K)
        Rf_error("bnmf internal error: ctrl$index %d is above the rank %d", c->index + 1,
                 d->K);
    if (c->block == CHIB_H && (double) c->samples * d->J > R_XLEN_T_MAX)
        Rf_error("bnmf internal error: too many samples");
    bnmf_read_prior(prior, 1, d, pr);
    check_proper(d, pr);
    const int lam = pr->ard ? STATE_LAMBDA : 0;
    bnmf_read_state(state, d, STATE_TAU | STATE_SUMSQ | lam, st);
    bnmf_read_point(target, d, pr->ard, pt);
    for (int m = 0; m < d->nmiss; m++)
        if (st->x[d->miss_pos[m]] != 0.0)
            Rf_error("bnmf internal error: missing entries must be masked (zero) here");
}

/*
 * .Call entry: one reduced run.
 * state:  list(W, H, tau, x, sumsq[, lambda]) (new_state()) at the start
 *         (theta* with the free blocks anywhere), modified in place;
 * data, prior: as for bnmf_nmf_sweeps_call;
 * target: list(W = W*, H = H*, tau = tau*[, lambda = lambda*]);
 * ctrl:   list(burnin, samples, block = "W" | "H" | "tau", index (1-based),
 *         sym, orbit); with orbit, block W averages each draw's density over
 *         the scale of the factor (chib_orbit).
 * Returns the log densities (samples x J for block H, else samples x 1).
 */
SEXP bnmf_chib_run_call(SEXP state, SEXP data, SEXP prior, SEXP target, SEXP ctrl)
{
    nmf_data d;
    nmf_prior pr;
    nmf_state st;
    nmf_point pt;
    chib_ctrl c;
    read_chib_args(state, data, prior, target, ctrl, &d, &pr, &st, &pt, &c);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, c.samples, c.block == CHIB_H ? d.J : 1));
    bnmf_chib_run(&d, &pr, &st, &pt, &c, REAL(out));
    UNPROTECT(1);
    return out;
}
