/*
 * exponential.c -- exact Exp(1) draws built only on R's uniform generator
 * bnmf_unif(): the ziggurat method of Marsaglia and Tsang (2000) for the
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
 * Only bnmf_unif() is used: set.seed() and RNGkind(kind =) determine the
 * draws.  The caller brackets the calls with bnmf_rng_get()/bnmf_rng_put() (rng.c).
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

static double exp_f(double x)
{
    return exp(-x);
}

static double exp_finv(double y)
{
    return -log(y);
}

void bnmf_exp_init(void)
{
    /* the tail's area, int_r^inf exp(-x) dx, is f(r) itself */
    const bnmf_zig_shape sh = {exp_f, exp_finv, exp_f};
    /* f(x_N) > 1 at r = 5 and < 1 at r = 10 */
    bnmf_zig_build(&sh, EN, 5.0, 10.0, bnmf_ex, ef, &er, &ev);
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
            const double y = ef[i] + bnmf_unif() * (ef[i + 1] - ef[i]);
            if (y < exp(-x)) return shift + x;
        }
        u = bnmf_unif() * EN;                          /* a new draw */
    }
}

/* ---- .Call entry points (tests and benchmarks) ------------------------- */

static double exp_draw(void)
{
    return bnmf_exp_zig();
}

SEXP bnmf_exp_std_call(SEXP n_)
{
    return bnmf_draws(n_, exp_draw, eready, "exponential");
}

/* list(r, v, x = x_0..x_N, f = 0, f(x_1), ..., f(x_N) = 1) */
SEXP bnmf_exp_table_call(void)
{
    return bnmf_zig_table(er, ev, bnmf_ex, ef, EN, eready, "exponential");
}
