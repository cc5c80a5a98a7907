/*
 * Two versions of the masked-row kernel (driver.c, built twice by
 * bench/masked-kernel-ab.sh) on the same rows, interleaved in one process.
 *
 *   main K n nm rounds rule
 *
 * A row has nm missing entries among n (K-vectors of the other side,
 * H_kj ~ Exp(1), VB variances ~ U(0, 0.01)), at random; the full Gram matrix
 * G = H H' (VB: plus the variances on the diagonal); right-hand sides 0.8 G u,
 * u_k ~ Exp(1); rates 0.5; tau = 1; 1000 rows. Each round times both
 * versions once on the same starting values, in an order swapped every
 * round. Prints the median (range) us a row of each and of B's time over
 * A's, and whether the two give the same bits (else the largest relative
 * difference of the rows' values), as one Markdown table row.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int A_ab_rows(int, int, int, int, const double *, const double *, const double *,
              const int *, double *, const double *, const double *, double);
int B_ab_rows(int, int, int, int, const double *, const double *, const double *,
              const int *, double *, const double *, const double *, double);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double urand(void) { return (rand() + 0.5) / ((double) RAND_MAX + 1.0); }

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void med(double *x, int n, double *m, double *lo, double *hi)
{
    qsort(x, n, sizeof(double), cmp);
    *m = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    *lo = x[0];
    *hi = x[n - 1];
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s K n nm rounds rule(1 ICM, 2 VB)\n", argv[0]);
        return 2;
    }
    const int K = atoi(argv[1]), n = atoi(argv[2]), nm = atoi(argv[3]);
    const int rounds = atoi(argv[4]), rule = atoi(argv[5]), nrow = 1000;
    if (K < 1 || n < 2 || nm < 0 || 2 * nm > n || rounds < 1 || (rule != 1 && rule != 2)) {
        fprintf(stderr, "need K >= 1, n >= 2, 0 <= nm <= n / 2, rounds >= 1, rule 1 or 2\n");
        return 2;
    }
    srand(1);
    double *H = malloc(sizeof(double) * K * n), *V = malloc(sizeof(double) * K * n);
    double *G = calloc((size_t) K * K, sizeof(double)), *lam = malloc(sizeof(double) * K);
    int *idx = malloc(sizeof(int) * ((size_t) nm * nrow + 1));
    double *z0 = malloc(sizeof(double) * K * nrow), *b = malloc(sizeof(double) * K * nrow);
    double *za = malloc(sizeof(double) * K * nrow), *zb = malloc(sizeof(double) * K * nrow);
    double *ta = malloc(sizeof(double) * rounds), *tb = malloc(sizeof(double) * rounds);
    double *ra = malloc(sizeof(double) * rounds);
    if (!H || !V || !G || !lam || !idx || !z0 || !b || !za || !zb || !ta || !tb || !ra) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (int i = 0; i < K * n; i++) {
        H[i] = -log(urand());
        V[i] = 0.01 * urand();
    }
    for (int j = 0; j < n; j++)
        for (int c = 0; c < K; c++)
            for (int a = 0; a < K; a++) G[a + c * K] += H[a + j * K] * H[c + j * K];
    if (rule == 2)
        for (int j = 0; j < n; j++)
            for (int a = 0; a < K; a++) G[a + a * K] += V[a + j * K];
    for (int q = 0; q < nrow; q++) {
        /* nm of the n indices, sorted (selection sampling) */
        for (int j = 0, c = 0; j < n && c < nm; j++)
            if (rand() % (n - j) < nm - c) idx[(size_t) q * nm + c++] = j;
        for (int k = 0; k < K; k++) z0[q * K + k] = -log(urand());
        for (int k = 0; k < K; k++) {
            double s = 0.0;
            for (int l = 0; l < K; l++) s += G[k + l * K] * -log(urand());
            b[q * K + k] = 0.8 * s;
        }
    }
    for (int k = 0; k < K; k++) lam[k] = 0.5;
    for (int r = 0; r < rounds; r++) {
        for (int h = 0; h < 2; h++) {
            const int useb = (r + h) % 2;
            double *z = useb ? zb : za;
            memcpy(z, z0, sizeof(double) * K * nrow);
            const double t0 = now();
            const int st = useb ? B_ab_rows(rule, K, nm, nrow, H, V, G, idx, z, b, lam, 1.0)
                                : A_ab_rows(rule, K, nm, nrow, H, V, G, idx, z, b, lam, 1.0);
            const double t = (now() - t0) / nrow * 1e6;
            if (st) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            (useb ? tb : ta)[r] = t;
        }
        ra[r] = tb[r] / ta[r];
    }
    double dmax = 0.0;
    for (int i = 0; i < K * nrow; i++) {
        const double d = fabs(za[i] - zb[i]) / (fabs(za[i]) > 1e-300 ? fabs(za[i]) : 1.0);
        if (d > dmax) dmax = d;
    }
    const int same = memcmp(za, zb, sizeof(double) * K * nrow) == 0;
    double ma, la, ha, mb, lb, hb, mr, lr, hr;
    med(ta, rounds, &ma, &la, &ha);
    med(tb, rounds, &mb, &lb, &hb);
    med(ra, rounds, &mr, &lr, &hr);
    char diff[64];
    if (same) snprintf(diff, sizeof diff, "same bits");
    else snprintf(diff, sizeof diff, "differ, up to %.1e relative", dmax);
    printf("| %s | %d | %d of %d | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.3f (%.3f-%.3f) | %s |\n",
           rule == 1 ? "ICM" : "VB", K, nm, n, ma, la, ha, mb, lb, hb, mr, lr, hr, diff);
    return 0;
}
