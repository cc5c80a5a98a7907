/*
 * nmtf_sweep.c -- Gaussian non-negative matrix tri-factorisation
 * X ~ F S G' (Brouwer & Lio 2017; Brouwer, Frellsen & Lio 2017): Gibbs
 * sampling, ICM, variational Bayes (VB) and multiplicative updates (NP),
 * one driver for the four rules (nmtf_run.c), the rule applied in
 * cond_row.c. This file: the scratch and the rows of F and G; nmtf_s.c: the
 * entries of S and the SSE; nmtf_kl.c: the I-divergence updates.
 *
 * Model, for the observed entries (i, j) in Omega (F: I x K, S: K x L,
 * G: J x L):
 *   X_ij ~ N(F_i. S G_j.', 1/tau),  F_ik ~ Exp(lF_k),  S_kl ~ Exp(lS),
 *   G_jl ~ Exp(lG_l),  tau ~ Gamma(alpha, beta);
 *   ARD: lF_k ~ Gamma(alpha0, beta0), lG_l ~ Gamma(alpha0, beta0)
 *   (without ARD lF_k = rate_F, lG_l = rate_G).
 *
 * Rows of F. With H := S G' (K x J, column h_j = S G_j.'), X_ij = F_i. h_j
 * + noise, so row i of F has the NMF conditional of a row of W given H:
 *   p(f | .) propto exp(-tau/2 f' C_i f + tau f' b_i - lF' f),  f >= 0,
 *   C_i = sum_{j in Omega_i} h_j h_j' = S (sum_{j in Omega_i} G_j' G_j) S',
 *   b_i = sum_{j in Omega_i} X_ij h_j = row i of (X G) S'
 * (X holds zeros at the missing entries). bnmf_cond_row() applies the rule.
 * Rows of G likewise with W := F S (I x L): C_j = S' (sum_{i in Omega_j}
 * F_i' F_i) S, b_j = column j of S' (F' X).
 *
 * Entries of S. X_ij is linear in S_kl with coefficient a_ij = F_ik G_jl:
 *   S_kl | . ~ N+(mu, 1/p),  p = tau P_kl,  P_kl = sum_Omega F_ik^2 G_jl^2,
 *   mu = (sum_Omega F_ik G_jl (X_ij - (F S G')_ij) + P_kl S_kl - lS / tau) / P_kl.
 * The sums need no residual. With A = F'F (K x K) and B = G'G (L x L),
 *   sum_ij F_ik G_jl X_ij        = (F' X G)_kl,
 *   sum_ij F_ik G_jl (F S G')_ij = (A S B)_kl,   sum_ij F_ik^2 G_jl^2 = A_kk B_ll,
 * over all entries; the missing entries m = (i, j) are subtracted, with the
 * fitted values r_m = (F S G')_ij kept up to date. When S_kl moves by d,
 * A S B moves by d A[, k] B[l, ] (O(K L)) and r_m by d F_ik G_jl (O(1)). So
 * an S sweep costs O(K^2 L^2 + |missing| K L) on top of F' X G, which is
 * (F' X) G with F' X the product the G half sweep has just formed: the
 * sweep's only O(I J) work is X G (for F) and F' X (for G and S), i.e.
 * O(I J (K + L)) in two BLAS products, and O(K L (I + J) + K^2 L^2) besides.
 *
 * Gibbs draws every conditional, ICM takes its mode max(mu, 0) (no floor:
 * the log posterior never decreases and a fixed point is a KKT point of the
 * MAP problem), NP takes the multiplicative step of the Euclidean loss
 * (z_k <- z_k b_k / (C z)_k for the rows of F and G, S_kl <- S_kl
 * (F'XG)_kl / (sum_Omega F_ik G_jl (FSG')_ij) for all of S at once; each is
 * Lee & Seung's step for a non-negative least-squares problem, so the loss
 * never increases), or for loss = "kl" the I-divergence updates of Yoo &
 * Choi (2009) on the observed entries (kl_sweep below).
 *
 * VB. q is a product of truncated normals (F, S, G), Gammas (tau, rates).
 * With means F~, S~, G~ and variances VF, VS, VG, the expected square
 * error of an entry is (all sums over k, k' in 1..K, l, l' in 1..L)
 *   E(X_ij - F_i S G_j')^2 = X_ij^2 - 2 X_ij F~_i S~ G~_j'
 *     + sum E[F_ik F_ik'] E[S_kl S_k'l'] E[G_jl G_jl'],
 * E[F_ik F_ik'] = F~_ik F~_ik' + [k = k'] VF_ik (and so on), which is
 *   (X_ij - F~_i S~ G~_j')^2                                   (mean residual)
 *   + sum_kl Var(F_ik S_kl G_jl)                              (each triple)
 *   + sum_l VG_jl sum_{k != k'} F~_ik S~_kl F~_ik' S~_k'l     (pairs sharing G_jl)
 *   + sum_k VF_ik sum_{l != l'} S~_kl G~_jl S~_kl' G~_jl'     (pairs sharing F_ik)
 * (pairs (k, l), (k', l) share G_jl and have covariance F~ S~ F~' S~' VG;
 * pairs (k, l), (k, l') share F_ik and have covariance VF S~ G~ S~' G~':
 * the paper's section 3.4 writes these two the other way round). Summed over
 * Omega it is, with A = E[F'F] = F~'F~ + diag(sum_i VF_ik) and B = E[G'G]
 * (bnmf_expected_gram()),
 *   ESSE = sum X^2 - 2 <F~' X G~, S~> + <S~, A S~ B> + sum_kl A_kk B_ll VS_kl
 *          - (the same terms of the missing entries, see miss_esse()),
 * and the coordinate updates are the rules above with expectations: row i of
 * F sees C_i = S~ B_i S~' + diag(sum_l VS_kl B_i[l, l]) with B_i the
 * expected Gram matrix of G over Omega_i (E[h_j h_j'] = h~_j h~_j' +
 * S~ diag(VG_j) S~' + diag(sum_l VS_kl E[G_jl^2])) and b_i from the means;
 * S_kl sees P_kl = sum_Omega E[F_ik^2] E[G_jl^2] and the cross sum
 * sum_Omega sum_{k'l'} E[F_ik F_ik'] E[G_jl G_jl'] S~_k'l' = (A S~ B)_kl minus
 * its missing terms, F~_ik G~_jl r_m + VF_ik G~_jl u_mk + F~_ik VG_jl v_ml
 * + VF_ik VG_jl S~_kl with u_m = S~ G~_j', v_m = F~_i S~ (kept up to date as
 * S~ moves). q(tau) = Gamma(alpha + |Omega|/2, beta + ESSE/2); ARD rates in
 * ard.c (q(lF_k) = Gamma(alpha0 + I, beta0 + sum_i F~_ik), its ELBO term with
 * E[log lambda] = digamma(shape) - log(rate)). Every update is the exact
 * maximiser of the ELBO in its block, so the ELBO (computed in closed form
 * after every sweep) never decreases.
 *
 * tau | . ~ Gamma(alpha + |Omega|/2, beta + SSE/2) (bnmf_update_tau()), with
 * SSE = sum X^2 - 2 <F'XG, S> + <S, A S B> - sum_missing r_m^2.
 */
#include "bnmf_call.h"
#include "nmtf.h"

void nmtf_work_alloc(const nmf_data *d, int K, int L, int vb, int kl, int acc,
                            nmtf_work *w)
{
    const int I = d->I, J = d->J, M = K > L ? K : L, nm = d->nmiss;
#define ALLOC(n) ((double *) R_alloc((size_t) (n), sizeof(double)))
    w->dK = *d;
    w->dK.K = K;
    w->dL = *d;
    w->dL.K = L;
    w->Q = ALLOC((size_t) I * L);
    w->D = ALLOC((size_t) I * K);
    w->P = ALLOC((size_t) K * J);
    w->E = ALLOC((size_t) L * J);
    w->Ft = ALLOC((size_t) K * I);
    w->Gt = ALLOC((size_t) L * J);
    w->Ht = ALLOC((size_t) J * L);
    w->A = ALLOC((size_t) K * K);
    w->Ai = ALLOC((size_t) K * K);
    w->B = ALLOC((size_t) L * L);
    w->Bi = ALLOC((size_t) L * L);
    w->CF = ALLOC((size_t) K * K);
    w->CG = ALLOC((size_t) L * L);
    w->Ci = ALLOC((size_t) M * M);
    w->T = ALLOC((size_t) K * L);
    w->Bd = ALLOC((size_t) K * L);
    w->tmp = ALLOC((size_t) K * L);
    w->tmp2 = ALLOC((size_t) K * L);
    w->r = ALLOC(nm > 0 ? nm : 1);
    w->u = vb && nm ? ALLOC((size_t) nm * K) : NULL;
    w->v = vb && nm ? ALLOC((size_t) nm * L) : NULL;
    w->Hm = vb && nm ? ALLOC((size_t) K * J) : NULL;
    w->zrow = ALLOC((size_t) COND_BLOCK * M); /* a block of rows (bnmf_cond_rows) */
    w->brow = ALLOC((size_t) COND_BLOCK * M);
    w->vrow = ALLOC((size_t) COND_BLOCK * M);
    w->erow = ALLOC((size_t) COND_BLOCK * M);
    w->lamF = ALLOC(K);
    w->lamG = ALLOC(L);
    w->W = ALLOC((size_t) I * L);
    w->blk = acc && !d->sparse ? ALLOC((size_t) I * NMTF_BLOCK) : NULL;
    w->Z = kl ? ALLOC(d->nx > 0 ? d->nx : 1) : NULL;
    w->den = kl ? ALLOC((size_t) K * L) : NULL; /* S's; F's and G's: bnmf_kl_scale */
    w->Wt = kl || (acc && d->sparse) ? ALLOC((size_t) L * I) : NULL;
    if (!kl && nmtf_s_by_matrix(d, K, L)) {
        const size_t KL = (size_t) K * L, K2 = (size_t) K * K + K, L2 = (size_t) L * L + L;
        w->Cs = ALLOC(KL * KL);
        w->Cq = ALLOC(K2 * L2);
        w->Yb = ALLOC((size_t) NMTF_BLOCK * K2);
        w->Zb = ALLOC((size_t) NMTF_BLOCK * L2);
        w->Pm = ALLOC(KL);
        w->mc = ALLOC(KL);
        w->Gam = ALLOC((size_t) L * L);
        w->gam = ALLOC(L);
    } else {
        w->Cs = w->Cq = w->Yb = w->Zb = w->Pm = w->mc = w->Gam = w->gam = NULL;
    }
    w->Tb = vb && nm && !kl ? ALLOC((size_t) (K + 2 * L) * J) : NULL;
    const size_t nvt = (size_t) L * J > (size_t) K * I ? (size_t) L * J : (size_t) K * I;
    w->Vt = vb && nm ? ALLOC(nvt) : NULL;
    w->ts = ALLOC((size_t) K + 2 * L);
    w->obs = (int *) R_alloc(I > J ? I : J, sizeof(int));
#undef ALLOC
}

/* C = op(A) op(B) by dgemm (column-major, no leading-dimension tricks). */
void nmtf_mat_mult(const char *ta, const char *tb, int m, int n, int k, const double *Am,
                     int lda, const double *Bm, int ldb, double *C)
{
    const double one = 1.0, zero = 0.0;
    if (m == 0 || n == 0) return;
    if (k == 0) {
        for (size_t t = 0; t < (size_t) m * n; t++) C[t] = 0.0;
        return;
    }
    F77_CALL(dgemm)(ta, tb, &m, &n, &k, &one, Am, &lda, Bm, &ldb, &zero, C, &m
                    FCONE FCONE);
}

/**
 * The Gram matrix of the rows of F (rows = 1) or of G (rows = 0) from the
 * (expected) Gram matrix M of the other outer factor:
 *   rows: C = S M S' + diag(sum_l VS_kl M_ll)     (K x K, M: L x L)
 *   else: C = S' M S + diag(sum_k VS_kl M_kk)     (L x L, M: K x K)
 * (VS = NULL: no variance term). `tmp` holds K L values.
 */
static void side_gram(const double *S, const double *VS, const double *M, int K, int L,
                      int rows, double *tmp, double *C)
{
    if (rows) {
        nmtf_mat_mult("N", "N", K, L, L, S, K, M, L, tmp);   /* S M */
        nmtf_mat_mult("N", "T", K, K, L, tmp, K, S, K, C);   /* S M S' */
    } else {
        nmtf_mat_mult("T", "N", L, K, K, S, K, M, K, tmp);   /* S' M */
        nmtf_mat_mult("N", "N", L, L, K, tmp, L, S, K, C);   /* S' M S */
    }
    if (!VS) return;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < K; k++) {
            const double vs = VS[k + (size_t) l * K];
            if (rows) C[k + (size_t) k * K] += vs * M[l + (size_t) l * L];
            else C[l + (size_t) l * L] += vs * M[k + (size_t) k * K];
        }
}

static inline void check_interrupt(int r)
{
    if ((r & 4095) == 4095) {
        bnmf_rng_interrupt();
    }
}

/*
 * The rows of one outer factor Z (n x R: F, or G) given the rest: row t has
 * the Gram matrix side_gram() of M, the (expected) Gram matrix of the other
 * outer factor over the row's observed entries (masked through the other
 * factor's transpose Ot, R2 x n2, and the row's missing list), and the right
 * side b_t = row t of Bx (n x R, stride n; or column t of an R x n matrix,
 * stride 1 and row stride R).
 */
typedef struct {
    double *Z, *Zvar, *Zent;   /* the factor (n x R) and, for VB, its q parts */
    int n, R, rows;            /* rows: 1 for F (C = S M S'), 0 for G (S' M S) */
    const double *M, *Ot, *Vo; /* Gram of the other factor (R2 x R2), its transpose and,
                                * VB with missing entries, its variances' (R2 x n2) */
    int n2, R2;
    const int *miss, *ptr;     /* the missing entries of each row: miss[ptr[t]..ptr[t+1]) */
    const double *Bx;          /* right sides */
    size_t bstep, bstride;     /* b_t[r] = Bx[t * bstep + r * bstride] */
    const double *lam;         /* R rates */
    double *Cfull;             /* R x R Gram matrix of a complete row */
} row_side;

static void update_rows(const row_side *rs, const nmtf_state *st, nmf_rule rule, int vb,
                        nmtf_work *w)
{
    const int n = rs->n, R = rs->R, K = st->K, L = st->L;
    const double *VS = vb ? st->S_var : NULL;
    side_gram(st->S, VS, rs->M, K, L, rs->rows, w->tmp, rs->Cfull);
    double *Mi = rs->rows ? w->Bi : w->Ai;
    /* Gibbs, ICM and VB: rows with no missing entry share Cfull and are
     * updated four at a time (bnmf_cond_rows: for ICM and VB the same numbers
     * as row by row; Gibbs draws coordinate k of the block's rows one after
     * the other) */
    const int blocks = rule != RULE_MULT;
    for (int t = 0; t < n; t++) {
        check_interrupt(t);
        int nr = 0;
        while (blocks && nr < COND_BLOCK && t + nr < n &&
               rs->ptr[t + nr + 1] == rs->ptr[t + nr])
            nr++;
        if (nr > 1) {
            const double *lam[COND_BLOCK];
            for (int q = 0; q < nr; q++) {
                const int tq = t + q;
                if (q > 0) check_interrupt(tq);
                lam[q] = rs->lam;
                for (int r = 0; r < R; r++) {
                    w->zrow[q * R + r] = rs->Z[tq + (size_t) r * n];
                    w->brow[q * R + r] = rs->Bx[tq * rs->bstep + r * rs->bstride];
                }
            }
            bnmf_cond_rows(w->zrow, rs->Cfull, w->brow, lam, 1, *st->tau, R, nr, rule,
                           w->vrow, w->erow);
            for (int q = 0; q < nr; q++) {
                for (int r = 0; r < R; r++) {
                    const size_t tr = t + q + (size_t) r * n;
                    rs->Z[tr] = w->zrow[q * R + r];
                    if (vb) {
                        rs->Zvar[tr] = w->vrow[q * R + r];
                        rs->Zent[tr] = w->erow[q * R + r];
                    }
                }
            }
            t += nr - 1;
            continue;
        }
        const int nm = rs->ptr[t + 1] - rs->ptr[t];
        const double *C = rs->Cfull;
        if (nm) {
            const double *Mt = bnmf_masked_gram(Mi, rs->M, rs->Ot, rs->R2, rs->n2,
                                                rs->miss + rs->ptr[t], nm, rs->R2, w->obs,
                                                vb ? rs->Vo : NULL, (size_t) rs->R2, 1);
            side_gram(st->S, VS, Mt, K, L, rs->rows, w->tmp, w->Ci);
            C = w->Ci;
        }
        for (int r = 0; r < R; r++) {
            w->zrow[r] = rs->Z[t + (size_t) r * n];
            w->brow[r] = rs->Bx[t * rs->bstep + r * rs->bstride];
        }
        bnmf_cond_row(w->zrow, C, w->brow, rs->lam, 1, *st->tau, R, 0, rule, w->vrow,
                      w->erow);
        for (int r = 0; r < R; r++) {
            const size_t tr = t + (size_t) r * n;
            rs->Z[tr] = w->zrow[r];
            if (vb) {
                rs->Zvar[tr] = w->vrow[r];
                rs->Zent[tr] = w->erow[r];
            }
        }
    }
}

/* Rows of F given S, G, tau: C_i = S (G'G over Omega_i) S', b_i = (X G S')_i. */
void nmtf_update_F(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb,
                     nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    bnmf_transpose(st->G, J, L, w->Gt);
    bnmf_x_g(&w->dL, st->x, st->G, w->Gt, w->Q, w->obs);              /* Q = X G */
    nmtf_mat_mult("N", "T", I, K, L, w->Q, I, st->S, K, w->D);   /* D = X G S' */
    bnmf_expected_gram(st->G, vb ? st->G_var : NULL, L, J, GRAM_COLS, w->B);
    /* VB's masked rows sum each missing entry's L variances in one pass */
    if (vb && d->nmiss) bnmf_transpose(st->G_var, J, L, w->Vt);
    const row_side rs = {st->F, st->F_var, st->F_ent, I, K, 1, w->B, w->Gt, w->Vt, J, L,
                         d->mrow_j, d->mrow_ptr, w->D, 1, (size_t) I, w->lamF, w->CF};
    update_rows(&rs, st, rule, vb, w);
}

/* P = F' X and A = E[F'F]: what the G and S half sweeps see of F. */
void nmtf_f_side(const nmf_data *d, nmtf_state *st, int vb, nmtf_work *w)
{
    bnmf_wt_x(&w->dK, st->x, st->F, w->P, w->Ft, w->obs);
    bnmf_expected_gram(st->F, vb ? st->F_var : NULL, st->K, d->I, GRAM_COLS, w->A);
}

/* Rows of G given F, S, tau (after nmtf_f_side()): C_j = S' (F'F over Omega_j) S,
 * b_j = column j of S' F' X. */
void nmtf_update_G(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb,
                     nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    nmtf_mat_mult("T", "N", L, J, K, st->S, K, w->P, K, w->E);   /* E = S' F' X */
    if (vb && d->nmiss) bnmf_transpose(st->F_var, I, K, w->Vt);
    const row_side rs = {st->G, st->G_var, st->G_ent, J, L, 0, w->A, w->Ft, w->Vt, I, K,
                         d->miss_i, d->mcol_ptr, w->E, (size_t) L, 1, w->lamG, w->CG};
    update_rows(&rs, st, rule, vb, w);
}

/* B = E[G'G], Bd = F' X G and T = A S B (after nmtf_f_side() and the G half sweep). */
void nmtf_g_side(const nmf_data *d, nmtf_state *st, int vb, nmtf_work *w)
{
    const int J = d->J, K = st->K, L = st->L;
    bnmf_expected_gram(st->G, vb ? st->G_var : NULL, L, J, GRAM_COLS, w->B);
    nmtf_mat_mult("N", "N", K, L, J, w->P, K, st->G, J, w->Bd);
    nmtf_mat_mult("N", "N", K, L, K, w->A, K, st->S, K, w->tmp);
    nmtf_mat_mult("N", "N", K, L, L, w->tmp, K, w->B, L, w->T);
}
