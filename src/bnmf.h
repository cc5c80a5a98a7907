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
#include <stdint.h>
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
#include <float.h>

/* x >= 0 and finite (FALSE for NaN and NA): R_FINITE() is a function call
 * in packages, and the checks of a call's arguments make 40,000 of them at
 * I = J = 1000, K = 20. */
static inline int bnmf_nonneg_finite(double x)
{
    return x >= 0.0 && x <= DBL_MAX;
}

/* x finite (FALSE for NaN and NA), without a function call */
static inline int bnmf_finite(double x)
{
    return fabs(x) <= DBL_MAX;
}

/* Every x[0..n-1] finite: one pass without a branch per entry. */
static inline int bnmf_all_finite(const double *x, R_xlen_t n)
{
    int ok = 1;
    for (R_xlen_t t = 0; t < n; t++) ok &= bnmf_finite(x[t]);
    return ok;
}

/* Every x[0..n-1] >= 0 and finite: one pass without a branch per entry. */
static inline int bnmf_all_nonneg_finite(const double *x, R_xlen_t n)
{
    int ok = 1;
    for (R_xlen_t t = 0; t < n; t++) ok &= bnmf_nonneg_finite(x[t]);
    return ok;
}

/* ---- rng.c: R's uniform generator, L'Ecuyer-CMRG stepped inline ------- */

/* MRG32k3a's moduli (rng.c) */
#define BNMF_MRG_M1 4294967087U
#define BNMF_MRG_M2 4294944443U

/* The uniforms are stepped BNMF_MRG_NB at a time into a buffer (rng.c,
 * bnmf_mrg_refill()), with both recursions' values, so that the state after
 * any uniform used can be written back. */
#define BNMF_MRG_NB 64

typedef struct {
    int on;          /* the L'Ecuyer-CMRG state is held here, not in R */
    int own;         /* the routine asked to hold it (bnmf_rng_get(1)) */
    int code;        /* .Random.seed[1], written back with the state */
    int pos;         /* uniforms of u used (BNMF_MRG_NB: none left) */
    uint32_t s[6];   /* .Random.seed[2:7] after the last uniform of u */
    double u[BNMF_MRG_NB];
    /* x_{n-3}, x_{n-2}, x_{n-1} before u[0], then the x_n of each u[n]
     * (xb); the same for the second recursion (yb) */
    uint32_t xb[BNMF_MRG_NB + 3], yb[BNMF_MRG_NB + 3];
} bnmf_rng_state;
extern attribute_hidden bnmf_rng_state bnmf_rng;

/** In place of GetRNGstate(): R's state, and with `own` under L'Ecuyer-CMRG
 * a copy of it held here for bnmf_unif() (only for routines whose every
 * draw goes through bnmf_unif() or between bnmf_rng_lend() and
 * bnmf_rng_reclaim()). */
void bnmf_rng_get(int own);
/** In place of PutRNGstate(): .Random.seed from the state in use. */
void bnmf_rng_put(void);
/** bnmf_rng_put(), R_CheckUserInterrupt(), bnmf_rng_get() as before. */
void bnmf_rng_interrupt(void);
/** Hand a held state back to R for R's own draws (rgamma(), exp_rand(),
 * ...); returns whether it was held, the argument of bnmf_rng_reclaim(). */
int bnmf_rng_lend(void);
/** Take the state back after R's draws (when bnmf_rng_lend() said so). */
void bnmf_rng_reclaim(int lent);
/** The next BNMF_MRG_NB uniforms of the held state into bnmf_rng.u. */
void bnmf_mrg_refill(void);
/** The step's tables; called once, from R_init_bnmf(). */
void bnmf_mrg_init(void);

/* The next uniform of the held L'Ecuyer-CMRG state (rng.c). */
static inline double bnmf_mrg_next(void)
{
    if (bnmf_rng.pos >= BNMF_MRG_NB) bnmf_mrg_refill();
    return bnmf_rng.u[bnmf_rng.pos++];
}

/** A uniform from R's generator: unif_rand(), or the same number stepped
 * inline while bnmf_rng holds the state. */
static inline double bnmf_unif(void)
{
    return bnmf_rng.on ? bnmf_mrg_next() : unif_rand();
}

/* ---- normal.c: exact N(0, 1) draws from bnmf_unif() (ziggurat) -------- */

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
 * Draw Z ~ N(0, 1) exactly, using only bnmf_unif() (so RNGkind(normal.kind)
 * plays no part); the caller brackets the calls with bnmf_rng_get()/bnmf_rng_put().
 * The fast path (97.2% of the draws: one uniform, normal.c section 2) is
 * inline; the rest of the draw goes on in bnmf_norm_std_slow().
 */
static inline double bnmf_norm_std(void)
{
    const double u = bnmf_unif() * (2.0 * BNMF_ZN);
    const int j0 = (int) u;
    const int j = j0 & (2 * BNMF_ZN - 1);
    const int i = j >> 1;
    const double x = (u - j0) * bnmf_zx[i];
    if (x < bnmf_zx[i + 1]) return x * bnmf_zsign[j & 1];
    return bnmf_norm_std_slow(u);
}

/* ---- exponential.c: exact Exp(1) draws from bnmf_unif() (ziggurat) ---- */

/** Set up the exponential ziggurat's tables; called once, from R_init_bnmf(). */
void bnmf_exp_init(void);

/* Its N = BNMF_EN blocks and abscissae x_0..x_N (read only after
 * bnmf_exp_init()), for the inline fast path below. */
#define BNMF_EN 256
extern attribute_hidden double bnmf_ex[BNMF_EN + 1];

/** The draw of bnmf_exp_zig() whose first uniform, times N, is u, when its
 * fast path does not return (the tail, the wedges, the rejections). */
double bnmf_exp_zig_slow(double u);

/**
 * Draw E ~ Exp(1) exactly, using only bnmf_unif(): the fast path (97.8% of
 * the draws: one uniform, a look-up, a multiplication; exponential.c,
 * section 2) inline, the rest in bnmf_exp_zig_slow().
 */
static inline double bnmf_exp_zig(void)
{
    const double u = bnmf_unif() * BNMF_EN;
    const int j0 = (int) u;
    const int i = j0 & (BNMF_EN - 1);
    const double x = (u - j0) * bnmf_ex[i];
    if (x < bnmf_ex[i + 1]) return x;
    return bnmf_exp_zig_slow(u);
}

/* ---- truncnorm.c: truncated normal distribution ------------------------ */

/** Draw Z ~ N(0, 1) conditioned on a <= Z <= b (a < b; either may be infinite). */
double bnmf_rtnorm_std(double a, double b);

/** Draw X ~ N(mean, sd^2) conditioned on lower <= X <= upper (sd > 0). */
double bnmf_rtnorm1(double mean, double sd, double lower, double upper);

/* The threshold above which a = (lower - mean) / sd takes a tail sampler
 * (truncnorm.c, branches (T) and (E)). */
#define BNMF_TN_TAIL 0.66

/*
 * E ~ Exp(1) by inversion, E = -log(U), for the unbounded tail: one uniform
 * and one log, about a third of the cost of exp_rand(). A uniform below
 * 2^-10 is refined by a second one, U = (floor(2^27 U1) + U2) / 2^27 (as R's
 * inversion normal generator does), so that E reaches about 41 rather than
 * the 22 a single 32-bit uniform allows: the tail is at least as complete as
 * exp_rand()'s.
 */
static inline double bnmf_std_exp(void)
{
    double u = bnmf_unif();
    if (u < 0x1p-10) u = (floor(u * 0x1p27) + bnmf_unif()) * 0x1p-27;
    return -log(u);
}

/*
 * The offset Y = Z - a >= 0 of Z ~ N(0, 1) | Z >= a, for finite a >
 * BNMF_TN_TAIL (a^2 may overflow): rejection from the exponential proposal
 * a + E / lam, E ~ Exp(1) (bnmf_exp_zig), accepting with probability
 * exp(-q), q = (a + E / lam - lam)^2 / 2 (exact for any rate lam >= a;
 * Robert 1995). The squeezes 1 - q <= exp(-q) <= 1 - q + q^2 / 2 decide
 * most proposals without exp().
 *   a < 64: Robert's optimal rate lam = (a + s) / 2, s = sqrt(a^2 + 4), and
 *     1 / lam = (s - a) / 2 without a division ((s + a)(s - a) = 4; the
 *     cancellation in s - a costs at most 2^-42 relatively below a = 64).
 *     Acceptance lam sqrt(2 pi) Q(a) exp(lam a - lam^2 / 2): 0.85 at
 *     a = 0.66, 0.88 at a = 1, 0.93 at a = 2, against the Rayleigh
 *     proposal's a R(a) (0.52, 0.66, 0.84) that truncnorm.c's branch (T)
 *     takes for finite b.
 *   a >= 64: lam = a (acceptance a R(a) > 0.9997).
 * truncnorm.c's tail_offset calls it for b = Inf.
 */
static inline double bnmf_tail_offset_inf(double a)
{
    double lam, ilam;
    if (a < 64.0) {
        const double s = sqrt(a * a + 4.0);
        lam = 0.5 * (a + s);
        ilam = 0.5 * (s - a);
    } else {
        lam = a;
        ilam = 1.0 / a;
    }
    const double am = a - lam;
    for (;;) {
        const double y = bnmf_exp_zig() * ilam;
        const double d = am + y, q = 0.5 * d * d;
        const double u = bnmf_unif();
        if (u <= 1.0 - q) return y;
        if (u <= 1.0 - q + 0.5 * q * q && u <= exp(-q)) return y;
    }
}

/**
 * bnmf_rtnorm1(mean, sd, 0, Inf), the conditional of every Gibbs coordinate,
 * given a = -mean / sd (however rounded: the caller may have it from a
 * multiplication by 1 / sd), with its two common cases inline (finite
 * mean, finite sd > 0). For a < 0 (not -0), a is below the tail's
 * threshold and the interval [a, Inf) is wide, so it draws N(0, 1) until
 * it is at least a (truncnorm.c, method (W)); for finite a > BNMF_TN_TAIL
 * it takes the tail sampler (E). Every other case goes to bnmf_rtnorm1.
 */
static inline double bnmf_rtnorm_pos_a(double mean, double sd, double a)
{
    if (isfinite(mean) && sd > 0.0 && isfinite(sd)) {
        if (a < 0.0) {
            double z;
            do z = bnmf_norm_std(); while (z < a);
            const double x = mean + sd * z;
            return x < 0.0 ? 0.0 : x;
        }
        if (a > BNMF_TN_TAIL && isfinite(a)) return 0.0 + sd * bnmf_tail_offset_inf(a);
    }
    return bnmf_rtnorm1(mean, sd, 0.0, R_PosInf);
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

/* A helper inlined into each clone of its caller (so compiled for the
 * clone's target) */
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* The loops over missing entries (bnmf_cond_row_sub, bnmf_gram_update in
 * cond_sub.c and gram.c) and W'W (bnmf_gram_cols, linalg.c) run on four-value
 * vectors (GCC's vector extension): pairs of SSE2 operations in the default
 * build, one AVX2 operation each in the AVX2 clone that BNMF_CLONES adds on
 * x86-64 Linux with glibc (chosen once, at load, by the processor; no -march
 * flag). Every lane computes the same
 * sums in the same order either way and the clone's target is "avx2" alone
 * (no FMA contraction), so both clones give the same bits
 * (tools/check-clones.sh compares them with a build without the clone,
 * -DBNMF_NO_CLONES). */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8 && defined(__x86_64__) && \
    defined(__linux__) && defined(__GLIBC__) && !defined(BNMF_NO_CLONES)
#define BNMF_CLONES __attribute__((target_clones("avx2", "default")))
/* the same platforms for code written for AVX2 and chosen at run time
 * (rng.c: the uniforms' fill) */
#define BNMF_AVX2_AT_RUNTIME 1
#else
#define BNMF_CLONES
#endif

#if defined(__GNUC__)
/* four doubles (and four 64-bit integers, for their bits and comparisons),
 * loaded from and stored to any 8-byte aligned address */
typedef double bnmf_v4 __attribute__((vector_size(32), aligned(8)));
typedef long long bnmf_v4i __attribute__((vector_size(32), aligned(8)));
#endif

/* sum_l g[l] z[l] over K values in four partial sums, sum over l = 0, 1,
 * 2, 3 (mod 4) (the rest into the first): ((s0 + s1) + (s2 + s3)) */
static ALWAYS_INLINE double bnmf_dot4(const double *g, const double *z, int K)
{
    int l = 0;
#if defined(__GNUC__)
    bnmf_v4 S = {0.0, 0.0, 0.0, 0.0};
    for (; l + 4 <= K; l += 4) S += *(const bnmf_v4 *) (g + l) * *(const bnmf_v4 *) (z + l);
    double g0 = S[0], g1 = S[1], g2 = S[2], g3 = S[3];
#else
    double g0 = 0.0, g1 = 0.0, g2 = 0.0, g3 = 0.0;
    for (; l + 4 <= K; l += 4) {
        g0 += g[l] * z[l];
        g1 += g[l + 1] * z[l + 1];
        g2 += g[l + 2] * z[l + 2];
        g3 += g[l + 3] * z[l + 3];
    }
#endif
    for (; l < K; l++) g0 += g[l] * z[l];
    return (g0 + g1) + (g2 + g3);
}

/* d += c o over K values */
static ALWAYS_INLINE void bnmf_axpy4(double *restrict d, double c, const double *restrict o,
                                     int K)
{
    int k = 0;
#if defined(__GNUC__)
    const bnmf_v4 cv = {c, c, c, c};
    for (; k + 4 <= K; k += 4) {
        bnmf_v4 dv = *(bnmf_v4 *) (d + k);
        dv += cv * *(const bnmf_v4 *) (o + k);
        *(bnmf_v4 *) (d + k) = dv;
    }
#endif
    for (; k < K; k++) d[k] += c * o[k];
}

#endif
