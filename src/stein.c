/*
 * stein.c -- the Stein kernel matrix of a set of particles, in closed form.
 *
 * For a target density p with score s(theta) = grad log p(theta) and a base
 * kernel k, the Stein kernel (Chwialkowski et al. 2016; Liu et al. 2016) is
 *
 *   K_p(x, y) = s(x)'s(y) k(x, y) + s(y)' grad_x k(x, y) + s(x)' grad_y k(x, y)
 *               + sum_i d^2 k(x, y) / dx_i dy_i,
 *
 * and the kernel Stein discrepancy of the weighted particles (theta_m, w_m)
 * is w'Kw with K_mn = K_p(theta_m, theta_n).
 *
 * The base kernel is a sum over blocks b of theta (for NMF: the basis W and
 * the coefficients H, Masood & Doshi-Velez equation 7) of scaled inverse
 * multiquadrics
 *
 *   k_b(x, y) = a_b (c_b^2 + |r|^2)^beta_b,   r = x_b - y_b,  u = c_b^2 + |r|^2.
 *
 * Its derivatives are grad_x k_b = 2 a b u^(b-1) r = -grad_y k_b and
 *
 *   sum_i d^2 k_b / dx_i dy_i = -2 a b (2 (b - 1) u^(b-2) |r|^2 + d_b u^(b-1)),
 *
 * with d_b the length of block b, so
 *
 *   K_p(x, y) = s(x)'s(y) sum_b k_b
 *             + sum_b [ 2 a b u^(b-1) <s_b(y) - s_b(x), x_b - y_b>
 *                       - 2 a b (2 (b - 1) u^(b-2) |r|^2 + d_b u^(b-1)) ].
 *
 * Every pairwise quantity comes from three M x M Gram-type products per
 * block (dsyrk / dgemm): T'T (distances), S'T (score-difference terms) and
 * S'S (score products), with T the block's particles after subtracting their
 * mean (which leaves every difference unchanged and avoids cancellation in
 * |x|^2 + |y|^2 - 2 x'y). The cost is O(d M^2) flops in BLAS.
 */
#include "bnmf.h"
#include "bnmf_call.h"
#include "particles.h"

/**
 * Add the Stein-kernel terms of one block to K, and its base kernel to k.
 * @param T   d x M particles of the block (column m is particle m); centred
 *            in place
 * @param S   d x M scores of the block
 * @param d,M sizes
 * @param c,b,a kernel parameters of the block
 * @param SS  M x M accumulator of S'S over the blocks (updated)
 * @param kb  M x M accumulator of the base kernel (updated)
 * @param K   M x M accumulator of the gradient and trace terms (updated)
 * @param G,P M x M scratch
 */
static void stein_block(double *T, const double *S, int d, int M, double c,
                        double b, double a, double *SS, double *kb, double *K,
                        double *G, double *P)
{
    const double one = 1.0, zero = 0.0;
    if (d == 0) return;
    for (int i = 0; i < d; i++) {
        double mu = 0.0;
        for (int m = 0; m < M; m++) mu += T[i + (size_t) m * d];
        mu /= M;
        for (int m = 0; m < M; m++) T[i + (size_t) m * d] -= mu;
    }
    /* G = T'T (upper triangle), P = S'T, SS += S'S (upper triangle). */
    F77_CALL(dsyrk)("U", "T", &M, &d, &one, T, &d, &zero, G, &M FCONE FCONE);
    F77_CALL(dgemm)("T", "N", &M, &M, &d, &one, S, &d, T, &d, &zero, P, &M FCONE FCONE);
    F77_CALL(dsyrk)("U", "T", &M, &d, &one, S, &d, &one, SS, &M FCONE FCONE);
    const double c2 = c * c, dd = (double) d;
    for (int n = 0; n < M; n++) {
        for (int m = 0; m <= n; m++) {
            double r2 = (m == n) ? 0.0 :
                G[m + (size_t) m * M] + G[n + (size_t) n * M] - 2.0 * G[m + (size_t) n * M];
            if (r2 < 0.0) r2 = 0.0;
            const double u = c2 + r2;
            const double ub1 = pow(u, b - 1.0);
            const double ub = ub1 * u;
            /* <s_n - s_m, t_m - t_n> with P[x, y] = <s_x, t_y> */
            const double sd = (m == n) ? 0.0 :
                P[n + (size_t) m * M] - P[n + (size_t) n * M] -
                P[m + (size_t) m * M] + P[m + (size_t) n * M];
            const double grad = 2.0 * a * b * ub1 * sd;
            const double trace = -2.0 * a * b * (2.0 * (b - 1.0) * (ub1 / u) * r2 + dd * ub1);
            kb[m + (size_t) n * M] += a * ub;
            K[m + (size_t) n * M] += grad + trace;
        }
    }
}

/**
 * The M x M Stein kernel matrix of particles split into blocks.
 * @param T   B pointers to d_b x M particle blocks (centred in place)
 * @param S   B pointers to d_b x M score blocks
 * @param d   B block lengths
 * @param par 3 B kernel parameters: c_b, beta_b, a_b for each block
 * @param K   output, M x M
 */
void bnmf_stein_kernel(double **T, double **S, const int *d, int B, int M,
                       const double *par, double *K)
{
    const size_t MM = (size_t) M * M;
    double *SS = (double *) R_alloc(MM, sizeof(double));
    double *kb = (double *) R_alloc(MM, sizeof(double));
    double *G = (double *) R_alloc(MM, sizeof(double));
    double *P = (double *) R_alloc(MM, sizeof(double));
    for (size_t i = 0; i < MM; i++) SS[i] = kb[i] = K[i] = 0.0;
    for (int blk = 0; blk < B; blk++) {
        stein_block(T[blk], S[blk], d[blk], M, par[3 * blk], par[3 * blk + 1],
                    par[3 * blk + 2], SS, kb, K, G, P);
        R_CheckUserInterrupt();
    }
    for (int n = 0; n < M; n++) {
        for (int m = 0; m <= n; m++) {
            const size_t mn = m + (size_t) n * M;
            K[mn] += SS[mn] * kb[mn];
            K[n + (size_t) m * M] = K[mn];
        }
    }
}

/**
 * Read the particle and score blocks of a .Call (lists of d_b x M double
 * matrices): T gets copies of the particles (the kernels centre them in
 * place), S pointers to the scores, d the block lengths. Returns M.
 * @param who the routine's name, for the messages of broken contracts
 */
int bnmf_stein_blocks(SEXP theta, SEXP score, int B, double **T, double **S, int *d,
                      const char *who)
{
    int M = -1;
    for (int b = 0; b < B; b++) {
        SEXP tb = VECTOR_ELT(theta, b), sb = VECTOR_ELT(score, b);
        if (!Rf_isReal(tb) || !Rf_isReal(sb) || !Rf_isMatrix(tb) || !Rf_isMatrix(sb))
            Rf_error("bnmf internal error: %s blocks must be double matrices", who);
        const int db = Rf_nrows(tb), Mb = Rf_ncols(tb);
        if (Rf_nrows(sb) != db || Rf_ncols(sb) != Mb || (M >= 0 && Mb != M))
            Rf_error("bnmf internal error: %s blocks of mismatched size", who);
        M = Mb;
        d[b] = db;
        T[b] = (double *) R_alloc((size_t) db * Mb, sizeof(double));
        const double *src = REAL(tb);
        for (size_t i = 0; i < (size_t) db * Mb; i++) T[b][i] = src[i];
        S[b] = REAL(sb);
    }
    if (M < 1) Rf_error("bnmf internal error: %s needs at least one particle", who);
    return M;
}

SEXP bnmf_stein_kernel_call(SEXP theta, SEXP score, SEXP par)
{
    int nprotect = 0;
    if (!Rf_isNewList(theta) || !Rf_isNewList(score) || !Rf_isReal(par))
        Rf_error("bnmf internal error: stein_kernel needs two lists and a double vector");
    const int B = Rf_length(theta);
    if (Rf_length(score) != B || Rf_length(par) != 3 * B || B < 1)
        Rf_error("bnmf internal error: stein_kernel got blocks of mismatched number");
    double **T = (double **) R_alloc(B, sizeof(double *));
    double **S = (double **) R_alloc(B, sizeof(double *));
    int *d = (int *) R_alloc(B, sizeof(int));
    const int M = bnmf_stein_blocks(theta, score, B, T, S, d, "stein_kernel");
    SEXP K = PROTECT(Rf_allocMatrix(REALSXP, M, M)); nprotect++;
    bnmf_stein_kernel(T, S, d, B, M, REAL(par), REAL(K));
    UNPROTECT(nprotect);
    return K;
}
