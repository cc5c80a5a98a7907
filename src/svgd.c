/*
 * svgd.c -- the directions of Stein variational gradient descent (SVGD, Liu
 * and Wang 2016) and the closed-form gradient of the kernel Stein
 * discrepancy w'Kw with respect to the particles (DSGD), for the block
 * inverse multiquadric base kernel of stein.c (Masood & Doshi-Velez,
 * equation 7):
 *
 *   k(x, y) = sum_b a_b u_b^beta_b,  r_b = x_b - y_b,  u_b = c_b^2 + |r_b|^2.
 *
 * Per block and pair (m, n), with r = x_m - x_n (block b):
 *   grad_x k = phi r,  grad_y k = -phi r,      phi = 2 a beta u^(beta-1),
 *   grad_x phi = psi r,                        psi = 4 a beta (beta-1) u^(beta-2),
 *   tr_b = sum_i d^2 k / dx_i dy_i = -2 a beta (2 (beta-1) u^(beta-2) |r|^2 + d_b u^(beta-1)),
 *   d tr_b / du = -2 a beta (beta-1) (2 (beta-2) u^(beta-3) |r|^2 + (2 + d_b) u^(beta-2)).
 *
 * SVGD. The direction of particle m (weights w, 1/M in SVGD) is
 *   v_m = sum_n w_n [ k(x_n, x_m) s(x_n) + grad_{x_n} k(x_n, x_m) ]
 *       = sum_n w_n [ k_mn s_n - phi_mn (x_m - x_n) ]            (blockwise).
 *
 * DSGD. With K_p the Stein kernel of stein.c and s = grad log p,
 *   d/dx_m w'Kw = 2 w_m sum_n w_n d_1 K_p(x_m, x_n) = 2 w_m (Hess_m v_m + g_m),
 * where Hess_m is the Hessian of log p at x_m (the only part that depends on
 * the model: the caller multiplies it with v_m, the same vector as SVGD's),
 * and block b of g_m is
 *   g_m = sum_n w_n [ A_mn (x_m - x_n) + phi_mn (s_n - s_m) ],
 *   A_mn = phi_mn <s_m, s_n> + psi_mn <s_n - s_m, x_m - x_n>_b + 2 dtr_b/du,
 * the derivative of  <s_m, s_n> k + <s_n, grad_x k> + <s_m, grad_y k> + tr
 * with respect to x_m with the scores held fixed.
 *
 * Every sum over n is a matrix product (dgemm): for a block with particles
 * T (d x M) and scores S, and an M x M coefficient matrix C,
 *   sum_n C_mn (x_m - x_n) = x_m rowsum(C)_m - (T C')_m,  sum_n C_mn s_n = (S C')_m,
 * so the cost is O(d M^2) flops in BLAS, as for the kernel matrix itself.
 * Differences are unchanged when T is centred, which avoids cancellation.
 */
#include "bnmf.h"
#include "bnmf_call.h"
#include "particles.h"

/* Centre the rows of the d x M block T (in place). */
static void centre_rows(double *T, int d, int M)
{
    for (int i = 0; i < d; i++) {
        double mu = 0.0;
        for (int m = 0; m < M; m++) mu += T[i + (size_t) m * d];
        mu /= M;
        for (int m = 0; m < M; m++) T[i + (size_t) m * d] -= mu;
    }
}

/* out (d x M) += alpha * (X C' - X diag(rowsum(C))) for `minus_self`, or
 * alpha * X C' otherwise: column m gets alpha sum_n C_mn (x_n [- x_m]). */
static void pair_sum(const double *X, const double *C, int d, int M, double alpha,
                     int minus_self, double *out)
{
    const double one = 1.0;
    F77_CALL(dgemm)("N", "T", &d, &M, &M, &alpha, X, &d, C, &M, &one, out, &d FCONE FCONE);
    if (!minus_self) return;
    for (int m = 0; m < M; m++) {
        double rs = 0.0;
        for (int n = 0; n < M; n++) rs += C[m + (size_t) n * M];
        for (int i = 0; i < d; i++) out[i + (size_t) m * d] -= alpha * rs * X[i + (size_t) m * d];
    }
}

/**
 * SVGD directions and the score-fixed part of the gradient of w'Kw.
 * @param T   B pointers to d_b x M particle blocks (centred in place)
 * @param S   B pointers to d_b x M score blocks
 * @param d   B block lengths
 * @param par 3 B kernel parameters c_b, beta_b, a_b
 * @param w   M weights
 * @param V   B pointers to d_b x M outputs: v_m (see above)
 * @param G   B pointers to d_b x M outputs: g_m, or NULL (SVGD only)
 */
void bnmf_stein_directions(double **T, double **S, const int *d, int B, int M,
                           const double *par, const double *w, double **V, double **G)
{
    const size_t MM = (size_t) M * M;
    const double one = 1.0, zero = 0.0;
    double *SS = (double *) R_alloc(MM, sizeof(double));   /* <s_m, s_n> all blocks */
    double *kb = (double *) R_alloc(MM, sizeof(double));   /* k(x_m, x_n) */
    double *Gr = (double *) R_alloc(MM, sizeof(double));
    double *P = (double *) R_alloc(MM, sizeof(double));
    double *C = (double *) R_alloc(MM, sizeof(double));
    double *r2 = (double *) R_alloc(MM * B, sizeof(double));
    double *sd = (double *) R_alloc(MM * B, sizeof(double));
    for (size_t i = 0; i < MM; i++) SS[i] = kb[i] = 0.0;
    /* Pass 1: pairwise squared distances, score differences, base kernel. */
    for (int b = 0; b < B; b++) {
        int db = d[b];
        double *rb = r2 + MM * b, *sb = sd + MM * b;
        if (db == 0) {
            for (size_t i = 0; i < MM; i++) rb[i] = sb[i] = 0.0;
            continue;
        }
        centre_rows(T[b], db, M);
        F77_CALL(dgemm)("T", "N", &M, &M, &db, &one, T[b], &db, T[b], &db, &zero, Gr, &M FCONE FCONE);
        F77_CALL(dgemm)("T", "N", &M, &M, &db, &one, S[b], &db, T[b], &db, &zero, P, &M FCONE FCONE);
        F77_CALL(dgemm)("T", "N", &M, &M, &db, &one, S[b], &db, S[b], &db, &one, SS, &M FCONE FCONE);
        const double c2 = par[3 * b] * par[3 * b], be = par[3 * b + 1], a = par[3 * b + 2];
        for (int n = 0; n < M; n++) {
            for (int m = 0; m < M; m++) {
                const size_t mn = m + (size_t) n * M;
                double r = (m == n) ? 0.0 :
                    Gr[m + (size_t) m * M] + Gr[n + (size_t) n * M] - 2.0 * Gr[mn];
                if (r < 0.0) r = 0.0;
                rb[mn] = r;
                /* <s_n - s_m, x_m - x_n>, P[x, y] = <s_x, t_y> */
                sb[mn] = (m == n) ? 0.0 :
                    P[n + (size_t) m * M] - P[n + (size_t) n * M] -
                    P[m + (size_t) m * M] + P[m + (size_t) n * M];
                kb[mn] += a * pow(c2 + r, be);
            }
        }
    }
    /* Pass 2: the directions and gradients, block by block. */
    for (int b = 0; b < B; b++) {
        const int db = d[b];
        if (db == 0) continue;
        const double c2 = par[3 * b] * par[3 * b], be = par[3 * b + 1], a = par[3 * b + 2];
        const double *rb = r2 + MM * b, *sb = sd + MM * b;
        for (size_t i = 0; i < (size_t) db * M; i++) V[b][i] = 0.0;
        /* v_m = sum_n w_n k_mn s_n - sum_n w_n phi_mn (x_m - x_n) */
        for (int n = 0; n < M; n++)
            for (int m = 0; m < M; m++) C[m + (size_t) n * M] = w[n] * kb[m + (size_t) n * M];
        pair_sum(S[b], C, db, M, 1.0, 0, V[b]);
        for (int n = 0; n < M; n++)
            for (int m = 0; m < M; m++) {
                const size_t mn = m + (size_t) n * M;
                C[mn] = w[n] * 2.0 * a * be * pow(c2 + rb[mn], be - 1.0);
            }
        pair_sum(T[b], C, db, M, 1.0, 1, V[b]);
        if (G == NULL) continue;
        for (size_t i = 0; i < (size_t) db * M; i++) G[b][i] = 0.0;
        /* phi_mn (s_n - s_m): C still holds w_n phi_mn */
        pair_sum(S[b], C, db, M, 1.0, 1, G[b]);
        /* A_mn (x_m - x_n) = -A_mn (x_n - x_m) */
        for (int n = 0; n < M; n++)
            for (int m = 0; m < M; m++) {
                const size_t mn = m + (size_t) n * M;
                const double u = c2 + rb[mn];
                const double ub2 = pow(u, be - 2.0);
                const double phi = 2.0 * a * be * ub2 * u;
                const double psi = 4.0 * a * be * (be - 1.0) * ub2;
                const double dtr = -2.0 * a * be * (be - 1.0) *
                    (2.0 * (be - 2.0) * (ub2 / u) * rb[mn] + (2.0 + db) * ub2);
                C[mn] = w[n] * (phi * SS[mn] + psi * sb[mn] + 2.0 * dtr);
            }
        pair_sum(T[b], C, db, M, -1.0, 1, G[b]);
        R_CheckUserInterrupt();
    }
}

SEXP bnmf_stein_directions_call(SEXP theta, SEXP score, SEXP par, SEXP w, SEXP gradient)
{
    int nprotect = 0;
    if (!Rf_isNewList(theta) || !Rf_isNewList(score) || !Rf_isReal(par) || !Rf_isReal(w) ||
        !Rf_isLogical(gradient) || Rf_length(gradient) != 1)
        Rf_error("bnmf internal error: stein_directions needs two lists, two double vectors and a flag");
    const int B = Rf_length(theta);
    if (Rf_length(score) != B || Rf_length(par) != 3 * B || B < 1)
        Rf_error("bnmf internal error: stein_directions got blocks of mismatched number");
    const int grad = LOGICAL(gradient)[0] == TRUE;
    double **T = (double **) R_alloc(B, sizeof(double *));
    double **S = (double **) R_alloc(B, sizeof(double *));
    double **V = (double **) R_alloc(B, sizeof(double *));
    double **G = grad ? (double **) R_alloc(B, sizeof(double *)) : NULL;
    int *d = (int *) R_alloc(B, sizeof(int));
    const int M = bnmf_stein_blocks(theta, score, B, T, S, d, "stein_directions");
    if (Rf_length(w) != M)
        Rf_error("bnmf internal error: stein_directions needs M weights");
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2)); nprotect++;
    SEXP vl = PROTECT(Rf_allocVector(VECSXP, B)); nprotect++;
    SEXP gl = PROTECT(Rf_allocVector(VECSXP, grad ? B : 0)); nprotect++;
    SET_VECTOR_ELT(out, 0, vl);
    SET_VECTOR_ELT(out, 1, gl);
    for (int b = 0; b < B; b++) {
        SET_VECTOR_ELT(vl, b, Rf_allocMatrix(REALSXP, d[b], M));
        V[b] = REAL(VECTOR_ELT(vl, b));
        if (grad) {
            SET_VECTOR_ELT(gl, b, Rf_allocMatrix(REALSXP, d[b], M));
            G[b] = REAL(VECTOR_ELT(gl, b));
        }
    }
    bnmf_stein_directions(T, S, d, B, M, REAL(par), REAL(w), V, G);
    UNPROTECT(nprotect);
    return out;
}
