/*
 * simplex_qp.c -- minimise w'Kw over the probability simplex, exactly.
 *
 *   minimise w'Kw  subject to  w_m >= 0,  sum_m w_m = 1,   K symmetric PSD.
 *
 * KKT conditions, with g = Kw and lambda = w'Kw (the optimal value):
 *   g_m = lambda where w_m > 0,   g_m >= lambda where w_m = 0.
 *
 * Primal active-set method (Nocedal & Wright, Algorithm 16.3), specialised
 * to the simplex. The free set F holds the indices allowed to be positive;
 * the equality-constrained problem on F,
 *
 *   [ K_FF  1 ] [  w_F    ]   [ 0 ]
 *   [ 1'    0 ] [ -lambda ] = [ 1 ],
 *
 * is solved exactly (LU with partial pivoting, dgesv, plus one step of
 * iterative refinement). If its solution p is non-negative it becomes the
 * iterate and the index with the most negative g_m - lambda outside F, if
 * any, joins F; otherwise the iterate moves towards p until the first
 * coordinate hits zero and that index leaves F. Every step lowers w'Kw (or
 * keeps it and shrinks F), so the method ends in finitely many steps at a
 * point satisfying the KKT conditions, which are checked on exit.
 *
 * K is scaled by its largest diagonal entry before the solve, so the
 * tolerances are relative.
 */
#include "bnmf.h"
#include "bnmf_call.h"
#include "nmf.h"
#include "particles.h"

/* Solve the equality-constrained problem on the free set F (nf indices).
 * Returns 0 on success (p: nf values, *lam), 1 if the KKT matrix is singular. */
static int eqp_solve(const double *K, int M, const int *F, int nf, double *p,
                     double *lam, double *A, double *LU, double *x, double *r,
                     int *ipiv)
{
    int n = nf + 1, one = 1, info = 0;
    for (int j = 0; j < nf; j++) {
        for (int i = 0; i < nf; i++) A[i + (size_t) j * n] = K[F[i] + (size_t) F[j] * M];
        A[nf + (size_t) j * n] = 1.0;
        A[j + (size_t) nf * n] = 1.0;
    }
    A[nf + (size_t) nf * n] = 0.0;
    for (size_t i = 0; i < (size_t) n * n; i++) LU[i] = A[i];
    for (int i = 0; i < n; i++) x[i] = (i == nf) ? 1.0 : 0.0;
    F77_CALL(dgesv)(&n, &one, LU, &n, ipiv, x, &n, &info);
    if (info != 0) return 1;
    /* One step of iterative refinement: r = rhs - A x, x += A^-1 r. */
    for (int i = 0; i < n; i++) {
        double s = (i == nf) ? 1.0 : 0.0;
        for (int j = 0; j < n; j++) s -= A[i + (size_t) j * n] * x[j];
        r[i] = s;
    }
    F77_CALL(dgetrs)("N", &n, &one, LU, &n, ipiv, r, &n, &info FCONE);
    if (info != 0) return 1;
    for (int i = 0; i < n; i++) x[i] += r[i];
    for (int i = 0; i < nf; i++) p[i] = x[i];
    *lam = -x[nf];
    for (int i = 0; i < n; i++) if (!R_FINITE(x[i])) return 1;
    return 0;
}

/* g = K w using the free set only (w is zero elsewhere); returns w'Kw. */
static double grad_free(const double *K, int M, const double *w, const int *F,
                        int nf, double *g)
{
    for (int m = 0; m < M; m++) g[m] = 0.0;
    for (int j = 0; j < nf; j++) {
        const double wj = w[F[j]];
        const double *col = K + (size_t) F[j] * M;
        for (int m = 0; m < M; m++) g[m] += col[m] * wj;
    }
    double v = 0.0;
    for (int j = 0; j < nf; j++) v += w[F[j]] * g[F[j]];
    return v;
}

/**
 * The KKT residual of w for min w'Kw on the simplex, relative to max |K_mm|:
 * the largest of |sum w - 1|, max(-w_m, 0), |g_m - lambda| over w_m > 0 and
 * max(lambda - g_m, 0) over w_m = 0.
 */
double bnmf_simplex_kkt(const double *K, int M, const double *w)
{
    double scale = 0.0, sw = 0.0, lam = 0.0, res = 0.0;
    for (int m = 0; m < M; m++) {
        const double kmm = fabs(K[m + (size_t) m * M]);
        if (kmm > scale) scale = kmm;
    }
    if (!(scale > 0.0)) scale = 1.0;
    double *g = (double *) R_alloc(M, sizeof(double));
    for (int m = 0; m < M; m++) {
        double s = 0.0;
        for (int n = 0; n < M; n++) s += K[m + (size_t) n * M] * w[n];
        g[m] = s / scale;
        sw += w[m];
    }
    for (int m = 0; m < M; m++) lam += w[m] * g[m];
    res = fabs(sw - 1.0);
    for (int m = 0; m < M; m++) {
        double e = (w[m] > 0.0) ? fabs(g[m] - lam) : fmax(lam - g[m], 0.0);
        if (w[m] < 0.0) e = fmax(e, -w[m]);
        if (e > res) res = e;
    }
    return res;
}

/**
 * Minimise w'Kw over the simplex by the primal active-set method.
 * @param K0     M x M symmetric PSD matrix
 * @param w      output: M weights
 * @param tol    relative tolerance on g_m - lambda for adding an index
 * @param maxit  largest number of active-set steps
 * @param iter   output: steps taken
 * @return 0 when the KKT conditions hold, 1 when the iteration limit was
 *         reached, 2 when a singular equality problem stopped the method
 */
int bnmf_simplex_qp(const double *K0, int M, double *w, double tol, int maxit,
                    int *iter)
{
    double scale = 0.0;
    int best = 0;
    for (int m = 0; m < M; m++) {
        const double kmm = K0[m + (size_t) m * M];
        if (fabs(kmm) > scale) scale = fabs(kmm);
        if (kmm < K0[best + (size_t) best * M]) best = m;
    }
    if (!(scale > 0.0)) scale = 1.0;
    const size_t MM = (size_t) M * M, n1 = (size_t) (M + 1);
    double *K = (double *) R_alloc(MM, sizeof(double));
    for (size_t i = 0; i < MM; i++) K[i] = K0[i] / scale;
    double *A = (double *) R_alloc(n1 * n1, sizeof(double));
    double *LU = (double *) R_alloc(n1 * n1, sizeof(double));
    double *x = (double *) R_alloc(n1, sizeof(double));
    double *r = (double *) R_alloc(n1, sizeof(double));
    double *p = (double *) R_alloc(M, sizeof(double));
    double *g = (double *) R_alloc(M, sizeof(double));
    int *ipiv = (int *) R_alloc(n1, sizeof(int));
    int *F = (int *) R_alloc(M, sizeof(int));
    int *inF = (int *) R_alloc(M, sizeof(int));
    for (int m = 0; m < M; m++) { w[m] = 0.0; inF[m] = 0; }
    /* Start at the vertex with the smallest diagonal entry. */
    int nf = 1, status = 1, last = -1;
    F[0] = best; inF[best] = 1; w[best] = 1.0;
    int it;
    for (it = 0; it < maxit; it++) {
        double lam;
        if (eqp_solve(K, M, F, nf, p, &lam, A, LU, x, r, ipiv)) {
            /* Singular: the last index added duplicates the free set's
             * span; drop it (w is still the previous, feasible iterate). */
            if (last >= 0 && nf > 1 && F[nf - 1] == last && w[last] == 0.0) {
                inF[last] = 0; nf--;
            }
            status = 2;
            break;
        }
        int neg = 0;
        for (int j = 0; j < nf; j++) if (p[j] < 0.0) { neg = 1; break; }
        if (!neg) {
            for (int j = 0; j < nf; j++) w[F[j]] = p[j];
            const double val = grad_free(K, M, w, F, nf, g);
            int add = -1;
            double most = -tol;
            for (int m = 0; m < M; m++) {
                if (inF[m]) continue;
                const double e = g[m] - val;
                if (e < most) { most = e; add = m; }
            }
            if (add < 0) { status = 0; break; }
            F[nf++] = add; inF[add] = 1; last = add;
        } else {
            /* Move towards p until the first coordinate reaches zero. */
            double alpha = 1.0;
            for (int j = 0; j < nf; j++) {
                const double wj = w[F[j]];
                if (p[j] < 0.0) {
                    const double a = wj / (wj - p[j]);
                    if (a < alpha) alpha = a;
                }
            }
            for (int j = 0; j < nf; j++) {
                const double wj = w[F[j]];
                w[F[j]] = wj + alpha * (p[j] - wj);
            }
            /* Drop the coordinates that reached zero (at least one). */
            int k = 0;
            for (int j = 0; j < nf; j++) {
                const int m = F[j];
                if (p[j] < 0.0 && w[m] <= 1e-15 * (1.0 + fabs(w[m]))) {
                    w[m] = 0.0; inF[m] = 0;
                } else {
                    F[k++] = m;
                }
            }
            if (k == nf) {
                /* Rounding kept every coordinate: drop the blocking one. */
                int jb = -1; double ab = R_PosInf;
                for (int j = 0; j < nf; j++) {
                    if (p[j] < 0.0) {
                        const double wj = w[F[j]];
                        if (wj < ab) { ab = wj; jb = j; }
                    }
                }
                const int m = F[jb];
                w[m] = 0.0; inF[m] = 0;
                for (int j = jb; j < nf - 1; j++) F[j] = F[j + 1];
                k = nf - 1;
            }
            nf = k;
            /* Renormalise against rounding drift. */
            double s = 0.0;
            for (int j = 0; j < nf; j++) s += w[F[j]];
            for (int j = 0; j < nf; j++) w[F[j]] /= s;
        }
        if ((it & 63) == 63) R_CheckUserInterrupt();
    }
    *iter = it;
    /* Exact zeros outside the free set, and an exact sum of one. */
    double s = 0.0;
    for (int m = 0; m < M; m++) {
        if (!inF[m] || w[m] < 0.0) w[m] = 0.0;
        s += w[m];
    }
    for (int m = 0; m < M; m++) w[m] /= s;
    return status;
}

SEXP bnmf_simplex_qp_call(SEXP K, SEXP tol, SEXP maxit)
{
    int nprotect = 0;
    if (!Rf_isReal(K) || !Rf_isMatrix(K) || Rf_nrows(K) != Rf_ncols(K) || Rf_nrows(K) < 1)
        Rf_error("bnmf internal error: simplex_qp needs a square double matrix");
    const int M = Rf_nrows(K);
    int iter = 0;
    SEXP w = PROTECT(Rf_allocVector(REALSXP, M)); nprotect++;
    const int status = bnmf_simplex_qp(REAL(K), M, REAL(w), Rf_asReal(tol),
                                       Rf_asInteger(maxit), &iter);
    const double kkt = bnmf_simplex_kkt(REAL(K), M, REAL(w));
    SEXP v[4];
    v[0] = w;
    v[1] = PROTECT(Rf_ScalarInteger(status)); nprotect++;
    v[2] = PROTECT(Rf_ScalarInteger(iter)); nprotect++;
    v[3] = PROTECT(Rf_ScalarReal(kkt)); nprotect++;
    const char *names[] = {"weights", "status", "iterations", "kkt"};
    SEXP out = bnmf_named_list(4, names, v);
    UNPROTECT(nprotect);
    return out;
}
