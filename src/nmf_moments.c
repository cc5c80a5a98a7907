/*
 * nmf_moments.c -- what a Gibbs run of Gaussian NMF keeps of its draws: the
 * running moments (Welford) of W, H, tau, lambda and W H (by batches of
 * draws for dense data), and the kept draws themselves.
 */
#include "bnmf_call.h"
#include "nmf_sweep.h"

/* Welford update of a running mean and sum of squared deviations, for the
 * n-th value; inv_n = 1 / n (one division per kept draw, not per entry). */
static inline void welford(double *mean, double *m2, double v, double inv_n)
{
    const double delta = v - *mean;
    *mean += delta * inv_n;
    *m2 += delta * (v - *mean);
}

/* welford() over n consecutive values, four at a time on four-value vectors
 * (one AVX2 operation each in the AVX2 clone): every lane does the scalar
 * update's operations in its order, so the bits are the scalar loop's. */
BNMF_CLONES static void welford_run(double *restrict mean, double *restrict m2,
                                    const double *restrict v, size_t n, double inv_n)
{
    size_t t = 0;
#if defined(__GNUC__)
    for (; t + 4 <= n; t += 4) {
        const bnmf_v4 x = *(const bnmf_v4 *) (v + t);
        bnmf_v4 mu = *(bnmf_v4 *) (mean + t);
        const bnmf_v4 delta = x - mu;
        mu += delta * inv_n;
        *(bnmf_v4 *) (m2 + t) += delta * (x - mu);
        *(bnmf_v4 *) (mean + t) = mu;
    }
#endif
    for (; t < n; t++) welford(mean + t, m2 + t, v[t], inv_n);
}

typedef struct { double *mean, *m2, inv_n; } wh_moments;

/* welford_run on a run of stored values' WH (bnmf_sparse_visit) */
static void wh_run(size_t p0, const double *y, int n, void *ctx)
{
    const wh_moments *a = (const wh_moments *) ctx;
    welford_run(a->mean + p0, a->m2 + p0, y, (size_t) n, a->inv_n);
}

/* Accumulate the running moments of WH on the entries the fit keeps. Dense
 * data go by blocks of at most 64 columns of WH through S, an I x min(J, 64)
 * scratch. Sparse data: W' into ws->Wt, then bnmf_sparse_visit (the rows in
 * blocks: read by columns of W, each stored value's K terms were K cache
 * lines, and for large I these misses cost more than the sweep); each
 * entry's value and update are those of bnmf_wh_entry and welford, so the
 * moments are the same numbers. */
static void accumulate_wh(const nmf_data *d, const double *W, const double *H,
                          double *mean, double *m2, double inv_n, double *S,
                          sweep_work *ws)
{
    const int I = d->I, J = d->J, K = d->K;
    if (d->sparse) {
        bnmf_transpose(W, I, K, ws->Wt);
        wh_moments a = {mean, m2, inv_n};
        const double *pf[] = {mean, m2, NULL};
        bnmf_sparse_visit(d, ws->Wt, H, K, ws->obs, wh_run, &a, pf);
        return;
    }
    const int nb = J < 64 ? J : 64;
    const double one = 1.0, zero = 0.0;
    for (int j0 = 0; j0 < J; j0 += nb) {
        int m = J - j0 < nb ? J - j0 : nb;
        F77_CALL(dgemm)("N", "N", &I, &m, &K, &one, W, &I, H + (size_t) j0 * K,
                        &K, &zero, S, &I FCONE FCONE);
        double *mu = mean + (size_t) j0 * I, *s2 = m2 + (size_t) j0 * I;
        welford_run(mu, s2, S, (size_t) I * m, inv_n);
    }
}

/*
 * WH's moments of dense data by batches of draws. One draw's update reads
 * and writes both I x J moment arrays: memory traffic of 32 I J bytes,
 * which cost more than the product itself (bench/README.md). A batch holds
 * copies of up to WH_BATCH draws' W and H and adds them by tiles of
 * WH_ROWS x WH_COLS entries, every draw of the batch in turn while the
 * tile's moments stay in cache. Each entry sees the same Welford updates in
 * the same order as one draw at a time, so the moments are the same (up to
 * the BLAS's rounding of a tile's product). The copies take at most a
 * quarter of X's size: a batch holds fewer draws when W and H are large
 * against X (one draw: accumulate_wh at once, no copies).
 */
#define WH_BATCH 4
#define WH_ROWS 256
#define WH_COLS 64

static int wh_batch_cap(int I, int J, int K)
{
    const double b = floor((double) I * J / (4.0 * ((double) I + J) * K));
    return b >= WH_BATCH ? WH_BATCH : b < 1.0 ? 1 : (int) b;
}

/* The doubles of a dense fit's WH scratch (kept with the state: the
 * `work` of new_state() in R/engine-nmf.R adds the same) */
size_t bnmf_wh_work_len(int I, int J, int K)
{
    const size_t nb = J < WH_COLS ? (size_t) J : WH_COLS;
    const int cap = wh_batch_cap(I, J, K);
    if (cap == 1) return (size_t) I * nb;
    const size_t ib = I < WH_ROWS ? (size_t) I : WH_ROWS;
    return ib * nb + (size_t) cap * (((size_t) I + J) * K + 1);
}


void bnmf_wh_batch_init(const nmf_data *d, wh_batch *b, double **buf)
{
    const int I = d->I, J = d->J, K = d->K;
    b->cap = wh_batch_cap(I, J, K);
    b->n = 0;
    const size_t nb = J < WH_COLS ? (size_t) J : WH_COLS;
    const size_t ib = b->cap == 1 ? (size_t) I : I < WH_ROWS ? (size_t) I : WH_ROWS;
    b->S = bnmf_carve(buf, ib * nb);
    b->W = b->H = b->inv_n = NULL;
    if (b->cap > 1) {
        b->W = bnmf_carve(buf, (size_t) b->cap * I * K);
        b->H = bnmf_carve(buf, (size_t) b->cap * K * J);
        b->inv_n = bnmf_carve(buf, (size_t) b->cap);
    }
}

/* Add the batch's draws to the state's moments of WH, tile by tile, and
 * count them in its n_wh; empties the batch. */
void bnmf_wh_batch_flush(const nmf_data *d, wh_batch *b, nmf_state *st)
{
    double *mean = st->WH_mean, *m2 = st->WH_m2;
    const int I = d->I, J = d->J, K = d->K;
    const int nb = J < WH_COLS ? J : WH_COLS, ib = I < WH_ROWS ? I : WH_ROWS;
    const double one = 1.0, zero = 0.0;
    for (int j0 = 0; j0 < J; j0 += nb) {
        const int m = J - j0 < nb ? J - j0 : nb;
        for (int i0 = 0; i0 < I; i0 += ib) {
            int r = I - i0 < ib ? I - i0 : ib;
            for (int t = 0; t < b->n; t++) {
                F77_CALL(dgemm)("N", "N", &r, &m, &K, &one, b->W + (size_t) t * I * K + i0,
                                &I, b->H + (size_t) t * K * J + (size_t) j0 * K, &K, &zero,
                                b->S, &r FCONE FCONE);
                for (int c = 0; c < m; c++) {
                    const size_t at = (size_t) (j0 + c) * I + i0;
                    welford_run(mean + at, m2 + at, b->S + (size_t) c * r, (size_t) r,
                                b->inv_n[t]);
                }
            }
        }
    }
    *st->n_wh += b->n;
    b->n = 0;
}

/* One draw into the state's moments of WH: held in the batch (added when
 * it is full, or by the driver at the end of its sweeps), or at once. The
 * state's n_wh counts the draws added, so that an interrupt, which drops
 * the batch, leaves moments and count that agree. */
static void wh_batch_add(const nmf_data *d, wh_batch *b, const double *W, const double *H,
                         nmf_state *st, sweep_work *ws)
{
    const double inv_n = 1.0 / (*st->n_wh + b->n + 1.0);
    if (d->sparse || b->cap == 1) {
        accumulate_wh(d, W, H, st->WH_mean, st->WH_m2, inv_n, b->S, ws);
        (*st->n_wh)++;
        return;
    }
    const size_t nw = (size_t) d->I * d->K, nh = (size_t) d->K * d->J;
    memcpy(b->W + (size_t) b->n * nw, W, sizeof(double) * nw);
    memcpy(b->H + (size_t) b->n * nh, H, sizeof(double) * nh);
    b->inv_n[b->n++] = inv_n;
    if (b->n == b->cap) bnmf_wh_batch_flush(d, b, st);
}

/* Running moments and kept draws of a sampling sweep. */
void bnmf_keep_sweep(const nmf_data *d, const nmf_prior *pr, nmf_state *st,
                       const sweep_ctrl *c, sweep_out *out, int *kept, int n_draws,
                       wh_batch *whb, sweep_work *ws)
{
    const int I = d->I, J = d->J, K = d->K;
    const double *W = st->W, *H = st->H, *lambda = st->lambda;
    if (c->accumulate) {
        const double inv_n = 1.0 / ++(*st->n_kept);
        welford_run(st->W_mean, st->W_m2, W, (size_t) I * K, inv_n);
        welford_run(st->H_mean, st->H_m2, H, (size_t) K * J, inv_n);
        welford(st->tau_mean, st->tau_m2, *st->tau, inv_n);
        if (pr->ard)
            for (int k = 0; k < K; k++)
                welford(st->lambda_mean + k, st->lambda_m2 + k, lambda[k], inv_n);
        /* WH's moments (a third I x J x K product and a Welford update per
         * entry) from every wh_thin-th kept draw of the chain: the first, then
         * each after wh_thin - 1 skipped ones. wh_wait counts the kept draws
         * still to skip and goes with the chain's state, so that the subset is
         * the same however the sweeps are split into calls (and update()). A
         * subset fixed in advance of the draws, so each is still a draw from
         * the posterior and the mean an unbiased estimate of E[WH | X]. */
        if (st->WH_mean) {
            if (*st->wh_wait <= 0.0) {
                wh_batch_add(d, whb, W, H, st, ws);
                *st->wh_wait = c->wh_thin - 1;
            } else {
                (*st->wh_wait)--;
            }
        }
    }
    if (c->keep_draws && *kept < n_draws) {
        memcpy(out->W_draws + (size_t) *kept * I * K, W, sizeof(double) * I * K);
        memcpy(out->H_draws + (size_t) *kept * K * J, H, sizeof(double) * K * J);
        (*kept)++;
    }
}

/* What a block of samples (nmf_blocks.c) keeps of a Gibbs sweep: the
 * running moments of its H[, b] (inv_n = 1 / n, the chain's count of kept
 * draws) and, with WH_mean (inv_wh = 1 / the count of draws in them), those
 * of W H on its entries as accumulate_wh (every entry of a dense block, the
 * stored ones of a sparse block): the updates of bnmf_keep_sweep. */
void bnmf_block_keep(const nmf_data *d, const double *W, const double *H, double *H_mean,
                     double *H_m2, double inv_n, double *WH_mean, double *WH_m2,
                     double inv_wh, sweep_work *ws)
{
    welford_run(H_mean, H_m2, H, (size_t) d->K * d->J, inv_n);
    if (!WH_mean) return;
    const size_t nb = d->J < 64 ? (size_t) d->J : 64;
    double *S = d->sparse ? NULL : (double *) R_alloc((size_t) d->I * nb, sizeof(double));
    accumulate_wh(d, W, H, WH_mean, WH_m2, inv_wh, S, ws);
}
