/* nmf.h -- types and kernels shared by the NMF samplers and optimisers. */
#ifndef BNMF_NMF_H
#define BNMF_NMF_H
#include "bnmf.h"

/*
 * The data of a fit. The values `x` live in the fit's state (they are modified
 * in place when missing entries are latent variables), everything else is
 * read-only.
 *
 * Missing entries are listed three ways: by position in the value array
 * (`miss_pos`, with row `miss_i` and column `miss_j`, sorted by column, so
 * that `mcol_ptr[j] .. mcol_ptr[j + 1]` are the missing entries of column j),
 * and by row (`mrow_ptr`, `mrow_j`: the columns missing in row i).
 */
typedef struct {
    int I, J, K;
    int sparse;              /* 0: dense I x J; 1: compressed sparse columns */
    const int *xi, *xp;      /* sparse: row index per value, column pointers */
    int nmiss;
    const int *miss_pos, *miss_i, *miss_j;
    const int *mcol_ptr, *mrow_ptr, *mrow_j;
    R_xlen_t nx;             /* number of stored values (I J, or nnz) */
    double sumsq_obs;        /* sum of X_ij^2 over the observed entries */
    double n_obs;            /* number of observed entries |Omega| */
} nmf_data;

/*
 * The prior: exponential rates of the shape of W and H, Gamma(alpha, beta)
 * for tau. With ARD (ard = 1) the rates are lamW[, k] = lamH[k, ] = lambda_k,
 * lambda_k ~ Gamma(alpha0, beta0); the sweep then refreshes lamW and lamH
 * (scratch copies) from the current lambda.
 */
typedef struct {
    double *lamW, *lamH;
    double alpha, beta;
    int ard;
    double alpha0, beta0;
} nmf_prior;

/*
 * What a sweep does with each conditional N+(mu, 1/p): draw it (Gibbs), take
 * its mode (ICM), or take its moments (variational Bayes: q(W_ik) is that
 * truncated normal with expectations in place of the other variables). Or a
 * Lee-Seung multiplicative update of a whole row (Euclidean loss, no prior).
 */
typedef enum { RULE_DRAW = 0, RULE_MODE = 1, RULE_MOMENT = 2, RULE_MULT = 3 } nmf_rule;

/* nmf_sweep.c: reading the R lists of the engine */
SEXP bnmf_list_get(SEXP list, const char *name);
double *bnmf_real_elt(SEXP list, const char *name, R_xlen_t len);
const int *bnmf_int_elt(SEXP list, const char *name, R_xlen_t len);
void bnmf_read_data(SEXP data, int K_needed, nmf_data *d);
const double *bnmf_read_ctrl(SEXP ctrl, int n);
void bnmf_check_factors(const double *W, const double *H, int I, int J, int K);

/* linalg.c */
void bnmf_gram_rows(const double *H, int K, int J, double *G);
void bnmf_gram_cols(const double *W, int I, int K, double *G);
void bnmf_x_ht(const nmf_data *d, const double *x, const double *H, double *D,
               double *Ht);
void bnmf_wt_x(const nmf_data *d, const double *x, const double *W, double *F,
               double *Wt);
double bnmf_wh_entry(const double *W, const double *H, int I, int K, int i, int j);

#endif
