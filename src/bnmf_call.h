/* bnmf_call.h -- prototypes of the .Call entry points (registered in init.c). */
#ifndef BNMF_CALL_H
#define BNMF_CALL_H
#include "bnmf.h"

SEXP bnmf_norm_std_call(SEXP n);
SEXP bnmf_unif_call(SEXP n, SEXP shape);
SEXP bnmf_norm_table_call(void);
SEXP bnmf_exp_std_call(SEXP n);
SEXP bnmf_exp_table_call(void);
SEXP bnmf_rtnorm_call(SEXP n, SEXP mean, SEXP sd, SEXP lower, SEXP upper);
SEXP bnmf_first_nonfinite_call(SEXP x);
SEXP bnmf_tn_moments_call(SEXP mean, SEXP sd);
SEXP bnmf_tn_vb_call(SEXP mu, SEXP sd);
SEXP bnmf_tn_logdens_call(SEXP x, SEXP mean, SEXP sd);
SEXP bnmf_nmf_sweeps_call(SEXP state, SEXP data, SEXP prior, SEXP ctrl);
SEXP bnmf_wh_entries_call(SEXP W, SEXP H, SEXP i, SEXP j);
SEXP bnmf_gram_update_call(SEXP G, SEXP Z, SEXP idx, SEXP sign);
SEXP bnmf_gram_cols_call(SEXP W);
SEXP bnmf_kl_loss_call(SEXP x, SEXP r);
SEXP bnmf_sparse_products_call(SEXP data, SEXP x, SEXP W, SEXP H);
SEXP bnmf_cond_rows_call(SEXP G, SEXP B, SEXP Z, SEXP L, SEXP par);
SEXP bnmf_cond_row_sub_call(SEXP G, SEXP O, SEXP V, SEXP B, SEXP Z, SEXP L, SEXP par);
SEXP bnmf_nmf_kl_call(SEXP state, SEXP data, SEXP ctrl);
SEXP bnmf_stein_kernel_call(SEXP theta, SEXP score, SEXP par);
SEXP bnmf_simplex_qp_call(SEXP K, SEXP tol, SEXP maxit);
/* the BLAS's threads (blas_threads.c) */
SEXP bnmf_blas_threads_call(SEXP n);
SEXP bnmf_chib_run_call(SEXP state, SEXP data, SEXP prior, SEXP target, SEXP ctrl);
/* SVGD and DSGD (svgd.c) */
SEXP bnmf_stein_directions_call(SEXP theta, SEXP score, SEXP par, SEXP w, SEXP gradient);
/* the tri-factorisation */
SEXP bnmf_nmtf_sweeps_call(SEXP state, SEXP data, SEXP prior, SEXP ctrl, SEXP L);
SEXP bnmf_kmeans_rows_call(SEXP X, SEXP norms, SEXP centres, SEXP iter);

/* the Poisson likelihood */
SEXP bnmf_pois_vb_call(SEXP state, SEXP data, SEXP x, SEXP prior, SEXP ctrl);
SEXP bnmf_pois_elbo_call(SEXP state, SEXP data, SEXP x, SEXP prior);
SEXP bnmf_pois_rows_call(SEXP data, SEXP x);
SEXP bnmf_pois_vb_block_call(SEXP bstate, SEXP data, SEXP x, SEXP prior, SEXP wq, SEXP ctrl);
SEXP bnmf_pois_vb_add_call(SEXP acc, SEXP stats);
SEXP bnmf_nmf_block_h_call(SEXP bst, SEXP data, SEXP x, SEXP lamH, SEXP wq, SEXP ctrl);
SEXP bnmf_nmf_block_w_call(SEXP bst, SEXP data, SEXP x, SEXP lamH, SEXP scale, SEXP ctrl);
SEXP bnmf_nmf_block_keep_call(SEXP bst, SEXP data, SEXP x, SEXP W, SEXP ctrl);
SEXP bnmf_nmf_blocks_wstep_call(SEXP wq, SEXP acc, SEXP prior, SEXP ctrl);
SEXP bnmf_nmf_blocks_balance_call(SEXP wq, SEXP hs, SEXP prior, SEXP ctrl);
SEXP bnmf_nmf_blocks_objective_call(SEXP wq, SEXP hterms, SEXP prior, SEXP ctrl);
SEXP bnmf_nmf_sum_log_rates_call(SEXP lam);
SEXP bnmf_pois_vb_wstep_call(SEXP wq, SEXP acc, SEXP prior, SEXP dims);
SEXP bnmf_pois_vb_finish_call(SEXP wq, SEXP acc, SEXP prior, SEXP dims);
SEXP bnmf_pois_vb_logmeans_call(SEXP al, SEXP be, SEXP dims, SEXP transpose);
SEXP bnmf_pois_gibbs_call(SEXP state, SEXP data, SEXP x, SEXP prior, SEXP ctrl);
SEXP bnmf_pois_rgamma_call(SEXP n, SEXP a, SEXP z);
SEXP bnmf_pois_gibbs_block_call(SEXP bstate, SEXP data, SEXP x, SEXP prior, SEXP wq, SEXP ctrl);
SEXP bnmf_pois_gibbs_wstep_call(SEXP ws, SEXP acc, SEXP prior, SEXP dims);
SEXP bnmf_pois_gibbs_finish_call(SEXP ws, SEXP acc, SEXP prior, SEXP dims, SEXP ctrl);
SEXP bnmf_pois_ssvi_call(SEXP state, SEXP data, SEXP x, SEXP prior, SEXP ctrl);
SEXP bnmf_pois_masks_call(SEXP state, SEXP data, SEXP x, SEXP n);
/* rlist.c: the count argument n of the generators' entries */
R_xlen_t bnmf_count_arg(SEXP n);
int bnmf_stein_blocks(SEXP theta, SEXP score, int B, double **T, double **S, int *d,
                      const char *who);

#endif
