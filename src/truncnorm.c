/*
 * truncnorm.c -- the truncated normal distribution: exact sampling, the log
 * Mills ratio, and the moments and log density of N(mean, sd^2) truncated to
 * [0, inf).
 *
 * Notation: phi and Phi are the N(0, 1) density and CDF, Q = 1 - Phi is the
 * upper tail, R(x) = Q(x) / phi(x) is the (upper-tail) Mills ratio and
 * lambda(x) = 1 / R(x) = phi(x) / Q(x) the normal hazard function.
 *
 * 1. Sampling Z ~ N(0, 1) | a <= Z <= b (bnmf_rtnorm_std), exact for every
 *    a < b, infinite ends included.  A0 = 0.66 is about the point where the two
 *    one-sided rejection samplers below have equal acceptance (a R(a) = 2 Q(a),
 *    the same cut-off as Botev 2017).
 *
 *    (T)  a > A0 (tail): rejection from the Rayleigh proposal (Marsaglia 1964;
 *         Devroye 1986, ch. IX; as in Botev 2017).  Write
 *         z = sqrt(a^2 + 2 d).  The proposal density of z is proportional to
 *         z exp(-z^2 / 2) on [a, b], i.e. d is Exp(1) truncated to [0, w],
 *         w = (b^2 - a^2) / 2 = (b - a)(b + a) / 2:
 *             d = -log1p(U expm1(-w))     (d = E ~ Exp(1) when b = Inf),
 *         and z is accepted with probability a / z, i.e. when
 *             V^2 (1 + d / c) <= 1,       c = a^2 / 2,
 *         tested as V^2 (c + d) <= c (no division).
 *         The offset from a is returned without cancellation,
 *             z - a = 2 d / (a + z),  z = sqrt(2 (c + d)),
 *         so that a draw of N(mu, s^2) | x >= l far in the tail is
 *         l + s (z - a), with full relative accuracy in x - l.  (Robert 1995
 *         and Chopin 2011 give exponential-proposal and table-based
 *         alternatives.)
 *         Acceptance probability >= a R(a) >= 0.52.
 *    (T') b < -A0: the mirror image, -Z with Z drawn on [-b, -a].
 *    (W)  otherwise (a <= A0, b >= -A0) and b - a > 2 (wide): rejection from
 *         N(0, 1), or from |N(0, 1)| if a >= 0 (-|N(0, 1)| if b <= 0).
 *         Acceptance >= Phi(2) - 1/2 = 0.477.  The N(0, 1) draws come from
 *         the ziggurat of normal.c (bnmf_norm_std), not from norm_rand().
 *         (Under R's default normal kind, norm_rand() is inversion, two
 *         uniforms and a qnorm per draw; the ziggurat costs one uniform and
 *         a multiplication 97.2% of the time.)
 *    (N)  0.5 <= b - a <= 2, so [a, b] lies in [-2.66, 2.66]: inversion,
 *         z = Phi^-1(Phi(a) + U (Phi(b) - Phi(a))), on the upper tails when
 *         a + b > 0.  Here Phi(b) - Phi(a) >= 0.13: no cancellation.
 *    (U)  b - a < 0.5, so [a, b] lies in (-1.16, 1.16): rejection from the
 *         uniform on [a, b], accepting z with probability
 *         exp(-(z - m)(z + m) / 2), m the point of [a, b] nearest to 0.
 *         Acceptance >= exp(-(1.16^2 - 0.66^2) / 2) = 0.63.  (Inversion would
 *         lose relative precision inside [a, b] when b - a is tiny.)
 *    Every branch has acceptance >= 0.47 whatever (a, b): the expected number
 *    of trials is <= 2.2.  Only R's uniform generator unif_rand() is used
 *    (directly, and through bnmf_norm_std), so set.seed() and RNGkind(kind =)
 *    determine the draws and RNGkind(normal.kind =) plays no part; the
 *    caller brackets the calls with GetRNGstate/PutRNGstate.
 *
 * 2. log Mills ratio (bnmf_log_mills): log R(x) = log Q(x) - log phi(x) from
 *    Rmath (pnorm upper tail on the log scale, dnorm log) for x < 5, where
 *    the cancellation costs at most x^2 ulps; for x >= 5 Laplace's continued
 *    fraction (Abramowitz & Stegun 1964, 26.2.14)
 *        R(x) = 1 / (x + 1/(x + 2/(x + 3/(x + ...)))),
 *    i.e. t_k = x + (k + 1) / t_{k+1}, R = 1 / t_0, evaluated backwards from
 *    N = 10 + 676 / x^2 terms (no truncation error at double precision for
 *    x >= 2, checked against 10^4 terms).
 *
 * 3. Moments of N(mu, s^2) truncated to [0, inf) (bnmf_tn_pos_moments), with
 *    a = -mu / s, lambda = lambda(a):
 *        E = mu + s lambda = s (lambda - a),
 *        Var = s^2 (1 + a lambda - lambda^2) = s^2 (1 - lambda (lambda - a)).
 *    Both differences cancel catastrophically for large a (E ~ s / a,
 *    Var ~ s^2 / a^2).  For a >= 3 the continued fraction gives them
 *    directly: lambda = t_0 = a + 1 / t_1, hence
 *        E = s / t_1,
 *        Var = s^2 (t_1 - t_0) / t_1 = (s / t_1)^2 (a + 4 / t_2 - 3 / t_3) / t_2,
 *    a sum of positive terms only.
 *
 * 4. Log density (bnmf_tn_pos_logdens), z = (x - mu) / s, u = x / s:
 *        log f(x) = log phi(z) - log s - log Q(a)
 *                 = -u (a + u / 2) - log R(a) - log s     (a > 0),
 *    using (z^2 - a^2) / 2 = u (a + u / 2); for a <= 0 (mu >= 0), Q(a) >= 1/2
 *    and dnorm(x, mu, s, log) - pnorm(0, mu, s, upper, log) is exact.
 *
 * References
 *   Abramowitz, M. and Stegun, I. A. (1964). Handbook of Mathematical
 *     Functions. National Bureau of Standards.
 *   Botev, Z. I. (2017). The normal law under linear restrictions: simulation
 *     and estimation via minimax tilting. JRSS B 79(1), 125-148.
 *   Chopin, N. (2011). Fast simulation of truncated Gaussian distributions.
 *     Statistics and Computing 21(2), 275-288.
 *   Devroye, L. (1986). Non-Uniform Random Variate Generation. Springer.
 *   Marsaglia, G. (1964). Generating a variable from the tail of the normal
 *     distribution. Technometrics 6(1), 101-102.
 *   Robert, C. P. (1995). Simulation of truncated normal variables.
 *     Statistics and Computing 5(2), 121-125.
 */
#include "bnmf_call.h"
#include "cond.h"

#define TN_TAIL 0.66   /* A0: tail (Rayleigh) sampler for a > A0          */
#define TN_WIDE 2.0    /* middle: rejection from N(0,1) when b - a > this  */
#define TN_NARROW 0.5  /* middle: uniform rejection when b - a < this      */
#define TN_LM_CF 5.0   /* log Mills ratio by continued fraction for x >= this */
#define TN_MOM_CF 3.0  /* moments by continued fraction for a >= this      */

/* C99 isfinite(): R_FINITE is a function call (R_finite) in packages, which
 * costs as much as a fast-path normal draw in the per-draw code below. */
#define TN_FINITE(x) isfinite(x)

/* ---- kernels ------------------------------------------------------------ */

/*
 * E ~ Exp(1) by inversion, E = -log(U), for the unbounded tail: one uniform
 * and one log, about a third of the cost of exp_rand(). A uniform below
 * 2^-10 is refined by a second one, U = (floor(2^27 U1) + U2) / 2^27 (as R's
 * inversion normal generator does), so that E reaches about 41 rather than
 * the 22 a single 32-bit uniform allows: the tail is at least as complete as
 * exp_rand()'s.
 */
static double std_exp(void)
{
    double u = unif_rand();
    if (u < 0x1p-10) u = (floor(u * 0x1p27) + unif_rand()) * 0x1p-27;
    return -log(u);
}

/*
 * Offset d = Z - a >= 0 of Z ~ N(0, 1) | a <= Z <= b, for a > TN_TAIL and
 * a <= b (b may be Inf; a may be so large that a^2 overflows, or b == a after
 * rounding, in which case the offset is 0).  Rayleigh rejection, branch (T).
 */
static double tail_offset(double a, double b)
{
    const double c = 0.5 * a * a;  /* may be Inf: then always accept */
    double d;
    /* accept when V^2 (1 + d / c) <= 1, tested as V^2 (c + d) <= c (c > 0):
     * no division on the path from the draw to the decision */
    if (TN_FINITE(b)) {
        double em = expm1(-0.5 * (b - a) * (b + a));   /* in [-1, 0] */
        for (;;) {
            d = -log1p(unif_rand() * em);
            double v = unif_rand();
            if (v * v * (c + d) <= c) break;
        }
    } else {
        for (;;) {
            d = std_exp();
            double v = unif_rand();
            if (v * v * (c + d) <= c) break;
        }
    }
    /* z - a = 2 d / (a + z), z = sqrt(a^2 + 2 d) = sqrt(2 (c + d)); when a^2
     * overflows, z - a = d / a to within a relative 2^-1000 */
    double off = TN_FINITE(c) ? 2.0 * d / (a + sqrt(2.0 * (c + d))) : d / a;
    double wmax = b - a;
    return off > wmax ? wmax : off;
}

/* Z ~ N(0, 1) | a <= Z <= b for a <= TN_TAIL, b >= -TN_TAIL, a < b. */
static double middle_draw(double a, double b)
{
    double w = b - a, z;
    if (w > TN_WIDE) {                                     /* (W) */
        if (a >= 0.0) {
            do z = fabs(bnmf_norm_std()); while (z < a || z > b);
        } else if (b <= 0.0) {
            do z = -fabs(bnmf_norm_std()); while (z < a || z > b);
        } else {
            do z = bnmf_norm_std(); while (z < a || z > b);
        }
        return z;
    }
    if (w >= TN_NARROW) {                                  /* (N) */
        double u = unif_rand();
        if (a + b > 0.0) {
            double qa = pnorm(a, 0.0, 1.0, 0, 0), qb = pnorm(b, 0.0, 1.0, 0, 0);
            z = qnorm(qa - u * (qa - qb), 0.0, 1.0, 0, 0);
        } else {
            double pa = pnorm(a, 0.0, 1.0, 1, 0), pb = pnorm(b, 0.0, 1.0, 1, 0);
            z = qnorm(pa + u * (pb - pa), 0.0, 1.0, 1, 0);
        }
    } else {                                               /* (U) */
        double m = a > 0.0 ? a : (b < 0.0 ? b : 0.0);
        for (;;) {
            z = a + w * unif_rand();
            if (std_exp() >= 0.5 * (z - m) * (z + m)) break;
        }
    }
    if (z < a) z = a;
    if (z > b) z = b;
    return z;
}

double bnmf_rtnorm_std(double a, double b)
{
    if (!(a < b)) return R_NaN;           /* also NaN ends, a = Inf, b = -Inf */
    if (a > TN_TAIL) return a + tail_offset(a, b);
    if (b < -TN_TAIL) return b - tail_offset(-b, -a);
    return middle_draw(a, b);
}

/*
 * Exponential(rate) truncated to [0, w], drawn as scale * E with
 * scale = 1 / rate; used only when the standardised bound overflows.
 */
static double trunc_exp(double scale, double w)
{
    double d = -log1p(unif_rand() * expm1(-w / scale)) * scale;
    return d > w ? w : d;
}

double bnmf_rtnorm1(double mean, double sd, double lower, double upper)
{
    if (!(lower < upper) || !(sd > 0.0) || !TN_FINITE(sd) || !TN_FINITE(mean))
        return R_NaN;
    double a = (lower - mean) / sd, b = (upper - mean) / sd, x;
    if (a > TN_TAIL) {
        /* a = Inf only if (lower - mean) / sd overflows: then x - lower is
         * exponential with rate (lower - mean) / sd^2 to within O(1/a^2). */
        x = (a == R_PosInf)
            ? lower + trunc_exp(sd / (lower - mean) * sd, upper - lower)
            : lower + sd * tail_offset(a, b);
        if (x > upper) x = upper;
    } else if (b < -TN_TAIL) {
        x = (b == R_NegInf)
            ? upper - trunc_exp(sd / (mean - upper) * sd, upper - lower)
            : upper - sd * tail_offset(-b, -a);
        if (x < lower) x = lower;
    } else {
        x = mean + sd * middle_draw(a, b);
        if (x < lower) x = lower;
        if (x > upper) x = upper;
    }
    return x;
}

/*
 * Backward evaluation of Laplace's continued fraction at x >= 2:
 * t_k = x + (k + 1) / t_{k+1}; returns t_3 (t_2, t_1, t_0 follow).
 */
static double mills_cf_t3(double x)
{
    int nterm = 10 + (int) (676.0 / (x * x));
    double t = x;
    for (int k = nterm; k >= 4; k--) t = x + k / t;
    return t;
}

double bnmf_log_mills(double x)
{
    if (ISNAN(x)) return x;
    if (x < TN_LM_CF) return pnorm(x, 0.0, 1.0, 0, 1) - dnorm(x, 0.0, 1.0, 1);
    if (x == R_PosInf) return R_NegInf;
    double t3 = mills_cf_t3(x);
    double t2 = x + 3.0 / t3, t1 = x + 2.0 / t2, t0 = x + 1.0 / t1;
    return -log(t0);
}

/*
 * 5. The scaled complementary error function erfcx(x) = exp(x^2) erfc(x),
 *    x >= 0 (bnmf_erfcx), and from it log Q(a) and the hazard lambda(a)
 *    (bnmf_logq_hazard), without pnorm. With x = a / sqrt(2),
 *        Q(a) = erfc(x) / 2 = erfcx(x) exp(-a^2 / 2) / 2,
 *    so for a >= 0
 *        log Q(a) = log(erfcx(x) / 2) - a^2 / 2,
 *        lambda(a) = phi(a) / Q(a) = sqrt(2 / pi) / erfcx(x)
 *    (one erfcx, one log, no exp), and for a < 0, with q = Q(-a) <= 1/2,
 *        log Q(a) = log1p(-q),  lambda(a) = phi(a) / (1 - q).
 *    erfcx on [0, inf) is one Chebyshev series in y = (x - 3) / (x + 3),
 *    which maps [0, inf) onto [-1, 1):
 *        erfcx(x) (1 + 2 x) = sum_n c_n T_n(y),
 *    a function analytic on [-1, 1] (it tends to 2 / sqrt(pi) as x -> inf
 *    with an expansion in 1 / x, i.e. in (1 - y) / (1 + y)). The c_n were
 *    computed for this file with 40-digit arithmetic (mpmath's erfc) by
 *    interpolation at 120 Chebyshev nodes, c_n = (2 / N) sum_j f(y_j)
 *    T_n(y_j); they fall geometrically (|c_25| = 6e-18) and the series is
 *    cut after c_25. Checked in double precision against 40-digit values on
 *    20001 points of [0, 4e5]: relative error at most 3.1e-16. Beyond
 *    x = 1e8, erfcx(x) = 1 / (sqrt(pi) x) (1 - 1 / (2 x^2) + ...) is
 *    1 / (sqrt(pi) x) to double precision. Below x = 6 (all that VB's
 *    moments need: a in (-8.3, 3)), shorter polynomials by pieces
 *    (erfcx_pw below) are used instead.
 */
static const double erfcx_cheb[26] = {
    2.35512514839312,
    0.005353904539615676,
    -0.09377550342284209,
    0.05436652555744322,
    -0.018976596707845208,
    0.004453426061462712,
    -0.0006335531710553147,
    1.7661719523171593e-05,
    1.2841532864056671e-05,
    -2.0072285659059913e-06,
    -1.807522790414837e-07,
    7.549828343825093e-08,
    1.885668523838603e-09,
    -2.699519049798364e-09,
    -1.460079119939105e-11,
    1.0361607445969489e-10,
    1.475715976623473e-12,
    -4.277340064396911e-12,
    -2.07922492859799e-13,
    1.8134502003176963e-13,
    1.973425574544739e-14,
    -7.287943737592673e-15,
    -1.5169878690228116e-15,
    2.3514112258781403e-16,
    1.0006111691821667e-16,
    -2.057252816953854e-18
};

/* erfcx on [0, 6) by pieces: on [p / 2, (p + 1) / 2), p = 0..11, the
 * polynomial of degree 13 in t = 4 (x - p / 2 - 1/4) in [-1, 1] that
 * interpolates erfcx at the 14 Chebyshev nodes of the piece (computed for
 * this file with 40-digit arithmetic and converted to monomial coefficients,
 * whose absolute values sum to at most erfcx(0) = 1, so the evaluation adds
 * no more than a few ulps). Evaluated by Estrin's scheme, whose dependency
 * chain is 4 multiply-adds long (Clenshaw's on the series above is 25 steps
 * long, and VB's coordinate updates wait on it: the next coordinate needs
 * this one's mean). Checked in double precision against 40-digit values at
 * 60000 points of [0, 6): relative error at most 4.6e-16. */
static const double erfcx_pw[12][14] = {
    {0.7703465477309968, -0.18580147330750355, 0.03653406715146589, -0.00621947525650126, 0.0009473309967565856, -0.00013180360649792363, 1.699015372992673e-05, -2.050240203813967e-06, 2.3343681717714344e-07, -2.5233446855440452e-08, 2.60156149536226e-09, -2.570854381117453e-10, 2.513506467072656e-11, -2.298217098804571e-12},
    {0.5069376502931449, -0.09199317291394885, 0.014434883221955935, -0.002028688468670001, 0.00026090055675162256, -3.114966996088564e-05, 3.4885738732198706e-06, -3.693562177597921e-07, 3.719545089633589e-08, -3.5801438250789833e-09, 3.306043556501409e-10, -2.940348914756972e-11, 2.585599367357183e-12, -2.1463289279578493e-13},
    {0.3678229164523611, -0.052205468991152464, 0.006674723218537403, -0.0007846605374360542, 8.598189160525874e-05, -8.86877698531246e-06, 8.674584703816643e-07, -8.091936811748378e-08, 7.2322189424948945e-09, -6.216435284092416e-10, 5.1541247449058564e-11, -4.134526075119391e-12, 3.2792698382308406e-13, -2.4751971707679498e-14},
    {0.2849722347374364, -0.0327440863786213, 0.0034852268804429517, -0.00034781242564669245, 3.2829371903672606e-05, -2.950170558035268e-06, 2.537120413469028e-07, -2.096761188871753e-08, 1.670918856329355e-09, -1.2876651117526543e-10, 9.618300132850773e-12, -6.98001921004777e-13, 5.0106344274055084e-14, -3.4468073314145138e-15},
    {0.23108725873039188, -0.02212162570218729, 0.001999539213169141, -0.0001719071993193757, 1.4136700602967932e-05, -1.116922347318516e-06, 8.50916557327825e-08, -6.269597236192441e-09, 4.478951242604127e-10, -3.109087010843463e-11, 2.1007977934821924e-12, -1.384236754687318e-13, 9.028565100004485e-15, -5.676447983477238e-16},
    {0.1936620962790687, -0.01580940939015871, 0.001234912061707679, -9.272402964059338e-05, 6.717116739412168e-06, -4.7089363767687664e-07, 3.202680676308224e-08, -2.1178350568482745e-09, 1.364159754351791e-10, -8.57305040538627e-12, 5.263756920935611e-13, -3.161873147170681e-14, 1.8816092271791067e-15, -1.0847655660329031e-16},
    {0.16633534842682188, -0.011799850580292594, 0.0008085806801886348, -5.367923907668084e-05, 3.460955380993485e-06, -2.1717047809422727e-07, 1.3286232618759893e-08, -7.93740250497401e-10, 4.6368900337520466e-11, -2.6520085237328398e-12, 1.4865392573332567e-13, -8.175039305748376e-15, 4.457648310707091e-16, -2.3647193114602224e-17},
    {0.14558972127503855, -0.009114064383180883, 0.0005549222204578311, -3.292629484639235e-05, 1.9071186800608639e-06, -1.0798786613700727e-07, 5.9854309997986076e-09, -3.251143059706388e-10, 1.7323694828089317e-11, -9.063736174375509e-13, 4.6599785350317236e-14, -2.3562615397644294e-15, 1.1822811391010087e-16, -5.791975523734219e-18},
    {0.12934527478598792, -0.007236082853653833, 0.00039574164211704684, -2.1186455736001536e-05, 1.1116217064069109e-06, -5.722216817710758e-08, 2.892600987337383e-09, -1.4371341769277275e-10, 7.023014083941347e-12, -3.3780809631697506e-13, 1.6003116101420737e-14, -7.471367522606014e-16, 3.464057794827773e-17, -1.572855915960239e-18},
    {0.11630270721024731, -0.005875862149540788, 0.00029133289806077125, -1.4189045266088914e-05, 6.794074376588124e-07, -3.2007598764288934e-08, 1.4846471070051045e-09, -6.784470947703108e-11, 3.056212985108357e-12, -1.35787002342481e-13, 5.953155165577668e-15, -2.576696132348382e-16, 1.1083358204341322e-17, -4.680656053198246e-19},
    {0.1056127354688918, -0.004861361168037162, 0.0002202594337569623, -9.829710797539739e-06, 4.323595940196198e-07, -1.8753983078193703e-08, 8.026239453588963e-10, -3.3908575455358766e-11, 1.4147478442928538e-12, -5.831765534909897e-14, 2.3759351424942052e-15, -9.570824155898267e-17, 3.833789536699201e-18, -1.5110350537465862e-19},
    {0.09669877816971392, -0.004085804535950621, 0.00017032961517810219, -7.009307785594623e-06, 2.848605034195586e-07, -1.1437905173619582e-08, 4.5393092554588553e-10, -1.7812390821590837e-11, 6.913427664408314e-13, -2.6548713258425354e-14, 1.0090202844901735e-15, -3.79659659064509e-17, 1.4213315274561339e-18, -5.2452197211357137e-20}
};

static inline double erfcx_pieces(double x)
{
    const int p = (int) (2.0 * x);
    const double *m = erfcx_pw[p];
    const double t = (x - (0.5 * p + 0.25)) * 4.0, t2 = t * t, t4 = t2 * t2;
    const double q0 = m[0] + m[1] * t, q1 = m[2] + m[3] * t, q2 = m[4] + m[5] * t,
        q3 = m[6] + m[7] * t, q4 = m[8] + m[9] * t, q5 = m[10] + m[11] * t,
        q6 = m[12] + m[13] * t;
    const double r0 = q0 + q1 * t2, r1 = q2 + q3 * t2, r2 = q4 + q5 * t2;
    return (r0 + r1 * t4) + (r2 + q6 * t4) * (t4 * t4);
}

double bnmf_erfcx(double x)
{
    if (x < 6.0) return erfcx_pieces(x);
    if (x > 1e8) return 0.56418958354775628695 / x; /* 1 / (sqrt(pi) x) */
    const double y = (x - 3.0) / (x + 3.0), y2 = 2.0 * y;
    /* Clenshaw's recurrence for sum_n c_n T_n(y), with c_0 halved. */
    double b1 = 0.0, b2 = 0.0;
    for (int n = 25; n >= 1; n--) {
        const double t = y2 * b1 - b2 + erfcx_cheb[n];
        b2 = b1;
        b1 = t;
    }
    return (y * b1 - b2 + 0.5 * erfcx_cheb[0]) / (1.0 + 2.0 * x);
}

void bnmf_logq_hazard(double a, double *lq, double *lam)
{
    const double h = 0.5 * a * a;
    if (a >= 0.0) {
        const double e = bnmf_erfcx(a * M_SQRT1_2);
        *lq = log(0.5 * e) - h;
        *lam = M_SQRT_2dPI / e;
    } else {
        const double g = exp(-h);
        const double q = 0.5 * bnmf_erfcx(-a * M_SQRT1_2) * g; /* Q(-a) */
        *lq = log1p(-q);
        *lam = M_1_SQRT_2PI * g / (1.0 - q);
    }
}

void bnmf_tn_pos_moments(double mean, double sd, double *m1, double *var)
{
    if (!R_FINITE(mean) || !(sd > 0.0) || !R_FINITE(sd)) {
        *m1 = R_NaN;
        *var = R_NaN;
        return;
    }
    double a = -mean / sd;
    if (a < TN_MOM_CF) {
        double lam = exp(-bnmf_log_mills(a));
        double f = 1.0 - lam * (lam - a);
        *m1 = (a <= 0.0) ? mean + sd * lam : sd * (lam - a);
        *var = sd * (sd * (f > 0.0 ? f : 0.0));
    } else if (a == R_PosInf) {
        /* -mean / sd overflows: E = sd^2 / |mean| (1 + O(1/a^2)), Var = E^2 */
        double e = sd * (sd / -mean);
        *m1 = e;
        *var = e * e;
    } else {
        double t3 = mills_cf_t3(a);
        double t2 = a + 3.0 / t3, t1 = a + 2.0 / t2;
        double e = sd / t1;
        *m1 = e;
        *var = e * e * ((a + 4.0 / t2 - 3.0 / t3) / t2);
    }
}

double bnmf_tn_pos_logdens(double x, double mean, double sd)
{
    if (ISNAN(x) || !R_FINITE(mean) || !(sd > 0.0) || !R_FINITE(sd)) return R_NaN;
    if (x < 0.0) return R_NegInf;
    double a = -mean / sd;
    if (a <= 0.0) return dnorm(x, mean, sd, 1) - pnorm(0.0, mean, sd, 0, 1);
    if (x == R_PosInf) return R_NegInf;
    if (a == R_PosInf) /* overflow: exponential with rate |mean| / sd^2 */
        return log(-mean) - 2.0 * log(sd) - ((x / sd) * -mean) / sd;
    double u = x / sd;
    return -u * (a + 0.5 * u) - bnmf_log_mills(a) - log(sd);
}

/* ---- .Call entry points ------------------------------------------------ */

static void check_double(SEXP x, const char *arg)
{
    if (TYPEOF(x) != REALSXP) Rf_error("`%s` must be a double vector.", arg);
}

/* Length of the recycled result: 0 if any input is empty, else the longest. */
static R_xlen_t recycled_length(const R_xlen_t *len, int k)
{
    R_xlen_t n = 0;
    for (int i = 0; i < k; i++) {
        if (len[i] == 0) return 0;
        if (len[i] > n) n = len[i];
    }
    return n;
}

SEXP bnmf_rtnorm_call(SEXP n_, SEXP mean, SEXP sd, SEXP lower, SEXP upper)
{
    int nprot = 0;
    if ((TYPEOF(n_) != REALSXP && TYPEOF(n_) != INTSXP) || XLENGTH(n_) != 1)
        Rf_error("`n` must be a single non-negative whole number.");
    double dn = Rf_asReal(n_);
    if (ISNAN(dn) || dn < 0.0 || dn != floor(dn) || dn > (double) R_XLEN_T_MAX)
        Rf_error("`n` must be a single non-negative whole number.");
    R_xlen_t n = (R_xlen_t) dn;

    check_double(mean, "mean");
    check_double(sd, "sd");
    check_double(lower, "lower");
    check_double(upper, "upper");
    R_xlen_t nm = XLENGTH(mean), ns = XLENGTH(sd),
             nl = XLENGTH(lower), nu = XLENGTH(upper);
    if (n > 0) {
        if (nm == 0) Rf_error("`mean` must have length >= 1.");
        if (ns == 0) Rf_error("`sd` must have length >= 1.");
        if (nl == 0) Rf_error("`lower` must have length >= 1.");
        if (nu == 0) Rf_error("`upper` must have length >= 1.");
    }
    const double *pm = REAL(mean), *ps = REAL(sd),
                 *pl = REAL(lower), *pu = REAL(upper);
    for (R_xlen_t i = 0; i < nm; i++)
        if (!TN_FINITE(pm[i]))
            Rf_error("`mean` must be finite (element %.0f).", (double) i + 1);
    for (R_xlen_t i = 0; i < ns; i++)
        if (!(ps[i] > 0.0) || !TN_FINITE(ps[i]))
            Rf_error("`sd` must be positive and finite (element %.0f).",
                     (double) i + 1);
    for (R_xlen_t i = 0; i < nl; i++)
        if (ISNAN(pl[i]))
            Rf_error("`lower` must not be NA (element %.0f).", (double) i + 1);
    for (R_xlen_t i = 0; i < nu; i++)
        if (ISNAN(pu[i]))
            Rf_error("`upper` must not be NA (element %.0f).", (double) i + 1);
    /* the (lower, upper) pairs actually used by the n draws: they repeat
     * after nl * nu draws at the latest */
    R_xlen_t npairs = n;
    if (n > 0 && (double) nl * (double) nu < (double) n) npairs = nl * nu;
    for (R_xlen_t i = 0, il = 0, iu = 0; i < npairs; i++) {
        if (!(pl[il] < pu[iu]))
            Rf_error("`lower` must be less than `upper` (element %.0f).",
                     (double) i + 1);
        if (++il == nl) il = 0;
        if (++iu == nu) iu = 0;
    }

    SEXP out = PROTECT(Rf_allocVector(REALSXP, n)); nprot++;
    double *po = REAL(out);
    GetRNGstate();
    for (R_xlen_t i = 0, im = 0, is = 0, il = 0, iu = 0; i < n; i++) {
        po[i] = bnmf_rtnorm1(pm[im], ps[is], pl[il], pu[iu]);
        if (++im == nm) im = 0;
        if (++is == ns) is = 0;
        if (++il == nl) il = 0;
        if (++iu == nu) iu = 0;
        if ((i & 0xFFFFF) == 0xFFFFF) {   /* every 2^20 draws */
            PutRNGstate();
            R_CheckUserInterrupt();
            GetRNGstate();
        }
    }
    PutRNGstate();
    UNPROTECT(nprot);
    return out;
}

SEXP bnmf_tn_moments_call(SEXP mean, SEXP sd)
{
    int nprot = 0;
    check_double(mean, "mean");
    check_double(sd, "sd");
    R_xlen_t len[2] = { XLENGTH(mean), XLENGTH(sd) };
    R_xlen_t n = recycled_length(len, 2);
    const double *pm = REAL(mean), *ps = REAL(sd);

    SEXP m1 = PROTECT(Rf_allocVector(REALSXP, n)); nprot++;
    SEXP v = PROTECT(Rf_allocVector(REALSXP, n)); nprot++;
    double *pm1 = REAL(m1), *pv = REAL(v);
    for (R_xlen_t i = 0, im = 0, is = 0; i < n; i++) {
        bnmf_tn_pos_moments(pm[im], ps[is], pm1 + i, pv + i);
        if (++im == len[0]) im = 0;
        if (++is == len[1]) is = 0;
    }
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2)); nprot++;
    SEXP nms = PROTECT(Rf_allocVector(STRSXP, 2)); nprot++;
    SET_VECTOR_ELT(out, 0, m1);
    SET_VECTOR_ELT(out, 1, v);
    SET_STRING_ELT(nms, 0, Rf_mkChar("mean"));
    SET_STRING_ELT(nms, 1, Rf_mkChar("var"));
    Rf_setAttrib(out, R_NamesSymbol, nms);
    UNPROTECT(nprot);
    return out;
}

SEXP bnmf_tn_logdens_call(SEXP x, SEXP mean, SEXP sd)
{
    int nprot = 0;
    check_double(x, "x");
    check_double(mean, "mean");
    check_double(sd, "sd");
    R_xlen_t len[3] = { XLENGTH(x), XLENGTH(mean), XLENGTH(sd) };
    R_xlen_t n = recycled_length(len, 3);
    const double *px = REAL(x), *pm = REAL(mean), *ps = REAL(sd);

    SEXP out = PROTECT(Rf_allocVector(REALSXP, n)); nprot++;
    double *po = REAL(out);
    for (R_xlen_t i = 0, ix = 0, im = 0, is = 0; i < n; i++) {
        po[i] = bnmf_tn_pos_logdens(px[ix], pm[im], ps[is]);
        if (++ix == len[0]) ix = 0;
        if (++im == len[1]) im = 0;
        if (++is == len[2]) is = 0;
    }
    UNPROTECT(nprot);
    return out;
}

/*
 * .Call entry (tests): for a = -mu / sd (recycled), log Q(a) and lambda(a)
 * from bnmf_logq_hazard, and VB's mean, variance and entropy of
 * N(mu, sd^2) truncated to [0, inf) from bnmf_tn_pos_vb (gauss_cond.c);
 * list(logq, lambda, mean, var, entropy), NaN where a is not finite or
 * sd <= 0.
 */
SEXP bnmf_tn_vb_call(SEXP mu, SEXP sd)
{
    check_double(mu, "mu");
    check_double(sd, "sd");
    R_xlen_t len[2] = { XLENGTH(mu), XLENGTH(sd) };
    const R_xlen_t n = recycled_length(len, 2);
    const double *pm = REAL(mu), *ps = REAL(sd);
    const char *names[] = {"logq", "lambda", "mean", "var", "entropy"};
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 5));
    SEXP nms = PROTECT(Rf_allocVector(STRSXP, 5));
    double *p[5];
    for (int c = 0; c < 5; c++) {
        SET_VECTOR_ELT(out, c, Rf_allocVector(REALSXP, n));
        SET_STRING_ELT(nms, c, Rf_mkChar(names[c]));
        p[c] = REAL(VECTOR_ELT(out, c));
    }
    for (R_xlen_t i = 0, im = 0, is = 0; i < n; i++) {
        const double m = pm[im], s = ps[is], a = -m / s;
        if (R_FINITE(a) && s > 0.0 && R_FINITE(s)) {
            bnmf_logq_hazard(a, p[0] + i, p[1] + i);
            bnmf_tn_pos_vb(m, s, p[2] + i, p[3] + i, p[4] + i);
        } else {
            for (int c = 0; c < 5; c++) p[c][i] = R_NaN;
        }
        if (++im == len[0]) im = 0;
        if (++is == len[1]) is = 0;
    }
    Rf_setAttrib(out, R_NamesSymbol, nms);
    UNPROTECT(2);
    return out;
}
