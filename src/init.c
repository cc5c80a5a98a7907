/* init.c -- registration table of the .Call routines, and the set-up of the
 * normal and exponential generators' tables (normal.c, exponential.c) at
 * load. */
#include "bnmf_call.h"
#include <R_ext/Rdynload.h>

#define CALLDEF(name, n) { #name, (DL_FUNC) &bnmf_##name##_call, n }

static const R_CallMethodDef call_methods[] = {
    CALLDEF(norm_std, 1),
    CALLDEF(unif, 2),
    CALLDEF(norm_table, 0),
    CALLDEF(exp_std, 1),
    CALLDEF(exp_table, 0),
    CALLDEF(rtnorm, 5),
    CALLDEF(first_nonfinite, 1),
    CALLDEF(tn_moments, 2),
    CALLDEF(tn_vb, 2),
    CALLDEF(tn_logdens, 3),
    CALLDEF(nmf_sweeps, 4),
    CALLDEF(wh_entries, 4),
    CALLDEF(gram_update, 4),
    CALLDEF(gram_cols, 1),
    CALLDEF(sparse_products, 4),
    CALLDEF(cond_rows, 5),
    CALLDEF(cond_row_sub, 7),
    CALLDEF(nmf_kl, 3),
    CALLDEF(kl_loss, 2),
    CALLDEF(stein_kernel, 3),
    CALLDEF(simplex_qp, 3),
    CALLDEF(chib_run, 5),
    CALLDEF(blas_threads, 1),
    /* SVGD and DSGD */
    CALLDEF(stein_directions, 5),
    /* the tri-factorisation */
    CALLDEF(nmtf_sweeps, 5),
    CALLDEF(kmeans_rows, 4),
    /* the Poisson likelihood (pois_nmf.c, pois_ssvi.c) */
    CALLDEF(pois_vb, 5),
    CALLDEF(pois_elbo, 4),
    CALLDEF(pois_rows, 2),
    CALLDEF(pois_vb_block, 6),
    CALLDEF(pois_vb_add, 2),
    CALLDEF(pois_vb_wstep, 4),
    CALLDEF(pois_vb_finish, 4),
    CALLDEF(pois_vb_logmeans, 4),
    /* Gaussian NMF by blocks of samples (nmf_blocks.c) */
    CALLDEF(nmf_block_h, 6),
    CALLDEF(nmf_block_keep, 5),
    CALLDEF(nmf_block_w, 6),
    CALLDEF(nmf_blocks_wstep, 4),
    CALLDEF(nmf_blocks_balance, 4),
    CALLDEF(nmf_blocks_objective, 4),
    CALLDEF(nmf_sum_log_rates, 1),
    CALLDEF(pois_gibbs, 5),
    CALLDEF(pois_rgamma, 3),
    /* Poisson Gibbs by blocks of samples (pois_gibbs.c) */
    CALLDEF(pois_gibbs_block, 6),
    CALLDEF(pois_gibbs_wstep, 4),
    CALLDEF(pois_gibbs_finish, 5),
    CALLDEF(pois_ssvi, 5),
    CALLDEF(pois_masks, 4),
    { NULL, NULL, 0 }
};

void R_init_bnmf(DllInfo *dll)
{
    R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
    R_useDynamicSymbols(dll, FALSE);
    R_forceSymbols(dll, TRUE);
    bnmf_norm_init();
    bnmf_exp_init();
    bnmf_mrg_init();
}
