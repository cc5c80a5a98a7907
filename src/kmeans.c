/*
 * kmeans.c -- Lloyd's k-means of the rows of X (dense, or sparse CSC: never
 * densified), the start of a tri-factorisation's F and G (nmtf_init() in
 * R/engine-nmtf.R, "kmeans").
 *
 * An iteration costs one product X C' (the squared distances need only it,
 * the rows' and the centres' sums of squares) and one pass over X for the
 * centres' sums; the former R loop also took crossprod(Z, X) with a dense
 * n x k indicator matrix Z (a second product) and several n x k arrays.
 *
 * Every number is formed as that R loop formed it under R's reference BLAS,
 * so the clusters are the same there: X C' by the same dgemm call as
 * `X %*% t(C)` (dense) or with each entry summed over the columns in order
 * (sparse, as Matrix's product); a centre's sum of squares in long double
 * over its columns in order (rowSums); the distances
 * ((-2 x_i'c) + |c|^2) + |x_i|^2 and the first smallest (max.col(-d, ties
 * = "first")); a centre's sums over its rows in order (crossprod(Z, X), one
 * term per member), divided by the count.
 */
#include "bnmf_call.h"
#include "nmf.h"

/**
 * Lloyd's iterations from the centres C until no row changes cluster or
 * `iter` iterations have run.
 * @param d      X's shape (I rows, J columns, K = k clusters) and, when
 *               sparse, its row indices and column pointers
 * @param x      X's values (I x J column-major, or the stored values)
 * @param norms  the rows' sums of squares (I)
 * @param C      k x J: the start on entry, the centres on return (a cluster
 *               left empty keeps its centre)
 * @param cl     receives the clusters, 1-based (I)
 * @return the iterations run
 */
static int kmeans_rows(const nmf_data *d, const double *x, const double *norms, double *C,
                       int iter, int *cl)
{
    const int n = d->I, J = d->J, k = d->K;
    double *P = (double *) R_alloc((size_t) n * k, sizeof(double));
    double *Ct = d->sparse ? NULL : (double *) R_alloc((size_t) J * k, sizeof(double));
    double *sums = (double *) R_alloc((size_t) k * J, sizeof(double));
    double *cn = (double *) R_alloc(k, sizeof(double));
    double *cnt = (double *) R_alloc(k, sizeof(double));
    int *cur = d->sparse ? (int *) R_alloc(J, sizeof(int)) : NULL;
    for (int i = 0; i < n; i++) cl[i] = 0;
    int it = 0;
    while (it < iter) {
        R_CheckUserInterrupt();
        it++;
        /* P = X C': n x k (dense) or, sparse, k x n (row i's k values
         * together) */
        if (d->sparse) {
            bnmf_x_ht_rows(d, x, C, P, cur);
        } else {
            const double one = 1.0, zero = 0.0;
            bnmf_transpose(C, k, J, Ct);
            F77_CALL(dgemm)("N", "N", &n, &k, &J, &one, x, &n, Ct, &J, &zero, P, &n
                            FCONE FCONE);
        }
        for (int c = 0; c < k; c++) {
            long double s = 0.0;
            for (int j = 0; j < J; j++) {
                const double v = C[c + (size_t) j * k];
                s += v * v;
            }
            cn[c] = (double) s;
        }
        int moved = 0;
        for (int i = 0; i < n; i++) {
            int best = 0;
            double dbest = 0.0;
            for (int c = 0; c < k; c++) {
                const double p = d->sparse ? P[c + (size_t) i * k] : P[i + (size_t) c * n];
                const double dist = (-2.0 * p + cn[c]) + norms[i];
                if (c == 0 || dist < dbest) {
                    dbest = dist;
                    best = c;
                }
            }
            if (cl[i] != best + 1) {
                cl[i] = best + 1;
                moved = 1;
            }
        }
        if (!moved) break;
        for (int c = 0; c < k; c++) cnt[c] = 0.0;
        for (int i = 0; i < n; i++) cnt[cl[i] - 1] += 1.0;
        for (size_t t = 0; t < (size_t) k * J; t++) sums[t] = 0.0;
        for (int j = 0; j < J; j++) {
            double *sj = sums + (size_t) j * k;
            if (d->sparse) {
                for (int p = d->xp[j]; p < d->xp[j + 1]; p++) sj[cl[d->xi[p]] - 1] += x[p];
            } else {
                const double *xj = x + (size_t) j * n;
                for (int i = 0; i < n; i++) sj[cl[i] - 1] += xj[i];
            }
        }
        for (int j = 0; j < J; j++)
            for (int c = 0; c < k; c++)
                if (cnt[c] > 0.0) C[c + (size_t) j * k] = sums[c + (size_t) j * k] / cnt[c];
    }
    return it;
}

/* .Call entry: X (a double matrix, or list(i, p, x, Dim) of a dgCMatrix),
 * norms (its rows' sums of squares), centres (k x J double, the start; not
 * modified), iter -> list(cluster = 1-based integers, centres, iterations).
 * The R wrapper (kmeans_rows) checks the values; here the shapes. */
SEXP bnmf_kmeans_rows_call(SEXP X, SEXP norms, SEXP centres, SEXP iter)
{
    nmf_data d = {0};
    const double *x;
    bnmf_read_kmeans_x(X, &d, &x);
    if (TYPEOF(centres) != REALSXP || !Rf_isMatrix(centres) || Rf_ncols(centres) != d.J ||
        Rf_nrows(centres) < 1)
        Rf_error("kmeans_rows: `centres` must be a double matrix with the columns of `X`");
    if (TYPEOF(norms) != REALSXP || XLENGTH(norms) != d.I)
        Rf_error("kmeans_rows: `norms` must hold one double a row of `X`");
    if (!Rf_isInteger(iter) || XLENGTH(iter) != 1 || INTEGER(iter)[0] < 1)
        Rf_error("kmeans_rows: `iter` must be one positive integer");
    d.K = Rf_nrows(centres);
    const char *nms[] = {"cluster", "centres", "iterations", ""};
    SEXP out = PROTECT(Rf_mkNamed(VECSXP, nms));
    SEXP cl = PROTECT(Rf_allocVector(INTSXP, d.I));
    SEXP C = PROTECT(Rf_duplicate(centres));
    SET_VECTOR_ELT(out, 0, cl);
    SET_VECTOR_ELT(out, 1, C);
    const int it = kmeans_rows(&d, x, REAL(norms), REAL(C), INTEGER(iter)[0], INTEGER(cl));
    SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(it));
    UNPROTECT(3);
    return out;
}
