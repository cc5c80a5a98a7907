/* nmtf.h -- types of the Gaussian tri-factorisation X ~ F S G' (nmtf_*.c):
 * its prior, its chain state and the controls of a run of sweeps. The data
 * are the nmf_data of nmf.h (with K the number of row factors). */
#ifndef BNMF_NMTF_H
#define BNMF_NMTF_H
#include "nmf.h"

/*
 * The prior: F_ik ~ Exp(rate_F), S_kl ~ Exp(rate_S), G_jl ~ Exp(rate_G),
 * tau ~ Gamma(alpha, beta); with ARD (ard = 1) F_ik ~ Exp(lambda^F_k) and
 * G_jl ~ Exp(lambda^G_l), the rates Gamma(alpha0, beta0), S keeps rate_S.
 */
typedef struct {
    double rate_F, rate_S, rate_G;
    double alpha, beta;
    int ard;
    double alpha0, beta0;
} nmtf_prior;

/*
 * A chain's state, read by name from the list nmtf_new_state() makes in R
 * (pointers into that list: the sweeps update it in place). Parts a run does
 * not use are NULL. For VB, F, S, G, tau and the lambdas hold the means of q.
 */
typedef struct {
    int K, L;
    double *F, *S, *G, *tau, *x, *sumsq, *logpost, *n_kept;
    double *lamF, *lamG;
    double *F_mean, *F_m2, *S_mean, *S_m2, *G_mean, *G_m2, *tau_mean, *tau_m2;
    double *X_mean, *X_m2, *row_hits, *col_hits;
    double *lamF_mean, *lamF_m2, *lamG_mean, *lamG_m2;
    double *F_var, *S_var, *G_var, *F_ent, *S_ent, *G_ent, *tau_rate;
    double *lamF_rate, *lamG_rate;
} nmtf_state;

/* The controls of a run (the named list `ctrl` of nmtf_sweeps). */
typedef struct {
    int n;
    nmf_rule rule;
    int kl;            /* RULE_MULT: the I-divergence updates of Yoo & Choi */
    int accumulate, thin, keep_draws;
    int update_F, update_S, update_G, update_tau;
    int scale;         /* the moves along the scale paths (scale_steps in nmtf_run.c) */
    double tol;
} nmtf_ctrl;

void bnmf_read_nmtf_ctrl(SEXP ctrl, nmtf_ctrl *c);

/* ---- internal to the tri-factorisation's files: nmtf_sweep.c (the scratch
 * and the rows of F and G), nmtf_s.c (the entries of S and the SSE),
 * nmtf_kl.c (the I-divergence updates), nmtf_run.c (the driver, the
 * objective and the .Call entry) ---- */

#define NMTF_BLOCK 64

/* Scratch of a run of sweeps (R_alloc). */
typedef struct {
    nmf_data dK, dL;        /* the data with K = K (F side) and K = L (G side) */
    double *Q, *D;          /* I x L: X G;  I x K: X G S' */
    double *P, *E;          /* K x J: F' X;  L x J: S' F' X */
    double *Ft, *Gt, *Ht;   /* K x I, L x J, J x L */
    double *A, *B, *Ai, *Bi;/* E[F'F], E[G'G] (K x K, L x L) and masked copies */
    double *CF, *CG, *Ci;   /* Gram matrices of the rows of F (K x K), G (L x L); row's */
    double *T, *Bd, *tmp, *tmp2; /* K x L: A S B, F' X G; K x L scratch x 2 */
    double *r, *u, *v;      /* missing entries m: (FSG')_ij; S G_j' and F_i S (K x nmiss,
                             * L x nmiss: each k streams through the entries) */
    double *Hm;             /* K x J: S G' (VB with missing entries) */
    double *zrow, *brow, *vrow, *erow, *lamF, *lamG;
    double *W, *blk;        /* I x L: F S; I x NMTF_BLOCK (fitted means) */
    double *Z, *den, *Wt;   /* KL: X / (F S G') at the stored entries; S's
                             * denominators; (F S)' */
    /* update_S by the matrix of the missing entries' terms (s_by_matrix):
     * Cs (K L x K L), Cq ((K^2 + K) x (L^2 + L)), row blocks Yb and Zb of
     * its product, Pm and mc (K x L), a row's Gam (L x L) and gam (L) */
    double *Cs, *Cq, *Yb, *Zb, *Pm, *mc, *Gam, *gam;
    double *Tb, *ts;        /* VB, missing entries: per column (S G')^2, Var G, E[G^2]
                             * (K + 2 L values each, sse_missing), and a row's sums */
    double *Vt;             /* VB, missing entries: G_var' (L x J) or F_var' (K x I),
                             * the transpose the step at hand needs */
    int *obs;
} nmtf_work;

/* rlist.c: the state and the prior, by name */
void bnmf_read_nmtf_state(SEXP state, const nmf_data *d, int K, int L, int ard, int acc,
                          int vb, nmtf_state *st);
void bnmf_read_nmtf_prior(SEXP prior, nmtf_prior *pr);

/* nmtf_sweep.c */
void nmtf_work_alloc(const nmf_data *d, int K, int L, int vb, int kl, int acc,
                     nmtf_work *w);
void nmtf_mat_mult(const char *ta, const char *tb, int m, int n, int k, const double *Am,
                   int lda, const double *Bm, int ldb, double *C);
void nmtf_update_F(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb,
                   nmtf_work *w);
void nmtf_f_side(const nmf_data *d, nmtf_state *st, int vb, nmtf_work *w);
void nmtf_update_G(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb,
                   nmtf_work *w);
void nmtf_g_side(const nmf_data *d, nmtf_state *st, int vb, nmtf_work *w);

/* nmtf_s.c */
int nmtf_s_by_matrix(const nmf_data *d, int K, int L);
void nmtf_miss_products(const nmf_data *d, const nmtf_state *st, nmtf_work *w);
void nmtf_update_S(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb, double rate,
                   nmtf_work *w);
double nmtf_sse(const nmf_data *d, const nmtf_state *st, int vb, nmtf_work *w);

/* nmtf_kl.c */
double nmtf_kl_sweep(const nmf_data *d, nmtf_state *st, const nmtf_ctrl *c, nmtf_work *w);

#endif
