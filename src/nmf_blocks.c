/*
 * nmf_blocks.c -- Gaussian NMF (ICM and VB) by blocks of samples (columns):
 * the entries of R/blocks-gaussian.R. A sweep of the fit in memory
 * (bnmf_nmf_sweeps, nmf_run.c) is, in order: W's update from X H' and H's
 * (expected) Gram matrix, H's update given W, the balance of the factors'
 * scales (Gibbs: the exact move along them), tau's update and the
 * objective. By blocks:
 *  - nmf_blocks_wstep: W's update from the blocks' X_b H_b' and Gram
 *    matrices summed (bnmf_update_W_given);
 *  - nmf_block_h, on each block: its H[, b] given W (bnmf_update_H on the
 *    block's columns), its terms of the SSE and of the scale sums;
 *  - nmf_blocks_balance: the scales (bnmf_balance_scales's, or Gibbs's
 *    move, bnmf_scale_step, from the blocks' sums), W rescaled, the SSE
 *    and tau;
 *  - nmf_block_w, on each block: H[, b] rescaled, then X_b H_b', H_b's
 *    Gram matrix and H_b's terms of the objective;
 *  - nmf_blocks_objective: the ELBO (VB) or log joint (ICM, Gibbs);
 *  - nmf_block_keep, on each block (Gibbs, a kept sweep): the running
 *    moments of its H[, b] and of W H on its entries.
 * Gibbs draws H[, b] from the block's own random stream (R/blocks.R swaps
 * it in as R's state around the call), W, the scales and tau from the
 * chain's: the numbers do not depend on where a block is held.
 * Missing entries are the blocks' own: each keeps their current values
 * (its state's `fill`, written into its data before each step). Gibbs
 * redraws them around W H after tau's draw (nmf_block_w, on the block's
 * stream), ICM and VB set them to W H (E[W] E[H]) there, as the augmented
 * sweep of bnmf_nmf_sweeps; nmf_block_h returns their part of the sum of
 * squares (fss) and of the residuals (lat), which the SSE leaves out, and
 * VB's nmf_block_w the sums of fill_sums (nmf_sweep.c) by row, for W's
 * update (blocks_w_fill). Masked (ICM, VB), they hold zeros, each block's
 * columns leave them out of their Gram matrices, and nmf_block_w returns
 * the block's part of each masked row's Gram matrix (block_masked_grams),
 * which W's update takes from the whole one (blocks_w_masked).
 * The same kernels as the fit in memory, the same operations in the same
 * order: one block gives its numbers bit for bit (complete data, no ARD;
 * with missing entries, to rounding: the fill's W H is taken before the
 * balance of the scales and its squares are summed apart).
 */
#include "bnmf_call.h"
#include "nmf_sweep.h"

/* A flag of the controls: ctrl[[name]] != 0, or 0 when ctrl has none
 * (the controls of complete data need not carry the missing entries'). */
static int ctrl_flag(SEXP ctrl, const char *name)
{
    SEXP nms = Rf_getAttrib(ctrl, R_NamesSymbol);
    if (TYPEOF(ctrl) != VECSXP || TYPEOF(nms) != STRSXP) return 0;
    for (R_xlen_t t = 0; t < XLENGTH(ctrl); t++) {
        if (strcmp(CHAR(STRING_ELT(nms, t)), name) != 0) continue;
        SEXP v = VECTOR_ELT(ctrl, t);
        if (TYPEOF(v) != REALSXP || XLENGTH(v) != 1)
            Rf_error("bnmf internal error: '%s' must be a number", name);
        return REAL(v)[0] != 0.0;
    }
    return 0;
}

static nmf_rule block_rule_of(SEXP ctrl)
{
    const double r = *bnmf_real_elt(ctrl, "rule", 1);
    if (r == 1.0) return RULE_MODE;
    if (r == 2.0) return RULE_MOMENT;
    if (r == 3.0) return RULE_DRAW;
    Rf_error("bnmf internal error: the rule of a fit by blocks must be ICM (1), VB (2) or Gibbs (3)");
    return RULE_MODE;
}

/* A block's data (prepare_data() of its columns) and values. With missing
 * entries the block's state bst holds their current values (`fill`: the
 * latent entries of Gibbs, W H or E[W] E[H] of the end of the sweep before
 * for ICM and VB), written here into x (in place: the values are the
 * holder's own copy, or a block read again from its file for this call). */
static void read_block_data(SEXP data, SEXP x, SEXP bst, nmf_data *d, double **xv)
{
    bnmf_read_data(data, 1, d);
    if (TYPEOF(x) != REALSXP || XLENGTH(x) != d->nx)
        Rf_error("bnmf internal error: a block's values must be %.0f doubles", (double) d->nx);
    *xv = REAL(x);
    if (d->nmiss == 0) return;
    const double *fill = bnmf_real_elt(bst, "fill", d->nmiss);
    for (int m = 0; m < d->nmiss; m++) (*xv)[d->miss_pos[m]] = fill[m];
}

/* The block's state: list(H, H_var, H_ent) (the last two for VB). */
static void read_block_state(SEXP bst, const nmf_data *d, int vb, double **H, double **Hv,
                             double **He)
{
    const R_xlen_t n = (R_xlen_t) d->K * d->J;
    *H = bnmf_real_elt(bst, "H", n);
    *Hv = vb ? bnmf_real_elt(bst, "H_var", n) : NULL;
    *He = vb ? bnmf_real_elt(bst, "H_ent", n) : NULL;
}

/* VB with missing entries filled in: the table of W's moments that
 * bnmf_update_H's vb_fill reads (as bnmf_nmf_sweeps allocates it). */
static void fill_table(const nmf_data *d, sweep_work *ws)
{
    const size_t n = d->I > d->J ? d->I : d->J;
    ws->P = bnmf_alloc_lines(2 * (size_t) d->K * n + d->K);
    ws->gm = ws->P + 2 * (size_t) d->K * n;
}

/*
 * VB with missing entries filled in (fill_sums in nmf_sweep.c), the
 * block's part of what W's update needs, from its H[, b] (means H,
 * variances Hv) and expected Gram matrix G: for every row i, fs[, i] =
 * (s_i, e_i) (2 K values: sum over the block's missing j of E[h_kj]^2 and
 * of E[h_kj^2]) and fo[, i] = sum over the block's observed j of
 * E[h_kj^2] (K values; summed over them when the block misses more than
 * half of row i, else G[k,k] less e_i); gm = sum_j E[h_kj]^2. O(I K +
 * |missing| K); a row missing more than half of the block, O(J_b K).
 */
static void block_fill_sums(const nmf_data *d, const double *H, const double *Hv,
                            const double *G, double *fs, double *fo, double *gm)
{
    const int I = d->I, J = d->J, K = d->K;
    for (int k = 0; k < K; k++) gm[k] = 0.0;
    for (int j = 0; j < J; j++)
        for (int k = 0; k < K; k++) {
            const double h = H[k + (size_t) j * K];
            gm[k] += h * h;
        }
    for (int i = 0; i < I; i++) {
        const int nm = d->mrow_ptr[i + 1] - d->mrow_ptr[i];
        const int *mj = d->mrow_j + d->mrow_ptr[i];
        double *se = fs + (size_t) i * 2 * K, *o = fo + (size_t) i * K;
        for (int k = 0; k < 2 * K; k++) se[k] = 0.0;
        for (int t = 0; t < nm; t++) {
            const size_t jk = (size_t) mj[t] * K;
            for (int k = 0; k < K; k++) {
                const double h = H[jk + k];
                se[k] += h * h;
                se[K + k] += h * h + Hv[jk + k];
            }
        }
        if (2 * nm <= J) {
            for (int k = 0; k < K; k++) o[k] = G[k + (size_t) k * K] - se[K + k];
            continue;
        }
        for (int k = 0; k < K; k++) o[k] = 0.0;
        for (int j = 0, t = 0; j < J; j++) {
            if (t < nm && mj[t] == j) {
                t++;
                continue;
            }
            for (int k = 0; k < K; k++) {
                const double h = H[(size_t) j * K + k];
                o[k] += h * h + Hv[(size_t) j * K + k];
            }
        }
    }
}

/*
 * Masked ICM and VB: the block's part of the Gram matrix of each row with
 * missing entries (rmiss[i] > 0: its count over all Jall columns), K x K a
 * row in Mg, in row order. A row with at most half its entries missing
 * (bnmf_masked_gram's choice) takes the sum over the block's missing j of
 * E[h_j h_j'] (the master subtracts it from the whole Gram matrix); a row
 * with more, the sum over the block's observed j. VB: E[h_j h_j'] = h_j
 * h_j' + diag(Var h_j). obs: J_b ints of scratch. O(|missing| K^2), and
 * O(J_b K^2) a row missing more than half its entries.
 */
static void block_masked_grams(const nmf_data *d, const double *H, const double *Hv,
                               const double *rmiss, double Jall, double *Mg, int *obs)
{
    const int I = d->I, J = d->J, K = d->K;
    double *Gi = Mg;
    for (int i = 0; i < I; i++) {
        if (!(rmiss[i] > 0.0)) continue;
        const int nm = d->mrow_ptr[i + 1] - d->mrow_ptr[i];
        const int *mj = d->mrow_j + d->mrow_ptr[i];
        const int *idx = mj;
        int n = nm;
        if (2.0 * rmiss[i] > Jall) {
            /* the block's observed columns of the row */
            n = 0;
            for (int j = 0, t = 0; j < J; j++) {
                if (t < nm && mj[t] == j) {
                    t++;
                    continue;
                }
                obs[n++] = j;
            }
            idx = obs;
        }
        memset(Gi, 0, sizeof(double) * (size_t) K * K);
        if (n > 0) {
            bnmf_gram_update(Gi, NULL, H, K, idx, n, K, 1.0);
            bnmf_symmetrise(Gi, K);
            if (Hv)
                for (int t = 0; t < n; t++)
                    for (int k = 0; k < K; k++)
                        Gi[k + (size_t) k * K] += Hv[(size_t) idx[t] * K + k];
        }
        Gi += (size_t) K * K;
    }
}

/*
 * .Call entry, on a block: update H[, b] (ctrl$update; else only the SSE
 * terms) given W (wq: list(W, W_var (VB), tau)) as bnmf_update_H, in place.
 * lamH: the block's K x J_b prior rates. Returns list(lin, quad, B = the
 * block's sum_j lamH_kj H_kj, mh = the block's largest H_kj, by k).
 */
SEXP bnmf_nmf_block_h_call(SEXP bst, SEXP data, SEXP x, SEXP lamH, SEXP wq, SEXP ctrl)
{
    nmf_data d;
    double *xv;
    read_block_data(data, x, bst, &d, &xv);
    const nmf_rule rule = block_rule_of(ctrl);
    const int vbr = rule == RULE_MOMENT, K = d.K, J = d.J, I = d.I;
    double *H, *Hv, *He;
    read_block_state(bst, &d, vbr, &H, &Hv, &He);
    const double *W = bnmf_real_elt(wq, "W", (R_xlen_t) I * K);
    double *Wv = vbr ? bnmf_real_elt(wq, "W_var", (R_xlen_t) I * K) : NULL;
    const double tau = *bnmf_real_elt(wq, "tau", 1);
    if (TYPEOF(lamH) != REALSXP || XLENGTH(lamH) != (R_xlen_t) K * J)
        Rf_error("bnmf internal error: lamH must be K x J_b doubles");
    nmf_prior pr = {NULL, REAL(lamH), 1.0, 1.0, 0, 0.0, 0.0};
    vb_part vb = {Wv, Hv, NULL, He};
    const int update = *bnmf_real_elt(ctrl, "update", 1) != 0.0;
    /* masked (ICM, VB): the missing entries hold zeros and each column's
     * Gram matrix leaves them out, as the masked sweep in memory */
    const int masked = d.nmiss > 0 && ctrl_flag(ctrl, "masked");
    sweep_work ws;
    bnmf_sweep_work(&d, &ws, NULL);
    if (vbr && d.nmiss > 0 && !masked) fill_table(&d, &ws);
    double lin, quad;
    bnmf_rng_get(1);
    bnmf_update_H(&d, &pr, xv, W, H, tau, rule, masked, update, &ws, vbr ? &vb : NULL, &lin,
                  &quad);
    bnmf_rng_put();
    /* with missing entries, as bnmf_nmf_sweeps: lin and quad are those of
     * the filled data, whose sum of squares takes the fill's (fss); lat =
     * sum (fill - W H)^2 over the missing entries, W H there kept in the
     * state's `wh` for the fill of nmf_block_w */
    double lat = 0.0, fss = 0.0;
    if (d.nmiss > 0 && !masked) {
        const double *fill = bnmf_real_elt(bst, "fill", d.nmiss);
        double *wh = bnmf_real_elt(bst, "wh", d.nmiss);
        for (int m = 0; m < d.nmiss; m++) {
            wh[m] = fill[m];
            fss += fill[m] * fill[m];
        }
        lat = bnmf_wh_latent(W, H, I, K, d.miss_i, d.miss_j, d.nmiss, ws.Wt, wh);
    }
    SEXP v[6];
    v[0] = PROTECT(Rf_ScalarReal(lin));
    v[1] = PROTECT(Rf_ScalarReal(quad));
    v[2] = PROTECT(Rf_allocVector(REALSXP, K));
    v[3] = PROTECT(Rf_allocVector(REALSXP, K));
    v[4] = PROTECT(Rf_ScalarReal(lat));
    v[5] = PROTECT(Rf_ScalarReal(fss));
    /* B_k as bnmf_scale_sums (no rows: A = 0) and H[k, ]'s largest entry
     * as scale_fits */
    nmf_data dh = d;
    dh.I = 0;
    for (int k = 0; k < K; k++) {
        double A, B, mh = 0.0;
        bnmf_scale_sums(&dh, &pr, NULL, H, k, &A, &B);
        for (int j = 0; j < J; j++) {
            const double h = H[k + (size_t) j * K];
            mh = h > mh ? h : mh;
        }
        REAL(v[2])[k] = B;
        REAL(v[3])[k] = mh;
    }
    const char *names[] = {"lin", "quad", "B", "mh", "lat", "fss"};
    SEXP res = bnmf_named_list(6, names, v);
    UNPROTECT(6);
    return res;
}

/*
 * .Call entry, on a block: H[, b] rescaled by the scales of
 * nmf_blocks_balance (scale: NULL or list(on, c, u) by k; VB also its
 * variances and entropies), then X_b H_b' (D, I x K), H_b's (expected)
 * Gram matrix (G) as bnmf_W_products, and H_b's terms of the objective
 * (hterms: -sum lamH H, sum of H's entropies).
 */
SEXP bnmf_nmf_block_w_call(SEXP bst, SEXP data, SEXP x, SEXP lamH, SEXP scale, SEXP ctrl)
{
    nmf_data d;
    double *xv;
    read_block_data(data, x, bst, &d, &xv);
    const nmf_rule rule = block_rule_of(ctrl);
    const int vbr = rule == RULE_MOMENT, K = d.K, J = d.J, I = d.I;
    double *H, *Hv, *He;
    read_block_state(bst, &d, vbr, &H, &Hv, &He);
    if (TYPEOF(lamH) != REALSXP || XLENGTH(lamH) != (R_xlen_t) K * J)
        Rf_error("bnmf internal error: lamH must be K x J_b doubles");
    if (!Rf_isNull(scale)) {
        const double *on = bnmf_real_elt(scale, "on", K), *c = bnmf_real_elt(scale, "c", K);
        const double *u = bnmf_real_elt(scale, "u", K);
        for (int k = 0; k < K; k++) {
            if (on[k] == 0.0) continue;
            /* as rescale_factor and bnmf_balance_scales (nmf_scale.c) */
            for (int j = 0; j < J; j++) H[k + (size_t) j * K] /= c[k];
            if (!vbr) continue;
            const double c2 = c[k] * c[k];
            for (int j = 0; j < J; j++) {
                Hv[k + (size_t) j * K] /= c2;
                He[k + (size_t) j * K] -= u[k];
            }
        }
    }
    if (d.nmiss > 0 && ctrl_flag(ctrl, "refill") && !ctrl_flag(ctrl, "masked")) {
        /* the missing entries' new values, as at the end of a sweep of
         * bnmf_nmf_sweeps: W H there (nmf_block_h's, before the scales'
         * balance, which W H does not see), drawn around it for Gibbs (from
         * the block's stream) */
        double *fill = bnmf_real_elt(bst, "fill", d.nmiss);
        const double *wh = bnmf_real_elt(bst, "wh", d.nmiss);
        const int draw = rule == RULE_DRAW;
        const double sd = draw ? 1.0 / sqrt(*bnmf_real_elt(ctrl, "tau", 1)) : 0.0;
        if (draw) bnmf_rng_get(1);
        for (int m = 0; m < d.nmiss; m++) {
            double val = wh[m];
            if (draw) val += sd * bnmf_norm_std();
            fill[m] = val;
            xv[d.miss_pos[m]] = val;
        }
        if (draw) bnmf_rng_put();
    }
    sweep_work ws;
    bnmf_sweep_work(&d, &ws, NULL);
    bnmf_W_products(&d, xv, H, &ws, Hv);
    /* VB imputing (ctrl$fill): what W's update needs of each row's missing
     * entries (fill_sums in nmf_sweep.c); masked: the block's part of each
     * masked row's Gram matrix (block_masked_grams). Every block returns
     * them, also one that misses nothing: its observed entries are part of
     * the sums. */
    const int masked = ctrl_flag(ctrl, "masked");
    const int fill = vbr && !masked && ctrl_flag(ctrl, "fill");
    SEXP v[7];
    v[3] = PROTECT(Rf_allocMatrix(REALSXP, fill ? 2 * K : 0, fill ? I : 0));
    v[4] = PROTECT(Rf_allocMatrix(REALSXP, fill ? K : 0, fill ? I : 0));
    v[5] = PROTECT(Rf_allocVector(REALSXP, fill ? K : 0));
    if (fill) block_fill_sums(&d, H, Hv, ws.G, REAL(v[3]), REAL(v[4]), REAL(v[5]));
    const double *rmiss = masked ? bnmf_real_elt(ctrl, "rmiss", I) : NULL;
    R_xlen_t nr = 0;
    for (int i = 0; masked && i < I; i++) nr += rmiss[i] > 0.0;
    v[6] = PROTECT(Rf_allocVector(REALSXP, nr * K * K));
    if (masked)
        block_masked_grams(&d, H, Hv, rmiss, *bnmf_real_elt(ctrl, "J", 1), REAL(v[6]), ws.obs);
    v[0] = PROTECT(Rf_allocMatrix(REALSXP, I, K));
    v[1] = PROTECT(Rf_allocMatrix(REALSXP, K, K));
    v[2] = PROTECT(Rf_allocVector(REALSXP, 2));
    double *D = REAL(v[0]);
    for (int k = 0; k < K; k++)
        for (int i = 0; i < I; i++)
            D[i + (size_t) k * I] = d.sparse ? ws.Wt[k + (size_t) i * K] : ws.D[i + (size_t) k * I];
    memcpy(REAL(v[1]), ws.G, sizeof(double) * (size_t) K * K);
    REAL(v[2])[0] = bnmf_exp_log_kernel(H, REAL(lamH), (size_t) K * J);
    REAL(v[2])[1] = vbr ? bnmf_sum_vec(He, (size_t) K * J) : 0.0;
    const char *names[] = {"D", "G", "hterms", "fs", "fo", "gm", "Mg"};
    SEXP res = bnmf_named_list(7, names, v);
    UNPROTECT(7);
    return res;
}

/*
 * .Call entry, on a block, after a kept Gibbs sweep: its running moments,
 * in place in bst = list(H, H_mean, H_m2, WH_mean, WH_m2) (WH's: every
 * entry of a dense block, the stored ones of a sparse one; empty when the
 * fit keeps none), given W (the master's, after the scale move).
 * ctrl$inv_n: 1 / the count of kept draws; ctrl$inv_wh: 1 / the count of
 * draws in WH's moments, or 0 when this draw does not enter them.
 */
SEXP bnmf_nmf_block_keep_call(SEXP bst, SEXP data, SEXP x, SEXP W, SEXP ctrl)
{
    nmf_data d;
    double *xv;
    read_block_data(data, x, bst, &d, &xv);
    const int K = d.K, J = d.J, I = d.I;
    const R_xlen_t nh = (R_xlen_t) K * J;
    double *H = bnmf_real_elt(bst, "H", nh);
    double *Hm = bnmf_real_elt(bst, "H_mean", nh), *Hs = bnmf_real_elt(bst, "H_m2", nh);
    if (TYPEOF(W) != REALSXP || XLENGTH(W) != (R_xlen_t) I * K)
        Rf_error("bnmf internal error: W must be I x K doubles");
    const double inv_n = *bnmf_real_elt(ctrl, "inv_n", 1);
    const double inv_wh = *bnmf_real_elt(ctrl, "inv_wh", 1);
    double *WHm = NULL, *WHs = NULL;
    if (inv_wh > 0.0) {
        WHm = bnmf_real_elt(bst, "WH_mean", d.nx);
        WHs = bnmf_real_elt(bst, "WH_m2", d.nx);
    }
    sweep_work ws;
    bnmf_sweep_work(&d, &ws, NULL);
    bnmf_block_keep(&d, REAL(W), H, Hm, Hs, inv_n, WHm, WHs, inv_wh, &ws);
    return R_NilValue;
}

/* The whole data's dimensions and counts: ctrl$dims = c(I, J, K), n_obs. */
static void read_whole(SEXP ctrl, nmf_data *d)
{
    memset(d, 0, sizeof(nmf_data));
    const double *dims = bnmf_real_elt(ctrl, "dims", 3);
    d->I = (int) dims[0]; d->J = (int) dims[1]; d->K = (int) dims[2];
    d->n_obs = *bnmf_real_elt(ctrl, "n_obs", 1);
    d->sumsq_obs = *bnmf_real_elt(ctrl, "sumsq", 1);
    d->nx = (R_xlen_t) d->I * d->J;
}

/* The master's W: wq = list(W, W_var, W_ent (VB), tau, tau_rate (VB)). */
static void read_wq(SEXP wq, const nmf_data *d, int vbr, double **W, vb_part *vb, double **tau,
                    double **tau_rate)
{
    const R_xlen_t n = (R_xlen_t) d->I * d->K;
    *W = bnmf_real_elt(wq, "W", n);
    vb->Wvar = vbr ? bnmf_real_elt(wq, "W_var", n) : NULL;
    vb->Went = vbr ? bnmf_real_elt(wq, "W_ent", n) : NULL;
    vb->Hvar = vb->Hent = NULL;
    *tau = bnmf_real_elt(wq, "tau", 1);
    *tau_rate = vbr ? bnmf_real_elt(wq, "tau_rate", 1) : NULL;
}

/*
 * VB with missing entries filled in: W's update as bnmf_update_W_given's
 * (update_W_rows with vb_fill, nmf_sweep.c: rows by COND_BLOCK, each with
 * fill_sums's s_i, e_i, Gi[k,k] and a_i), from the blocks' sums (fs, fo,
 * gm: block_fill_sums) in place of H's. ws holds D and G.
 */
static void blocks_w_fill(const nmf_data *d, const nmf_prior *pr, double *W, double tau,
                          sweep_work *w, const vb_part *vb, const double *fs,
                          const double *fo, const double *gm)
{
    const int I = d->I, K = d->K;
    const double *G = w->G;
    for (int i = 0; i < I; i += COND_BLOCK) {
        const int nr = I - i < COND_BLOCK ? I - i : COND_BLOCK;
        const double *lam[COND_BLOCK];
        for (int r = 0; r < nr; r++) {
            const int ir = i + r;
            bnmf_row_interrupt(ir);
            const double *se = fs + (size_t) ir * 2 * K;
            double *dg = w->dg + (size_t) r * K, *a = w->fa + (size_t) r * K;
            if (bnmf_fill_diag(G, se, gm, K, dg, a))
                for (int k = 0; k < K; k++) dg[k] = fo[(size_t) ir * K + k];
            lam[r] = pr->lamW + ir;
            double *zr = w->zrow + (size_t) r * K, *br = w->brow + (size_t) r * K;
            for (int k = 0; k < K; k++) {
                zr[k] = W[ir + (size_t) k * I];
                br[k] = w->D[ir + (size_t) k * I] - zr[k] * se[k];
            }
        }
        bnmf_vb_rows_diag(w->zrow, G, w->brow, w->dg, w->fa, w->fu, lam, I, tau, K, nr,
                          w->vrow, w->erow);
        bnmf_W_rows_store(d, W, i, nr, w, vb);
    }
}

/*
 * Masked ICM and VB: W's update as bnmf_update_W_given's masked sweep
 * (update_W_rows in nmf_sweep.c: runs of up to COND_BLOCK rows with no
 * missing entry together on the whole Gram matrix, each row with missing
 * entries alone on its own), the own Gram matrix of a row with missing
 * entries from the blocks' sums Mg (block_masked_grams): G less them, or
 * (more than half the row missing) their sum; VB: its diagonal at least 0.
 * rmiss: each row's count of missing entries. (In memory, from K =
 * SUB_MIN_K_ICM (ICM) or SUB_MIN_K_VB (VB) on, a row with at most half its
 * entries missing corrects the whole matrix's sums entry by entry instead:
 * the same step, to rounding.)
 */
static void blocks_w_masked(const nmf_data *d, const nmf_prior *pr, double *W, double tau,
                            nmf_rule rule, sweep_work *w, const vb_part *vb,
                            const double *rmiss, const double *Mg)
{
    const int I = d->I, J = d->J, K = d->K;
    const double *Mi = Mg;
    for (int i = 0; i < I;) {
        int nr = 0;
        while (nr < COND_BLOCK && i + nr < I && !(rmiss[i + nr] > 0.0)) nr++;
        for (int r = 0; r < (nr > 1 ? nr : 1); r++) bnmf_row_interrupt(i + r);
        if (nr > 1) {
            bnmf_W_rows_cond(d, pr, W, i, nr, 0, tau, rule, w);
            bnmf_W_rows_store(d, W, i, nr, w, vb);
            i += nr;
            continue;
        }
        bnmf_W_row_load(d, W, i, w);
        const double *G = w->G;
        if (rmiss[i] > 0.0) {
            const size_t KK = (size_t) K * K;
            if (2.0 * rmiss[i] <= J)
                for (size_t t = 0; t < KK; t++) w->Gi[t] = w->G[t] - Mi[t];
            else
                memcpy(w->Gi, Mi, sizeof(double) * KK);
            if (vb)
                for (int k = 0; k < K; k++)
                    if (w->Gi[k + (size_t) k * K] < 0.0) w->Gi[k + (size_t) k * K] = 0.0;
            G = w->Gi;
            Mi += KK;
        }
        bnmf_cond_row(w->zrow, G, w->brow, pr->lamW + i, I, tau, K, 0, rule, w->vrow, w->erow);
        bnmf_W_rows_store(d, W, i, 1, w, vb);
        i++;
    }
}

/*
 * .Call entry, on the master: W's update (in place in wq) from acc =
 * list(D = sum_b X_b H_b', G = sum_b of the blocks' Gram matrices), as
 * bnmf_update_W.
 */
SEXP bnmf_nmf_blocks_wstep_call(SEXP wq, SEXP acc, SEXP prior, SEXP ctrl)
{
    nmf_data d;
    read_whole(ctrl, &d);
    const nmf_rule rule = block_rule_of(ctrl);
    const int vbr = rule == RULE_MOMENT, I = d.I, K = d.K;
    nmf_prior pr;
    bnmf_read_prior(prior, 0, &d, &pr);
    double *W, *tau, *tau_rate;
    vb_part vb;
    read_wq(wq, &d, vbr, &W, &vb, &tau, &tau_rate);
    /* the scratch of a block of no columns: D, G and the rows' */
    nmf_data d0 = d;
    d0.J = 0;
    sweep_work ws;
    bnmf_sweep_work(&d0, &ws, NULL);
    memcpy(ws.D, bnmf_real_elt(acc, "D", (R_xlen_t) I * K), sizeof(double) * (size_t) I * K);
    memcpy(ws.G, bnmf_real_elt(acc, "G", (R_xlen_t) K * K), sizeof(double) * (size_t) K * K);
    bnmf_rng_get(1);
    if (ctrl_flag(ctrl, "masked")) {
        R_xlen_t nr = 0;
        const double *rmiss = bnmf_real_elt(ctrl, "rmiss", I);
        for (int i = 0; i < I; i++) nr += rmiss[i] > 0.0;
        blocks_w_masked(&d, &pr, W, *tau, rule, &ws, vbr ? &vb : NULL, rmiss,
                        bnmf_real_elt(acc, "Mg", nr * K * K));
    } else if (vbr && ctrl_flag(ctrl, "fill")) {
        blocks_w_fill(&d, &pr, W, *tau, &ws, &vb, bnmf_real_elt(acc, "fs", (R_xlen_t) 2 * K * I),
                      bnmf_real_elt(acc, "fo", (R_xlen_t) K * I), bnmf_real_elt(acc, "gm", K));
    } else {
        bnmf_update_W_given(&d, &pr, W, NULL, *tau, rule, 0, &ws, vbr ? &vb : NULL);
    }
    bnmf_rng_put();
    return R_NilValue;
}

/*
 * .Call entry, on the master, after the blocks' H steps: hs = list(lin,
 * quad, B, mh) summed over the blocks (mh: their largest). ctrl$balance:
 * balance the scales as bnmf_balance_scales (Gibbs: move them as
 * bnmf_scale_move, one bnmf_scale_step a factor; W in place);
 * ctrl$update_tau: tau's update or draw (in place). Returns list(scale = list(on, c, u) for the
 * blocks, sse).
 */
SEXP bnmf_nmf_blocks_balance_call(SEXP wq, SEXP hs, SEXP prior, SEXP ctrl)
{
    nmf_data d;
    read_whole(ctrl, &d);
    const nmf_rule rule = block_rule_of(ctrl);
    const int vbr = rule == RULE_MOMENT, I = d.I, J = d.J, K = d.K;
    nmf_prior pr;
    bnmf_read_prior(prior, 0, &d, &pr);
    double *W, *tau, *tau_rate;
    vb_part vb;
    read_wq(wq, &d, vbr, &W, &vb, &tau, &tau_rate);
    const double lin = *bnmf_real_elt(hs, "lin", 1), quad = *bnmf_real_elt(hs, "quad", 1);
    const double *Bs = bnmf_real_elt(hs, "B", K), *mh = bnmf_real_elt(hs, "mh", K);
    SEXP v[3];
    v[0] = PROTECT(Rf_allocVector(REALSXP, K));
    v[1] = PROTECT(Rf_allocVector(REALSXP, K));
    v[2] = PROTECT(Rf_allocVector(REALSXP, K));
    double *on = REAL(v[0]), *cc = REAL(v[1]), *uu = REAL(v[2]);
    const int balance = *bnmf_real_elt(ctrl, "balance", 1) != 0.0;
    const int draw = rule == RULE_DRAW;
    const int upd_tau = *bnmf_real_elt(ctrl, "update_tau", 1) != 0.0;
    nmf_data dw = d;
    dw.J = 0;
    const double p = (double) I - (double) J;
    /* Gibbs: the scale move's draws, then tau's, on the chain's stream */
    if (draw) bnmf_rng_get(1);
    for (int k = 0; k < K; k++) {
        on[k] = 0.0;
        cc[k] = 1.0;
        uu[k] = 0.0;
        if (!balance) continue;
        /* bnmf_balance_scales (bnmf_scale_move for Gibbs) with B_k from
         * the blocks */
        double A, B0;
        bnmf_scale_sums(&dw, &pr, W, NULL, k, &A, &B0);
        const double B = Bs[k];
        double c, u = 0.0;
        if (draw) {
            if (!bnmf_scale_step(A, B, p, &u)) continue;
            c = exp(u);
            double mw = 0.0;
            for (int i = 0; i < I; i++) {
                const double w = W[i + (size_t) k * I];
                mw = w > mw ? w : mw;
            }
            if (!(c > 0.0) || !R_FINITE(c) || !bnmf_scale_fits_max(mw, mh[k], I, J, u))
                bnmf_scale_range_error(k, c);
        } else if (!(A > 0.0) || !(B > 0.0)) {
            continue;
        } else if (!vbr) {
            c = sqrt(B / A);
        } else {
            double Ay, By;
            bnmf_scale_mode(A, B, p, &u, &Ay, &By);
            double mw = 0.0;
            for (int i = 0; i < I; i++) {
                const double w = W[i + (size_t) k * I];
                mw = w > mw ? w : mw;
            }
            if (!R_FINITE(u) || u == 0.0 || !bnmf_scale_fits_max(mw, mh[k], I, J, u)) continue;
            c = exp(u);
        }
        on[k] = 1.0;
        cc[k] = c;
        uu[k] = u;
        for (int i = 0; i < I; i++) W[i + (size_t) k * I] *= c;
        if (!vbr) continue;
        const double c2 = c * c;
        for (int i = 0; i < I; i++) {
            vb.Wvar[i + (size_t) k * I] *= c2;
            vb.Went[i + (size_t) k * I] += u;
        }
    }
    /* (with missing entries: sumsq holds the fill's squares, lat their
     * residuals, as bnmf_nmf_sweeps) */
    double sse = d.sumsq_obs - 2.0 * lin + quad;
    sse -= *bnmf_real_elt(hs, "lat", 1);
    if (sse < 0.0) sse = 0.0;
    if (upd_tau)
        bnmf_update_tau(&pr, rule, pr.alpha + 0.5 * d.n_obs, sse, tau, tau_rate);
    if (draw) bnmf_rng_put();
    const char *sn[] = {"on", "c", "u"};
    SEXP sc = PROTECT(bnmf_named_list(3, sn, v));
    SEXP r[2];
    r[0] = sc;
    r[1] = PROTECT(Rf_ScalarReal(sse));
    const char *names[] = {"scale", "sse"};
    SEXP res = bnmf_named_list(2, names, r);
    UNPROTECT(5);
    return res;
}

/*
 * .Call entry, on the master: the objective after a sweep, from H's terms
 * summed over the blocks (hterms), the SSE and log_rates (sum log lam over
 * W's and the blocks' proper rates). Returns c(loglik, tau, logpost, sse),
 * a row of the trace of bnmf_nmf_sweeps.
 */
SEXP bnmf_nmf_blocks_objective_call(SEXP wq, SEXP hterms, SEXP prior, SEXP ctrl)
{
    nmf_data d;
    read_whole(ctrl, &d);
    const nmf_rule rule = block_rule_of(ctrl);
    const int vbr = rule == RULE_MOMENT;
    nmf_prior pr;
    bnmf_read_prior(prior, 0, &d, &pr);
    double *W, *tau, *tau_rate;
    vb_part vb;
    read_wq(wq, &d, vbr, &W, &vb, &tau, &tau_rate);
    if (TYPEOF(hterms) != REALSXP || XLENGTH(hterms) != 2)
        Rf_error("bnmf internal error: hterms must be 2 doubles");
    const double *ht = REAL(hterms);
    const double sse = *bnmf_real_elt(ctrl, "sse", 1);
    const double log_rates = *bnmf_real_elt(ctrl, "log_rates", 1);
    double loglik, logpost;
    if (vbr)
        logpost = bnmf_vb_elbo(&d, &pr, W, NULL, &vb, sse, pr.alpha + 0.5 * d.n_obs, *tau_rate,
                               NULL, NULL, log_rates, ht, &loglik);
    else
        logpost = bnmf_log_joint(&d, &pr, W, NULL, *tau, NULL, sse, log_rates, ht, &loglik);
    SEXP res = PROTECT(Rf_allocVector(REALSXP, 4));
    REAL(res)[0] = loglik;
    REAL(res)[1] = *tau;
    REAL(res)[2] = logpost;
    REAL(res)[3] = sse;
    UNPROTECT(1);
    return res;
}

/* .Call entry: sum log lam over the proper rates (bnmf_sum_log_rates). */
SEXP bnmf_nmf_sum_log_rates_call(SEXP lam)
{
    if (TYPEOF(lam) != REALSXP) Rf_error("bnmf internal error: rates must be doubles");
    return Rf_ScalarReal(bnmf_sum_log_rates(REAL(lam), (size_t) XLENGTH(lam)));
}
