/*
 * cond.h -- the Gaussian conditional of a block given "the other side"
 * (cond_row.c, vb_rows.c, cond_sub.c, gram.c; their shared inline pieces in
 * cond_kern.h), shared by every model with a Gaussian likelihood and
 * exponential priors on non-negative factors.
 *
 * A row z (K values) of a factor whose contribution to the data is z' Z
 * (Z: K x n, "the other side": H for the rows of W, W' for the columns of H,
 * S G' for the rows of F in a tri-factorisation) has the conditional
 *   p(z | .) propto exp(-tau/2 z' G z + tau z' b - lam' z),  z >= 0,
 * with G = Z Z' (K x K) and b = Z x (K values) over the observed entries.
 * The caller supplies G and b; these kernels never look at Z itself.
 */
#ifndef BNMF_COND_H
#define BNMF_COND_H
#include "bnmf.h"

/*
 * What a sweep does with each conditional N+(mu, 1/p): draw it (Gibbs), take
 * its mode (ICM), or take its moments (variational Bayes: q(z_k) is that
 * truncated normal with expectations in place of the other variables). Or a
 * Lee-Seung multiplicative update of a whole row (Euclidean loss, no prior).
 */
typedef enum { RULE_DRAW = 0, RULE_MODE = 1, RULE_MOMENT = 2, RULE_MULT = 3 } nmf_rule;

/* How the factor Z of an expected Gram matrix is stored. */
typedef enum {
    GRAM_ROWS = 0, /* Z is K x n: G = Z Z' (the rows of H for the rows of W) */
    GRAM_COLS = 1  /* Z is n x K: G = Z' Z (the columns of W for those of H) */
} gram_layout;

double bnmf_cond_step(nmf_rule rule, double s, double gkk, double lk, double tau,
                      double zk, double *v, double *ent);
double bnmf_cond_row_pass(double *z, const double *G, const double *b,
                          const double *lam, int ls, double tau, int K, int first,
                          nmf_rule rule, double *v, double *ent);
void bnmf_cond_row(double *z, const double *G, const double *b, const double *lam,
                   int ls, double tau, int K, int first, nmf_rule rule, double *v,
                   double *ent);
/* Rows of a block updated together by bnmf_cond_rows(). */
#define COND_BLOCK 4
void bnmf_cond_rows(double *z, const double *G, const double *b,
                    const double *const *lam, int ls, double tau, int K, int nr,
                    nmf_rule rule, double *v, double *ent);
void bnmf_idx_sums(double *vs, const double *V, const int *idx, int nm, int K);
void bnmf_vb_rows_diag(double *z, const double *G, const double *b, const double *dg,
                       const double *a, double *u, const double *const *lam, int ls,
                       double tau, int K, int nr, double *v, double *ent);
void bnmf_expected_gram(const double *Z, const double *V, int K, int n,
                        gram_layout layout, double *G);
void bnmf_gram_update(double *G, const double *G0, const double *base, int stride,
                      const int *idx, int n, int K, double sign);
double bnmf_mult_row_masked(double *z, const double *G, const double *b,
                            const double *other, int n, const int *miss, int nm, int K,
                            int *obs, double *den, double *q);
const double *bnmf_masked_gram(double *Gi, const double *Gfull, const double *other,
                               int ostride, int n, const int *miss, int nm, int K,
                               int *obs, const double *V, size_t vstride,
                               size_t kstride);
double bnmf_quad_form(const double *G, const double *z, int K);

/*
 * A row whose Gram matrix is a full one, G, less the terms of a few of the
 * other side's vectors (the row's missing entries), updated without forming
 * its own matrix (bnmf_cond_row_sub): the vectors gathered by coordinate.
 */
typedef struct {
    int nm;        /* how many vectors */
    double *O;     /* K (nm + 1): O[t + k np] = coordinate k of vector t, np =
                    * nm rounded up to even (zero padded) */
    double *r;     /* nm + 1: r[t] = z' o_t (t < nm), kept current by the
                    * passes */
    double *osq;   /* K: sum_t o_tk^2 (from the first pass of
                    * bnmf_cond_row_sub) */
    double *gkk;   /* K: the row's Gram diagonal (VB: with the variances);
                    * after the gather only the variance sums (VB, else 0),
                    * the diagonal from the first pass on */
} cond_sub;
void bnmf_cond_sub_gather(cond_sub *cs, const double *other, const double *V,
                          const int *idx, int nm, int K, const double *z);
void bnmf_cond_row_sub(double *z, const double *G, const double *b, const double *lam,
                       int ls, double tau, int K, nmf_rule rule, double *v, double *ent,
                       cond_sub *cs);
double bnmf_cond_sub_quad(const cond_sub *cs, const double *G, const double *z,
                          const double *v, int K);

#endif
