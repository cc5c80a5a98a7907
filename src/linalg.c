/*
 * linalg.c -- the products a sweep needs, dense (BLAS) or sparse (CSC).
 *
 * A sweep of the NMF samplers needs, per half sweep, one product of the data
 * with a factor and one K x K Gram matrix:
 *
 *   D = X H'   (I x K)      F = W' X   (K x J)      H H',  W' W   (K x K)
 *
 * For dense X the products go to dgemm; for a sparse X (compressed sparse
 * columns, the layout of Matrix::dgCMatrix) they cost O(nnz K) and X is
 * never densified. H H' goes to dsyrk, W' W to bnmf_gram_cols (its own
 * blocks: W is tall, where dsyrk was slow).
 */
#include <float.h>
#include "bnmf.h"
#include "nmf.h"
#include "bnmf_call.h"
#include "vlog.h"

/** Fill the lower triangle of a K x K matrix from its upper triangle. */
void bnmf_symmetrise(double *G, int K)
{
    for (int b = 0; b < K; b++)
        for (int a = b + 1; a < K; a++)
            G[a + (size_t) b * K] = G[b + (size_t) a * K];
}

/** G = H H' for H of size K x J (column-major), by dsyrk. */
void bnmf_gram_rows(const double *H, int K, int J, double *G)
{
    const double one = 1.0, zero = 0.0;
    if (J == 0) {
        for (int i = 0; i < K * K; i++) G[i] = 0.0;
        return;
    }
    F77_CALL(dsyrk)("U", "N", &K, &J, &one, H, &K, &zero, G, &K FCONE FCONE);
    bnmf_symmetrise(G, K);
}

#define GRAM_CHUNK 256 /* rows of W a pass of gram_cols_blocks takes (a multiple of 4) */

#if defined(__GNUC__)

/* G[a, b] += sum over rows i0..i0+n-1 (n a multiple of 4) of W[i, a] W[i, b]
 * for a <= b, by blocks of two columns a times four columns b: eight sums
 * of four lanes (rows i = 0, 1, 2, 3 mod 4) in registers while the block
 * runs down the rows, then each added to G as (l0 + l1) + (l2 + l3). The
 * columns past K read `zero` (n values). */
static ALWAYS_INLINE void gram_cols_blocks(const double *W, int I, int K, int i0, int n,
                                           const double *zero, double *G)
{
    for (int a = 0; a < K; a += 2) {
        const double *x0 = W + (size_t) a * I + i0;
        const double *x1 = a + 1 < K ? W + (size_t) (a + 1) * I + i0 : zero;
        for (int b = a & ~3; b < K; b += 4) {
            const double *y[4];
            for (int c = 0; c < 4; c++)
                y[c] = b + c < K ? W + (size_t) (b + c) * I + i0 : zero;
            bnmf_v4 s[8];
            for (int c = 0; c < 8; c++) s[c] = (bnmf_v4) {0.0, 0.0, 0.0, 0.0};
            for (int t = 0; t < n; t += 4) {
                const bnmf_v4 u0 = *(const bnmf_v4 *) (x0 + t);
                const bnmf_v4 u1 = *(const bnmf_v4 *) (x1 + t);
                const bnmf_v4 v0 = *(const bnmf_v4 *) (y[0] + t);
                const bnmf_v4 v1 = *(const bnmf_v4 *) (y[1] + t);
                const bnmf_v4 v2 = *(const bnmf_v4 *) (y[2] + t);
                const bnmf_v4 v3 = *(const bnmf_v4 *) (y[3] + t);
                s[0] += u0 * v0;
                s[1] += u0 * v1;
                s[2] += u0 * v2;
                s[3] += u0 * v3;
                s[4] += u1 * v0;
                s[5] += u1 * v1;
                s[6] += u1 * v2;
                s[7] += u1 * v3;
            }
            for (int r = 0; r < 2; r++)
                for (int c = 0; c < 4; c++) {
                    const int ar = a + r, bc = b + c;
                    if (ar > bc || bc >= K) continue;
                    const bnmf_v4 l = s[4 * r + c];
                    G[ar + (size_t) bc * K] += (l[0] + l[1]) + (l[2] + l[3]);
                }
        }
    }
}
#endif

/**
 * G = W' W for W of size I x K (column-major), by chunks of GRAM_CHUNK rows
 * (all K columns of a chunk stay in cache while its blocks of two by four
 * columns run over it: gram_cols_blocks), the last I mod 4 rows added one
 * at a time. The same sums, in the same order, on every processor and with
 * every BLAS. The reference BLAS's dsyrk takes about 10 times as long at
 * every size (100,000 x 10: 4.8 against 0.5 ms), OpenBLAS's longer up to
 * K = 64 (1.2 ms there) and 1/1.45 as long at K = 100, where W'W is a few
 * percent of a sweep (bench/gram-cols.R).
 */
BNMF_CLONES void bnmf_gram_cols(const double *W, int I, int K, double *G)
{
    for (size_t n = 0; n < (size_t) K * K; n++) G[n] = 0.0;
    int i0 = 0;
#if defined(__GNUC__)
    static const double zero[GRAM_CHUNK];
    const int I4 = I & ~3;
    for (; i0 < I4; i0 += GRAM_CHUNK) {
        const int n = I4 - i0 < GRAM_CHUNK ? I4 - i0 : GRAM_CHUNK;
        gram_cols_blocks(W, I, K, i0, n, zero, G);
    }
    i0 = I4;
#endif
    for (int b = 0; b < K; b++)
        for (int a = 0; a <= b; a++) {
            double g = G[a + (size_t) b * K];
            for (int i = i0; i < I; i++) g += W[i + (size_t) a * I] * W[i + (size_t) b * I];
            G[a + (size_t) b * K] = g;
        }
    bnmf_symmetrise(G, K);
}

/* .Call entry (tests): bnmf_gram_cols(W), W a double matrix. */
SEXP bnmf_gram_cols_call(SEXP W)
{
    if (TYPEOF(W) != REALSXP || !Rf_isMatrix(W)) Rf_error("`W` must be a double matrix");
    const int I = Rf_nrows(W), K = Rf_ncols(W);
    SEXP G = PROTECT(Rf_allocMatrix(REALSXP, K, K));
    bnmf_gram_cols(REAL(W), I, K, REAL(G));
    UNPROTECT(1);
    return G;
}

/* Bt (c x r) = B' for B r x c (column-major). */
void bnmf_transpose(const double *B, int r, int c, double *Bt)
{
    for (int j = 0; j < c; j++)
        for (int i = 0; i < r; i++) Bt[j + (size_t) i * c] = B[i + (size_t) j * r];
}

/*
 * The sparse products below visit the stored values column by column, each
 * reading or updating K contiguous values of an I-row array (the product
 * X H', or W') at the value's row: at random rows of an array of I K
 * doubles, 8 MB at I = 100,000, K = 10, where each stored value missed the
 * L2 cache. They take the rows in blocks of SPARSE_BLOCK_BYTES of that
 * array (a cursor per column keeps where each column's values reached:
 * their row indices ascend), so that one block's rows stay in the L2 cache
 * while every column adds its values there. Each entry of the result still
 * gets its terms in the same order (by column, then by row), so the numbers
 * do not depend on the blocks.
 */
#define SPARSE_BLOCK_BYTES (128 * 1024)
#ifndef SPARSE_PREFETCH
#define SPARSE_PREFETCH 8
#endif

/* The rows per block for an I-row array of K doubles a row: I (one block)
 * when the array fits a block, or when the blocks' visits to all J columns
 * would cost more than a quarter of the nnz stored values' work */
static int sparse_block_rows(int I, int J, int K, R_xlen_t nnz)
{
    const double bytes = (double) I * K * sizeof(double);
    double nb = ceil(bytes / SPARSE_BLOCK_BYTES);
    const double cap = floor((double) nnz / (4.0 * (J > 0 ? J : 1)));
    if (nb > cap) nb = cap;
    if (nb <= 1.0) return I;
    return (int) ceil(I / nb);
}

/* y[k] += a x[k], k < K: four at a time where the compiler has vectors
 * (each lane its own product and sum: the numbers of the one-at-a-time
 * loop) */
static ALWAYS_INLINE void axpy_k(double *restrict y, double a, const double *restrict x,
                                 int K)
{
    int k = 0;
#if defined(__GNUC__)
    const bnmf_v4 av = {a, a, a, a};
    for (; k + 4 <= K; k += 4) *(bnmf_v4 *) (y + k) += av * *(const bnmf_v4 *) (x + k);
#endif
    for (; k < K; k++) y[k] += a * x[k];
}

/* What a block of stored values adds to (sparse_block): SP_ROWS, X H' with
 * its rows as K contiguous values (Dt, K x I: v h_j into row i); SP_COLS,
 * X H' column-major (I x K: the K terms I apart); SP_WTX, W' X (F, K x J:
 * v w_i into column j, A = Wt) */
enum { SP_ROWS, SP_COLS, SP_WTX };

/* One block of rows [.., r1) of a sparse product (mode a constant where
 * inlined): every column's stored values in the block, from cur[j] on,
 * added to Out as the mode says; cur[j] moves past them. A is H (K x J)
 * or, for SP_WTX, Wt (K x I). */
static ALWAYS_INLINE void sparse_block(const nmf_data *d, const double *x, const double *A,
                                       double *Out, int *cur, int r1, const int mode)
{
    const int I = d->I, J = d->J, K = d->K;
    for (int j = 0; j < J; j++) {
#if defined(__GNUC__)
        if (j + SPARSE_PREFETCH < J) {
            const int q = cur[j + SPARSE_PREFETCH];
            __builtin_prefetch(d->xi + q);
            __builtin_prefetch(x + q);
        }
#endif
        /* column j of H (SP_ROWS, SP_COLS) or of F (SP_WTX) */
        const double *aj = mode == SP_WTX ? NULL : A + (size_t) j * K;
        double *oj = mode == SP_WTX ? Out + (size_t) j * K : NULL;
        const int end = d->xp[j + 1];
        int p = cur[j];
        for (; p < end && d->xi[p] < r1; p++) {
            const int i = d->xi[p];
            if (mode == SP_ROWS) {
                axpy_k(Out + (size_t) i * K, x[p], aj, K);
            } else if (mode == SP_WTX) {
                axpy_k(oj, x[p], A + (size_t) i * K, K);
            } else {
                const double v = x[p];
                for (int k = 0; k < K; k++) Out[i + (size_t) k * I] += v * aj[k];
            }
        }
        cur[j] = p;
    }
}

/* sparse_block by mode, SP_ROWS and SP_WTX with AVX2 clones (axpy_k's
 * four-value vectors); SP_COLS's terms are I apart */
BNMF_CLONES static void block_rows(const nmf_data *d, const double *x, const double *A,
                                   double *Out, int *cur, int r1)
{
    sparse_block(d, x, A, Out, cur, r1, SP_ROWS);
}

BNMF_CLONES static void block_wtx(const nmf_data *d, const double *x, const double *A,
                                  double *Out, int *cur, int r1)
{
    sparse_block(d, x, A, Out, cur, r1, SP_WTX);
}

static void block_cols(const nmf_data *d, const double *x, const double *A, double *Out,
                       int *cur, int r1)
{
    sparse_block(d, x, A, Out, cur, r1, SP_COLS);
}

/* A sparse product by blocks of rows: Out (nout doubles) zeroed, then
 * every block's values added in turn (sparse_block_rows); cur is J ints */
static void sparse_blocked(const nmf_data *d, const double *x, const double *A, double *Out,
                           size_t nout, int *cur, int mode)
{
    const int I = d->I, J = d->J, K = d->K;
    for (size_t n = 0; n < nout; n++) Out[n] = 0.0;
    const int B = sparse_block_rows(I, J, K, d->nx);
    for (int j = 0; j < J; j++) cur[j] = d->xp[j];
    for (int r0 = 0; r0 < I; r0 += B) {
        const int r1 = I - r0 > B ? r0 + B : I;
        if (mode == SP_ROWS) block_rows(d, x, A, Out, cur, r1);
        else if (mode == SP_WTX) block_wtx(d, x, A, Out, cur, r1);
        else block_cols(d, x, A, Out, cur, r1);
    }
}

#define VISIT_RUN 256 /* values of A' B a call of bnmf_sparse_visit's `each` gets at most */

/**
 * The values of A' B at the stored entries of a sparse X, handed to `each`
 * a run at a time: each(p0, y, n, ctx) gets, for the stored values p0,
 * ..., p0 + n - 1 of one column j (rows i ascending),
 * y[t] = sum_k At[k + i K] B[k + j K], summed k = 0, 1, ... in order (for
 * At = W' and B = H the value bnmf_wh_entry gives). At is K x I (a row's K
 * values contiguous), B is K x J, `cur` J ints of scratch. The rows go in
 * blocks of At (sparse_block_rows), so that a block stays in the L2 cache
 * while every column reads it: a column's values come block by block, not
 * in the order of p. `pf` (NULL or NULL-terminated): arrays indexed like
 * the stored values that `each` touches, fetched ahead like them.
 */
void bnmf_sparse_visit(const nmf_data *d, const double *At, const double *B, int K,
                       int *cur, sparse_run_fun each, void *ctx, const double *const *pf)
{
    const int I = d->I, J = d->J;
    const int R = sparse_block_rows(I, J, K, d->nx);
    double y[VISIT_RUN];
    for (int j = 0; j < J; j++) cur[j] = d->xp[j];
    for (int r0 = 0; r0 < I; r0 += R) {
        const int r1 = I - r0 > R ? r0 + R : I;
        for (int j = 0; j < J; j++) {
#if defined(__GNUC__)
            if (j + SPARSE_PREFETCH < J) {
                const int q = cur[j + SPARSE_PREFETCH];
                __builtin_prefetch(d->xi + q);
                for (int a = 0; pf && pf[a]; a++) __builtin_prefetch(pf[a] + q);
            }
#endif
            const double *bj = B + (size_t) j * K;
            const int end = d->xp[j + 1];
            int p = cur[j], p0 = p, n = 0;
            for (; p < end && d->xi[p] < r1; p++) {
                const double *a = At + (size_t) d->xi[p] * K;
                double v = 0.0;
                for (int k = 0; k < K; k++) v += a[k] * bj[k];
                y[n++] = v;
                if (n == VISIT_RUN) {
                    each((size_t) p0, y, n, ctx);
                    p0 += n;
                    n = 0;
                }
            }
            if (n > 0) each((size_t) p0, y, n, ctx);
            cur[j] = p;
        }
    }
}

/**
 * Z[t] = x[t] / max(Y[t], DBL_MIN), +0 where x[t] is 0, for t < n (Z may
 * be Y): the ratio X / WH of the I-divergence's updates, four at a time.
 */
BNMF_CLONES void bnmf_kl_ratio(double *Z, const double *Y, const double *x, size_t n)
{
    size_t t = 0;
#if defined(__GNUC__)
    const bnmf_v4 lo = {DBL_MIN, DBL_MIN, DBL_MIN, DBL_MIN}, zero = {0.0, 0.0, 0.0, 0.0};
    for (; t + 4 <= n; t += 4) {
        const bnmf_v4 xv = *(const bnmf_v4 *) (x + t);
        bnmf_v4 yv = *(const bnmf_v4 *) (Y + t);
        const bnmf_v4i small = yv < lo;
        yv = (bnmf_v4) (((bnmf_v4i) yv & ~small) | ((bnmf_v4i) lo & small));
        const bnmf_v4 q = xv / yv;
        *(bnmf_v4 *) (Z + t) = (bnmf_v4) ((bnmf_v4i) q & ~(xv == zero));
    }
#endif
    for (; t < n; t++) {
        const double v = Y[t] < DBL_MIN ? DBL_MIN : Y[t];
        Z[t] = x[t] == 0.0 ? 0.0 : x[t] / v;
    }
}

/**
 * sum over x[t] != 0 of x[t] log r[t] - x[t], t < n: the I-divergence's
 * terms from the ratio r = X / WH (bnmf_kl_ratio). Four terms at a time in
 * four partial sums (with bnmf_log4; a group with a ratio that is not
 * positive, normal and finite takes log() instead), the rest one by one.
 */
BNMF_CLONES double bnmf_kl_loss(const double *x, const double *r, size_t n)
{
    size_t t = 0;
    double s = 0.0;
#if defined(__GNUC__)
    const bnmf_v4 zero = {0.0, 0.0, 0.0, 0.0}, one = {1.0, 1.0, 1.0, 1.0};
    bnmf_v4 acc = zero;
    for (; t + 4 <= n; t += 4) {
        const bnmf_v4 xv = *(const bnmf_v4 *) (x + t);
        const bnmf_v4i x0 = xv == zero;
        /* log 1 = 0 where x is 0: those terms are 0 */
        const bnmf_v4 rv = (bnmf_v4) (((bnmf_v4i) *(const bnmf_v4 *) (r + t) & ~x0) |
                                  ((bnmf_v4i) one & x0));
        const bnmf_v4i ex = ((bnmf_v4i) rv >> 52) & 0x7FF;
        const bnmf_v4i odd = (ex == 0) | (ex == 0x7FF) | (rv < zero);
        if (odd[0] | odd[1] | odd[2] | odd[3]) {
            for (int l = 0; l < 4; l++)
                if (xv[l] != 0.0) acc[l] += xv[l] * log(rv[l]) - xv[l];
            continue;
        }
        bnmf_v4 lg;
        bnmf_log4(&lg, &rv);
        acc += xv * lg - xv;
    }
    s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
#endif
    for (; t < n; t++)
        if (x[t] != 0.0) s += x[t] * log(r[t]) - x[t];
    return s;
}

/**
 * sum over x[t] != 0 of x[t] log r[t], t < n (the Poisson log likelihood's
 * terms, r the rates at the counts x). Most counts of sparse data are 1: a
 * group of four counts of 1 (rates positive, normal and finite) multiplies
 * the rates' mantissas (in [1, 2)) into four running products and adds their
 * exponents, and the products' logs are taken at the end (one log for up
 * to 4 x 64 counts, the products brought back into [1, 2) after 64
 * factors, below 2^64); other groups take four logs at a time (bnmf_log4).
 * Within a few ulps of the sum of x[t] * log(r[t]) per term.
 */
BNMF_CLONES double bnmf_xlog_sum(const double *x, const double *r, size_t n)
{
    size_t t = 0;
    double s = 0.0;
#if defined(__GNUC__)
    const bnmf_v4 zero = {0.0, 0.0, 0.0, 0.0}, one = {1.0, 1.0, 1.0, 1.0};
    bnmf_v4 acc = zero, P = one;
    bnmf_v4i E = {0, 0, 0, 0};
    int np = 0;
    for (; t + 4 <= n; t += 4) {
        const bnmf_v4 xv = *(const bnmf_v4 *) (x + t);
        const bnmf_v4i x0 = xv == zero;
        /* log 1 = 0 where x is 0: those terms are 0 */
        const bnmf_v4 rv = (bnmf_v4) (((bnmf_v4i) *(const bnmf_v4 *) (r + t) & ~x0) |
                                      ((bnmf_v4i) one & x0));
        const bnmf_v4i u = (bnmf_v4i) rv, ex = (u >> 52) & 0x7FF;
        const bnmf_v4i odd = (ex == 0) | (ex == 0x7FF) | (rv < zero);
        if (odd[0] | odd[1] | odd[2] | odd[3]) {
            for (int l = 0; l < 4; l++)
                if (xv[l] != 0.0) acc[l] += xv[l] * log(rv[l]);
            continue;
        }
        const bnmf_v4i ones = xv == one;
        if (ones[0] & ones[1] & ones[2] & ones[3]) {
            P *= (bnmf_v4) ((u & 0x000FFFFFFFFFFFFFLL) | 0x3FF0000000000000LL);
            E += ex - 1023;
            if (++np == 64) {
                const bnmf_v4i pu = (bnmf_v4i) P;
                E += ((pu >> 52) & 0x7FF) - 1023;
                P = (bnmf_v4) ((pu & 0x000FFFFFFFFFFFFFLL) | 0x3FF0000000000000LL);
                np = 0;
            }
            continue;
        }
        bnmf_v4 lg;
        bnmf_log4(&lg, &rv);
        acc += xv * lg;
    }
    bnmf_v4 lp;
    bnmf_log4(&lp, &P);
    for (int l = 0; l < 4; l++) acc[l] += lp[l] + (double) E[l] * M_LN2;
    s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
#endif
    for (; t < n; t++)
        if (x[t] != 0.0) s += x[t] * log(r[t]);
    return s;
}

/* .Call entry (tests): list(loss = bnmf_kl_loss(x, r), log = the logs of r
 * as bnmf_kl_loss takes them four at a time (NA for a group of four with a
 * value that is not positive, normal and finite), the last n mod 4 by
 * log(), xlog = bnmf_xlog_sum(x, r)). */
SEXP bnmf_kl_loss_call(SEXP x, SEXP r)
{
    if (TYPEOF(x) != REALSXP || TYPEOF(r) != REALSXP || XLENGTH(x) != XLENGTH(r))
        Rf_error("`x` and `r` must be double vectors of one length");
    const R_xlen_t n = XLENGTH(r);
    const double *pr = REAL(r);
    for (R_xlen_t t = 0; t < n; t++)
        if (!(REAL(x)[t] >= 0.0)) Rf_error("`x` must be non-negative");
    const char *nm[] = {"loss", "log", "xlog", ""};
    SEXP out = PROTECT(Rf_mkNamed(VECSXP, nm));
    SET_VECTOR_ELT(out, 0, Rf_ScalarReal(bnmf_kl_loss(REAL(x), pr, (size_t) n)));
    SEXP lg = PROTECT(Rf_allocVector(REALSXP, n));
    double *pl = REAL(lg);
    R_xlen_t t = 0;
#if defined(__GNUC__)
    for (; t + 4 <= n; t += 4) {
        int ok = 1;
        for (int l = 0; l < 4; l++)
            ok &= pr[t + l] >= DBL_MIN && pr[t + l] <= DBL_MAX;
        if (!ok) {
            for (int l = 0; l < 4; l++) pl[t + l] = NA_REAL;
            continue;
        }
        const bnmf_v4 rv = *(const bnmf_v4 *) (pr + t);
        bnmf_v4 v;
        bnmf_log4(&v, &rv);
        for (int l = 0; l < 4; l++) pl[t + l] = v[l];
    }
#endif
    for (; t < n; t++) pl[t] = log(pr[t]);
    SET_VECTOR_ELT(out, 1, lg);
    SET_VECTOR_ELT(out, 2, Rf_ScalarReal(bnmf_xlog_sum(REAL(x), pr, (size_t) n)));
    UNPROTECT(2);
    return out;
}

typedef struct { const double *x; double *Z; } kl_runs;

/* Z = X / Y on a run of stored values (bnmf_sparse_kl_ratio) */
static void kl_run(size_t p0, const double *y, int n, void *ctx)
{
    const kl_runs *a = (const kl_runs *) ctx;
    bnmf_kl_ratio(a->Z + p0, y, a->x + p0, (size_t) n);
}

/**
 * The ratio Z = X / Y at the stored values x of a sparse X, Y = A' B there
 * (bnmf_sparse_visit; Y below DBL_MIN taken as DBL_MIN), 0 where x is 0
 * (masked missing entries among them). Returns the I-divergence's terms
 * sum over x != 0 of x log(x / Y) - x (bnmf_kl_loss; loss_too = 0: 0,
 * without the logs). `cur` is J ints of scratch.
 */
double bnmf_sparse_kl_ratio(const nmf_data *d, const double *x, const double *At,
                            const double *B, int K, int *cur, double *Z, int loss_too)
{
    kl_runs a = {x, Z};
    const double *pf[] = {x, Z, NULL};
    bnmf_sparse_visit(d, At, B, K, cur, kl_run, &a, pf);
    return loss_too ? bnmf_kl_loss(x, Z, (size_t) d->nx) : 0.0;
}

/**
 * D = X G (I x K), X dense I x J or sparse CSC, G J x K given also as
 * Gt = G' (K x J): dense X by dgemm in its "N", "N" form (the fastest one of
 * the reference BLAS) on G; sparse X from Gt (read only then), the rows in
 * blocks (sparse_blocked). `cur` is J ints of scratch (unused for dense X).
 */
void bnmf_x_g(const nmf_data *d, const double *x, const double *G, const double *Gt,
              double *D, int *cur)
{
    const int I = d->I, J = d->J, K = d->K;
    if (!d->sparse) {
        const double one = 1.0, zero = 0.0;
        F77_CALL(dgemm)("N", "N", &I, &K, &J, &one, x, &I, G, &J, &zero, D, &I
                        FCONE FCONE);
        return;
    }
    sparse_blocked(d, x, Gt, D, (size_t) I * K, cur, SP_COLS);
}

/**
 * D = X H' (I x K), X dense I x J or sparse CSC, H K x J: bnmf_x_g, for
 * dense X with H transposed into `Ht` (J x K, scratch) first.
 */
void bnmf_x_ht(const nmf_data *d, const double *x, const double *H, double *D,
               double *Ht, int *cur)
{
    if (!d->sparse) bnmf_transpose(H, d->K, d->J, Ht);
    bnmf_x_g(d, x, Ht, H, D, cur);
}

/**
 * Dt = (X H')' = H X' (K x I, row i of X H' in K contiguous values) for
 * sparse CSC X, H K x J. Each stored value adds v h_j to one row of K
 * contiguous values: writing X H' column-major instead puts the K terms of a
 * stored value I doubles apart, one cache line each, and for large I these
 * misses were most of the product's time. The rows go in blocks
 * (sparse_block_rows); `cur` is J ints of scratch.
 */
void bnmf_x_ht_rows(const nmf_data *d, const double *x, const double *H, double *Dt,
                    int *cur)
{
    sparse_blocked(d, x, H, Dt, (size_t) d->I * d->K, cur, SP_ROWS);
}

/**
 * F = W' X (K x J), X dense I x J or sparse CSC, W I x K. On return `Wt`
 * (K x I) holds W' (the sweep reuses it for masked Gram matrices). Sparse:
 * the rows of Wt in blocks (sparse_block_rows), f_j summed over its stored
 * values in order; `cur` is J ints of scratch (unused for dense X).
 */
void bnmf_wt_x(const nmf_data *d, const double *x, const double *W, double *F,
               double *Wt, int *cur)
{
    const int I = d->I, J = d->J, K = d->K;
    bnmf_transpose(W, I, K, Wt);
    if (!d->sparse) {
        const double one = 1.0, zero = 0.0;
        F77_CALL(dgemm)("N", "N", &K, &J, &I, &one, Wt, &K, x, &I, &zero, F, &K
                        FCONE FCONE);
        return;
    }
    sparse_blocked(d, x, Wt, F, (size_t) K * J, cur, SP_WTX);
}

/* .Call entry (tests): the sparse products of a sweep, for data (a list
 * from prepare_data() of a sparse X), its stored values x, W (I x K) and H
 * (K x J): list(D = X H' from bnmf_x_ht_rows, transposed back to I x K;
 * Dc = X H' from bnmf_x_ht (column-major); F = W' X from bnmf_wt_x). */
SEXP bnmf_sparse_products_call(SEXP data, SEXP x, SEXP W, SEXP H)
{
    nmf_data d;
    bnmf_read_data(data, 1, &d);
    if (!d.sparse) Rf_error("`data` must describe a sparse X");
    const int I = d.I, J = d.J, K = d.K;
    if (TYPEOF(x) != REALSXP || XLENGTH(x) != d.nx)
        Rf_error("`x` must hold the %lld stored values", (long long) d.nx);
    if (TYPEOF(W) != REALSXP || !Rf_isMatrix(W) || Rf_nrows(W) != I || Rf_ncols(W) != K)
        Rf_error("`W` must be a double I x K matrix");
    if (TYPEOF(H) != REALSXP || !Rf_isMatrix(H) || Rf_nrows(H) != K || Rf_ncols(H) != J)
        Rf_error("`H` must be a double K x J matrix");
    int *cur = (int *) R_alloc(J, sizeof(int));
    double *Dt = (double *) R_alloc((size_t) K * I, sizeof(double));
    double *Wt = (double *) R_alloc((size_t) K * I, sizeof(double));
    const char *nms[] = {"D", "Dc", "F", ""};
    SEXP out = PROTECT(Rf_mkNamed(VECSXP, nms));
    SEXP D = PROTECT(Rf_allocMatrix(REALSXP, I, K));
    SEXP Dc = PROTECT(Rf_allocMatrix(REALSXP, I, K));
    SEXP F = PROTECT(Rf_allocMatrix(REALSXP, K, J));
    SET_VECTOR_ELT(out, 0, D);
    SET_VECTOR_ELT(out, 1, Dc);
    SET_VECTOR_ELT(out, 2, F);
    bnmf_x_ht_rows(&d, REAL(x), REAL(H), Dt, cur);
    bnmf_transpose(Dt, K, I, REAL(D));
    bnmf_x_ht(&d, REAL(x), REAL(H), REAL(Dc), Wt, cur);
    bnmf_wt_x(&d, REAL(x), REAL(W), REAL(F), Wt, cur);
    UNPROTECT(4);
    return out;
}

/** (WH)_ij = sum_k W_ik H_kj. */
double bnmf_wh_entry(const double *W, const double *H, int I, int K, int i, int j)
{
    const double *hj = H + (size_t) j * K;
    double s = 0.0;
    for (int k = 0; k < K; k++) s += W[i + (size_t) k * I] * hj[k];
    return s;
}

/* (WH)_ij as w'h over K values: k = 0, 1, 2, 3 mod 4 in four partial sums
 * s0..s3 (the lanes of one four-value vector), the last K mod 4 values added
 * to s0, s1, s2 in turn, then (s0 + s1) + (s2 + s3). bnmf_wh_latent does
 * this for four entries at once, each in its own accumulator: the same
 * arithmetic in the same order as one at a time, but four independent chains
 * of additions instead of one, each K / 4 long. */
static inline double wh_one(const double *w, const double *h, int K)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int k = 0;
    for (; k + 4 <= K; k += 4) {
        s0 += w[k] * h[k];
        s1 += w[k + 1] * h[k + 1];
        s2 += w[k + 2] * h[k + 2];
        s3 += w[k + 3] * h[k + 3];
    }
    if (k < K) s0 += w[k] * h[k];
    if (k + 1 < K) s1 += w[k + 1] * h[k + 1];
    if (k + 2 < K) s2 += w[k + 2] * h[k + 2];
    return (s0 + s1) + (s2 + s3);
}

#if defined(__GNUC__)
/* wh_one's end for one entry of bnmf_wh_latent's four: its four lanes, then
 * the last K mod 4 terms */
static inline double wh_end(bnmf_v4 a, const double *w, const double *h, int k, int K)
{
    double s0 = a[0], s1 = a[1], s2 = a[2];
    if (k < K) s0 += w[k] * h[k];
    if (k + 1 < K) s1 += w[k + 1] * h[k + 1];
    if (k + 2 < K) s2 += w[k + 2] * h[k + 2];
    return (s0 + s1) + (s2 + a[3]);
}
#endif

/**
 * The latent entries of a Gibbs sweep: with v[t] the current value of the
 * missing entry (mi[t], mj[t]), returns sum_t (v[t] - (WH)_ij)^2 (summed in
 * the order of t) and leaves (WH)_ij in v[t]. WH is taken from W's
 * transpose Wt (K x I): each entry reads two contiguous vectors of K values
 * (W's row i read from W itself is K values I apart, one cache line each),
 * and the values come from the compact v, not from the I x J data. Four
 * entries at a time (each one four-value vector: one AVX2 operation a step in
 * the AVX2 clone, two SSE2 operations in the default code, the same bits).
 * @param Wt  K x I scratch; receives W'
 */
BNMF_CLONES double bnmf_wh_latent(const double *W, const double *H, int I, int K, const int *mi,
                      const int *mj, R_xlen_t n, double *Wt, double *v)
{
    bnmf_transpose(W, I, K, Wt);
    double ss = 0.0;
    R_xlen_t t = 0;
#if defined(__GNUC__)
    /* four entries at a time, each in its own four-value accumulator; the
     * four results stay in registers (stored and read back as a vector they
     * stall the loads) */
    for (; t + 4 <= n; t += 4) {
        const double *w0 = Wt + (size_t) mi[t] * K, *h0 = H + (size_t) mj[t] * K;
        const double *w1 = Wt + (size_t) mi[t + 1] * K, *h1 = H + (size_t) mj[t + 1] * K;
        const double *w2 = Wt + (size_t) mi[t + 2] * K, *h2 = H + (size_t) mj[t + 2] * K;
        const double *w3 = Wt + (size_t) mi[t + 3] * K, *h3 = H + (size_t) mj[t + 3] * K;
        bnmf_v4 a0 = {0.0, 0.0, 0.0, 0.0}, a1 = a0, a2 = a0, a3 = a0;
        int k = 0;
        if (h0 == h1 && h1 == h2 && h2 == h3) {
            /* the four in one column (the usual case: the entries are sorted
             * by column): its values loaded once */
            for (; k + 4 <= K; k += 4) {
                const bnmf_v4 h = *(const bnmf_v4 *) (h0 + k);
                a0 += *(const bnmf_v4 *) (w0 + k) * h;
                a1 += *(const bnmf_v4 *) (w1 + k) * h;
                a2 += *(const bnmf_v4 *) (w2 + k) * h;
                a3 += *(const bnmf_v4 *) (w3 + k) * h;
            }
        } else {
            for (; k + 4 <= K; k += 4) {
                a0 += *(const bnmf_v4 *) (w0 + k) * *(const bnmf_v4 *) (h0 + k);
                a1 += *(const bnmf_v4 *) (w1 + k) * *(const bnmf_v4 *) (h1 + k);
                a2 += *(const bnmf_v4 *) (w2 + k) * *(const bnmf_v4 *) (h2 + k);
                a3 += *(const bnmf_v4 *) (w3 + k) * *(const bnmf_v4 *) (h3 + k);
            }
        }
        const double e0 = wh_end(a0, w0, h0, k, K), e1 = wh_end(a1, w1, h1, k, K);
        const double e2 = wh_end(a2, w2, h2, k, K), e3 = wh_end(a3, w3, h3, k, K);
        double r = v[t] - e0;
        ss += r * r;
        r = v[t + 1] - e1;
        ss += r * r;
        r = v[t + 2] - e2;
        ss += r * r;
        r = v[t + 3] - e3;
        ss += r * r;
        v[t] = e0;
        v[t + 1] = e1;
        v[t + 2] = e2;
        v[t + 3] = e3;
    }
#endif
    for (; t < n; t++) {
        const double wh = wh_one(Wt + (size_t) mi[t] * K, H + (size_t) mj[t] * K, K);
        const double r = v[t] - wh;
        ss += r * r;
        v[t] = wh;
    }
    return ss;
}

/* .Call entry: (WH)_ij at the 0-based entries (i[t], j[t]). */
SEXP bnmf_wh_entries_call(SEXP W, SEXP H, SEXP i, SEXP j)
{
    if (TYPEOF(W) != REALSXP || TYPEOF(H) != REALSXP || !Rf_isMatrix(W) ||
        !Rf_isMatrix(H))
        Rf_error("W and H must be double matrices");
    if (TYPEOF(i) != INTSXP || TYPEOF(j) != INTSXP || XLENGTH(i) != XLENGTH(j))
        Rf_error("i and j must be integer vectors of the same length");
    const int I = Rf_nrows(W), K = Rf_ncols(W), J = Rf_ncols(H);
    if (Rf_nrows(H) != K) Rf_error("W and H are not conformable");
    const R_xlen_t n = XLENGTH(i);
    const int *ii = INTEGER(i), *jj = INTEGER(j);
    for (R_xlen_t t = 0; t < n; t++)
        if (ii[t] < 0 || ii[t] >= I || jj[t] < 0 || jj[t] >= J)
            Rf_error("entry %lld is out of range", (long long) t + 1);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
    double *o = REAL(out);
    const double *w = REAL(W), *h = REAL(H);
    for (R_xlen_t t = 0; t < n; t++) o[t] = bnmf_wh_entry(w, h, I, K, ii[t], jj[t]);
    UNPROTECT(1);
    return out;
}
