/*
 * exponential.c -- exact Exp(1) draws built only on R's uniform generator
 * unif_rand(): the ziggurat method of Marsaglia and Tsang (2000) for the
 * exponential density, laid out as normal.c's ziggurat for the normal.
 * E = -log(U) costs one uniform and a log(); this costs one uniform and a
 * multiplication for 97.8% of the draws. It is the proposal of the
 * truncated normal's one-sided tail (bnmf.h, bnmf_tail_offset_inf), the
 * draw of nearly every coordinate of a sparse Gibbs fit.
 *
 * 1. The ziggurat.  Let f(x) = exp(-x) on x >= 0.  Cover the region under f
 *    by N = 256 blocks of equal area v, built from abscissae
 *        r = x_1 > x_2 > ... > x_{N-1} > x_N = 0:
 *      block 0 (the base): the rectangle [0, r] x [0, f(r)] together with the
 *        tail {(x, y): x > r, 0 < y < f(x)}; v = r f(r) + f(r);
 *      block i = 1, ..., N - 1: the rectangle [0, x_i] x [f(x_i), f(x_{i+1})],
 *        of area x_i (f(x_{i+1}) - f(x_i)) = v.
 *    Given r, the blocks determine the abscissae one after the other,
 *        f(x_{i+1}) = f(x_i) + v / x_i,   x_{i+1} = -log f(x_{i+1}),
 *    and r is the root of f(x_N) = 1, found by bisection on [5, 10] to the
 *    last bit (checked against the published r = 7.69711747013104972 and
 *    v = 3.949659822581572e-3 in tests/testthat/test-exponential.R); then
 *    x_N = 0 and f(x_N) = 1 exactly.  The base has the width x_0 = v / f(r)
 *    of a rectangle of height f(r) and area v.
 *
 * 2. A draw.  Take a block i uniformly from 0..N-1 and a point X = W x_i,
 *    W uniform on [0, 1).
 *      - X < x_{i+1} (x_1 = r for the base): (X, Y) lies under f whatever
 *        the height Y: return X.  The fast path; its probability is
 *        mean_i(x_{i+1} / x_i) = 0.978.
 *      - block 0, X >= r: the point is in the tail (probability
 *        f(r) / v of the base), and X is distributed as the tail of f
 *        beyond r, which is r + Exp(1) (the exponential forgets): add r and
 *        draw again from the start.
 *      - block i >= 1, X >= x_{i+1} (the wedge): draw the height
 *        Y = f(x_i) + U' (f(x_{i+1}) - f(x_i)) and return X if Y < f(X);
 *        otherwise start again with a new block.
 *    Every step is rejection from the uniform distribution on the union of
 *    the blocks, whose accepted part is the region under f: the draw has
 *    density f exactly.  The tail has no cut-off (each pass through it adds
 *    r = 7.7 with probability 4.5e-4).
 *
 * 3. The bits, as in normal.c (section 4): one uniform U1 is split into
 *        V = N U1,  i = floor(V)  (the top 8 bits),  W = V - i  (the rest:
 *        24 bits under Mersenne-Twister, 22 under Knuth-TAOCP),
 *    exact in floating point; i is uniform on 0..N-1 and W uniform on [0, 1)
 *    independently of i (on the lattice k / 2^32 exactly, under
 *    L'Ecuyer-CMRG to within 2^-24 relatively).  The fast path's resolution
 *    is x_i 2^-24 <= 5.2e-7; the wedge's height and every new block take
 *    fresh uniforms.
 *
 * Only unif_rand() is used: set.seed() and RNGkind(kind =) determine the
 * draws.  The caller brackets the calls with GetRNGstate()/PutRNGstate().
 * The tables are computed once, by bnmf_exp_init() from R_init_bnmf(), and
 * only read afterwards.
 *
 * References
 *   Marsaglia, G. and Tsang, W. W. (2000). The ziggurat method for generating
 *     random variables. Journal of Statistical Software 5(8), 1-7.
 */
#include "bnmf_call.h"
#include "nmf.h"

#define EN BNMF_EN             /* number of blocks (a power of 2) */

double bnmf_ex[EN + 1];        /* x_0 = v / f(r), x_1 = r, ..., x_N = 0   */
static double ef[EN + 1];      /* f(x_i), and ef[0] = 0                   */
static double er;              /* r = x_1                                 */
static double ev;              /* v, the common area of the blocks         */
static int eready = 0;

/*
 * The abscissae for a trial r: fills x[1..N-1], f[1..N-1] and returns
 * f(x_N) as the recursion gives it, or 2 if it passes 1 before the last
 * block (r too small).  *v receives the block area.
 */
static double exp_layers(double r, double *v, double *x, double *f)
{
    const double a = (r + 1.0) * exp(-r);
    x[1] = r;
    f[1] = exp(-r);
    for (int i = 1; i < EN - 1; i++) {
        f[i + 1] = f[i] + a / x[i];
        if (!(f[i + 1] < 1.0)) return 2.0;
        x[i + 1] = -log(f[i + 1]);
    }
    *v = a;
    return f[EN - 1] + a / x[EN - 1];
}

void bnmf_exp_init(void)
{
    double lo = 5.0, hi = 10.0, v = 0.0;
    /* f(x_N) decreases in r: > 1 at r = 5 and < 1 at r = 10 */
    for (int it = 0; it < 200; it++) {
        const double mid = 0.5 * (lo + hi);
        if (!(mid > lo && mid < hi)) break;
        if (exp_layers(mid, &v, bnmf_ex, ef) > 1.0) lo = mid; else hi = mid;
    }
    /* the larger end: f(x_N) <= 1, so every f(x_i) < 1 for i < N */
    (void) exp_layers(hi, &v, bnmf_ex, ef);
    er = hi;
    ev = v;
    bnmf_ex[0] = v / ef[1];
    ef[0] = 0.0;
    bnmf_ex[EN] = 0.0;
    ef[EN] = 1.0;
    eready = 1;
}

double bnmf_exp_zig_slow(double u)
{
    double shift = 0.0;      /* r for every pass through the tail */
    for (;;) {
        const int j0 = (int) u;
        const int i = j0 & (EN - 1);
        const double x = (u - j0) * bnmf_ex[i];
        if (x < bnmf_ex[i + 1]) return shift + x;
        if (i == 0) {
            shift += er;                               /* the tail */
        } else {
            /* the wedge of block i */
            const double y = ef[i] + unif_rand() * (ef[i + 1] - ef[i]);
            if (y < exp(-x)) return shift + x;
        }
        u = unif_rand() * EN;                          /* a new draw */
    }
}

/* ---- .Call entry points (tests and benchmarks) ------------------------- */

SEXP bnmf_exp_std_call(SEXP n_)
{
    if ((TYPEOF(n_) != REALSXP && TYPEOF(n_) != INTSXP) || XLENGTH(n_) != 1)
        Rf_error("`n` must be a single non-negative whole number.");
    const double dn = Rf_asReal(n_);
    if (ISNAN(dn) || dn < 0.0 || dn != floor(dn) || dn > (double) R_XLEN_T_MAX)
        Rf_error("`n` must be a single non-negative whole number.");
    if (!eready) Rf_error("the exponential generator's tables are not set up.");
    const R_xlen_t n = (R_xlen_t) dn;
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    double *po = REAL(out);
    GetRNGstate();
    for (R_xlen_t i = 0; i < n; i++) {
        po[i] = bnmf_exp_zig();
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
SEXP bnmf_exp_table_call(void)
{
    if (!eready) Rf_error("the exponential generator's tables are not set up.");
    SEXP v[4];
    v[0] = PROTECT(Rf_ScalarReal(er));
    v[1] = PROTECT(Rf_ScalarReal(ev));
    v[2] = PROTECT(Rf_allocVector(REALSXP, EN + 1));
    v[3] = PROTECT(Rf_allocVector(REALSXP, EN + 1));
    for (int i = 0; i <= EN; i++) {
        REAL(v[2])[i] = bnmf_ex[i];
        REAL(v[3])[i] = ef[i];
    }
    const char *names[] = {"r", "v", "x", "f"};
    SEXP out = bnmf_named_list(4, names, v);
    UNPROTECT(4);
    return out;
}
