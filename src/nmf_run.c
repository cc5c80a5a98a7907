/*
 * nmf_run.c -- a run of Gaussian NMF's sweeps (nmf_sweep.c) and its .Call
 * entry: the driver (bnmf_nmf_sweeps), the SSE, tau's update, the log joint
 * (Gibbs, ICM) and the ELBO (VB).
 */
#include <limits.h>
#include "bnmf_call.h"
#include "nmf_sweep.h"

/* sum_t log(lam_t) over the proper (lam_t > 0) entries: the constant part of
 * the exponential log prior, computed once per call. */
double bnmf_sum_log_rates(const double *lam, size_t n)
{
    /* Runs of equal rates (a single rate, as bnmf() sets it by default, is
     * one run) reuse their log: every call pays this sum, and 40,000 logs
     * at I = J = 1000, K = 20 cost a tenth of a sweep under a fast BLAS. The
     * same terms in the same order: the same sum. */
    double s = 0.0, prev = -1.0, lp = 0.0;
    for (size_t t = 0; t < n; t++) {
        const double l = lam[t];
        if (!(l > 0.0)) continue;
        if (l != prev) {
            prev = l;
            lp = log(l);
        }
        s += lp;
    }
    return s;
}

/* -sum_t lam_t z_t: the part of the exponential log prior that varies. */
double bnmf_exp_log_kernel(const double *z, const double *lam, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s -= lam[t] * z[t];
    return s;
}

/*
 * The SSE over the observed entries, summed entry by entry: the fallback of
 * the trace identity sumsq - 2 lin + quad, which cancels when the fit is
 * near-exact (the SSE is then below the rounding error of sumsq). Dense:
 * WH by blocks of 64 columns (no I x J temporary); sparse: the stored values
 * and the zeros, every entry of WH. The missing entries are skipped (their
 * x holds a latent value or zero). VB (`vb` not NULL): the expected SSE
 * under q, plus sum_k (Wvar Hvar + Wvar H^2 + W^2 Hvar) on every observed
 * entry. O(I J K), run only when the identity has cancelled.
 */
static double sse_entrywise(const nmf_data *d, const double *x, const double *W,
                            const double *H, const vb_part *vb)
{
    const int I = d->I, J = d->J, K = d->K;
    const int nb = J < 64 ? J : 64;
    double *S = (double *) R_alloc((size_t) I * nb, sizeof(double));
    double *r = (double *) R_alloc(I, sizeof(double));
    char *obs = (char *) R_alloc(I, sizeof(char));
    const double one = 1.0, zero = 0.0;
    double sse = 0.0;
    int m = 0; /* next missing entry (miss_pos ascends over the stored values) */
    for (int j0 = 0; j0 < J; j0 += nb) {
        const int nc = J - j0 < nb ? J - j0 : nb;
        F77_CALL(dgemm)("N", "N", &I, &nc, &K, &one, W, &I, H + (size_t) j0 * K,
                        &K, &zero, S, &I FCONE FCONE);
        for (int c = 0; c < nc; c++) {
            const int j = j0 + c;
            const double *s = S + (size_t) c * I;
            if (d->sparse) {
                for (int i = 0; i < I; i++) {
                    r[i] = -s[i];
                    obs[i] = 1;
                }
                for (int p = d->xp[j]; p < d->xp[j + 1]; p++) {
                    if (m < d->nmiss && d->miss_pos[m] == p) {
                        obs[d->xi[p]] = 0;
                        m++;
                    } else {
                        r[d->xi[p]] = x[p] - s[d->xi[p]];
                    }
                }
            } else {
                const R_xlen_t base = (R_xlen_t) j * I;
                for (int i = 0; i < I; i++) {
                    obs[i] = 1;
                    if (m < d->nmiss && d->miss_pos[m] == base + i) {
                        obs[i] = 0;
                        m++;
                    }
                    r[i] = x[base + i] - s[i];
                }
            }
            for (int i = 0; i < I; i++) {
                if (!obs[i]) continue;
                sse += r[i] * r[i];
                if (!vb) continue;
                for (int k = 0; k < K; k++) {
                    const double w = W[i + (size_t) k * I], h = H[k + (size_t) j * K];
                    const double wv = vb->Wvar[i + (size_t) k * I];
                    const double hv = vb->Hvar[k + (size_t) j * K];
                    sse += wv * hv + wv * h * h + w * w * hv;
                }
            }
        }
    }
    return sse;
}

/*
 * The SSE from its trace identity, `sse` = sumsq - 2 lin + quad (Gibbs with
 * latent entries: less their residuals), or, when that has cancelled (it is
 * at most SSE_CANCEL sumsq, where the rounding of sumsq, lin and quad, a few
 * hundred ulps of sumsq, could be a large part of it), summed entry by
 * entry. The threshold keeps the relative error of the identity below about
 * 1e-5 whenever it is used; below it the entry-wise sum is exact to rounding.
 * Unchanged bit for bit when the identity has not cancelled.
 */
#define SSE_CANCEL 1e-8
double bnmf_sse(const nmf_data *d, const double *x, const double *W, const double *H,
                const vb_part *vb, double sumsq, double sse)
{
    if (sse > SSE_CANCEL * sumsq) return sse;
    sse = sse_entrywise(d, x, W, H, vb);
    return sse;
}

double bnmf_sum_vec(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s += v[t];
    return s;
}

/*
 * The evidence lower bound of VB after a sweep, in closed form:
 * E_q[log p(X, W, H, tau, lambda)] + entropies of q. `esse` is the expected
 * SSE, tau_shape / tau_rate the parameters of q(tau), `log_rates` the
 * constant sum of log lam over the proper rates (no ARD; computed once per
 * call by the driver, not once per sweep: 40000 logs at I = J = 1000, K = 20).
 * `hterms` NULL, or H's terms given (the fit by blocks of samples, which
 * holds H in its blocks): hterms[0] = -sum lamH H and hterms[1] = the sum
 * of H's entropies (no ARD).
 */
double bnmf_vb_elbo(const nmf_data *d, const nmf_prior *pr, const double *W,
                    const double *H, const vb_part *vb, double esse,
                    double tau_shape, double tau_rate, const double *lambda,
                    const double *lambda_rate, double log_rates, const double *hterms,
                    double *loglik_out)
{
    const int I = d->I, J = d->J, K = d->K;
    const double etau = tau_shape / tau_rate;
    const double elogtau = digamma(tau_shape) - log(tau_rate);
    const double loglik = 0.5 * d->n_obs * (elogtau - log(2.0 * M_PI)) - 0.5 * etau * esse;
    double e = loglik;
    /* the noise prior and q(tau) */
    e += pr->alpha * log(pr->beta) - lgammafn(pr->alpha) + (pr->alpha - 1.0) * elogtau -
        pr->beta * etau + bnmf_gamma_entropy(tau_shape, tau_rate);
    /* the factors' prior */
    if (pr->ard) {
        e = bnmf_ard_elbo_add(e, d, pr, W, H, lambda, lambda_rate);
    } else {
        e += log_rates + bnmf_exp_log_kernel(W, pr->lamW, (size_t) I * K) +
            (hterms ? hterms[0] : bnmf_exp_log_kernel(H, pr->lamH, (size_t) K * J));
    }
    e += bnmf_sum_vec(vb->Went, (size_t) I * K) +
        (hterms ? hterms[1] : bnmf_sum_vec(vb->Hent, (size_t) K * J));
    *loglik_out = loglik;
    return e;
}


/* tau | W, H ~ Gamma(tau_shape, beta + sse / 2): draw it (Gibbs), take its
 * mode (ICM) or its mean (VB, whose q(tau) keeps the rate). */
void bnmf_update_tau(const nmf_prior *pr, nmf_rule rule, double tau_shape,
                     double sse, double *tau, double *tau_rate)
{
    const double rate = pr->beta + 0.5 * sse;
    if (rule == RULE_DRAW) {
        const int lent = bnmf_rng_lend();   /* rgamma() draws from R's own state */
        *tau = rgamma(tau_shape, 1.0 / rate);
        bnmf_rng_reclaim(lent);
    } else if (rule == RULE_MODE)
        *tau = tau_shape > 1.0 ? (tau_shape - 1.0) / rate : 0.0;
    else {
        *tau = tau_shape / rate;
        *tau_rate = rate;
    }
    if (!(*tau > 0.0) || !R_FINITE(*tau)) {
        bnmf_rng_put();
        Rf_error("the noise precision tau became %g (shape %g, rate %g): "
                 "the data may be constant or the noise prior degenerate",
                 *tau, tau_shape, rate);
    }
}

/* log p(X, W, H, tau[, lambda]) for Gibbs and ICM; *loglik receives
 * log p(X | W, H, tau). `log_rates` is sum log lam over the proper rates
 * (no ARD). `hterms` as for bnmf_vb_elbo (its first term only). */
double bnmf_log_joint(const nmf_data *d, const nmf_prior *pr, const double *W,
                      const double *H, double tau, const double *lambda, double sse,
                      double log_rates, const double *hterms, double *loglik)
{
    const int I = d->I, J = d->J, K = d->K;
    const double ll = 0.5 * d->n_obs * (log(tau) - log(2.0 * M_PI)) - 0.5 * tau * sse;
    double logpost = ll + pr->alpha * log(pr->beta) - lgammafn(pr->alpha) +
        (pr->alpha - 1.0) * log(tau) - pr->beta * tau;
    if (pr->ard)
        logpost += bnmf_ard_log_prior(d, pr, lambda, W, H);
    else
        logpost += log_rates + bnmf_exp_log_kernel(W, pr->lamW, (size_t) I * K) +
            (hterms ? hterms[0] : bnmf_exp_log_kernel(H, pr->lamH, (size_t) K * J));
    *loglik = ll;
    return logpost;
}

/**
 * Advance a state by c->n sweeps of its rule, in place.
 * @param d   the data
 * @param pr  the prior (with ARD its entry-wise rates are refreshed from
 *            st->lambda)
 * @param st  the chain's state (the parts the controls need; see nmf.h)
 * @param c   the controls (checked: see check_sweep_args)
 * @param out arrays for c->n sweeps; receives the traces, kept draws, the
 *            number of sweeps done and whether tol stopped them
 * Rules: Gibbs draws, ICM takes modes, VB moments, NP the Euclidean
 * multiplicative step (no prior, tau fixed). For VB, loglik is
 * E_q[log p(X | W, H, tau)], logpost the ELBO and sse the expected SSE.
 * ICM, VB and NP stop early when the relative change of logpost is at most
 * c->tol.
 */
void bnmf_nmf_sweeps(const nmf_data *d, nmf_prior *pr, nmf_state *st,
                     const sweep_ctrl *c, sweep_out *out)
{
    const int I = d->I, J = d->J, K = d->K;
    const int n_sweeps = c->n, thin = c->thin;
    const nmf_rule rule = c->rule;
    const int masked = c->masked, upd_W = c->update_W, upd_H = c->update_H;
    const int upd_tau = c->update_tau && rule != RULE_MULT;
    const double tol = c->tol;
    double *W = st->W, *H = st->H, *tau = st->tau, *x = st->x, *sumsq = st->sumsq;
    double *logpost_last = st->logpost, *lambda = st->lambda;
    double *lambda_rate = st->lambda_rate, *tau_rate = st->tau_rate;
    double *tr = out->trace;
    if (pr->ard) bnmf_ard_fill_rates(d, pr, lambda);
    vb_part vbs = {st->W_var, st->H_var, st->W_ent, st->H_ent};
    const vb_part *vb = rule == RULE_MOMENT ? &vbs : NULL;
    const int augmented = d->nmiss > 0 && !masked;
    const int n_draws = c->keep_draws ? n_sweeps / thin : 0;

    /* The scratch: from the state's buffer when it is large enough (it then
     * holds, in this order, the sweep's work, the missing entries' WH and,
     * to accumulate WH's moments of dense data, wh_batch's tile and draws),
     * else from R_alloc when the state has none. A buffer too short is
     * refused rather than replaced: new_state() (R/engine-nmf.R) sizes it by the
     * same sum, and a silent fallback would hide their disagreement. */
    const int want_block = c->accumulate && st->WH_mean && !d->sparse;
    const size_t n_block = want_block ? bnmf_wh_work_len(I, J, K) : 0;
    const size_t n_need = bnmf_sweep_work_len(d) + d->nmiss + n_block;
    if (st->work && st->n_work < n_need)
        Rf_error("bnmf: the state's scratch `work` holds %.0f doubles, the sweeps need %.0f",
                 (double) st->n_work, (double) n_need);
    double *buf = st->work;
    sweep_work ws;
    bnmf_sweep_work(d, &ws, buf);
    if (vb && augmented) {
        /* vb_fill's table of the other side's moments (fill_moments), its
         * rows gathered by index (fill_sums): 0.972 of the sweep's time
         * with the table at a line's start against 32 bytes past it
         * (bench/switch-ab.R, OpenBLAS, 21 rounds; quartiles 0.963-0.989) */
        const size_t n = I > J ? I : J;
        ws.P = bnmf_alloc_lines(2 * (size_t) K * n + K);
        ws.gm = ws.P + 2 * (size_t) K * n;
    }
    if (masked || rule == RULE_MOMENT) bnmf_sweep_threads(d, &ws, c->threads);
    if (buf) buf += bnmf_sweep_work_len(d);
    /* augmented: the latent entries' current values, then (within a sweep)
     * their WH */
    double *wh_miss = augmented ? bnmf_carve(&buf, d->nmiss) : NULL;
    if (buf && !augmented) buf += d->nmiss;
    if (augmented)
        for (int m = 0; m < d->nmiss; m++) wh_miss[m] = x[d->miss_pos[m]];
    wh_batch whb = {1, 0, NULL, NULL, NULL, NULL};
    if (want_block) bnmf_wh_batch_init(d, &whb, &buf);
    const double log_rates = pr->ard ? 0.0 : bnmf_sum_log_rates(pr->lamW, (size_t) I * K) +
        bnmf_sum_log_rates(pr->lamH, (size_t) K * J);
    const double tau_shape = pr->alpha + 0.5 * d->n_obs;

    /* On large data a sweep takes long: check for interrupts between its
     * halves too. */
    const int mid_check = ((double) d->nx + I + J) * K >= 16777216.0;
    /* Every draw below goes through bnmf_unif() or bnmf_rng_lend(): the
     * state may be held in C (rng.c). */
    bnmf_rng_get(1);
    int s, kept = 0, converged = 0;
    for (s = 0; s < n_sweeps; s++) {
        if (upd_W)
            bnmf_update_W(d, pr, x, W, H, *tau, rule, masked, &ws, vb);
        if (mid_check) {
            bnmf_rng_interrupt();
        }
        double lin, quad;
        bnmf_update_H(d, pr, x, W, H, *tau, rule, masked, upd_H, &ws, vb, &lin, &quad);
        if (upd_W && upd_H) {
            if (rule == RULE_MODE || rule == RULE_MOMENT)
                bnmf_balance_scales(d, pr, W, H, vb);
            else if (rule == RULE_DRAW)
                bnmf_scale_move(d, pr, W, H, 0);
        }
        double sse = *sumsq - 2.0 * lin + quad;
        if (augmented) {
            /* SSE over the observed entries: remove the latent ones. */
            sse -= bnmf_wh_latent(W, H, I, K, d->miss_i, d->miss_j, d->nmiss, ws.Wt,
                                  wh_miss);
        }
        sse = bnmf_sse(d, x, W, H, vb, *sumsq, sse);
        if (sse < 0.0) sse = 0.0;
        if (upd_tau) bnmf_update_tau(pr, rule, tau_shape, sse, tau, tau_rate);
        if (pr->ard && upd_W && upd_H) {
            bnmf_ard_update(d, pr, rule, lambda, lambda_rate, W, H);
            bnmf_ard_fill_rates(d, pr, lambda);
        }
        if (augmented) {
            /* wh_miss holds W H at the latent entries. Gibbs draws them
             * around it; ICM keeps them at it, their mode (the E step of an
             * ECM iteration). */
            /* one loop: Gibbs's chain of additions into ss runs in the
             * shadow of its draws */
            const int draw = rule == RULE_DRAW;
            const double sd = draw ? 1.0 / sqrt(*tau) : 0.0;
            double ss = d->sumsq_obs;
            for (int m = 0; m < d->nmiss; m++) {
                double v = wh_miss[m];
                if (draw) wh_miss[m] = v += sd * bnmf_norm_std();
                x[d->miss_pos[m]] = v;
                ss += v * v;
            }
            *sumsq = ss;
        }
        double loglik, logpost;
        if (rule == RULE_MOMENT) {
            logpost = bnmf_vb_elbo(d, pr, W, H, vb, sse, tau_shape, *tau_rate, lambda,
                              lambda_rate, log_rates, NULL, &loglik);
        } else if (rule == RULE_MULT) {
            loglik = -sse; /* minus the Euclidean loss */
            logpost = loglik;
        } else {
            logpost = bnmf_log_joint(d, pr, W, H, *tau, lambda, sse, log_rates, NULL, &loglik);
        }
        tr[s] = loglik;
        tr[s + n_sweeps] = *tau;
        tr[s + 2 * (R_xlen_t) n_sweeps] = logpost;
        tr[s + 3 * (R_xlen_t) n_sweeps] = sse;
        if (pr->ard)
            for (int k = 0; k < K; k++) out->lambda[s + (R_xlen_t) k * n_sweeps] = lambda[k];

        if ((s + 1) % thin == 0)
            bnmf_keep_sweep(d, pr, st, c, out, &kept, n_draws, &whb, &ws);
        const double prev = *logpost_last;
        *logpost_last = logpost;
        if (rule != RULE_DRAW && tol > 0.0 && R_FINITE(prev) &&
            fabs(logpost - prev) <= tol * fabs(logpost)) {
            s++;
            converged = 1;
            break;
        }
        bnmf_rng_interrupt();
    }
    bnmf_rng_put();
    /* The draws still in the batch (an interrupt above drops them). */
    if (whb.n > 0) bnmf_wh_batch_flush(d, &whb, st);

    out->done = s;
    out->converged = converged;
}

/* The checks of a run's arguments that tie the controls, data, prior and
 * state together. */
static void check_sweep_args(const nmf_data *d, const nmf_prior *pr, const sweep_ctrl *c)
{
    /* (with ARD the rates are the lambda_k, checked > 0 by bnmf_read_state) */
    if (!pr->ard && (c->rule == RULE_DRAW || c->rule == RULE_MOMENT)) {
        for (R_xlen_t t = 0; t < (R_xlen_t) d->I * d->K; t++)
            if (!(pr->lamW[t] > 0.0))
                Rf_error("bnmf internal error: Gibbs and VB need rates > 0");
        for (R_xlen_t t = 0; t < (R_xlen_t) d->K * d->J; t++)
            if (!(pr->lamH[t] > 0.0))
                Rf_error("bnmf internal error: Gibbs and VB need rates > 0");
    }
    if (c->keep_draws && ((double) d->I * d->K > INT_MAX || (double) d->K * d->J > INT_MAX))
        Rf_error("the factors are too large to keep their draws; use keep = \"summary\"");
}

/* Read the arguments of nmf_sweeps (accumulating is for Gibbs only). */
static void read_sweep_args(SEXP state, SEXP data, SEXP prior, SEXP ctrl, nmf_data *d,
                            nmf_prior *pr, nmf_state *st, sweep_ctrl *c)
{
    bnmf_read_sweep_ctrl(ctrl, c);
    c->accumulate = c->accumulate && c->rule == RULE_DRAW;
    bnmf_read_data(data, 1, d);
    bnmf_read_prior(prior, c->rule != RULE_MULT, d, pr);
    bnmf_read_state(state, d, STATE_TAU | STATE_SUMSQ | STATE_TRACK |
                    (pr->ard ? STATE_LAMBDA : 0) | (c->accumulate ? STATE_MOMENTS : 0) |
                    (c->rule == RULE_MOMENT ? STATE_VB : 0), st);
    check_sweep_args(d, pr, c);
}

/* The first `rows` rows of an n x ncol matrix (a new one when rows < n). */
static SEXP first_rows(SEXP m, int n, int rows, int ncol)
{
    if (rows == n) return m;
    SEXP m2 = PROTECT(Rf_allocMatrix(REALSXP, rows, ncol));
    for (int col = 0; col < ncol; col++)
        memcpy(REAL(m2) + (size_t) col * rows, REAL(m) + (size_t) col * n,
               sizeof(double) * rows);
    UNPROTECT(1);
    return m2;
}

/*
 * .Call entry: advance a fit's state by ctrl$n sweeps, in place.
 * state: the list made by new_state() (R/engine-nmf.R), read by bnmf_read_state;
 * data:  the list made by prepare_data();
 * prior: list(lamW, lamH, alpha, beta, and optionally ard = c(alpha0, beta0));
 * ctrl:  list(n, rule = "gibbs" | "icm" | "vb" | "np", masked, accumulate,
 *        thin, keep_draws, update_W, update_H, update_tau, tol, wh_thin)
 *        (engine_sweeps() in R/engine-nmf.R).
 * Returns list(trace = n x 4 matrix (loglik, tau, logpost, sse), W_draws,
 * H_draws, lambda = n x K matrix of the ARD rates (0 columns without ARD),
 * converged = TRUE when the tol criterion stopped the sweeps).
 */
SEXP bnmf_nmf_sweeps_call(SEXP state, SEXP data, SEXP prior, SEXP ctrl)
{
    nmf_data d;
    nmf_prior pr;
    nmf_state st;
    sweep_ctrl c;
    read_sweep_args(state, data, prior, ctrl, &d, &pr, &st, &c);
    const int n = c.n, nk = pr.ard ? d.K : 0, n_draws = c.keep_draws ? n / c.thin : 0;
    int nprotect = 0;
    SEXP v[5];
    v[0] = PROTECT(Rf_allocMatrix(REALSXP, n, 4)); nprotect++;
    v[1] = PROTECT(Rf_allocMatrix(REALSXP, c.keep_draws ? d.I * d.K : 0, n_draws)); nprotect++;
    v[2] = PROTECT(Rf_allocMatrix(REALSXP, c.keep_draws ? d.K * d.J : 0, n_draws)); nprotect++;
    v[3] = PROTECT(Rf_allocMatrix(REALSXP, n, nk)); nprotect++;
    sweep_out out = {.trace = REAL(v[0]), .lambda = REAL(v[3]), .W_draws = REAL(v[1]),
                     .H_draws = REAL(v[2]), .done = 0, .converged = 0};
    bnmf_nmf_sweeps(&d, &pr, &st, &c, &out);
    /* Trim the traces if the iteration converged early. */
    v[0] = PROTECT(first_rows(v[0], n, out.done, 4)); nprotect++;
    v[3] = PROTECT(first_rows(v[3], n, out.done, nk)); nprotect++;
    v[4] = PROTECT(Rf_ScalarLogical(out.converged)); nprotect++;
    const char *names[] = {"trace", "W_draws", "H_draws", "lambda", "converged"};
    SEXP res = bnmf_named_list(5, names, v);
    UNPROTECT(nprotect);
    return res;
}
