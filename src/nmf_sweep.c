/*
 * nmf_sweep.c -- the half sweeps of Gaussian NMF: Gibbs sampling, iterated
 * conditional modes (ICM) (Schmidt, Winther & Hansen 2009, Algorithms 1 and
 * 2), variational Bayes (VB) and the Euclidean Lee-Seung updates (NP), one
 * driver for all four rules (nmf_run.c; the rule itself is applied in
 * cond_row.c).
 *
 * Model, for the observed entries (i, j) in Omega:
 *   X_ij ~ N((WH)_ij, 1/tau),  W_ik ~ Exp(lamW_ik),  H_kj ~ Exp(lamH_kj),
 *   tau ~ Gamma(alpha, beta)   (shape, rate).
 *
 * One sweep, four rules. Row i of W, given H and tau, has the conditional
 *   p(w_i | .) propto exp(-tau/2 w_i' G_i w_i + tau w_i' b_i - lamW_i' w_i),  w_i >= 0
 * with G_i = sum_{j in Omega_i} h_j h_j' and b_i = sum_{j in Omega_i} X_ij h_j.
 * Coordinate k of it is N+(mu, 1/p) (a normal truncated to [0, inf)) with
 *   p  = tau G_i[k,k],
 *   mu = (b_ik - sum_{l != k} G_i[k,l] w_il - lamW_ik / tau) / G_i[k,k].
 * The Gibbs sampler draws it (rtnorm); ICM takes its mode max(mu, 0); VB
 * takes its moments, with E[H H'] = E[H] E[H]' + diag(sum_j Var H_kj) as G_i
 * and E[tau] as tau; NP replaces the coordinate steps by Lee & Seung's
 * multiplicative step w_ik <- w_ik b_ik / (G_i w_i)_k (cond_row.c). The
 * columns h_j of H are updated by the same kernel with the roles swapped.
 * Rows of W are conditionally independent given H, so updating them row by
 * row (all k of row i, then row i + 1) is the same transition as Schmidt's
 * column-by-column order.
 *
 * Complete data: G_i = H H' for every row and b_i is row i of D = X H'; the
 * products D = X H' and F = W' X are the only O(I J K) work of a sweep
 * (Schmidt's Algorithm 1). The noise needs no I x J residual:
 *   SSE = ||X||^2 - 2 sum_j h_j' f_j + sum_j h_j' G_j h_j.
 *
 * Missing entries, two exact strategies:
 *  - augmented (Gibbs): the missing X_ij are latent variables, redrawn each
 *    sweep from N((WH)_ij, 1/tau); the sweep then runs at complete-data speed.
 *    tau is drawn with the missing entries integrated out (the block
 *    (tau, X_miss) is drawn jointly from p(tau | W, H, X_obs) p(X_miss | ...)).
 *  - masked (ICM, VB, NP; available to Gibbs): the data hold zeros at missing
 *    entries and G_i = H H' - sum_{j missing in row i} h_j h_j' (or the sum
 *    over the observed j when that is shorter), so only O(|missing| K^2) work
 *    is added. ICM from K = SUB_MIN_K_ICM on and VB from SUB_MIN_K_VB on do
 *    not form G_i of a row with at most half its entries missing:
 *    bnmf_cond_row_sub corrects each coordinate's sum with
 *    r_j = h_j' w_i over the missing j, kept current as w_i moves
 *    (O(|missing| K) a pass). NP's multiplicative rule needs only G_i w_i:
 *    G w_i less sum_{j missing} (h_j' w_i) h_j, or the sum over the
 *    observed j when those are fewer (bnmf_mult_row_masked, O(|missing| K)).
 * ICM may also take the augmented path, with the latent entries set to W H at
 * the end of each sweep instead of drawn (icm_control(missing = "impute")):
 * an ECM iteration. With x~ = W0 H0 at the missing entries, the complete-data
 * log joint minorises the observed one as a function of (W, H), tightly at
 * (W0, H0), so each sweep's W and H steps cannot lower the observed log joint;
 * tau's step is its exact conditional mode (observed SSE and count). The
 * fixed points are the masked sweep's; a sweep costs what complete data cost.
 * VB may take it too (vb_control(missing = "impute"), E[W] E[H] at the
 * missing entries), with each row corrected for its own terms there and its
 * precisions from the observed entries: the masked sweep's fixed points at
 * O(|missing| K) a half sweep (see vb_fill below).
 * NP (Lee-Seung) may take it as well (np_control(missing = "impute")): the
 * multiplicative updates of the data filled with W0 H0 lower the filled
 * data's loss, which is the observed loss plus sum (W0 H0 - W H)^2 over the
 * missing entries, so they never raise the observed loss (an EM iteration),
 * and where W, H > 0 their fixed points, (M o X) H' = (M o W H) H' and the
 * same for H, are the masked updates'.
 * Masked ICM, VB and NP sweeps of data with missing entries, and VB's with
 * them filled in, update their rows (columns) by pieces, a block of
 * complete rows or one row, on ctrl$threads OpenMP threads (run_pieces):
 * the rows of W are independent given H, nothing random is drawn, and the
 * SSE terms are summed per piece and then in column order, so the result
 * does not depend on the threads.
 *
 * tau | W, H ~ Gamma(alpha + |Omega|/2, beta + SSE/2); its mode for ICM is
 * (alpha + |Omega|/2 - 1) / (beta + SSE/2); VB's q(tau) is that Gamma with
 * the expected SSE, sumsq - 2 sum_j h_j' f_j + sum_j (h_j' G_j h_j +
 * sum_k G_j[k,k] Var H_kj) (nmf_run.c). The ARD rates are updated in ard.c,
 * the VB objective (ELBO) is vb_elbo in nmf_run.c.
 *
 * The Gibbs sampler adds an exact move along the scale of each factor
 * (bnmf_scale_move, nmf_scale.c), which WH does not see and coordinate updates explore slowly.
 * ICM also maximises each row's block fully (repeated coordinate passes) and
 * the scale of each factor (bnmf_balance_scales): both are exact maximisations of
 * the joint posterior along a set of directions, so the log posterior still
 * never decreases and the fixed points are the KKT points of the MAP problem.
 * VB maximises the ELBO along the same scale paths (bnmf_balance_scales): the
 * ELBO still never decreases and the fixed points are unchanged.
 */
#include "bnmf_call.h"
#include "nmf_sweep.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* Whether a masked row (column) with nm missing entries of n is updated by
 * bnmf_cond_row_sub: ICM from K = SUB_MIN_K_ICM on, VB from SUB_MIN_K_VB
 * (sub_max is 0 below SUB_MIN_K_VB). */
static inline int sub_rule(const sweep_work *ws, nmf_rule rule, int K, int nm, int n)
{
    return ((rule == RULE_MODE && K >= SUB_MIN_K_ICM) ||
         (rule == RULE_MOMENT && K >= SUB_MIN_K_VB)) &&
        nm > 0 && nm <= ws->sub_max && 2 * nm <= n;
}

/* Whether a half sweep updates its rows by blocks (bnmf_cond_rows): Gibbs,
 * ICM and VB. */
static inline int block_rule(nmf_rule rule)
{
    return rule != RULE_MULT;
}

/* How many rows from row i on (at most COND_BLOCK, up to n) share the full
 * Gram matrix: all of them without masking, else those with no missing
 * entry (ptr: the rows' pointers into their missing entries); at least 1
 * (row i alone, with its own Gram matrix). */
static inline int block_rows(const int *ptr, int masked, int i, int n)
{
    int nr = 0;
    while (nr < COND_BLOCK && i + nr < n && (!masked || ptr[i + nr + 1] == ptr[i + nr]))
        nr++;
    return nr > 1 ? nr : 1;
}

/*
 * VB with the missing entries filled in (vb_fill, vb_control(missing =
 * "impute")). Row i of W (a column of H the same, sides swapped) has, in
 * the masked sweep, coordinate k's precision tau Gi[k,k] and mean from
 *   b_ik - sum_{l != k} Gi[k,l] w_il,   Gi = G - M_i,
 * with b_i = sum_{j observed} x_ij E[h_j], G the expected Gram matrix of
 * all J entries and M_i that of row i's missing ones (m_i of them). With
 * the missing x_ij filled in with w0_i' E[h_j] (w0: the row when filled,
 * at the end of the sweep before), the filled data's right side is
 * b_i + M0_i w0_i (M0: M_i's means part), so
 *   b_ik - sum_{l != k} Gi[k,l] w_il = bfill_ik - M0_i[k,k] w0_ik
 *     - sum_{l != k} G[k,l] w_il + sum_{l != k} M0_i[k,l] (w_il - w0_il).
 * The sweep takes the first three terms exactly: bfill from the same
 * product as complete data, M0_i[k,k] = s_ik = sum over the missing j of
 * E[h_kj]^2, and its precisions from Gi[k,k] = G[k,k] - e_ik, e_ik the
 * sum of E[h_kj^2] (fill_sums: O(m_i K)). The last term, the coordinates
 * that moved in this pass, needs M0_i's off-diagonal terms (O(m_i K^2)):
 * it is taken with M0_i approximated by a_i a_i' * G0 (G0 = G's means part,
 * a_ik = sqrt(s_ik / G0[k,k]), exact on the diagonal), in the coordinate
 * pass (bnmf_vb_rows_diag). At a fixed point every w_il = w0_il, so the
 * last term vanishes whatever its approximation: the fixed points are the
 * masked sweep's. The approximation only sets how close a sweep comes to
 * the masked one (with missing entries at random it is close: without
 * the term the fits needed about a quarter more sweeps).
 * The H half sweep reads the entries filled before W's: its w0 in the
 * missing entries is W before this sweep, one more lag that also vanishes
 * at a fixed point.
 */

/* (FILL_CANCEL, nmf_sweep.h: below this share of G[k,k] the observed
 * part of a diagonal is summed over the observed entries) */

/*
 * The sums of fill_sums's row (column) whose missing entries are m[0..nm)
 * of the other side's n entries. P holds, for each of these, E[o_k]^2 then
 * E[o_k^2] (2 K values, fill_moments), gm[k] = G0[k,k]. Gives se[k] = s_k
 * and se[K + k] = e_k (bnmf_idx_sums: all 2 K sums in one pass), dg[k] =
 * Gi[k,k] (summed over the observed entries where G[k,k] - e_k would
 * cancel) and a[k]. O(nm K); O(n K) for a row with more than a share
 * FILL_CANCEL of a diagonal term missing.
 */
static void fill_sums(const double *G, const double *P, const double *gm, const int *m,
                      int nm, int n, int K, double *se, double *dg, double *a)
{
    bnmf_idx_sums(se, P, m, nm, 2 * K);
    if (!bnmf_fill_diag(G, se, gm, K, dg, a)) return;
    for (int k = 0; k < K; k++) dg[k] = 0.0;
    for (int j = 0, t = 0; j < n; j++) {
        if (t < nm && m[t] == j) {
            t++;
            continue;
        }
        const double *p = P + (size_t) j * 2 * K + K;
        for (int k = 0; k < K; k++) dg[k] += p[k];
    }
}

/* fill_sums for the nr rows (columns) first ... first + nr - 1 of a block,
 * whose missing entries are idx[ptr[t] ... ptr[t + 1] - 1] of the other
 * side's n: the block's r-th into w->se + 2 K r, w->dg + K r, w->fa + K r. */
static void fill_block(sweep_work *w, const int *ptr, const int *idx, int n, int K,
                       int first, int nr)
{
    for (int r = 0; r < nr; r++) {
        const int t = first + r;
        fill_sums(w->G, w->P, w->gm, idx + ptr[t], ptr[t + 1] - ptr[t], n, K,
                  w->se + (size_t) r * 2 * K, w->dg + (size_t) r * K, w->fa + (size_t) r * K);
    }
}

/* P and gm for fill_sums from the other side's n entries: means Z and
 * variances V, entry t's coordinate k at t * ts + k * ks. */
static void fill_moments(double *P, double *gm, const double *Z, const double *V, int n,
                         int K, size_t ts, size_t ks)
{
    for (int k = 0; k < K; k++) gm[k] = 0.0;
    for (int t = 0; t < n; t++) {
        double *p = P + (size_t) t * 2 * K;
        for (int k = 0; k < K; k++) {
            const double z = Z[t * ts + k * ks];
            p[k] = z * z;
            p[K + k] = z * z + V[t * ts + k * ks];
            gm[k] += z * z;
        }
    }
}

/* Whether a half sweep is VB's with the missing entries filled in (the
 * data's missing entries hold E[W] E[H] of the end of the sweep before). */
static inline int vb_fill(const nmf_data *d, const vb_part *vb, int masked)
{
    return vb && !masked && d->nmiss > 0;
}

/* The building blocks of a half sweep's rows, for the sweep below and
 * Chib's reduced runs (chib.c). */

/* b_i = row i of X H' (from D, I x K, for dense X; for sparse X from its
 * transpose, built in ws->Wt, which bnmf_update_H refills) and the
 * (expected, Hvar not NULL) Gram matrix of H into ws->G. */
void bnmf_W_products(const nmf_data *d, const double *x, const double *H, sweep_work *ws,
                     const double *Hvar)
{
    if (d->sparse) bnmf_x_ht_rows(d, x, H, ws->Wt, ws->obs);
    else bnmf_x_ht(d, x, H, ws->D, ws->Ht, ws->obs);
    bnmf_expected_gram(H, Hvar, d->K, d->J, GRAM_ROWS, ws->G);
}

/* F = W' X and the (expected) Gram matrix of W into ws->G. */
void bnmf_H_products(const nmf_data *d, const double *x, const double *W, sweep_work *ws,
                     const double *Wvar)
{
    bnmf_wt_x(d, x, W, ws->F, ws->Wt, ws->obs);
    bnmf_expected_gram(W, Wvar, d->K, d->I, GRAM_COLS, ws->G);
}

/* Row i of W into w->zrow and its b_i into w->brow (after bnmf_W_products). */
void bnmf_W_row_load(const nmf_data *d, const double *W, int i, sweep_work *w)
{
    const int I = d->I, K = d->K, rows = d->sparse;
    for (int k = 0; k < K; k++) {
        w->zrow[k] = W[i + (size_t) k * I];
        w->brow[k] = rows ? w->Wt[k + (size_t) i * K] : w->D[i + (size_t) k * I];
    }
}

/* The Gram matrix of row i of W: ws->G, or masked by the row's missing
 * entries (in w->Gi; VB: with H's variances Hvar). */
const double *bnmf_W_row_gram(const nmf_data *d, const double *H, int i, int masked,
                              sweep_work *w, const double *Hvar)
{
    const int K = d->K;
    if (!masked) return w->G;
    return bnmf_masked_gram(w->Gi, w->G, H, K, d->J, d->mrow_j + d->mrow_ptr[i],
                            d->mrow_ptr[i + 1] - d->mrow_ptr[i], K, w->obs, Hvar, K, 1);
}

/* The Gram matrix of column j of H, as bnmf_W_row_gram (Wv: VB, W's
 * variances by rows; after bnmf_H_products). */
const double *bnmf_H_col_gram(const nmf_data *d, int j, int masked, sweep_work *w,
                              const double *Wv)
{
    const int K = d->K;
    if (!masked) return w->G;
    return bnmf_masked_gram(w->Gi, w->G, w->Wt, K, d->I, d->miss_i + d->mcol_ptr[j],
                            d->mcol_ptr[j + 1] - d->mcol_ptr[j], K, w->obs, Wv, K, 1);
}

/* Rows i..i+nr-1 of W from w->zrow (VB: their variances and entropies
 * from w->vrow, w->erow). */
void bnmf_W_rows_store(const nmf_data *d, double *W, int i, int nr, const sweep_work *w,
                       const vb_part *vb)
{
    const int I = d->I, K = d->K;
    for (int r = 0; r < nr; r++) {
        const int ir = i + r;
        for (int k = 0; k < K; k++) W[ir + (size_t) k * I] = w->zrow[r * K + k];
        if (vb) {
            for (int k = 0; k < K; k++) {
                vb->Wvar[ir + (size_t) k * I] = w->vrow[r * K + k];
                vb->Went[ir + (size_t) k * I] = w->erow[r * K + k];
            }
        }
    }
}

/* Rows i..i+nr-1 of W (nr > 1: complete rows sharing ws->G, updated
 * together by bnmf_cond_rows; else one row, masked by its missing entries),
 * with the scratch w (zrow ... sub: a thread's own; D, G, Wt: shared). */
/* Rows i .. i + nr - 1 of W, none masked, updated together by
 * bnmf_cond_rows from the whole Gram matrix ws->G and their X H' (rows:
 * from ws->Wt, K x I; else ws->D, I x K). */
void bnmf_W_rows_cond(const nmf_data *d, const nmf_prior *pr, const double *W, int i, int nr,
                      int rows, double tau, nmf_rule rule, sweep_work *w)
{
    const int I = d->I, K = d->K;
    const double *lam[COND_BLOCK];
    for (int r = 0; r < nr; r++) {
        const int ir = i + r;
        lam[r] = pr->lamW + ir;
        for (int k = 0; k < K; k++) {
            w->zrow[r * K + k] = W[ir + (size_t) k * I];
            w->brow[r * K + k] = rows ? w->Wt[k + (size_t) ir * K] : w->D[ir + (size_t) k * I];
        }
    }
    bnmf_cond_rows(w->zrow, w->G, w->brow, lam, I, tau, K, nr, rule, w->vrow, w->erow);
}

static void update_W_rows(const nmf_data *d, const nmf_prior *pr, double *W,
                          const double *H, double tau, nmf_rule rule, int masked,
                          sweep_work *w, const vb_part *vb, int i, int nr)
{
    const int I = d->I, J = d->J, K = d->K, rows = d->sparse;
    if (vb_fill(d, vb, masked)) {
        const double *lam[COND_BLOCK];
        fill_block(w, d->mrow_ptr, d->mrow_j, J, K, i, nr);
        for (int r = 0; r < nr; r++) {
            const int ir = i + r;
            double *zr = w->zrow + (size_t) r * K, *br = w->brow + (size_t) r * K;
            const double *ms = w->se + (size_t) r * 2 * K;
            lam[r] = pr->lamW + ir;
            for (int k = 0; k < K; k++) {
                zr[k] = W[ir + (size_t) k * I];
                br[k] = (rows ? w->Wt[k + (size_t) ir * K] : w->D[ir + (size_t) k * I]) -
                    zr[k] * ms[k];
            }
        }
        bnmf_vb_rows_diag(w->zrow, w->G, w->brow, w->dg, w->fa, w->fu, lam, I,
                          tau, K, nr, w->vrow, w->erow);
    } else if (nr > 1) {
        bnmf_W_rows_cond(d, pr, W, i, nr, rows, tau, rule, w);
    } else {
        const int nmi = masked ? d->mrow_ptr[i + 1] - d->mrow_ptr[i] : 0;
        const int *mi = d->mrow_j + (masked ? d->mrow_ptr[i] : 0);
        bnmf_W_row_load(d, W, i, w);
        const int sub = sub_rule(w, rule, K, nmi, J);
        if (rule == RULE_MULT && nmi > 0) {
            /* the multiplicative rule needs only Gi z, not Gi */
            bnmf_mult_row_masked(w->zrow, w->G, w->brow, H, J, mi, nmi, K, w->obs, w->vrow,
                                 NULL);
        } else if (sub) {
            bnmf_cond_sub_gather(&w->sub, H, vb ? vb->Hvar : NULL, mi, nmi, K, w->zrow);
            bnmf_cond_row_sub(w->zrow, w->G, w->brow, pr->lamW + i, I, tau, K, rule,
                              w->vrow, w->erow, &w->sub);
        } else {
            const double *G = bnmf_W_row_gram(d, H, i, masked, w, vb ? vb->Hvar : NULL);
            bnmf_cond_row(w->zrow, G, w->brow, pr->lamW + i, I, tau, K, 0, rule, w->vrow,
                          w->erow);
        }
    }
    bnmf_W_rows_store(d, W, i, nr, w, vb);
}

/* Whether a half sweep runs by pieces (units, see sweep_work): masked ICM,
 * VB and NP updates of data with missing entries and VB's with them filled
 * in (vb_fill), on ws->threads threads. Their rows are conditionally independent, nothing
 * random is drawn, and each piece is computed alone, so the result is the
 * same on any number of threads. */
static inline int by_pieces(const nmf_data *d, nmf_rule rule, int masked)
{
    return (masked || rule == RULE_MOMENT) && d->nmiss > 0 && rule != RULE_DRAW;
}

/* The pieces of a half sweep over n rows (ptr: their pointers into their
 * missing entries) into units; returns how many. */
static int make_units(const int *ptr, int masked, int blocks, int n, int *units)
{
    int nu = 0;
    for (int i = 0; i < n; nu++) {
        units[nu] = i;
        i += blocks ? block_rows(ptr, masked, i, n) : 1;
    }
    units[nu] = n;
    return nu;
}

/* The pieces of a half sweep run at most this many between interrupt
 * checks (a masked row of 1000 entries at K = 20 takes about 20 us). */
#define PIECE_CHUNK 1024

/* What every piece of a half sweep reads. */
typedef struct {
    const nmf_data *d;
    const nmf_prior *pr;
    double *W, *H;
    const double *O;   /* the other side (H for W's rows, W for H's columns) */
    double tau;
    nmf_rule rule;
    int masked;
    const vb_part *vb;
    const double *Wv;
} piece_ctx;

/* Run piece(ctx, thread's scratch, first row, end) for the pieces u < nu
 * (ws->units) on ws->threads threads, with an interrupt check every
 * PIECE_CHUNK pieces (outside the parallel region). Which thread runs which
 * piece does not matter: each writes its own rows (and lq). */
static void run_pieces(sweep_work *ws, int nu,
                       void (*piece)(const piece_ctx *, sweep_work *, int, int),
                       const piece_ctx *cx)
{
    int T = ws->threads;
#ifndef _OPENMP
    T = 1;
#endif
    for (int u0 = 0; u0 < nu; u0 += PIECE_CHUNK) {
        const int u1 = nu - u0 < PIECE_CHUNK ? nu : u0 + PIECE_CHUNK;
        if (T <= 1) {
            for (int u = u0; u < u1; u++) piece(cx, ws, ws->units[u], ws->units[u + 1]);
        } else {
#ifdef _OPENMP
#pragma omp parallel for num_threads(T) schedule(dynamic, 8)
            for (int u = u0; u < u1; u++)
                piece(cx, ws->tw + omp_get_thread_num(), ws->units[u], ws->units[u + 1]);
#endif
        }
        bnmf_rng_interrupt();
    }
}

static void W_piece(const piece_ctx *cx, sweep_work *w, int i, int i1)
{
    update_W_rows(cx->d, cx->pr, cx->W, cx->O, cx->tau, cx->rule, cx->masked, w, cx->vb, i,
                  i1 - i);
}

/**
 * Update every row of W given H and tau (b_i: row i of X H').
 * Masked: rows with missing entries use their own Gram matrix.
 * VB: W and H hold the means of q; the Gram matrix of H is its expectation,
 * E[H]E[H]' + diag(sum_j Var H_kj) over the observed j.
 * @param x      the data values (state's x)
 * @param rule   the rule applied to each coordinate's conditional
 * @param masked use the masked Gram matrix of each row with missing entries
 * @param ws     scratch (bnmf_sweep_work; its threads: bnmf_sweep_threads)
 * @param vb     VB: receives the variances and entropies of q(W) (else NULL)
 */
void bnmf_update_W(const nmf_data *d, const nmf_prior *pr, const double *x,
                   double *W, const double *H, double tau, nmf_rule rule,
                   int masked, sweep_work *ws, const vb_part *vb)
{
    bnmf_W_products(d, x, H, ws, vb ? vb->Hvar : NULL);
    bnmf_update_W_given(d, pr, W, H, tau, rule, masked, ws, vb);
}

/**
 * bnmf_update_W after its products: b_i from ws->D (dense) or ws->Wt
 * (sparse) and H's (expected) Gram matrix in ws->G. Without missing entries
 * H is not read (NULL will do): the update by blocks of samples
 * (nmf_blocks.c) gives the products summed over the blocks.
 */
void bnmf_update_W_given(const nmf_data *d, const nmf_prior *pr, double *W,
                         const double *H, double tau, nmf_rule rule, int masked,
                         sweep_work *ws, const vb_part *vb)
{
    const int I = d->I, K = d->K;
    if (vb_fill(d, vb, masked)) fill_moments(ws->P, ws->gm, H, vb->Hvar, d->J, K, K, 1);
    const int blocks = block_rule(rule);
    if (by_pieces(d, rule, masked)) {
        const int nu = make_units(d->mrow_ptr, masked, blocks, I, ws->units);
        const piece_ctx cx = {d, pr, W, NULL, H, tau, rule, masked, vb, NULL};
        run_pieces(ws, nu, W_piece, &cx);
        return;
    }
    for (int i = 0; i < I; i++) {
        const int nr = blocks ? block_rows(d->mrow_ptr, masked, i, I) : 1;
        for (int r = 0; r < nr; r++) bnmf_row_interrupt(i + r);
        update_W_rows(d, pr, W, H, tau, rule, masked, ws, vb, i, nr);
        i += nr - 1;
    }
}

/* Columns j..j+nr-1 of H, as update_W_rows (update: 0, only the SSE
 * terms); their terms of the SSE are added to *sl and *sq (see
 * bnmf_update_H). */
static void update_H_cols(const nmf_data *d, const nmf_prior *pr, double *H, double tau,
                          nmf_rule rule, int masked, int update, sweep_work *w,
                          const vb_part *vb, const double *Wv, int j, int nr, double *sl,
                          double *sq)
{
    const int I = d->I, K = d->K;
    double *hj = H + (size_t) j * K;
    const double *fj = w->F + (size_t) j * K;
    if (vb_fill(d, vb, masked)) {
        const double *lam[COND_BLOCK];
        fill_block(w, d->mcol_ptr, d->miss_i, I, K, j, nr);
        for (int r = 0; r < nr; r++) {
            const double *hr = hj + (size_t) r * K, *fr = fj + (size_t) r * K;
            double *br = w->brow + (size_t) r * K;
            const double *ms = w->se + (size_t) r * 2 * K;
            lam[r] = pr->lamH + (size_t) (j + r) * K;
            for (int k = 0; k < K; k++) br[k] = fr[k] - hr[k] * ms[k];
        }
        if (update)
            bnmf_vb_rows_diag(hj, w->G, w->brow, w->dg, w->fa, w->fu, lam, 1,
                              tau, K, nr, vb->Hvar + (size_t) j * K, vb->Hent + (size_t) j * K);
        /* the SSE terms of all entries, less the variances of w_i' h_j at
         * the missing ones: sum_k e_k E[h_k^2] - s_k E[h_k]^2 (the means'
         * residuals there go with the fill, in bnmf_nmf_sweeps) */
        for (int r = 0; r < nr; r++) {
            const double *hr = hj + (size_t) r * K, *vr = vb->Hvar + (size_t) (j + r) * K;
            const double *ms = w->se + (size_t) r * 2 * K, *me = ms + K;
            bnmf_h_sse_terms(w->G, H, w->F, vb, j + r, K, sl, sq);
            double q = 0.0;
            for (int k = 0; k < K; k++)
                q += me[k] * (hr[k] * hr[k] + vr[k]) - ms[k] * hr[k] * hr[k];
            *sq -= q;
        }
        return;
    }
    if (nr > 1) {
        const double *lam[COND_BLOCK];
        for (int r = 0; r < nr; r++) lam[r] = pr->lamH + (size_t) (j + r) * K;
        bnmf_cond_rows(hj, w->G, fj, lam, 1, tau, K, nr, rule,
                       vb ? vb->Hvar + (size_t) j * K : w->vrow,
                       vb ? vb->Hent + (size_t) j * K : w->erow);
        for (int r = 0; r < nr; r++) bnmf_h_sse_terms(w->G, H, w->F, vb, j + r, K, sl, sq);
        return;
    }
    const int nmj = masked ? d->mcol_ptr[j + 1] - d->mcol_ptr[j] : 0;
    const int *mj = d->miss_i + (masked ? d->mcol_ptr[j] : 0);
    if (update && rule == RULE_MULT && nmj > 0) {
        /* the multiplicative rule needs only Gi h_j and h_j' Gi h_j, not Gi */
        double q;
        bnmf_mult_row_masked(hj, w->G, fj, w->Wt, I, mj, nmj, K, w->obs, w->vrow, &q);
        for (int k = 0; k < K; k++) *sl += hj[k] * fj[k];
        *sq += q;
        return;
    }
    if (update && sub_rule(w, rule, K, nmj, I)) {
        /* without the column's own Gram matrix: its terms of the SSE from
         * the full one, less sum_i (w_i' h_j)^2 over the missing i (the
         * passes leave w_i' h_j in w->sub.r) */
        bnmf_cond_sub_gather(&w->sub, w->Wt, Wv, mj, nmj, K, hj);
        bnmf_cond_row_sub(hj, w->G, fj, pr->lamH + (size_t) j * K, 1, tau, K, rule,
                          vb ? vb->Hvar + (size_t) j * K : w->vrow,
                          vb ? vb->Hent + (size_t) j * K : w->erow, &w->sub);
        for (int k = 0; k < K; k++) *sl += hj[k] * fj[k];
        *sq += bnmf_cond_sub_quad(&w->sub, w->G, hj, vb ? vb->Hvar + (size_t) j * K : NULL, K);
        return;
    }
    const double *G = bnmf_H_col_gram(d, j, masked, w, Wv);
    if (update) {
        bnmf_cond_row(hj, G, fj, pr->lamH + (size_t) j * K, 1, tau, K, 0, rule,
                      vb ? vb->Hvar + (size_t) j * K : w->vrow,
                      vb ? vb->Hent + (size_t) j * K : w->erow);
    }
    bnmf_h_sse_terms(G, H, w->F, vb, j, K, sl, sq);
}

/* A piece of H's columns: its SSE terms, summed from zero, into lq. */
static void H_piece(const piece_ctx *cx, sweep_work *w, int j, int j1)
{
    double l = 0.0, q = 0.0;
    update_H_cols(cx->d, cx->pr, cx->H, cx->tau, cx->rule, cx->masked, 1, w, cx->vb, cx->Wv,
                  j, j1 - j, &l, &q);
    /* (lq is shared, indexed by the piece's first column) */
    w->lq[2 * (size_t) j] = l;
    w->lq[2 * (size_t) j + 1] = q;
}

/**
 * Update every column of H given W and tau (b_j: column j of W' X), with the
 * arguments of bnmf_update_W (`update` = 0: only the SSE). Returns the pieces
 * of the SSE for the new H: *lin = sum_j h_j' f_j and *quad = sum_j h_j' G_j h_j (VB:
 * plus sum_j sum_k G_j[k, k] Var H_kj, so that sumsq - 2 lin + quad is the
 * expected SSE under q).
 * Run by pieces (by_pieces()), the sums are of each piece's own sum, in
 * the order of the pieces, on any number of threads.
 */
void bnmf_update_H(const nmf_data *d, const nmf_prior *pr, const double *x,
                   const double *W, double *H, double tau, nmf_rule rule,
                   int masked, int update, sweep_work *ws, const vb_part *vb,
                   double *lin, double *quad)
{
    const int I = d->I, J = d->J, K = d->K;
    bnmf_H_products(d, x, W, ws, vb ? vb->Wvar : NULL);
    /* VB, masked: the variances of W read by rows (K contiguous values
     * per row, like Wt), in ws->D, which only bnmf_update_W uses: read by
     * columns, each missing entry would touch K cache lines. */
    const double *Wv = NULL;
    if (vb_fill(d, vb, masked)) fill_moments(ws->P, ws->gm, W, vb->Wvar, I, K, 1, I);
    else if (vb && masked && d->nmiss > 0) {
        for (int k = 0; k < K; k++)
            for (int i = 0; i < I; i++)
                ws->D[k + (size_t) i * K] = vb->Wvar[i + (size_t) k * I];
        Wv = ws->D;
    }
    double sl = 0.0, sq = 0.0;
    const int blocks = update && block_rule(rule);
    if (update && by_pieces(d, rule, masked)) {
        const int nu = make_units(d->mcol_ptr, masked, blocks, J, ws->units);
        const piece_ctx cx = {d, pr, NULL, H, W, tau, rule, masked, vb, Wv};
        run_pieces(ws, nu, H_piece, &cx);
        for (int u = 0; u < nu; u++) {
            const size_t j = ws->units[u];
            sl += ws->lq[2 * j];
            sq += ws->lq[2 * j + 1];
        }
        *lin = sl;
        *quad = sq;
        return;
    }
    for (int j = 0; j < J; j++) {
        const int nr = blocks ? block_rows(d->mcol_ptr, masked, j, J) : 1;
        for (int r = 0; r < nr; r++) bnmf_row_interrupt(j + r);
        update_H_cols(d, pr, H, tau, rule, masked, update, ws, vb, Wv, j, nr, &sl, &sq);
        j += nr - 1;
    }
    *lin = sl;
    *quad = sq;
}
