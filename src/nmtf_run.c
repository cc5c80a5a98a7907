/*
 * nmtf_run.c -- a run of the tri-factorisation's sweeps (bnmf_nmtf_sweeps):
 * rows of F, rows of G, entries of S, then tau and the ARD rates; the
 * moves along the scales (Gibbs: drawn; ICM, VB: maximised), the objective
 * (log joint, ELBO), the running moments and kept draws, and the .Call
 * entry.
 */
#include <limits.h>
#include "bnmf_call.h"
#include "nmtf.h"


/* (F S G')_ij at every entry of a dense X, in blocks of columns by dgemm,
 * handed to `each(p, value, ctx)` with p the entry's position in X. w->W
 * must hold F S. (Sparse X: bnmf_sparse_visit.) */
typedef void (*entry_fun)(size_t p, double y, void *ctx);
static void fitted_entries(const nmf_data *d, const nmtf_state *st, nmtf_work *w,
                           double *blk, entry_fun each, void *ctx)
{
    const int I = d->I, J = d->J, L = st->L;
    const double one = 1.0, zero = 0.0;
    for (int j0 = 0; j0 < J; j0 += NMTF_BLOCK) {
        int nb = J - j0 < NMTF_BLOCK ? J - j0 : NMTF_BLOCK;
        if (L > 0)
            F77_CALL(dgemm)("N", "T", &I, &nb, &L, &one, w->W, &I, st->G + j0, &J, &zero,
                            blk, &I FCONE FCONE);
        else
            for (size_t t = 0; t < (size_t) I * nb; t++) blk[t] = 0.0;
        for (int jj = 0; jj < nb; jj++)
            for (int i = 0; i < I; i++)
                each((size_t) i + (size_t) (j0 + jj) * I, blk[i + (size_t) jj * I], ctx);
    }
}

/* Welford update of a running mean and sum of squared deviations. */
static inline void running(double *mean, double *m2, double v, double n)
{
    const double dv = v - *mean;
    *mean += dv / n;
    *m2 += dv * (v - *mean);
}

typedef struct { double *mean, *m2, n; } acc_ctx;
static void acc_entry(size_t p, double y, void *ctx)
{
    acc_ctx *a = (acc_ctx *) ctx;
    running(a->mean + p, a->m2 + p, y, a->n);
}

/* acc_entry on a run of stored values (bnmf_sparse_visit) */
static void acc_run(size_t p0, const double *y, int n, void *ctx)
{
    acc_ctx *a = (acc_ctx *) ctx;
    for (int t = 0; t < n; t++) running(a->mean + p0 + t, a->m2 + p0 + t, y[t], a->n);
}

/*
 * Moves along the scale paths F[, k] c, S[k, ] / c and G[, l] c,
 * S[, l] / c, which leave F S G' (so the likelihood) unchanged; F's side
 * first, then G's (with S as F's steps left it). Coordinate updates cross
 * these nearly flat paths only slowly. On F's side, with a = lF_k sum_i F_ik
 * and b = lS sum_l S_kl (G's side: lG_l sum_j G_jl and lS sum_k S_kl), and
 * p = I - L (G's side: J - K), the entries scaled by c less those scaled by
 * 1 / c:
 *  - ICM (rule RULE_MODE): the log prior -c a - b / c is largest at c =
 *    sqrt(b / a); every MAP is balanced. An exact maximisation along a
 *    direction: the log posterior never decreases, the fixed points stay.
 *  - VB (RULE_MOMENT): a truncated normal scaled by c is one again (mean
 *    times c, variance times c^2, entropy plus log c) and every expectation
 *    in the expected SSE keeps its value, so the ELBO moves by -a (c - 1) -
 *    b (1 / c - 1) + p log c (a and b with the means, E[lambda] with ARD):
 *    largest at bnmf_scale_mode's c.
 *  - Gibbs (RULE_DRAW): the generalised Gibbs step of Liu & Sabatti (2000)
 *    for the group of scalings: u = log c drawn from
 *      p(u) propto pi(F[, k] e^u, S[k, ] e^-u, ...) |Jacobian|
 *           propto exp(-a e^u - b e^-u + p u)
 *    (Lebesgue measure in u is the group's Haar measure; the likelihood and
 *    the other blocks do not move), or any Metropolis-Hastings step from u
 *    = 0 that leaves p(u) invariant, preserves the posterior. log p(u) is
 *    concave with tails lighter than Gaussian, so an independence proposal
 *    from its Laplace approximation N(u*, 1 / (a e^u* + b e^-u*)) (u* from
 *    bnmf_scale_mode) is uniformly ergodic and accepts nearly always. The
 *    same step as NMF's bnmf_scale_move, with I - J replaced by p.
 * The caches A = (E)F'F, B = (E)G'G and F' X G are rescaled, not recomputed.
 */
static void scale_steps(const nmf_data *d, const nmtf_prior *pr, nmtf_state *st,
                        nmtf_work *w, nmf_rule rule)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    const int vb = rule == RULE_MOMENT, draw = rule == RULE_DRAW;
    if (!(pr->rate_S > 0.0)) return;
    double *cs[2] = {w->vrow, w->erow};
    for (int side = 0; side < 2; side++) {
        const int R = side ? L : K, n = side ? J : I, m = side ? K : L;
        double *Z = side ? st->G : st->F;
        double *Zv = side ? st->G_var : st->F_var, *Ze = side ? st->G_ent : st->F_ent;
        const double *lam = side ? w->lamG : w->lamF;
        const double p = (double) n - (double) m;
        for (int r = 0; r < R; r++) {
            double a = 0.0, b = 0.0;
            cs[side][r] = 1.0;
            for (int t = 0; t < n; t++) a += Z[t + (size_t) r * n];
            for (int t = 0; t < m; t++)
                b += st->S[side ? t + (size_t) r * K : r + (size_t) t * K];
            a *= lam[r];
            b *= pr->rate_S;
            if (!(a > 0.0) || !(b > 0.0)) continue;
            double c, u = 0.0;
            if (draw) {
                double mode, ay, by;
                const int logs = bnmf_scale_mode(a, b, p, &mode, &ay, &by);
                const double sd = 1.0 / sqrt(ay + by);
                u = mode + sd * bnmf_norm_std();
                /* log target minus log proposal at u and at 0 (from logs:
                 * a e^u = ay e^(u - mode), b e^-u = by e^(mode - u)) */
                const double z1 = (u - mode) / sd, z0 = mode / sd;
                const double ta = logs ? ay * exp(u - mode) : a * exp(u);
                const double tb = logs ? by * exp(mode - u) : b * exp(-u);
                const double log_ratio = (-ta - tb + p * u + 0.5 * z1 * z1) -
                    (-a - b + 0.5 * z0 * z0);
                if (!(log(bnmf_unif()) < log_ratio)) continue;
                c = exp(u);
            } else if (vb) {
                double ay, by;
                bnmf_scale_mode(a, b, p, &u, &ay, &by);
                if (!R_FINITE(u) || u == 0.0) continue;
                c = exp(u);
            } else {
                c = sqrt(b / a);
            }
            if (!R_FINITE(c) || !(c > 0.0)) continue;
            cs[side][r] = c;
            for (int t = 0; t < n; t++) {
                const size_t tr = t + (size_t) r * n;
                Z[tr] *= c;
                if (vb) {
                    Zv[tr] *= c * c;
                    Ze[tr] += u;
                }
            }
            for (int t = 0; t < m; t++) {
                const size_t kl = side ? t + (size_t) r * K : r + (size_t) t * K;
                st->S[kl] /= c;
                if (vb) {
                    st->S_var[kl] /= c * c;
                    st->S_ent[kl] -= u;
                }
            }
        }
    }
    /* (E)F'F, (E)G'G and F' X G of the rescaled factors; VB: the missing
     * entries' products are recomputed when next needed */
    const double *cf = cs[0], *cg = cs[1];
    for (int k2 = 0; k2 < K; k2++)
        for (int k = 0; k < K; k++) w->A[k + (size_t) k2 * K] *= cf[k] * cf[k2];
    for (int l2 = 0; l2 < L; l2++)
        for (int l = 0; l < L; l++) w->B[l + (size_t) l2 * L] *= cg[l] * cg[l2];
    for (int l = 0; l < L; l++)
        for (int k = 0; k < K; k++) w->Bd[k + (size_t) l * K] *= cf[k] * cg[l];
}

/* ---- priors, log joint, ELBO ---- */

/* The halves of the data that the ARD code of ard.c sees: a factor of n
 * rows and R columns (J = 0: no second factor). */
static nmf_data ard_half(int n, int R)
{
    nmf_data h;
    memset(&h, 0, sizeof(h));
    h.I = n;
    h.J = 0;
    h.K = R;
    return h;
}

static nmf_prior ard_prior(const nmtf_prior *pr)
{
    nmf_prior p;
    memset(&p, 0, sizeof(p));
    p.ard = 1;
    p.alpha0 = pr->alpha0;
    p.beta0 = pr->beta0;
    p.alpha = pr->alpha;
    p.beta = pr->beta;
    return p;
}

static double sum_vec(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s += v[t];
    return s;
}

/* log density of Exp(rate) summed over n values with the given sum (an
 * improper flat prior, rate 0, adds nothing). */
static double exp_log_prior(double rate, size_t n, double sum)
{
    return rate > 0.0 ? n * log(rate) - rate * sum : 0.0;
}

/*
 * The prior of F, S, G (and of the rates under ARD): log p for Gibbs and
 * ICM; for VB (lrate: the Gamma rates of q(lambda)) E_q[log p] with the
 * factors' means, plus the entropies of q(lambda).
 */
static double factor_prior(const nmf_data *d, const nmtf_prior *pr, const nmtf_state *st,
                           int vb)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    double e = exp_log_prior(pr->rate_S, (size_t) K * L, sum_vec(st->S, (size_t) K * L));
    if (!pr->ard)
        return e + exp_log_prior(pr->rate_F, (size_t) I * K, sum_vec(st->F, (size_t) I * K)) +
            exp_log_prior(pr->rate_G, (size_t) J * L, sum_vec(st->G, (size_t) J * L));
    const nmf_data hF = ard_half(I, K), hG = ard_half(J, L);
    const nmf_prior ap = ard_prior(pr);
    if (vb)
        return bnmf_ard_elbo_add(bnmf_ard_elbo_add(e, &hF, &ap, st->F, NULL, st->lamF,
                                                   st->lamF_rate),
                                 &hG, &ap, st->G, NULL, st->lamG, st->lamG_rate);
    return e + bnmf_ard_log_prior(&hF, &ap, st->lamF, st->F, NULL) +
        bnmf_ard_log_prior(&hG, &ap, st->lamG, st->G, NULL);
}

/* The rates of the rows' conditionals: lambda (ARD) or the fixed rates. */
static void fill_rates(const nmtf_prior *pr, const nmtf_state *st, nmtf_work *w)
{
    for (int k = 0; k < st->K; k++) w->lamF[k] = pr->ard ? st->lamF[k] : pr->rate_F;
    for (int l = 0; l < st->L; l++) w->lamG[l] = pr->ard ? st->lamG[l] : pr->rate_G;
}

/* log p(X | .) (VB: its expectation) in *loglik, and the log joint (VB: the ELBO). */
static double objective(const nmf_data *d, const nmtf_prior *pr, const nmtf_state *st,
                        nmf_rule rule, double sse, double tau_shape, double *loglik)
{
    const int vb = rule == RULE_MOMENT;
    const double etau = *st->tau;
    const double elog = vb ? digamma(tau_shape) - log(*st->tau_rate) : log(etau);
    const double ll = 0.5 * d->n_obs * (elog - log(2.0 * M_PI)) - 0.5 * etau * sse;
    *loglik = ll;
    double e = ll + pr->alpha * log(pr->beta) - lgammafn(pr->alpha) +
        (pr->alpha - 1.0) * elog - pr->beta * etau + factor_prior(d, pr, st, vb);
    if (vb) {
        const int I = d->I, J = d->J, K = st->K, L = st->L;
        e += bnmf_gamma_entropy(tau_shape, *st->tau_rate) +
            sum_vec(st->F_ent, (size_t) I * K) + sum_vec(st->S_ent, (size_t) K * L) +
            sum_vec(st->G_ent, (size_t) J * L);
    }
    return e;
}

/* What a run of sweeps reports (arrays for c->n sweeps). */
typedef struct {
    double *trace, *lambda, *F_draws, *S_draws, *G_draws;
    int done, converged;
} nmtf_out;

/* argmax of a row of an n x R matrix (the first on ties) */
static int row_argmax(const double *M, int n, int R, int i)
{
    int best = 0;
    for (int r = 1; r < R; r++)
        if (M[i + (size_t) r * n] > M[i + (size_t) best * n]) best = r;
    return best;
}

/* Running moments, cluster counts and kept draws of a sampling sweep. */
static void keep_sweep(const nmf_data *d, const nmtf_prior *pr, nmtf_state *st,
                       const nmtf_ctrl *c, nmtf_out *out, int *kept, int n_draws,
                       nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    const size_t nF = (size_t) I * K, nS = (size_t) K * L, nG = (size_t) J * L;
    if (c->accumulate) {
        const double n = ++(*st->n_kept);
        for (size_t t = 0; t < nF; t++) running(st->F_mean + t, st->F_m2 + t, st->F[t], n);
        for (size_t t = 0; t < nS; t++) running(st->S_mean + t, st->S_m2 + t, st->S[t], n);
        for (size_t t = 0; t < nG; t++) running(st->G_mean + t, st->G_m2 + t, st->G[t], n);
        running(st->tau_mean, st->tau_m2, *st->tau, n);
        if (pr->ard) {
            for (int k = 0; k < K; k++) running(st->lamF_mean + k, st->lamF_m2 + k, st->lamF[k], n);
            for (int l = 0; l < L; l++) running(st->lamG_mean + l, st->lamG_m2 + l, st->lamG[l], n);
        }
        for (int i = 0; i < I; i++) st->row_hits[i + (size_t) row_argmax(st->F, I, K, i) * I] += 1.0;
        for (int j = 0; j < J; j++) st->col_hits[j + (size_t) row_argmax(st->G, J, L, j) * J] += 1.0;
        if (st->X_mean) {
            nmtf_mat_mult("N", "N", I, L, K, st->F, I, st->S, K, w->W);
            acc_ctx a = {st->X_mean, st->X_m2, n};
            if (d->sparse) {
                /* (F S)' and G' by rows, their rows in blocks; each value
                 * summed over l in order, as entry by entry */
                bnmf_transpose(w->W, I, L, w->Wt);
                bnmf_transpose(st->G, J, L, w->Gt);
                const double *pf[] = {st->X_mean, st->X_m2, NULL};
                bnmf_sparse_visit(d, w->Wt, w->Gt, L, w->obs, acc_run, &a, pf);
            } else {
                fitted_entries(d, st, w, w->blk, acc_entry, &a);
            }
        }
    }
    if (c->keep_draws && *kept < n_draws) {
        memcpy(out->F_draws + (size_t) *kept * nF, st->F, sizeof(double) * nF);
        memcpy(out->S_draws + (size_t) *kept * nS, st->S, sizeof(double) * nS);
        memcpy(out->G_draws + (size_t) *kept * nG, st->G, sizeof(double) * nG);
        (*kept)++;
    }
}

/**
 * Advance a state by c->n sweeps of its rule, in place: rows of F, rows of
 * G, entries of S, then tau and the ARD rates. Missing entries are masked
 * (zeros in st->x, left out of every Gram matrix and sum).
 * @param out arrays for c->n sweeps: trace (n x 4: loglik, tau, logpost,
 *            sse), ARD rates (n x (K + L)), kept draws; receives the number
 *            of sweeps done and whether tol stopped them.
 * For VB logpost is the ELBO and sse the expected SSE; for NP logpost is
 * minus the loss.
 */
void bnmf_nmtf_sweeps(const nmf_data *d, const nmtf_prior *pr, nmtf_state *st,
                      const nmtf_ctrl *c, nmtf_out *out)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    const nmf_rule rule = c->rule;
    const int vb = rule == RULE_MOMENT, n = c->n;
    const int upd_tau = c->update_tau && rule != RULE_MULT;
    const int n_draws = c->keep_draws ? n / c->thin : 0;
    nmtf_work w;
    nmtf_work_alloc(d, K, L, vb, c->kl, c->accumulate && st->X_mean, &w);
    const double tau_shape = pr->alpha + 0.5 * d->n_obs;
    nmf_prior taup;
    memset(&taup, 0, sizeof(taup));
    taup.alpha = pr->alpha;
    taup.beta = pr->beta;
    const nmf_data hF = ard_half(I, K), hG = ard_half(J, L);
    const nmf_prior ap = ard_prior(pr);
    bnmf_rng_get(1);   /* draws through bnmf_unif() and bnmf_rng_lend() only */
    int s, kept = 0, converged = 0;
    for (s = 0; s < n; s++) {
        double sse, loglik, logpost;
        if (c->kl) {
            sse = nmtf_kl_sweep(d, st, c, &w);
            loglik = logpost = -sse;
        } else {
            fill_rates(pr, st, &w);
            if (c->update_F) nmtf_update_F(d, st, rule, vb, &w);
            nmtf_f_side(d, st, vb, &w);
            if (c->update_G) nmtf_update_G(d, st, rule, vb, &w);
            nmtf_g_side(d, st, vb, &w);
            if (c->update_S) nmtf_update_S(d, st, rule, vb, pr->rate_S, &w);
            if (c->scale && rule != RULE_MULT && c->update_F && c->update_S && c->update_G)
                scale_steps(d, pr, st, &w, rule);
            sse = nmtf_sse(d, st, vb, &w);
            if (sse < 0.0) sse = 0.0;
            if (upd_tau) bnmf_update_tau(&taup, rule, tau_shape, sse, st->tau, st->tau_rate);
            if (pr->ard && rule != RULE_MULT) {
                if (c->update_F)
                    bnmf_ard_update(&hF, &ap, rule, st->lamF, st->lamF_rate, st->F, NULL);
                if (c->update_G)
                    bnmf_ard_update(&hG, &ap, rule, st->lamG, st->lamG_rate, st->G, NULL);
            }
            if (rule == RULE_MULT) {
                loglik = logpost = -sse;
            } else {
                logpost = objective(d, pr, st, rule, sse, tau_shape, &loglik);
            }
        }
        out->trace[s] = loglik;
        out->trace[s + n] = *st->tau;
        out->trace[s + 2 * (R_xlen_t) n] = logpost;
        out->trace[s + 3 * (R_xlen_t) n] = sse;
        if (pr->ard) {
            for (int k = 0; k < K; k++) out->lambda[s + (R_xlen_t) k * n] = st->lamF[k];
            for (int l = 0; l < L; l++) out->lambda[s + (R_xlen_t) (K + l) * n] = st->lamG[l];
        }
        if ((s + 1) % c->thin == 0) keep_sweep(d, pr, st, c, out, &kept, n_draws, &w);
        /* ICM, VB, NP: stop at a relative change of the objective <= tol */
        const double change = fabs(logpost - *st->logpost);
        converged = rule != RULE_DRAW && c->tol > 0.0 && R_FINITE(*st->logpost) &&
            change <= c->tol * fabs(logpost);
        *st->logpost = logpost;
        if (converged) break;
        bnmf_rng_interrupt();
    }
    bnmf_rng_put();
    out->done = s < n ? s + 1 : n;
    out->converged = converged;
}

/*
 * .Call entry: advance an NMTF state by ctrl$n sweeps, in place.
 * state: the list of nmtf_new_state() (R/engine-nmtf.R); data: prepare_data(X, K);
 * prior: list(rate = c(F, S, G), alpha, beta, ard); ctrl: see
 * bnmf_read_nmtf_ctrl(). Returns list(trace = n x 4, lambda = n x (K + L)
 * (0 columns without ARD), F_draws, S_draws, G_draws, converged).
 */
SEXP bnmf_nmtf_sweeps_call(SEXP state, SEXP data, SEXP prior, SEXP ctrl, SEXP dimsL)
{
    nmf_data d;
    nmtf_prior pr;
    nmtf_state st;
    nmtf_ctrl c;
    bnmf_read_nmtf_ctrl(ctrl, &c);
    bnmf_read_data(data, 1, &d);
    bnmf_read_nmtf_prior(prior, &pr);
    if (TYPEOF(dimsL) != INTSXP || XLENGTH(dimsL) != 1 || INTEGER(dimsL)[0] < 1)
        Rf_error("bnmf internal error: L must be one positive integer");
    const int K = d.K, L = INTEGER(dimsL)[0];
    const int ard = pr.ard && c.rule != RULE_MULT;
    pr.ard = ard;
    bnmf_read_nmtf_state(state, &d, K, L, ard, c.accumulate, c.rule == RULE_MOMENT, &st);
    if (c.rule != RULE_MODE && c.rule != RULE_MULT && !ard &&
        !(pr.rate_F > 0.0 && pr.rate_S > 0.0 && pr.rate_G > 0.0))
        Rf_error("bnmf internal error: Gibbs and VB need rates > 0");
    if (c.rule != RULE_MODE && c.rule != RULE_MULT && !(pr.rate_S > 0.0))
        Rf_error("bnmf internal error: Gibbs and VB need rates > 0");
    if (c.keep_draws && ((double) d.I * K > INT_MAX || (double) d.J * L > INT_MAX))
        Rf_error("the factors are too large to keep their draws; use keep = \"summary\"");
    const int n = c.n, nl = ard ? K + L : 0, nd = c.keep_draws ? n / c.thin : 0;
    int nprotect = 0;
    SEXP v[6];
    v[0] = PROTECT(Rf_allocMatrix(REALSXP, n, 4)); nprotect++;
    v[1] = PROTECT(Rf_allocMatrix(REALSXP, n, nl)); nprotect++;
    v[2] = PROTECT(Rf_allocMatrix(REALSXP, nd ? d.I * K : 0, nd)); nprotect++;
    v[3] = PROTECT(Rf_allocMatrix(REALSXP, nd ? K * L : 0, nd)); nprotect++;
    v[4] = PROTECT(Rf_allocMatrix(REALSXP, nd ? d.J * L : 0, nd)); nprotect++;
    nmtf_out out = {REAL(v[0]), REAL(v[1]), REAL(v[2]), REAL(v[3]), REAL(v[4]), 0, 0};
    bnmf_nmtf_sweeps(&d, &pr, &st, &c, &out);
    if (out.done < n) {
        /* converged early: trim the traces */
        for (int t = 0; t < 2; t++) {
            const int nc = t == 0 ? 4 : nl;
            SEXP m = PROTECT(Rf_allocMatrix(REALSXP, out.done, nc)); nprotect++;
            for (int col = 0; col < nc; col++)
                memcpy(REAL(m) + (size_t) col * out.done, REAL(v[t]) + (size_t) col * n,
                       sizeof(double) * out.done);
            v[t] = m;
        }
    }
    v[5] = PROTECT(Rf_ScalarLogical(out.converged)); nprotect++;
    const char *names[] = {"trace", "lambda", "F_draws", "S_draws", "G_draws", "converged"};
    SEXP res = bnmf_named_list(6, names, v);
    UNPROTECT(nprotect);
    return res;
}
