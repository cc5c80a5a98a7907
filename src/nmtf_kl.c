/*
 * nmtf_kl.c -- the I-divergence updates of the tri-factorisation X ~ F S G'
 * (Yoo & Choi 2009; nmtf_control(loss = "kl")), on the observed entries.
 */
#include "bnmf_call.h"
#include "nmtf.h"


/* Z = X / (F S G') at the stored entries (0 where X is 0, so at the masked
 * missing entries too); returns the loss sum_Omega X log(X / Y) - X + Y,
 * or (loss_too = 0: for the updates, which need only Z) 0 without the log
 * per entry. */
static double kl_ratio(const nmf_data *d, const nmtf_state *st, nmtf_work *w,
                       int loss_too)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    nmtf_mat_mult("N", "N", I, L, K, st->F, I, st->S, K, w->W);
    double loss = 0.0;
    if (d->sparse) {
        /* (F S)' and G' by rows, their rows in blocks */
        bnmf_transpose(w->W, I, L, w->Wt);
        bnmf_transpose(st->G, J, L, w->Gt);
        loss = bnmf_sparse_kl_ratio(d, st->x, w->Wt, w->Gt, L, w->obs, w->Z, loss_too);
    } else {
        /* the dense ratio is formed in place, block by block */
        const double one = 1.0, zero = 0.0;
        for (int j0 = 0; j0 < J; j0 += NMTF_BLOCK) {
            int nb = J - j0 < NMTF_BLOCK ? J - j0 : NMTF_BLOCK;
            double *blk = w->Z + (size_t) j0 * I;
            F77_CALL(dgemm)("N", "T", &I, &nb, &L, &one, w->W, &I, st->G + j0, &J, &zero,
                            blk, &I FCONE FCONE);
            const double *xb = st->x + (size_t) j0 * I;
            bnmf_kl_ratio(blk, blk, xb, (size_t) I * nb);
            if (loss_too) loss += bnmf_kl_loss(xb, blk, (size_t) I * nb);
        }
    }
    if (!loss_too) return 0.0;
    /* sum_Omega Y = (1' F) S (G' 1) less the missing entries */
    double tot = 0.0;
    for (int l = 0; l < L; l++) {
        double gs = 0.0, fs = 0.0;
        for (int j = 0; j < J; j++) gs += st->G[j + (size_t) l * J];
        for (int k = 0; k < K; k++) {
            double f = 0.0;
            for (int i = 0; i < I; i++) f += st->F[i + (size_t) k * I];
            fs += f * st->S[k + (size_t) l * K];
        }
        tot += fs * gs;
    }
    if (d->nmiss) {
        nmtf_miss_products(d, st, w);
        for (int m = 0; m < d->nmiss; m++) tot -= w->r[m];
    }
    return loss + tot;
}

/* z <- z * num / den entry-wise (den <= 0: unchanged). */
static void mult_step(double *z, const double *num, const double *den, size_t n)
{
    for (size_t t = 0; t < n; t++)
        if (den[t] > 0.0) z[t] *= num[t] / den[t];
}

/* One sweep of the I-divergence updates, F then G then S; each is Lee &
 * Seung's update of a non-negative linear model in that block, so the loss
 * never increases:
 *   F_ik <- F_ik (Z G S')_ik / sum_{j in Omega_i} (S G')_kj,
 *   G_jl <- G_jl (Z' F S)_jl / sum_{i in Omega_j} (F S)_il,
 *   S_kl <- S_kl (F' Z G)_kl / sum_Omega F_ik G_jl,   Z = X / (F S G').
 * Returns the loss after the sweep. */
double nmtf_kl_sweep(const nmf_data *d, nmtf_state *st, const nmtf_ctrl *c,
                       nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    double *F = st->F, *S = st->S, *G = st->G;
    double *den = w->den;
    if (c->update_F) {
        kl_ratio(d, st, w, 0);
        if (w->dL.sparse) bnmf_transpose(G, J, L, w->Gt); /* bnmf_x_g reads it */
        bnmf_x_g(&w->dL, w->Z, G, w->Gt, w->Q, w->obs);
        nmtf_mat_mult("N", "T", I, K, L, w->Q, I, S, K, w->D);
        /* sum_j (S G')_kj over each row's observed j: over all j (rs), less
         * the row's missing ones, read from P = S G' (K x J) */
        double *rs = w->tmp, *vs = w->tmp2;
        for (int k = 0; k < K; k++) {
            double hs = 0.0;
            for (int l = 0; l < L; l++) {
                double gs = 0.0;
                for (int j = 0; j < J; j++) gs += G[j + (size_t) l * J];
                hs += S[k + (size_t) l * K] * gs;
            }
            rs[k] = hs;
        }
        if (d->nmiss) nmtf_mat_mult("N", "T", K, J, L, S, K, G, J, w->P);
        bnmf_kl_scale(F, w->D, I, 1, (size_t) I, w->P, J, d->mrow_ptr, d->mrow_j, K, rs, vs);
    }
    if (c->update_G) {
        kl_ratio(d, st, w, 0);  /* also w->W = F S */
        bnmf_wt_x(&w->dL, w->Z, w->W, w->E, w->Wt, w->obs);           /* E = (F S)' Z, L x J */
        /* sum_i (F S)_il over each column's observed i, read from (F S)' */
        double *rs = w->tmp, *vs = w->tmp2;
        for (int l = 0; l < L; l++) {
            double ws = 0.0;
            for (int i = 0; i < I; i++) ws += w->W[i + (size_t) l * I];
            rs[l] = ws;
        }
        if (d->nmiss) bnmf_transpose(w->W, I, L, w->Wt);           /* L x I */
        bnmf_transpose(w->E, L, J, w->Ht);                          /* J x L */
        bnmf_kl_scale(G, w->Ht, J, 1, (size_t) J, w->Wt, I, d->mcol_ptr, d->miss_i, L, rs,
                      vs);
    }
    if (c->update_S) {
        kl_ratio(d, st, w, 0);
        bnmf_wt_x(&w->dK, w->Z, F, w->P, w->Ft, w->obs);
        nmtf_mat_mult("N", "N", K, L, J, w->P, K, G, J, w->Bd);     /* F' Z G */
        if (!d->nmiss) {
            for (int l = 0; l < L; l++) {
                double gs = 0.0;
                for (int j = 0; j < J; j++) gs += G[j + (size_t) l * J];
                for (int k = 0; k < K; k++) {
                    double fs = 0.0;
                    for (int i = 0; i < I; i++) fs += F[i + (size_t) k * I];
                    den[k + (size_t) l * K] = fs * gs;
                }
            }
        } else {
            /* sum over the observed (i, j) of F_ik G_jl = F' Q, Q's row i the
             * sums of G's rows over row i's observed j (bnmf_obs_sums): no
             * difference of the totals, which would cancel where most
             * entries are missing */
            double *gs = w->tmp, *vs = w->tmp2;
            for (int l = 0; l < L; l++) {
                double t = 0.0;
                for (int j = 0; j < J; j++) t += G[j + (size_t) l * J];
                gs[l] = t;
            }
            bnmf_transpose(G, J, L, w->Gt);                         /* L x J */
            for (int i = 0; i < I; i++) {
                bnmf_obs_sums(vs, w->Gt, J, d->mrow_j + d->mrow_ptr[i],
                              d->mrow_ptr[i + 1] - d->mrow_ptr[i], L, gs);
                for (int l = 0; l < L; l++) w->Q[i + (size_t) l * I] = vs[l];
            }
            nmtf_mat_mult("T", "N", K, L, I, F, I, w->Q, I, den);
        }
        mult_step(S, w->Bd, den, (size_t) K * L);
    }
    return kl_ratio(d, st, w, 1);
}
