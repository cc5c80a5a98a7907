/* truncnorm.h -- the moments and entropy of N(mu, sd^2) truncated to
 * [0, inf) for variational Bayes (truncnorm.c's bnmf_tn_pos_vb), inline here
 * so that the conditional's kernels (cond_row.c, vb_rows.c, cond_sub.c and
 * their AVX2 clones) compute them without a call. */
#ifndef BNMF_TRUNCNORM_H
#define BNMF_TRUNCNORM_H
#include "bnmf.h"

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

void bnmf_tn_pos_vb(double mu, double sd, double *m1, double *var, double *ent);

#endif
