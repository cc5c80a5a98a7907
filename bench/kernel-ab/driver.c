/*
 * One version's masked-row kernel on a batch of rows (bench/masked-kernel-ab.sh).
 * Compiled once per version, against that version's src/ headers, and its
 * global symbols renamed (A_..., B_...), so that two versions of
 * bnmf_cond_sub_gather / bnmf_cond_row_sub run side by side in one process.
 *
 * ab_rows: for each of the nrow rows q, gathers the row's nm vectors
 * other + idx[q nm + t] K (VB: with their variances V) and updates the
 * row's K values z + q K by bnmf_cond_row_sub on the full Gram matrix G,
 * right-hand side b + q K, rates lam, noise precision tau; rule 1 ICM,
 * 2 VB. Scratch is allocated here: a version whose cond_sub (src/cond.h)
 * has other fields needs its own copy of this file. Returns 1 when out of
 * memory.
 */
#include <stdlib.h>
#include <string.h>
#include "cond.h"

int ab_rows(int rule, int K, int nm, int nrow, const double *other, const double *V,
            const double *G, const int *idx, double *z, const double *b,
            const double *lam, double tau)
{
    cond_sub cs;
    memset(&cs, 0, sizeof cs);
    double *buf = malloc(sizeof(double) * ((size_t) (nm + 2) * (K + 1) + 8 * (size_t) K + 64));
    if (!buf) return 1;
    double *p = buf;
    cs.O = p;
    p += (size_t) (nm + 2) * K;
    cs.r = p;
    p += nm + 2;
    cs.osq = p;
    p += K + 1;
    cs.gkk = p;
    p += K + 1;
    double *v = p, *ent = p + K + 1;
    for (int q = 0; q < nrow; q++) {
        bnmf_cond_sub_gather(&cs, other, rule == 2 ? V : NULL, idx + (size_t) q * nm, nm, K,
                             z + (size_t) q * K);
        bnmf_cond_row_sub(z + (size_t) q * K, G, b + (size_t) q * K, lam, 1, tau, K,
                          (nmf_rule) rule, v, ent, &cs);
    }
    free(buf);
    return 0;
}
