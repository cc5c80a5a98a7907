/*
 * normal.c -- exact standard normal draws built only on R's uniform
 * generator unif_rand(): the ziggurat method of Marsaglia and Tsang (2000)
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
 *    independent, as the derivation above requires.  unif_rand() < 1, so
 *    j <= 2N - 1; it is masked all the same.
 *
 * Only unif_rand() is used: set.seed() and RNGkind(kind =) determine the
 * draws, RNGkind(normal.kind =) does not affect them.  The caller brackets
 * the calls with GetRNGstate()/PutRNGstate().  The tables are computed once,
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
 * The abscissae for a trial r: fills x[1..N-1], f[1..N-1] and returns
 * f(x_N) as the recursion gives it, or 2 if it passes 1 before the last
 * block (r too small).  *v receives the block area.
 */
static double norm_layers(double r, double *v, double *x, double *f)
{
    const double tail = sqrt(2.0 * M_PI) * pnorm(r, 0.0, 1.0, 0, 0);
    const double a = r * exp(-0.5 * r * r) + tail;
    x[1] = r;
    f[1] = exp(-0.5 * r * r);
    for (int i = 1; i < ZN - 1; i++) {
        f[i + 1] = f[i] + a / x[i];
        if (!(f[i + 1] < 1.0)) return 2.0;
        x[i + 1] = sqrt(-2.0 * log(f[i + 1]));
    }
    *v = a;
    return f[ZN - 1] + a / x[ZN - 1];
}

void bnmf_norm_init(void)
{
    double lo = 2.0, hi = 5.0, v = 0.0;
    /* f(x_N) decreases in r: > 1 at r = 2 and < 1 at r = 5 */
    for (int it = 0; it < 200; it++) {
        const double mid = 0.5 * (lo + hi);
        if (!(mid > lo && mid < hi)) break;
        if (norm_layers(mid, &v, bnmf_zx, zf) > 1.0) lo = mid; else hi = mid;
    }
    /* the larger end: f(x_N) <= 1, so every f(x_i) < 1 for i < N */
    (void) norm_layers(hi, &v, bnmf_zx, zf);
    zr = hi;
    zv = v;
    bnmf_zx[0] = v / zf[1];
    zf[0] = 0.0;
    bnmf_zx[ZN] = 0.0;
    zf[ZN] = 1.0;
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
        const double y = zf[i] + unif_rand() * (zf[i + 1] - zf[i]);
        if (y < exp(-0.5 * x * x)) return x * bnmf_zsign[j & 1];
        u = unif_rand() * (2.0 * ZN);                  /* rejected: a new draw */
    }
}

/* ---- .Call entry points (tests and benchmarks) ------------------------- */

SEXP bnmf_norm_std_call(SEXP n_)
{
    if ((TYPEOF(n_) != REALSXP && TYPEOF(n_) != INTSXP) || XLENGTH(n_) != 1)
        Rf_error("`n` must be a single non-negative whole number.");
    const double dn = Rf_asReal(n_);
    if (ISNAN(dn) || dn < 0.0 || dn != floor(dn) || dn > (double) R_XLEN_T_MAX)
        Rf_error("`n` must be a single non-negative whole number.");
    if (!zready) Rf_error("the normal generator's tables are not set up.");
    const R_xlen_t n = (R_xlen_t) dn;
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    double *po = REAL(out);
    GetRNGstate();
    for (R_xlen_t i = 0; i < n; i++) {
        po[i] = bnmf_norm_std();
        if ((i & 0xFFFFF) == 0xFFFFF) {   /* every 2^20 draws */
            PutRNGstate();
            R_CheckUserInterrupt();
            GetRNGstate();
        }
    }
    PutRNGstate();
    UNPROTECT(1);
    return out;
}

/* list(r, v, x = x_0..x_N, f = 0, f(x_1), ..., f(x_N) = 1) */
SEXP bnmf_norm_table_call(void)
{
    if (!zready) Rf_error("the normal generator's tables are not set up.");
    SEXP v[4];
    v[0] = PROTECT(Rf_ScalarReal(zr));
    v[1] = PROTECT(Rf_ScalarReal(zv));
    v[2] = PROTECT(Rf_allocVector(REALSXP, ZN + 1));
    v[3] = PROTECT(Rf_allocVector(REALSXP, ZN + 1));
    for (int i = 0; i <= ZN; i++) {
        REAL(v[2])[i] = bnmf_zx[i];
        REAL(v[3])[i] = zf[i];
    }
    const char *names[] = {"r", "v", "x", "f"};
    SEXP out = bnmf_named_list(4, names, v);
    UNPROTECT(4);
    return out;
}
