/*
 * bnmf.h -- shared types and the C kernels of bnmf.
 *
 * Kernels here take plain C pointers and sizes and never touch a SEXP; the
 * .Call entry points that convert R objects are declared in bnmf_call.h.
 *
 * Notation (as in the R documentation):
 *   X (I x J) ~ W (I x K) H (K x J); W_ik ~ Exp(lambda), H_kj ~ Exp(lambda),
 *   X_ij ~ N((WH)_ij, 1/tau), tau ~ Gamma(alpha, beta) (shape, rate).
 * Matrices are column-major, as in R.
 */
#ifndef BNMF_H
#define BNMF_H

#define R_NO_REMAP
#ifndef USE_FC_LEN_T
#define USE_FC_LEN_T
#endif
#include <Rconfig.h>
#include <R.h>
#include <Rinternals.h>
#include <Rmath.h>
#include <R_ext/BLAS.h>
#include <R_ext/Lapack.h>
#include <R_ext/Utils.h>
#include <R_ext/Visibility.h>
#ifndef FCONE
#define FCONE
#endif

/* ---- normal.c: exact N(0, 1) draws from unif_rand() (ziggurat) -------- */

/** Set up the ziggurat's tables; called once, from R_init_bnmf(). */
void bnmf_norm_init(void);

/* The ziggurat's N = BNMF_ZN blocks, its abscissae x_0..x_N (read only
 * after bnmf_norm_init()) and the sign factors {1, -1}, for the inline fast
 * path below. */
#define BNMF_ZN 128
extern attribute_hidden double bnmf_zx[BNMF_ZN + 1];
extern attribute_hidden const double bnmf_zsign[2];

/** The draw of bnmf_norm_std() whose first uniform, times 2N, is u, when
 * its fast path does not return (the tail, the wedges, the rejections). */
double bnmf_norm_std_slow(double u);

/**
 * Draw Z ~ N(0, 1) exactly, using only unif_rand() (so RNGkind(normal.kind)
 * plays no part); the caller brackets the calls with GetRNGstate/PutRNGstate.
 * The fast path (97.2% of the draws: one uniform, normal.c section 2) is
 * inline; the rest of the draw goes on in bnmf_norm_std_slow().
 */
static inline double bnmf_norm_std(void)
{
    const double u = unif_rand() * (2.0 * BNMF_ZN);
    const int j0 = (int) u;
    const int j = j0 & (2 * BNMF_ZN - 1);
    const int i = j >> 1;
    const double x = (u - j0) * bnmf_zx[i];
    if (x < bnmf_zx[i + 1]) return x * bnmf_zsign[j & 1];
    return bnmf_norm_std_slow(u);
}

/* ---- truncnorm.c: truncated normal distribution ------------------------ */

/** Draw Z ~ N(0, 1) conditioned on a <= Z <= b (a < b; either may be infinite). */
double bnmf_rtnorm_std(double a, double b);

/** Draw X ~ N(mean, sd^2) conditioned on lower <= X <= upper (sd > 0). */
double bnmf_rtnorm1(double mean, double sd, double lower, double upper);

/**
 * bnmf_rtnorm1(mean, sd, 0, Inf), the conditional of every Gibbs coordinate:
 * the same draws, with its commonest case inline. For finite mean and
 * finite sd > 0 with a = -mean / sd < 0 (not -0), a is below the tail's
 * threshold and the interval [a, Inf) is wide, so bnmf_rtnorm1 draws
 * N(0, 1) until it is at least a (truncnorm.c, method (W)); that loop is
 * here.
 */
static inline double bnmf_rtnorm_pos(double mean, double sd)
{
    const double a = (0.0 - mean) / sd;
    if (!(a < 0.0 && isfinite(mean) && sd > 0.0 && isfinite(sd)))
        return bnmf_rtnorm1(mean, sd, 0.0, R_PosInf);
    double z;
    do z = bnmf_norm_std(); while (z < a);
    const double x = mean + sd * z;
    return x < 0.0 ? 0.0 : x;
}

/**
 * log of the upper-tail Mills ratio, log( (1 - Phi(x)) / phi(x) ),
 * accurate for every finite x (including x -> +inf and x -> -inf).
 */
double bnmf_log_mills(double x);

/**
 * Mean and variance of N(mean, sd^2) truncated to [0, inf), exact in the
 * tails (computed through the log Mills ratio).
 */
void bnmf_tn_pos_moments(double mean, double sd, double *m1, double *var);

/** exp(x^2) erfc(x) for x >= 0, to a few ulps (Chebyshev series). */
double bnmf_erfcx(double x);

/**
 * log Q(a) = log(1 - Phi(a)) and the hazard lambda(a) = phi(a) / Q(a) for
 * finite a, from one erfcx (no pnorm).
 */
void bnmf_logq_hazard(double a, double *lq, double *lam);

/** log density at x >= 0 of N(mean, sd^2) truncated to [0, inf). */
double bnmf_tn_pos_logdens(double x, double mean, double sd);

/* The loops over missing entries (bnmf_cond_row_sub, bnmf_gram_update in
 * gauss_cond.c) run on four-value vectors (GCC's vector extension): pairs
 * of SSE2 operations in the default build, one AVX2 operation each in the
 * AVX2 clone that BNMF_CLONES adds on x86-64 Linux with glibc (chosen once,
 * at load, by the processor; no -march flag). Every lane computes the same
 * sums in the same order either way and the clone's target is "avx2" alone
 * (no FMA contraction), so both clones give the same bits
 * (tools/check-clones.sh compares them with a build without the clone,
 * -DBNMF_NO_CLONES). */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8 && defined(__x86_64__) && \
    defined(__linux__) && defined(__GLIBC__) && !defined(BNMF_NO_CLONES)
#define BNMF_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define BNMF_CLONES
#endif

#endif
