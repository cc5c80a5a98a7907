/*
 * nmf_sweep.c -- Gibbs sampling and iterated conditional modes (ICM) for
 * Bayesian NMF with a Gaussian likelihood and exponential priors
 * (Schmidt, Winther & Hansen 2009, Algorithms 1 and 2).
 *
 * Model, for the observed entries (i, j) in Omega:
 *   X_ij ~ N((WH)_ij, 1/tau),  W_ik ~ Exp(lamW_ik),  H_kj ~ Exp(lamH_kj),
 *   tau ~ Gamma(alpha, beta)   (shape, rate).
 *
 * One sweep, two uses. Row i of W, given H and tau, has the conditional
 *   p(w_i | .) propto exp(-tau/2 w_i' G_i w_i + tau w_i' b_i - lamW_i' w_i),  w_i >= 0
 * with G_i = sum_{j in Omega_i} h_j h_j' and b_i = sum_{j in Omega_i} X_ij h_j.
 * Coordinate k of it is N+(mu, 1/p) (a normal truncated to [0, inf)) with
 *   p  = tau G_i[k,k],
 *   mu = (b_ik - sum_{l != k} G_i[k,l] w_il - lamW_ik / tau) / G_i[k,k].
 * The Gibbs sampler draws it (rtnorm); ICM takes its mode max(mu, 0). The
 * columns h_j of H are updated by the same kernel with the roles swapped.
 * Rows of W are conditionally independent given H, so updating them row by
 * row (all k of row i, then row i + 1) is the same transition as Schmidt's
 * column-by-column order.
 *
 * Complete data: G_i = H H' for every row and b_i is row i of D = X H'; the
 * products D = X H' and F = W' X are the only O(I J K) work of a sweep
 * (Schmidt's Algorithm 1). The noise needs no I x J residual:
 *   SSE = ||X||^2 - 2 sum_j h_j' f_j + sum_j h_j' G_j h_j.
 *
 * Missing entries, two exact strategies:
 *  - augmented (Gibbs): the missing X_ij are latent variables, redrawn each
 *    sweep from N((WH)_ij, 1/tau); the sweep then runs at complete-data speed.
 *    tau is drawn with the missing entries integrated out (the block
 *    (tau, X_miss) is drawn jointly from p(tau | W, H, X_obs) p(X_miss | ...)).
 *  - masked (ICM; available to Gibbs): the data hold zeros at missing entries
 *    and G_i = H H' - sum_{j missing in row i} h_j h_j' (or the sum over the
 *    observed j when that is shorter), so only O(|missing| K^2) work is added.
 *
 * tau | W, H ~ Gamma(alpha + |Omega|/2, beta + SSE/2); its mode for ICM is
 * (alpha + |Omega|/2 - 1) / (beta + SSE/2).
 *
 * The Gibbs sampler adds an exact move along the scale of each factor
 * (scale_move), which WH does not see and coordinate updates explore slowly.
 * ICM also maximises each row's block fully (repeated coordinate passes) and
 * the scale of each factor (balance_scales): both are exact maximisations of
 * the joint posterior along a set of directions, so the log posterior still
 * never decreases and the fixed points are the KKT points of the MAP problem.
 */
#include <float.h>
#include <limits.h>
#include "bnmf_call.h"
#include "nmf.h"

/* ------------------------------------------------------------------------ */
/* Kernels                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Mean, variance and entropy of N(mu, sd^2) truncated to [0, inf), for VB.
 * With a = -mu / sd, Q = 1 - Phi(a) and lambda = phi(a) / Q:
 *   E = mu + sd lambda,  Var = sd^2 (1 - lambda (lambda - a)),
 *   H = log(sqrt(2 pi e) sd Q) + a lambda / 2.
 * For a < 3 these come from one log-scale pnorm (no cancellation that costs
 * more than a digit: lambda - a >= 0.28 there, and a lambda -> 0 as
 * a -> -inf). For a >= 3 the moments come from bnmf_tn_pos_moments (Laplace's
 * continued fraction, exact in the tail: lambda = t0 = a + 1 / t1 and
 * E = sd / t1), and the entropy, written with the log Mills ratio as
 * 1/2 + log sd - log lambda + a (lambda - a) / 2, becomes
 * 1/2 + log sd - log(a + r) + a r / 2 with r = E / sd = 1 / t1: a sum without
 * cancellation (it tends to 1 + log(sd / a), the entropy of the exponential
 * limit).
 */
static void tn_pos_vb(double mu, double sd, double *m1, double *var, double *ent)
{
    const double a = -mu / sd;
    if (a < 3.0) {
        const double lq = pnorm(a, 0.0, 1.0, 0, 1);
        const double lam = exp(-0.5 * a * a - M_LN_SQRT_2PI - lq);
        const double f = 1.0 - lam * (lam - a);
        *m1 = (a <= 0.0) ? mu + sd * lam : sd * (lam - a);
        *var = sd * sd * (f > 0.0 ? f : 0.0);
        *ent = M_LN_SQRT_2PI + 0.5 + log(sd) + lq + 0.5 * a * lam;
        return;
    }
    bnmf_tn_pos_moments(mu, sd, m1, var);
    const double r = *m1 / sd;
    *ent = 0.5 + log(sd) - log(a + r) + 0.5 * a * r;
}

/**
 * Update the K coordinates of one row of a factor in turn.
 * @param z    the row (K values, contiguous), updated in place
 * @param G    K x K Gram matrix of the other factor for this row (for VB the
 *             expected Gram matrix: means' products plus the variances)
 * @param b    K values: the data projected on the other factor
 * @param lam  K exponential rates (stride ls)
 * @param tau  noise precision (VB: its expectation)
 * @param first coordinates k < first are held fixed (Chib's reduced runs)
 * @param rule RULE_DRAW (Gibbs), RULE_MODE (ICM), RULE_MOMENT (VB: z holds
 *             the means of q, v receives the variances and ent the entropies),
 *             RULE_MULT (Lee-Seung multiplicative update, all K at once)
 */
static double update_row_once(double *z, const double *G, const double *b,
                              const double *lam, int ls, double tau, int K,
                              int first, nmf_rule rule, double *v, double *ent)
{
    double change = 0.0;
    if (rule == RULE_MULT) {
        /* z_k <- z_k b_k / (G z)_k: minimises the Euclidean loss's auxiliary
         * function (Lee & Seung 2001), so the loss never increases. */
        for (int k = 0; k < K; k++) {
            const double *gk = G + (size_t) k * K;
            double den = 0.0;
            for (int l = 0; l < K; l++) den += gk[l] * z[l];
            v[k] = den;
        }
        for (int k = 0; k < K; k++) {
            if (v[k] > 0.0) {
                const double znew = z[k] * (b[k] > 0.0 ? b[k] : 0.0) / v[k];
                change += fabs(znew - z[k]);
                z[k] = znew;
            }
        }
        return change;
    }
    for (int k = first; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        const double gkk = gk[k];
        const double lk = lam[(size_t) k * ls];
        double s = b[k];
        for (int l = 0; l < K; l++) s -= gk[l] * z[l];
        s += gkk * z[k];
        double znew;
        if (gkk > 0.0) {
            const double mu = (s - lk / tau) / gkk;
            if (rule == RULE_DRAW) {
                znew = bnmf_rtnorm1(mu, 1.0 / sqrt(tau * gkk), 0.0, R_PosInf);
            } else if (rule == RULE_MODE) {
                znew = mu > 0.0 ? mu : 0.0;
            } else {
                tn_pos_vb(mu, 1.0 / sqrt(tau * gkk), &znew, v + k, ent + k);
            }
        } else {
            /* The data say nothing about this coordinate: its conditional is
             * the prior Exp(lk) (proper, lk > 0, for Gibbs and VB). */
            if (rule == RULE_DRAW) {
                znew = exp_rand() / lk;
            } else if (rule == RULE_MODE) {
                znew = lk > 0.0 ? 0.0 : z[k];
            } else {
                znew = 1.0 / lk;
                v[k] = znew * znew;
                ent[k] = 1.0 - log(lk);
            }
        }
        change += fabs(znew - z[k]);
        z[k] = znew;
    }
    return change;
}

/* ICM makes up to ICM_MAX_PASSES coordinate passes over a row (stopping
 * early once the row no longer moves): a pass costs O(K^2) against O(J K)
 * for the row's share of the products, and a few passes move the row much
 * closer to its block maximum. Measured at I = J = 1000, K = 20 (bench/):
 * with 3 passes a sweep costs about 1.15x the products and reaches RcppML's
 * error in about 0.96x its time; 10 passes reach it sooner (0.6-0.85x) but
 * cost about 1.5x per sweep. Gibbs, VB and the multiplicative updates make
 * one pass. */
#define ICM_MAX_PASSES 3

static void update_row(double *z, const double *G, const double *b,
                       const double *lam, int ls, double tau, int K,
                       int first, nmf_rule rule, double *v, double *ent)
{
    double change = update_row_once(z, G, b, lam, ls, tau, K, first, rule, v, ent);
    if (rule != RULE_MODE) return;
    for (int pass = 1; pass < ICM_MAX_PASSES; pass++) {
        double size = 0.0;
        for (int k = 0; k < K; k++) size += z[k];
        if (change <= 1e-8 * size) break;
        change = update_row_once(z, G, b, lam, ls, tau, K, first, rule, v, ent);
    }
}

/**
 * G += sign * sum_m v_m v_m' (upper triangle) over the vectors v_m = base +
 * idx[m] * stride (K contiguous values each). Four vectors at a time, so that
 * G is read and written once per four rank-one terms.
 */
static void gram_update(double *G, const double *base, int stride,
                        const int *idx, int n, int K, double sign)
{
    int m = 0;
    for (; m + 4 <= n; m += 4) {
        const double *v0 = base + (size_t) idx[m] * stride;
        const double *v1 = base + (size_t) idx[m + 1] * stride;
        const double *v2 = base + (size_t) idx[m + 2] * stride;
        const double *v3 = base + (size_t) idx[m + 3] * stride;
        for (int b = 0; b < K; b++) {
            const double b0 = sign * v0[b], b1 = sign * v1[b];
            const double b2 = sign * v2[b], b3 = sign * v3[b];
            double *Gb = G + (size_t) b * K;
            for (int a = 0; a <= b; a++)
                Gb[a] += v0[a] * b0 + v1[a] * b1 + v2[a] * b2 + v3[a] * b3;
        }
    }
    for (; m < n; m++) {
        const double *v = base + (size_t) idx[m] * stride;
        for (int b = 0; b < K; b++) {
            const double vb = sign * v[b];
            double *Gb = G + (size_t) b * K;
            for (int a = 0; a <= b; a++) Gb[a] += v[a] * vb;
        }
    }
}

static void symmetrise(double *G, int K)
{
    for (int b = 0; b < K; b++)
        for (int a = b + 1; a < K; a++)
            G[a + (size_t) b * K] = G[b + (size_t) a * K];
}

/**
 * Gram matrix of the other factor restricted to the observed entries of one
 * row (or column): G_full minus the terms of the missing entries, or the
 * observed terms summed directly when those are fewer. `other` holds n
 * vectors of K contiguous values, `ostride` apart; `miss` lists the nm
 * missing ones, sorted. Returns 1 when it downdated G_full, 0 when it summed
 * the observed terms (listed in `obs`, `*nobs` of them).
 */
static int masked_gram(double *Gi, const double *Gfull, const double *other,
                       int ostride, int n, const int *miss, int nm, int K,
                       int *obs, int *nobs)
{
    if (2 * nm <= n) {
        memcpy(Gi, Gfull, sizeof(double) * K * K);
        gram_update(Gi, other, ostride, miss, nm, K, -1.0);
        symmetrise(Gi, K);
        return 1;
    }
    memset(Gi, 0, sizeof(double) * K * K);
    int m = 0, no = 0;
    for (int t = 0; t < n; t++) {
        if (m < nm && miss[m] == t) { m++; continue; }
        obs[no++] = t;
    }
    gram_update(Gi, other, ostride, obs, no, K, 1.0);
    symmetrise(Gi, K);
    *nobs = no;
    return 0;
}

/**
 * VB: the variance part of a masked expected Gram matrix. G_full carries
 * diag(sum over all t of V_t) on its diagonal; a downdated Gi (down = 1)
 * loses the variances of the nm missing vectors, a directly summed one
 * (down = 0) gains those of the observed ones. V_t[k] = V[t * vstride +
 * k * kstride].
 */
static void masked_var_diag(double *Gi, int down, const double *V, size_t vstride,
                            size_t kstride, const int *idx, int n, int K)
{
    const double sign = down ? -1.0 : 1.0;
    for (int m = 0; m < n; m++) {
        const double *v = V + (size_t) idx[m] * vstride;
        for (int k = 0; k < K; k++) Gi[k + (size_t) k * K] += sign * v[k * kstride];
    }
    for (int k = 0; k < K; k++)
        if (Gi[k + (size_t) k * K] < 0.0) Gi[k + (size_t) k * K] = 0.0;
}

/**
 * The Gram matrix of the other factor for one row (or column) with nm
 * missing entries `miss`: Gfull itself when nothing is missing, otherwise
 * its masked version in Gi (for VB with the variances V of the other factor,
 * V_t[k] = V[t * vstride + k * kstride], on the diagonal).
 */
static const double *row_gram(double *Gi, const double *Gfull, const double *other,
                              int ostride, int n, const int *miss, int nm, int K,
                              int *obs, const double *V, size_t vstride, size_t kstride)
{
    if (nm == 0) return Gfull;
    int nobs = 0;
    const int down = masked_gram(Gi, Gfull, other, ostride, n, miss, nm, K, obs, &nobs);
    if (V) masked_var_diag(Gi, down, V, vstride, kstride, down ? miss : obs,
                           down ? nm : nobs, K);
    return Gi;
}

static double quad_form(const double *G, const double *z, int K)
{
    double s = 0.0;
    for (int b = 0; b < K; b++) {
        const double *Gb = G + (size_t) b * K;
        double t = 0.0;
        for (int a = 0; a < K; a++) t += Gb[a] * z[a];
        s += t * z[b];
    }
    return s;
}

/* sum_t log(lam_t) over the proper (lam_t > 0) entries: the constant part of
 * the exponential log prior, computed once per call. */
static double sum_log_rates(const double *lam, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++)
        if (lam[t] > 0.0) s += log(lam[t]);
    return s;
}

/* -sum_t lam_t z_t: the part of the exponential log prior that varies. */
static double exp_log_kernel(const double *z, const double *lam, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s -= lam[t] * z[t];
    return s;
}

/*
 * Chib's method (chib_run below) needs the full conditional density of one
 * block of the factors at a fixed point: a column b of W at W*[, b] (the rows
 * of W are conditionally independent, so it is a product over the rows of
 * the coordinate conditionals N+(mu_ib, 1/p_ib)) or a row b of H at H*[b, ]
 * (a product over the columns). The row kernel computes these conditionals,
 * so they are taken there, for the state before the row is updated: that is
 * the previous sweep's draw, whatever row comes first.
 *
 * Rows of H: each[j] receives the log density of H*[b, j] (the columns of
 * H are independent given W, tau and lambda, see chib_run).
 * Columns of W: for each label k in first..last-1 (see chib_run) the kernel
 * stores the conditional of W*[i, b] as entry k of row i in the form
 *   mu_i(c) = c a_i - c^2 e_i,  sd_i(c) = c d_i,
 * where c = 1 is the draw itself and c is the scale move of factor k
 * (W[, k] c, H[k, ] / c): with H[k, ] / c the row's Gram entries and data
 * projections scale as G_kk / c^2, G_kl / c and b_k / c, while W[i, l] H[l, ]
 * (l != k) do not move. chib_orbit() then integrates over c.
 */
typedef struct {
    const double *target; /* the block's fixed values, stride tstride */
    size_t tstride;
    int last;             /* labels first..last-1 */
    int wblock;           /* 1: a column of W (store a, e, d); 0: a row of H */
    double *acc;          /* K accumulators of log densities */
    double *a, *e, *dd;   /* I x K: the conditionals of the W column */
    double *each;         /* rows of H: the log density of each column j */
} chib_hook;

static void chib_eval_row(const chib_hook *hk, int i, int I, double xstar,
                          const double *z, const double *G, const double *b,
                          const double *lam, int ls, double tau, int K, int first)
{
    for (int k = first; k < hk->last; k++) {
        const double *gk = G + (size_t) k * K;
        const double gkk = gk[k];
        const double lk = lam[(size_t) k * ls];
        const size_t t = (size_t) i + (size_t) k * I;
        if (gkk > 0.0) {
            double s = b[k];
            for (int l = 0; l < K; l++) s -= gk[l] * z[l];
            s += gkk * z[k];
            const double sd = 1.0 / sqrt(tau * gkk);
            if (hk->wblock) {
                hk->a[t] = s / gkk;
                hk->e[t] = lk / (tau * gkk);
                hk->dd[t] = sd;
            } else {
                hk->each[i] = bnmf_tn_pos_logdens(xstar, (s - lk / tau) / gkk, sd);
            }
        } else {
            /* No data on this coordinate: the conditional is the prior
             * Exp(lk), the same for every scale c. */
            if (hk->wblock) {
                hk->acc[k] += log(lk) - lk * xstar;
                hk->dd[t] = 0.0;
            } else {
                hk->each[i] = log(lk) - lk * xstar;
            }
        }
    }
}

/* Scratch space of a sweep, from R_alloc. */
typedef struct {
    double *D, *F, *G, *Gi, *zrow, *brow, *vrow, *erow;
    double *Wt, *Ht;  /* K x I and J x K transposes of W and H */
    int *obs;         /* observed indices of a row or column */
} sweep_work;

/* VB: the variances and entropies of q(W) and q(H) (NULL otherwise). */
typedef struct {
    double *Wvar, *Hvar, *Went, *Hent;
} vb_part;

/**
 * Update every row of W given H and tau.
 * Masked: rows with missing entries use their own Gram matrix.
 * VB: W and H hold the means of q; the Gram matrix of H is its expectation,
 * E[H]E[H]' + diag(sum_j Var H_kj) over the observed j.
 */
static void update_W(const nmf_data *d, const nmf_prior *pr, const double *x,
                     double *W, const double *H, double tau, nmf_rule rule,
                     int masked, int first, sweep_work *ws, const vb_part *vb,
                     const chib_hook *hk)
{
    const int I = d->I, J = d->J, K = d->K;
    bnmf_x_ht(d, x, H, ws->D, ws->Ht);
    bnmf_gram_rows(H, K, J, ws->G);
    if (vb) {
        for (int j = 0; j < J; j++)
            for (int k = 0; k < K; k++)
                ws->G[k + (size_t) k * K] += vb->Hvar[k + (size_t) j * K];
    }
    for (int i = 0; i < I; i++) {
        const double *G = !masked ? ws->G :
            row_gram(ws->Gi, ws->G, H, K, J, d->mrow_j + d->mrow_ptr[i],
                     d->mrow_ptr[i + 1] - d->mrow_ptr[i], K, ws->obs,
                     vb ? vb->Hvar : NULL, K, 1);
        for (int k = 0; k < K; k++) {
            ws->zrow[k] = W[i + (size_t) k * I];
            ws->brow[k] = ws->D[i + (size_t) k * I];
        }
        if (hk)
            chib_eval_row(hk, i, I, hk->target[i * hk->tstride], ws->zrow, G,
                          ws->brow, pr->lamW + i, I, tau, K, first);
        update_row(ws->zrow, G, ws->brow, pr->lamW + i, I, tau, K, first, rule,
                   ws->vrow, ws->erow);
        for (int k = 0; k < K; k++) W[i + (size_t) k * I] = ws->zrow[k];
        if (vb) {
            for (int k = 0; k < K; k++) {
                vb->Wvar[i + (size_t) k * I] = ws->vrow[k];
                vb->Went[i + (size_t) k * I] = ws->erow[k];
            }
        }
    }
}

/**
 * Update every column of H given W and tau; returns the pieces of the SSE
 * for the new H: *lin = sum_j h_j' f_j and *quad = sum_j h_j' G_j h_j (VB:
 * plus sum_j sum_k G_j[k, k] Var H_kj, so that sumsq - 2 lin + quad is the
 * expected SSE under q).
 */
static void update_H(const nmf_data *d, const nmf_prior *pr, const double *x,
                     const double *W, double *H, double tau, nmf_rule rule,
                     int masked, int update, int first, sweep_work *ws,
                     const vb_part *vb, const chib_hook *hk, double *lin,
                     double *quad)
{
    const int I = d->I, J = d->J, K = d->K;
    bnmf_wt_x(d, x, W, ws->F, ws->Wt);
    bnmf_gram_cols(W, I, K, ws->G);
    if (vb) {
        for (int k = 0; k < K; k++) {
            const double *v = vb->Wvar + (size_t) k * I;
            double sv = 0.0;
            for (int i = 0; i < I; i++) sv += v[i];
            ws->G[k + (size_t) k * K] += sv;
        }
    }
    double sl = 0.0, sq = 0.0;
    for (int j = 0; j < J; j++) {
        const double *G = !masked ? ws->G :
            row_gram(ws->Gi, ws->G, ws->Wt, K, I, d->miss_i + d->mcol_ptr[j],
                     d->mcol_ptr[j + 1] - d->mcol_ptr[j], K, ws->obs,
                     vb ? vb->Wvar : NULL, 1, (size_t) I);
        double *hj = H + (size_t) j * K;
        const double *fj = ws->F + (size_t) j * K;
        if (hk)
            chib_eval_row(hk, j, J, hk->target[j * hk->tstride], hj, G, fj,
                          pr->lamH + (size_t) j * K, 1, tau, K, first);
        if (update) {
            update_row(hj, G, fj, pr->lamH + (size_t) j * K, 1, tau, K, first, rule,
                       vb ? vb->Hvar + (size_t) j * K : ws->vrow,
                       vb ? vb->Hent + (size_t) j * K : ws->erow);
        }
        for (int k = 0; k < K; k++) sl += hj[k] * fj[k];
        sq += quad_form(G, hj, K);
        if (vb) {
            const double *v = vb->Hvar + (size_t) j * K;
            for (int k = 0; k < K; k++) sq += G[k + (size_t) k * K] * v[k];
        }
    }
    *lin = sl;
    *quad = sq;
}

/* A_k = sum_i lamW_ik W_ik and B_k = sum_j lamH_kj H_kj: the prior's pull on
 * the scale of factor k. */
static void scale_sums(const nmf_data *d, const nmf_prior *pr, const double *W,
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

/**
 * ICM only: maximise the log posterior along the scale path of each factor,
 * W[, k] c and H[k, ] / c, which leaves WH (so the likelihood) unchanged. The
 * log prior -c A_k - B_k / c, with A_k = sum_i lamW_ik W_ik and
 * B_k = sum_j lamH_kj H_kj, is largest at c = sqrt(B_k / A_k). Every MAP
 * satisfies A_k = B_k; coordinate updates alone approach that balance only
 * slowly, because the posterior is nearly flat along this path.
 */
static void balance_scales(const nmf_data *d, const nmf_prior *pr, double *W,
                           double *H)
{
    for (int k = 0; k < d->K; k++) {
        double A, B;
        scale_sums(d, pr, W, H, k, &A, &B);
        if (A > 0.0 && B > 0.0) rescale_factor(d, W, H, k, sqrt(B / A));
    }
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
static void scale_move(const nmf_data *d, const nmf_prior *pr, double *W,
                       double *H, int first)
{
    const double p = (double) d->I - (double) d->J;
    for (int k = first; k < d->K; k++) {
        double A, B;
        scale_sums(d, pr, W, H, k, &A, &B);
        if (!(A > 0.0) || !(B > 0.0)) continue;
        const double y = (p + sqrt(p * p + 4.0 * A * B)) / (2.0 * A);
        const double mode = log(y);
        const double sd = 1.0 / sqrt(A * y + B / y);
        const double u = mode + sd * norm_rand();
        /* log target minus log proposal, at the proposal and at u = 0. */
        const double z1 = (u - mode) / sd, z0 = mode / sd;
        const double log_ratio = (-A * exp(u) - B * exp(-u) + p * u + 0.5 * z1 * z1) -
            (-A - B + 0.5 * z0 * z0);
        if (log(unif_rand()) >= log_ratio) continue;
        rescale_factor(d, W, H, k, exp(u));
    }
}

/*
 * Chib's average over the scale of a factor. A draw theta of the posterior
 * moved along the scale path of factor k, (W[, k] c, H[k, ] / c), with c drawn
 * from its conditional
 *   g(c | theta) propto exp(-A_k c - B_k / c) c^(I - J)   (u = log c)
 * (the scale move above) is again a draw of the posterior, so Chib's average
 * of the conditional density f of the target column may average, for each
 * draw, f(c) over g(c | theta) instead of taking f(1). This is exact, and it
 * matters: along the scale path the posterior is wide (the prior alone sets
 * a factor's scale) while the column's conditional is narrow, so f(1) varies
 * over many orders of magnitude between draws and its plain average is
 * dominated by a few of them. The scale of the other factors does not change
 * f. The integral over u is taken by the trapezoidal rule on a grid placed
 * around the maximum of the integrand with a step below its width, which for
 * smooth, unimodal, rapidly decaying integrands converges geometrically.
 */
typedef struct {
    const double *x, *a, *e, *dd, *ldd; /* ldd: log(dd) */
    int I;
    double A, B, p;
    int with_f, with_g;
} orbit_fn;

static double orbit_eval(const orbit_fn *o, double u)
{
    const double c = exp(u);
    double s = 0.0;
    if (o->with_g) s += -o->A * c - o->B / c + o->p * u;
    if (!o->with_f) return s;
    for (int i = 0; i < o->I; i++) {
        if (!(o->dd[i] > 0.0)) continue;
        const double sd = c * o->dd[i], mu = c * o->a[i] - c * c * o->e[i];
        if (mu > 8.0 * sd) {
            /* log Phi(mu / sd) > -7e-16: a plain normal density */
            const double z = (o->x[i] - mu) / sd;
            s += -0.5 * z * z - u - o->ldd[i] - M_LN_SQRT_2PI;
        } else {
            s += bnmf_tn_pos_logdens(o->x[i], mu, sd);
        }
    }
    return s;
}

/* log of the integral of exp(orbit_eval(u)) du, for an integrand with one
 * maximum near m and width about h: a few parabolic (Newton) steps find the
 * maximum u* and the curvature there, then the trapezoidal rule with a step
 * of 0.8 / sqrt(curvature) walks out from u* on both sides until the
 * integrand is exp(-40) below its maximum. */
static double orbit_integral(const orbit_fn *o, double m, double h)
{
    double v0 = orbit_eval(o, m), curv = 0.0;
    for (int it = 0; it < 60; it++) {
        const double vp = orbit_eval(o, m + h), vm = orbit_eval(o, m - h);
        if (!R_FINITE(v0) && !R_FINITE(vp) && !R_FINITE(vm)) return R_NegInf;
        curv = (vp - 2.0 * v0 + vm) / (h * h);
        const double grad = (vp - vm) / (2.0 * h);
        double step;
        if (R_FINITE(curv) && curv < 0.0) {
            step = -grad / curv;
            if (step > 4.0 * h) step = 4.0 * h;
            if (step < -4.0 * h) step = -4.0 * h;
        } else {
            step = grad > 0.0 ? 4.0 * h : -4.0 * h; /* not concave here: climb */
        }
        if (fabs(step) < 0.05 * h && R_FINITE(curv) && curv < 0.0) {
            /* converged; keep h near the width for the last curvature */
            const double w = 1.0 / sqrt(-curv);
            if (h < 2.0 * w && h > 0.1 * w) break;
            h = 0.5 * w;
            continue;
        }
        m += step;
        v0 = orbit_eval(o, m);
        if (fabs(step) >= 4.0 * h) h *= 1.5; /* far away: larger probes */
    }
    if (!(curv < 0.0) || !R_FINITE(curv))
        Rf_error("bnmf internal error: the scale integral of Chib's method has no maximum");
    const double s = 0.8 / sqrt(-curv);
    double vmax = v0, sum = 1.0; /* sum of exp(v - vmax) */
    for (int dir = -1; dir <= 1; dir += 2) {
        for (int t = 1; t <= 400; t++) {
            const double v = orbit_eval(o, m + dir * t * s);
            if (v > vmax) {
                sum = sum * exp(vmax - v) + 1.0;
                vmax = v;
            } else {
                sum += exp(v - vmax);
            }
            if (v < vmax - 40.0) break;
            if (t == 400)
                Rf_error("bnmf internal error: the scale integral of Chib's method did not settle");
        }
    }
    return vmax + log(sum * s);
}

/* log of the average of the target column's conditional density over the
 * scale of factor k (a, e, dd: its conditionals; A, B: the draw's scale
 * sums). */
static double chib_orbit(const double *x, const double *a, const double *e,
                         const double *dd, int I, double A, double B, double p,
                         double *ldd)
{
    for (int i = 0; i < I; i++) ldd[i] = dd[i] > 0.0 ? log(dd[i]) : 0.0;
    orbit_fn o = {x, a, e, dd, ldd, I, A, B, p, 1, 0};
    if (!(A > 0.0) || !(B > 0.0)) return orbit_eval(&o, 0.0);
    /* g: its mode, width and normalising constant */
    const double y = (p + sqrt(p * p + 4.0 * A * B)) / (2.0 * A);
    const double ug = log(y), kg = A * y + B / y;
    orbit_fn og = {x, a, e, dd, ldd, I, A, B, p, 0, 1};
    const double logZ = orbit_integral(&og, ug, 1.0 / sqrt(kg));
    /* f: with v = 1/c its Gaussian part is quadratic in v,
     * sum_i (x_i v - a_i)^2 / (2 d_i^2), smallest at v* = Sxa / Sxx. */
    double sxa = 0.0, sxx = 0.0;
    for (int i = 0; i < I; i++) {
        if (!(dd[i] > 0.0)) continue;
        const double w = 1.0 / (dd[i] * dd[i]);
        sxa += x[i] * a[i] * w;
        sxx += x[i] * x[i] * w;
    }
    double m = ug, prec = kg;
    if (sxa > 0.0 && sxx > 0.0) {
        const double vs = sxa / sxx, kf = vs * vs * sxx;
        m = (-log(vs) * kf + ug * kg) / (kf + kg);
        prec = kf + kg;
    }
    o.with_g = 1;
    return orbit_integral(&o, m, 1.0 / sqrt(prec)) - logZ;
}

/* ------------------------------------------------------------------------ */
/* The .Call entry point                                                    */
/* ------------------------------------------------------------------------ */

/* The component `name` of a named list, or R_NilValue when there is none. */
static SEXP list_get_opt(SEXP list, const char *name)
{
    SEXP names = Rf_getAttrib(list, R_NamesSymbol);
    if (TYPEOF(names) != STRSXP || XLENGTH(names) != XLENGTH(list))
        Rf_error("bnmf internal error: a named list is expected (looking for '%s')", name);
    for (R_xlen_t t = 0; t < XLENGTH(list); t++)
        if (strcmp(CHAR(STRING_ELT(names, t)), name) == 0)
            return VECTOR_ELT(list, t);
    return R_NilValue;
}

SEXP bnmf_list_get(SEXP list, const char *name)
{
    SEXP v = list_get_opt(list, name);
    if (v == R_NilValue)
        Rf_error("bnmf internal error: component '%s' is missing", name);
    return v;
}

double *bnmf_real_elt(SEXP list, const char *name, R_xlen_t len)
{
    SEXP v = bnmf_list_get(list, name);
    if (TYPEOF(v) != REALSXP || (len >= 0 && XLENGTH(v) != len))
        Rf_error("bnmf internal error: '%s' must be a double vector of length %lld",
                 name, (long long) len);
    return REAL(v);
}

const int *bnmf_int_elt(SEXP list, const char *name, R_xlen_t len)
{
    SEXP v = bnmf_list_get(list, name);
    if (TYPEOF(v) != INTSXP || (len >= 0 && XLENGTH(v) != len))
        Rf_error("bnmf internal error: '%s' must be an integer vector of length %lld",
                 name, (long long) len);
    return INTEGER(v);
}

/* Welford update of a running mean and sum of squared deviations. */
static inline void welford(double *mean, double *m2, double v, double n)
{
    const double delta = v - *mean;
    *mean += delta / n;
    *m2 += delta * (v - *mean);
}

/* Accumulate the running moments of WH on the entries the fit keeps. */
static void accumulate_wh(const nmf_data *d, const double *W, const double *H,
                          double *mean, double *m2, double n)
{
    const int I = d->I, J = d->J, K = d->K;
    if (d->sparse) {
        for (int j = 0; j < J; j++)
            for (int p = d->xp[j]; p < d->xp[j + 1]; p++)
                welford(mean + p, m2 + p,
                        bnmf_wh_entry(W, H, I, K, d->xi[p], j), n);
        return;
    }
    const int nb = J < 64 ? J : 64;
    double *S = (double *) R_alloc((size_t) I * nb, sizeof(double));
    const double one = 1.0, zero = 0.0;
    for (int j0 = 0; j0 < J; j0 += nb) {
        int m = J - j0 < nb ? J - j0 : nb;
        F77_CALL(dgemm)("N", "N", &I, &m, &K, &one, W, &I, H + (size_t) j0 * K,
                        &K, &zero, S, &I FCONE FCONE);
        double *mu = mean + (size_t) j0 * I, *s2 = m2 + (size_t) j0 * I;
        for (size_t t = 0; t < (size_t) I * m; t++) welford(mu + t, s2 + t, S[t], n);
    }
}

/* The control vector of a .Call: n finite doubles, the first (n_sweeps) in
 * [0, 2^31). */
const double *bnmf_read_ctrl(SEXP ctrl, int n)
{
    if (TYPEOF(ctrl) != REALSXP || XLENGTH(ctrl) != n)
        Rf_error("bnmf internal error: ctrl must be a double vector of length %d", n);
    const double *c = REAL(ctrl);
    for (int t = 0; t < n; t++)
        if (!R_FINITE(c[t]))
            Rf_error("bnmf internal error: ctrl[%d] is not finite", t + 1);
    if (c[0] < 0 || c[0] > INT_MAX)
        Rf_error("bnmf internal error: need 0 <= n_sweeps < 2^31");
    return c;
}

/* A state's factors: finite and non-negative. */
void bnmf_check_factors(const double *W, const double *H, int I, int J, int K)
{
    for (R_xlen_t t = 0; t < (R_xlen_t) I * K; t++)
        if (!(W[t] >= 0.0) || !R_FINITE(W[t]))
            Rf_error("bnmf internal error: W must be finite and non-negative");
    for (R_xlen_t t = 0; t < (R_xlen_t) K * J; t++)
        if (!(H[t] >= 0.0) || !R_FINITE(H[t]))
            Rf_error("bnmf internal error: H must be finite and non-negative");
}

/* Read and check the data description made by prepare_data() in R. */
void bnmf_read_data(SEXP data, int K_needed, nmf_data *d)
{
    if (TYPEOF(data) != VECSXP)
        Rf_error("bnmf internal error: data must be a list");
    const int *dims = bnmf_int_elt(data, "dims", 3);
    d->I = dims[0]; d->J = dims[1]; d->K = dims[2];
    if (d->I < 1 || d->J < 1 || (K_needed && d->K < 1))
        Rf_error("bnmf internal error: dimensions must be positive");
    const int I = d->I, J = d->J;
    d->sparse = *bnmf_int_elt(data, "sparse", 1) != 0;
    R_xlen_t nx = (R_xlen_t) I * J;
    if (d->sparse) {
        d->xp = bnmf_int_elt(data, "xp", (R_xlen_t) J + 1);
        nx = d->xp[J];
        if (d->xp[0] != 0 || nx < 0)
            Rf_error("bnmf internal error: bad column pointers");
        d->xi = bnmf_int_elt(data, "xi", nx);
        for (int j = 0; j < J; j++)
            if (d->xp[j + 1] < d->xp[j])
                Rf_error("bnmf internal error: bad column pointers");
        for (R_xlen_t p = 0; p < nx; p++)
            if (d->xi[p] < 0 || d->xi[p] >= I)
                Rf_error("bnmf internal error: row index out of range");
    } else {
        d->xi = d->xp = NULL;
    }
    d->nx = nx;
    R_xlen_t nmiss = XLENGTH(bnmf_list_get(data, "miss_pos"));
    if (nmiss > nx || nmiss > INT_MAX)
        Rf_error("bnmf internal error: too many missing entries");
    d->nmiss = (int) nmiss;
    d->miss_pos = bnmf_int_elt(data, "miss_pos", d->nmiss);
    d->miss_i = bnmf_int_elt(data, "miss_i", d->nmiss);
    d->miss_j = bnmf_int_elt(data, "miss_j", d->nmiss);
    d->mcol_ptr = bnmf_int_elt(data, "mcol_ptr", (R_xlen_t) J + 1);
    d->mrow_ptr = bnmf_int_elt(data, "mrow_ptr", (R_xlen_t) I + 1);
    d->mrow_j = bnmf_int_elt(data, "mrow_j", d->nmiss);
    for (int m = 0; m < d->nmiss; m++)
        if (d->miss_pos[m] < 0 || d->miss_pos[m] >= nx || d->miss_i[m] < 0 ||
            d->miss_i[m] >= I || d->miss_j[m] < 0 || d->miss_j[m] >= J ||
            d->mrow_j[m] < 0 || d->mrow_j[m] >= J)
            Rf_error("bnmf internal error: missing-entry index out of range");
    if (d->mcol_ptr[0] != 0 || d->mcol_ptr[J] != d->nmiss || d->mrow_ptr[0] != 0 ||
        d->mrow_ptr[I] != d->nmiss)
        Rf_error("bnmf internal error: bad missing-entry pointers");
    for (int j = 0; j < J; j++)
        if (d->mcol_ptr[j + 1] < d->mcol_ptr[j])
            Rf_error("bnmf internal error: bad missing-entry pointers");
    for (int i = 0; i < I; i++)
        if (d->mrow_ptr[i + 1] < d->mrow_ptr[i])
            Rf_error("bnmf internal error: bad missing-entry pointers");
    d->sumsq_obs = *bnmf_real_elt(data, "sumsq_obs", 1);
    d->n_obs = *bnmf_real_elt(data, "n_obs", 1);
}

/* sum_i W_ik + sum_j H_kj: what the ARD rate of factor k sees. */
static double factor_mass(const nmf_data *d, const double *W, const double *H, int k)
{
    const int I = d->I, J = d->J, K = d->K;
    double s = 0.0;
    for (int i = 0; i < I; i++) s += W[i + (size_t) k * I];
    for (int j = 0; j < J; j++) s += H[k + (size_t) j * K];
    return s;
}

/* The ARD part of the log joint density, given lambda:
 *   sum_k log Gamma(lambda_k; alpha0, beta0) + (I + J) log lambda_k
 *         - lambda_k (sum_i W_ik + sum_j H_kj). */
static double ard_log_prior(const nmf_data *d, const nmf_prior *pr,
                            const double *lambda, const double *W, const double *H)
{
    const int I = d->I, J = d->J, K = d->K;
    double s = 0.0;
    for (int k = 0; k < K; k++) {
        const double sw = factor_mass(d, W, H, k);
        const double l = lambda[k];
        s += dgamma(l, pr->alpha0, 1.0 / pr->beta0, 1) + (I + J) * log(l) - l * sw;
    }
    return s;
}

/* lambda_k | W, H ~ Gamma(alpha0 + I + J, beta0 + sum_i W_ik + sum_j H_kj):
 * draw it (Gibbs), take its mode (ICM), or set q(lambda_k) to it with
 * expectations in place of W and H (VB: lambda holds E[lambda_k], rate_out
 * the Gamma rate). Then refresh the entry-wise rates. */
static void update_ard(const nmf_data *d, nmf_prior *pr, nmf_rule rule,
                       double *lambda, double *rate_out, const double *W,
                       const double *H)
{
    const int I = d->I, J = d->J, K = d->K;
    const double shape = pr->alpha0 + I + J;
    for (int k = 0; k < K; k++) {
        const double rate = pr->beta0 + factor_mass(d, W, H, k);
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
}

static void fill_ard_rates(const nmf_data *d, nmf_prior *pr, const double *lambda)
{
    const int I = d->I, J = d->J, K = d->K;
    for (int k = 0; k < K; k++)
        for (int i = 0; i < I; i++) pr->lamW[i + (size_t) k * I] = lambda[k];
    for (int j = 0; j < J; j++)
        for (int k = 0; k < K; k++) pr->lamH[k + (size_t) j * K] = lambda[k];
}

/* Entropy of Gamma(shape, rate). */
static double gamma_entropy(double shape, double rate)
{
    return shape - log(rate) + lgammafn(shape) + (1.0 - shape) * digamma(shape);
}

static double sum_vec(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s += v[t];
    return s;
}

/*
 * The evidence lower bound of VB after a sweep, in closed form:
 * E_q[log p(X, W, H, tau, lambda)] + entropies of q. `esse` is the expected
 * SSE, tau_shape / tau_rate the parameters of q(tau).
 */
static double vb_elbo(const nmf_data *d, const nmf_prior *pr, const double *W,
                      const double *H, const vb_part *vb, double esse,
                      double tau_shape, double tau_rate, const double *lambda,
                      const double *lambda_rate, double *loglik_out)
{
    const int I = d->I, J = d->J, K = d->K;
    const double etau = tau_shape / tau_rate;
    const double elogtau = digamma(tau_shape) - log(tau_rate);
    const double loglik = 0.5 * d->n_obs * (elogtau - log(2.0 * M_PI)) - 0.5 * etau * esse;
    double e = loglik;
    /* the noise prior and q(tau) */
    e += pr->alpha * log(pr->beta) - lgammafn(pr->alpha) + (pr->alpha - 1.0) * elogtau -
        pr->beta * etau + gamma_entropy(tau_shape, tau_rate);
    /* the factors' prior */
    if (pr->ard) {
        const double shape = pr->alpha0 + I + J;
        for (int k = 0; k < K; k++) {
            const double sw = factor_mass(d, W, H, k);
            const double el = lambda[k], elog = digamma(shape) - log(lambda_rate[k]);
            e += (I + J) * elog - el * sw;
            e += pr->alpha0 * log(pr->beta0) - lgammafn(pr->alpha0) +
                (pr->alpha0 - 1.0) * elog - pr->beta0 * el +
                gamma_entropy(shape, lambda_rate[k]);
        }
    } else {
        e += sum_log_rates(pr->lamW, (size_t) I * K) + sum_log_rates(pr->lamH, (size_t) K * J) +
            exp_log_kernel(W, pr->lamW, (size_t) I * K) +
            exp_log_kernel(H, pr->lamH, (size_t) K * J);
    }
    e += sum_vec(vb->Went, (size_t) I * K) + sum_vec(vb->Hent, (size_t) K * J);
    *loglik_out = loglik;
    return e;
}

/* Read and check the prior list (see bnmf_nmf_sweeps_call). With ARD (and
 * use_ard) the entry-wise rates are scratch copies that the sweeps refresh
 * from lambda. */
static void read_prior(SEXP prior, int use_ard, const nmf_data *d, nmf_prior *pr)
{
    const int I = d->I, J = d->J, K = d->K;
    pr->lamW = bnmf_real_elt(prior, "lamW", (R_xlen_t) I * K);
    pr->lamH = bnmf_real_elt(prior, "lamH", (R_xlen_t) K * J);
    pr->alpha = *bnmf_real_elt(prior, "alpha", 1);
    pr->beta = *bnmf_real_elt(prior, "beta", 1);
    if (!(pr->alpha > 0.0) || !(pr->beta > 0.0) || !R_FINITE(pr->alpha) || !R_FINITE(pr->beta))
        Rf_error("bnmf internal error: the noise prior needs shape > 0 and rate > 0");
    SEXP ard = list_get_opt(prior, "ard");
    pr->ard = 0;
    pr->alpha0 = pr->beta0 = 0.0;
    if (ard != R_NilValue &&
        (TYPEOF(ard) != REALSXP || (XLENGTH(ard) != 0 && XLENGTH(ard) != 2)))
        Rf_error("bnmf internal error: prior$ard must be numeric(0) or c(alpha0, beta0)");
    if (ard != R_NilValue && XLENGTH(ard) == 2 && use_ard) {
        pr->ard = 1;
        pr->alpha0 = REAL(ard)[0];
        pr->beta0 = REAL(ard)[1];
        if (!(pr->alpha0 > 0.0) || !(pr->beta0 > 0.0) || !R_FINITE(pr->alpha0) ||
            !R_FINITE(pr->beta0))
            Rf_error("bnmf internal error: ARD needs alpha0 > 0 and beta0 > 0");
        /* The rates are refreshed from lambda: work on copies. */
        double *lw = (double *) R_alloc((size_t) I * K, sizeof(double));
        double *lh = (double *) R_alloc((size_t) K * J, sizeof(double));
        pr->lamW = lw;
        pr->lamH = lh;
    }
    if (!pr->ard) {
        for (R_xlen_t t = 0; t < (R_xlen_t) I * K; t++)
            if (!(pr->lamW[t] >= 0.0) || !R_FINITE(pr->lamW[t]))
                Rf_error("bnmf internal error: rates must be finite and >= 0");
        for (R_xlen_t t = 0; t < (R_xlen_t) K * J; t++)
            if (!(pr->lamH[t] >= 0.0) || !R_FINITE(pr->lamH[t]))
                Rf_error("bnmf internal error: rates must be finite and >= 0");
    }
}

/* The scratch space of a sweep, from R_alloc. */
static void alloc_work(const nmf_data *d, sweep_work *ws)
{
    const int I = d->I, J = d->J, K = d->K;
    ws->D = (double *) R_alloc((size_t) I * K, sizeof(double));
    ws->F = (double *) R_alloc((size_t) K * J, sizeof(double));
    ws->G = (double *) R_alloc((size_t) K * K, sizeof(double));
    ws->Gi = (double *) R_alloc((size_t) K * K, sizeof(double));
    ws->zrow = (double *) R_alloc(K, sizeof(double));
    ws->brow = (double *) R_alloc(K, sizeof(double));
    ws->vrow = (double *) R_alloc(K, sizeof(double));
    ws->erow = (double *) R_alloc(K, sizeof(double));
    ws->Wt = (double *) R_alloc((size_t) K * I, sizeof(double));
    ws->Ht = (double *) R_alloc((size_t) J * K, sizeof(double));
    ws->obs = (int *) R_alloc(I > J ? I : J, sizeof(int));
}

/*
 * Advance a fit's state by ctrl[0] sweeps, in place.
 *
 * state: list(W, H, tau, x, sumsq, logpost, n_kept, and the running moments
 *        W_mean, W_m2, H_mean, H_m2, tau_mean, tau_m2, WH_mean, WH_m2;
 *        with ARD also lambda (K) and, when accumulating, lambda_mean,
 *        lambda_m2; for VB also W_var, H_var, W_ent, H_ent, tau_rate and with
 *        ARD lambda_rate: then W, H, tau, lambda hold the means of q);
 * data:  list(dims = c(I, J, K), sparse, xi, xp, miss_pos, miss_i, miss_j,
 *        mcol_ptr, mrow_ptr, mrow_j, sumsq_obs, n_obs);
 * prior: list(lamW, lamH, alpha, beta, and optionally ard = c(alpha0, beta0));
 * ctrl:  c(n_sweeps, rule, masked, accumulate, thin, keep_draws, update_W,
 *        update_H, update_tau, tol), rule 0 Gibbs, 1 ICM, 2 VB, 3 Lee-Seung
 *        (Euclidean; no prior, tau fixed).
 * Returns list(trace = n x 4 matrix (loglik, tau, logpost, sse), W_draws,
 * H_draws, lambda = n x K matrix of the ARD rates (0 columns without ARD),
 * converged = TRUE when the tol criterion stopped the sweeps).
 * For VB, loglik is E_q[log p(X | W, H, tau)], logpost the ELBO and sse the
 * expected SSE. ICM, VB and Lee-Seung stop early when the relative change of
 * logpost is at most tol.
 */
SEXP bnmf_nmf_sweeps_call(SEXP state, SEXP data, SEXP prior, SEXP ctrl)
{
    if (TYPEOF(state) != VECSXP || TYPEOF(data) != VECSXP ||
        TYPEOF(prior) != VECSXP)
        Rf_error("bnmf internal error: state, data and prior must be lists");
    const double *c = bnmf_read_ctrl(ctrl, 10);
    if (c[4] < 1 || c[4] > INT_MAX)
        Rf_error("bnmf internal error: need 0 <= n_sweeps and 1 <= thin, both below 2^31");
    if (c[1] != 0 && c[1] != 1 && c[1] != 2 && c[1] != 3)
        Rf_error("bnmf internal error: unknown update rule %g", c[1]);
    const int n_sweeps = (int) c[0], thin = (int) c[4];
    const nmf_rule rule = (nmf_rule) (int) c[1];
    const int masked = c[2] != 0, keep_draws = c[5] != 0;
    const int accumulate = c[3] != 0 && rule == RULE_DRAW;
    const int upd_W = c[6] != 0, upd_H = c[7] != 0;
    const int upd_tau = c[8] != 0 && rule != RULE_MULT;
    const double tol = c[9];
    nmf_data d;
    bnmf_read_data(data, 1, &d);
    if (rule != RULE_DRAW && d.nmiss > 0 && !masked)
        Rf_error("bnmf internal error: ICM, VB and Lee-Seung need masked missing entries");
    const int I = d.I, J = d.J, K = d.K;
    const R_xlen_t nx = d.nx;

    nmf_prior pr;
    read_prior(prior, rule != RULE_MULT, &d, &pr);

    /* state */
    double *W = bnmf_real_elt(state, "W", (R_xlen_t) I * K);
    double *H = bnmf_real_elt(state, "H", (R_xlen_t) K * J);
    double *tau = bnmf_real_elt(state, "tau", 1);
    double *x = bnmf_real_elt(state, "x", nx);
    double *sumsq = bnmf_real_elt(state, "sumsq", 1);
    double *logpost_last = bnmf_real_elt(state, "logpost", 1);
    double *n_kept = bnmf_real_elt(state, "n_kept", 1);
    if (!(*tau > 0.0) || !R_FINITE(*tau))
        Rf_error("bnmf internal error: tau must be positive and finite");
    bnmf_check_factors(W, H, I, J, K);
    double *lambda = NULL, *lambda_rate = NULL, *lambda_mean = NULL, *lambda_m2 = NULL;
    if (pr.ard) {
        lambda = bnmf_real_elt(state, "lambda", K);
        for (int k = 0; k < K; k++)
            if (!(lambda[k] > 0.0) || !R_FINITE(lambda[k]))
                Rf_error("bnmf internal error: lambda must be positive and finite");
        fill_ard_rates(&d, &pr, lambda);
    }
    double *W_mean = NULL, *W_m2 = NULL, *H_mean = NULL, *H_m2 = NULL;
    double *tau_mean = NULL, *tau_m2 = NULL, *WH_mean = NULL, *WH_m2 = NULL;
    if (accumulate) {
        W_mean = bnmf_real_elt(state, "W_mean", (R_xlen_t) I * K);
        W_m2 = bnmf_real_elt(state, "W_m2", (R_xlen_t) I * K);
        H_mean = bnmf_real_elt(state, "H_mean", (R_xlen_t) K * J);
        H_m2 = bnmf_real_elt(state, "H_m2", (R_xlen_t) K * J);
        tau_mean = bnmf_real_elt(state, "tau_mean", 1);
        tau_m2 = bnmf_real_elt(state, "tau_m2", 1);
        R_xlen_t nwh = XLENGTH(bnmf_list_get(state, "WH_mean"));
        if (nwh > 0) {
            WH_mean = bnmf_real_elt(state, "WH_mean", nx);
            WH_m2 = bnmf_real_elt(state, "WH_m2", nx);
        }
        if (pr.ard) {
            lambda_mean = bnmf_real_elt(state, "lambda_mean", K);
            lambda_m2 = bnmf_real_elt(state, "lambda_m2", K);
        }
    }
    vb_part vbs, *vb = NULL;
    double *tau_rate = NULL;
    if (rule == RULE_MOMENT) {
        vbs.Wvar = bnmf_real_elt(state, "W_var", (R_xlen_t) I * K);
        vbs.Hvar = bnmf_real_elt(state, "H_var", (R_xlen_t) K * J);
        vbs.Went = bnmf_real_elt(state, "W_ent", (R_xlen_t) I * K);
        vbs.Hent = bnmf_real_elt(state, "H_ent", (R_xlen_t) K * J);
        tau_rate = bnmf_real_elt(state, "tau_rate", 1);
        if (pr.ard) lambda_rate = bnmf_real_elt(state, "lambda_rate", K);
        vb = &vbs;
    }
    const int augmented = d.nmiss > 0 && !masked;
    if (rule == RULE_DRAW || rule == RULE_MOMENT) {
        for (R_xlen_t t = 0; t < (R_xlen_t) I * K; t++)
            if (!(pr.lamW[t] > 0.0))
                Rf_error("bnmf internal error: Gibbs and VB need rates > 0");
        for (R_xlen_t t = 0; t < (R_xlen_t) K * J; t++)
            if (!(pr.lamH[t] > 0.0))
                Rf_error("bnmf internal error: Gibbs and VB need rates > 0");
    }

    const int n_draws = keep_draws ? n_sweeps / thin : 0;
    if (keep_draws && ((double) I * K > INT_MAX || (double) K * J > INT_MAX))
        Rf_error("the factors are too large to keep their draws; use keep = \"summary\"");
    int nprotect = 0;
    SEXP trace = PROTECT(Rf_allocMatrix(REALSXP, n_sweeps, 4)); nprotect++;
    SEXP Wd = PROTECT(Rf_allocMatrix(REALSXP, keep_draws ? I * K : 0, n_draws)); nprotect++;
    SEXP Hd = PROTECT(Rf_allocMatrix(REALSXP, keep_draws ? K * J : 0, n_draws)); nprotect++;
    SEXP lam_tr = PROTECT(Rf_allocMatrix(REALSXP, n_sweeps, pr.ard ? K : 0)); nprotect++;
    double *tr = REAL(trace);

    sweep_work ws;
    alloc_work(&d, &ws);
    double *wh_miss = augmented ? (double *) R_alloc(d.nmiss, sizeof(double)) : NULL;
    const double log2pi = log(2.0 * M_PI);
    const double lgamma_alpha = lgammafn(pr.alpha);
    const double log_rates = pr.ard ? 0.0 : sum_log_rates(pr.lamW, (size_t) I * K) +
        sum_log_rates(pr.lamH, (size_t) K * J);
    const double tau_shape = pr.alpha + 0.5 * d.n_obs;

    GetRNGstate();
    int s, kept = 0, converged = 0;
    for (s = 0; s < n_sweeps; s++) {
        if (upd_W)
            update_W(&d, &pr, x, W, H, *tau, rule, masked, 0, &ws, vb, NULL);
        double lin, quad;
        update_H(&d, &pr, x, W, H, *tau, rule, masked, upd_H, 0, &ws, vb, NULL, &lin,
                 &quad);
        if (upd_W && upd_H) {
            if (rule == RULE_MODE)
                balance_scales(&d, &pr, W, H);
            else if (rule == RULE_DRAW)
                scale_move(&d, &pr, W, H, 0);
        }
        double sse = *sumsq - 2.0 * lin + quad;
        if (augmented) {
            /* SSE over the observed entries: remove the latent ones. */
            for (int m = 0; m < d.nmiss; m++) {
                wh_miss[m] = bnmf_wh_entry(W, H, I, K, d.miss_i[m], d.miss_j[m]);
                const double r = x[d.miss_pos[m]] - wh_miss[m];
                sse -= r * r;
            }
        }
        if (sse < 0.0) sse = 0.0; /* rounding of the trace identity */
        if (upd_tau) {
            const double rate = pr.beta + 0.5 * sse;
            if (rule == RULE_DRAW)
                *tau = rgamma(tau_shape, 1.0 / rate);
            else if (rule == RULE_MODE)
                *tau = tau_shape > 1.0 ? (tau_shape - 1.0) / rate : 0.0;
            else {
                *tau = tau_shape / rate;
                *tau_rate = rate;
            }
            if (!(*tau > 0.0) || !R_FINITE(*tau)) {
                PutRNGstate();
                Rf_error("the noise precision tau became %g (shape %g, rate %g): "
                         "the data may be constant or the noise prior degenerate",
                         *tau, tau_shape, rate);
            }
        }
        if (pr.ard && upd_W && upd_H) {
            update_ard(&d, &pr, rule, lambda, lambda_rate, W, H);
            fill_ard_rates(&d, &pr, lambda);
        }
        if (augmented) {
            const double sd = 1.0 / sqrt(*tau);
            double ss = d.sumsq_obs;
            for (int m = 0; m < d.nmiss; m++) {
                const double v = wh_miss[m] + sd * norm_rand();
                x[d.miss_pos[m]] = v;
                ss += v * v;
            }
            *sumsq = ss;
        }
        double loglik, logpost;
        if (rule == RULE_MOMENT) {
            logpost = vb_elbo(&d, &pr, W, H, vb, sse, tau_shape, *tau_rate, lambda,
                              lambda_rate, &loglik);
        } else if (rule == RULE_MULT) {
            loglik = -sse; /* minus the Euclidean loss */
            logpost = loglik;
        } else {
            loglik = 0.5 * d.n_obs * (log(*tau) - log2pi) - 0.5 * *tau * sse;
            logpost = loglik + pr.alpha * log(pr.beta) - lgamma_alpha +
                (pr.alpha - 1.0) * log(*tau) - pr.beta * *tau;
            if (pr.ard)
                logpost += ard_log_prior(&d, &pr, lambda, W, H);
            else
                logpost += log_rates + exp_log_kernel(W, pr.lamW, (size_t) I * K) +
                    exp_log_kernel(H, pr.lamH, (size_t) K * J);
        }
        tr[s] = loglik;
        tr[s + n_sweeps] = *tau;
        tr[s + 2 * (R_xlen_t) n_sweeps] = logpost;
        tr[s + 3 * (R_xlen_t) n_sweeps] = sse;
        if (pr.ard)
            for (int k = 0; k < K; k++) REAL(lam_tr)[s + (R_xlen_t) k * n_sweeps] = lambda[k];

        if ((s + 1) % thin == 0) {
            if (accumulate) {
                const double n = ++(*n_kept);
                for (R_xlen_t t = 0; t < (R_xlen_t) I * K; t++)
                    welford(W_mean + t, W_m2 + t, W[t], n);
                for (R_xlen_t t = 0; t < (R_xlen_t) K * J; t++)
                    welford(H_mean + t, H_m2 + t, H[t], n);
                welford(tau_mean, tau_m2, *tau, n);
                if (pr.ard)
                    for (int k = 0; k < K; k++)
                        welford(lambda_mean + k, lambda_m2 + k, lambda[k], n);
                if (WH_mean) accumulate_wh(&d, W, H, WH_mean, WH_m2, n);
            }
            if (keep_draws && kept < n_draws) {
                memcpy(REAL(Wd) + (size_t) kept * I * K, W, sizeof(double) * I * K);
                memcpy(REAL(Hd) + (size_t) kept * K * J, H, sizeof(double) * K * J);
                kept++;
            }
        }
        const double prev = *logpost_last;
        *logpost_last = logpost;
        if (rule != RULE_DRAW && tol > 0.0 && R_FINITE(prev) &&
            fabs(logpost - prev) <= tol * fabs(logpost)) {
            s++;
            converged = 1;
            break;
        }
        PutRNGstate();
        R_CheckUserInterrupt();
        GetRNGstate();
    }
    PutRNGstate();

    /* Trim the traces if the iteration converged early. */
    if (s < n_sweeps) {
        SEXP tr2 = PROTECT(Rf_allocMatrix(REALSXP, s, 4)); nprotect++;
        for (int col = 0; col < 4; col++)
            memcpy(REAL(tr2) + (size_t) col * s, tr + (size_t) col * n_sweeps,
                   sizeof(double) * s);
        trace = tr2;
        SEXP lt2 = PROTECT(Rf_allocMatrix(REALSXP, s, pr.ard ? K : 0)); nprotect++;
        for (int col = 0; col < (pr.ard ? K : 0); col++)
            memcpy(REAL(lt2) + (size_t) col * s, REAL(lam_tr) + (size_t) col * n_sweeps,
                   sizeof(double) * s);
        lam_tr = lt2;
    }
    const char *names[] = {"trace", "W_draws", "H_draws", "lambda", "converged"};
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 5)); nprotect++;
    SET_VECTOR_ELT(out, 0, trace);
    SET_VECTOR_ELT(out, 1, Wd);
    SET_VECTOR_ELT(out, 2, Hd);
    SET_VECTOR_ELT(out, 3, lam_tr);
    SET_VECTOR_ELT(out, 4, Rf_ScalarLogical(converged));
    SEXP nms = PROTECT(Rf_allocVector(STRSXP, 5)); nprotect++;
    for (int t = 0; t < 5; t++) {
        SET_STRING_ELT(nms, t, Rf_mkChar(names[t]));
    }
    Rf_setAttrib(out, R_NamesSymbol, nms);
    UNPROTECT(nprotect);
    return out;
}

/*
 * One run of Chib's (1995) estimator of log p(X) (R/chib.R): the Gibbs
 * sampler of the posterior with some blocks held at a point theta*
 * (W*, H*, tau*, lambda*), returning, once per draw, the full conditional
 * log density of the next block at theta*. The chain rule goes
 *   p(theta* | X) = prod_b p(W*[, b] | W*[, <b], X)          block 0
 *                 x p(tau*, lambda* | W*, X)                 block 2
 *                 x prod_b p(H*[b, ] | H*[<b, ], W*, tau*, lambda*, X)  block 1
 * block 0, index b: W[, <b] fixed; W[, b..K], H, tau, lambda free. Target
 *   W[, b]; the sweep is restricted to the free coordinates and keeps the
 *   scale move for the factors whose W column and H row are both free.
 * block 2: W fixed; H, tau, lambda free. Target (tau, lambda), whose
 *   conditional given W and H is a product of Gamma densities.
 * block 1, index b: W, tau, lambda and H[<b, ] fixed. Given them the
 *   columns of H are independent Markov chains (each column's update reads
 *   only itself), so p(H*[b, ] | ...) is the product over j of
 *   p(H*[b, j] | ...), each of which is estimated by its own average; the
 *   routine returns the per-column log densities (n_samples x J; the other
 *   blocks give an n_samples x 1 matrix), and the
 *   product of the averages has a far smaller variance than the average of
 *   the products.
 * Missing entries are masked (x must hold 0 there).
 *
 * Labels. The posterior is invariant under permuting the factors when their
 * priors are exchangeable, and a chain rarely visits all K! relabellings.
 * Chib's average E[p(W[, b] = W*[, b] | rest)] over the reduced posterior
 * equals the average of its symmetrisation over the permutations of the free
 * labels b..K, which the chain only needs to sample up to labelling. For a
 * column of W that symmetrisation is the mean over k in b..K of the density
 * of W*[, b] as column k of the draw (given the draw's other factors and the
 * rate of label k), so with sym = 1 block 0 returns log mean_k exp(acc_k).
 * Once W is fixed the labels are no longer exchangeable.
 *
 * state:  list(W, H, tau, x, sumsq[, lambda]) at the start (theta* with the
 *         free blocks anywhere), modified in place;
 * data, prior: as for bnmf_nmf_sweeps_call;
 * target: list(W = W*, H = H*, tau = tau*[, lambda = lambda*]);
 * ctrl:   c(n_burnin, n_samples, block, index (0-based), sym, orbit); with
 *         orbit, block 0 averages each draw's density over the scale of the
 *         factor (chib_orbit).
 */
SEXP bnmf_chib_run_call(SEXP state, SEXP data, SEXP prior, SEXP target, SEXP ctrl)
{
    if (TYPEOF(state) != VECSXP || TYPEOF(data) != VECSXP ||
        TYPEOF(prior) != VECSXP || TYPEOF(target) != VECSXP)
        Rf_error("bnmf internal error: state, data, prior and target must be lists");
    const double *c = bnmf_read_ctrl(ctrl, 6);
    if (c[1] < 1 || c[1] > INT_MAX || c[0] + c[1] > INT_MAX)
        Rf_error("bnmf internal error: need n_samples >= 1 and n_burnin + n_samples < 2^31");
    nmf_data d;
    bnmf_read_data(data, 1, &d);
    const int I = d.I, J = d.J, K = d.K;
    const int n_burn = (int) c[0], n_samp = (int) c[1];
    const int block = (int) c[2], index = (int) c[3], sym = c[4] != 0;
    const int orbit = c[5] != 0;
    if ((block != 0 && block != 1 && block != 2) || c[2] != block || c[3] != index ||
        index < 0 || index >= K)
        Rf_error("bnmf internal error: bad block %g or index %g", c[2], c[3]);
    if (block == 1 && (double) n_samp * J > R_XLEN_T_MAX)
        Rf_error("bnmf internal error: too many samples");
    nmf_prior pr;
    read_prior(prior, 1, &d, &pr);
    for (R_xlen_t t = 0; !pr.ard && t < (R_xlen_t) I * K; t++)
        if (!(pr.lamW[t] > 0.0))
            Rf_error("bnmf internal error: Chib's method needs rates > 0");
    for (R_xlen_t t = 0; !pr.ard && t < (R_xlen_t) K * J; t++)
        if (!(pr.lamH[t] > 0.0))
            Rf_error("bnmf internal error: Chib's method needs rates > 0");
    double *W = bnmf_real_elt(state, "W", (R_xlen_t) I * K);
    double *H = bnmf_real_elt(state, "H", (R_xlen_t) K * J);
    double *tau = bnmf_real_elt(state, "tau", 1);
    const double *x = bnmf_real_elt(state, "x", d.nx);
    const double sumsq = *bnmf_real_elt(state, "sumsq", 1);
    const double *Wstar = bnmf_real_elt(target, "W", (R_xlen_t) I * K);
    const double *Hstar = bnmf_real_elt(target, "H", (R_xlen_t) K * J);
    const double tau_star = *bnmf_real_elt(target, "tau", 1);
    if (!(*tau > 0.0) || !R_FINITE(*tau) || !(tau_star > 0.0) || !R_FINITE(tau_star))
        Rf_error("bnmf internal error: tau must be positive and finite");
    bnmf_check_factors(W, H, I, J, K);
    bnmf_check_factors(Wstar, Hstar, I, J, K);
    for (int m = 0; m < d.nmiss; m++)
        if (x[d.miss_pos[m]] != 0.0)
            Rf_error("bnmf internal error: missing entries must be masked (zero) here");
    double *lambda = NULL;
    const double *lambda_star = NULL;
    if (pr.ard) {
        lambda = bnmf_real_elt(state, "lambda", K);
        lambda_star = bnmf_real_elt(target, "lambda", K);
        for (int k = 0; k < K; k++)
            if (!(lambda[k] > 0.0) || !R_FINITE(lambda[k]) || !(lambda_star[k] > 0.0) ||
                !R_FINITE(lambda_star[k]))
                Rf_error("bnmf internal error: lambda must be positive and finite");
        fill_ard_rates(&d, &pr, lambda);
    }
    sweep_work ws;
    alloc_work(&d, &ws);
    chib_hook hk;
    hk.acc = (double *) R_alloc(K, sizeof(double));
    hk.a = hk.e = hk.dd = hk.each = NULL;
    hk.target = NULL;
    hk.tstride = 0;
    hk.wblock = block == 0;
    hk.last = index + 1;
    double *scaleA = NULL, *scaleB = NULL, *ldd = NULL;
    if (block == 0) {
        hk.target = Wstar + (size_t) index * I;
        hk.tstride = 1;
        hk.last = sym ? K : index + 1;
        hk.a = (double *) R_alloc((size_t) I * K, sizeof(double));
        hk.e = (double *) R_alloc((size_t) I * K, sizeof(double));
        hk.dd = (double *) R_alloc((size_t) I * K, sizeof(double));
        scaleA = (double *) R_alloc(K, sizeof(double));
        scaleB = (double *) R_alloc(K, sizeof(double));
        ldd = (double *) R_alloc(I, sizeof(double));
    } else if (block == 1) {
        hk.target = Hstar + index;
        hk.tstride = (size_t) K;
    }
    /* n_samples x J per-column densities (block 1), else n_samples x 1 */
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, n_samp, block == 1 ? J : 1));
    double *po = REAL(out);
    double *each = block == 1 ? (double *) R_alloc(J, sizeof(double)) : NULL;
    hk.each = each;
    const double tau_shape = pr.alpha + 0.5 * d.n_obs;
    const double lam_shape = pr.alpha0 + I + J;
    /* block 1 holds tau and lambda at theta* */
    if (block == 1) {
        *tau = tau_star;
        if (pr.ard) {
            for (int k = 0; k < K; k++) lambda[k] = lambda_star[k];
            fill_ard_rates(&d, &pr, lambda);
        }
    }

    GetRNGstate();
    for (int s = 0; s < n_burn + n_samp; s++) {
        const int eval = s >= n_burn;
        const R_xlen_t row = s - n_burn;
        for (int k = 0; k < K; k++) hk.acc[k] = 0.0;
        double lin, quad;
        if (block == 0) {
            if (eval)
                for (int k = index; k < hk.last; k++)
                    scale_sums(&d, &pr, W, H, k, scaleA + k, scaleB + k);
            update_W(&d, &pr, x, W, H, *tau, RULE_DRAW, 1, index, &ws, NULL,
                     eval ? &hk : NULL);
            if (eval) {
                for (int k = index; k < hk.last; k++) {
                    const size_t o = (size_t) k * I;
                    hk.acc[k] += orbit ?
                        chib_orbit(hk.target, hk.a + o, hk.e + o, hk.dd + o, I,
                                   scaleA[k], scaleB[k], (double) I - J, ldd) :
                        chib_orbit(hk.target, hk.a + o, hk.e + o, hk.dd + o, I,
                                   0.0, 0.0, 0.0, ldd);
                }
            }
            update_H(&d, &pr, x, W, H, *tau, RULE_DRAW, 1, 1, 0, &ws, NULL, NULL,
                     &lin, &quad);
            scale_move(&d, &pr, W, H, index);
        } else {
            update_H(&d, &pr, x, W, H, *tau, RULE_DRAW, 1, 1, block == 1 ? index : 0,
                     &ws, NULL, block == 1 && eval ? &hk : NULL, &lin, &quad);
        }
        double sse = sumsq - 2.0 * lin + quad;
        if (sse < 0.0) sse = 0.0;
        if (block == 2 && eval) {
            /* p(tau*, lambda* | W*, H): Gamma densities */
            double v = dgamma(tau_star, tau_shape, 1.0 / (pr.beta + 0.5 * sse), 1);
            if (pr.ard)
                for (int k = 0; k < K; k++)
                    v += dgamma(lambda_star[k], lam_shape,
                                1.0 / (pr.beta0 + factor_mass(&d, W, H, k)), 1);
            po[row] = v;
        }
        if (block != 1) {
            *tau = rgamma(tau_shape, 1.0 / (pr.beta + 0.5 * sse));
            if (!(*tau > 0.0) || !R_FINITE(*tau)) {
                PutRNGstate();
                Rf_error("the noise precision tau became %g in Chib's reduced run", *tau);
            }
            if (pr.ard) {
                update_ard(&d, &pr, RULE_DRAW, lambda, NULL, W, H);
                fill_ard_rates(&d, &pr, lambda);
            }
        }
        if (eval && block == 0) {
            /* log of the mean of exp(acc_k) over the labels evaluated */
            double mx = R_NegInf;
            for (int k = index; k < hk.last; k++) if (hk.acc[k] > mx) mx = hk.acc[k];
            double se = 0.0;
            if (R_FINITE(mx))
                for (int k = index; k < hk.last; k++) se += exp(hk.acc[k] - mx);
            po[row] = R_FINITE(mx) ? mx + log(se / (hk.last - index)) : mx;
        } else if (eval && block == 1) {
            for (int j = 0; j < J; j++) po[row + (R_xlen_t) j * n_samp] = each[j];
        }
        if ((s & 63) == 63) {
            PutRNGstate();
            R_CheckUserInterrupt();
            GetRNGstate();
        }
    }
    PutRNGstate();
    UNPROTECT(1);
    return out;
}
