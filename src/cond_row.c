/*
 * cond_row.c -- the Gaussian conditional of a row of a factor given the
 * other side, and the rule applied to it (draw, mode, moments, or a
 * multiplicative step), for one row or a block of rows that share their
 * Gram matrix. See cond.h for the roles.
 *
 * A row z (K values) with Gram matrix G and right-hand side b (cond.h) has,
 * for coordinate k given the others, the conditional N+(mu, 1/p) (a normal
 * truncated to [0, inf)) with
 *   p  = tau G[k,k],
 *   mu = (b_k - sum_{l != k} G[k,l] z_l - lam_k / tau) / G[k,k].
 * Gibbs draws it, ICM takes its mode max(mu, 0), VB takes its moments and
 * entropy (z_k is then the mean of q(z_k); G is the expected Gram matrix
 * E[Z Z'] = Zbar Zbar' + diag(sum_t Var Z_kt) and tau is E[tau]). When
 * G[k,k] = 0 the data say nothing about z_k and its conditional is the prior
 * Exp(lam_k). The multiplicative rule (Lee & Seung 2001) replaces the K
 * coordinate steps by z_k <- z_k b_k / (G z)_k.
 *
 * Rows with missing entries get their own Gram matrix from gram.c, or are
 * updated without one by cond_sub.c.
 */
#include "bnmf_call.h"
#include "cond_kern.h"
#include <string.h>

/* cond_step() for callers with the rule in a variable. */
double bnmf_cond_step(nmf_rule rule, double s, double gkk, double lk, double tau,
                      double zk, double *v, double *ent)
{
    return cond_step(rule, s, gkk, lk, tau, zk, v, ent);
}

/**
 * One pass over the K coordinates of a row, in turn.
 * @param z    the row (K values, contiguous), updated in place
 * @param G    K x K Gram matrix of the other side for this row (VB: the
 *             expected Gram matrix)
 * @param b    K values: the data projected on the other side
 * @param lam  K exponential rates, stride ls
 * @param tau  noise precision (VB: its expectation)
 * @param first coordinates k < first are held fixed (Chib's reduced runs)
 * @param rule the rule (RULE_MULT: all K coordinates at once)
 * @param v, ent K values of scratch; VB: receive the variances and entropies
 * @return sum_k |change of z_k|
 */
double bnmf_cond_row_pass(double *z, const double *G, const double *b,
                          const double *lam, int ls, double tau, int K, int first,
                          nmf_rule rule, double *v, double *ent)
{
    double change = 0.0;
    if (rule == RULE_MULT) {
        /* z_k <- z_k b_k / (G z)_k: minimises the Euclidean loss's auxiliary
         * function (Lee & Seung 2001), so the loss never increases. */
        mult_gz(G, z, K, v);
        return mult_apply(z, b, v, K);
    }
    for (int k = first; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        const double gkk = gk[k];
        double s = b[k];
        for (int l = 0; l < K; l++) s -= gk[l] * z[l];
        s += gkk * z[k];
        const double znew = bnmf_cond_step(rule, s, gkk, lam[(size_t) k * ls], tau, z[k],
                                           v + k, ent + k);
        change += fabs(znew - z[k]);
        z[k] = znew;
    }
    return change;
}

/**
 * Update a row by its rule: one pass (Gibbs, VB, multiplicative) or, for
 * ICM, passes until the row stops moving (at most ICM_MAX_PASSES): each is
 * an exact maximisation along coordinates, so the log posterior never
 * decreases. Arguments as for bnmf_cond_row_pass.
 */
void bnmf_cond_row(double *z, const double *G, const double *b, const double *lam,
                   int ls, double tau, int K, int first, nmf_rule rule, double *v,
                   double *ent)
{
    double change = bnmf_cond_row_pass(z, G, b, lam, ls, tau, K, first, rule, v, ent);
    if (rule != RULE_MODE) return;
    for (int pass = 1; pass < ICM_MAX_PASSES && icm_row_moves(z, K, change); pass++)
        change = bnmf_cond_row_pass(z, G, b, lam, ls, tau, K, first, rule, v, ent);
}

#if defined(__GNUC__)
/* two doubles, one SIMD register where the machine has them (the vector
 * extension of GCC and clang; elsewhere the compiler splits it) */
typedef double v2d __attribute__((vector_size(16)));
#endif
/* the largest K whose block of four rows is interleaved on the stack */

/* The end of a coordinate step with G[k,k] > 0 and the conditional's
 * mean mu computed (block_step, or two rows at a time): cond_step's mode
 * (ICM), draw (Gibbs, with the block's sd) or moments (VB, with the block's
 * sd and its log). */
static ALWAYS_INLINE void lane_step(double *zr, double mu, double a, int k, nmf_rule rule,
                                     double sd, double *lsd, double *vr, double *er,
                                     double *change)
{
    double znew;
    if (rule == RULE_MODE) znew = mu > 0.0 ? mu : 0.0;
    else if (rule == RULE_DRAW) znew = bnmf_rtnorm_pos_a(mu, sd, a);
    else tn_pos_vb(mu, sd, lsd, &znew, vr + k, er + k);
    *change += fabs(znew - zr[k]);
    zr[k] = znew;
}

/* One coordinate step of row r of a block (bnmf_cond_rows): the arithmetic
 * of bnmf_cond_row_pass for coordinate k, in its order (cond_step's mean,
 * then lane_step with the block's sd; G[k,k] = 0: cond_step's prior). */
static ALWAYS_INLINE void block_step(double *zr, const double *gk, double s, int k,
                                      const double *lamr, int ls, double tau,
                                      nmf_rule rule, double sd, double *lsd, double *vr,
                                      double *er, double *change)
{
    const double gkk = gk[k];
    s += gkk * zr[k];
    if (gkk > 0.0) {
        const double mu = (s - lamr[(size_t) k * ls] / tau) / gkk;
        lane_step(zr, mu, rule == RULE_DRAW ? (0.0 - mu) / sd : 0.0, k, rule, sd, lsd, vr,
                  er, change);
        return;
    }
    const double znew = cond_step(rule, s, gkk, lamr[(size_t) k * ls], tau, zr[k], vr + k,
                                  er + k);
    *change += fabs(znew - zr[k]);
    zr[k] = znew;
}

/**
 * bnmf_cond_row() on nr rows (1 <= nr <= COND_BLOCK) that share G, for
 * Gibbs, ICM and VB. Row r has its values at z + r K, its right-hand side
 * at b + r K, its rates at lam[r][k * ls] and, for VB, its variances and
 * entropies at v + r K and ent + r K. Each row gets exactly the arithmetic
 * of bnmf_cond_row(), in the same order (and ICM the same passes), so the
 * ICM and VB results are bit for bit those of nr calls of it. What differs
 * is the interleaving: within one row, coordinate k + 1 waits on the new
 * z_k through a chain of K dependent multiply-adds and a division, and the
 * processor sits idle in that chain; the rows of a block are independent
 * given the other side, so their coordinate k is computed together and the
 * chains overlap (at I = J = 1000, K = 20 the coordinate passes of an ICM
 * sweep then cost about a third of their time row by row). Gibbs draws
 * coordinate k of rows 0, 1, 2, 3, then coordinate k + 1: each draw is
 * still from its row's full conditional given everything drawn before it
 * (the rows are conditionally independent), so the sweep is the same
 * Gibbs kernel, its random numbers taken in another order than row by row.
 * Not for the multiplicative rule.
 */
static ALWAYS_INLINE void cond_rows(double *z, const double *G, const double *b,
                                     const double *const *lam, int ls, double tau, int K,
                                     int nr, nmf_rule rule, double *v, double *ent)
{
    int act[COND_BLOCK];
    double change[COND_BLOCK];
    int na = nr;
    for (int r = 0; r < nr; r++) act[r] = r;
    for (int pass = 0;; pass++) {
        for (int a = 0; a < na; a++) change[act[a]] = 0.0;
        if (na == 4) {
            const int r0 = act[0], r1 = act[1], r2 = act[2], r3 = act[3];
            double *z0 = z + (size_t) r0 * K, *z1 = z + (size_t) r1 * K;
            double *z2 = z + (size_t) r2 * K, *z3 = z + (size_t) r3 * K;
#if defined(__GNUC__)
            /* the four rows interleaved, zt[4 l + r], so that the four sums
             * run as the lanes of two vectors (each lane the same
             * operations in the same order as the scalar sums below) */
            double zt[4 * ZT_MAX];
            const int vec = K <= ZT_MAX;
            if (vec) {
                for (int l = 0; l < K; l++) {
                    zt[4 * l] = z0[l];
                    zt[4 * l + 1] = z1[l];
                    zt[4 * l + 2] = z2[l];
                    zt[4 * l + 3] = z3[l];
                }
            }
#endif
            for (int k = 0; k < K; k++) {
                const double *gk = G + (size_t) k * K;
                /* the rows' shared sd (VB: and, once needed, its log) */
                const double sd = block_sd(rule, gk[k], tau);
                double lsd = NAN;
                double s0 = b[(size_t) r0 * K + k], s1 = b[(size_t) r1 * K + k];
                double s2 = b[(size_t) r2 * K + k], s3 = b[(size_t) r3 * K + k];
#if defined(__GNUC__)
                if (vec) {
                    v2d s01 = {s0, s1}, s23 = {s2, s3};
                    for (int l = 0; l < K; l++) {
                        const v2d g = {gk[l], gk[l]};
                        v2d a, c;
                        memcpy(&a, zt + 4 * l, sizeof a);
                        memcpy(&c, zt + 4 * l + 2, sizeof c);
                        s01 -= g * a;
                        s23 -= g * c;
                    }
                    const double gkk = gk[k];
                    if (gkk > 0.0) {
                        /* block_step's s += G[k,k] z_k and its mean
                         * (s - lam_k / tau) / G[k,k], lane by lane: the
                         * four rows' divisions two at a time */
                        const size_t kl = (size_t) k * ls;
                        const v2d g2 = {gkk, gkk}, t2 = {tau, tau};
                        const v2d zk01 = {z0[k], z1[k]}, zk23 = {z2[k], z3[k]};
                        const v2d l01 = {lam[r0][kl], lam[r1][kl]};
                        const v2d l23 = {lam[r2][kl], lam[r3][kl]};
                        s01 += g2 * zk01;
                        s23 += g2 * zk23;
                        const v2d mu01 = (s01 - l01 / t2) / g2;
                        const v2d mu23 = (s23 - l23 / t2) / g2;
                        /* Gibbs: the draws' a = -mu / sd as -mu sqrt(tau G[k,k]),
                         * four at once, so that no division waits in the chain
                         * from a row's mean to its draw */
                        v2d a01 = {0.0, 0.0}, a23 = a01;
                        if (rule == RULE_DRAW) {
                            const double isd = tau * gkk * sd;
                            const v2d i2 = {isd, isd}, z2v = {0.0, 0.0};
                            a01 = (z2v - mu01) * i2;
                            a23 = (z2v - mu23) * i2;
                        }
                        lane_step(z0, mu01[0], a01[0], k, rule, sd, &lsd,
                                  v + (size_t) r0 * K, ent + (size_t) r0 * K, change + r0);
                        lane_step(z1, mu01[1], a01[1], k, rule, sd, &lsd,
                                  v + (size_t) r1 * K, ent + (size_t) r1 * K, change + r1);
                        lane_step(z2, mu23[0], a23[0], k, rule, sd, &lsd,
                                  v + (size_t) r2 * K, ent + (size_t) r2 * K, change + r2);
                        lane_step(z3, mu23[1], a23[1], k, rule, sd, &lsd,
                                  v + (size_t) r3 * K, ent + (size_t) r3 * K, change + r3);
                        zt[4 * k] = z0[k];
                        zt[4 * k + 1] = z1[k];
                        zt[4 * k + 2] = z2[k];
                        zt[4 * k + 3] = z3[k];
                        continue;
                    }
                    s0 = s01[0];
                    s1 = s01[1];
                    s2 = s23[0];
                    s3 = s23[1];
                } else
#endif
                for (int l = 0; l < K; l++) {
                    const double g = gk[l];
                    s0 -= g * z0[l];
                    s1 -= g * z1[l];
                    s2 -= g * z2[l];
                    s3 -= g * z3[l];
                }
                block_step(z0, gk, s0, k, lam[r0], ls, tau, rule, sd, &lsd,
                           v + (size_t) r0 * K, ent + (size_t) r0 * K, change + r0);
                block_step(z1, gk, s1, k, lam[r1], ls, tau, rule, sd, &lsd,
                           v + (size_t) r1 * K, ent + (size_t) r1 * K, change + r1);
                block_step(z2, gk, s2, k, lam[r2], ls, tau, rule, sd, &lsd,
                           v + (size_t) r2 * K, ent + (size_t) r2 * K, change + r2);
                block_step(z3, gk, s3, k, lam[r3], ls, tau, rule, sd, &lsd,
                           v + (size_t) r3 * K, ent + (size_t) r3 * K, change + r3);
#if defined(__GNUC__)
                if (vec) {
                    zt[4 * k] = z0[k];
                    zt[4 * k + 1] = z1[k];
                    zt[4 * k + 2] = z2[k];
                    zt[4 * k + 3] = z3[k];
                }
#endif
            }
        } else {
            for (int k = 0; k < K; k++) {
                const double *gk = G + (size_t) k * K;
                /* the rows' shared sd (VB: and, once needed, its log) */
                const double sd = block_sd(rule, gk[k], tau);
                double lsd = NAN;
                for (int a = 0; a < na; a++) {
                    const int r = act[a];
                    double *zr = z + (size_t) r * K;
                    double s = b[(size_t) r * K + k];
                    for (int l = 0; l < K; l++) s -= gk[l] * zr[l];
                    block_step(zr, gk, s, k, lam[r], ls, tau, rule, sd, &lsd,
                               v + (size_t) r * K, ent + (size_t) r * K, change + r);
                }
            }
        }
        if (rule != RULE_MODE || pass + 1 >= ICM_MAX_PASSES) break;
        /* ICM: the rows that still move get another pass (bnmf_cond_row) */
        int keep = 0;
        for (int a = 0; a < na; a++) {
            const int r = act[a];
            if (icm_row_moves(z + (size_t) r * K, K, change[r])) act[keep++] = r;
        }
        na = keep;
        if (na == 0) break;
    }
}

void bnmf_cond_rows(double *z, const double *G, const double *b,
                    const double *const *lam, int ls, double tau, int K, int nr,
                    nmf_rule rule, double *v, double *ent)
{
    /* one copy of the kernel per rule, the rule's branches folded away */
    if (rule == RULE_MODE)
        cond_rows(z, G, b, lam, ls, tau, K, nr, RULE_MODE, v, ent);
    else if (rule == RULE_DRAW)
        cond_rows(z, G, b, lam, ls, tau, K, nr, RULE_DRAW, v, ent);
    else
        cond_rows(z, G, b, lam, ls, tau, K, nr, RULE_MOMENT, v, ent);
}


/* .Call entry (tests): Gibbs (rule 0, from R's generator), ICM (rule 1)
 * or VB (rule 2) on the nr columns of the K x nr matrices Z (the rows'
 * values), B (their right-hand sides) and L (their rates), which share the
 * K x K Gram matrix G; together through bnmf_cond_rows (nr <= COND_BLOCK)
 * when `block` is TRUE, else one column at a time through bnmf_cond_row.
 * Returns list(z, v, ent), K x nr each. */
SEXP bnmf_cond_rows_call(SEXP G, SEXP B, SEXP Z, SEXP L, SEXP par)
{
    if (TYPEOF(Z) != REALSXP || !Rf_isMatrix(Z)) Rf_error("`Z` must be a double matrix");
    const int K = Rf_nrows(Z), nr = Rf_ncols(Z);
    if (TYPEOF(G) != REALSXP || !Rf_isMatrix(G) || Rf_nrows(G) != K || Rf_ncols(G) != K)
        Rf_error("`G` must be a double K x K matrix");
    if (TYPEOF(B) != REALSXP || XLENGTH(B) != XLENGTH(Z))
        Rf_error("`B` must be a double matrix of the shape of `Z`");
    if (TYPEOF(L) != REALSXP || XLENGTH(L) != XLENGTH(Z))
        Rf_error("`L` must be a double matrix of the shape of `Z`");
    if (TYPEOF(par) != REALSXP || XLENGTH(par) != 3)
        Rf_error("`par` must be c(tau, rule, block)");
    const double tau = REAL(par)[0];
    const int r = (int) REAL(par)[1], block = REAL(par)[2] != 0.0;
    if (!(tau > 0.0) || !R_FINITE(tau)) Rf_error("`tau` must be positive and finite");
    if (r != RULE_DRAW && r != RULE_MODE && r != RULE_MOMENT)
        Rf_error("`rule` must be 0 (Gibbs), 1 (ICM) or 2 (VB)");
    if (block && (nr < 1 || nr > COND_BLOCK))
        Rf_error("a block holds 1 to %d rows", COND_BLOCK);
    const nmf_rule rule = (nmf_rule) r;
    const char *nm[] = {"z", "v", "ent", ""};
    SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
    SEXP z = PROTECT(Rf_duplicate(Z));
    SEXP v = PROTECT(Rf_allocMatrix(REALSXP, K, nr));
    SEXP ent = PROTECT(Rf_allocMatrix(REALSXP, K, nr));
    SET_VECTOR_ELT(out, 0, z);
    SET_VECTOR_ELT(out, 1, v);
    SET_VECTOR_ELT(out, 2, ent);
    double *pz = REAL(z), *pv = REAL(v), *pe = REAL(ent);
    for (R_xlen_t t = 0; t < XLENGTH(v); t++) pv[t] = pe[t] = 0.0;
    if (rule == RULE_DRAW) bnmf_rng_get(0);
    if (block) {
        const double *lam[COND_BLOCK];
        for (int c = 0; c < nr; c++) lam[c] = REAL(L) + (size_t) c * K;
        bnmf_cond_rows(pz, REAL(G), REAL(B), lam, 1, tau, K, nr, rule, pv, pe);
    } else {
        for (int c = 0; c < nr; c++)
            bnmf_cond_row(pz + (size_t) c * K, REAL(G), REAL(B) + (size_t) c * K,
                          REAL(L) + (size_t) c * K, 1, tau, K, 0, rule,
                          pv + (size_t) c * K, pe + (size_t) c * K);
    }
    if (rule == RULE_DRAW) bnmf_rng_put();
    UNPROTECT(4);
    return out;
}
