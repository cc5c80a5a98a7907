/*
 * nmf_sweep.c -- the sweeps of Gaussian NMF: Gibbs sampling, iterated
 * conditional modes (ICM) (Schmidt, Winther & Hansen 2009, Algorithms 1 and
 * 2), variational Bayes (VB) and the Euclidean Lee-Seung updates (NP), one
 * driver for all four rules (the rule itself is applied in gauss_cond.c).
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
 * multiplicative step w_ik <- w_ik b_ik / (G_i w_i)_k (gauss_cond.c). The
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
 * sum_k G_j[k,k] Var H_kj). The ARD rates are updated in ard.c, the VB
 * objective (ELBO) is vb_elbo below.
 *
 * The Gibbs sampler adds an exact move along the scale of each factor
 * (scale_move), which WH does not see and coordinate updates explore slowly.
 * ICM also maximises each row's block fully (repeated coordinate passes) and
 * the scale of each factor (balance_scales): both are exact maximisations of
 * the joint posterior along a set of directions, so the log posterior still
 * never decreases and the fixed points are the KKT points of the MAP problem.
 * VB maximises the ELBO along the same scale paths (balance_scales): the
 * ELBO still never decreases and the fixed points are unchanged.
 */
#include <float.h>
#include <stdint.h>
#include <limits.h>
#include "bnmf_call.h"
#include "nmf.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* n doubles from the buffer *buf (advanced past them), or from R_alloc when
 * there is no buffer. */
static double *carve(double **buf, size_t n)
{
    if (!*buf) return (double *) R_alloc(n, sizeof(double));
    double *p = *buf;
    *buf += n;
    return p;
}

/* n doubles from R_alloc, the first at an address that is a multiple of
 * 64 bytes (a cache line): a table whose rows are gathered by index then
 * has each row in the fewest lines (2 K = 40 doubles, 320 bytes: 5 lines,
 * not 6). */
static double *alloc_lines(size_t n)
{
    char *p = R_alloc(n * sizeof(double) + 64, 1);
    return (double *) (p + ((64 - (uintptr_t) p % 64) % 64));
}

/* The smallest K at which masked rows skip their own Gram matrix
 * (bnmf_cond_row_sub), by rule. Forming it costs K (K + 1) / 2
 * multiply-adds per missing entry once per row, in a register-blocked
 * kernel (4 x 4 blocks: K a multiple of 4 wastes nothing); the corrections
 * cost about (3 + 2 passes) K, and ICM makes up to three passes, VB one.
 * Measured with both kernels on four-value vectors (AVX2 clone), OpenBLAS,
 * 1000 x 1000, 20% missing, ms a sweep, Gram matrix -> corrections: ICM
 * K = 16 10.1 -> 11.5, K = 18 14.0 -> 12.6, K = 20 14.6 -> 13.5; VB K = 8
 * 6.1 -> 6.2, K = 10 8.4 -> 7.3, K = 12 9.2 -> 8.3, K = 16 11.7 -> 10.9;
 * GDSC (707 x 139, K = 10) ICM 0.81 -> 0.86, VB 1.05 -> 0.98. */
#define SUB_MIN_K_ICM 16
#define SUB_MIN_K_VB 10

/* A row's own scratch (Gi, zrow ... erow from *buf, obs and the gather
 * buffers of up to nmax missing entries from R_alloc): the part of a
 * sweep's scratch that every thread of the masked half sweeps has alone. */
static void row_scratch(double **buf, sweep_work *w, int K, int n, int nmax)
{
    w->Gi = carve(buf, (size_t) K * K);
    w->zrow = carve(buf, (size_t) COND_BLOCK * K); /* a block of rows */
    w->brow = carve(buf, (size_t) COND_BLOCK * K);
    w->vrow = carve(buf, (size_t) COND_BLOCK * K);
    w->erow = carve(buf, (size_t) COND_BLOCK * K);
    w->obs = (int *) R_alloc(n, sizeof(int));
    w->se = (double *) R_alloc((size_t) 5 * COND_BLOCK * K, sizeof(double));
    w->dg = w->se + (size_t) 2 * COND_BLOCK * K;
    w->fa = w->dg + (size_t) COND_BLOCK * K;
    w->fu = w->fa + (size_t) COND_BLOCK * K;
    w->sub_max = nmax;
    w->sub.nm = 0;
    w->sub.O = w->sub.r = w->sub.osq = w->sub.gkk = NULL;
    if (nmax > 0) {
        w->sub.O = (double *) R_alloc((size_t) (nmax + 1) * K, sizeof(double));
        w->sub.r = (double *) R_alloc((size_t) nmax + 1, sizeof(double));
        w->sub.osq = (double *) R_alloc(K, sizeof(double));
        w->sub.gkk = (double *) R_alloc(K, sizeof(double));
    }
}

/**
 * The scratch space of a sweep: from `buf`, at least bnmf_sweep_work_len(d)
 * doubles, or from R_alloc when buf is NULL. A chain's state holds such a
 * buffer (`work`, see new_state() in R/engine.R) so that the chunks of a
 * long run do not leave their scratch to R's garbage collector, which on a
 * large heap may collect it only long after (the scratch of every chunk
 * then adds up in the process's memory).
 */
void bnmf_sweep_work(const nmf_data *d, sweep_work *ws, double *buf)
{
    const int I = d->I, J = d->J, K = d->K;
    /* the most missing entries of a row (column) with no more missing than
     * observed, for bnmf_cond_row_sub (none below SUB_MIN_K_VB, the smaller
     * threshold) */
    int nmax = 0;
    for (int i = 0; d->nmiss > 0 && K >= SUB_MIN_K_VB && i < I; i++) {
        const int n = d->mrow_ptr[i + 1] - d->mrow_ptr[i];
        if (2 * n <= J && n > nmax) nmax = n;
    }
    for (int j = 0; d->nmiss > 0 && K >= SUB_MIN_K_VB && j < J; j++) {
        const int n = d->mcol_ptr[j + 1] - d->mcol_ptr[j];
        if (2 * n <= I && n > nmax) nmax = n;
    }
    ws->D = carve(&buf, (size_t) I * K);
    ws->F = carve(&buf, (size_t) K * J);
    ws->G = carve(&buf, (size_t) K * K);
    row_scratch(&buf, ws, K, I > J ? I : J, nmax);
    ws->Wt = carve(&buf, (size_t) K * I);
    ws->Ht = carve(&buf, (size_t) J * K);
    ws->units = NULL;
    ws->lq = NULL;
    ws->P = ws->gm = NULL;
    ws->threads = 1;
    ws->tw = NULL;
    if (d->nmiss > 0) {
        ws->units = (int *) R_alloc((size_t) (I > J ? I : J) + 1, sizeof(int));
        ws->lq = (double *) R_alloc(2 * (size_t) J, sizeof(double));
    }
}

/* Scratch for T threads of the half sweeps by pieces (by_pieces): each thread
 * its own row_scratch(), the rest shared. Nothing without missing entries
 * or with T = 1. */
void bnmf_sweep_threads(const nmf_data *d, sweep_work *ws, int T)
{
    const int I = d->I, J = d->J;
    if (T > (I > J ? I : J)) T = I > J ? I : J; /* no more threads than pieces */
    if (T <= 1 || d->nmiss == 0) return;
    sweep_work *tw = (sweep_work *) R_alloc(T, sizeof(sweep_work));
    for (int t = 0; t < T; t++) {
        tw[t] = *ws;
        tw[t].tw = NULL;
        double *buf = NULL;
        if (t > 0) row_scratch(&buf, tw + t, d->K, I > J ? I : J, ws->sub_max);
    }
    ws->threads = T;
    ws->tw = tw;
}

/* Whether a masked row (column) with nm missing entries of n is updated by
 * bnmf_cond_row_sub: ICM from K = SUB_MIN_K_ICM on, VB from SUB_MIN_K_VB,
 * outside Chib's reduced runs (sub_max is 0 below SUB_MIN_K_VB). */
static inline int sub_rule(const sweep_work *ws, nmf_rule rule, const chib_hook *hk,
                           int first, int K, int nm, int n)
{
    return !hk && first == 0 &&
        ((rule == RULE_MODE && K >= SUB_MIN_K_ICM) ||
         (rule == RULE_MOMENT && K >= SUB_MIN_K_VB)) &&
        nm > 0 && nm <= ws->sub_max && 2 * nm <= n;
}

/* The doubles bnmf_sweep_work() takes from its buffer. */
size_t bnmf_sweep_work_len(const nmf_data *d)
{
    const size_t I = d->I, J = d->J, K = d->K;
    return 2 * (I + J) * K + 2 * K * K + 4 * COND_BLOCK * K;
}

/*
 * An interrupt check every 4096 rows (or columns) of a half sweep, so that a
 * long sweep stops within a fraction of a second. The callers hold R's random
 * number state (bnmf_rng_get()): it is saved before the check, which may jump
 * out, and read back after it.
 */
static inline void row_interrupt(int r)
{
    if ((r & 4095) == 4095) {
        bnmf_rng_interrupt();
    }
}

/* Whether a half sweep updates its rows by blocks (bnmf_cond_rows): Gibbs,
 * ICM and VB, outside Chib's reduced runs. */
static inline int block_rule(nmf_rule rule, const chib_hook *hk, int first)
{
    return !hk && first == 0 && rule != RULE_MULT;
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

/* Column j's terms of the SSE pieces of bnmf_update_H: h_j' f_j into *sl and
 * h_j' G h_j (VB: plus sum_k G[k, k] Var H_kj) into *sq. */
static inline void h_sse_terms(const double *G, const double *H, const double *F,
                               const vb_part *vb, int j, int K, double *sl, double *sq)
{
    const double *hj = H + (size_t) j * K, *fj = F + (size_t) j * K;
    double l = *sl, q = *sq;
    for (int k = 0; k < K; k++) l += hj[k] * fj[k];
    q += bnmf_quad_form(G, hj, K);
    if (vb) {
        const double *v = vb->Hvar + (size_t) j * K;
        for (int k = 0; k < K; k++) q += G[k + (size_t) k * K] * v[k];
    }
    *sl = l;
    *sq = q;
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

/* Below this share of G[k,k], the observed part of a diagonal is summed
 * over the observed entries rather than taken as the difference (whose
 * rounding, relative to it, would be G[k,k] / dg[k] ulps). */
#define FILL_CANCEL 0.25

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
    int direct = 0;
    for (int k = 0; k < K; k++) {
        const double gkk = G[k + (size_t) k * K];
        dg[k] = gkk - se[K + k];
        if (!(dg[k] >= FILL_CANCEL * gkk)) direct = 1;
        a[k] = gm[k] > 0.0 ? sqrt(se[k] / gm[k]) : 0.0;
    }
    if (!direct) return;
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

/* Rows i..i+nr-1 of W (nr > 1: complete rows sharing ws->G, updated
 * together by bnmf_cond_rows; else one row, masked by its missing entries),
 * with the scratch w (zrow ... sub: a thread's own; D, G, Wt: shared). */
static void update_W_rows(const nmf_data *d, const nmf_prior *pr, double *W,
                          const double *H, double tau, nmf_rule rule, int masked,
                          int first, sweep_work *w, const vb_part *vb,
                          const chib_hook *hk, int i, int nr)
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
        const double *lam[COND_BLOCK];
        for (int r = 0; r < nr; r++) {
            const int ir = i + r;
            lam[r] = pr->lamW + ir;
            for (int k = 0; k < K; k++) {
                w->zrow[r * K + k] = W[ir + (size_t) k * I];
                w->brow[r * K + k] = rows ? w->Wt[k + (size_t) ir * K]
                                          : w->D[ir + (size_t) k * I];
            }
        }
        bnmf_cond_rows(w->zrow, w->G, w->brow, lam, I, tau, K, nr, rule, w->vrow, w->erow);
    } else {
        const int nmi = masked ? d->mrow_ptr[i + 1] - d->mrow_ptr[i] : 0;
        const int *mi = d->mrow_j + (masked ? d->mrow_ptr[i] : 0);
        for (int k = 0; k < K; k++) {
            w->zrow[k] = W[i + (size_t) k * I];
            w->brow[k] = rows ? w->Wt[k + (size_t) i * K] : w->D[i + (size_t) k * I];
        }
        const int sub = sub_rule(w, rule, hk, first, K, nmi, J);
        if (rule == RULE_MULT && nmi > 0) {
            /* the multiplicative rule needs only Gi z, not Gi */
            bnmf_mult_row_masked(w->zrow, w->G, w->brow, H, J, mi, nmi, K, w->obs, w->vrow,
                                 NULL);
        } else if (sub) {
            bnmf_cond_sub_gather(&w->sub, H, vb ? vb->Hvar : NULL, mi, nmi, K, w->zrow);
            bnmf_cond_row_sub(w->zrow, w->G, w->brow, pr->lamW + i, I, tau, K, rule,
                              w->vrow, w->erow, &w->sub);
        } else {
            const double *G = !masked ? w->G :
                bnmf_masked_gram(w->Gi, w->G, H, K, J, mi, nmi, K, w->obs,
                                 vb ? vb->Hvar : NULL, K, 1);
            if (hk)
                bnmf_chib_eval_row(hk, i, I, hk->target[i * hk->tstride], w->zrow, G,
                                   w->brow, pr->lamW + i, I, tau, K, first);
            bnmf_cond_row(w->zrow, G, w->brow, pr->lamW + i, I, tau, K, first, rule,
                          w->vrow, w->erow);
        }
    }
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

/* Whether a half sweep runs by pieces (units, see sweep_work): masked ICM,
 * VB and NP updates of data with missing entries and VB's with them filled
 * in (vb_fill), outside Chib's runs; on
 * ws->threads threads. Their rows are conditionally independent, nothing
 * random is drawn, and each piece is computed alone, so the result is the
 * same on any number of threads. */
static inline int by_pieces(const nmf_data *d, nmf_rule rule, int masked, int first,
                            const chib_hook *hk)
{
    return (masked || rule == RULE_MOMENT) && d->nmiss > 0 && !hk && first == 0 &&
        rule != RULE_DRAW;
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
    update_W_rows(cx->d, cx->pr, cx->W, cx->O, cx->tau, cx->rule, cx->masked, 0, w,
                  cx->vb, NULL, i, i1 - i);
}

/**
 * Update every row of W given H and tau (b_i: row i of X H').
 * Masked: rows with missing entries use their own Gram matrix.
 * VB: W and H hold the means of q; the Gram matrix of H is its expectation,
 * E[H]E[H]' + diag(sum_j Var H_kj) over the observed j.
 * @param x      the data values (state's x)
 * @param rule   the rule applied to each coordinate's conditional
 * @param masked use the masked Gram matrix of each row with missing entries
 * @param first  coordinates k < first are held fixed (Chib's reduced runs)
 * @param ws     scratch (bnmf_sweep_work; its threads: bnmf_sweep_threads)
 * @param vb     VB: receives the variances and entropies of q(W) (else NULL)
 * @param hk     Chib: receives the rows' conditionals (else NULL)
 */
void bnmf_update_W(const nmf_data *d, const nmf_prior *pr, const double *x,
                   double *W, const double *H, double tau, nmf_rule rule,
                   int masked, int first, sweep_work *ws, const vb_part *vb,
                   const chib_hook *hk)
{
    const int I = d->I, K = d->K;
    /* b_i = row i of X H': from D (I x K) for dense X; for sparse X from
     * its transpose, built in ws->Wt (which bnmf_update_H refills) */
    if (d->sparse) bnmf_x_ht_rows(d, x, H, ws->Wt, ws->obs);
    else bnmf_x_ht(d, x, H, ws->D, ws->Ht, ws->obs);
    bnmf_expected_gram(H, vb ? vb->Hvar : NULL, K, d->J, GRAM_ROWS, ws->G);
    if (vb_fill(d, vb, masked)) fill_moments(ws->P, ws->gm, H, vb->Hvar, d->J, K, K, 1);
    const int blocks = block_rule(rule, hk, first);
    if (by_pieces(d, rule, masked, first, hk)) {
        const int nu = make_units(d->mrow_ptr, masked, blocks, I, ws->units);
        const piece_ctx cx = {d, pr, W, NULL, H, tau, rule, masked, vb, NULL};
        run_pieces(ws, nu, W_piece, &cx);
        return;
    }
    for (int i = 0; i < I; i++) {
        const int nr = blocks ? block_rows(d->mrow_ptr, masked, i, I) : 1;
        for (int r = 0; r < nr; r++) row_interrupt(i + r);
        update_W_rows(d, pr, W, H, tau, rule, masked, first, ws, vb, hk, i, nr);
        i += nr - 1;
    }
}

/* Columns j..j+nr-1 of H, as update_W_rows (update: 0, only the SSE
 * terms); their terms of the SSE are added to *sl and *sq (see
 * bnmf_update_H). */
static void update_H_cols(const nmf_data *d, const nmf_prior *pr, double *H, double tau,
                          nmf_rule rule, int masked, int update, int first, sweep_work *w,
                          const vb_part *vb, const chib_hook *hk, const double *Wv, int j,
                          int nr, double *sl, double *sq)
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
            h_sse_terms(w->G, H, w->F, vb, j + r, K, sl, sq);
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
        for (int r = 0; r < nr; r++) h_sse_terms(w->G, H, w->F, vb, j + r, K, sl, sq);
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
    if (update && sub_rule(w, rule, hk, first, K, nmj, I)) {
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
    const double *G = !masked ? w->G :
        bnmf_masked_gram(w->Gi, w->G, w->Wt, K, I, mj, nmj, K, w->obs, Wv, K, 1);
    if (hk)
        bnmf_chib_eval_row(hk, j, d->J, hk->target[j * hk->tstride], hj, G, fj,
                           pr->lamH + (size_t) j * K, 1, tau, K, first);
    if (update) {
        bnmf_cond_row(hj, G, fj, pr->lamH + (size_t) j * K, 1, tau, K, first, rule,
                      vb ? vb->Hvar + (size_t) j * K : w->vrow,
                      vb ? vb->Hent + (size_t) j * K : w->erow);
    }
    h_sse_terms(G, H, w->F, vb, j, K, sl, sq);
}

/* A piece of H's columns: its SSE terms, summed from zero, into lq. */
static void H_piece(const piece_ctx *cx, sweep_work *w, int j, int j1)
{
    double l = 0.0, q = 0.0;
    update_H_cols(cx->d, cx->pr, cx->H, cx->tau, cx->rule, cx->masked, 1, 0, w,
                  cx->vb, NULL, cx->Wv, j, j1 - j, &l, &q);
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
                   int masked, int update, int first, sweep_work *ws,
                   const vb_part *vb, const chib_hook *hk, double *lin,
                   double *quad)
{
    const int I = d->I, J = d->J, K = d->K;
    bnmf_wt_x(d, x, W, ws->F, ws->Wt, ws->obs);
    bnmf_expected_gram(W, vb ? vb->Wvar : NULL, K, I, GRAM_COLS, ws->G);
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
    const int blocks = update && block_rule(rule, hk, first);
    if (update && by_pieces(d, rule, masked, first, hk)) {
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
        for (int r = 0; r < nr; r++) row_interrupt(j + r);
        update_H_cols(d, pr, H, tau, rule, masked, update, first, ws, vb, hk, Wv, j, nr,
                      &sl, &sq);
        j += nr - 1;
    }
    *lin = sl;
    *quad = sq;
}

/* A_k = sum_i lamW_ik W_ik and B_k = sum_j lamH_kj H_kj: the prior's pull on
 * the scale of factor k. */
void bnmf_scale_sums(const nmf_data *d, const nmf_prior *pr, const double *W,
                     const double *H, int k, double *A, double *B)
{
    const int I = d->I, J = d->J, K = d->K;
    double a = 0.0, b = 0.0;
    for (int i = 0; i < I; i++) a += pr->lamW[i + (size_t) k * I] * W[i + (size_t) k * I];
    for (int j = 0; j < J; j++) b += pr->lamH[k + (size_t) j * K] * H[k + (size_t) j * K];
    *A = a;
    *B = b;
}

/* W[, k] c and H[k, ] / c. */
static void rescale_factor(const nmf_data *d, double *W, double *H, int k, double c)
{
    const int I = d->I, J = d->J, K = d->K;
    for (int i = 0; i < I; i++) W[i + (size_t) k * I] *= c;
    for (int j = 0; j < J; j++) H[k + (size_t) j * K] /= c;
}

/* The mode of log p(u) = -A e^u - B e^-u + p u (log y) and A y, B / y, from
 * logs: for A or B near the ends of the range of double, where y, A y or
 * B / y computed directly overflow or underflow. With s = 2 sqrt(A B) and
 * q = sqrt(p^2 + s^2): A y = (p + q) / 2 for p >= 0, B / y = (q - p) / 2
 * for p < 0, and (A y)(B / y) = A B. */
static void scale_mode_logs(double A, double B, double p, double *mode, double *Ay,
                            double *By)
{
    const double sa = sqrt(A), sb = sqrt(B), s = 2.0 * sa * sb, q = hypot(p, s);
    if (p >= 0.0) {
        *Ay = 0.5 * (p + q);
        *By = (s / (p + q)) * (0.5 * s);
        *mode = log(*Ay) - log(A);
    } else {
        *By = 0.5 * (q - p);
        *Ay = (s / (q - p)) * (0.5 * s);
        *mode = log(B) - log(*By);
    }
}

/**
 * The maximiser u* = log c* of -A e^u - B e^-u + p u (A, B > 0): the scale
 * of a factor that maximises the log posterior (ICM's balance with p = 0),
 * the ELBO (VB, p = the difference of the two sides' numbers of entries)
 * or is the mode of the Gibbs scale move's target. e^u* = (p + sqrt(p^2 +
 * 4 A B)) / (2 A); *Ay = A e^u*, *By = B e^-u* (the curvature is their
 * sum), from logs (scale_mode_logs) where the direct values overflow or
 * underflow. Returns 1 when they came from logs, else 0.
 */
int bnmf_scale_mode(double A, double B, double p, double *u, double *Ay, double *By)
{
    const double y = (p + sqrt(p * p + 4.0 * A * B)) / (2.0 * A);
    *u = log(y);
    *Ay = A * y;
    *By = B / y;
    const int logs = !(y > 0.0) || !R_FINITE(y) || !R_FINITE(*Ay + *By) ||
        !(*Ay + *By > 0.0);
    if (logs) scale_mode_logs(A, B, p, u, Ay, By);
    return logs;
}

/* Whether W[, k] e^u and H[k, ] e^-u stay finite with finite squares sums
 * (the Gram matrices of the next sweep). */
static int scale_fits(const nmf_data *d, const double *W, const double *H, int k,
                      double u)
{
    const int I = d->I, J = d->J, K = d->K;
    double mw = 0.0, mh = 0.0;
    /* a comparison, not fmax(): a library call per entry at -O2 */
    for (int i = 0; i < I; i++) {
        const double w = W[i + (size_t) k * I];
        mw = w > mw ? w : mw;
    }
    for (int j = 0; j < J; j++) {
        const double h = H[k + (size_t) j * K];
        mh = h > mh ? h : mh;
    }
    const double lim = 0.5 * log(DBL_MAX) - log((double) (I > J ? I : J) + 1.0);
    return (mw == 0.0 || log(mw) + u < lim) && (mh == 0.0 || log(mh) - u < lim);
}

/**
 * Gibbs only: a move along the scale path of each factor, W[, k] c and
 * H[k, ] / c, which leaves WH unchanged and which single-coordinate updates
 * traverse only slowly (the scale of a factor is set by the prior alone).
 * By the generalised Gibbs sampler of Liu & Sabatti (2000), drawing the group
 * element u = log c from
 *   p(u) propto pi(c W, H / c) |Jacobian| = exp(-A_k c - B_k / c) c^(I - J)
 * (A_k = sum_i lamW_ik W_ik, B_k = sum_j lamH_kj H_kj; Lebesgue measure in u is
 * the Haar measure of the scale group), or taking any Metropolis-Hastings
 * step from u = 0 that leaves p(u) invariant, preserves the posterior.
 * log p(u) = -A e^u - B e^-u + (I - J) u is concave with the mode
 * e^u* = ((I - J) + sqrt((I - J)^2 + 4 A B)) / (2 A) and curvature
 * A e^u* + B e^-u*; its tails are lighter than Gaussian, so an independence
 * proposal from the Laplace approximation N(u*, 1 / curvature) is uniformly
 * ergodic and accepts nearly always.
 */
void bnmf_scale_move(const nmf_data *d, const nmf_prior *pr, double *W, double *H,
                     int first)
{
    const double p = (double) d->I - (double) d->J;
    for (int k = first; k < d->K; k++) {
        double A, B;
        bnmf_scale_sums(d, pr, W, H, k, &A, &B);
        if (!(A > 0.0) || !(B > 0.0)) continue;
        double mode, Ay, By;
        const int logs = bnmf_scale_mode(A, B, p, &mode, &Ay, &By);
        const double sd = 1.0 / sqrt(Ay + By);
        const double u = mode + sd * bnmf_norm_std();
        /* log target minus log proposal, at the proposal and at u = 0 (from
         * logs: A e^u = Ay e^(u - mode), B e^-u = By e^(mode - u)). */
        const double z1 = (u - mode) / sd, z0 = mode / sd;
        const double ta = logs ? Ay * exp(u - mode) : A * exp(u);
        const double tb = logs ? By * exp(mode - u) : B * exp(-u);
        const double log_ratio = (-ta - tb + p * u + 0.5 * z1 * z1) -
            (-A - B + 0.5 * z0 * z0);
        if (log(bnmf_unif()) >= log_ratio) continue;
        const double c = exp(u);
        if (!(c > 0.0) || !R_FINITE(c) || !scale_fits(d, W, H, k, u)) {
            bnmf_rng_put();
            Rf_error("the scale of factor %d left the range of double precision "
                     "(factor W[, k] times %g): an exponential rate this small puts the "
                     "prior's scale outside it; use a larger rate", k + 1, c);
        }
        rescale_factor(d, W, H, k, c);
    }
}

/**
 * Maximise along the scale path of each factor, W[, k] c and H[k, ] / c,
 * which leaves WH (so the likelihood) unchanged and which coordinate
 * updates cross only slowly (the posterior is nearly flat along it).
 *  - ICM (vb NULL): the log prior -c A_k - B_k / c, with A_k = sum_i lamW_ik
 *    W_ik and B_k = sum_j lamH_kj H_kj, is largest at c = sqrt(B_k / A_k);
 *    every MAP satisfies A_k = B_k.
 *  - VB: q(W[, k]) scaled by c and q(H[k, ]) by 1 / c. A truncated normal
 *    (or exponential) scaled by c is one again, its mean times c, variance
 *    times c^2 and entropy plus log c; E_q[W_ik H_kj] and E_q[W_ik^2 H_kj^2]
 *    do not change, so neither does the expected log likelihood (nor
 *    q(tau)). The ELBO moves by -A_k (c - 1) - B_k (1 / c - 1) +
 *    (I - J) log c (A_k, B_k with the means, and with ARD the rates
 *    E[lambda_k]), largest at bnmf_scale_mode's c (p = I - J).
 * Either is an exact maximisation along a direction, so the objective never
 * decreases; at a fixed point of the coordinate updates it is stationary
 * in every direction, so c = 1 there and the fixed points are the same.
 */
static void balance_scales(const nmf_data *d, const nmf_prior *pr, double *W,
                           double *H, const vb_part *vb)
{
    const int I = d->I, J = d->J, K = d->K;
    const double p = (double) I - (double) J;
    for (int k = 0; k < K; k++) {
        double A, B;
        bnmf_scale_sums(d, pr, W, H, k, &A, &B);
        if (!(A > 0.0) || !(B > 0.0)) continue;
        if (!vb) {
            rescale_factor(d, W, H, k, sqrt(B / A));
            continue;
        }
        double u, Ay, By;
        bnmf_scale_mode(A, B, p, &u, &Ay, &By);
        if (!R_FINITE(u) || u == 0.0 || !scale_fits(d, W, H, k, u)) continue;
        const double c = exp(u), c2 = c * c;
        rescale_factor(d, W, H, k, c);
        for (int i = 0; i < I; i++) {
            vb->Wvar[i + (size_t) k * I] *= c2;
            vb->Went[i + (size_t) k * I] += u;
        }
        for (int j = 0; j < J; j++) {
            vb->Hvar[k + (size_t) j * K] /= c2;
            vb->Hent[k + (size_t) j * K] -= u;
        }
    }
}

/* sum_t log(lam_t) over the proper (lam_t > 0) entries: the constant part of
 * the exponential log prior, computed once per call. */
static double sum_log_rates(const double *lam, size_t n)
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
static double exp_log_kernel(const double *z, const double *lam, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s -= lam[t] * z[t];
    return s;
}

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
 * `work` of new_state() in R/engine.R adds the same) */
static size_t wh_work_len(int I, int J, int K)
{
    const size_t nb = J < WH_COLS ? (size_t) J : WH_COLS;
    const int cap = wh_batch_cap(I, J, K);
    if (cap == 1) return (size_t) I * nb;
    const size_t ib = I < WH_ROWS ? (size_t) I : WH_ROWS;
    return ib * nb + (size_t) cap * (((size_t) I + J) * K + 1);
}

typedef struct {
    int cap, n;            /* draws a batch can hold; draws held */
    double *W, *H, *inv_n; /* their copies of W and H, each one's 1 / n */
    double *S;             /* a tile of W H (cap 1: a block of columns) */
} wh_batch;

static void wh_batch_init(const nmf_data *d, wh_batch *b, double **buf)
{
    const int I = d->I, J = d->J, K = d->K;
    b->cap = wh_batch_cap(I, J, K);
    b->n = 0;
    const size_t nb = J < WH_COLS ? (size_t) J : WH_COLS;
    const size_t ib = b->cap == 1 ? (size_t) I : I < WH_ROWS ? (size_t) I : WH_ROWS;
    b->S = carve(buf, ib * nb);
    b->W = b->H = b->inv_n = NULL;
    if (b->cap > 1) {
        b->W = carve(buf, (size_t) b->cap * I * K);
        b->H = carve(buf, (size_t) b->cap * K * J);
        b->inv_n = carve(buf, (size_t) b->cap);
    }
}

/* Add the batch's draws to the state's moments of WH, tile by tile, and
 * count them in its n_wh; empties the batch. */
static void wh_batch_flush(const nmf_data *d, wh_batch *b, nmf_state *st)
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
    if (b->n == b->cap) wh_batch_flush(d, b, st);
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

static double sum_vec(const double *v, size_t n)
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
 */
static double vb_elbo(const nmf_data *d, const nmf_prior *pr, const double *W,
                      const double *H, const vb_part *vb, double esse,
                      double tau_shape, double tau_rate, const double *lambda,
                      const double *lambda_rate, double log_rates, double *loglik_out)
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
        e += log_rates + exp_log_kernel(W, pr->lamW, (size_t) I * K) +
            exp_log_kernel(H, pr->lamH, (size_t) K * J);
    }
    e += sum_vec(vb->Went, (size_t) I * K) + sum_vec(vb->Hent, (size_t) K * J);
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
 * (no ARD). */
static double log_joint(const nmf_data *d, const nmf_prior *pr, const double *W,
                        const double *H, double tau, const double *lambda, double sse,
                        double log_rates, double *loglik)
{
    const int I = d->I, J = d->J, K = d->K;
    const double ll = 0.5 * d->n_obs * (log(tau) - log(2.0 * M_PI)) - 0.5 * tau * sse;
    double logpost = ll + pr->alpha * log(pr->beta) - lgammafn(pr->alpha) +
        (pr->alpha - 1.0) * log(tau) - pr->beta * tau;
    if (pr->ard)
        logpost += bnmf_ard_log_prior(d, pr, lambda, W, H);
    else
        logpost += log_rates + exp_log_kernel(W, pr->lamW, (size_t) I * K) +
            exp_log_kernel(H, pr->lamH, (size_t) K * J);
    *loglik = ll;
    return logpost;
}

/* Running moments and kept draws of a sampling sweep. */
static void keep_sweep(const nmf_data *d, const nmf_prior *pr, nmf_state *st,
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
     * refused rather than replaced: new_state() (R/engine.R) sizes it by the
     * same sum, and a silent fallback would hide their disagreement. */
    const int want_block = c->accumulate && st->WH_mean && !d->sparse;
    const size_t n_block = want_block ? wh_work_len(I, J, K) : 0;
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
        ws.P = alloc_lines(2 * (size_t) K * n + K);
        ws.gm = ws.P + 2 * (size_t) K * n;
    }
    if (masked || rule == RULE_MOMENT) bnmf_sweep_threads(d, &ws, c->threads);
    if (buf) buf += bnmf_sweep_work_len(d);
    /* augmented: the latent entries' current values, then (within a sweep)
     * their WH */
    double *wh_miss = augmented ? carve(&buf, d->nmiss) : NULL;
    if (buf && !augmented) buf += d->nmiss;
    if (augmented)
        for (int m = 0; m < d->nmiss; m++) wh_miss[m] = x[d->miss_pos[m]];
    wh_batch whb = {1, 0, NULL, NULL, NULL, NULL};
    if (want_block) wh_batch_init(d, &whb, &buf);
    const double log_rates = pr->ard ? 0.0 : sum_log_rates(pr->lamW, (size_t) I * K) +
        sum_log_rates(pr->lamH, (size_t) K * J);
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
            bnmf_update_W(d, pr, x, W, H, *tau, rule, masked, 0, &ws, vb, NULL);
        if (mid_check) {
            bnmf_rng_interrupt();
        }
        double lin, quad;
        bnmf_update_H(d, pr, x, W, H, *tau, rule, masked, upd_H, 0, &ws, vb, NULL, &lin,
                      &quad);
        if (upd_W && upd_H) {
            if (rule == RULE_MODE || rule == RULE_MOMENT)
                balance_scales(d, pr, W, H, vb);
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
            logpost = vb_elbo(d, pr, W, H, vb, sse, tau_shape, *tau_rate, lambda,
                              lambda_rate, log_rates, &loglik);
        } else if (rule == RULE_MULT) {
            loglik = -sse; /* minus the Euclidean loss */
            logpost = loglik;
        } else {
            logpost = log_joint(d, pr, W, H, *tau, lambda, sse, log_rates, &loglik);
        }
        tr[s] = loglik;
        tr[s + n_sweeps] = *tau;
        tr[s + 2 * (R_xlen_t) n_sweeps] = logpost;
        tr[s + 3 * (R_xlen_t) n_sweeps] = sse;
        if (pr->ard)
            for (int k = 0; k < K; k++) out->lambda[s + (R_xlen_t) k * n_sweeps] = lambda[k];

        if ((s + 1) % thin == 0) keep_sweep(d, pr, st, c, out, &kept, n_draws, &whb, &ws);
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
    if (whb.n > 0) wh_batch_flush(d, &whb, st);

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
 * state: the list made by new_state() (R/engine.R), read by bnmf_read_state;
 * data:  the list made by prepare_data();
 * prior: list(lamW, lamH, alpha, beta, and optionally ard = c(alpha0, beta0));
 * ctrl:  list(n, rule = "gibbs" | "icm" | "vb" | "np", masked, accumulate,
 *        thin, keep_draws, update_W, update_H, update_tau, tol, wh_thin)
 *        (engine_sweeps() in R/engine.R).
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
