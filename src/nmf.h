/* nmf.h -- types and kernels shared by the NMF samplers and optimisers: the
 * data, prior, state and controls of a run as plain C structs, and the
 * kernels of the files that work on them (by file). */
#ifndef BNMF_NMF_H
#define BNMF_NMF_H
#include "bnmf.h"
#include "cond.h"

/*
 * The data of a fit. The values `x` live in the fit's state (they are modified
 * in place when missing entries are latent variables), everything else is
 * read-only.
 *
 * Missing entries are listed three ways: by position in the value array
 * (`miss_pos`, with row `miss_i` and column `miss_j`, sorted by column, so
 * that `mcol_ptr[j] .. mcol_ptr[j + 1]` are the missing entries of column j),
 * and by row (`mrow_ptr`, `mrow_j`: the columns missing in row i).
 */
typedef struct {
    int I, J, K;
    int sparse;              /* 0: dense I x J; 1: compressed sparse columns */
    const int *xi, *xp;      /* sparse: row index per value, column pointers */
    int nmiss;
    const int *miss_pos, *miss_i, *miss_j;
    const int *mcol_ptr, *mrow_ptr, *mrow_j;
    R_xlen_t nx;             /* number of stored values (I J, or nnz) */
    double sumsq_obs;        /* sum of X_ij^2 over the observed entries */
    double n_obs;            /* number of observed entries |Omega| */
} nmf_data;

/*
 * The prior: exponential rates of the shape of W and H, Gamma(alpha, beta)
 * for tau. With ARD (ard = 1) the rates are lamW[, k] = lamH[k, ] = lambda_k,
 * lambda_k ~ Gamma(alpha0, beta0); the sweep then refreshes lamW and lamH
 * (scratch copies) from the current lambda.
 */
typedef struct {
    double *lamW, *lamH;
    double alpha, beta;
    int ard;
    double alpha0, beta0;
} nmf_prior;

/*
 * A chain's state, read by name from the list new_state() makes in R (all
 * pointers into that list: the sweeps update it in place). Pointers a run
 * does not use are NULL: lambda without ARD, the running moments when not
 * accumulating, the VB parts (variances, entropies, Gamma rates of q) for
 * the other rules. For VB, W, H, tau and lambda hold the means of q.
 */
typedef struct {
    double *W, *H, *tau, *x, *sumsq, *logpost, *n_kept, *lambda;
    double *W_mean, *W_m2, *H_mean, *H_m2, *tau_mean, *tau_m2, *WH_mean, *WH_m2;
    double *lambda_mean, *lambda_m2;
    double *n_wh, *wh_wait; /* draws in WH's moments; kept draws to skip before the next */
    double *work;           /* scratch of the sweeps (NULL: none), n_work doubles */
    size_t n_work;
    double *W_var, *H_var, *W_ent, *H_ent, *tau_rate, *lambda_rate;
} nmf_state;

/* What bnmf_read_state() reads besides W, H and x. */
enum {
    STATE_TAU = 1,       /* tau */
    STATE_SUMSQ = 2,     /* sumsq */
    STATE_TRACK = 4,     /* logpost, n_kept */
    STATE_LAMBDA = 8,    /* lambda (ARD) */
    STATE_MOMENTS = 16,  /* the running moments (and lambda's with ARD) */
    STATE_VB = 32        /* W_var, H_var, W_ent, H_ent, tau_rate (lambda_rate) */
};

/* The controls of a run of sweeps (the named list `ctrl` of nmf_sweeps). */
typedef struct {
    int n;             /* sweeps */
    nmf_rule rule;
    int masked;        /* missing entries masked (else latent: Gibbs draws
                        * them, ICM, VB and NP fill them with W H) */
    int accumulate;    /* update the running moments (Gibbs only) */
    int thin;          /* keep every thin-th sweep */
    int keep_draws;    /* copy the kept W and H */
    int wh_thin;       /* WH's moments from every wh_thin-th kept draw */
    int update_W, update_H, update_tau;
    double tol;        /* ICM, VB, NP: stop when the relative change of logpost <= tol */
    int threads;       /* ICM, VB, NP, masked: threads of the rows with missing entries */
} sweep_ctrl;

/* What a run of sweeps reports, in arrays the caller allocates for ctrl.n
 * sweeps; `done` and `converged` are set by the run. */
typedef struct {
    double *trace;     /* n x 4: loglik, tau, logpost, sse */
    double *lambda;    /* n x K ARD rates (NULL without ARD) */
    double *W_draws, *H_draws; /* (I K) x (n / thin), (K J) x (n / thin) */
    int done, converged;
} sweep_out;

/* VB: the variances and entropies of q(W) and q(H) (NULL otherwise). */
typedef struct {
    double *Wvar, *Hvar, *Went, *Hent;
} vb_part;

/* Scratch space of a sweep, from a buffer or R_alloc (bnmf_sweep_work). */
typedef struct sweep_work {
    double *D, *F, *G, *Gi, *zrow, *brow, *vrow, *erow;
    double *Wt, *Ht;  /* K x I and J x K transposes of W and H */
    int *obs;         /* observed indices of a row or column */
    /* VB with the missing entries filled in (vb_fill): the other side's
     * squared means and second moments (2 K values an entry), and a
     * block's sums of them over each row's missing entries (fill_sums) and
     * its own diagonal */
    double *P, *gm, *se, *dg, *fa, *fu;
    /* ICM and VB: a row (column) with at most sub_max missing entries, and
     * no more missing than observed, is updated by bnmf_cond_row_sub */
    cond_sub sub;
    int sub_max;
    /* Masked ICM, VB and NP: the half sweeps' pieces (a block of complete
     * rows or one row with missing entries; units[u] is the first row of
     * piece u, units[nu] = I or J), the SSE terms of each piece of H (lq:
     * 2 per piece), and the scratch of each of `threads` threads (tw[0]
     * is this one's; bnmf_sweep_threads) */
    int *units;
    double *lq;
    int threads;
    struct sweep_work *tw;
} sweep_work;

/* A point theta* of the parameters (Chib's target; read-only). */
typedef struct {
    const double *W, *H;
    double tau;
    const double *lambda;  /* ARD only */
} nmf_point;

/* The controls of one of Chib's reduced runs (chib.c). */
typedef enum { CHIB_W = 0, CHIB_H = 1, CHIB_TAU = 2 } chib_block;
typedef struct {
    int burnin, samples;
    chib_block block;
    int index;         /* 0-based factor of the block (W, H) */
    int sym, orbit;
} chib_ctrl;

/* The controls of the KL updates (nmf_kl.c). */
typedef struct {
    int n;
    double tol;
    int update_W;
} kl_ctrl;

/* rlist.c: reading the R lists of the engine (the only place that does) */
SEXP bnmf_list_get(SEXP list, const char *name);
SEXP bnmf_list_get_opt(SEXP list, const char *name);
double *bnmf_real_elt(SEXP list, const char *name, R_xlen_t len);
const int *bnmf_int_elt(SEXP list, const char *name, R_xlen_t len);
void bnmf_check_csc(const int *xp, const int *xi, R_xlen_t nx, int I, int J);
void bnmf_read_data(SEXP data, int K_needed, nmf_data *d);
void bnmf_read_prior(SEXP prior, int use_ard, const nmf_data *d, nmf_prior *pr);
void bnmf_read_state(SEXP state, const nmf_data *d, int what, nmf_state *st);
void bnmf_read_point(SEXP point, const nmf_data *d, int ard, nmf_point *pt);
void bnmf_read_sweep_ctrl(SEXP ctrl, sweep_ctrl *c);
void bnmf_read_chib_ctrl(SEXP ctrl, chib_ctrl *c);
void bnmf_read_kl_ctrl(SEXP ctrl, kl_ctrl *c);
void bnmf_read_kmeans_x(SEXP X, nmf_data *d, const double **x);
SEXP bnmf_named_list(int n, const char **names, SEXP *values);
/* normal.c: a ziggurat's table (normal.c and exponential.c), and the
 * generators' .Call helpers (tests and benchmarks) */
typedef struct {
    double (*f)(double);     /* the decreasing density up to a constant, f(0) = 1 */
    double (*finv)(double);  /* its inverse on (0, 1] */
    double (*tail)(double);  /* int_r^inf f */
} bnmf_zig_shape;
void bnmf_zig_build(const bnmf_zig_shape *sh, int N, double lo, double hi, double *x,
                    double *fx, double *r, double *v);
SEXP bnmf_draws(SEXP n_, double (*draw)(void), int ready, const char *what);
SEXP bnmf_zig_table(double r, double v, const double *x, const double *f, int N,
                    int ready, const char *what);
void bnmf_check_factors(const double *W, const double *H, int I, int J, int K);

/* Gaussian NMF: the scratch (nmf_work.c), the half sweeps (nmf_sweep.c),
 * the moves along the scales (nmf_scale.c), the run of sweeps and tau's
 * update (nmf_run.c) */
void bnmf_sweep_work(const nmf_data *d, sweep_work *ws, double *buf);
size_t bnmf_sweep_work_len(const nmf_data *d);
void bnmf_sweep_threads(const nmf_data *d, sweep_work *ws, int threads);
void bnmf_update_W(const nmf_data *d, const nmf_prior *pr, const double *x,
                   double *W, const double *H, double tau, nmf_rule rule,
                   int masked, sweep_work *ws, const vb_part *vb);
void bnmf_update_W_given(const nmf_data *d, const nmf_prior *pr, double *W,
                         const double *H, double tau, nmf_rule rule, int masked,
                         sweep_work *ws, const vb_part *vb);
void bnmf_update_H(const nmf_data *d, const nmf_prior *pr, const double *x,
                   const double *W, double *H, double tau, nmf_rule rule,
                   int masked, int update, sweep_work *ws, const vb_part *vb,
                   double *lin, double *quad);
/* the building blocks of the half sweeps' rows (and of Chib's, chib.c) */
void bnmf_W_products(const nmf_data *d, const double *x, const double *H, sweep_work *ws,
                     const double *Hvar);
void bnmf_H_products(const nmf_data *d, const double *x, const double *W, sweep_work *ws,
                     const double *Wvar);
void bnmf_W_row_load(const nmf_data *d, const double *W, int i, sweep_work *w);
const double *bnmf_W_row_gram(const nmf_data *d, const double *H, int i, int masked,
                              sweep_work *w, const double *Hvar);
const double *bnmf_H_col_gram(const nmf_data *d, int j, int masked, sweep_work *w,
                              const double *Wv);
void bnmf_W_rows_store(const nmf_data *d, double *W, int i, int nr, const sweep_work *w,
                       const vb_part *vb);

/*
 * An interrupt check every 4096 rows (or columns) of a half sweep, so that a
 * long sweep stops within a fraction of a second. The callers hold R's random
 * number state (bnmf_rng_get()): it is saved before the check, which may jump
 * out, and read back after it.
 */
static inline void bnmf_row_interrupt(int r)
{
    if ((r & 4095) == 4095) {
        bnmf_rng_interrupt();
    }
}

/* Column j's terms of the SSE pieces of bnmf_update_H (and of Chib's half
 * sweeps of H): h_j' f_j into *sl and
 * h_j' G h_j (VB: plus sum_k G[k, k] Var H_kj) into *sq. */
static inline void bnmf_h_sse_terms(const double *G, const double *H, const double *F,
                                    const vb_part *vb, int j, int K, double *sl, double *sq)
{
    const double *hj = H + (size_t) j * K, *fj = F + (size_t) j * K;
    double l = *sl, q = *sq;
    for (int k = 0; k < K; k++) l += hj[k] * fj[k];
    q += bnmf_quad_form(G, hj, K);
    if (vb) {
        const double *v = vb->Hvar + (size_t) j * K;
        for (int k = 0; k < K; k++) q += G[k + (size_t) k * K] * v[k];
    }
    *sl = l;
    *sq = q;
}

void bnmf_scale_sums(const nmf_data *d, const nmf_prior *pr, const double *W,
                     const double *H, int k, double *A, double *B);
void bnmf_scale_move(const nmf_data *d, const nmf_prior *pr, double *W, double *H,
                     int first);
int bnmf_scale_mode(double A, double B, double p, double *u, double *Ay, double *By);
void bnmf_nmf_sweeps(const nmf_data *d, nmf_prior *pr, nmf_state *st,
                     const sweep_ctrl *c, sweep_out *out);
void bnmf_update_tau(const nmf_prior *pr, nmf_rule rule, double tau_shape,
                     double sse, double *tau, double *tau_rate);

/* nmf_kl.c: Lee-Seung updates for the KL divergence */
int bnmf_nmf_kl(const nmf_data *d, nmf_state *st, const kl_ctrl *c, double *tr,
                int *converged);

/* ard.c: the ARD rates lambda_k ~ Gamma(alpha0, beta0) */
double bnmf_factor_mass(const nmf_data *d, const double *W, const double *H, int k);
double bnmf_ard_log_prior(const nmf_data *d, const nmf_prior *pr,
                          const double *lambda, const double *W, const double *H);
void bnmf_ard_update(const nmf_data *d, const nmf_prior *pr, nmf_rule rule,
                     double *lambda, double *rate_out, const double *W,
                     const double *H);
void bnmf_ard_fill_rates(const nmf_data *d, nmf_prior *pr, const double *lambda);
double bnmf_ard_elbo_add(double e, const nmf_data *d, const nmf_prior *pr,
                         const double *W, const double *H, const double *lambda,
                         const double *lambda_rate);
double bnmf_gamma_entropy(double shape, double rate);

/* chib.c */
void bnmf_chib_run(const nmf_data *d, nmf_prior *pr, nmf_state *st,
                   const nmf_point *target, const chib_ctrl *c, double *po);

/* linalg.c */
void bnmf_symmetrise(double *G, int K);
void bnmf_transpose(const double *B, int r, int c, double *Bt);
void bnmf_gram_rows(const double *H, int K, int J, double *G);
void bnmf_gram_cols(const double *W, int I, int K, double *G);
void bnmf_x_g(const nmf_data *d, const double *x, const double *G, const double *Gt,
              double *D, int *cur);
void bnmf_x_ht(const nmf_data *d, const double *x, const double *H, double *D,
               double *Ht, int *cur);
void bnmf_x_ht_rows(const nmf_data *d, const double *x, const double *H, double *Dt,
                    int *cur);
void bnmf_wt_x(const nmf_data *d, const double *x, const double *W, double *F,
               double *Wt, int *cur);
double bnmf_wh_entry(const double *W, const double *H, int I, int K, int i, int j);
/* each(p0, y, n, ctx): the values y[0..n-1] at the stored values p0..p0+n-1 */
typedef void (*sparse_run_fun)(size_t p0, const double *y, int n, void *ctx);
void bnmf_sparse_visit(const nmf_data *d, const double *At, const double *B, int K,
                       int *cur, sparse_run_fun each, void *ctx, const double *const *pf);
double bnmf_sparse_kl_ratio(const nmf_data *d, const double *x, const double *At,
                            const double *B, int K, int *cur, double *Z, int loss_too);
void bnmf_kl_ratio(double *Z, const double *Y, const double *x, size_t n);
double bnmf_kl_loss(const double *x, const double *r, size_t n);
double bnmf_xlog_sum(const double *x, const double *r, size_t n);
void bnmf_obs_sums(double *vs, const double *Ot, int n, const int *mt, int nm, int K,
                   const double *rs);
void bnmf_kl_scale(double *Z, const double *N, int rows, size_t zr, size_t zk,
                   const double *Ot, int n, const int *ptr, const int *idx, int K,
                   const double *rs, double *vs);
double bnmf_wh_latent(const double *W, const double *H, int I, int K, const int *mi,
                      const int *mj, R_xlen_t n, double *Wt, double *v);
double bnmf_sse(const nmf_data *d, const double *x, const double *W, const double *H,
                const vb_part *vb, double sumsq, double sse);

#endif
