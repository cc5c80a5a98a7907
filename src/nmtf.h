/* nmtf.h -- types of the Gaussian tri-factorisation X ~ F S G' (nmtf_sweep.c):
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
    double tol;
} nmtf_ctrl;

void bnmf_read_nmtf_ctrl(SEXP ctrl, nmtf_ctrl *c);

#endif
