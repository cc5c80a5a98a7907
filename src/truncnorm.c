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
 *    (T)  a > A0 (tail), b finite: rejection from the Rayleigh proposal
 *         (Marsaglia 1964; Devroye 1986, ch. IX; as in Botev 2017).  Write
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
 *         l + s (z - a), with full relative accuracy in x - l.  (Chopin
 *         2011 gives a table-based alternative.)
 *         Acceptance probability >= a R(a) >= 0.52.
 *    (E)  a > A0, b = Inf (the draw of every Gibbs coordinate whose
 *         conditional mean lies more than A0 sd below 0): rejection from the
 *         exponential proposal a + E / lam, accepted with probability
 *         exp(-(a + E / lam - lam)^2 / 2) (Robert 1995), with his optimal
 *         rate lam = (a + sqrt(a^2 + 4)) / 2 below a = 64 and lam = a above
 *         (bnmf_tail_offset_inf, bnmf.h).  E comes from the exponential
 *         ziggurat (exponential.c: one uniform, no log, 97.8% of the time).
 *         Acceptance 0.85 at a = A0 and more above, where the Rayleigh
 *         proposal's a R(a) is 0.52 at A0 and 0.66 at a = 1; the offset is
 *         E / lam, without cancellation.
 *    (T') b < -A0: the mirror image, -Z with Z drawn on [-b, -a] by (T)
 *         or (E).
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
 *    of trials is <= 2.2.  Only R's uniform generator bnmf_unif() is used
 *    (directly, and through bnmf_norm_std), so set.seed() and RNGkind(kind =)
 *    determine the draws and RNGkind(normal.kind =) plays no part; the
 *    caller brackets the calls with bnmf_rng_get()/bnmf_rng_put().
 *
 * 2. log Mills ratio (bnmf_log_mills): log R(x) = log Q(x) - log phi(x) from
 *    Rmath (pnorm upper tail on the log scale, dnorm log) for x < 5, where
 *    the cancellation costs at most x^2 ulps; for x >= 5, log R(x) =
 *    -log(lambda(x)) with lambda(x) = x + U(x) / x from the tail
 *    polynomials of section 6 (a sum of positive terms).
 *    Laplace's continued fraction (Abramowitz & Stegun 1964, 26.2.14),
 *        R(x) = 1 / (x + 1/(x + 2/(x + 3/(x + ...)))),
 *    i.e. t_k = x + (k + 1) / t_{k+1}, R = 1 / t_0, is what the tests
 *    check them against; evaluated backwards it needs about 10 + 676 / x^2
 *    terms for double precision (62 dependent divisions at x = 3).
 *
 * 3. Moments of N(mu, s^2) truncated to [0, inf) (bnmf_tn_pos_moments), with
 *    a = -mu / s, lambda = lambda(a):
 *        E = mu + s lambda = s (lambda - a),
 *        Var = s^2 (1 + a lambda - lambda^2) = s^2 (1 - lambda (lambda - a)).
 *    Both differences cancel catastrophically for large a (E ~ s / a,
 *    Var ~ s^2 / a^2).  For a >= 3 they come without cancellation from the
 *    tail polynomials of section 6:
 *        E = (s / a) U(a),   Var = (s / a)^2 V(a).
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
#include "truncnorm.h"

#define TN_TAIL BNMF_TN_TAIL /* A0: the tail samplers (T), (E) for a > A0 */
#define TN_WIDE 2.0    /* middle: rejection from N(0,1) when b - a > this  */
#define TN_NARROW 0.5  /* middle: uniform rejection when b - a < this      */
#define TN_LM_CF 5.0   /* log Mills ratio from the tail polynomials for x >= this */
#define TN_MOM_CF 3.0  /* moments from the tail polynomials for a >= this    */

/* C99 isfinite(): R_FINITE is a function call (R_finite) in packages, which
 * costs as much as a fast-path normal draw in the per-draw code below. */
#define TN_FINITE(x) isfinite(x)

/* ---- kernels ------------------------------------------------------------ */

static void tn_tail(double a, double *ia, double *U, double *V); /* section 6 */

/*
 * Offset d = Z - a >= 0 of Z ~ N(0, 1) | a <= Z <= b, for a > TN_TAIL and
 * a <= b (b may be Inf; a may be so large that a^2 overflows, or b == a after
 * rounding, in which case the offset is 0).  Rayleigh rejection, branch (T);
 * for b = Inf the exponential proposal, branch (E).
 */
static double tail_offset(double a, double b)
{
    if (!TN_FINITE(b)) return bnmf_tail_offset_inf(a);
    const double c = 0.5 * a * a;  /* may be Inf: then always accept */
    double d;
    /* accept when V^2 (1 + d / c) <= 1, tested as V^2 (c + d) <= c (c > 0):
     * no division on the path from the draw to the decision */
    const double em = expm1(-0.5 * (b - a) * (b + a));   /* in [-1, 0] */
    for (;;) {
        d = -log1p(bnmf_unif() * em);
        double v = bnmf_unif();
        if (v * v * (c + d) <= c) break;
    }
    /* z - a = 2 d / (a + z), z = sqrt(2 (c + d)); when a^2 overflows
     * (c = Inf), z - a = d / a to within a relative 2^-1000 */
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
        double u = bnmf_unif();
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
            z = a + w * bnmf_unif();
            if (bnmf_std_exp() >= 0.5 * (z - m) * (z + m)) break;
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
    double d = -log1p(bnmf_unif() * expm1(-w / scale)) * scale;
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

double bnmf_log_mills(double x)
{
    if (ISNAN(x)) return x;
    if (x < TN_LM_CF) return pnorm(x, 0.0, 1.0, 0, 1) - dnorm(x, 0.0, 1.0, 1);
    if (x == R_PosInf) return R_NegInf;
    double ix, U;
    tn_tail(x, &ix, &U, NULL);
    return -log(x + U * ix);
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

/*
 * 6. The tail a >= 3 (tn_tail): with lambda(a) = phi(a) / Q(a),
 *        U(a) = a (lambda(a) - a)                    (E / sd = U / a),
 *        V(a) = a^2 (1 - lambda(a) (lambda(a) - a))   (Var / sd^2 = V / a^2),
 *    both in (0.63, 1) and tending to 1 as a -> inf (U = 1 - 2 / a^2 +
 *    10 / a^4 - ..., V = 1 - 6 / a^2 + 50 / a^4 - ...). They are smooth
 *    functions of s = 3 / a in (0, 1]. On each of the 8 pieces
 *    [p / 8, (p + 1) / 8) of s, U and V are the polynomials of degree 11 in
 *    t = 16 s - (2 p + 1) in [-1, 1] that interpolate them at the 12
 *    Chebyshev nodes of the piece, from 50-digit values (mpmath's erfc, and
 *    Laplace's continued fraction for a > 100; tools/tail-moments-coefs.py
 *    computes the tables and checks them), in monomial coefficients whose
 *    absolute values sum to at most 1.006 (so the evaluation adds no more
 *    than a few ulps). Evaluated by Estrin's scheme as
 *    below, in double precision against 50-digit values at 20004 points of
 *    s (down to 1e-300): relative error at most 2.8e-16 (U) and 4.0e-16
 *    (V), for one division and two short dependency chains (the continued
 *    fraction needs one dependent division per term, 62 at a = 3).
 */
static const double tail_u[8][12] = {
    {0.9991338222200893, -0.0017286120098705979, -0.0008568428089866036, 7.415584508887857e-06, 1.7947728065179318e-06, -3.493050586982993e-08, -5.374626525978613e-09, 1.8591314450537725e-10, 1.974650360899905e-11, -1.1041015751242578e-12, -8.063310086701081e-14, 7.056388937016256e-15},
    {0.9923358344720968, -0.005013289235442787, -0.0007732045951259498, 1.9649243155648832e-05, 1.1919428707059694e-06, -7.76156501449125e-08, -1.4606410387055917e-09, 3.057864575933421e-10, -4.60792995331382e-12, -1.0943593115588876e-12, 6.184103878547728e-14, 2.6444799320324516e-15},
    {0.9793901629387792, -0.007838534127583875, -0.0006330693538714593, 2.600458937461617e-05, 4.051012443596458e-07, -7.318236543775643e-08, 1.7963700712882976e-09, 1.3918668504315172e-10, -1.2405245524208122e-11, 1.3554370138279843e-13, 3.976872039937815e-14, -2.7888795120175395e-15},
    {0.9613931234796219, -0.01005125277950949, -0.00047267053983556184, 2.6662461823441403e-05, -1.9289612175582497e-07, -4.497790950992249e-08, 2.5407515435902974e-09, -1.5462394386029663e-11, -6.163460993455949e-12, 4.049794019874206e-13, -5.252574415090385e-15, -9.966581316478904e-16},
    {0.9396088690759349, -0.011631280823928093, -0.00032033338321863793, 2.3709052944717037e-05, -4.999354559719203e-07, -1.7798284406200066e-08, 1.877481872001391e-09, -6.439670731919396e-11, -6.057665879784569e-13, 1.9624172665366634e-13, -1.0979786033430425e-14, 1.9715510697520242e-16},
    {0.915246189657012, -0.012645196114002354, -0.00019109435984128936, 1.9261782972805136e-05, -5.833257470622104e-07, -6.353121375164128e-10, 1.0065676803283915e-09, -5.5079648731777674e-11, 1.2845994594371082e-12, 3.452445106488592e-14, -5.025421368477467e-15, 2.547957166714733e-16},
    {0.8893362184235186, -0.013196979449219532, -8.936733204719856e-05, 1.4702391473539697e-05, -5.431864853230592e-07, 7.428436703013077e-09, 3.891042500985542e-10, -3.317355220789338e-11, 1.2916522632587637e-12, -2.0609549895145172e-14, -1.073984438475269e-15, 1.0811988069791731e-16},
    {0.8626939770305697, -0.013394746655228287, -1.3521881365655771e-05, 1.0699908119317258e-05, -4.534911989198912e-07, 9.842388010167244e-09, 5.3250901321978044e-11, -1.6037537203661276e-11, 8.373016793345931e-13, -2.5570020502403834e-14, 2.5407718900470464e-16, 2.498671949559215e-17}
};
static const double tail_v[8][12] = {
    {0.9974052102102187, -0.005170909637714427, -0.0025482816734330436, 3.684142926217254e-05, 8.799211502271268e-06, -2.418307978385212e-07, -3.632099056917954e-08, 1.6452859868050866e-09, 1.6777763157568692e-10, -1.185703362995308e-11, -8.075721087452724e-13, 8.852098900086982e-14},
    {0.9772959667657685, -0.014665806041641182, -0.0021427705969771556, 9.290028706893318e-05, 4.795479602718334e-06, -4.919854259228751e-07, -3.802976019621721e-09, 2.3356662848980673e-09, -7.101346848200046e-11, -9.04943267840332e-12, 7.6502955028203e-13, 1.6169543263963596e-14},
    {0.9401974923008598, -0.022007761793882342, -0.0015091392209951138, 0.0001121203823856477, 1.9594708565406187e-07, -3.8520309043329655e-07, 1.7446125115950456e-08, 6.172835365171673e-10, -1.0554856615722694e-10, 3.343993966572701e-12, 2.844331881567285e-13, -3.3509828386710515e-14},
    {0.8910343540230555, -0.02671989311671689, -0.000858099921214392, 0.0001012487558855833, -2.53870744185235e-06, -1.6315589850220854e-07, 1.7027604203215153e-08, -4.68836845994765e-10, -2.9958376182114066e-11, 3.664203706012268e-12, -1.341078553514295e-13, -4.797903438869292e-15},
    {0.8349273416605821, -0.02902856254579168, -0.0003208557201485534, 7.683853536413772e-05, -3.3006000781420287e-06, -5.405687003717406e-09, 9.085380553895271e-09, -5.587846004909629e-10, 1.0443666394479146e-11, 9.69513654685299e-13, -1.0125297882122946e-13, 4.25434870614148e-15},
    {0.776149032402986, -0.02949446814451307, 6.235575857869863e-05, 5.1380799020380194e-05, -2.9515709028480366e-06, 6.262159473626122e-08, 2.804840725418039e-09, -3.27594133527753e-10, 1.4979424471285705e-11, -2.0566748510284756e-13, -2.449765404526174e-14, 2.3038738107545914e-15},
    {0.7177754855836648, -0.028717509531666224, 0.0003052912713264513, 3.056386865725086e-05, -2.233084040908273e-06, 7.492075242226232e-08, -2.950635359828398e-10, -1.3105837296803518e-10, 9.213599003196009e-12, -3.43724100652777e-13, 3.6268817158615205e-15, 5.017779112001378e-16},
    {0.6617727772021453, -0.027195149751426246, 0.00044093022127230904, 1.559016054202586e-05, -1.5292768938346996e-06, 6.384690949800363e-08, -1.3111851042137883e-09, -2.7824913771865468e-11, 4.083771454256585e-12, -2.1668020897634828e-13, 6.913609374567308e-15, -6.349487924812206e-17}
};

static inline double tail_poly(const double *m, double t, double t2, double t4)
{
    const double q0 = m[0] + m[1] * t, q1 = m[2] + m[3] * t, q2 = m[4] + m[5] * t,
        q3 = m[6] + m[7] * t, q4 = m[8] + m[9] * t, q5 = m[10] + m[11] * t;
    const double r0 = q0 + q1 * t2, r1 = q2 + q3 * t2, r2 = q4 + q5 * t2;
    return (r0 + r1 * t4) + r2 * (t4 * t4);
}

/* The tail a >= 3 (finite): *ia = 1 / a, *U = U(a) and, unless V is NULL,
 * *V = V(a). */
static void tn_tail(double a, double *ia, double *U, double *V)
{
    const double r = 1.0 / a, s = 3.0 * r;
    int p = (int) (s * 8.0);
    if (p > 7) p = 7;
    const double t = s * 16.0 - (2 * p + 1), t2 = t * t, t4 = t2 * t2;
    *ia = r;
    *U = tail_poly(tail_u[p], t, t2, t4);
    if (V) *V = tail_poly(tail_v[p], t, t2, t4);
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
        double ia, U, V;
        tn_tail(a, &ia, &U, &V);
        const double e = sd * ia;
        *m1 = e * U;
        *var = e * e * V;
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

/* VB's mean, variance and entropy of N(mu, sd^2) truncated to [0, inf): the
 * inline tn_pos_vb of truncnorm.h (which documents it), for callers outside
 * the conditional's kernels. */
void bnmf_tn_pos_vb(double mu, double sd, double *m1, double *var, double *ent)
{
    tn_pos_vb(mu, sd, NULL, m1, var, ent);
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

/* The 1-based index of the first element of the double vector x that is not
 * finite (NA, NaN or +-Inf), 0 if there is none: rtnorm()'s argument check
 * in one pass (R's sum(), used before, accumulates in long double and took
 * five times as long). Blocks of 1024 are scanned without a branch per
 * element; only a block that fails is looked at element by element. */
SEXP bnmf_first_nonfinite_call(SEXP x)
{
    check_double(x, "x");
    const double *p = REAL(x);
    const R_xlen_t n = XLENGTH(x);
    double first = 0.0;
    for (R_xlen_t b = 0; b < n && first == 0.0; b += 1024) {
        if (bnmf_all_finite(p + b, n - b < 1024 ? n - b : 1024)) continue;
        R_xlen_t t = b;
        while (bnmf_finite(p[t])) t++;
        first = (double) t + 1;
    }
    return Rf_ScalarReal(first);
}

/* rtnorm()'s checks of its recycled arguments for n draws: double vectors,
 * of length >= 1 when n > 0, mean finite, sd positive and finite, bounds
 * not NA, and lower < upper for every (lower, upper) pair the draws use. */
static void check_rtnorm_args(R_xlen_t n, SEXP mean, SEXP sd, SEXP lower, SEXP upper)
{
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
}

/* .Call entry of rtnorm(): n draws of N(mean, sd^2) truncated to
 * [lower, upper], the arguments recycled. */
SEXP bnmf_rtnorm_call(SEXP n_, SEXP mean, SEXP sd, SEXP lower, SEXP upper)
{
    const R_xlen_t n = bnmf_count_arg(n_);
    check_rtnorm_args(n, mean, sd, lower, upper);
    const R_xlen_t nm = XLENGTH(mean), ns = XLENGTH(sd),
                   nl = XLENGTH(lower), nu = XLENGTH(upper);
    const double *pm = REAL(mean), *ps = REAL(sd),
                 *pl = REAL(lower), *pu = REAL(upper);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    double *po = REAL(out);
    bnmf_rng_get(1);   /* every draw goes through bnmf_unif() */
    for (R_xlen_t i = 0, im = 0, is = 0, il = 0, iu = 0; i < n; i++) {
        po[i] = bnmf_rtnorm1(pm[im], ps[is], pl[il], pu[iu]);
        if (++im == nm) im = 0;
        if (++is == ns) is = 0;
        if (++il == nl) il = 0;
        if (++iu == nu) iu = 0;
        if ((i & 0xFFFFF) == 0xFFFFF) {   /* every 2^20 draws */
            bnmf_rng_interrupt();
        }
    }
    bnmf_rng_put();
    UNPROTECT(1);
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
 * N(mu, sd^2) truncated to [0, inf) from bnmf_tn_pos_vb (truncnorm.h);
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
