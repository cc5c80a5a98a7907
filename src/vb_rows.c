/*
 * vb_rows.c -- VB with the missing entries filled in (fill_sums in
 * nmf_sweep.c): a pass over a block of rows that share the off-diagonal part
 * of the expected Gram matrix but each have their own diagonal
 * (bnmf_vb_rows_diag), with its kernel for four rows as four-value vectors
 * (and its AVX2 clone, BNMF_CLONES in bnmf.h).
 */
#include "cond_kern.h"

#if defined(__GNUC__)
/* bnmf_vb_rows_diag on four rows with K <= ZT_MAX: the rows interleaved,
 * zt[4 l + r] and ut[4 l + r], so that their sums run as the lanes of
 * four-value vectors (one AVX2 register each in the AVX2 clone), and so do
 * the means' divisions and tn_pos_vb's a = -mu / sd; the sds are computed
 * before the pass, off the chain from one coordinate to the next. The
 * target has no FMA, so each lane computes the scalar code's products,
 * sums and quotients in its order: the same bits. (Strided, each of the
 * four rows' 2 K loads a coordinate took two instructions.) */
BNMF_CLONES static void vb_rows_diag4(double *z, const double *G, const double *b,
                                      const double *dg, const double *a,
                                      const double *const *lam, int ls, double tau, int K,
                                      double *v, double *ent)
{
    double zt[4 * ZT_MAX], ut[4 * ZT_MAX], sdt[4 * ZT_MAX];
    for (int l = 0; l < K; l++)
        for (int r = 0; r < 4; r++) {
            zt[4 * l + r] = z[(size_t) r * K + l];
            ut[4 * l + r] = 0.0;
            sdt[4 * l + r] = block_sd(RULE_MOMENT, dg[(size_t) r * K + l], tau);
        }
    const size_t K1 = K, K2 = 2 * (size_t) K, K3 = 3 * (size_t) K;
    const bnmf_v4 tv = {tau, tau, tau, tau};
    for (int k = 0; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        const size_t kl = (size_t) k * ls;
        bnmf_v4 s = {b[k], b[K1 + k], b[K2 + k], b[K3 + k]};
        bnmf_v4 c = {0.0, 0.0, 0.0, 0.0};
        for (int l = 0; l < K; l++) {
            const bnmf_v4 g = {gk[l], gk[l], gk[l], gk[l]};
            s -= g * *(const bnmf_v4 *) (zt + 4 * l);
            c += g * *(const bnmf_v4 *) (ut + 4 * l);
        }
        /* cond_step's mean and tn_pos_vb's a for the four rows at once
         * (lanes with dg = 0 unused) */
        const bnmf_v4 z0 = *(const bnmf_v4 *) (zt + 4 * k);
        const bnmf_v4 gkk = {gk[k], gk[k], gk[k], gk[k]};
        const bnmf_v4 av = {a[k], a[K1 + k], a[K2 + k], a[K3 + k]};
        const bnmf_v4 dv = {dg[k], dg[K1 + k], dg[K2 + k], dg[K3 + k]};
        const bnmf_v4 lv = {lam[0][kl], lam[1][kl], lam[2][kl], lam[3][kl]};
        const bnmf_v4 num = s + gkk * z0 + av * c;
        const bnmf_v4 mu = (num - lv / tv) / dv;
        const bnmf_v4 sd = *(const bnmf_v4 *) (sdt + 4 * k);
        const bnmf_v4 am = -mu / sd;
        for (int r = 0; r < 4; r++) {
            const size_t rk = (size_t) r * K + k;
            double zn;
            if (dv[r] > 0.0) tn_pos_vb_a(mu[r], sd[r], am[r], NULL, &zn, v + rk, ent + rk);
            else zn = cond_step(RULE_MOMENT, num[r], dv[r], lv[r], tau, z0[r], v + rk, ent + rk);
            zt[4 * k + r] = zn;
            ut[4 * k + r] = av[r] * (zn - z0[r]);
        }
    }
    for (int r = 0; r < 4; r++)
        for (int l = 0; l < K; l++) z[(size_t) r * K + l] = zt[4 * l + r];
}
#endif

/**
 * One VB pass over nr rows (1 <= nr <= COND_BLOCK) that share the
 * off-diagonal part of G but each have their own diagonal: row r's
 * coordinate k has precision tau dg[r K + k] and mean
 *   (b_rk - sum_{l != k} G[k,l] z_rl + a_rk sum_{l != k} G[k,l] u_rl
 *    - lam_rk / tau) / dg[r K + k],
 * where u_rl = a_rl (z_rl - z_rl at the start of the pass) (u: nr K
 * values of scratch). For VB with the missing entries filled in (see
 * fill_sums in nmf_sweep.c), where G is the expected Gram matrix of all
 * entries, dg its part over each row's observed ones, and a_r G a_r an
 * approximation of the missing entries' part, whose terms correct the
 * filled data's for the coordinates that moved in this pass (they vanish
 * at a fixed point). Arguments otherwise as
 * bnmf_cond_rows; the rows' coordinate k is computed together, so that
 * their chains overlap.
 */
void bnmf_vb_rows_diag(double *z, const double *G, const double *b, const double *dg,
                       const double *a, double *u, const double *const *lam, int ls,
                       double tau, int K, int nr, double *v, double *ent)
{
#if defined(__GNUC__)
    if (nr == 4 && K <= ZT_MAX) {
        vb_rows_diag4(z, G, b, dg, a, lam, ls, tau, K, v, ent);
        return;
    }
#endif
    for (int t = 0; t < nr * K; t++) u[t] = 0.0;
    for (int k = 0; k < K; k++) {
        const double *gk = G + (size_t) k * K;
        double s[COND_BLOCK], c[COND_BLOCK];
        for (int r = 0; r < nr; r++) {
            s[r] = b[(size_t) r * K + k];
            c[r] = 0.0;
        }
        for (int l = 0; l < K; l++) {
            const double g = gk[l];
            for (int r = 0; r < nr; r++) {
                s[r] -= g * z[(size_t) r * K + l];
                c[r] += g * u[(size_t) r * K + l];
            }
        }
        for (int r = 0; r < nr; r++) {
            const size_t rk = (size_t) r * K + k;
            const double z0 = z[rk];
            z[rk] = cond_step(RULE_MOMENT, s[r] + gk[k] * z0 + a[rk] * c[r], dg[rk],
                              lam[r][(size_t) k * ls], tau, z0, v + rk, ent + rk);
            u[rk] = a[rk] * (z[rk] - z0);
        }
    }
}
