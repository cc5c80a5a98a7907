/*
 * nmtf_s.c -- the entries of S in the tri-factorisation X ~ F S G' (see
 * nmtf_sweep.c for the model and the sums): their conditionals with the
 * missing entries' terms, entry by entry or from the matrix of those terms,
 * and the (expected) SSE.
 */
#include "bnmf_call.h"
#include "nmtf.h"

/* The largest K L for which update_S may form the K L x K L matrix of the
 * missing entries' terms (s_missing_matrix) */
#define S_MATRIX_MAX 400

/*
 * Whether update_S takes the missing entries' terms of S's conditionals from
 * that matrix, formed once per update from per-row sums (about I (K + 1)^2
 * (L + 1)^2 multiply-adds in dgemm, plus nmiss L^2 / 2), rather than entry
 * by entry for each of the K L coordinates (s_entry_sums and s_moved: about
 * 2 nmiss K L gathered terms, each several loads): where the first is the
 * smaller by the rule below (and its matrix is at most S_MATRIX_MAX^2
 * doubles). The two give the same sums in another order.
 */
int nmtf_s_by_matrix(const nmf_data *d, int K, int L)
{
    const double kl = (double) K * L;
    return d->nmiss > 0 && kl <= S_MATRIX_MAX &&
        (double) d->I * (K + 1) * (L + 1) <= 16.0 * (double) d->nmiss;
}


/* The fitted values at the missing entries, r_m = F_i S G_j', and for VB
 * u_m = S G_j' (K values) and v_m = F_i S (L values). */
void nmtf_miss_products(const nmf_data *d, const nmtf_state *st, nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L, nm = d->nmiss;
    const double *G = st->G;
    nmtf_mat_mult("N", "N", I, L, K, st->F, I, st->S, K, w->W);            /* F S */
    for (int m = 0; m < nm; m++) {
        const int i = d->miss_i[m], j = d->miss_j[m];
        double r = 0.0;
        for (int l = 0; l < L; l++) r += w->W[i + (size_t) l * I] * G[j + (size_t) l * J];
        w->r[m] = r;
    }
    if (!w->u) return;
    for (int l = 0; l < L; l++)
        for (int m = 0; m < nm; m++) w->v[(size_t) l * nm + m] = w->W[d->miss_i[m] + (size_t) l * I];
    nmtf_mat_mult("N", "T", K, J, L, st->S, K, G, J, w->Hm);               /* S G' */
    for (int k = 0; k < K; k++)
        for (int m = 0; m < nm; m++) w->u[(size_t) k * nm + m] = w->Hm[k + (size_t) d->miss_j[m] * K];
}

/*
 * Entry (k, l) of S: P_kl = sum_Omega E[F_ik^2] E[G_jl^2] in *prec and the
 * cross sum sum_Omega sum_{k'l'} E[F_ik F_ik'] E[G_jl G_jl'] S_k'l' as
 * returned (the full sums less the missing entries' terms).
 */
static double s_entry_sums(const nmf_data *d, const nmtf_state *st, int vb,
                           const nmtf_work *w, int k, int l, double *prec)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    const size_t kl = k + (size_t) l * K;
    double p = w->A[k + (size_t) k * K] * w->B[l + (size_t) l * L], cross = w->T[kl];
    const double s = st->S[kl];
    for (int m = 0; m < d->nmiss; m++) {
        const size_t ik = d->miss_i[m] + (size_t) k * I, jl = d->miss_j[m] + (size_t) l * J;
        const double f = st->F[ik], g = st->G[jl];
        if (!vb) {
            p -= f * f * g * g;
            cross -= f * g * w->r[m];
            continue;
        }
        const double vf = st->F_var[ik], vg = st->G_var[jl];
        p -= (f * f + vf) * (g * g + vg);
        cross -= f * g * w->r[m] + vf * g * w->u[(size_t) k * d->nmiss + m] +
            f * vg * w->v[(size_t) l * d->nmiss + m] + vf * vg * s;
    }
    *prec = p > 0.0 ? p : 0.0;
    return cross;
}

/*
 * The missing entries' terms of S's conditionals as a linear map of S, for
 * update_S (s_by_matrix): s_entry_sums's cross sum is T_kl - (Cs vec S)_kl
 * and its precision A_kk B_ll - Pm_kl. With, for row i and its missing
 * columns j, Gam_i = sum_j E[g_j] E[g_j]' (L x L) and gam_i = sum_j Var g_j
 * (VB),
 *   Cs[(k, l), (k', l')] = sum_i f_ik f_ik' Gam_i[l, l']
 *                          + [k = k'] sum_i Var f_ik Gam_i[l, l']
 *                          + [l = l'] sum_i f_ik f_ik' gam_il
 *                          + [k = k', l = l'] sum_i Var f_ik gam_il,
 * (the terms f g r, VF g u, f VG v and VF VG S of s_entry_sums, summed over
 * the missing entries of each row first), the first four blocks of one
 * product Y' Z over the rows with missing entries, Y's row i (f_ik f_ik',
 * Var f_ik) and Z's (Gam_i, gam_i), NMTF_BLOCK rows at a time; Pm_kl =
 * sum_i E[f_ik^2] (Gam_i[l, l] + gam_il). Index (k, l) is k + l K.
 */
static void s_missing_matrix(const nmf_data *d, const nmtf_state *st, int vb,
                             nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L, KL = K * L;
    const int K2 = K * K + (vb ? K : 0), L2 = L * L + (vb ? L : 0);
    const double *F = st->F, *VF = vb ? st->F_var : NULL;
    const double one = 1.0;
    bnmf_transpose(st->G, J, L, w->Gt);
    if (vb) bnmf_transpose(st->G_var, J, L, w->Vt);                 /* L x J */
    memset(w->Cq, 0, sizeof(double) * (size_t) K2 * L2);
    memset(w->Pm, 0, sizeof(double) * (size_t) KL);
    for (int i = 0; i < I;) {
        int nr = 0;
        for (; i < I && nr < NMTF_BLOCK; i++) {
            const int n = d->mrow_ptr[i + 1] - d->mrow_ptr[i];
            if (n == 0) continue;
            const int *idx = d->mrow_j + d->mrow_ptr[i];
            memset(w->Gam, 0, sizeof(double) * (size_t) L * L);
            bnmf_gram_update(w->Gam, NULL, w->Gt, L, idx, n, L, 1.0);
            bnmf_symmetrise(w->Gam, L);
            if (vb) bnmf_idx_sums(w->gam, w->Vt, idx, n, L);
            for (int t = 0; t < L * L; t++) w->Zb[nr + (size_t) t * NMTF_BLOCK] = w->Gam[t];
            for (int k2 = 0; k2 < K; k2++)
                for (int k = 0; k < K; k++)
                    w->Yb[nr + (size_t) (k + k2 * K) * NMTF_BLOCK] =
                        F[i + (size_t) k * I] * F[i + (size_t) k2 * I];
            if (vb) {
                for (int l = 0; l < L; l++)
                    w->Zb[nr + (size_t) (L * L + l) * NMTF_BLOCK] = w->gam[l];
                for (int k = 0; k < K; k++)
                    w->Yb[nr + (size_t) (K * K + k) * NMTF_BLOCK] = VF[i + (size_t) k * I];
            }
            for (int l = 0; l < L; l++) {
                const double b = w->Gam[l + (size_t) l * L] + (vb ? w->gam[l] : 0.0);
                for (int k = 0; k < K; k++) {
                    const double f = F[i + (size_t) k * I];
                    const double a = f * f + (vb ? VF[i + (size_t) k * I] : 0.0);
                    w->Pm[k + (size_t) l * K] += a * b;
                }
            }
            nr++;
        }
        if (nr == 0) break;
        const int ld = NMTF_BLOCK;
        F77_CALL(dgemm)("T", "N", &K2, &L2, &nr, &one, w->Yb, &ld, w->Zb, &ld, &one, w->Cq,
                        &K2 FCONE FCONE);
    }
    for (int l2 = 0; l2 < L; l2++)
        for (int k2 = 0; k2 < K; k2++) {
            double *col = w->Cs + (size_t) (k2 + l2 * K) * KL;
            for (int l = 0; l < L; l++)
                for (int k = 0; k < K; k++)
                    col[k + l * K] = w->Cq[(k + k2 * K) + (size_t) (l + l2 * L) * K2];
        }
    if (!vb) return;
    for (int l2 = 0; l2 < L; l2++)
        for (int l = 0; l < L; l++)
            for (int k = 0; k < K; k++)
                w->Cs[(k + l * K) + (size_t) (k + l2 * K) * KL] +=
                    w->Cq[(K * K + k) + (size_t) (l + l2 * L) * K2];
    for (int l = 0; l < L; l++)
        for (int k2 = 0; k2 < K; k2++)
            for (int k = 0; k < K; k++)
                w->Cs[(k + l * K) + (size_t) (k2 + l * K) * KL] +=
                    w->Cq[(k + k2 * K) + (size_t) (L * L + l) * K2];
    for (int l = 0; l < L; l++)
        for (int k = 0; k < K; k++)
            w->Cs[(k + l * K) + (size_t) (k + l * K) * KL] +=
                w->Cq[(K * K + k) + (size_t) (L * L + l) * K2];
}

/* S_kl moved by dS: keep A S B up to date, and r, u, v (entries = 1) or
 * mc = Cs vec S (entries = 0, s_missing_matrix). */
static void s_moved(const nmf_data *d, const nmtf_state *st, nmtf_work *w, int k, int l,
                    double dS, int entries)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    for (int l2 = 0; l2 < L; l2++) {
        const double bl = dS * w->B[l + (size_t) l2 * L];
        double *Tc = w->T + (size_t) l2 * K;
        const double *Ak = w->A + (size_t) k * K;
        for (int k2 = 0; k2 < K; k2++) Tc[k2] += Ak[k2] * bl;
    }
    if (!entries) {
        /* Cs is symmetric: its column (k, l) is its row */
        const size_t KL = (size_t) K * L;
        bnmf_axpy4(w->mc, dS, w->Cs + (k + (size_t) l * K) * KL, (int) KL);
        return;
    }
    for (int m = 0; m < d->nmiss; m++) {
        const double f = st->F[d->miss_i[m] + (size_t) k * I];
        const double g = st->G[d->miss_j[m] + (size_t) l * J];
        w->r[m] += dS * f * g;
        if (w->u) {
            w->u[(size_t) k * d->nmiss + m] += dS * g;
            w->v[(size_t) l * d->nmiss + m] += dS * f;
        }
    }
}

/* Every entry of S given F, G, tau (after nmtf_g_side()). */
void nmtf_update_S(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb,
                     double lamS, nmtf_work *w)
{
    const int K = st->K, L = st->L;
    const size_t KL = (size_t) K * L;
    double *S = st->S;
    const int bym = nmtf_s_by_matrix(d, K, L);
    if (bym) {
        s_missing_matrix(d, st, vb, w);
        for (size_t t = 0; t < KL; t++) w->mc[t] = 0.0;
        for (size_t t = 0; t < KL; t++)
            if (S[t] != 0.0) bnmf_axpy4(w->mc, S[t], w->Cs + t * KL, (int) KL);
    } else if (d->nmiss) {
        nmtf_miss_products(d, st, w);
    }
    if (rule == RULE_MULT) {
        /* all of S at once: S_kl <- S_kl (F'XG)_kl / (sum_Omega F_ik G_jl (FSG')_ij) */
        for (int l = 0; l < L; l++)
            for (int k = 0; k < K; k++) {
                const size_t kl = k + (size_t) l * K;
                double prec;
                w->tmp2[kl] = bym ? w->T[kl] - w->mc[kl]
                                  : s_entry_sums(d, st, 0, w, k, l, &prec);
            }
        for (size_t t = 0; t < (size_t) K * L; t++)
            if (w->tmp2[t] > 0.0) S[t] *= (w->Bd[t] > 0.0 ? w->Bd[t] : 0.0) / w->tmp2[t];
        return;
    }
    for (int l = 0; l < L; l++) {
        for (int k = 0; k < K; k++) {
            const size_t kl = k + (size_t) l * K;
            double prec, v = 0.0, ent = 0.0, cross;
            if (bym) {
                const double p =
                    w->A[k + (size_t) k * K] * w->B[l + (size_t) l * L] - w->Pm[kl];
                prec = p > 0.0 ? p : 0.0;
                cross = w->T[kl] - w->mc[kl];
            } else {
                cross = s_entry_sums(d, st, vb, w, k, l, &prec);
            }
            const double s = w->Bd[kl] - cross + prec * S[kl];
            const double snew = bnmf_cond_step(rule, s, prec, lamS, *st->tau, S[kl], &v,
                                               &ent);
            const double dS = snew - S[kl];
            S[kl] = snew;
            if (vb) {
                /* the cross terms of the other entries use the new mean and,
                 * through VF VG S~_kl, nothing else: the variance enters only
                 * the diagonal, which s_entry_sums() reads afresh. */
                st->S_var[kl] = v;
                st->S_ent[kl] = ent;
            }
            if (dS != 0.0) s_moved(d, st, w, k, l, dS, !bym);
        }
    }
}

/*
 * The missing entries' terms of the (expected) SSE of nmtf_sse, row by row:
 * with w_i = F_i S and row i's missing columns j,
 *   sum_j (w_i' g_j)^2,
 * and for VB (u_j = S g_j', M1 = VF (S o S), M2 = (F o F + VF) VS, I x L,
 * given) the expectation's other terms
 *   sum_k VF_ik sum_j u_kj^2 + sum_l (w_il^2 + M1_il) sum_j VG_jl
 *     + sum_l M2_il sum_j E[G_jl^2],
 * the sums over j of the K + 2 L values per column of w->Tb in one pass
 * (bnmf_idx_sums). Nothing per missing entry is stored.
 */
static double sse_missing(const nmf_data *d, const nmtf_state *st, int vb, nmtf_work *w,
                          const double *M1, const double *M2)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L, T = K + 2 * L;
    const double *F = st->F, *S = st->S;
    bnmf_transpose(st->G, J, L, w->Gt);                             /* L x J */
    if (vb) {
        nmtf_mat_mult("N", "T", K, J, L, S, K, st->G, J, w->Hm);           /* S G' */
        for (int j = 0; j < J; j++) {
            double *tb = w->Tb + (size_t) j * T;
            const double *u = w->Hm + (size_t) j * K;
            for (int k = 0; k < K; k++) tb[k] = u[k] * u[k];
            for (int l = 0; l < L; l++) {
                const size_t jl = j + (size_t) l * J;
                const double g = st->G[jl], vg = st->G_var[jl];
                tb[K + l] = vg;
                tb[K + L + l] = g * g + vg;
            }
        }
    }
    double *wi = w->zrow, *fi = w->brow;
    double tot = 0.0;
    for (int i = 0; i < I; i++) {
        const int n = d->mrow_ptr[i + 1] - d->mrow_ptr[i];
        if (n == 0) continue;
        const int *idx = d->mrow_j + d->mrow_ptr[i];
        for (int k = 0; k < K; k++) fi[k] = F[i + (size_t) k * I];
        for (int l = 0; l < L; l++) wi[l] = bnmf_dot4(fi, S + (size_t) l * K, K);
        double t = 0.0;
        for (int q = 0; q < n; q++) {
            const double r = bnmf_dot4(wi, w->Gt + (size_t) idx[q] * L, L);
            t += r * r;
        }
        if (vb) {
            bnmf_idx_sums(w->ts, w->Tb, idx, n, T);
            for (int k = 0; k < K; k++) t += st->F_var[i + (size_t) k * I] * w->ts[k];
            for (int l = 0; l < L; l++) {
                const size_t il = i + (size_t) l * I;
                t += (wi[l] * wi[l] + M1[il]) * w->ts[K + l] + M2[il] * w->ts[K + L + l];
            }
        }
        tot += t;
    }
    return tot;
}

/*
 * The (expected) SSE over the observed entries (after nmtf_g_side(); refreshes T):
 *   sum X^2 - 2 <F'XG, S> + <S, A S B> + sum_kl A_kk B_ll VS_kl
 *   - the missing entries' terms (sse_missing).
 */
double nmtf_sse(const nmf_data *d, const nmtf_state *st, int vb, nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    const double *S = st->S;
    nmtf_mat_mult("N", "N", K, L, K, w->A, K, S, K, w->tmp);
    nmtf_mat_mult("N", "N", K, L, L, w->tmp, K, w->B, L, w->T);
    double sse = *st->sumsq;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < K; k++) {
            const size_t kl = k + (size_t) l * K;
            sse += S[kl] * (w->T[kl] - 2.0 * w->Bd[kl]);
            if (vb) sse += w->A[k + (size_t) k * K] * w->B[l + (size_t) l * L] * st->S_var[kl];
        }
    if (!d->nmiss) return sse;
    if (!vb) return sse - sse_missing(d, st, 0, w, NULL, NULL);
    /* VB: the missing entries' expected terms (sse_missing), two of them
     * through the I x L products M1 = VF (S o S) and M2 = (F o F + VF) VS */
    double *S2 = w->tmp2, *M1 = w->W, *M2 = w->Q, *F2 = w->D;
    for (size_t t = 0; t < (size_t) K * L; t++) S2[t] = S[t] * S[t];
    for (size_t t = 0; t < (size_t) I * K; t++) F2[t] = st->F[t] * st->F[t] + st->F_var[t];
    nmtf_mat_mult("N", "N", I, L, K, st->F_var, I, S2, K, M1);
    nmtf_mat_mult("N", "N", I, L, K, F2, I, st->S_var, K, M2);
    return sse - sse_missing(d, st, 1, w, M1, M2);
}
