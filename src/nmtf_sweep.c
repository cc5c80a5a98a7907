/*
 * nmtf_sweep.c -- Gaussian non-negative matrix tri-factorisation
 * X ~ F S G' (Brouwer & Lio 2017; Brouwer, Frellsen & Lio 2017): Gibbs
 * sampling, ICM, variational Bayes (VB) and multiplicative updates (NP),
 * one driver for the four rules, the rule applied in cond_row.c.
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
#include <float.h>
#include <limits.h>
#include "bnmf_call.h"
#include "nmtf.h"

#define NMTF_BLOCK 64

/* Scratch of a run of sweeps (R_alloc). */
typedef struct {
    nmf_data dK, dL;        /* the data with K = K (F side) and K = L (G side) */
    double *Q, *D;          /* I x L: X G;  I x K: X G S' */
    double *P, *E;          /* K x J: F' X;  L x J: S' F' X */
    double *Ft, *Gt, *Ht;   /* K x I, L x J, J x L */
    double *A, *B, *Ai, *Bi;/* E[F'F], E[G'G] (K x K, L x L) and masked copies */
    double *CF, *CG, *Ci;   /* Gram matrices of the rows of F (K x K), G (L x L); row's */
    double *T, *Bd, *tmp, *tmp2; /* K x L: A S B, F' X G; K x L scratch x 2 */
    double *r, *u, *v;      /* missing entries m: (FSG')_ij; S G_j' and F_i S (K x nmiss,
                             * L x nmiss: each k streams through the entries) */
    double *Hm;             /* K x J: S G' (VB with missing entries) */
    double *zrow, *brow, *vrow, *erow, *lamF, *lamG;
    double *W, *blk;        /* I x L: F S; I x NMTF_BLOCK (fitted means) */
    double *Z, *den, *Wt;   /* KL: X / (F S G') at the stored entries; S's
                             * denominators; (F S)' */
    /* update_S by the matrix of the missing entries' terms (s_by_matrix):
     * Cs (K L x K L), Cq ((K^2 + K) x (L^2 + L)), row blocks Yb and Zb of
     * its product, Pm and mc (K x L), a row's Gam (L x L) and gam (L) */
    double *Cs, *Cq, *Yb, *Zb, *Pm, *mc, *Gam, *gam;
    double *Tb, *ts;        /* VB, missing entries: per column (S G')^2, Var G, E[G^2]
                             * (K + 2 L values each, sse_missing), and a row's sums */
    double *Vt;             /* VB, missing entries: G_var' (L x J) or F_var' (K x I),
                             * the transpose the step at hand needs */
    int *obs;
} nmtf_work;

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
static int s_by_matrix(const nmf_data *d, int K, int L)
{
    const double kl = (double) K * L;
    return d->nmiss > 0 && kl <= S_MATRIX_MAX &&
        (double) d->I * (K + 1) * (L + 1) <= 16.0 * (double) d->nmiss;
}

static void nmtf_work_alloc(const nmf_data *d, int K, int L, int vb, int kl, int acc,
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
    if (!kl && s_by_matrix(d, K, L)) {
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
static void mat_mult(const char *ta, const char *tb, int m, int n, int k, const double *Am,
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
        mat_mult("N", "N", K, L, L, S, K, M, L, tmp);   /* S M */
        mat_mult("N", "T", K, K, L, tmp, K, S, K, C);   /* S M S' */
    } else {
        mat_mult("T", "N", L, K, K, S, K, M, K, tmp);   /* S' M */
        mat_mult("N", "N", L, L, K, tmp, L, S, K, C);   /* S' M S */
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
static void update_F(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb,
                     nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    bnmf_transpose(st->G, J, L, w->Gt);
    bnmf_x_g(&w->dL, st->x, st->G, w->Gt, w->Q, w->obs);              /* Q = X G */
    mat_mult("N", "T", I, K, L, w->Q, I, st->S, K, w->D);   /* D = X G S' */
    bnmf_expected_gram(st->G, vb ? st->G_var : NULL, L, J, GRAM_COLS, w->B);
    /* VB's masked rows sum each missing entry's L variances in one pass */
    if (vb && d->nmiss) bnmf_transpose(st->G_var, J, L, w->Vt);
    const row_side rs = {st->F, st->F_var, st->F_ent, I, K, 1, w->B, w->Gt, w->Vt, J, L,
                         d->mrow_j, d->mrow_ptr, w->D, 1, (size_t) I, w->lamF, w->CF};
    update_rows(&rs, st, rule, vb, w);
}

/* P = F' X and A = E[F'F]: what the G and S half sweeps see of F. */
static void f_side(const nmf_data *d, nmtf_state *st, int vb, nmtf_work *w)
{
    bnmf_wt_x(&w->dK, st->x, st->F, w->P, w->Ft, w->obs);
    bnmf_expected_gram(st->F, vb ? st->F_var : NULL, st->K, d->I, GRAM_COLS, w->A);
}

/* Rows of G given F, S, tau (after f_side()): C_j = S' (F'F over Omega_j) S,
 * b_j = column j of S' F' X. */
static void update_G(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb,
                     nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    mat_mult("T", "N", L, J, K, st->S, K, w->P, K, w->E);   /* E = S' F' X */
    if (vb && d->nmiss) bnmf_transpose(st->F_var, I, K, w->Vt);
    const row_side rs = {st->G, st->G_var, st->G_ent, J, L, 0, w->A, w->Ft, w->Vt, I, K,
                         d->miss_i, d->mcol_ptr, w->E, (size_t) L, 1, w->lamG, w->CG};
    update_rows(&rs, st, rule, vb, w);
}

/* B = E[G'G], Bd = F' X G and T = A S B (after f_side() and the G half sweep). */
static void g_side(const nmf_data *d, nmtf_state *st, int vb, nmtf_work *w)
{
    const int J = d->J, K = st->K, L = st->L;
    bnmf_expected_gram(st->G, vb ? st->G_var : NULL, L, J, GRAM_COLS, w->B);
    mat_mult("N", "N", K, L, J, w->P, K, st->G, J, w->Bd);
    mat_mult("N", "N", K, L, K, w->A, K, st->S, K, w->tmp);
    mat_mult("N", "N", K, L, L, w->tmp, K, w->B, L, w->T);
}

/* The fitted values at the missing entries, r_m = F_i S G_j', and for VB
 * u_m = S G_j' (K values) and v_m = F_i S (L values). */
static void miss_products(const nmf_data *d, const nmtf_state *st, nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L, nm = d->nmiss;
    const double *G = st->G;
    mat_mult("N", "N", I, L, K, st->F, I, st->S, K, w->W);            /* F S */
    for (int m = 0; m < nm; m++) {
        const int i = d->miss_i[m], j = d->miss_j[m];
        double r = 0.0;
        for (int l = 0; l < L; l++) r += w->W[i + (size_t) l * I] * G[j + (size_t) l * J];
        w->r[m] = r;
    }
    if (!w->u) return;
    for (int l = 0; l < L; l++)
        for (int m = 0; m < nm; m++) w->v[(size_t) l * nm + m] = w->W[d->miss_i[m] + (size_t) l * I];
    mat_mult("N", "T", K, J, L, st->S, K, G, J, w->Hm);               /* S G' */
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

/* Every entry of S given F, G, tau (after g_side()). */
static void update_S(const nmf_data *d, nmtf_state *st, nmf_rule rule, int vb,
                     double lamS, nmtf_work *w)
{
    const int K = st->K, L = st->L;
    const size_t KL = (size_t) K * L;
    double *S = st->S;
    const int bym = s_by_matrix(d, K, L);
    if (bym) {
        s_missing_matrix(d, st, vb, w);
        for (size_t t = 0; t < KL; t++) w->mc[t] = 0.0;
        for (size_t t = 0; t < KL; t++)
            if (S[t] != 0.0) bnmf_axpy4(w->mc, S[t], w->Cs + t * KL, (int) KL);
    } else if (d->nmiss) {
        miss_products(d, st, w);
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
        mat_mult("N", "T", K, J, L, S, K, st->G, J, w->Hm);           /* S G' */
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
 * The (expected) SSE over the observed entries (after g_side(); refreshes T):
 *   sum X^2 - 2 <F'XG, S> + <S, A S B> + sum_kl A_kk B_ll VS_kl
 *   - the missing entries' terms (sse_missing).
 */
static double nmtf_sse(const nmf_data *d, const nmtf_state *st, int vb, nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    const double *S = st->S;
    mat_mult("N", "N", K, L, K, w->A, K, S, K, w->tmp);
    mat_mult("N", "N", K, L, L, w->tmp, K, w->B, L, w->T);
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
    mat_mult("N", "N", I, L, K, st->F_var, I, S2, K, M1);
    mat_mult("N", "N", I, L, K, F2, I, st->S_var, K, M2);
    return sse - sse_missing(d, st, 1, w, M1, M2);
}

/* (F S G')_ij at every entry of a dense X, in blocks of columns by dgemm,
 * handed to `each(p, value, ctx)` with p the entry's position in X. w->W
 * must hold F S. (Sparse X: bnmf_sparse_visit.) */
typedef void (*entry_fun)(size_t p, double y, void *ctx);
static void fitted_entries(const nmf_data *d, const nmtf_state *st, nmtf_work *w,
                           double *blk, entry_fun each, void *ctx)
{
    const int I = d->I, J = d->J, L = st->L;
    const double one = 1.0, zero = 0.0;
    for (int j0 = 0; j0 < J; j0 += NMTF_BLOCK) {
        int nb = J - j0 < NMTF_BLOCK ? J - j0 : NMTF_BLOCK;
        if (L > 0)
            F77_CALL(dgemm)("N", "T", &I, &nb, &L, &one, w->W, &I, st->G + j0, &J, &zero,
                            blk, &I FCONE FCONE);
        else
            for (size_t t = 0; t < (size_t) I * nb; t++) blk[t] = 0.0;
        for (int jj = 0; jj < nb; jj++)
            for (int i = 0; i < I; i++)
                each((size_t) i + (size_t) (j0 + jj) * I, blk[i + (size_t) jj * I], ctx);
    }
}

/* Welford update of a running mean and sum of squared deviations. */
static inline void running(double *mean, double *m2, double v, double n)
{
    const double dv = v - *mean;
    *mean += dv / n;
    *m2 += dv * (v - *mean);
}

typedef struct { double *mean, *m2, n; } acc_ctx;
static void acc_entry(size_t p, double y, void *ctx)
{
    acc_ctx *a = (acc_ctx *) ctx;
    running(a->mean + p, a->m2 + p, y, a->n);
}

/* acc_entry on a run of stored values (bnmf_sparse_visit) */
static void acc_run(size_t p0, const double *y, int n, void *ctx)
{
    acc_ctx *a = (acc_ctx *) ctx;
    for (int t = 0; t < n; t++) running(a->mean + p0 + t, a->m2 + p0 + t, y[t], a->n);
}

/* ---- the I-divergence updates of Yoo & Choi (loss = "kl") ---- */

/* Z = X / (F S G') at the stored entries (0 where X is 0, so at the masked
 * missing entries too); returns the loss sum_Omega X log(X / Y) - X + Y,
 * or (loss_too = 0: for the updates, which need only Z) 0 without the log
 * per entry. */
static double kl_ratio(const nmf_data *d, const nmtf_state *st, nmtf_work *w,
                       int loss_too)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    mat_mult("N", "N", I, L, K, st->F, I, st->S, K, w->W);
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
        miss_products(d, st, w);
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
static double kl_sweep(const nmf_data *d, nmtf_state *st, const nmtf_ctrl *c,
                       nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    double *F = st->F, *S = st->S, *G = st->G;
    double *den = w->den;
    if (c->update_F) {
        kl_ratio(d, st, w, 0);
        if (w->dL.sparse) bnmf_transpose(G, J, L, w->Gt); /* bnmf_x_g reads it */
        bnmf_x_g(&w->dL, w->Z, G, w->Gt, w->Q, w->obs);
        mat_mult("N", "T", I, K, L, w->Q, I, S, K, w->D);
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
        if (d->nmiss) mat_mult("N", "T", K, J, L, S, K, G, J, w->P);
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
        mat_mult("N", "N", K, L, J, w->P, K, G, J, w->Bd);     /* F' Z G */
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
            mat_mult("T", "N", K, L, I, F, I, w->Q, I, den);
        }
        mult_step(S, w->Bd, den, (size_t) K * L);
    }
    return kl_ratio(d, st, w, 1);
}

/*
 * Maximise along the scale paths F[, k] c, S[k, ] / c and G[, l] c,
 * S[, l] / c, which leave F S G' (so the likelihood) unchanged; F's side
 * first, then G's (with S as F's steps left it). Coordinate updates cross
 * these nearly flat paths only slowly; an exact maximisation along them
 * keeps the objective from decreasing and leaves the fixed points alone.
 *  - ICM (vb = 0): the log prior -c a - b / c, with a = lF_k sum_i F_ik and
 *    b = lS sum_l S_kl (or lG_l sum_j G_jl and lS sum_k S_kl), is largest
 *    at c = sqrt(b / a); every MAP is balanced.
 *  - VB (vb = 1): a truncated normal scaled by c is one again (mean times
 *    c, variance times c^2, entropy plus log c) and every expectation in the
 *    expected SSE keeps its value, so the ELBO moves by -a (c - 1) -
 *    b (1 / c - 1) + p log c, a and b as above with the means (E[lambda]
 *    with ARD) and p = I - L (F's side) or J - K (G's side), the entries
 *    gaining and losing log c of entropy: largest at bnmf_scale_mode's c.
 */
static void balance_scales(const nmf_data *d, const nmtf_prior *pr, nmtf_state *st,
                           nmtf_work *w, int vb)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    if (!(pr->rate_S > 0.0)) return;
    double *cs[2] = {w->vrow, w->erow};
    for (int side = 0; side < 2; side++) {
        const int R = side ? L : K, n = side ? J : I, m = side ? K : L;
        double *Z = side ? st->G : st->F;
        double *Zv = side ? st->G_var : st->F_var, *Ze = side ? st->G_ent : st->F_ent;
        const double *lam = side ? w->lamG : w->lamF;
        for (int r = 0; r < R; r++) {
            double a = 0.0, b = 0.0;
            cs[side][r] = 1.0;
            for (int t = 0; t < n; t++) a += Z[t + (size_t) r * n];
            for (int t = 0; t < m; t++)
                b += st->S[side ? t + (size_t) r * K : r + (size_t) t * K];
            a *= lam[r];
            b *= pr->rate_S;
            if (!(a > 0.0) || !(b > 0.0)) continue;
            double c, u = 0.0;
            if (vb) {
                double ay, by;
                bnmf_scale_mode(a, b, (double) n - (double) m, &u, &ay, &by);
                if (!R_FINITE(u) || u == 0.0) continue;
                c = exp(u);
            } else {
                c = sqrt(b / a);
            }
            if (!R_FINITE(c) || !(c > 0.0)) continue;
            cs[side][r] = c;
            for (int t = 0; t < n; t++) {
                const size_t tr = t + (size_t) r * n;
                Z[tr] *= c;
                if (vb) {
                    Zv[tr] *= c * c;
                    Ze[tr] += u;
                }
            }
            for (int t = 0; t < m; t++) {
                const size_t kl = side ? t + (size_t) r * K : r + (size_t) t * K;
                st->S[kl] /= c;
                if (vb) {
                    st->S_var[kl] /= c * c;
                    st->S_ent[kl] -= u;
                }
            }
        }
    }
    /* (E)F'F, (E)G'G and F' X G of the rescaled factors; VB: the missing
     * entries' products are recomputed when next needed */
    const double *cf = cs[0], *cg = cs[1];
    for (int k2 = 0; k2 < K; k2++)
        for (int k = 0; k < K; k++) w->A[k + (size_t) k2 * K] *= cf[k] * cf[k2];
    for (int l2 = 0; l2 < L; l2++)
        for (int l = 0; l < L; l++) w->B[l + (size_t) l2 * L] *= cg[l] * cg[l2];
    for (int l = 0; l < L; l++)
        for (int k = 0; k < K; k++) w->Bd[k + (size_t) l * K] *= cf[k] * cg[l];
}

/* ---- priors, log joint, ELBO ---- */

/* The halves of the data that the ARD code of ard.c sees: a factor of n
 * rows and R columns (J = 0: no second factor). */
static nmf_data ard_half(int n, int R)
{
    nmf_data h;
    memset(&h, 0, sizeof(h));
    h.I = n;
    h.J = 0;
    h.K = R;
    return h;
}

static nmf_prior ard_prior(const nmtf_prior *pr)
{
    nmf_prior p;
    memset(&p, 0, sizeof(p));
    p.ard = 1;
    p.alpha0 = pr->alpha0;
    p.beta0 = pr->beta0;
    p.alpha = pr->alpha;
    p.beta = pr->beta;
    return p;
}

static double sum_vec(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s += v[t];
    return s;
}

/* log density of Exp(rate) summed over n values with the given sum (an
 * improper flat prior, rate 0, adds nothing). */
static double exp_log_prior(double rate, size_t n, double sum)
{
    return rate > 0.0 ? n * log(rate) - rate * sum : 0.0;
}

/*
 * The prior of F, S, G (and of the rates under ARD): log p for Gibbs and
 * ICM; for VB (lrate: the Gamma rates of q(lambda)) E_q[log p] with the
 * factors' means, plus the entropies of q(lambda).
 */
static double factor_prior(const nmf_data *d, const nmtf_prior *pr, const nmtf_state *st,
                           int vb)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    double e = exp_log_prior(pr->rate_S, (size_t) K * L, sum_vec(st->S, (size_t) K * L));
    if (!pr->ard)
        return e + exp_log_prior(pr->rate_F, (size_t) I * K, sum_vec(st->F, (size_t) I * K)) +
            exp_log_prior(pr->rate_G, (size_t) J * L, sum_vec(st->G, (size_t) J * L));
    const nmf_data hF = ard_half(I, K), hG = ard_half(J, L);
    const nmf_prior ap = ard_prior(pr);
    if (vb)
        return bnmf_ard_elbo_add(bnmf_ard_elbo_add(e, &hF, &ap, st->F, NULL, st->lamF,
                                                   st->lamF_rate),
                                 &hG, &ap, st->G, NULL, st->lamG, st->lamG_rate);
    return e + bnmf_ard_log_prior(&hF, &ap, st->lamF, st->F, NULL) +
        bnmf_ard_log_prior(&hG, &ap, st->lamG, st->G, NULL);
}

/* The rates of the rows' conditionals: lambda (ARD) or the fixed rates. */
static void fill_rates(const nmtf_prior *pr, const nmtf_state *st, nmtf_work *w)
{
    for (int k = 0; k < st->K; k++) w->lamF[k] = pr->ard ? st->lamF[k] : pr->rate_F;
    for (int l = 0; l < st->L; l++) w->lamG[l] = pr->ard ? st->lamG[l] : pr->rate_G;
}

/* log p(X | .) (VB: its expectation) in *loglik, and the log joint (VB: the ELBO). */
static double objective(const nmf_data *d, const nmtf_prior *pr, const nmtf_state *st,
                        nmf_rule rule, double sse, double tau_shape, double *loglik)
{
    const int vb = rule == RULE_MOMENT;
    const double etau = *st->tau;
    const double elog = vb ? digamma(tau_shape) - log(*st->tau_rate) : log(etau);
    const double ll = 0.5 * d->n_obs * (elog - log(2.0 * M_PI)) - 0.5 * etau * sse;
    *loglik = ll;
    double e = ll + pr->alpha * log(pr->beta) - lgammafn(pr->alpha) +
        (pr->alpha - 1.0) * elog - pr->beta * etau + factor_prior(d, pr, st, vb);
    if (vb) {
        const int I = d->I, J = d->J, K = st->K, L = st->L;
        e += bnmf_gamma_entropy(tau_shape, *st->tau_rate) +
            sum_vec(st->F_ent, (size_t) I * K) + sum_vec(st->S_ent, (size_t) K * L) +
            sum_vec(st->G_ent, (size_t) J * L);
    }
    return e;
}

/* What a run of sweeps reports (arrays for c->n sweeps). */
typedef struct {
    double *trace, *lambda, *F_draws, *S_draws, *G_draws;
    int done, converged;
} nmtf_out;

/* argmax of a row of an n x R matrix (the first on ties) */
static int row_argmax(const double *M, int n, int R, int i)
{
    int best = 0;
    for (int r = 1; r < R; r++)
        if (M[i + (size_t) r * n] > M[i + (size_t) best * n]) best = r;
    return best;
}

/* Running moments, cluster counts and kept draws of a sampling sweep. */
static void keep_sweep(const nmf_data *d, const nmtf_prior *pr, nmtf_state *st,
                       const nmtf_ctrl *c, nmtf_out *out, int *kept, int n_draws,
                       nmtf_work *w)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    const size_t nF = (size_t) I * K, nS = (size_t) K * L, nG = (size_t) J * L;
    if (c->accumulate) {
        const double n = ++(*st->n_kept);
        for (size_t t = 0; t < nF; t++) running(st->F_mean + t, st->F_m2 + t, st->F[t], n);
        for (size_t t = 0; t < nS; t++) running(st->S_mean + t, st->S_m2 + t, st->S[t], n);
        for (size_t t = 0; t < nG; t++) running(st->G_mean + t, st->G_m2 + t, st->G[t], n);
        running(st->tau_mean, st->tau_m2, *st->tau, n);
        if (pr->ard) {
            for (int k = 0; k < K; k++) running(st->lamF_mean + k, st->lamF_m2 + k, st->lamF[k], n);
            for (int l = 0; l < L; l++) running(st->lamG_mean + l, st->lamG_m2 + l, st->lamG[l], n);
        }
        for (int i = 0; i < I; i++) st->row_hits[i + (size_t) row_argmax(st->F, I, K, i) * I] += 1.0;
        for (int j = 0; j < J; j++) st->col_hits[j + (size_t) row_argmax(st->G, J, L, j) * J] += 1.0;
        if (st->X_mean) {
            mat_mult("N", "N", I, L, K, st->F, I, st->S, K, w->W);
            acc_ctx a = {st->X_mean, st->X_m2, n};
            if (d->sparse) {
                /* (F S)' and G' by rows, their rows in blocks; each value
                 * summed over l in order, as entry by entry */
                bnmf_transpose(w->W, I, L, w->Wt);
                bnmf_transpose(st->G, J, L, w->Gt);
                const double *pf[] = {st->X_mean, st->X_m2, NULL};
                bnmf_sparse_visit(d, w->Wt, w->Gt, L, w->obs, acc_run, &a, pf);
            } else {
                fitted_entries(d, st, w, w->blk, acc_entry, &a);
            }
        }
    }
    if (c->keep_draws && *kept < n_draws) {
        memcpy(out->F_draws + (size_t) *kept * nF, st->F, sizeof(double) * nF);
        memcpy(out->S_draws + (size_t) *kept * nS, st->S, sizeof(double) * nS);
        memcpy(out->G_draws + (size_t) *kept * nG, st->G, sizeof(double) * nG);
        (*kept)++;
    }
}

/**
 * Advance a state by c->n sweeps of its rule, in place: rows of F, rows of
 * G, entries of S, then tau and the ARD rates. Missing entries are masked
 * (zeros in st->x, left out of every Gram matrix and sum).
 * @param out arrays for c->n sweeps: trace (n x 4: loglik, tau, logpost,
 *            sse), ARD rates (n x (K + L)), kept draws; receives the number
 *            of sweeps done and whether tol stopped them.
 * For VB logpost is the ELBO and sse the expected SSE; for NP logpost is
 * minus the loss.
 */
void bnmf_nmtf_sweeps(const nmf_data *d, const nmtf_prior *pr, nmtf_state *st,
                      const nmtf_ctrl *c, nmtf_out *out)
{
    const int I = d->I, J = d->J, K = st->K, L = st->L;
    const nmf_rule rule = c->rule;
    const int vb = rule == RULE_MOMENT, n = c->n;
    const int upd_tau = c->update_tau && rule != RULE_MULT;
    const int n_draws = c->keep_draws ? n / c->thin : 0;
    nmtf_work w;
    nmtf_work_alloc(d, K, L, vb, c->kl, c->accumulate && st->X_mean, &w);
    const double tau_shape = pr->alpha + 0.5 * d->n_obs;
    nmf_prior taup;
    memset(&taup, 0, sizeof(taup));
    taup.alpha = pr->alpha;
    taup.beta = pr->beta;
    const nmf_data hF = ard_half(I, K), hG = ard_half(J, L);
    const nmf_prior ap = ard_prior(pr);
    bnmf_rng_get(1);   /* draws through bnmf_unif() and bnmf_rng_lend() only */
    int s, kept = 0, converged = 0;
    for (s = 0; s < n; s++) {
        double sse, loglik, logpost;
        if (c->kl) {
            sse = kl_sweep(d, st, c, &w);
            loglik = logpost = -sse;
        } else {
            fill_rates(pr, st, &w);
            if (c->update_F) update_F(d, st, rule, vb, &w);
            f_side(d, st, vb, &w);
            if (c->update_G) update_G(d, st, rule, vb, &w);
            g_side(d, st, vb, &w);
            if (c->update_S) update_S(d, st, rule, vb, pr->rate_S, &w);
            if ((rule == RULE_MODE || vb) && c->update_F && c->update_S && c->update_G)
                balance_scales(d, pr, st, &w, vb);
            sse = nmtf_sse(d, st, vb, &w);
            if (sse < 0.0) sse = 0.0;
            if (upd_tau) bnmf_update_tau(&taup, rule, tau_shape, sse, st->tau, st->tau_rate);
            if (pr->ard && rule != RULE_MULT) {
                if (c->update_F)
                    bnmf_ard_update(&hF, &ap, rule, st->lamF, st->lamF_rate, st->F, NULL);
                if (c->update_G)
                    bnmf_ard_update(&hG, &ap, rule, st->lamG, st->lamG_rate, st->G, NULL);
            }
            if (rule == RULE_MULT) {
                loglik = logpost = -sse;
            } else {
                logpost = objective(d, pr, st, rule, sse, tau_shape, &loglik);
            }
        }
        out->trace[s] = loglik;
        out->trace[s + n] = *st->tau;
        out->trace[s + 2 * (R_xlen_t) n] = logpost;
        out->trace[s + 3 * (R_xlen_t) n] = sse;
        if (pr->ard) {
            for (int k = 0; k < K; k++) out->lambda[s + (R_xlen_t) k * n] = st->lamF[k];
            for (int l = 0; l < L; l++) out->lambda[s + (R_xlen_t) (K + l) * n] = st->lamG[l];
        }
        if ((s + 1) % c->thin == 0) keep_sweep(d, pr, st, c, out, &kept, n_draws, &w);
        /* ICM, VB, NP: stop at a relative change of the objective <= tol */
        const double change = fabs(logpost - *st->logpost);
        converged = rule != RULE_DRAW && c->tol > 0.0 && R_FINITE(*st->logpost) &&
            change <= c->tol * fabs(logpost);
        *st->logpost = logpost;
        if (converged) break;
        check_interrupt(4095);
    }
    bnmf_rng_put();
    out->done = s < n ? s + 1 : n;
    out->converged = converged;
}

/* ---- the .Call entry ---- */

/* A component of the state, of length len, or NULL when `need` is 0. */
static double *state_elt(SEXP state, const char *name, R_xlen_t len, int need)
{
    return need ? bnmf_real_elt(state, name, len) : NULL;
}

static void read_nmtf_state(SEXP state, const nmf_data *d, int K, int L, int ard,
                            int acc, int vb, nmtf_state *st)
{
    const R_xlen_t I = d->I, J = d->J;
    memset(st, 0, sizeof(*st));
    st->K = K;
    st->L = L;
    st->F = bnmf_real_elt(state, "F", I * K);
    st->S = bnmf_real_elt(state, "S", (R_xlen_t) K * L);
    st->G = bnmf_real_elt(state, "G", J * L);
    st->tau = bnmf_real_elt(state, "tau", 1);
    st->x = bnmf_real_elt(state, "x", d->nx);
    st->sumsq = bnmf_real_elt(state, "sumsq", 1);
    st->logpost = bnmf_real_elt(state, "logpost", 1);
    st->n_kept = bnmf_real_elt(state, "n_kept", 1);
    st->lamF = state_elt(state, "lambda_F", K, ard);
    st->lamG = state_elt(state, "lambda_G", L, ard);
    st->F_mean = state_elt(state, "F_mean", I * K, acc);
    st->F_m2 = state_elt(state, "F_m2", I * K, acc);
    st->S_mean = state_elt(state, "S_mean", (R_xlen_t) K * L, acc);
    st->S_m2 = state_elt(state, "S_m2", (R_xlen_t) K * L, acc);
    st->G_mean = state_elt(state, "G_mean", J * L, acc);
    st->G_m2 = state_elt(state, "G_m2", J * L, acc);
    st->tau_mean = state_elt(state, "tau_mean", 1, acc);
    st->tau_m2 = state_elt(state, "tau_m2", 1, acc);
    st->row_hits = state_elt(state, "row_hits", I * K, acc);
    st->col_hits = state_elt(state, "col_hits", J * L, acc);
    st->lamF_mean = state_elt(state, "lambda_F_mean", K, acc && ard);
    st->lamF_m2 = state_elt(state, "lambda_F_m2", K, acc && ard);
    st->lamG_mean = state_elt(state, "lambda_G_mean", L, acc && ard);
    st->lamG_m2 = state_elt(state, "lambda_G_m2", L, acc && ard);
    if (acc) {
        const R_xlen_t nx = XLENGTH(bnmf_list_get(state, "X_mean"));
        if (nx != 0 && nx != d->nx) Rf_error("bnmf internal error: X_mean has the wrong length");
        if (nx) {
            st->X_mean = bnmf_real_elt(state, "X_mean", nx);
            st->X_m2 = bnmf_real_elt(state, "X_m2", nx);
        }
    }
    st->F_var = state_elt(state, "F_var", I * K, vb);
    st->S_var = state_elt(state, "S_var", (R_xlen_t) K * L, vb);
    st->G_var = state_elt(state, "G_var", J * L, vb);
    st->F_ent = state_elt(state, "F_ent", I * K, vb);
    st->S_ent = state_elt(state, "S_ent", (R_xlen_t) K * L, vb);
    st->G_ent = state_elt(state, "G_ent", J * L, vb);
    st->tau_rate = state_elt(state, "tau_rate", 1, vb);
    st->lamF_rate = state_elt(state, "lambda_F_rate", K, vb && ard);
    st->lamG_rate = state_elt(state, "lambda_G_rate", L, vb && ard);
    bnmf_check_factors(st->F, st->S, d->I, L, K);
    for (R_xlen_t t = 0; t < J * L; t++)
        if (!(st->G[t] >= 0.0) || !R_FINITE(st->G[t]))
            Rf_error("bnmf internal error: G must be finite and non-negative");
    if (!(*st->tau > 0.0) || !R_FINITE(*st->tau))
        Rf_error("bnmf internal error: tau must be finite and > 0");
    for (int k = 0; ard && k < K; k++)
        if (!(st->lamF[k] > 0.0)) Rf_error("bnmf internal error: lambda_F must be > 0");
    for (int l = 0; ard && l < L; l++)
        if (!(st->lamG[l] > 0.0)) Rf_error("bnmf internal error: lambda_G must be > 0");
}

/* prior: list(rate = c(F, S, G), alpha, beta, ard = numeric() or c(alpha0, beta0)) */
static void read_nmtf_prior(SEXP prior, nmtf_prior *pr)
{
    const double *rate = bnmf_real_elt(prior, "rate", 3);
    pr->rate_F = rate[0];
    pr->rate_S = rate[1];
    pr->rate_G = rate[2];
    pr->alpha = *bnmf_real_elt(prior, "alpha", 1);
    pr->beta = *bnmf_real_elt(prior, "beta", 1);
    SEXP a = bnmf_list_get(prior, "ard");
    pr->ard = XLENGTH(a) == 2;
    if (pr->ard) {
        const double *ab = bnmf_real_elt(prior, "ard", 2);
        pr->alpha0 = ab[0];
        pr->beta0 = ab[1];
    }
    for (int t = 0; t < 3; t++)
        if (!(rate[t] >= 0.0) || !R_FINITE(rate[t]))
            Rf_error("bnmf internal error: rates must be finite and >= 0");
    if (!(pr->alpha > 0.0) || !(pr->beta > 0.0))
        Rf_error("bnmf internal error: alpha and beta must be > 0");
}

/*
 * .Call entry: advance an NMTF state by ctrl$n sweeps, in place.
 * state: the list of nmtf_new_state() (R/nmtf.R); data: prepare_data(X, K);
 * prior: list(rate = c(F, S, G), alpha, beta, ard); ctrl: see
 * bnmf_read_nmtf_ctrl(). Returns list(trace = n x 4, lambda = n x (K + L)
 * (0 columns without ARD), F_draws, S_draws, G_draws, converged).
 */
SEXP bnmf_nmtf_sweeps_call(SEXP state, SEXP data, SEXP prior, SEXP ctrl, SEXP dimsL)
{
    nmf_data d;
    nmtf_prior pr;
    nmtf_state st;
    nmtf_ctrl c;
    bnmf_read_nmtf_ctrl(ctrl, &c);
    bnmf_read_data(data, 1, &d);
    read_nmtf_prior(prior, &pr);
    if (TYPEOF(dimsL) != INTSXP || XLENGTH(dimsL) != 1 || INTEGER(dimsL)[0] < 1)
        Rf_error("bnmf internal error: L must be one positive integer");
    const int K = d.K, L = INTEGER(dimsL)[0];
    const int ard = pr.ard && c.rule != RULE_MULT;
    pr.ard = ard;
    read_nmtf_state(state, &d, K, L, ard, c.accumulate, c.rule == RULE_MOMENT, &st);
    if (c.rule != RULE_MODE && c.rule != RULE_MULT && !ard &&
        !(pr.rate_F > 0.0 && pr.rate_S > 0.0 && pr.rate_G > 0.0))
        Rf_error("bnmf internal error: Gibbs and VB need rates > 0");
    if (c.rule != RULE_MODE && c.rule != RULE_MULT && !(pr.rate_S > 0.0))
        Rf_error("bnmf internal error: Gibbs and VB need rates > 0");
    if (c.keep_draws && ((double) d.I * K > INT_MAX || (double) d.J * L > INT_MAX))
        Rf_error("the factors are too large to keep their draws; use keep = \"summary\"");
    const int n = c.n, nl = ard ? K + L : 0, nd = c.keep_draws ? n / c.thin : 0;
    int nprotect = 0;
    SEXP v[6];
    v[0] = PROTECT(Rf_allocMatrix(REALSXP, n, 4)); nprotect++;
    v[1] = PROTECT(Rf_allocMatrix(REALSXP, n, nl)); nprotect++;
    v[2] = PROTECT(Rf_allocMatrix(REALSXP, nd ? d.I * K : 0, nd)); nprotect++;
    v[3] = PROTECT(Rf_allocMatrix(REALSXP, nd ? K * L : 0, nd)); nprotect++;
    v[4] = PROTECT(Rf_allocMatrix(REALSXP, nd ? d.J * L : 0, nd)); nprotect++;
    nmtf_out out = {REAL(v[0]), REAL(v[1]), REAL(v[2]), REAL(v[3]), REAL(v[4]), 0, 0};
    bnmf_nmtf_sweeps(&d, &pr, &st, &c, &out);
    if (out.done < n) {
        /* converged early: trim the traces */
        for (int t = 0; t < 2; t++) {
            const int nc = t == 0 ? 4 : nl;
            SEXP m = PROTECT(Rf_allocMatrix(REALSXP, out.done, nc)); nprotect++;
            for (int col = 0; col < nc; col++)
                memcpy(REAL(m) + (size_t) col * out.done, REAL(v[t]) + (size_t) col * n,
                       sizeof(double) * out.done);
            v[t] = m;
        }
    }
    v[5] = PROTECT(Rf_ScalarLogical(out.converged)); nprotect++;
    const char *names[] = {"trace", "lambda", "F_draws", "S_draws", "G_draws", "converged"};
    SEXP res = bnmf_named_list(6, names, v);
    UNPROTECT(nprotect);
    return res;
}
