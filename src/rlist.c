/*
 * rlist.c -- every reading of the R lists of the engine: the data made by
 * prepare_data(), the priors, the chain states made by new_state()
 * (R/engine-nmf.R), nmtf_new_state() (R/engine-nmtf.R) and the Poisson fits
 * (R/engine-poisson.R), and the named controls of each routine. Components are found by name; a
 * missing or malformed one is an internal error that names it.
 *
 * Nothing is computed here; the checks are those that keep the kernels'
 * indexing in bounds (sizes, pointers, index ranges) and their contracts
 * (finite, non-negative factors; tau, lambda > 0; rates >= 0).
 */
#include <limits.h>
#include "bnmf_call.h"
#include "nmf.h"
#include "nmtf.h"
#include "pois.h"

/* The argument n of the generators' .Call entries (normal.c, exponential.c,
 * truncnorm.c): a single non-negative whole number, as an R_xlen_t. */
R_xlen_t bnmf_count_arg(SEXP n_)
{
    if ((TYPEOF(n_) != REALSXP && TYPEOF(n_) != INTSXP) || XLENGTH(n_) != 1)
        Rf_error("`n` must be a single non-negative whole number.");
    const double dn = Rf_asReal(n_);
    if (ISNAN(dn) || dn < 0.0 || dn != floor(dn) || dn > (double) R_XLEN_T_MAX)
        Rf_error("`n` must be a single non-negative whole number.");
    return (R_xlen_t) dn;
}

/* The component `name` of a named list, or R_NilValue when there is none. */
SEXP bnmf_list_get_opt(SEXP list, const char *name)
{
    if (TYPEOF(list) != VECSXP)
        Rf_error("bnmf internal error: a named list is expected (looking for '%s')", name);
    SEXP names = Rf_getAttrib(list, R_NamesSymbol);
    if (TYPEOF(names) != STRSXP || XLENGTH(names) != XLENGTH(list))
        Rf_error("bnmf internal error: a named list is expected (looking for '%s')", name);
    for (R_xlen_t t = 0; t < XLENGTH(list); t++)
        if (strcmp(CHAR(STRING_ELT(names, t)), name) == 0)
            return VECTOR_ELT(list, t);
    return R_NilValue;
}

SEXP bnmf_list_get(SEXP list, const char *name)
{
    SEXP v = bnmf_list_get_opt(list, name);
    if (v == R_NilValue)
        Rf_error("bnmf internal error: component '%s' is missing", name);
    return v;
}

double *bnmf_real_elt(SEXP list, const char *name, R_xlen_t len)
{
    SEXP v = bnmf_list_get(list, name);
    if (TYPEOF(v) != REALSXP || (len >= 0 && XLENGTH(v) != len))
        Rf_error("bnmf internal error: '%s' must be a double vector of length %lld",
                 name, (long long) len);
    return REAL(v);
}

const int *bnmf_int_elt(SEXP list, const char *name, R_xlen_t len)
{
    SEXP v = bnmf_list_get(list, name);
    if (TYPEOF(v) != INTSXP || (len >= 0 && XLENGTH(v) != len))
        Rf_error("bnmf internal error: '%s' must be an integer vector of length %lld",
                 name, (long long) len);
    return INTEGER(v);
}

/* A state's factors: finite and non-negative. */
void bnmf_check_factors(const double *W, const double *H, int I, int J, int K)
{
    if (!bnmf_all_nonneg_finite(W, (R_xlen_t) I * K))
        Rf_error("bnmf internal error: W must be finite and non-negative");
    if (!bnmf_all_nonneg_finite(H, (R_xlen_t) K * J))
        Rf_error("bnmf internal error: H must be finite and non-negative");
}

/* The structure of an I x J sparse matrix in compressed columns: column
 * pointers xp (J + 1) from 0 to nx, never decreasing, and row indices xi
 * (nx) within 0..I-1. */
void bnmf_check_csc(const int *xp, const int *xi, R_xlen_t nx, int I, int J)
{
    if (xp[0] != 0 || xp[J] != nx)
        Rf_error("bnmf internal error: bad column pointers");
    for (int j = 0; j < J; j++)
        if (xp[j + 1] < xp[j])
            Rf_error("bnmf internal error: bad column pointers");
    for (R_xlen_t p = 0; p < nx; p++)
        if (xi[p] < 0 || xi[p] >= I)
            Rf_error("bnmf internal error: row index out of range");
}

/* Read and check the data description made by prepare_data() in R. */
void bnmf_read_data(SEXP data, int K_needed, nmf_data *d)
{
    if (TYPEOF(data) != VECSXP)
        Rf_error("bnmf internal error: data must be a list");
    const int *dims = bnmf_int_elt(data, "dims", 3);
    d->I = dims[0]; d->J = dims[1]; d->K = dims[2];
    if (d->I < 1 || d->J < 1 || (K_needed && d->K < 1))
        Rf_error("bnmf internal error: dimensions must be positive");
    const int I = d->I, J = d->J;
    d->sparse = *bnmf_int_elt(data, "sparse", 1) != 0;
    R_xlen_t nx = (R_xlen_t) I * J;
    if (d->sparse) {
        d->xp = bnmf_int_elt(data, "xp", (R_xlen_t) J + 1);
        nx = d->xp[J];
        if (nx < 0) Rf_error("bnmf internal error: bad column pointers");
        d->xi = bnmf_int_elt(data, "xi", nx);
        bnmf_check_csc(d->xp, d->xi, nx, I, J);
    } else {
        d->xi = d->xp = NULL;
    }
    d->nx = nx;
    R_xlen_t nmiss = XLENGTH(bnmf_list_get(data, "miss_pos"));
    if (nmiss > nx || nmiss > INT_MAX)
        Rf_error("bnmf internal error: too many missing entries");
    d->nmiss = (int) nmiss;
    d->miss_pos = bnmf_int_elt(data, "miss_pos", d->nmiss);
    d->miss_i = bnmf_int_elt(data, "miss_i", d->nmiss);
    d->miss_j = bnmf_int_elt(data, "miss_j", d->nmiss);
    d->mcol_ptr = bnmf_int_elt(data, "mcol_ptr", (R_xlen_t) J + 1);
    d->mrow_ptr = bnmf_int_elt(data, "mrow_ptr", (R_xlen_t) I + 1);
    d->mrow_j = bnmf_int_elt(data, "mrow_j", d->nmiss);
    for (int m = 0; m < d->nmiss; m++)
        if (d->miss_pos[m] < 0 || d->miss_pos[m] >= nx || d->miss_i[m] < 0 ||
            d->miss_i[m] >= I || d->miss_j[m] < 0 || d->miss_j[m] >= J ||
            d->mrow_j[m] < 0 || d->mrow_j[m] >= J)
            Rf_error("bnmf internal error: missing-entry index out of range");
    if (d->mcol_ptr[0] != 0 || d->mcol_ptr[J] != d->nmiss || d->mrow_ptr[0] != 0 ||
        d->mrow_ptr[I] != d->nmiss)
        Rf_error("bnmf internal error: bad missing-entry pointers");
    for (int j = 0; j < J; j++)
        if (d->mcol_ptr[j + 1] < d->mcol_ptr[j])
            Rf_error("bnmf internal error: bad missing-entry pointers");
    for (int i = 0; i < I; i++)
        if (d->mrow_ptr[i + 1] < d->mrow_ptr[i])
            Rf_error("bnmf internal error: bad missing-entry pointers");
    d->sumsq_obs = *bnmf_real_elt(data, "sumsq_obs", 1);
    d->n_obs = *bnmf_real_elt(data, "n_obs", 1);
}

/* Read and check the prior list (see bnmf_nmf_sweeps_call). With ARD (and
 * use_ard) the entry-wise rates are scratch copies that the sweeps refresh
 * from lambda. */
void bnmf_read_prior(SEXP prior, int use_ard, const nmf_data *d, nmf_prior *pr)
{
    const int I = d->I, J = d->J, K = d->K;
    pr->lamW = bnmf_real_elt(prior, "lamW", (R_xlen_t) I * K);
    pr->lamH = bnmf_real_elt(prior, "lamH", (R_xlen_t) K * J);
    pr->alpha = *bnmf_real_elt(prior, "alpha", 1);
    pr->beta = *bnmf_real_elt(prior, "beta", 1);
    if (!(pr->alpha > 0.0) || !(pr->beta > 0.0) || !R_FINITE(pr->alpha) || !R_FINITE(pr->beta))
        Rf_error("bnmf internal error: the noise prior needs shape > 0 and rate > 0");
    SEXP ard = bnmf_list_get_opt(prior, "ard");
    pr->ard = 0;
    pr->alpha0 = pr->beta0 = 0.0;
    if (ard != R_NilValue &&
        (TYPEOF(ard) != REALSXP || (XLENGTH(ard) != 0 && XLENGTH(ard) != 2)))
        Rf_error("bnmf internal error: prior$ard must be numeric(0) or c(alpha0, beta0)");
    if (ard != R_NilValue && XLENGTH(ard) == 2 && use_ard) {
        pr->ard = 1;
        pr->alpha0 = REAL(ard)[0];
        pr->beta0 = REAL(ard)[1];
        if (!(pr->alpha0 > 0.0) || !(pr->beta0 > 0.0) || !R_FINITE(pr->alpha0) ||
            !R_FINITE(pr->beta0))
            Rf_error("bnmf internal error: ARD needs alpha0 > 0 and beta0 > 0");
        /* The rates are refreshed from lambda: work on copies. */
        double *lw = (double *) R_alloc((size_t) I * K, sizeof(double));
        double *lh = (double *) R_alloc((size_t) K * J, sizeof(double));
        pr->lamW = lw;
        pr->lamH = lh;
    }
    if (!pr->ard) {
        if (!bnmf_all_nonneg_finite(pr->lamW, (R_xlen_t) I * K) ||
            !bnmf_all_nonneg_finite(pr->lamH, (R_xlen_t) K * J))
            Rf_error("bnmf internal error: rates must be finite and >= 0");
    }
}


/* An optional double vector of the state: NULL unless `want`. */
static double *state_elt(SEXP state, int want, const char *name, R_xlen_t len)
{
    return want ? bnmf_real_elt(state, name, len) : NULL;
}

/**
 * Read a chain state (the list made by new_state() in R/engine-nmf.R) by name.
 * @param state the list; its vectors are updated in place by the kernels
 * @param d     the data (sizes)
 * @param what  STATE_* flags: the optional parts to read (W, H and x always)
 * @param st    receives pointers into the list (NULL for parts not read)
 */
void bnmf_read_state(SEXP state, const nmf_data *d, int what, nmf_state *st)
{
    if (TYPEOF(state) != VECSXP)
        Rf_error("bnmf internal error: state must be a list");
    const R_xlen_t IK = (R_xlen_t) d->I * d->K, KJ = (R_xlen_t) d->K * d->J;
    const int K = d->K;
    const int lam = (what & STATE_LAMBDA) != 0, mom = (what & STATE_MOMENTS) != 0;
    const int vb = (what & STATE_VB) != 0;
    st->W = bnmf_real_elt(state, "W", IK);
    st->H = bnmf_real_elt(state, "H", KJ);
    st->tau = state_elt(state, what & STATE_TAU, "tau", 1);
    st->x = bnmf_real_elt(state, "x", d->nx);
    st->sumsq = state_elt(state, what & STATE_SUMSQ, "sumsq", 1);
    st->logpost = state_elt(state, what & STATE_TRACK, "logpost", 1);
    st->n_kept = state_elt(state, what & STATE_TRACK, "n_kept", 1);
    if (st->tau && (!(*st->tau > 0.0) || !R_FINITE(*st->tau)))
        Rf_error("bnmf internal error: tau must be positive and finite");
    bnmf_check_factors(st->W, st->H, d->I, d->J, K);
    st->lambda = state_elt(state, lam, "lambda", K);
    for (int k = 0; lam && k < K; k++)
        if (!(st->lambda[k] > 0.0) || !R_FINITE(st->lambda[k]))
            Rf_error("bnmf internal error: lambda must be positive and finite");
    st->W_mean = state_elt(state, mom, "W_mean", IK);
    st->W_m2 = state_elt(state, mom, "W_m2", IK);
    st->H_mean = state_elt(state, mom, "H_mean", KJ);
    st->H_m2 = state_elt(state, mom, "H_m2", KJ);
    st->tau_mean = state_elt(state, mom, "tau_mean", 1);
    st->tau_m2 = state_elt(state, mom, "tau_m2", 1);
    /* WH's moments are kept only when they are asked for (length 0 else) */
    const int wh = mom && XLENGTH(bnmf_list_get(state, "WH_mean")) > 0;
    st->WH_mean = state_elt(state, wh, "WH_mean", d->nx);
    st->WH_m2 = state_elt(state, wh, "WH_m2", d->nx);
    st->n_wh = state_elt(state, wh, "n_wh", 1);
    /* The sweeps' scratch, when the state has one (else R_alloc) */
    SEXP work = bnmf_list_get_opt(state, "work");
    st->work = TYPEOF(work) == REALSXP ? REAL(work) : NULL;
    st->n_work = TYPEOF(work) == REALSXP ? (size_t) XLENGTH(work) : 0;
    st->wh_wait = state_elt(state, wh, "wh_wait", 1);
    st->lambda_mean = state_elt(state, mom && lam, "lambda_mean", K);
    st->lambda_m2 = state_elt(state, mom && lam, "lambda_m2", K);
    st->W_var = state_elt(state, vb, "W_var", IK);
    st->H_var = state_elt(state, vb, "H_var", KJ);
    st->W_ent = state_elt(state, vb, "W_ent", IK);
    st->H_ent = state_elt(state, vb, "H_ent", KJ);
    st->tau_rate = state_elt(state, vb, "tau_rate", 1);
    st->lambda_rate = state_elt(state, vb && lam, "lambda_rate", K);
}

/**
 * Read a point theta* = list(W, H, tau[, lambda]) (Chib's target).
 * @param ard read lambda too
 */
void bnmf_read_point(SEXP point, const nmf_data *d, int ard, nmf_point *pt)
{
    if (TYPEOF(point) != VECSXP)
        Rf_error("bnmf internal error: the target point must be a list");
    pt->W = bnmf_real_elt(point, "W", (R_xlen_t) d->I * d->K);
    pt->H = bnmf_real_elt(point, "H", (R_xlen_t) d->K * d->J);
    pt->tau = *bnmf_real_elt(point, "tau", 1);
    if (!(pt->tau > 0.0) || !R_FINITE(pt->tau))
        Rf_error("bnmf internal error: tau must be positive and finite");
    bnmf_check_factors(pt->W, pt->H, d->I, d->J, d->K);
    pt->lambda = ard ? bnmf_real_elt(point, "lambda", d->K) : NULL;
    for (int k = 0; ard && k < d->K; k++)
        if (!(pt->lambda[k] > 0.0) || !R_FINITE(pt->lambda[k]))
            Rf_error("bnmf internal error: lambda must be positive and finite");
}

/* ---- named controls ----------------------------------------------------- */

/* Refuse components of ctrl that no routine reads (a misspelt name would
 * otherwise be ignored). */
static void ctrl_check_names(SEXP ctrl, const char *const *known, int n)
{
    SEXP names = Rf_getAttrib(ctrl, R_NamesSymbol);
    if (TYPEOF(ctrl) != VECSXP || TYPEOF(names) != STRSXP ||
        XLENGTH(names) != XLENGTH(ctrl))
        Rf_error("bnmf internal error: ctrl must be a named list");
    for (R_xlen_t t = 0; t < XLENGTH(names); t++) {
        const char *nm = CHAR(STRING_ELT(names, t));
        int found = 0;
        for (int u = 0; u < n && !found; u++) found = strcmp(nm, known[u]) == 0;
        if (!found) Rf_error("bnmf internal error: ctrl$%s is not a control of this routine", nm);
    }
}

static SEXP ctrl_field(SEXP ctrl, const char *name)
{
    SEXP v = bnmf_list_get_opt(ctrl, name);
    if (v == R_NilValue) Rf_error("bnmf internal error: ctrl$%s is missing", name);
    return v;
}

/* A finite number (integer or double, length 1). */
static double ctrl_number(SEXP ctrl, const char *name)
{
    SEXP v = ctrl_field(ctrl, name);
    double x = NA_REAL;
    if (XLENGTH(v) == 1 && TYPEOF(v) == REALSXP) x = REAL(v)[0];
    else if (XLENGTH(v) == 1 && TYPEOF(v) == INTSXP && INTEGER(v)[0] != NA_INTEGER)
        x = INTEGER(v)[0];
    if (!R_FINITE(x))
        Rf_error("bnmf internal error: ctrl$%s must be one finite number", name);
    return x;
}

/* A whole number in [lo, 2^31). */
static int ctrl_count(SEXP ctrl, const char *name, int lo)
{
    const double x = ctrl_number(ctrl, name);
    if (x < lo || x > INT_MAX || x != floor(x))
        Rf_error("bnmf internal error: ctrl$%s must be a whole number in [%d, 2^31)",
                 name, lo);
    return (int) x;
}

static int ctrl_flag(SEXP ctrl, const char *name)
{
    SEXP v = ctrl_field(ctrl, name);
    if (TYPEOF(v) != LGLSXP || XLENGTH(v) != 1 || LOGICAL(v)[0] == NA_LOGICAL)
        Rf_error("bnmf internal error: ctrl$%s must be TRUE or FALSE", name);
    return LOGICAL(v)[0] != 0;
}

/* The position of a string among `choices` (said as `expected`). */
static int ctrl_choice(SEXP ctrl, const char *name, const char *const *choices, int n,
                       const char *expected)
{
    SEXP v = ctrl_field(ctrl, name);
    if (TYPEOF(v) == STRSXP && XLENGTH(v) == 1 && STRING_ELT(v, 0) != NA_STRING) {
        const char *s = CHAR(STRING_ELT(v, 0));
        for (int t = 0; t < n; t++)
            if (strcmp(s, choices[t]) == 0) return t;
    }
    Rf_error("bnmf internal error: ctrl$%s must be %s", name, expected);
    return -1;
}

/**
 * The controls of nmf_sweeps: list(n, rule = "gibbs" | "icm" | "vb" | "np",
 * masked, accumulate, thin, keep_draws, update_W, update_H, update_tau, tol).
 */
void bnmf_read_sweep_ctrl(SEXP ctrl, sweep_ctrl *c)
{
    static const char *const known[] = {"n", "rule", "masked", "accumulate", "thin",
        "keep_draws", "update_W", "update_H", "update_tau", "tol", "wh_thin", "threads"};
    static const char *const rules[] = {"gibbs", "icm", "vb", "np"}; /* as nmf_rule */
    ctrl_check_names(ctrl, known, 12);
    c->n = ctrl_count(ctrl, "n", 0);
    c->rule = (nmf_rule) ctrl_choice(ctrl, "rule", rules, 4,
                                     "\"gibbs\", \"icm\", \"vb\" or \"np\"");
    c->masked = ctrl_flag(ctrl, "masked");
    c->accumulate = ctrl_flag(ctrl, "accumulate");
    c->thin = ctrl_count(ctrl, "thin", 1);
    c->keep_draws = ctrl_flag(ctrl, "keep_draws");
    c->wh_thin = ctrl_count(ctrl, "wh_thin", 1);
    c->update_W = ctrl_flag(ctrl, "update_W");
    c->update_H = ctrl_flag(ctrl, "update_H");
    c->update_tau = ctrl_flag(ctrl, "update_tau");
    c->tol = ctrl_number(ctrl, "tol");
    c->threads = ctrl_count(ctrl, "threads", 1);
    if (c->threads > 1024) Rf_error("bnmf internal error: ctrl$threads must be at most 1024");
}

/**
 * The controls of chib_run: list(burnin, samples, block = "W" | "H" | "tau",
 * index (1-based factor of a W or H block), sym, orbit).
 */
void bnmf_read_chib_ctrl(SEXP ctrl, chib_ctrl *c)
{
    static const char *const known[] = {"burnin", "samples", "block", "index", "sym",
        "orbit"};
    static const char *const blocks[] = {"W", "H", "tau"}; /* as chib_block */
    ctrl_check_names(ctrl, known, 6);
    c->burnin = ctrl_count(ctrl, "burnin", 0);
    c->samples = ctrl_count(ctrl, "samples", 1);
    if (c->samples > INT_MAX - c->burnin)
        Rf_error("bnmf internal error: need ctrl$burnin + ctrl$samples < 2^31");
    c->block = (chib_block) ctrl_choice(ctrl, "block", blocks, 3,
                                        "\"W\", \"H\" or \"tau\"");
    c->index = ctrl_count(ctrl, "index", 1) - 1;
    c->sym = ctrl_flag(ctrl, "sym");
    c->orbit = ctrl_flag(ctrl, "orbit");
}

/** The controls of nmf_kl: list(n, tol, update_W). */
void bnmf_read_kl_ctrl(SEXP ctrl, kl_ctrl *c)
{
    static const char *const known[] = {"n", "tol", "update_W"};
    ctrl_check_names(ctrl, known, 3);
    c->n = ctrl_count(ctrl, "n", 0);
    c->tol = ctrl_number(ctrl, "tol");
    c->update_W = ctrl_flag(ctrl, "update_W");
}

/**
 * A named list of n values (each PROTECTed by the caller); returned
 * unprotected.
 */
SEXP bnmf_named_list(int n, const char **names, SEXP *values)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
    SEXP nms = PROTECT(Rf_allocVector(STRSXP, n));
    for (int t = 0; t < n; t++) {
        SET_VECTOR_ELT(out, t, values[t]);
        SET_STRING_ELT(nms, t, Rf_mkChar(names[t]));
    }
    Rf_setAttrib(out, R_NamesSymbol, nms);
    UNPROTECT(2);
    return out;
}

/* kmeans_rows' X (kmeans.c): a double matrix, or list(i, p, x, Dim) of a
 * dgCMatrix, into d (I, J, and the sparse layout) and its values *x. */
void bnmf_read_kmeans_x(SEXP X, nmf_data *d, const double **x)
{
    if (TYPEOF(X) == VECSXP) {
        if (XLENGTH(X) != 4) Rf_error("kmeans_rows: `X` must be list(i, p, x, Dim)");
        SEXP xi = VECTOR_ELT(X, 0), xp = VECTOR_ELT(X, 1), xx = VECTOR_ELT(X, 2),
             dim = VECTOR_ELT(X, 3);
        if (TYPEOF(xi) != INTSXP || TYPEOF(xp) != INTSXP || TYPEOF(xx) != REALSXP ||
            TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2 || XLENGTH(xi) != XLENGTH(xx))
            Rf_error("kmeans_rows: `X` must be list(i, p, x, Dim) of a dgCMatrix");
        d->I = INTEGER(dim)[0];
        d->J = INTEGER(dim)[1];
        if (d->I < 0 || d->J < 0 || XLENGTH(xp) != (R_xlen_t) d->J + 1)
            Rf_error("kmeans_rows: the column pointers of `X` do not fit its shape");
        bnmf_check_csc(INTEGER(xp), INTEGER(xi), XLENGTH(xi), d->I, d->J);
        d->sparse = 1;
        d->xi = INTEGER(xi);
        d->xp = INTEGER(xp);
        d->nx = XLENGTH(xx);
        *x = REAL(xx);
    } else {
        if (TYPEOF(X) != REALSXP || !Rf_isMatrix(X))
            Rf_error("kmeans_rows: `X` must be a double matrix");
        d->I = Rf_nrows(X);
        d->J = Rf_ncols(X);
        d->nx = XLENGTH(X);
        *x = REAL(X);
    }
}

/* ---- the tri-factorisation (nmtf_*.c) ---- */

/**
 * The controls of nmtf_sweeps: list(n, rule = "gibbs" | "icm" | "vb" | "np",
 * loss = "euclidean" | "kl", accumulate, thin, keep_draws, update_F,
 * update_S, update_G, update_tau, scale, tol).
 */
void bnmf_read_nmtf_ctrl(SEXP ctrl, nmtf_ctrl *c)
{
    static const char *const known[] = {"n", "rule", "loss", "accumulate", "thin",
        "keep_draws", "update_F", "update_S", "update_G", "update_tau", "scale", "tol"};
    static const char *const rules[] = {"gibbs", "icm", "vb", "np"}; /* as nmf_rule */
    static const char *const losses[] = {"euclidean", "kl"};
    ctrl_check_names(ctrl, known, 12);
    c->n = ctrl_count(ctrl, "n", 0);
    c->rule = (nmf_rule) ctrl_choice(ctrl, "rule", rules, 4,
                                     "\"gibbs\", \"icm\", \"vb\" or \"np\"");
    c->kl = ctrl_choice(ctrl, "loss", losses, 2, "\"euclidean\" or \"kl\"") == 1 &&
        c->rule == RULE_MULT;
    static const char *const flags[] = {"accumulate", "keep_draws", "update_F",
        "update_S", "update_G", "update_tau", "scale"};
    int *const dest[] = {&c->accumulate, &c->keep_draws, &c->update_F, &c->update_S,
        &c->update_G, &c->update_tau, &c->scale};
    for (int t = 0; t < 7; t++) *dest[t] = ctrl_flag(ctrl, flags[t]);
    c->accumulate = c->accumulate && c->rule == RULE_DRAW;
    c->thin = ctrl_count(ctrl, "thin", 1);
    c->tol = ctrl_number(ctrl, "tol");
}

/* A tri-factorisation's state (the list of nmtf_new_state() in R/engine-nmtf.R) by name:
 * its optional parts with ARD (ard), running moments (acc), VB (vb). */
void bnmf_read_nmtf_state(SEXP state, const nmf_data *d, int K, int L, int ard, int acc,
                          int vb, nmtf_state *st)
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
    st->lamF = state_elt(state, ard, "lambda_F", K);
    st->lamG = state_elt(state, ard, "lambda_G", L);
    st->F_mean = state_elt(state, acc, "F_mean", I * K);
    st->F_m2 = state_elt(state, acc, "F_m2", I * K);
    st->S_mean = state_elt(state, acc, "S_mean", (R_xlen_t) K * L);
    st->S_m2 = state_elt(state, acc, "S_m2", (R_xlen_t) K * L);
    st->G_mean = state_elt(state, acc, "G_mean", J * L);
    st->G_m2 = state_elt(state, acc, "G_m2", J * L);
    st->tau_mean = state_elt(state, acc, "tau_mean", 1);
    st->tau_m2 = state_elt(state, acc, "tau_m2", 1);
    st->row_hits = state_elt(state, acc, "row_hits", I * K);
    st->col_hits = state_elt(state, acc, "col_hits", J * L);
    st->lamF_mean = state_elt(state, acc && ard, "lambda_F_mean", K);
    st->lamF_m2 = state_elt(state, acc && ard, "lambda_F_m2", K);
    st->lamG_mean = state_elt(state, acc && ard, "lambda_G_mean", L);
    st->lamG_m2 = state_elt(state, acc && ard, "lambda_G_m2", L);
    if (acc) {
        const R_xlen_t nx = XLENGTH(bnmf_list_get(state, "X_mean"));
        if (nx != 0 && nx != d->nx) Rf_error("bnmf internal error: X_mean has the wrong length");
        if (nx) {
            st->X_mean = bnmf_real_elt(state, "X_mean", nx);
            st->X_m2 = bnmf_real_elt(state, "X_m2", nx);
        }
    }
    st->F_var = state_elt(state, vb, "F_var", I * K);
    st->S_var = state_elt(state, vb, "S_var", (R_xlen_t) K * L);
    st->G_var = state_elt(state, vb, "G_var", J * L);
    st->F_ent = state_elt(state, vb, "F_ent", I * K);
    st->S_ent = state_elt(state, vb, "S_ent", (R_xlen_t) K * L);
    st->G_ent = state_elt(state, vb, "G_ent", J * L);
    st->tau_rate = state_elt(state, vb, "tau_rate", 1);
    st->lamF_rate = state_elt(state, vb && ard, "lambda_F_rate", K);
    st->lamG_rate = state_elt(state, vb && ard, "lambda_G_rate", L);
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
void bnmf_read_nmtf_prior(SEXP prior, nmtf_prior *pr)
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

/* ---- the Poisson likelihood (pois_*.c) ---- */

/* The prior: list(a, b, c, d) and, for the beta process, a0W, b0W, a0H, b0H. */
void bnmf_pois_read_prior(SEXP prior, int beta, pois_prior *pp)
{
    pp->a = *bnmf_real_elt(prior, "a", 1);
    pp->b = *bnmf_real_elt(prior, "b", 1);
    pp->c = *bnmf_real_elt(prior, "c", 1);
    pp->d = *bnmf_real_elt(prior, "d", 1);
    if (!(pp->a > 0.0 && pp->b > 0.0 && pp->c > 0.0 && pp->d > 0.0) || !R_FINITE(pp->a) ||
        !R_FINITE(pp->b) || !R_FINITE(pp->c) || !R_FINITE(pp->d))
        Rf_error("bnmf internal error: Gamma shapes and rates must be finite and > 0");
    pp->a0W = pp->b0W = pp->a0H = pp->b0H = 1.0;
    /* ARD (optional): ard = c(alpha0, beta0); b and d are then not used */
    pp->ard = 0;
    pp->alpha0 = pp->beta0 = 1.0;
    if (bnmf_list_get_opt(prior, "ard") != R_NilValue) {
        const double *h = bnmf_real_elt(prior, "ard", 2);
        if (!(h[0] > 0.0 && h[1] > 0.0) || !R_FINITE(h[0]) || !R_FINITE(h[1]))
            Rf_error("bnmf internal error: ARD alpha0, beta0 must be finite and > 0");
        pp->ard = 1;
        pp->alpha0 = h[0];
        pp->beta0 = h[1];
    }
    if (!beta) return;
    pp->a0W = *bnmf_real_elt(prior, "a0W", 1);
    pp->b0W = *bnmf_real_elt(prior, "b0W", 1);
    pp->a0H = *bnmf_real_elt(prior, "a0H", 1);
    pp->b0H = *bnmf_real_elt(prior, "b0H", 1);
    if (!(pp->a0W > 0.0 && pp->b0W > 0.0 && pp->a0H > 0.0 && pp->b0H > 0.0))
        Rf_error("bnmf internal error: beta-process parameters must be > 0");
}

/* Gamma shapes and rates of q, finite and > 0, read by name. */
static double *gamma_part(SEXP state, const char *name, R_xlen_t n)
{
    double *v = bnmf_real_elt(state, name, n);
    for (R_xlen_t t = 0; t < n; t++)
        if (!(v[t] > 0.0) || !R_FINITE(v[t]))
            Rf_error("bnmf internal error: '%s' must be finite and > 0", name);
    return v;
}

/** Read the Gamma factors of q: shape_W, rate_W (I x K), shape_H, rate_H (K x J). */
void bnmf_pois_read_q(SEXP state, const pois_data *pd, double **alW, double **beW,
                      double **alH, double **beH)
{
    const R_xlen_t nW = (R_xlen_t) pd->I * pd->K, nH = (R_xlen_t) pd->K * pd->J;
    *alW = gamma_part(state, "shape_W", nW);
    *beW = gamma_part(state, "rate_W", nW);
    *alH = gamma_part(state, "shape_H", nH);
    *beH = gamma_part(state, "rate_H", nH);
}

/* A control: one finite number. */
double bnmf_pois_ctrl(SEXP ctrl, const char *name)
{
    const double v = *bnmf_real_elt(ctrl, name, 1);
    if (!R_FINITE(v)) Rf_error("bnmf internal error: ctrl$%s must be finite", name);
    return v;
}

/* A count control: a whole number in [lo, 2^31). */
int bnmf_pois_count(SEXP ctrl, const char *name, int lo)
{
    const double v = bnmf_pois_ctrl(ctrl, name);
    if (v < lo || v > INT_MAX || v != floor(v))
        Rf_error("bnmf internal error: ctrl$%s must be a whole number in [%d, 2^31)", name, lo);
    return (int) v;
}

/* Read q: its Gamma factors, W, H (the means) and elbo. */
void bnmf_pois_read_vb_state(SEXP state, const pois_data *pd, pois_vb_state *q)
{
    bnmf_pois_read_q(state, pd, &q->alW, &q->beW, &q->alH, &q->beH);
    q->W = bnmf_real_elt(state, "W", (R_xlen_t) pd->I * pd->K);
    q->H = bnmf_real_elt(state, "H", (R_xlen_t) pd->K * pd->J);
    q->elbo = bnmf_real_elt(state, "elbo", 1);
    q->alL = q->beL = NULL;
}

/* With ARD, q(lambda_k) = Gamma(shape_lambda[k], rate_lambda[k]). */
void bnmf_pois_read_vb_lambda(SEXP state, const pois_data *pd, pois_vb_state *q)
{
    q->alL = gamma_part(state, "shape_lambda", pd->K);
    q->beL = gamma_part(state, "rate_lambda", pd->K);
}

/* With ARD, a Gibbs state's lambda (K, > 0) and its running sum. */
void bnmf_pois_read_gibbs_lambda(SEXP state, const pois_data *pd, pois_gibbs_state *st)
{
    st->lambda = gamma_part(state, "lambda", pd->K);
    st->lambda_sum = bnmf_real_elt(state, "lambda_sum", pd->K);
}

/* Read a Gibbs state: W, H, logpost, n_kept, W_sum, W_sq, H_sum, H_sq,
 * WH_sum (length I J, or 0: not kept). */
void bnmf_pois_read_gibbs_state(SEXP state, const pois_data *pd, pois_gibbs_state *st)
{
    const R_xlen_t nW = (R_xlen_t) pd->I * pd->K, nH = (R_xlen_t) pd->K * pd->J;
    st->W = bnmf_real_elt(state, "W", nW);
    st->H = bnmf_real_elt(state, "H", nH);
    bnmf_check_factors(st->W, st->H, pd->I, pd->J, pd->K);
    st->logpost = bnmf_real_elt(state, "logpost", 1);
    st->n_kept = bnmf_real_elt(state, "n_kept", 1);
    st->W_sum = bnmf_real_elt(state, "W_sum", nW);
    st->W_sq = bnmf_real_elt(state, "W_sq", nW);
    st->H_sum = bnmf_real_elt(state, "H_sum", nH);
    st->H_sq = bnmf_real_elt(state, "H_sq", nH);
    SEXP wh = bnmf_list_get(state, "WH_sum");
    st->WH_sum = NULL;
    if (XLENGTH(wh) > 0)
        st->WH_sum = bnmf_real_elt(state, "WH_sum", (R_xlen_t) pd->I * pd->J);
    st->lambda = st->lambda_sum = NULL;
}

/* A mask: an integer vector of 0s and 1s. */
int *bnmf_pois_mask_elt(SEXP list, const char *name, R_xlen_t len)
{
    SEXP v = bnmf_list_get(list, name);
    if (TYPEOF(v) != INTSXP || XLENGTH(v) != len)
        Rf_error("bnmf internal error: '%s' must be an integer vector of length %lld", name,
                 (long long) len);
    int *s = INTEGER(v);
    for (R_xlen_t t = 0; t < len; t++)
        if (s[t] != 0 && s[t] != 1) Rf_error("bnmf internal error: '%s' must be 0 or 1", name);
    return s;
}

/* Read an SSVI state: q(W), q(H), q(pi), the masks, the last draws, the
 * steps and the final averages. */
void bnmf_pois_read_ssvi_state(SEXP state, const pois_data *pd, ssvi_state *st)
{
    const R_xlen_t nW = (R_xlen_t) pd->I * pd->K, nH = (R_xlen_t) pd->K * pd->J;
    bnmf_pois_read_q(state, pd, &st->nuW, &st->rhoW, &st->nuH, &st->rhoH);
    const char *beta[] = {"pi_W_shape1", "pi_W_shape2", "pi_H_shape1", "pi_H_shape2"};
    double **bp[] = {&st->alW, &st->beW, &st->alH, &st->beH};
    for (int t = 0; t < 4; t++) *bp[t] = bnmf_real_elt(state, beta[t], pd->K);
    st->SW = bnmf_pois_mask_elt(state, "SW", nW);
    st->SH = bnmf_pois_mask_elt(state, "SH", nH);
    const char *big[] = {"W", "H", "SW_sum", "SH_sum", "WS_sum", "HS_sum"};
    double **bg[] = {&st->W, &st->H, &st->SW_sum, &st->SH_sum, &st->WS_sum, &st->HS_sum};
    for (int t = 0; t < 6; t++) *bg[t] = bnmf_real_elt(state, big[t], t % 2 ? nH : nW);
    st->steps = bnmf_real_elt(state, "steps", 1);
    st->n_acc = bnmf_real_elt(state, "n_acc", 1);
}
