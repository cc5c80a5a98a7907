/* cond_kern.h -- the inline pieces of the Gaussian conditional shared by
 * its files (cond_row.c: rows and blocks of rows; vb_rows.c: VB's imputing
 * rows; cond_sub.c: rows with a few missing entries; gram.c: the masked
 * Gram matrices): one coordinate's step, the multiplicative rule's pieces,
 * ICM's passes. See cond.h for the roles. */
#ifndef BNMF_COND_KERN_H
#define BNMF_COND_KERN_H
#include "nmf.h"
#include "truncnorm.h"

/* Inlined where the rule is known at compile time (bnmf_cond_rows), so
 * that the branches on the rule fold away. */
/**
 * The rule applied to one coordinate's conditional.
 * @param rule RULE_DRAW, RULE_MODE or RULE_MOMENT (not RULE_MULT)
 * @param s    b_k - sum_{l != k} G[k,l] z_l
 * @param gkk  G[k,k] (0: the data say nothing; the prior Exp(lk) is used)
 * @param lk   the coordinate's exponential rate
 * @param tau  noise precision (VB: its expectation)
 * @param zk   the coordinate's current value (kept by ICM when lk = 0 = gkk)
 * @param v, ent  VB: receive the variance and entropy of q (else untouched)
 * @return the coordinate's new value
 */
static ALWAYS_INLINE double cond_step(nmf_rule rule, double s, double gkk, double lk,
                                      double tau, double zk, double *v, double *ent)
{
    double znew;
    if (gkk > 0.0) {
        const double mu = (s - lk / tau) / gkk;
        if (rule == RULE_DRAW) {
            /* a call, not bnmf_rtnorm_pos_a: cond_step is inlined where the
             * rule is a variable (ICM's and VB's masked rows), and the
             * inline draw's loops would weigh on those kernels */
            znew = bnmf_rtnorm1(mu, 1.0 / sqrt(tau * gkk), 0.0, R_PosInf);
        } else if (rule == RULE_MODE) {
            znew = mu > 0.0 ? mu : 0.0;
        } else {
            tn_pos_vb(mu, 1.0 / sqrt(tau * gkk), NULL, &znew, v, ent);
        }
    } else {
        /* The conditional is the prior Exp(lk) (proper, lk > 0, for Gibbs
         * and VB). */
        if (rule == RULE_DRAW) {
            const int lent = bnmf_rng_lend();   /* exp_rand() draws from R's own state */
            znew = exp_rand() / lk;
            bnmf_rng_reclaim(lent);
        } else if (rule == RULE_MODE) {
            znew = lk > 0.0 ? 0.0 : zk;
        } else {
            znew = 1.0 / lk;
            *v = znew * znew;
            *ent = 1.0 - log(lk);
        }
    }
    return znew;
}

/* den = G z (the multiplicative rule's denominators) */
static inline void mult_gz(const double *G, const double *z, int K, double *den)
{
    for (int k = 0; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        double s = 0.0;
        for (int l = 0; l < K; l++) s += gk[l] * z[l];
        den[k] = s;
    }
}

/* z_k <- z_k max(b_k, 0) / den_k where den_k > 0; returns sum_k |change| */
static inline double mult_apply(double *z, const double *b, const double *den, int K)
{
    double change = 0.0;
    for (int k = 0; k < K; k++) {
        if (den[k] > 0.0) {
            const double znew = z[k] * (b[k] > 0.0 ? b[k] : 0.0) / den[k];
            change += fabs(znew - z[k]);
            z[k] = znew;
        }
    }
    return change;
}

/* ICM makes up to ICM_MAX_PASSES coordinate passes over a row (stopping
 * early once the row no longer moves): a pass costs O(K^2) against O(J K)
 * for the row's share of the products, and a few passes move the row much
 * closer to its block maximum. Measured at I = J = 1000, K = 20 (bench/):
 * with 3 passes a sweep costs about 1.15x the products and reaches RcppML's
 * error in about 0.96x its time; 10 passes reach it sooner (0.6-0.85x) but
 * cost about 1.5x per sweep. Gibbs, VB and the multiplicative updates make
 * one pass. */
#define ICM_MAX_PASSES 3

/* ICM: whether a row that moved by `change` (sum_k |dz_k|) in its last pass
 * still moves, relative to its size, and gets another pass. */
static inline int icm_row_moves(const double *z, int K, double change)
{
    double size = 0.0;
    for (int k = 0; k < K; k++) size += z[k];
    return !(change <= 1e-8 * size);
}

#define ZT_MAX 256


/* The block's shared sd = 1 / sqrt(tau G[k,k]) of coordinate k (Gibbs and
 * VB; 0 for ICM, which needs none, and where G[k,k] = 0) */
static ALWAYS_INLINE double block_sd(nmf_rule rule, double gkk, double tau)
{
    return rule != RULE_MODE && gkk > 0.0 ? 1.0 / sqrt(tau * gkk) : 0.0;
}

/* The n - nm indices among 0..n-1 not in the sorted miss[0..nm) into obs;
 * returns n - nm. */
static inline int observed_idx(const int *miss, int nm, int n, int *obs)
{
    int m = 0, no = 0;
    for (int t = 0; t < n; t++) {
        if (m < nm && miss[m] == t) {
            m++;
            continue;
        }
        obs[no++] = t;
    }
    return no;
}

#if defined(__clang__)
#define VS_UNROLL _Pragma("unroll")
#else
#define VS_UNROLL _Pragma("GCC unroll 10")
#endif

#endif
