/*
 * ard.c -- automatic relevance determination (ARD) for NMF: one exponential
 * rate per factor, shared by its column of W and its row of H,
 *   W_ik ~ Exp(lambda_k),  H_kj ~ Exp(lambda_k),  lambda_k ~ Gamma(alpha0, beta0)
 * (shape, rate). Given the factors the rates are conjugate:
 *   lambda_k | W, H ~ Gamma(alpha0 + I + J, beta0 + m_k),
 *   m_k = sum_i W_ik + sum_j H_kj   (the factor's mass),
 * which Gibbs draws, ICM maximises ((shape - 1) / rate) and VB takes as
 * q(lambda_k) with E[W], E[H] in place of W, H. The log prior and its VB
 * counterpart are
 *   sum_k log Gamma(lambda_k; alpha0, beta0) + (I + J) log lambda_k - lambda_k m_k,
 *   sum_k (I + J) E[log lambda_k] - E[lambda_k] m_k
 *         + E_q[log Gamma(lambda_k; alpha0, beta0)] + entropy of q(lambda_k),
 * with E[log lambda] = digamma(shape) - log(rate) and the Gamma entropy
 *   shape - log(rate) + log Gamma(shape) + (1 - shape) digamma(shape).
 */
#include <float.h>
#include "nmf.h"

/** sum_i W_ik + sum_j H_kj: what the ARD rate of factor k sees. */
double bnmf_factor_mass(const nmf_data *d, const double *W, const double *H, int k)
{
    const int I = d->I, J = d->J, K = d->K;
    double s = 0.0;
    for (int i = 0; i < I; i++) s += W[i + (size_t) k * I];
    for (int j = 0; j < J; j++) s += H[k + (size_t) j * K];
    return s;
}

/**
 * The ARD part of the log joint density at lambda (K rates), W and H.
 * @param pr the prior (alpha0, beta0)
 */
double bnmf_ard_log_prior(const nmf_data *d, const nmf_prior *pr,
                          const double *lambda, const double *W, const double *H)
{
    const int I = d->I, J = d->J, K = d->K;
    double s = 0.0;
    for (int k = 0; k < K; k++) {
        const double sw = bnmf_factor_mass(d, W, H, k);
        const double l = lambda[k];
        s += dgamma(l, pr->alpha0, 1.0 / pr->beta0, 1) + (I + J) * log(l) - l * sw;
    }
    return s;
}

/**
 * Update the rates from their conditional given W and H.
 * @param rule   RULE_DRAW: draw; RULE_MODE: mode; RULE_MOMENT: the mean of q
 * @param lambda K rates, updated
 * @param rate_out VB: receives the K Gamma rates of q (unused otherwise)
 */
void bnmf_ard_update(const nmf_data *d, const nmf_prior *pr, nmf_rule rule,
                     double *lambda, double *rate_out, const double *W,
                     const double *H)
{
    const int I = d->I, J = d->J, K = d->K;
    const double shape = pr->alpha0 + I + J;
    /* rgamma() draws from R's own state */
    const int lent = rule == RULE_DRAW ? bnmf_rng_lend() : 0;
    for (int k = 0; k < K; k++) {
        const double rate = pr->beta0 + bnmf_factor_mass(d, W, H, k);
        double l;
        if (rule == RULE_DRAW) {
            l = rgamma(shape, 1.0 / rate);
            if (l < DBL_MIN) l = DBL_MIN;
        } else if (rule == RULE_MODE) {
            l = (shape - 1.0) / rate;
        } else {
            l = shape / rate;
            rate_out[k] = rate;
        }
        lambda[k] = l;
    }
    bnmf_rng_reclaim(lent);
}

/** The entry-wise rates lamW[, k] = lamH[k, ] = lambda_k (pr's scratch copies). */
void bnmf_ard_fill_rates(const nmf_data *d, nmf_prior *pr, const double *lambda)
{
    const int I = d->I, J = d->J, K = d->K;
    for (int k = 0; k < K; k++)
        for (int i = 0; i < I; i++) pr->lamW[i + (size_t) k * I] = lambda[k];
    for (int j = 0; j < J; j++)
        for (int k = 0; k < K; k++) pr->lamH[k + (size_t) j * K] = lambda[k];
}

/** Entropy of Gamma(shape, rate). */
double bnmf_gamma_entropy(double shape, double rate)
{
    return shape - log(rate) + lgammafn(shape) + (1.0 - shape) * digamma(shape);
}

/**
 * Add the ARD terms of the ELBO to e, factor by factor (in this order, so
 * that the sum is the same to the last bit wherever it is called).
 * @param W, H        the means of q(W), q(H)
 * @param lambda      E[lambda_k] under q
 * @param lambda_rate the Gamma rates of q(lambda_k)
 * @return e plus the terms
 */
double bnmf_ard_elbo_add(double e, const nmf_data *d, const nmf_prior *pr,
                         const double *W, const double *H, const double *lambda,
                         const double *lambda_rate)
{
    const int I = d->I, J = d->J, K = d->K;
    const double shape = pr->alpha0 + I + J;
    for (int k = 0; k < K; k++) {
        const double sw = bnmf_factor_mass(d, W, H, k);
        const double el = lambda[k], elog = digamma(shape) - log(lambda_rate[k]);
        e += (I + J) * elog - el * sw;
        e += pr->alpha0 * log(pr->beta0) - lgammafn(pr->alpha0) +
            (pr->alpha0 - 1.0) * elog - pr->beta0 * el +
            bnmf_gamma_entropy(shape, lambda_rate[k]);
    }
    return e;
}
