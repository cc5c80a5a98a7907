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
 * in gauss_cond.c and nmf_sweep.c.)
 *
 * Cost of a sweep: dense X, four I x J x K products (WH before each half
 * sweep and the two numerators), done in blocks of columns so that no I x J
 * temporary is formed; a dgCMatrix X, O(nnz K) (its zeros are observed and
 * add nothing to the numerators). The loss of the state entering a half
 * sweep comes with the ratio X / WH that the half sweep needs anyway, so the
 * loss after sweep s is known at the start of sweep s + 1 (and computed once
 * more at the end).
 */
#include <float.h>
#include <limits.h>
#include "bnmf_call.h"
#include "nmf.h"

#define KL_BLOCK 64

typedef struct {
    double *S;   /* I x nb block of WH, then of X / WH */
    double *NW;  /* I x K numerator of the W update */
    double *NH;  /* K x J numerator of the H update */
    double *rs;  /* K sums over columns or rows */
    double *Z, *Wt, *Dt; /* sparse X: X / WH at the stored values; W' and (Z H')' (K x I) */
    int *cur;    /* sparse X: J cursors of the row-blocked products */
} kl_work;

/* sum over the observed entries of (WH)_ij. */
static double sum_wh_obs(const nmf_data *d, const double *W, const double *H)
{
    const int I = d->I, J = d->J, K = d->K;
    double tot = 0.0;
    for (int k = 0; k < K; k++) {
        double a = 0.0, b = 0.0;
        for (int i = 0; i < I; i++) a += W[i + (size_t) k * I];
        for (int j = 0; j < J; j++) b += H[k + (size_t) j * K];
        tot += a * b;
    }
    for (int m = 0; m < d->nmiss; m++)
        tot -= bnmf_wh_entry(W, H, I, K, d->miss_i[m], d->miss_j[m]);
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
        bnmf_kl_ratio_only(w->S, xb, (size_t) I * m);
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

/*
 * The multiplicative step of one factor Z (W, or H seen row by row), Z <- Z *
 * N / D, where D for row r and factor k is the sum of the other side O over
 * the entries observed in that row: the sum over all n of O's entries (rs),
 * less those of the row's missing entries. Z(r, k) is Z[r zr + k zk], O(k, t)
 * is O[k ok + t ot], and the missing entries of row r are idx[ptr[r] ..
 * ptr[r + 1]).
 */
static void kl_scale(double *Z, const double *N, int rows, size_t zr, size_t zk,
                     const double *O, int n, size_t ok, size_t ot, const int *ptr,
                     const int *idx, int K, double *rs)
{
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (int t = 0; t < n; t++) s += O[k * ok + (size_t) t * ot];
        rs[k] = s;
    }
    for (int r = 0; r < rows; r++) {
        const int *mt = idx + ptr[r];
        const int nm = ptr[r + 1] - ptr[r];
        for (int k = 0; k < K; k++) {
            double den = rs[k];
            for (int t = 0; t < nm; t++) den -= O[k * ok + (size_t) mt[t] * ot];
            const size_t rk = r * zr + k * zk;
            if (den > 0.0) Z[rk] *= N[rk] / den;
        }
    }
}

/* W <- W * NW / DW with DW[i, k] = sum_{j in Omega_i} H_kj. */
static void kl_update_W(const nmf_data *d, double *W, const double *H, kl_work *w)
{
    kl_scale(W, w->NW, d->I, 1, (size_t) d->I, H, d->J, 1, (size_t) d->K, d->mrow_ptr,
             d->mrow_j, d->K, w->rs);
}

/* H <- H * NH / DH with DH[k, j] = sum_{i in Omega_j} W_ik. */
static void kl_update_H(const nmf_data *d, const double *W, double *H, kl_work *w)
{
    kl_scale(H, w->NH, d->J, (size_t) d->K, 1, W, d->I, (size_t) d->I, 1, d->mcol_ptr,
             d->miss_i, d->K, w->rs);
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
    w.rs = (double *) R_alloc(K, sizeof(double));
    w.Z = w.Wt = w.Dt = NULL;
    w.cur = NULL;
    if (d->sparse) {
        w.Z = (double *) R_alloc(d->nx > 0 ? d->nx : 1, sizeof(double));
        w.Wt = (double *) R_alloc((size_t) K * I, sizeof(double));
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
            sum_wh_obs(d, W, H);
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
        const double loss = kl_numerator(d, x, W, H, -1, 1, &w) + sum_wh_obs(d, W, H);
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
