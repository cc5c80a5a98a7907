/* pois.h -- types and kernels of the Poisson likelihood (pois_nmf.c,
 * pois_vb.c, pois_gibbs.c, pois_ssvi.c): the positive observed counts in column and row order, the
 * Gamma priors and the beta-process hyper-parameters. */
#ifndef BNMF_POIS_H
#define BNMF_POIS_H
#include "nmf.h"

/*
 * The counts a sweep reads: only the positive observed entries (a zero count
 * enters the sweeps through sums of the factors alone; a missing entry not
 * at all), by column (cp, ri, xv: CSC, built from a dense X or a dgCMatrix
 * alike, so that dense and sparse input give the same numbers) and, when
 * asked, by row (rp, cj, rx: built here, or the R vectors the VB sweeps
 * keep across calls, see pois_rows_attach()). `d` holds the dimensions and the missing
 * entries, listed by row and by column (prepare_data()).
 */
typedef struct {
    const nmf_data *d;
    int I, J, K;
    int nnz;
    const int *cp, *ri;  /* column pointers (J + 1), row of each count */
    const double *xv;    /* the counts, column order (the dgCMatrix's own
                          * arrays when every stored value is a positive
                          * count: no copy) */
    int *rp, *cj;        /* row pointers (I + 1), column of each count (row order) */
    double *rx;          /* the counts, row order */
    double lfact;        /* sum over the observed entries of log X_ij! */
    int threads;         /* threads of the ratio passes (1 unless set) */
} pois_data;

/* Gamma(a, b) entries of W, Gamma(c, d) of H (shape, rate); the beta
 * process: pi^W_k ~ Beta(a0W / K, b0W (K - 1) / K), the same for H. With
 * ard = 1 the rates b, d are replaced by one rate per factor,
 * W_ik ~ Gamma(a, lambda_k), H_kj ~ Gamma(c, lambda_k),
 * lambda_k ~ Gamma(alpha0, beta0) (VB, Gibbs). */
typedef struct {
    double a, b, c, d;
    double a0W, b0W, a0H, b0H;
    int ard;
    double alpha0, beta0;
} pois_prior;


/* The states of the .Call entries, read by name in rlist.c (pointers into
 * the lists, updated in place). VB (pois_vb.c): q's Gamma factors, their
 * means and the ELBO. */
typedef struct {
    double *alW, *beW, *alH, *beH, *W, *H, *elbo;
    double *alL, *beL;   /* ARD: q(lambda_k) = Gamma(alL_k, beL_k); NULL without */
} pois_vb_state;

/* Gibbs (pois_gibbs.c) */
typedef struct {
    double *W, *H, *logpost, *n_kept;
    double *W_sum, *W_sq, *H_sum, *H_sq, *WH_sum; /* WH_sum: NULL unless dense */
    double *lambda, *lambda_sum;  /* ARD: the current rates and their running sum; NULL without */
} pois_gibbs_state;

/* SSVI (pois_ssvi.c) */
typedef struct {
    double *nuW, *rhoW, *nuH, *rhoH;     /* q(W), q(H) */
    double *alW, *beW, *alH, *beH;       /* q(piW_k), q(piH_k) */
    int *SW, *SH;                        /* the masks (I x K, K x J) */
    double *W, *H;                       /* the last draws */
    double *steps;                       /* global steps taken so far */
    double *n_acc, *SW_sum, *SH_sum, *WS_sum, *HS_sum; /* final averages */
} ssvi_state;

/* The passes over the counts read (and add into) a row of K values of
 * a factor at a random place for each count: a cache miss on large data,
 * which the processor overlaps with the work of at most a count or two.
 * So each pass asks for the rows of the count BNMF_POIS_PF counts ahead
 * (the rows of At or Wt, and of the arrays it adds into). */
#define BNMF_POIS_PF 8
#if defined(__GNUC__)
#define BNMF_PF_ROW(r, K, rw)                                                     \
    do {                                                                        \
        const double *pf_r_ = (r);                                              \
        for (int pf_l_ = 0; pf_l_ < (K); pf_l_ += 8) __builtin_prefetch(pf_r_ + pf_l_, rw); \
        __builtin_prefetch(pf_r_ + (K) - 1, rw);                                \
    } while (0)
#else
#define BNMF_PF_ROW(r, K, rw) ((void) 0)
#endif

/* rlist.c: the Poisson lists by name */
void bnmf_pois_read_prior(SEXP prior, int beta, pois_prior *pp);
double bnmf_pois_ctrl(SEXP ctrl, const char *name);
int bnmf_pois_count(SEXP ctrl, const char *name, int lo);
void bnmf_pois_read_q(SEXP state, const pois_data *pd, double **alW, double **beW,
                      double **alH, double **beH);
void bnmf_pois_read_vb_state(SEXP state, const pois_data *pd, pois_vb_state *q);
void bnmf_pois_read_gibbs_state(SEXP state, const pois_data *pd, pois_gibbs_state *st);
void bnmf_pois_read_vb_lambda(SEXP state, const pois_data *pd, pois_vb_state *q);
void bnmf_pois_read_gibbs_lambda(SEXP state, const pois_data *pd, pois_gibbs_state *st);
void bnmf_pois_read_ssvi_state(SEXP state, const pois_data *pd, ssvi_state *st);
int *bnmf_pois_mask_elt(SEXP list, const char *name, R_xlen_t len);

/* pois_nmf.c: the data and the kernels shared by VB, Gibbs and SSVI */
void bnmf_pois_data(const nmf_data *d, const double *x, int by_row, pois_data *pd);
void bnmf_pois_data_known(const nmf_data *d, const double *x, int by_row, const double *known,
                          pois_data *pd);
void bnmf_pois_read(SEXP data, SEXP x, int K_needed, int by_row, nmf_data *d,
                    pois_data *pd);
void bnmf_pois_read_args(SEXP data, SEXP x, SEXP prior, int by_row, int beta, nmf_data *d,
                         pois_data *pd, pois_prior *pp);
void bnmf_pois_read_known(SEXP data, SEXP x, SEXP prior, SEXP ctrl, nmf_data *d, pois_data *pd,
                          pois_prior *pp);
SEXP bnmf_pois_block_list(int n, const char **names, SEXP *v, const pois_data *pd);
void bnmf_pois_obs_sums(const nmf_data *d, const double *M, int rows_of_W,
                        double *out);
double bnmf_pois_sum_obs_wh(const nmf_data *d, const double *W, const double *H);
double bnmf_pois_ratio_pass(const pois_data *pd, const double *At, const double *B,
                            double *NAt, double *NB, int want_lik);
double bnmf_pois_ratio_rows(const pois_data *pd, const double *At, const double *B, double *NAt,
                            int want_lik);
double bnmf_gamma_log_prior(const double *Z, R_xlen_t n, double shape, double rate);

#endif
