/*
 * nmf_scale.c -- the moves of Gaussian NMF along the scale path of each
 * factor (W[, k] c, H[k, ] / c), which leaves W H unchanged: the Gibbs
 * sampler's exact move (bnmf_scale_move) and the maximisation of ICM and VB
 * (bnmf_balance_scales), and the sums and mode they share (used by chib.c
 * too).
 */
#include <float.h>
#include "bnmf_call.h"
#include "nmf_sweep.h"

/* A_k = sum_i lamW_ik W_ik and B_k = sum_j lamH_kj H_kj: the prior's pull on
 * the scale of factor k. */
void bnmf_scale_sums(const nmf_data *d, const nmf_prior *pr, const double *W,
                     const double *H, int k, double *A, double *B)
{
    const int I = d->I, J = d->J, K = d->K;
    double a = 0.0, b = 0.0;
    for (int i = 0; i < I; i++) a += pr->lamW[i + (size_t) k * I] * W[i + (size_t) k * I];
    for (int j = 0; j < J; j++) b += pr->lamH[k + (size_t) j * K] * H[k + (size_t) j * K];
    *A = a;
    *B = b;
}

/* W[, k] c and H[k, ] / c. */
static void rescale_factor(const nmf_data *d, double *W, double *H, int k, double c)
{
    const int I = d->I, J = d->J, K = d->K;
    for (int i = 0; i < I; i++) W[i + (size_t) k * I] *= c;
    for (int j = 0; j < J; j++) H[k + (size_t) j * K] /= c;
}

/* The mode of log p(u) = -A e^u - B e^-u + p u (log y) and A y, B / y, from
 * logs: for A or B near the ends of the range of double, where y, A y or
 * B / y computed directly overflow or underflow. With s = 2 sqrt(A B) and
 * q = sqrt(p^2 + s^2): A y = (p + q) / 2 for p >= 0, B / y = (q - p) / 2
 * for p < 0, and (A y)(B / y) = A B. */
static void scale_mode_logs(double A, double B, double p, double *mode, double *Ay,
                            double *By)
{
    const double sa = sqrt(A), sb = sqrt(B), s = 2.0 * sa * sb, q = hypot(p, s);
    if (p >= 0.0) {
        *Ay = 0.5 * (p + q);
        *By = (s / (p + q)) * (0.5 * s);
        *mode = log(*Ay) - log(A);
    } else {
        *By = 0.5 * (q - p);
        *Ay = (s / (q - p)) * (0.5 * s);
        *mode = log(B) - log(*By);
    }
}

/**
 * The maximiser u* = log c* of -A e^u - B e^-u + p u (A, B > 0): the scale
 * of a factor that maximises the log posterior (ICM's balance with p = 0),
 * the ELBO (VB, p = the difference of the two sides' numbers of entries)
 * or is the mode of the Gibbs scale move's target. e^u* = (p + sqrt(p^2 +
 * 4 A B)) / (2 A); *Ay = A e^u*, *By = B e^-u* (the curvature is their
 * sum), from logs (scale_mode_logs) where the direct values overflow or
 * underflow. Returns 1 when they came from logs, else 0.
 */
int bnmf_scale_mode(double A, double B, double p, double *u, double *Ay, double *By)
{
    const double y = (p + sqrt(p * p + 4.0 * A * B)) / (2.0 * A);
    *u = log(y);
    *Ay = A * y;
    *By = B / y;
    const int logs = !(y > 0.0) || !R_FINITE(y) || !R_FINITE(*Ay + *By) ||
        !(*Ay + *By > 0.0);
    if (logs) scale_mode_logs(A, B, p, u, Ay, By);
    return logs;
}

/* Whether W[, k] e^u and H[k, ] e^-u stay finite with finite squares sums
 * (the Gram matrices of the next sweep). */
static int scale_fits(const nmf_data *d, const double *W, const double *H, int k,
                      double u)
{
    const int I = d->I, J = d->J, K = d->K;
    double mw = 0.0, mh = 0.0;
    /* a comparison, not fmax(): a library call per entry at -O2 */
    for (int i = 0; i < I; i++) {
        const double w = W[i + (size_t) k * I];
        mw = w > mw ? w : mw;
    }
    for (int j = 0; j < J; j++) {
        const double h = H[k + (size_t) j * K];
        mh = h > mh ? h : mh;
    }
    return bnmf_scale_fits_max(mw, mh, I, J, u);
}

/* scale_fits from the largest entries mw of W[, k] and mh of H[k, ]. */
int bnmf_scale_fits_max(double mw, double mh, int I, int J, double u)
{
    const double lim = 0.5 * log(DBL_MAX) - log((double) (I > J ? I : J) + 1.0);
    return (mw == 0.0 || log(mw) + u < lim) && (mh == 0.0 || log(mh) - u < lim);
}

/**
 * Gibbs only: a move along the scale path of each factor, W[, k] c and
 * H[k, ] / c, which leaves WH unchanged and which single-coordinate updates
 * traverse only slowly (the scale of a factor is set by the prior alone).
 * By the generalised Gibbs sampler of Liu & Sabatti (2000), drawing the group
 * element u = log c from
 *   p(u) propto pi(c W, H / c) |Jacobian| = exp(-A_k c - B_k / c) c^(I - J)
 * (A_k = sum_i lamW_ik W_ik, B_k = sum_j lamH_kj H_kj; Lebesgue measure in u is
 * the Haar measure of the scale group), or taking any Metropolis-Hastings
 * step from u = 0 that leaves p(u) invariant, preserves the posterior.
 * log p(u) = -A e^u - B e^-u + (I - J) u is concave with the mode
 * e^u* = ((I - J) + sqrt((I - J)^2 + 4 A B)) / (2 A) and curvature
 * A e^u* + B e^-u*; its tails are lighter than Gaussian, so an independence
 * proposal from the Laplace approximation N(u*, 1 / curvature) is uniformly
 * ergodic and accepts nearly always.
 */
void bnmf_scale_move(const nmf_data *d, const nmf_prior *pr, double *W, double *H,
                     int first)
{
    const double p = (double) d->I - (double) d->J;
    for (int k = first; k < d->K; k++) {
        double A, B, u;
        bnmf_scale_sums(d, pr, W, H, k, &A, &B);
        if (!bnmf_scale_step(A, B, p, &u)) continue;
        const double c = exp(u);
        if (!(c > 0.0) || !R_FINITE(c) || !scale_fits(d, W, H, k, u))
            bnmf_scale_range_error(k, c);
        rescale_factor(d, W, H, k, c);
    }
}

/**
 * The Metropolis-Hastings step of bnmf_scale_move for one factor, from its
 * sums A = A_k, B = B_k and p = I - J: the independence proposal u from
 * the Laplace approximation of p(u), accepted against u = 0. Returns 1
 * with *u when the move is accepted (the caller rescales by c = e^u after
 * checking its range: bnmf_scale_fits_max), 0 when it is not or when A or
 * B is not positive (no draw then). The fit by blocks of samples
 * (nmf_blocks.c) takes the same step from B_k summed over the blocks.
 */
int bnmf_scale_step(double A, double B, double p, double *u)
{
    if (!(A > 0.0) || !(B > 0.0)) return 0;
    double mode, Ay, By;
    const int logs = bnmf_scale_mode(A, B, p, &mode, &Ay, &By);
    const double sd = 1.0 / sqrt(Ay + By);
    const double v = mode + sd * bnmf_norm_std();
    /* log target minus log proposal, at the proposal and at u = 0 (from
     * logs: A e^u = Ay e^(u - mode), B e^-u = By e^(mode - u)). */
    const double z1 = (v - mode) / sd, z0 = mode / sd;
    const double ta = logs ? Ay * exp(v - mode) : A * exp(v);
    const double tb = logs ? By * exp(mode - v) : B * exp(-v);
    const double log_ratio = (-ta - tb + p * v + 0.5 * z1 * z1) -
        (-A - B + 0.5 * z0 * z0);
    if (log(bnmf_unif()) >= log_ratio) return 0;
    *u = v;
    return 1;
}

/* An accepted scale c of factor k (0-based) that leaves the range of double
 * precision: the error (the RNG state given back first). */
void bnmf_scale_range_error(int k, double c)
{
    bnmf_rng_put();
    Rf_error("the scale of factor %d left the range of double precision "
             "(factor W[, k] times %g): an exponential rate this small puts the "
             "prior's scale outside it; use a larger rate", k + 1, c);
}

/**
 * Maximise along the scale path of each factor, W[, k] c and H[k, ] / c,
 * which leaves WH (so the likelihood) unchanged and which coordinate
 * updates cross only slowly (the posterior is nearly flat along it).
 *  - ICM (vb NULL): the log prior -c A_k - B_k / c, with A_k = sum_i lamW_ik
 *    W_ik and B_k = sum_j lamH_kj H_kj, is largest at c = sqrt(B_k / A_k);
 *    every MAP satisfies A_k = B_k.
 *  - VB: q(W[, k]) scaled by c and q(H[k, ]) by 1 / c. A truncated normal
 *    (or exponential) scaled by c is one again, its mean times c, variance
 *    times c^2 and entropy plus log c; E_q[W_ik H_kj] and E_q[W_ik^2 H_kj^2]
 *    do not change, so neither does the expected log likelihood (nor
 *    q(tau)). The ELBO moves by -A_k (c - 1) - B_k (1 / c - 1) +
 *    (I - J) log c (A_k, B_k with the means, and with ARD the rates
 *    E[lambda_k]), largest at bnmf_scale_mode's c (p = I - J).
 * Either is an exact maximisation along a direction, so the objective never
 * decreases; at a fixed point of the coordinate updates it is stationary
 * in every direction, so c = 1 there and the fixed points are the same.
 */
void bnmf_balance_scales(const nmf_data *d, const nmf_prior *pr, double *W,
                           double *H, const vb_part *vb)
{
    const int I = d->I, J = d->J, K = d->K;
    const double p = (double) I - (double) J;
    for (int k = 0; k < K; k++) {
        double A, B;
        bnmf_scale_sums(d, pr, W, H, k, &A, &B);
        if (!(A > 0.0) || !(B > 0.0)) continue;
        if (!vb) {
            rescale_factor(d, W, H, k, sqrt(B / A));
            continue;
        }
        double u, Ay, By;
        bnmf_scale_mode(A, B, p, &u, &Ay, &By);
        if (!R_FINITE(u) || u == 0.0 || !scale_fits(d, W, H, k, u)) continue;
        const double c = exp(u), c2 = c * c;
        rescale_factor(d, W, H, k, c);
        for (int i = 0; i < I; i++) {
            vb->Wvar[i + (size_t) k * I] *= c2;
            vb->Went[i + (size_t) k * I] += u;
        }
        for (int j = 0; j < J; j++) {
            vb->Hvar[k + (size_t) j * K] /= c2;
            vb->Hent[k + (size_t) j * K] -= u;
        }
    }
}
