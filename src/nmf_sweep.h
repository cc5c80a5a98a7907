/* nmf_sweep.h -- internal to the files of Gaussian NMF's run of sweeps:
 * nmf_work.c (the scratch), nmf_sweep.c (the half sweeps), nmf_scale.c (the
 * moves along the factors' scales), nmf_moments.c (the running moments and
 * kept draws), nmf_run.c (the driver, the objectives, the .Call entry). */
#ifndef BNMF_NMF_SWEEP_H
#define BNMF_NMF_SWEEP_H
#include "nmf.h"

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

/* VB with the missing entries filled in (fill_sums in nmf_sweep.c; and by
 * blocks of samples, nmf_blocks.c): below this share of G[k,k], the
 * observed part of a diagonal is summed over the observed entries rather
 * than taken as the difference (whose rounding, relative to it, would be
 * G[k,k] / dg[k] ulps). */
#define FILL_CANCEL 0.25

/* A filled row's diagonal terms from its sums se (s_k, then e_k; see
 * fill_sums in nmf_sweep.c): dg[k] = G[k,k] - e_k and a[k] =
 * sqrt(s_k / gm[k]). Returns 1 when some dg[k] cancels below FILL_CANCEL
 * of G[k,k] (then the caller sums it over the observed entries). */
static inline int bnmf_fill_diag(const double *G, const double *se, const double *gm, int K,
                                 double *dg, double *a)
{
    int direct = 0;
    for (int k = 0; k < K; k++) {
        const double gkk = G[k + (size_t) k * K];
        dg[k] = gkk - se[K + k];
        if (!(dg[k] >= FILL_CANCEL * gkk)) direct = 1;
        a[k] = gm[k] > 0.0 ? sqrt(se[k] / gm[k]) : 0.0;
    }
    return direct;
}


/* nmf_sweep.c */
void bnmf_W_rows_cond(const nmf_data *d, const nmf_prior *pr, const double *W, int i, int nr,
                      int rows, double tau, nmf_rule rule, sweep_work *w);

/* nmf_work.c */
double *bnmf_carve(double **buf, size_t n);
double *bnmf_alloc_lines(size_t n);

/* nmf_scale.c */
void bnmf_balance_scales(const nmf_data *d, const nmf_prior *pr, double *W, double *H,
                         const vb_part *vb);
int bnmf_scale_fits_max(double mw, double mh, int I, int J, double u);
int bnmf_scale_step(double A, double B, double p, double *u);
void bnmf_scale_range_error(int k, double c);

/* nmf_run.c: the sums and objectives the fit by blocks of samples shares
 * (nmf_blocks.c) */
double bnmf_sum_log_rates(const double *lam, size_t n);
double bnmf_exp_log_kernel(const double *z, const double *lam, size_t n);
double bnmf_sum_vec(const double *v, size_t n);
double bnmf_vb_elbo(const nmf_data *d, const nmf_prior *pr, const double *W,
                    const double *H, const vb_part *vb, double esse,
                    double tau_shape, double tau_rate, const double *lambda,
                    const double *lambda_rate, double log_rates, const double *hterms,
                    double *loglik_out);
double bnmf_log_joint(const nmf_data *d, const nmf_prior *pr, const double *W,
                      const double *H, double tau, const double *lambda, double sse,
                      double log_rates, const double *hterms, double *loglik);

/* nmf_moments.c: WH's moments by batches of draws (see there) */
typedef struct {
    int cap, n;            /* draws a batch can hold; draws held */
    double *W, *H, *inv_n; /* their copies of W and H, each one's 1 / n */
    double *S;             /* a tile of W H (cap 1: a block of columns) */
} wh_batch;
size_t bnmf_wh_work_len(int I, int J, int K);
void bnmf_wh_batch_init(const nmf_data *d, wh_batch *b, double **buf);
void bnmf_wh_batch_flush(const nmf_data *d, wh_batch *b, nmf_state *st);
void bnmf_keep_sweep(const nmf_data *d, const nmf_prior *pr, nmf_state *st,
                     const sweep_ctrl *c, sweep_out *out, int *kept, int n_draws,
                     wh_batch *whb, sweep_work *ws);
void bnmf_block_keep(const nmf_data *d, const double *W, const double *H, double *H_mean,
                     double *H_m2, double inv_n, double *WH_mean, double *WH_m2,
                     double inv_wh, sweep_work *ws);

#endif
