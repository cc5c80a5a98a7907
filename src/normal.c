/*
 * normal.c -- exact standard normal draws built only on R's uniform
 * generator bnmf_unif(): the ziggurat method of Marsaglia and Tsang (2000)
 * with Marsaglia's (1964) exact tail.  Under R's default normal kind
 * (inversion), norm_rand() costs two uniforms and a qnorm(); this costs one
 * uniform and a multiplication for 97.2% of the draws.
 *
 * 1. The ziggurat.  Let f(x) = exp(-x^2 / 2) on x >= 0 (the half-normal
 *    density up to a constant).  Cover the region under f by N = 128 blocks
 *    of equal area v, built from abscissae
 *        r = x_1 > x_2 > ... > x_{N-1} > x_N = 0:
 *      block 0 (the base): the rectangle [0, r] x [0, f(r)] together with the
 *        tail {(x, y): x > r, 0 < y < f(x)};
 *        v = r f(r) + int_r^inf f = r f(r) + sqrt(2 pi) Q(r);
 *      block i = 1, ..., N - 1: the rectangle [0, x_i] x [f(x_i), f(x_{i+1})],
 *        of area x_i (f(x_{i+1}) - f(x_i)) = v.
 *    Given r (hence v), the blocks determine the abscissae one after the
 *    other,
 *        f(x_{i+1}) = f(x_i) + v / x_i,   x_{i+1} = sqrt(-2 log f(x_{i+1})),
 *    and r is the root of the one equation f(x_N) = 1 (the top block ends
 *    at the mode).  Starting from a larger r gives a smaller v and a
 *    smaller f(x_N), so bnmf_norm_init() finds r by bisection on [2, 5] (to the
 *    last bit; checked against the published r = 3.442619855899 and
 *    v = 9.91256303526217e-3 for N = 128 in tests/testthat/test-normal.R),
 *    then sets x_N = 0 and f(x_N) = 1 exactly.  The base is given the width
 *    x_0 = v / f(r) of a rectangle of height f(r) and area v.
 *
 * 2. A draw.  Take a block i uniformly from 0..N-1 and a sign s, and a
 *    point X = U x_i, U uniform on (0, 1).
 *      - X < x_{i+1} (x_1 = r for the base): the point (X, Y), Y uniform on
 *        the block's height, lies under f whatever Y: return s X.  This is
 *        the fast path; its probability is mean_i(x_{i+1} / x_i) = 0.972.
 *      - block 0, X >= r: with probability (x_0 - r) / x_0 = (tail area) / v
 *        the point is in the tail, and X is then distributed as the tail
 *        of f beyond r: return s (r + T), T from section 3.
 *      - block i >= 1, X >= x_{i+1} (the wedge): draw the height
 *        Y = f(x_i) + U' (f(x_{i+1}) - f(x_i)) and return s X if
 *        Y < f(X); otherwise start again with a new block.
 *    Every step is rejection from the uniform distribution on the union of
 *    the blocks, whose accepted part is the region under f, so |Z| has
 *    density proportional to f exactly, and Z ~ N(0, 1).
 *
 * 3. The tail (Marsaglia 1964): with E1, E2 independent Exp(1),
 *    T = E1 / r is accepted when 2 E2 > T^2; then r + T has density
 *    proportional to f on (r, inf).  (The proposal r + E1 / r has density
 *    r exp(-r t), and f(r + t) / (f(r) exp(-r t)) = exp(-t^2 / 2) =
 *    P(E2 > t^2 / 2).)  E = -log(U) from one uniform reaches only
 *    -log(2^-32) = 22.2, so a uniform below 2^-10 is refined by a second one
 *    (as in truncnorm.c): E reaches about 41, so r + T reaches about 12.5
 *    (T^2 < 2 E2 <= 82), and the tail is complete far beyond anything a
 *    sampler will notice (P(Z > 10) = 7.6e-24).
 *
 * 4. The bits.  R's uniforms have about 32 bits of resolution (k / 2^32
 *    under Mersenne-Twister, k / (2^32 - 208) under L'Ecuyer-CMRG, k / 2^30
 *    under Knuth-TAOCP) and are never 0 or 1.  The classic implementation
 *    takes the block from the low bits of a 32-bit integer and the position
 *    from the whole integer, low bits included, which makes the block and
 *    the position dependent (Doornik 2005).  Here one uniform U1 is split
 *    into disjoint bits:
 *        V = 2N U1,  j = floor(V),  W = V - j  (exact in floating point);
 *        block i = floor(j / 2), sign s from j mod 2 (the top 8 bits),
 *        position U = W (the remaining bits: 24 under Mersenne-Twister,
 *        22 under Knuth-TAOCP).
 *    If U1 is uniform on (0, 1), j is uniform on 0..2N-1 and W is uniform on
 *    [0, 1) independently of j; for U1 = k / 2^32 (Mersenne-Twister) this
 *    holds exactly on the lattice, W = (k mod 2^24) / 2^24; under
 *    L'Ecuyer-CMRG to within 2^-24 relatively.  So one uniform makes a draw
 *    on the fast path, and its resolution is x_i 2^-24 <= 2.1e-7 in the
 *    body (2^32 distinct values in all, as many as the uniform has); the
 *    tail, which needs more, and the wedge's height take fresh uniforms, so
 *    the block, the sign, the position and every rejection variable are
 *    independent, as the derivation above requires.  bnmf_unif() < 1, so
 *    j <= 2N - 1; it is masked all the same.
 *
 * Only bnmf_unif() is used: set.seed() and RNGkind(kind =) determine the
 * draws, RNGkind(normal.kind =) does not affect them.  The caller brackets
 * the calls with bnmf_rng_get()/bnmf_rng_put() (rng.c).  The tables are computed once,
 * by bnmf_norm_init() from R_init_bnmf(), and only read afterwards.
 *
 * References
 *   Doornik, J. A. (2005). An improved ziggurat method to generate normal
 *     random samples. Mimeo, University of Oxford.
 *   Marsaglia, G. (1964). Generating a variable from the tail of the normal
 *     distribution. Technometrics 6(1), 101-102.
 *   Marsaglia, G. and Tsang, W. W. (2000). The ziggurat method for generating
 *     random variables. Journal of Statistical Software 5(8), 1-7.
 */
#include "bnmf_call.h"
#include "nmf.h"

#define ZN BNMF_ZN             /* number of blocks (a power of 2) */

double bnmf_zx[ZN + 1];        /* x_0 = v / f(r), x_1 = r, ..., x_N = 0   */
static double zf[ZN + 1];      /* f(x_i), and zf[0] = 0: block i spans the
                                  heights [zf[i], zf[i+1]] (the base: its
                                  rectangle)                              */
static double zr;              /* r = x_1                                 */
static double zv;              /* v, the common area of the blocks         */
static int zready = 0;

/*
 * The abscissae of a ziggurat of N blocks under a decreasing f with
 * f(0) = 1, for a trial r: fills x[1..N-1], fx[1..N-1] and returns f(x_N)
 * as the recursion gives it, or 2 if it passes 1 before the last block (r
 * too small).  *v receives the block area r f(r) + tail(r).
 */
static double zig_layers(const bnmf_zig_shape *sh, int N, double r, double *v, double *x,
                         double *fx)
{
    const double tail = sh->tail(r);
    const double a = r * sh->f(r) + tail;
    x[1] = r;
    fx[1] = sh->f(r);
    for (int i = 1; i < N - 1; i++) {
        fx[i + 1] = fx[i] + a / x[i];
        if (!(fx[i + 1] < 1.0)) return 2.0;
        x[i + 1] = sh->finv(fx[i + 1]);
    }
    *v = a;
    return fx[N - 1] + a / x[N - 1];
}

/*
 * The table of a ziggurat of N blocks (section 1, for the shape sh): r by
 * bisection on [lo, hi] (f(x_N) > 1 at lo, < 1 at hi) to the last bit,
 * x[0..N], fx[0..N] with x_0 = v / f(r), fx[0] = 0, x_N = 0, fx[N] = 1.
 */
void bnmf_zig_build(const bnmf_zig_shape *sh, int N, double lo, double hi, double *x,
                    double *fx, double *r, double *v)
{
    double a = 0.0;
    for (int it = 0; it < 200; it++) {
        const double mid = 0.5 * (lo + hi);
        if (!(mid > lo && mid < hi)) break;
        if (zig_layers(sh, N, mid, &a, x, fx) > 1.0) lo = mid; else hi = mid;
    }
    /* the larger end: f(x_N) <= 1, so every f(x_i) < 1 for i < N */
    (void) zig_layers(sh, N, hi, &a, x, fx);
    *r = hi;
    *v = a;
    x[0] = a / fx[1];
    fx[0] = 0.0;
    x[N] = 0.0;
    fx[N] = 1.0;
}

static double norm_f(double x)
{
    return exp(-0.5 * x * x);
}

static double norm_finv(double y)
{
    return sqrt(-2.0 * log(y));
}

static double norm_tail(double r)
{
    return sqrt(2.0 * M_PI) * pnorm(r, 0.0, 1.0, 0, 0);
}

void bnmf_norm_init(void)
{
    const bnmf_zig_shape sh = {norm_f, norm_finv, norm_tail};
    /* f(x_N) > 1 at r = 2 and < 1 at r = 5 */
    bnmf_zig_build(&sh, ZN, 2.0, 5.0, bnmf_zx, zf, &zr, &zv);
    zready = 1;
}

/* The sign as a factor: `(j & 1) ? -x : x` compiles to a branch taken half
 * the time at random, about one misprediction every other draw. */
const double bnmf_zsign[2] = {1.0, -1.0};

double bnmf_norm_std_slow(double u)
{
    for (;;) {
        const int j0 = (int) u;
        const int j = j0 & (2 * ZN - 1);
        const int i = j >> 1;
        double x = (u - j0) * bnmf_zx[i];
        if (x < bnmf_zx[i + 1]) return x * bnmf_zsign[j & 1];
        if (i == 0) {                                   /* the tail */
            double t;
            /* E ~ Exp(1) by inversion, refined below 2^-10 (section 3) */
            do t = bnmf_std_exp() / zr; while (!(2.0 * bnmf_std_exp() > t * t));
            x = zr + t;
            return x * bnmf_zsign[j & 1];
        }
        /* the wedge of block i */
        const double y = zf[i] + bnmf_unif() * (zf[i + 1] - zf[i]);
        if (y < exp(-0.5 * x * x)) return x * bnmf_zsign[j & 1];
        u = bnmf_unif() * (2.0 * ZN);                  /* rejected: a new draw */
    }
}

/* ---- .Call entry points (tests and benchmarks) ------------------------- */

/* n draws of `draw` into a new double vector, the RNG state read and
 * written back around them and an interrupt check every 2^20 draws: the
 * .Call entries of the generators (tests and benchmarks). `ready`: whether
 * the generator's tables are set up. */
SEXP bnmf_draws(SEXP n_, double (*draw)(void), int ready, const char *what)
{
    const R_xlen_t n = bnmf_count_arg(n_);
    if (!ready) Rf_error("the %s generator's tables are not set up.", what);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    double *po = REAL(out);
    bnmf_rng_get(1);   /* the generators draw through bnmf_unif() only */
    for (R_xlen_t i = 0; i < n; i++) {
        po[i] = draw();
        if ((i & 0xFFFFF) == 0xFFFFF) {   /* every 2^20 draws */
            bnmf_rng_interrupt();
        }
    }
    bnmf_rng_put();
    UNPROTECT(1);
    return out;
}

/* A ziggurat's table for the tests: list(r, v, x = x_0..x_N, f = f_0..f_N) */
SEXP bnmf_zig_table(double r, double v, const double *x, const double *f, int N,
                    int ready, const char *what)
{
    if (!ready) Rf_error("the %s generator's tables are not set up.", what);
    SEXP e[4];
    e[0] = PROTECT(Rf_ScalarReal(r));
    e[1] = PROTECT(Rf_ScalarReal(v));
    e[2] = PROTECT(Rf_allocVector(REALSXP, N + 1));
    e[3] = PROTECT(Rf_allocVector(REALSXP, N + 1));
    for (int i = 0; i <= N; i++) {
        REAL(e[2])[i] = x[i];
        REAL(e[3])[i] = f[i];
    }
    const char *names[] = {"r", "v", "x", "f"};
    SEXP out = bnmf_named_list(4, names, e);
    UNPROTECT(4);
    return out;
}

static double norm_draw(void)
{
    return bnmf_norm_std();
}

SEXP bnmf_norm_std_call(SEXP n_)
{
    return bnmf_draws(n_, norm_draw, zready, "normal");
}

/* list(r, v, x = x_0..x_N, f = 0, f(x_1), ..., f(x_N) = 1) */
SEXP bnmf_norm_table_call(void)
{
    return bnmf_zig_table(zr, zv, bnmf_zx, zf, ZN, zready, "normal");
}
