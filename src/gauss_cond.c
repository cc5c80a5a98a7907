/*
 * gauss_cond.c -- the Gaussian conditional of a row of a factor given the
 * other side, and the rule applied to it (draw, mode, moments, or a
 * multiplicative step). See cond.h for the roles.
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
 * Missing entries: the Gram matrix of a row with missing entries is
 *   G_i = G_full - sum_{t missing} z_t z_t'   (or the sum over the observed t
 * when that is shorter), plus for VB the variances of the same terms on its
 * diagonal; only O(|missing| K^2) work is added to a sweep.
 */
#include "bnmf_call.h"
#include "nmf.h"
#include <string.h>

/**
 * Mean, variance and entropy of N(mu, sd^2) truncated to [0, inf), for VB.
 * With a = -mu / sd, Q = 1 - Phi(a) and lambda = phi(a) / Q:
 *   E = mu + sd lambda,  Var = sd^2 (1 - lambda (lambda - a)),
 *   H = log(sqrt(2 pi e) sd Q) + a lambda / 2.
 * For a < 3 these come from the scaled complementary error function
 * erfcx(x) = exp(x^2) erfc(x), x = |a| / sqrt(2) (bnmf_erfcx, truncnorm.c),
 * without pnorm (a log-scale pnorm cost about 500 instructions a call, half
 * of a VB sweep's work outside the two matrix products at I = J = 1000,
 * K = 20):
 *   a >= 0:  Q = erfcx(x) exp(-a^2 / 2) / 2,  lambda = sqrt(2 / pi) / erfcx(x),
 *            log(sd Q) = log(sd erfcx(x) / 2) - a^2 / 2   (no exp);
 *   a < 0:   Q = 1 - q with q = Q(-a) = erfcx(x) exp(-a^2 / 2) / 2 <= 1/2,
 *            lambda = phi(a) / (1 - q),  log(sd Q) = log(sd (1 - q)).
 * One log per entry: log sd and log Q enter H only through their sum. For
 * a < -8.3, q < Q(8.3) = 5.2e-17 < 2^-54, so 1 - q rounds to 1 and erfcx is
 * not needed. No cancellation costs more than a digit: lambda - a >= 0.28
 * for a < 3, and a lambda -> 0 as a -> -inf. For a >= 3 the moments come
 * from bnmf_tn_pos_moments (the tail polynomials of truncnorm.c, exact in
 * the tail), and the entropy, written with the log Mills ratio as
 * 1/2 + log sd - log lambda + a (lambda - a) / 2, becomes
 * 1/2 + log(sd / (a + r)) + a r / 2 with r = E / sd = lambda - a: a sum
 * without cancellation (it tends to 1 + log(sd / a), the entropy of the
 * exponential limit).
 * @param mu, sd  location and scale of the untruncated normal (sd > 0)
 * @param m1, var, ent  receive the mean, variance and entropy
 */

/* log(sd), from the cache *lsd when there is one (filled on first use) */
static ALWAYS_INLINE double log_sd(double sd, double *lsd)
{
    if (!lsd) return log(sd);
    if (ISNAN(*lsd)) *lsd = log(sd);
    return *lsd;
}

/* The body of bnmf_tn_pos_vb, with a = -mu / sd given (computed by the
 * caller, e.g. four at a time; read only below the first branch). `lsd`:
 * NULL, or where log(sd) is kept for the next call with the same sd (NaN
 * until the first call that needs it): the rows of a block share sd, and
 * in a fitted model most coordinates are far from the bound, where the
 * entropy needs only log(sd). */
static ALWAYS_INLINE void tn_pos_vb_a(double mu, double sd, double a, double *lsd,
                                      double *m1, double *var, double *ent)
{
    /* a < -38.5 tested as mu > 38.5 sd (sd > 0): without waiting on the
     * division (at the boundary both branches give the same numbers) */
    if (mu > 38.5 * sd) {
        /* Q(a) = 1 and lambda(a) = phi(a) < 1e-300 to double precision:
         * the untruncated normal. (The general branch gives the same numbers
         * through an exp() that underflows, glibc's slow path.) */
        *m1 = mu;
        *var = sd * sd;
        *ent = M_LN_SQRT_2PI + 0.5 + log_sd(sd, lsd);
        return;
    }
    if (a < 3.0) {
        const double h = 0.5 * a * a;
        double lam, lsq; /* lambda(a) and log(sd Q(a)) */
        if (a >= 0.0) {
            const double e = bnmf_erfcx(a * M_SQRT1_2);
            lam = M_SQRT_2dPI / e;
            lsq = log(0.5 * e * sd) - h;
        } else if (a < -8.3) {
            /* Q(a) = 1 to double precision: log(sd Q(a)) = log(sd), which
             * the rows of a block share */
            lsq = log_sd(sd, lsd);
            if (a < -12.0) {
                /* lambda(a) = phi(a) < 2.2e-32 changes none of the results
                 * below: mu + sd lambda = mu (sd lambda < 2e-33 mu, far
                 * below half an ulp of mu), f = 1 - lambda (lambda - a)
                 * = 1 (lambda |a| < 2^-100), and the entropy's last term
                 * 0.5 a lambda < 2^-100 leaves the sum of the others
                 * unchanged when that is at least 2^-40 in size (half an
                 * ulp of it is then at least 2^-94). So no exp(). */
                const double e3 = M_LN_SQRT_2PI + 0.5 + lsq;
                if (fabs(e3) >= 0x1p-40) {
                    *m1 = mu;
                    *var = sd * sd;
                    *ent = e3;
                    return;
                }
            }
            lam = M_1_SQRT_2PI * exp(-h);
        } else {
            const double g = exp(-h);
            const double qc = 1.0 - 0.5 * bnmf_erfcx(-a * M_SQRT1_2) * g;
            lam = M_1_SQRT_2PI * g / qc;
            lsq = log(sd * qc);
        }
        const double f = 1.0 - lam * (lam - a);
        *m1 = (a <= 0.0) ? mu + sd * lam : sd * (lam - a);
        *var = sd * sd * (f > 0.0 ? f : 0.0);
        *ent = M_LN_SQRT_2PI + 0.5 + lsq + 0.5 * a * lam;
        return;
    }
    bnmf_tn_pos_moments(mu, sd, m1, var);
    const double r = *m1 / sd;
    *ent = 0.5 + log(sd / (a + r)) + 0.5 * a * r;
}

/* tn_pos_vb_a with a = -mu / sd */
static ALWAYS_INLINE void tn_pos_vb(double mu, double sd, double *lsd, double *m1,
                                    double *var, double *ent)
{
    tn_pos_vb_a(mu, sd, -mu / sd, lsd, m1, var, ent);
}

void bnmf_tn_pos_vb(double mu, double sd, double *m1, double *var, double *ent)
{
    tn_pos_vb(mu, sd, NULL, m1, var, ent);
}

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
/* den = G z (the multiplicative rule's denominators) */
static void mult_gz(const double *G, const double *z, int K, double *den)
{
    for (int k = 0; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        double s = 0.0;
        for (int l = 0; l < K; l++) s += gk[l] * z[l];
        den[k] = s;
    }
}

/* z_k <- z_k max(b_k, 0) / den_k where den_k > 0; returns sum_k |change| */
static double mult_apply(double *z, const double *b, const double *den, int K)
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
#define ZT_MAX 256

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

/* The block's shared sd = 1 / sqrt(tau G[k,k]) of coordinate k (Gibbs and
 * VB; 0 for ICM, which needs none, and where G[k,k] = 0) */
static ALWAYS_INLINE double block_sd(nmf_rule rule, double gkk, double tau)
{
    return rule != RULE_MODE && gkk > 0.0 ? 1.0 / sqrt(tau * gkk) : 0.0;
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

#if defined(__GNUC__)
/* bnmf_vb_rows_diag on four rows with K <= ZT_MAX: the rows interleaved,
 * zt[4 l + r] and ut[4 l + r], so that their sums run as the lanes of
 * four-value vectors (one AVX2 register each in the AVX2 clone), and so do
 * the means' divisions and tn_pos_vb's a = -mu / sd; the sds are computed
 * before the pass, off the chain from one coordinate to the next. The
 * target has no FMA, so each lane computes the scalar code's products,
 * sums and quotients in its order: the same bits. (Strided, each of the
 * four rows' 2 K loads a coordinate took two instructions.) */
BNMF_CLONES static void vb_rows_diag4(double *z, const double *G, const double *b,
                                      const double *dg, const double *a,
                                      const double *const *lam, int ls, double tau, int K,
                                      double *v, double *ent)
{
    double zt[4 * ZT_MAX], ut[4 * ZT_MAX], sdt[4 * ZT_MAX];
    for (int l = 0; l < K; l++)
        for (int r = 0; r < 4; r++) {
            zt[4 * l + r] = z[(size_t) r * K + l];
            ut[4 * l + r] = 0.0;
            sdt[4 * l + r] = block_sd(RULE_MOMENT, dg[(size_t) r * K + l], tau);
        }
    const size_t K1 = K, K2 = 2 * (size_t) K, K3 = 3 * (size_t) K;
    const bnmf_v4 tv = {tau, tau, tau, tau};
    for (int k = 0; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        const size_t kl = (size_t) k * ls;
        bnmf_v4 s = {b[k], b[K1 + k], b[K2 + k], b[K3 + k]};
        bnmf_v4 c = {0.0, 0.0, 0.0, 0.0};
        for (int l = 0; l < K; l++) {
            const bnmf_v4 g = {gk[l], gk[l], gk[l], gk[l]};
            s -= g * *(const bnmf_v4 *) (zt + 4 * l);
            c += g * *(const bnmf_v4 *) (ut + 4 * l);
        }
        /* cond_step's mean and tn_pos_vb's a for the four rows at once
         * (lanes with dg = 0 unused) */
        const bnmf_v4 z0 = *(const bnmf_v4 *) (zt + 4 * k);
        const bnmf_v4 gkk = {gk[k], gk[k], gk[k], gk[k]};
        const bnmf_v4 av = {a[k], a[K1 + k], a[K2 + k], a[K3 + k]};
        const bnmf_v4 dv = {dg[k], dg[K1 + k], dg[K2 + k], dg[K3 + k]};
        const bnmf_v4 lv = {lam[0][kl], lam[1][kl], lam[2][kl], lam[3][kl]};
        const bnmf_v4 num = s + gkk * z0 + av * c;
        const bnmf_v4 mu = (num - lv / tv) / dv;
        const bnmf_v4 sd = *(const bnmf_v4 *) (sdt + 4 * k);
        const bnmf_v4 am = -mu / sd;
        for (int r = 0; r < 4; r++) {
            const size_t rk = (size_t) r * K + k;
            double zn;
            if (dv[r] > 0.0) tn_pos_vb_a(mu[r], sd[r], am[r], NULL, &zn, v + rk, ent + rk);
            else zn = cond_step(RULE_MOMENT, num[r], dv[r], lv[r], tau, z0[r], v + rk, ent + rk);
            zt[4 * k + r] = zn;
            ut[4 * k + r] = av[r] * (zn - z0[r]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int l = 0; l < K; l++) z[(size_t) r * K + l] = zt[4 * l + r];
}
#endif

/**
 * One VB pass over nr rows (1 <= nr <= COND_BLOCK) that share the
 * off-diagonal part of G but each have their own diagonal: row r's
 * coordinate k has precision tau dg[r K + k] and mean
 *   (b_rk - sum_{l != k} G[k,l] z_rl + a_rk sum_{l != k} G[k,l] u_rl
 *    - lam_rk / tau) / dg[r K + k],
 * where u_rl = a_rl (z_rl - z_rl at the start of the pass) (u: nr K
 * values of scratch). For VB with the missing entries filled in (see
 * fill_sums in nmf_sweep.c), where G is the expected Gram matrix of all
 * entries, dg its part over each row's observed ones, and a_r G a_r an
 * approximation of the missing entries' part, whose terms correct the
 * filled data's for the coordinates that moved in this pass (they vanish
 * at a fixed point). Arguments otherwise as
 * bnmf_cond_rows; the rows' coordinate k is computed together, so that
 * their chains overlap.
 */
void bnmf_vb_rows_diag(double *z, const double *G, const double *b, const double *dg,
                       const double *a, double *u, const double *const *lam, int ls,
                       double tau, int K, int nr, double *v, double *ent)
{
#if defined(__GNUC__)
    if (nr == 4 && K <= ZT_MAX) {
        vb_rows_diag4(z, G, b, dg, a, lam, ls, tau, K, v, ent);
        return;
    }
#endif
    for (int t = 0; t < nr * K; t++) u[t] = 0.0;
    for (int k = 0; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        double s[COND_BLOCK], c[COND_BLOCK];
        for (int r = 0; r < nr; r++) {
            s[r] = b[(size_t) r * K + k];
            c[r] = 0.0;
        }
        for (int l = 0; l < K; l++) {
            const double g = gk[l];
            for (int r = 0; r < nr; r++) {
                s[r] -= g * z[(size_t) r * K + l];
                c[r] += g * u[(size_t) r * K + l];
            }
        }
        for (int r = 0; r < nr; r++) {
            const size_t rk = (size_t) r * K + k;
            const double z0 = z[rk];
            z[rk] = cond_step(RULE_MOMENT, s[r] + gk[k] * z0 + a[rk] * c[r], dg[rk],
                              lam[r][(size_t) k * ls], tau, z0, v + rk, ent + rk);
            u[rk] = a[rk] * (z[rk] - z0);
        }
    }
}

/**
 * The (expected) Gram matrix of the other side: G = Zbar Zbar' +
 * diag(sum_t V_kt), the second moment E[Z Z'] when Z has independent
 * coordinates with means Zbar and variances V.
 * @param Z  the means, K x n (GRAM_ROWS) or n x K (GRAM_COLS)
 * @param V  the variances, same layout as Z, or NULL (G = Z Z': plain Gram)
 * @param layout GRAM_ROWS or GRAM_COLS
 * @param G  receives the K x K matrix
 */
void bnmf_expected_gram(const double *Z, const double *V, int K, int n,
                        gram_layout layout, double *G)
{
    if (layout == GRAM_ROWS) {
        bnmf_gram_rows(Z, K, n, G);
        if (!V) return;
        for (int t = 0; t < n; t++)
            for (int k = 0; k < K; k++) G[k + (size_t) k * K] += V[k + (size_t) t * K];
        return;
    }
    bnmf_gram_cols(Z, n, K, G);
    if (!V) return;
    for (int k = 0; k < K; k++) {
        const double *v = V + (size_t) k * n;
        double sv = 0.0;
        for (int t = 0; t < n; t++) sv += v[t];
        G[k + (size_t) k * K] += sv;
    }
}

/* G += sign * sum_m v_m v_m' (upper triangle), four vectors at a time: the
 * kernel for K too large for gram_update's buffer. */
static void gram_update_rank4(double *G, const double *base, int stride, const int *idx,
                              int n, int K, double sign)
{
    int m = 0;
    for (; m + 4 <= n; m += 4) {
        const double *v0 = base + (size_t) idx[m] * stride;
        const double *v1 = base + (size_t) idx[m + 1] * stride;
        const double *v2 = base + (size_t) idx[m + 2] * stride;
        const double *v3 = base + (size_t) idx[m + 3] * stride;
        for (int b = 0; b < K; b++) {
            const double b0 = sign * v0[b], b1 = sign * v1[b];
            const double b2 = sign * v2[b], b3 = sign * v3[b];
            double *Gb = G + (size_t) b * K;
            for (int a = 0; a <= b; a++)
                Gb[a] += v0[a] * b0 + v1[a] * b1 + v2[a] * b2 + v3[a] * b3;
        }
    }
    for (; m < n; m++) {
        const double *v = base + (size_t) idx[m] * stride;
        for (int b = 0; b < K; b++) {
            const double vb = sign * v[b];
            double *Gb = G + (size_t) b * K;
            for (int a = 0; a <= b; a++) Gb[a] += v[a] * vb;
        }
    }
}

#define GRAM_BUF 4096   /* doubles of stack buffer for gathered vectors (32 KB) */

#if defined(__GNUC__)
typedef double v4g __attribute__((vector_size(32)));

/* Columns b0..b0+3 of rows a0..a0+4nr-1 (nr = 1 or 2 four-row blocks, a
 * constant where inlined) summed over the nc gathered vectors of buf (Kp
 * apart): C[r][bb] lane aa = sum_t x_{a0+4r+aa} y_{b0+bb}, t in order, then
 * G = F + sign C on and above the diagonal. The 4 nr sums stay in
 * registers: per vector, nr loads and 4 broadcasts for 4 nr four-value
 * multiply-adds. (Twelve rows would need 12 sums, 4 broadcasts, the vector
 * and a product, more than the 16 AVX2 registers: the clone has no fused
 * multiply-add, so that its bits are the default build's; GCC spilled two
 * sums.) Each entry's sum is the same, term for term, as a four-row
 * block's alone. */
static ALWAYS_INLINE void gram_tile(double *G, const double *F, const double *buf,
                                    int nc, int Kp, int K, int a0, int b0, int nr,
                                    double sign)
{
    const v4g zero = {0.0, 0.0, 0.0, 0.0};
    v4g A0 = zero, A1 = zero, A2 = zero, A3 = zero;
    v4g B0 = zero, B1 = zero, B2 = zero, B3 = zero;
    const double *p = buf;
    for (int t = 0; t < nc; t++, p += Kp) {
        const double y0 = p[b0], y1 = p[b0 + 1], y2 = p[b0 + 2], y3 = p[b0 + 3];
        const v4g Y0 = {y0, y0, y0, y0}, Y1 = {y1, y1, y1, y1};
        const v4g Y2 = {y2, y2, y2, y2}, Y3 = {y3, y3, y3, y3};
        v4g x;
        memcpy(&x, p + a0, sizeof x);
        A0 += x * Y0;
        A1 += x * Y1;
        A2 += x * Y2;
        A3 += x * Y3;
        if (nr > 1) {
            memcpy(&x, p + a0 + 4, sizeof x);
            B0 += x * Y0;
            B1 += x * Y1;
            B2 += x * Y2;
            B3 += x * Y3;
        }
    }
    const v4g C[2][4] = {{A0, A1, A2, A3}, {B0, B1, B2, B3}};
    for (int r = 0; r < nr; r++) {
        const int ar = a0 + 4 * r;
        for (int bb = 0; bb < 4 && b0 + bb < K; bb++) {
            double *Gb = G + (size_t) (b0 + bb) * K;
            const double *Fb = F + (size_t) (b0 + bb) * K;
            for (int aa = 0; aa < 4 && ar + aa <= b0 + bb; aa++)
                Gb[ar + aa] = Fb[ar + aa] + sign * C[r][bb][aa];
        }
    }
}
#endif

/**
 * G = G0 + sign * sum_m v_m v_m' (upper triangle) over the vectors v_m =
 * base + idx[m] * stride (K contiguous values each); G0 NULL: G += the
 * same. (G0 read as the sums are written spares a copy of G0 into G per
 * row: at K = 10 the copy was 5% of a masked VB sweep.)
 *
 * The vectors are gathered, a chunk at a time, into a buffer of Kp = K
 * rounded up to 4 values each (zero padded; four values per copy, inline),
 * and each four columns of the upper triangle are accumulated over the
 * whole chunk in tiles of 8 rows (4 at the diagonal's end; gram_tile),
 * whose sums stay in registers
 * (BNMF_CLONES: one AVX2 register per four values in the AVX2 clone): per
 * vector and tile of 8 x 4, 2 loads and 4 broadcasts for 8 four-value
 * multiply-adds, where 4 x 4 blocks took 5 for 4, and a rank-one (or
 * rank-four) update of G in memory a load and a store of G per 4
 * multiply-adds. Each entry is summed as by 4 x 4 blocks: the same bits.
 * This is the masked Gram matrix of every row with missing entries (and
 * for ICM below SUB_MIN_K_ICM and VB below SUB_MIN_K_VB in nmf_sweep.c,
 * most of a sweep's work when entries are missing).
 */
BNMF_CLONES void bnmf_gram_update(double *G, const double *G0, const double *base,
                                  int stride, const int *idx, int n, int K,
                                  double sign)
{
    const int Kp = (K + 3) & ~3;
    const int chunk = GRAM_BUF / (Kp > 0 ? Kp : 4);
    if (G0 && (chunk < 16 || n == 0)) {
        memcpy(G, G0, sizeof(double) * K * K);
        G0 = NULL;
    }
    if (chunk < 16) {
        gram_update_rank4(G, base, stride, idx, n, K, sign);
        return;
    }
    double buf[GRAM_BUF];
    for (int m0 = 0; m0 < n; m0 += chunk) {
        /* the first chunk adds to G0, the others to G */
        const double *from = m0 == 0 && G0 ? G0 : G;
        const int nc = n - m0 < chunk ? n - m0 : chunk;
        for (int t = 0; t < nc; t++) {
            const double *v = base + (size_t) idx[m0 + t] * stride;
            double *bt = buf + (size_t) t * Kp;
            int k = 0;
#if defined(__GNUC__)
            /* four values per copy, and the last one to three with the
             * padding in one store: a loop of K copies, and the loops of
             * the tail and the padding, each became a call (memmove,
             * memset) per vector */
            for (; k + 4 <= K; k += 4) {
                v4g c;
                memcpy(&c, v + k, sizeof c);
                memcpy(bt + k, &c, sizeof c);
            }
            if (k < K) {
                const int rem = K - k;
                const v4g c = {v[k], rem > 1 ? v[k + 1] : 0.0, rem > 2 ? v[k + 2] : 0.0, 0.0};
                memcpy(bt + k, &c, sizeof c);
            }
#else
            for (; k < K; k++) bt[k] = v[k];
            for (; k < Kp; k++) bt[k] = 0.0;
#endif
        }
        for (int b0 = 0; b0 < Kp; b0 += 4) {
#if defined(__GNUC__)
            /* rows 0..b0+3 of the four columns, eight at a time */
            int a0 = 0;
            for (; a0 + 4 <= b0; a0 += 8)
                gram_tile(G, from, buf, nc, Kp, K, a0, b0, 2, sign);
            if (a0 <= b0) gram_tile(G, from, buf, nc, Kp, K, a0, b0, 1, sign);
#else
            for (int a0 = 0; a0 <= b0; a0 += 4) {
                double c00 = 0, c10 = 0, c20 = 0, c30 = 0, c01 = 0, c11 = 0, c21 = 0, c31 = 0;
                double c02 = 0, c12 = 0, c22 = 0, c32 = 0, c03 = 0, c13 = 0, c23 = 0, c33 = 0;
                const double *p = buf;
                for (int t = 0; t < nc; t++, p += Kp) {
                    const double x0 = p[a0], x1 = p[a0 + 1], x2 = p[a0 + 2], x3 = p[a0 + 3];
                    const double y0 = p[b0], y1 = p[b0 + 1], y2 = p[b0 + 2], y3 = p[b0 + 3];
                    c00 += x0 * y0; c10 += x1 * y0; c20 += x2 * y0; c30 += x3 * y0;
                    c01 += x0 * y1; c11 += x1 * y1; c21 += x2 * y1; c31 += x3 * y1;
                    c02 += x0 * y2; c12 += x1 * y2; c22 += x2 * y2; c32 += x3 * y2;
                    c03 += x0 * y3; c13 += x1 * y3; c23 += x2 * y3; c33 += x3 * y3;
                }
                const double c[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},
                                        {c20, c21, c22, c23}, {c30, c31, c32, c33}};
                for (int bb = 0; bb < 4 && b0 + bb < K; bb++) {
                    double *Gb = G + (size_t) (b0 + bb) * K;
                    const double *Fb = from + (size_t) (b0 + bb) * K;
                    for (int aa = 0; aa < 4 && a0 + aa <= b0 + bb; aa++)
                        Gb[a0 + aa] = Fb[a0 + aa] + sign * c[aa][bb];
                }
            }
#endif
        }
    }
}

/* The n - nm indices among 0..n-1 not in the sorted miss[0..nm) into obs;
 * returns n - nm. */
static int observed_idx(const int *miss, int nm, int n, int *obs)
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

/* Gi = Gfull minus the terms of the missing vectors, or the observed terms
 * summed directly when those are fewer. Returns 1 when it downdated, 0 when
 * it summed the observed terms (listed in `obs`, `*nobs` of them). */
static int gram_minus_missing(double *Gi, const double *Gfull, const double *other,
                              int ostride, int n, const int *miss, int nm, int K,
                              int *obs, int *nobs)
{
    if (2 * nm <= n) {
        bnmf_gram_update(Gi, Gfull, other, ostride, miss, nm, K, -1.0);
        bnmf_symmetrise(Gi, K);
        return 1;
    }
    memset(Gi, 0, sizeof(double) * K * K);
    const int no = observed_idx(miss, nm, n, obs);
    bnmf_gram_update(Gi, NULL, other, ostride, obs, no, K, 1.0);
    bnmf_symmetrise(Gi, K);
    *nobs = no;
    return 0;
}

#if defined(__GNUC__)
typedef double vs_v2 __attribute__((vector_size(16), aligned(8)));
#if defined(__clang__)
#define VS_UNROLL _Pragma("unroll")
#else
#define VS_UNROLL _Pragma("GCC unroll 10")
#endif

/* vs[k0 + l] = sum_t V[idx[t] K + k0 + l] for l < 4 nc + rem (nc <= 10, a
 * constant where it is inlined; rem < 4): every sum in one pass over t, in
 * registers. Each coordinate's sum still adds its terms one after another
 * in t's order (the same values as a scalar loop); what the pass gains is
 * that all K sums are under way at once, so no addition waits on the one
 * before it in the same sum. */
static ALWAYS_INLINE void vs_chunk(double *restrict vs, const double *restrict V,
                                   const int *restrict idx, int nm, int K, int k0,
                                   int nc, int rem)
{
    bnmf_v4 s[10];
    vs_v2 s2 = {0.0, 0.0};
    double s1 = 0.0;
    VS_UNROLL
    for (int c = 0; c < nc; c++) s[c] = (bnmf_v4) {0.0, 0.0, 0.0, 0.0};
    const int k2 = k0 + 4 * nc;
    for (int t = 0; t < nm; t++) {
        const double *v = V + (size_t) idx[t] * K + k0;
        VS_UNROLL
        for (int c = 0; c < nc; c++) s[c] += *(const bnmf_v4 *) (v + 4 * c);
        if (rem >= 2) s2 += *(const vs_v2 *) (v + 4 * nc);
        if (rem & 1) s1 += v[4 * nc + (rem & 2)];
    }
    VS_UNROLL
    for (int c = 0; c < nc; c++)
        for (int l = 0; l < 4; l++) vs[k0 + 4 * c + l] = s[c][l];
    if (rem >= 2) vs[k2] = s2[0], vs[k2 + 1] = s2[1];
    if (rem & 1) vs[k2 + (rem & 2)] = s1;
}
#endif

/* vs[k] = sum_t V[idx[t] K + k], k < K: up to 40 coordinates a pass over
 * the vectors (vs_chunk; ten four-value sums in registers, with the loads'
 * fit in AVX2's sixteen), the last pass taking the K mod 4 left over. One
 * pass per sum in flight at a time was bound by the additions' latency (a
 * sum of eight coordinates waited four cycles a vector). The 2 K = 40 sums
 * of VB's imputing rows at K = 20 (fill_sums) take one pass instead of 32
 * then 8: each entry's five cache lines read once, its index once (0.96 of
 * the sweep's time, OpenBLAS, 1000 x 1000, 20% missing). */
BNMF_CLONES static void sub_var_sums(double *restrict vs, const double *restrict V,
                                     const int *restrict idx, int nm, int K)
{
#if defined(__GNUC__)
    for (int k0 = 0; k0 < K;) {
        const int left = K - k0;
        const int nc = left >= 44 ? 10 : left / 4, rem = left >= 44 ? 0 : left % 4;
        switch (nc) {
        case 0: vs_chunk(vs, V, idx, nm, K, k0, 0, rem); break;
        case 1: vs_chunk(vs, V, idx, nm, K, k0, 1, rem); break;
        case 2: vs_chunk(vs, V, idx, nm, K, k0, 2, rem); break;
        case 3: vs_chunk(vs, V, idx, nm, K, k0, 3, rem); break;
        case 4: vs_chunk(vs, V, idx, nm, K, k0, 4, rem); break;
        case 5: vs_chunk(vs, V, idx, nm, K, k0, 5, rem); break;
        case 6: vs_chunk(vs, V, idx, nm, K, k0, 6, rem); break;
        case 7: vs_chunk(vs, V, idx, nm, K, k0, 7, rem); break;
        case 8: vs_chunk(vs, V, idx, nm, K, k0, 8, rem); break;
        case 9: vs_chunk(vs, V, idx, nm, K, k0, 9, rem); break;
        default: vs_chunk(vs, V, idx, nm, K, k0, 10, rem); break;
        }
        k0 += 4 * nc + rem;
    }
#else
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (int t = 0; t < nm; t++) s += V[(size_t) idx[t] * K + k];
        vs[k] = s;
    }
#endif
}

/* vs[k] = sum_t V[idx[t] K + k] for k < K (sub_var_sums), for other files. */
void bnmf_idx_sums(double *vs, const double *V, const int *idx, int nm, int K)
{
    sub_var_sums(vs, V, idx, nm, K);
}

#define VSUM_MAX 256   /* the largest K whose variance sums are on the stack */

/* Gi[k, k] += sign * sum_m V[idx[m] * vstride + k * kstride], one
 * coordinate at a time, summed in registers (a sum into Gi itself waits on
 * a store and a load of Gi per term). */
static void masked_var_cols(double *Gi, double sign, const double *V, size_t vstride,
                            size_t kstride, const int *idx, int n, int K)
{
    for (int k = 0; k < K; k++) {
        const double *vk = V + (size_t) k * kstride;
        double s0 = 0.0, s1 = 0.0;
        int m = 0;
        for (; m + 2 <= n; m += 2) {
            s0 += vk[(size_t) idx[m] * vstride];
            s1 += vk[(size_t) idx[m + 1] * vstride];
        }
        if (m < n) s0 += vk[(size_t) idx[m] * vstride];
        Gi[k + (size_t) k * K] += sign * (s0 + s1);
    }
}

/* VB: the variance part of a masked expected Gram matrix. Gfull carries
 * diag(sum over all t of V_t) on its diagonal; a downdated Gi (down = 1)
 * loses the variances of the missing vectors, a directly summed one
 * (down = 0) gains those of the observed ones. */
static void masked_var_diag(double *Gi, int down, const double *V, size_t vstride,
                            size_t kstride, const int *idx, int n, int K)
{
    const double sign = down ? -1.0 : 1.0;
    if (vstride == (size_t) K && kstride == 1 && K <= VSUM_MAX) {
        /* each vector's K variances contiguous (the NMF sweeps): read a
         * vector at a time */
        double vs[VSUM_MAX];
        sub_var_sums(vs, V, idx, n, K);
        for (int k = 0; k < K; k++) Gi[k + (size_t) k * K] += sign * vs[k];
    } else {
        masked_var_cols(Gi, sign, V, vstride, kstride, idx, n, K);
    }
    for (int k = 0; k < K; k++)
        if (Gi[k + (size_t) k * K] < 0.0) Gi[k + (size_t) k * K] = 0.0;
}

/**
 * The Gram matrix of the other side for one row with nm missing entries.
 * @param Gi     K x K scratch that receives the masked matrix
 * @param Gfull  the (expected) Gram matrix over all n entries
 * @param other  the other side's n vectors of K contiguous values, ostride apart
 * @param miss   the nm missing indices among 0..n-1, sorted
 * @param obs    n ints of scratch
 * @param V      VB: the other side's variances, V_t[k] = V[t * vstride +
 *               k * kstride] (NULL otherwise)
 * @return Gfull itself when nothing is missing, otherwise Gi
 */
const double *bnmf_masked_gram(double *Gi, const double *Gfull, const double *other,
                               int ostride, int n, const int *miss, int nm, int K,
                               int *obs, const double *V, size_t vstride,
                               size_t kstride)
{
    if (nm == 0) return Gfull;
    int nobs = 0;
    const int down = gram_minus_missing(Gi, Gfull, other, ostride, n, miss, nm, K, obs,
                                        &nobs);
    if (V) masked_var_diag(Gi, down, V, vstride, kstride, down ? miss : obs,
                           down ? nm : nobs, K);
    return Gi;
}

/* cond_sub's vectors are stored np = nm rounded up to even apart, zero
 * padded, so that its loops run two values at a time */
static inline int sub_stride(int nm)
{
    return (nm + 1) & ~1;
}

/* r += a o over np (even) values when a != 0 (o NULL: a must be 0), then
 * c = o2' r (o2 NULL: 0), in eight partial sums (the lanes of two four-value
 * vectors: an addition's latency would otherwise bound the loop), then two
 * at a time, folded as ((s0 + s1) + (s2 + s3)). With sq (a constant where
 * inlined), *osq = o2' o2 from the same loads in the same partial sums. r is
 * only read when a = 0. */
static ALWAYS_INLINE double axpy_dot_loop(double *r, const double *o, double a,
                                          const double *o2, int np, double *osq,
                                          const int sq, const int upd)
{
#if defined(__GNUC__)
    typedef double v2u __attribute__((vector_size(16), aligned(8)));
    bnmf_v4 S0 = {0.0, 0.0, 0.0, 0.0}, S1 = S0, Q0 = S0, Q1 = S0;
    const bnmf_v4 av4 = {a, a, a, a};
    const v2u av = {a, a};
    int t = 0;
    if (!o2) {
        if (!upd) return 0.0;
        for (; t + 4 <= np; t += 4) {
            bnmf_v4 r0 = *(bnmf_v4 *) (r + t);
            r0 += av4 * *(const bnmf_v4 *) (o + t);
            *(bnmf_v4 *) (r + t) = r0;
        }
        if (t < np) {
            v2u r0 = *(v2u *) (r + t);
            r0 += av * *(const v2u *) (o + t);
            *(v2u *) (r + t) = r0;
        }
        return 0.0;
    }
    for (; t + 8 <= np; t += 8) {
        bnmf_v4 r0 = *(bnmf_v4 *) (r + t), r1 = *(bnmf_v4 *) (r + t + 4);
        if (upd) {
            r0 += av4 * *(const bnmf_v4 *) (o + t);
            r1 += av4 * *(const bnmf_v4 *) (o + t + 4);
            *(bnmf_v4 *) (r + t) = r0;
            *(bnmf_v4 *) (r + t + 4) = r1;
        }
        const bnmf_v4 p0 = *(const bnmf_v4 *) (o2 + t);
        const bnmf_v4 p1 = *(const bnmf_v4 *) (o2 + t + 4);
        S0 += p0 * r0;
        S1 += p1 * r1;
        if (sq) {
            Q0 += p0 * p0;
            Q1 += p1 * p1;
        }
    }
    v2u s0 = {S0[0], S0[1]}, s1 = {S0[2], S0[3]}, s2 = {S1[0], S1[1]}, s3 = {S1[2], S1[3]};
    v2u q0 = {Q0[0], Q0[1]}, q1 = {Q0[2], Q0[3]}, q2 = {Q1[0], Q1[1]}, q3 = {Q1[2], Q1[3]};
    for (; t < np; t += 2) {
        v2u r0 = *(v2u *) (r + t);
        if (upd) {
            r0 += av * *(const v2u *) (o + t);
            *(v2u *) (r + t) = r0;
        }
        const v2u p0 = *(const v2u *) (o2 + t);
        s0 += p0 * r0;
        if (sq) q0 += p0 * p0;
    }
    s0 += s1;
    s2 += s3;
    s0 += s2;
    if (sq) {
        q0 += q1;
        q2 += q3;
        q0 += q2;
        *osq = q0[0] + q0[1];
    }
    return s0[0] + s0[1];
#else
    double c = 0.0, q = 0.0;
    for (int t = 0; t < np; t++) {
        if (upd) r[t] += a * o[t];
        if (o2) c += o2[t] * r[t];
        if (sq && o2) q += o2[t] * o2[t];
    }
    if (sq) *osq = q;
    return c;
#endif
}

/* axpy_dot_loop with the update's test (a != 0) out of its loops */
static ALWAYS_INLINE double axpy_dot_body(double *r, const double *o, double a,
                                          const double *o2, int np, double *osq,
                                          const int sq)
{
    return a != 0.0 ? axpy_dot_loop(r, o, a, o2, np, osq, sq, 1)
                    : axpy_dot_loop(r, o, a, o2, np, osq, sq, 0);
}

/* sum_t a[t] b[t] over np (even) values, in axpy_dot_body's partial sums */
BNMF_CLONES static double dot_even(const double *a, const double *b, int np)
{
    return axpy_dot_body((double *) b, NULL, 0.0, a, np, NULL, 0);
}

/* r += a o (a = 0: r unchanged), then o2' r (o2 NULL: 0); np even */
BNMF_CLONES static double sub_axpy_dot(double *r, const double *o, double a,
                                       const double *o2, int np)
{
    return axpy_dot_body(r, o, a, o2, np, NULL, 0);
}

/* sub_axpy_dot, and *osq = o2' o2 (o2 not NULL), the value dot_even(o2, o2,
 * np) gives */
BNMF_CLONES static double sub_axpy_dot_sq(double *r, const double *o, double a,
                                          const double *o2, int np, double *osq)
{
    return axpy_dot_body(r, o, a, o2, np, osq, 1);
}

/* The vectors other + idx[t] K (K contiguous values each) by coordinate
 * into O (np apart, zero padded): one store per four values; and r[t] =
 * z' o_t, summed over k in order as it is stored (the values of r = 0 and
 * then r += z_k o_k for k = 0, 1, ...: zero terms add nothing, as the
 * values are finite), r[nm] = 0 when np > nm. */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define BNMF_HAVE_SHUF 1
#define BNMF_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#endif

#if defined(__GNUC__)
typedef double gat_v2 __attribute__((vector_size(16), aligned(8)));

/* Coordinate k of the four vectors other + idx[0..3] K into Ot[k np], and
 * *R += z_k times it */
static ALWAYS_INLINE void gather_one(double *restrict Ot, int np,
                                     const double *restrict other,
                                     const int *restrict idx, int K, int k,
                                     const double *restrict z, bnmf_v4 *R)
{
    const double *o0 = other + (size_t) idx[0] * K, *o1 = other + (size_t) idx[1] * K;
    const double *o2 = other + (size_t) idx[2] * K, *o3 = other + (size_t) idx[3] * K;
    const bnmf_v4 c0 = {o0[k], o1[k], o2[k], o3[k]}, z0 = {z[k], z[k], z[k], z[k]};
    *(bnmf_v4 *) (Ot + (size_t) k * np) = c0;
    *R += z0 * c0;
}

#if defined(BNMF_HAVE_SHUF)
/* gather_one for coordinates k and k + 1, read as pairs, {o0[k], o0[k + 1],
 * o2[k], o2[k + 1]} and the same of o1 and o3, and interleaved into the two
 * stores (a 4 x 2 transpose: two shuffles for eight values, where building
 * each store from four scalars took three) */
static ALWAYS_INLINE void gather_pair(double *restrict Ot, int np,
                                      const double *restrict other,
                                      const int *restrict idx, int K, int k,
                                      const double *restrict z, bnmf_v4 *R)
{
    const double *o0 = other + (size_t) idx[0] * K, *o1 = other + (size_t) idx[1] * K;
    const double *o2 = other + (size_t) idx[2] * K, *o3 = other + (size_t) idx[3] * K;
    const gat_v2 p0 = *(const gat_v2 *) (o0 + k), p1 = *(const gat_v2 *) (o1 + k);
    const gat_v2 p2 = *(const gat_v2 *) (o2 + k), p3 = *(const gat_v2 *) (o3 + k);
    const bnmf_v4 a = BNMF_SHUF(p0, p2, 0, 1, 2, 3), b = BNMF_SHUF(p1, p3, 0, 1, 2, 3);
    const bnmf_v4 c0 = BNMF_SHUF(a, b, 0, 4, 2, 6), c1 = BNMF_SHUF(a, b, 1, 5, 3, 7);
    const bnmf_v4 z0 = {z[k], z[k], z[k], z[k]};
    const bnmf_v4 z1 = {z[k + 1], z[k + 1], z[k + 1], z[k + 1]};
    *(bnmf_v4 *) (Ot + (size_t) k * np) = c0;
    *(bnmf_v4 *) (Ot + (size_t) (k + 1) * np) = c1;
    *R += z0 * c0;
    *R += z1 * c1;
}
#endif
#endif

BNMF_CLONES static void sub_gather(double *restrict O, int np,
                                   const double *restrict other,
                                   const int *restrict idx, int nm, int K,
                                   const double *restrict z, double *restrict r)
{
    int t = 0;
#if defined(__GNUC__)
    typedef bnmf_v4 bnmf_v4;
#if defined(BNMF_HAVE_SHUF)
    /* four vectors at a time, coordinate k of all four in one store, two
     * coordinates at a time (gather_pair) */
    for (; t + 8 <= nm; t += 8) {
        /* two groups of four side by side: the sums of r, k after k, are
         * two chains instead of one */
        bnmf_v4 RA = {0.0, 0.0, 0.0, 0.0}, RB = RA;
        int k = 0;
        for (; k + 2 <= K; k += 2) {
            gather_pair(O + t, np, other, idx + t, K, k, z, &RA);
            gather_pair(O + t + 4, np, other, idx + t + 4, K, k, z, &RB);
        }
        if (k < K) {
            gather_one(O + t, np, other, idx + t, K, k, z, &RA);
            gather_one(O + t + 4, np, other, idx + t + 4, K, k, z, &RB);
        }
        *(bnmf_v4 *) (r + t) = RA;
        *(bnmf_v4 *) (r + t + 4) = RB;
    }
    for (; t + 4 <= nm; t += 4) {
        bnmf_v4 R = {0.0, 0.0, 0.0, 0.0};
        int k = 0;
        for (; k + 2 <= K; k += 2) gather_pair(O + t, np, other, idx + t, K, k, z, &R);
        if (k < K) gather_one(O + t, np, other, idx + t, K, k, z, &R);
        *(bnmf_v4 *) (r + t) = R;
    }
#else
    /* four vectors at a time: coordinate k of all four in one store */
    for (; t + 4 <= nm; t += 4) {
        bnmf_v4 R = {0.0, 0.0, 0.0, 0.0};
        for (int k = 0; k < K; k++) gather_one(O + t, np, other, idx + t, K, k, z, &R);
        *(bnmf_v4 *) (r + t) = R;
    }
#endif
#endif
    for (; t < nm; t++) {
        const double *o = other + (size_t) idx[t] * K;
        double s = 0.0;
        for (int k = 0; k < K; k++) {
            O[t + (size_t) k * np] = o[k];
            s += z[k] * o[k];
        }
        r[t] = s;
    }
    if (np > nm) {
        for (int k = 0; k < K; k++) O[nm + (size_t) k * np] = 0.0;
        r[nm] = 0.0;
    }
}

/**
 * Gather the terms a row's Gram matrix lacks (bnmf_cond_row_sub): the nm
 * vectors other + idx[t] K (K contiguous values each) by coordinate into
 * cs->O, r_t = z' o_t into cs->r for the row's current values z, and VB
 * the sums of the vectors' variances (laid out as the vectors in V, NULL
 * otherwise) into cs->gkk. The first pass of bnmf_cond_row_sub completes
 * cs->osq (the vectors' sums of squares) and cs->gkk (the row's Gram
 * diagonal G_kk - sum_t o_tk^2, VB less the variances; clamped at 0 like
 * masked_var_diag) as it reaches each coordinate. cs->O holds K (nm + 1)
 * values.
 */
void bnmf_cond_sub_gather(cond_sub *cs, const double *other, const double *V,
                          const int *idx, int nm, int K, const double *z)
{
    const int np = sub_stride(nm);
    cs->nm = nm;
    sub_gather(cs->O, np, other, idx, nm, K, z, cs->r);
    if (V) sub_var_sums(cs->gkk, V, idx, nm, K);
    else for (int k = 0; k < K; k++) cs->gkk[k] = 0.0;
}



#if defined(__GNUC__)
/* den += sign sum_t (o_t' z) o_t over the ni vectors o_t = other + idx[t] K,
 * K = 4 nc + rem (nc <= 10 and rem < 4 constants where inlined): the same
 * sums as bnmf_dot4 and bnmf_axpy4 term by term, with den held in registers over
 * t (through memory, each term's additions waited on the last term's
 * stores) */
static ALWAYS_INLINE void mr_terms(double *den, const double *z, const double *other,
                                   const int *idx, int ni, int K, double sign, int nc,
                                   int rem)
{
    bnmf_v4 dv[10];
    double dr[3] = {0.0, 0.0, 0.0};
    VS_UNROLL
    for (int c = 0; c < nc; c++) dv[c] = *(const bnmf_v4 *) (den + 4 * c);
    for (int l = 0; l < rem; l++) dr[l] = den[4 * nc + l];
    for (int t = 0; t < ni; t++) {
        const double *o = other + (size_t) idx[t] * K;
        bnmf_v4 a = {0.0, 0.0, 0.0, 0.0};
        VS_UNROLL
        for (int c = 0; c < nc; c++)
            a += *(const bnmf_v4 *) (o + 4 * c) * *(const bnmf_v4 *) (z + 4 * c);
        double s0 = a[0];
        const int k = 4 * nc;
        for (int l = 0; l < rem; l++) s0 += o[k + l] * z[k + l];
        const double r = sign * ((s0 + a[1]) + (a[2] + a[3]));
        const bnmf_v4 rv = {r, r, r, r};
        VS_UNROLL
        for (int c = 0; c < nc; c++) dv[c] += rv * *(const bnmf_v4 *) (o + 4 * c);
        for (int l = 0; l < rem; l++) dr[l] += r * o[k + l];
    }
    VS_UNROLL
    for (int c = 0; c < nc; c++) *(bnmf_v4 *) (den + 4 * c) = dv[c];
    for (int l = 0; l < rem; l++) den[4 * nc + l] = dr[l];
}
#endif

/**
 * The multiplicative (Lee-Seung) update of a row with missing entries,
 * z_k <- z_k max(b_k, 0) / den_k (where den_k > 0), den = Gi z, Gi the Gram
 * matrix of the other side's vectors at the row's observed entries, without
 * forming Gi (O(nm K), against O(nm K^2) for Gi itself):
 *   den = G z - sum_{t missing} (o_t' z) o_t,
 * or, when more than half the entries are missing (where that difference
 * would cancel), den = sum_{t observed} (o_t' z) o_t.
 * @param z      the row (K values), updated in place
 * @param G      the Gram matrix of all n vectors
 * @param b      the row's data projected on the observed vectors
 * @param other  the other side's n vectors, K contiguous values each
 * @param miss   the nm missing indices among 0..n-1, sorted
 * @param obs    n ints of scratch
 * @param den    K doubles of scratch
 * @param q      NULL, or receives z' Gi z for the new z (the row's term of
 *               the SSE's quadratic part)
 * @return sum_k |change of z_k|
 */
BNMF_CLONES double bnmf_mult_row_masked(double *z, const double *G, const double *b,
                                        const double *other, int n, const int *miss,
                                        int nm, int K, int *obs, double *den, double *q)
{
    const int down = 2 * nm <= n;
    const int ni = down ? nm : observed_idx(miss, nm, n, obs);
    const int *idx = down ? miss : obs;
    if (down) mult_gz(G, z, K, den);
    else memset(den, 0, sizeof(double) * K);
    const double sign = down ? -1.0 : 1.0;
#if defined(__GNUC__)
    if (K <= 43) {
        switch (K / 4) {
        case 0: mr_terms(den, z, other, idx, ni, K, sign, 0, K % 4); break;
        case 1: mr_terms(den, z, other, idx, ni, K, sign, 1, K % 4); break;
        case 2: mr_terms(den, z, other, idx, ni, K, sign, 2, K % 4); break;
        case 3: mr_terms(den, z, other, idx, ni, K, sign, 3, K % 4); break;
        case 4: mr_terms(den, z, other, idx, ni, K, sign, 4, K % 4); break;
        case 5: mr_terms(den, z, other, idx, ni, K, sign, 5, K % 4); break;
        case 6: mr_terms(den, z, other, idx, ni, K, sign, 6, K % 4); break;
        case 7: mr_terms(den, z, other, idx, ni, K, sign, 7, K % 4); break;
        case 8: mr_terms(den, z, other, idx, ni, K, sign, 8, K % 4); break;
        case 9: mr_terms(den, z, other, idx, ni, K, sign, 9, K % 4); break;
        default: mr_terms(den, z, other, idx, ni, K, sign, 10, K % 4); break;
        }
    } else
#endif
    for (int t = 0; t < ni; t++) {
        const double *o = other + (size_t) idx[t] * K;
        bnmf_axpy4(den, sign * bnmf_dot4(o, z, K), o, K);
    }
    const double change = mult_apply(z, b, den, K);
    if (q) {
        double s = down ? bnmf_quad_form(G, z, K) : 0.0, r = 0.0;
        for (int t = 0; t < ni; t++) {
            const double e = bnmf_dot4(other + (size_t) idx[t] * K, z, K);
            r += e * e;
        }
        *q = s + sign * r;
    }
    return change;
}

/* cs->osq[k] = q, and cs->gkk[k] (holding the variance sum) the row's Gram
 * diagonal G_kk - q - the variance sum, clamped at 0 */
static inline void sub_diag(cond_sub *cs, const double *G, int k, int K, double q)
{
    cs->osq[k] = q;
    const double d = G[k + (size_t) k * K] - q - cs->gkk[k];
    cs->gkk[k] = d > 0.0 ? d : 0.0;
}

/* b_k - sum_{l != k} G_kl z_l, the sum in four partial sums (bnmf_dot4) */
static inline double sub_gz(const double *G, const double *b, const double *z, int k,
                            int K)
{
    const double *gk = G + (size_t) k * K;
    return b[k] - bnmf_dot4(gk, z, K) + gk[k] * z[k];
}

/* One pass of bnmf_cond_row_sub: bnmf_cond_row_pass on the full G, each
 * coordinate's sum corrected by the gathered vectors,
 *   s_k = b_k - sum_{l != k} G_kl z_l + sum_t o_tk (r_t - o_tk z_k),
 * and r_t = z' o_t moved along with z_k (in the same loop as the next
 * coordinate's sum). The first pass (first = 1) also sums each
 * coordinate's squares, from the loads of its sum, just before it needs
 * them (sub_diag). */
BNMF_CLONES static double cond_row_sub_pass(double *z, const double *G, const double *b,
                                const double *lam, int ls, double tau, int K,
                                nmf_rule rule, double *v, double *ent, cond_sub *cs,
                                int first)
{
    const int np = sub_stride(cs->nm);
    double *r = cs->r;
    double change = 0.0, q = 0.0;
    double c;
    if (first) {
        c = sub_axpy_dot_sq(r, NULL, 0.0, cs->O, np, &q);
        sub_diag(cs, G, 0, K, q);
    } else {
        c = dot_even(cs->O, r, np);
    }
    /* sg: coordinate k's sum on the full G (sub_gz). ICM takes it for
     * k + 1 as soon as z_k is set, before the loop over the vectors, so
     * that the two overlap (0.95 of the sweep's time); VB after that loop
     * (the other order cost VB 1.03: its step's calls into libm come
     * between) */
    const int early = rule == RULE_MODE;
    double sg = sub_gz(G, b, z, 0, K);
    for (int k = 0; k < K; k++) {
        const double *ok = cs->O + (size_t) k * np;
        const double s = sg + (c - cs->osq[k] * z[k]);
        const double znew = cond_step(rule, s, cs->gkk[k], lam[(size_t) k * ls], tau, z[k],
                                      v + k, ent + k);
        const double dz = znew - z[k];
        z[k] = znew;
        if (early && k + 1 < K) sg = sub_gz(G, b, z, k + 1, K);
        if (first && k + 1 < K) {
            c = sub_axpy_dot_sq(r, ok, dz, ok + np, np, &q);
            sub_diag(cs, G, k + 1, K, q);
        } else {
            c = sub_axpy_dot(r, ok, dz, k + 1 < K ? ok + np : NULL, np);
        }
        if (!early && k + 1 < K) sg = sub_gz(G, b, z, k + 1, K);
        change += fabs(dz);
    }
    return change;
}

/**
 * bnmf_cond_row() for ICM or VB (all K coordinates) on a row whose Gram
 * matrix is G less the terms gathered in cs (bnmf_cond_sub_gather, for the
 * row's current z), without forming that matrix: a pass costs about 2 K
 * multiply-adds per gathered vector where forming the matrix costs
 * K (K + 1) / 2. The same passes as bnmf_cond_row (ICM: until the row stops
 * moving, at most ICM_MAX_PASSES); the same values up to rounding. On
 * return cs->r holds z' o_t, cs->osq and cs->gkk the row's sums of squares
 * and Gram diagonal.
 */
void bnmf_cond_row_sub(double *z, const double *G, const double *b, const double *lam,
                       int ls, double tau, int K, nmf_rule rule, double *v, double *ent,
                       cond_sub *cs)
{
    double change = cond_row_sub_pass(z, G, b, lam, ls, tau, K, rule, v, ent, cs, 1);
    if (rule != RULE_MODE) return;
    for (int pass = 1; pass < ICM_MAX_PASSES && icm_row_moves(z, K, change); pass++)
        change = cond_row_sub_pass(z, G, b, lam, ls, tau, K, rule, v, ent, cs, 0);
}

/**
 * The row's terms of the (expected) SSE after bnmf_cond_row_sub, with r_t =
 * z' o_t in cs->r: z' G_i z, G_i = G less the gathered terms with the
 * diagonal cs->gkk; VB (v, the row's variances, else NULL) plus
 * sum_k G_i[k, k] v_k, as h_sse_terms in nmf_sweep.c.
 */
double bnmf_cond_sub_quad(const cond_sub *cs, const double *G, const double *z,
                          const double *v, int K)
{
    double q = bnmf_quad_form(G, z, K) - dot_even(cs->r, cs->r, sub_stride(cs->nm));
    for (int k = 0; k < K; k++) {
        /* the diagonal: the row's own (VB: its variances out) */
        q += z[k] * z[k] * (cs->gkk[k] + cs->osq[k] - G[k + (size_t) k * K]);
        if (v) q += cs->gkk[k] * v[k];
    }
    return q;
}

/** z' G z for a K x K matrix G: sum_b z_b (G[, b]' z), in that order. The
 * inner sums of four columns are taken side by side (four independent
 * chains of multiply-adds instead of one); each is summed in the same order
 * as alone, so the result does not depend on the grouping. */
double bnmf_quad_form(const double *G, const double *z, int K)
{
    double s = 0.0;
    int b = 0;
    for (; b + 4 <= K; b += 4) {
        const double *G0 = G + (size_t) b * K, *G1 = G0 + K, *G2 = G1 + K, *G3 = G2 + K;
        double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
        for (int a = 0; a < K; a++) {
            const double za = z[a];
            t0 += G0[a] * za;
            t1 += G1[a] * za;
            t2 += G2[a] * za;
            t3 += G3[a] * za;
        }
        s += t0 * z[b];
        s += t1 * z[b + 1];
        s += t2 * z[b + 2];
        s += t3 * z[b + 3];
    }
    for (; b < K; b++) {
        const double *Gb = G + (size_t) b * K;
        double t = 0.0;
        for (int a = 0; a < K; a++) t += Gb[a] * z[a];
        s += t * z[b];
    }
    return s;
}

/* .Call entry (tests): G + sign * sum_t Z[, idx[t]] Z[, idx[t]]' for a K x n
 * matrix Z, 0-based idx, K x K matrix G; the upper triangle is updated and
 * the result symmetrised, as bnmf_masked_gram() does. */
SEXP bnmf_gram_update_call(SEXP G, SEXP Z, SEXP idx, SEXP sign)
{
    if (TYPEOF(Z) != REALSXP || !Rf_isMatrix(Z)) Rf_error("`Z` must be a double matrix");
    const int K = Rf_nrows(Z), n = Rf_ncols(Z);
    if (TYPEOF(G) != REALSXP || !Rf_isMatrix(G) || Rf_nrows(G) != K || Rf_ncols(G) != K)
        Rf_error("`G` must be a double K x K matrix");
    if (TYPEOF(idx) != INTSXP) Rf_error("`idx` must be an integer vector");
    if (TYPEOF(sign) != REALSXP || XLENGTH(sign) != 1) Rf_error("`sign` must be a number");
    const int m = (int) XLENGTH(idx);
    const int *ix = INTEGER(idx);
    for (int t = 0; t < m; t++)
        if (ix[t] == NA_INTEGER || ix[t] < 0 || ix[t] >= n)
            Rf_error("`idx` holds an index outside 0..ncol(Z) - 1");
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, K, K));
    bnmf_gram_update(REAL(out), REAL(G), REAL(Z), K, ix, m, K, REAL(sign)[0]);
    bnmf_symmetrise(REAL(out), K);
    UNPROTECT(1);
    return out;
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

/* .Call entry (tests): bnmf_cond_row_sub on one row (z, b, lam: K values)
 * whose Gram matrix is G less the terms of the columns of the K x nm matrix
 * O (VB, with V: K x nm variances, their sums off the diagonal too; V a
 * zero-length vector: none). par = c(tau, rule: 1 ICM, 2 VB). Returns
 * list(z, v, ent, r = O' z, gkk). */
SEXP bnmf_cond_row_sub_call(SEXP G, SEXP O, SEXP V, SEXP B, SEXP Z, SEXP L, SEXP par)
{
    if (TYPEOF(O) != REALSXP || !Rf_isMatrix(O)) Rf_error("`O` must be a double matrix");
    const int K = Rf_nrows(O), nm = Rf_ncols(O);
    if (K < 1) Rf_error("`O` must have at least one row");
    if (TYPEOF(G) != REALSXP || !Rf_isMatrix(G) || Rf_nrows(G) != K || Rf_ncols(G) != K)
        Rf_error("`G` must be a double K x K matrix");
    if (TYPEOF(V) != REALSXP || (XLENGTH(V) > 0 && XLENGTH(V) != XLENGTH(O)))
        Rf_error("`V` must be a double matrix of the shape of `O`, or numeric()");
    const int has_v = XLENGTH(V) > 0;
    if (TYPEOF(B) != REALSXP || XLENGTH(B) != K) Rf_error("`B` must hold K doubles");
    if (TYPEOF(Z) != REALSXP || XLENGTH(Z) != K) Rf_error("`Z` must hold K doubles");
    if (TYPEOF(L) != REALSXP || XLENGTH(L) != K) Rf_error("`L` must hold K doubles");
    if (TYPEOF(par) != REALSXP || XLENGTH(par) != 2) Rf_error("`par` must be c(tau, rule)");
    const double tau = REAL(par)[0];
    const int r = (int) REAL(par)[1];
    if (!(tau > 0.0) || !R_FINITE(tau)) Rf_error("`tau` must be positive and finite");
    if (r != RULE_MODE && r != RULE_MOMENT) Rf_error("`rule` must be 1 (ICM) or 2 (VB)");
    const size_t np = (size_t) sub_stride(nm);
    int *idx = (int *) R_alloc(nm > 0 ? nm : 1, sizeof(int));
    for (int t = 0; t < nm; t++) idx[t] = t;
    cond_sub cs;
    cs.O = (double *) R_alloc(np * K + 1, sizeof(double));
    cs.r = (double *) R_alloc(np + 1, sizeof(double));
    cs.osq = (double *) R_alloc(K, sizeof(double));
    cs.gkk = (double *) R_alloc(K, sizeof(double));
    const char *nms[] = {"z", "v", "ent", "r", "gkk", ""};
    SEXP out = PROTECT(Rf_mkNamed(VECSXP, nms));
    SEXP z = PROTECT(Rf_duplicate(Z));
    SEXP v = PROTECT(Rf_allocVector(REALSXP, K));
    SEXP ent = PROTECT(Rf_allocVector(REALSXP, K));
    SEXP rr = PROTECT(Rf_allocVector(REALSXP, nm));
    SEXP gkk = PROTECT(Rf_allocVector(REALSXP, K));
    SET_VECTOR_ELT(out, 0, z);
    SET_VECTOR_ELT(out, 1, v);
    SET_VECTOR_ELT(out, 2, ent);
    SET_VECTOR_ELT(out, 3, rr);
    SET_VECTOR_ELT(out, 4, gkk);
    for (int k = 0; k < K; k++) REAL(v)[k] = REAL(ent)[k] = 0.0;
    bnmf_cond_sub_gather(&cs, REAL(O), has_v ? REAL(V) : NULL, idx, nm, K, REAL(z));
    bnmf_cond_row_sub(REAL(z), REAL(G), REAL(B), REAL(L), 1, tau, K, (nmf_rule) r, REAL(v),
                      REAL(ent), &cs);
    memcpy(REAL(gkk), cs.gkk, sizeof(double) * K);
    if (nm > 0) memcpy(REAL(rr), cs.r, sizeof(double) * nm);
    UNPROTECT(6);
    return out;
}
