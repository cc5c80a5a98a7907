/*
 * nmf_work.c -- the scratch space of Gaussian NMF's sweeps (nmf_sweep.c):
 * the products, the Gram matrices, each thread's rows, the gather buffers
 * of the rows with missing entries, from a state's buffer or R_alloc.
 */
#include <stdint.h>
#include "bnmf_call.h"
#include "nmf_sweep.h"

/* n doubles from the buffer *buf (advanced past them), or from R_alloc when
 * there is no buffer. */
double *bnmf_carve(double **buf, size_t n)
{
    if (!*buf) return (double *) R_alloc(n, sizeof(double));
    double *p = *buf;
    *buf += n;
    return p;
}

/* n doubles from R_alloc, the first at an address that is a multiple of
 * 64 bytes (a cache line): a table whose rows are gathered by index then
 * has each row in the fewest lines (2 K = 40 doubles, 320 bytes: 5 lines,
 * not 6). */
double *bnmf_alloc_lines(size_t n)
{
    char *p = R_alloc(n * sizeof(double) + 64, 1);
    return (double *) (p + ((64 - (uintptr_t) p % 64) % 64));
}
/* A row's own scratch (Gi, zrow ... erow from *buf, obs and the gather
 * buffers of up to nmax missing entries from R_alloc): the part of a
 * sweep's scratch that every thread of the masked half sweeps has alone. */
static void row_scratch(double **buf, sweep_work *w, int K, int n, int nmax)
{
    w->Gi = bnmf_carve(buf, (size_t) K * K);
    w->zrow = bnmf_carve(buf, (size_t) COND_BLOCK * K); /* a block of rows */
    w->brow = bnmf_carve(buf, (size_t) COND_BLOCK * K);
    w->vrow = bnmf_carve(buf, (size_t) COND_BLOCK * K);
    w->erow = bnmf_carve(buf, (size_t) COND_BLOCK * K);
    w->obs = (int *) R_alloc(n, sizeof(int));
    w->se = (double *) R_alloc((size_t) 5 * COND_BLOCK * K, sizeof(double));
    w->dg = w->se + (size_t) 2 * COND_BLOCK * K;
    w->fa = w->dg + (size_t) COND_BLOCK * K;
    w->fu = w->fa + (size_t) COND_BLOCK * K;
    w->sub_max = nmax;
    w->sub.nm = 0;
    w->sub.O = w->sub.r = w->sub.osq = w->sub.gkk = NULL;
    if (nmax > 0) {
        w->sub.O = (double *) R_alloc((size_t) (nmax + 1) * K, sizeof(double));
        w->sub.r = (double *) R_alloc((size_t) nmax + 1, sizeof(double));
        w->sub.osq = (double *) R_alloc(K, sizeof(double));
        w->sub.gkk = (double *) R_alloc(K, sizeof(double));
    }
}

/**
 * The scratch space of a sweep: from `buf`, at least bnmf_sweep_work_len(d)
 * doubles, or from R_alloc when buf is NULL. A chain's state holds such a
 * buffer (`work`, see new_state() in R/engine-nmf.R) so that the chunks of a
 * long run do not leave their scratch to R's garbage collector, which on a
 * large heap may collect it only long after (the scratch of every chunk
 * then adds up in the process's memory).
 */
void bnmf_sweep_work(const nmf_data *d, sweep_work *ws, double *buf)
{
    const int I = d->I, J = d->J, K = d->K;
    /* the most missing entries of a row (column) with no more missing than
     * observed, for bnmf_cond_row_sub (none below SUB_MIN_K_VB, the smaller
     * threshold) */
    int nmax = 0;
    for (int i = 0; d->nmiss > 0 && K >= SUB_MIN_K_VB && i < I; i++) {
        const int n = d->mrow_ptr[i + 1] - d->mrow_ptr[i];
        if (2 * n <= J && n > nmax) nmax = n;
    }
    for (int j = 0; d->nmiss > 0 && K >= SUB_MIN_K_VB && j < J; j++) {
        const int n = d->mcol_ptr[j + 1] - d->mcol_ptr[j];
        if (2 * n <= I && n > nmax) nmax = n;
    }
    ws->D = bnmf_carve(&buf, (size_t) I * K);
    ws->F = bnmf_carve(&buf, (size_t) K * J);
    ws->G = bnmf_carve(&buf, (size_t) K * K);
    row_scratch(&buf, ws, K, I > J ? I : J, nmax);
    ws->Wt = bnmf_carve(&buf, (size_t) K * I);
    ws->Ht = bnmf_carve(&buf, (size_t) J * K);
    ws->units = NULL;
    ws->lq = NULL;
    ws->P = ws->gm = NULL;
    ws->threads = 1;
    ws->tw = NULL;
    if (d->nmiss > 0) {
        ws->units = (int *) R_alloc((size_t) (I > J ? I : J) + 1, sizeof(int));
        ws->lq = (double *) R_alloc(2 * (size_t) J, sizeof(double));
    }
}

/* Scratch for T threads of the half sweeps by pieces (by_pieces): each thread
 * its own row_scratch(), the rest shared. Nothing without missing entries
 * or with T = 1. */
void bnmf_sweep_threads(const nmf_data *d, sweep_work *ws, int T)
{
    const int I = d->I, J = d->J;
    if (T > (I > J ? I : J)) T = I > J ? I : J; /* no more threads than pieces */
    if (T <= 1 || d->nmiss == 0) return;
    sweep_work *tw = (sweep_work *) R_alloc(T, sizeof(sweep_work));
    for (int t = 0; t < T; t++) {
        tw[t] = *ws;
        tw[t].tw = NULL;
        double *buf = NULL;
        if (t > 0) row_scratch(&buf, tw + t, d->K, I > J ? I : J, ws->sub_max);
    }
    ws->threads = T;
    ws->tw = tw;
}

/* The doubles bnmf_sweep_work() takes from its buffer. */
size_t bnmf_sweep_work_len(const nmf_data *d)
{
    const size_t I = d->I, J = d->J, K = d->K;
    return 2 * (I + J) * K + 2 * K * K + 4 * COND_BLOCK * K;
}
