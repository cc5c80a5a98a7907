/*
 * nmf_kl.c -- non-probabilistic NMF by Lee & Seung's multiplicative updates
 * for the generalised Kullback-Leibler divergence (I-divergence), restricted
 * to the observed entries (Brouwer, Frellsen & Lio 2017, section 3.1):
 *
 *   W_ik <- W_ik sum_{j in Omega_i} H_kj X_ij / (WH)_ij / sum_{j in Omega_i} H_kj
 *   H_kj <- H_kj sum_{i in Omega_j} W_ik X_ij / (WH)_ij / sum_{i in Omega_j} W_ik
 *
 * which never increase D(X || WH) = sum_Omega X log(X / WH) - X + WH.
 * (The Euclidean updates share the sweep of the Gaussian rules: see RULE_MULT
 * in cond_row.c and nmf_sweep.c.)
 *
 * Cost of a sweep: dense X, four I x J x K products (WH before each half
 * sweep and the two numerators), done in blocks of columns so that no I x J
 * temporary is formed; a dgCMatrix X, O(nnz K) (its zeros are observed and
 * add nothing to the numerators). The loss of the state entering a sweep
 * comes with the ratio X / WH that its W half needs anyway (its logs four
 * at a time, bnmf_kl_loss), so the loss after sweep s is known at the start
 * of sweep s + 1 (and computed once more at the end); the H half forms its
 * ratio without the loss.
 */
#include <float.h>
#include <limits.h>
#include <string.h>
#include "bnmf_call.h"
#include "nmf.h"

#define KL_BLOCK 64

typedef struct {
    double *S;   /* I x nb block of WH, then of X / WH */
    double *NW;  /* I x K numerator of the W update */
    double *NH;  /* K x J numerator of the H update */
    double *rs;  /* 2 K values: the other side's sums, and a row's (bnmf_kl_scale) */
    double *v;   /* W H at the missing entries (sum_wh_obs) */
    double *Z, *Wt, *Dt; /* sparse X: X / WH at the stored values; W' and (Z H')' (K x I) */
    int *cur;    /* sparse X: J cursors of the row-blocked products */
} kl_work;

/* sum over the observed entries of (WH)_ij: over all, by the factors' sums,
 * less W H at the missing entries (bnmf_wh_latent, into w->v). */
static double sum_wh_obs(const nmf_data *d, const double *W, const double *H, kl_work *w)
{
    const int I = d->I, J = d->J, K = d->K;
    double tot = 0.0;
    for (int k = 0; k < K; k++) {
        double a = 0.0, b = 0.0;
        for (int i = 0; i < I; i++) a += W[i + (size_t) k * I];
        for (int j = 0; j < J; j++) b += H[k + (size_t) j * K];
        tot += a * b;
    }
    if (d->nmiss > 0) {
        memset(w->v, 0, sizeof(double) * (size_t) d->nmiss);
        bnmf_wh_latent(W, H, I, K, d->miss_i, d->miss_j, d->nmiss, w->Wt, w->v);
        for (R_xlen_t m = 0; m < d->nmiss; m++) tot -= w->v[m];
    }
    return tot;
}

/*
 * The ratio R = X / WH on the observed entries and one numerator:
 * which = 0: NW = R H' (I x K); which = 1: NH = W' R (K x J); which = -1:
 * none (the loss only). Returns sum_Omega X log(X / WH) - X when `loss_too`,
 * else 0 (the H half sweep's: the loss of its state is not needed, and its
 * log per entry was most of the sweep's time).
 */
static double kl_numerator(const nmf_data *d, const double *x, const double *W,
                           const double *H, int which, int loss_too, kl_work *w)
{
    const int I = d->I, J = d->J, K = d->K;
    double loss = 0.0;
    if (d->sparse) {
        /* the ratio at the stored values (0 at the missing ones, where x is
         * 0), W read by rows in row blocks; then the numerator as a sparse
         * product of it: each entry's terms in the order of the columns, as
         * one pass over the columns would add them */
        bnmf_transpose(W, I, K, w->Wt);
        loss = bnmf_sparse_kl_ratio(d, x, w->Wt, H, K, w->cur, w->Z, loss_too);
        if (which == 0) {
            bnmf_x_ht_rows(d, w->Z, H, w->Dt, w->cur);
            bnmf_transpose(w->Dt, K, I, w->NW);
        } else if (which == 1) {
            bnmf_wt_x(d, w->Z, W, w->NH, w->Wt, w->cur);
        }
        return loss;
    }
    if (which == 0) memset(w->NW, 0, sizeof(double) * I * K);
    const int nb = J < KL_BLOCK ? J : KL_BLOCK;
    const double one = 1.0, zero = 0.0;
    for (int j0 = 0; j0 < J; j0 += nb) {
        int m = J - j0 < nb ? J - j0 : nb;
        const double *Hb = H + (size_t) j0 * K;
        F77_CALL(dgemm)("N", "N", &I, &m, &K, &one, W, &I, Hb, &K, &zero, w->S, &I
                        FCONE FCONE);
        const double *xb = x + (size_t) j0 * I;
        bnmf_kl_ratio(w->S, w->S, xb, (size_t) I * m);
        if (loss_too) loss += bnmf_kl_loss(xb, w->S, (size_t) I * m);
        if ((j0 / nb & 15) == 15) R_CheckUserInterrupt(); /* every 1024 columns */
        if (which == 0)
            F77_CALL(dgemm)("N", "T", &I, &K, &m, &one, w->S, &I, Hb, &K, &one, w->NW,
                            &I FCONE FCONE);
        else if (which == 1)
            F77_CALL(dgemm)("T", "N", &K, &m, &I, &one, W, &I, w->S, &I, &zero,
                            w->NH + (size_t) j0 * K, &K FCONE FCONE);
    }
    return loss;
}

/**
 * vs[k] = the sum of the other side's coordinate k over a row's observed
 * entries. The other side is Ot: n vectors of K contiguous values; the
 * row's nm missing ones are mt[0 .. nm), sorted (Ot is read only where nm
 * > 0). The sum over all n (rs[k], given) less the missing ones'
 * (bnmf_idx_sums: all K sums in one pass over them), or, for a row missing
 * more than half, the sum over its observed ones, where the difference would
 * cancel.
 */
void bnmf_obs_sums(double *vs, const double *Ot, int n, const int *mt, int nm, int K,
                   const double *rs)
{
    if (nm == 0) {
        for (int k = 0; k < K; k++) vs[k] = rs[k];
    } else if (2 * nm <= n) {
        bnmf_idx_sums(vs, Ot, mt, nm, K);
        for (int k = 0; k < K; k++) vs[k] = rs[k] - vs[k];
    } else {
        for (int k = 0; k < K; k++) vs[k] = 0.0;
        for (int t = 0, m = 0; t < n; t++) {
            if (m < nm && mt[m] == t) {
                m++;
                continue;
            }
            for (int k = 0; k < K; k++) vs[k] += Ot[(size_t) t * K + k];
        }
    }
}

/**
 * The multiplicative step of one factor Z (W, or H seen row by row), Z <- Z *
 * N / D, where D for row r and factor k is the sum of the other side's
 * coordinate k over the entries observed in that row (bnmf_obs_sums, the
 * other side Ot: n vectors of K contiguous values, rs[k] their sums over
 * all n). Z(r, k) is Z[r zr + k zk] (N alike); the missing entries of row r
 * are idx[ptr[r] .. ptr[r + 1]), sorted. Where D is not positive Z is left
 * alone. vs: K values of scratch.
 */
void bnmf_kl_scale(double *Z, const double *N, int rows, size_t zr, size_t zk,
                   const double *Ot, int n, const int *ptr, const int *idx, int K,
                   const double *rs, double *vs)
{
    for (int r = 0; r < rows; r++) {
        bnmf_obs_sums(vs, Ot, n, idx + ptr[r], ptr[r + 1] - ptr[r], K, rs);
        for (int k = 0; k < K; k++) {
            const size_t rk = r * zr + k * zk;
            if (vs[k] > 0.0) Z[rk] *= N[rk] / vs[k];
        }
    }
}

/* W <- W * NW / DW with DW[i, k] = sum_{j in Omega_i} H_kj. */
static void kl_update_W(const nmf_data *d, double *W, const double *H, kl_work *w)
{
    const int J = d->J, K = d->K;
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (int j = 0; j < J; j++) s += H[k + (size_t) j * K];
        w->rs[k] = s;
    }
    bnmf_kl_scale(W, w->NW, d->I, 1, (size_t) d->I, H, J, d->mrow_ptr, d->mrow_j, K, w->rs,
                  w->rs + K);
}

/* H <- H * NH / DH with DH[k, j] = sum_{i in Omega_j} W_ik. */
static void kl_update_H(const nmf_data *d, const double *W, double *H, kl_work *w)
{
    const int I = d->I, K = d->K;
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (int i = 0; i < I; i++) s += W[i + (size_t) k * I];
        w->rs[k] = s;
    }
    if (d->nmiss > 0) bnmf_transpose(W, I, K, w->Wt);
    bnmf_kl_scale(H, w->NH, d->J, (size_t) K, 1, w->Wt, I, d->mcol_ptr, d->miss_i, K, w->rs,
                  w->rs + K);
}

/**
 * Advance a Lee-Seung KL state by c->n sweeps, in place.
 * @param st  W, H, x (values, 0 at missing entries) and logpost (minus the
 *            loss of the state)
 * @param tr  c->n values: receives the loss after each sweep done
 * @param converged receives 1 when tol stopped the sweeps
 * @return the number of sweeps done
 * Stops early when the relative change of the loss is at most c->tol.
 */
int bnmf_nmf_kl(const nmf_data *d, nmf_state *st, const kl_ctrl *c, double *tr,
                int *converged)
{
    const int I = d->I, J = d->J, K = d->K;
    const int n_sweeps = c->n, upd_W = c->update_W;
    const double tol = c->tol;
    double *W = st->W, *H = st->H, *logpost = st->logpost;
    const double *x = st->x;
    kl_work w;
    const int nb = J < KL_BLOCK ? J : KL_BLOCK;
    w.S = d->sparse ? NULL : (double *) R_alloc((size_t) I * nb, sizeof(double));
    w.NW = (double *) R_alloc((size_t) I * K, sizeof(double));
    w.NH = (double *) R_alloc((size_t) K * J, sizeof(double));
    w.rs = (double *) R_alloc((size_t) 2 * K, sizeof(double));
    w.v = (double *) R_alloc(d->nmiss > 0 ? (size_t) d->nmiss : 1, sizeof(double));
    /* W' (kl_update_H, sum_wh_obs; sparse X: the ratio and numerators) */
    w.Wt = (double *) R_alloc((size_t) K * I, sizeof(double));
    w.Z = w.Dt = NULL;
    w.cur = NULL;
    if (d->sparse) {
        w.Z = (double *) R_alloc(d->nx > 0 ? d->nx : 1, sizeof(double));
        w.Dt = (double *) R_alloc((size_t) K * I, sizeof(double));
        w.cur = (int *) R_alloc(J > 0 ? J : 1, sizeof(int));
    }

    int done = 0;
    *converged = 0;
    double prev = *logpost;  /* minus the loss of the entering state */
    for (int s = 0; s < n_sweeps; s++) {
        /* The loss of the current state (after sweep s - 1), with the ratio
         * the W update needs. */
        double loss = kl_numerator(d, x, W, H, upd_W ? 0 : -1, 1, &w) +
            sum_wh_obs(d, W, H, &w);
        if (s > 0) {
            tr[s - 1] = loss;
            const double cur = -loss;
            if (tol > 0.0 && R_FINITE(prev) && fabs(cur - prev) <= tol * fabs(cur)) {
                *logpost = cur;
                *converged = 1;
                break;
            }
            prev = cur;
        }
        if (upd_W) kl_update_W(d, W, H, &w);
        R_CheckUserInterrupt();
        kl_numerator(d, x, W, H, 1, 0, &w);
        kl_update_H(d, W, H, &w);
        done = s + 1;
        R_CheckUserInterrupt();
    }
    if (done > 0 && done == n_sweeps) {
        /* The loss after the last sweep, compared with the one before it, so
         * that where a run is cut into calls never changes when it stops. */
        const double loss = kl_numerator(d, x, W, H, -1, 1, &w) + sum_wh_obs(d, W, H, &w);
        tr[done - 1] = loss;
        *logpost = -loss;
        if (tol > 0.0 && R_FINITE(prev) && fabs(-loss - prev) <= tol * loss)
            *converged = 1;
    }
    return done;
}

/* Read the arguments of nmf_kl. */
static void read_kl_args(SEXP state, SEXP data, SEXP ctrl, nmf_data *d, nmf_state *st,
                         kl_ctrl *c)
{
    bnmf_read_kl_ctrl(ctrl, c);
    bnmf_read_data(data, 1, d);
    bnmf_read_state(state, d, STATE_TRACK, st);
    for (R_xlen_t t = 0; t < d->nx; t++)
        if (st->x[t] < 0.0)
            Rf_error("bnmf internal error: the KL loss needs X >= 0");
}

/*
 * .Call entry: advance a KL state (new_state()) by ctrl$n sweeps, in place.
 * data: as for nmf_sweeps; ctrl: list(n, tol, update_W) (engine_kl()).
 * Returns list(trace = n x 4 matrix (-loss, 1, -loss, loss), the layout of
 * nmf_sweeps' trace, and converged).
 */
SEXP bnmf_nmf_kl_call(SEXP state, SEXP data, SEXP ctrl)
{
    nmf_data d;
    nmf_state st;
    kl_ctrl c;
    read_kl_args(state, data, ctrl, &d, &st, &c);
    double *tr = (double *) R_alloc(c.n > 0 ? c.n : 1, sizeof(double));
    int converged;
    const int done = bnmf_nmf_kl(&d, &st, &c, tr, &converged);
    int nprotect = 0;
    SEXP v[2];
    v[0] = PROTECT(Rf_allocMatrix(REALSXP, done, 4)); nprotect++;
    double *t4 = REAL(v[0]);
    for (int s = 0; s < done; s++) {
        t4[s] = -tr[s];
        t4[s + done] = 1.0;
        t4[s + 2 * (R_xlen_t) done] = -tr[s];
        t4[s + 3 * (R_xlen_t) done] = tr[s];
    }
    v[1] = PROTECT(Rf_ScalarLogical(converged)); nprotect++;
    const char *names[] = {"trace", "converged"};
    SEXP out = bnmf_named_list(2, names, v);
    UNPROTECT(nprotect);
    return out;
}
