/* rng.c -- R's uniform random numbers for the package's samplers.
 *
 * Every draw of the package comes from R's generator, so that set.seed()
 * reproduces a fit. R's unif_rand() is a function call through R's table
 * of generators; under L'Ecuyer-CMRG, the kind on which bnmf() runs its
 * chains (one stream a chain), it cost about 19 ns a uniform against 5 ns
 * under Mersenne-Twister, most of a truncated-normal draw. While a routine
 * holds the state here (bnmf_rng_get(1) under L'Ecuyer-CMRG), bnmf_unif()
 * steps the same recurrence inline from a copy of .Random.seed and writes
 * the copy back at bnmf_rng_put(): the same uniforms in the same order, so
 * every fit is the same as with unif_rand().
 *
 * The recurrence is MRG32k3a (L'Ecuyer 1999, "Good parameters and
 * implementations for combined multiple recursive random number
 * generators", Operations Research 47, 159-164), as ?RNGkind describes R's
 * "L'Ecuyer-CMRG": two order-3 recursions modulo m1 = 2^32 - 209 and
 * m2 = 2^32 - 22853,
 *   x_n = (1403580 x_{n-2} - 810728 x_{n-3}) mod m1,
 *   y_n = (527612 y_{n-1} - 1370589 y_{n-3}) mod m2,
 * combined as ((x_n - y_n) mod m1) / (m1 + 1), where a difference of 0
 * counts as m1; .Random.seed holds (x_{n-3}, x_{n-2}, x_{n-1}, y_{n-3},
 * y_{n-2}, y_{n-1}). R then keeps the value strictly inside (0, 1)
 * (never the case for this generator's values, but applied alike). The
 * tests compare bnmf_unif() with runif() bit for bit.
 */
#include <stdlib.h>
#include "bnmf_call.h"

attribute_hidden bnmf_rng_state bnmf_rng;

/* .Random.seed's code of L'Ecuyer-CMRG: the uniform kind (7) plus 100 x the
 * normal kind plus 10000 x the sample kind, which only R's own draws use. */
#define LECUYER_KIND 7

static SEXP seed_sym(void)
{
    static SEXP sym = NULL;
    if (!sym) sym = Rf_install(".Random.seed");
    return sym;
}

/* Copy .Random.seed into bnmf_rng when it holds a valid L'Ecuyer-CMRG state
 * (each recursion's three values not all zero and below its modulus; R
 * replaces any other by fresh seeds, and unif_rand() is left to do so). */
static void take_seed(void)
{
    bnmf_rng.on = 0;
    SEXP s = Rf_findVarInFrame(R_GlobalEnv, seed_sym());
    if (TYPEOF(s) != INTSXP || XLENGTH(s) != 7) return;
    const int *p = INTEGER(s);
    if (p[0] == NA_INTEGER || p[0] < 0 || p[0] % 100 != LECUYER_KIND) return;
    uint32_t v[6];
    int nz1 = 0, nz2 = 0;
    for (int i = 0; i < 6; i++) {
        v[i] = (uint32_t) p[i + 1];
        if (i < 3) {
            if (v[i] >= BNMF_MRG_M1) return;
            nz1 |= v[i] != 0;
        } else {
            if (v[i] >= BNMF_MRG_M2) return;
            nz2 |= v[i] != 0;
        }
    }
    if (!nz1 || !nz2) return;
    for (int i = 0; i < 6; i++) bnmf_rng.s[i] = v[i];
    bnmf_rng.code = p[0];
    bnmf_rng.on = 1;
}

/* .Random.seed from the state held here (R's own copy is then stale; every
 * R entry to the generator reads .Random.seed first). */
static void give_seed(void)
{
    SEXP s = PROTECT(Rf_allocVector(INTSXP, 7));
    int *p = INTEGER(s);
    p[0] = bnmf_rng.code;
    for (int i = 0; i < 6; i++) p[i + 1] = (int) bnmf_rng.s[i];
    Rf_defineVar(seed_sym(), s, R_GlobalEnv);
    UNPROTECT(1);
    bnmf_rng.on = 0;
}

/* The environment variable BNMF_RNG_INLINE=0 keeps every draw in R's
 * unif_rand(): the tests compare fits with and without the inline steps. */
void bnmf_rng_get(int own)
{
    GetRNGstate();
    if (own) {
        const char *e = getenv("BNMF_RNG_INLINE");
        if (e && e[0] == '0') own = 0;
    }
    bnmf_rng.own = own;
    bnmf_rng.on = 0;
    if (own) take_seed();
}

void bnmf_rng_put(void)
{
    if (bnmf_rng.on) give_seed();
    else PutRNGstate();
}

void bnmf_rng_interrupt(void)
{
    const int own = bnmf_rng.own;
    bnmf_rng_put();
    R_CheckUserInterrupt();
    bnmf_rng_get(own);
}

int bnmf_rng_lend(void)
{
    if (!bnmf_rng.on) return 0;
    give_seed();
    GetRNGstate();
    return 1;
}

void bnmf_rng_reclaim(int lent)
{
    if (!lent) return;
    PutRNGstate();
    take_seed();
}

/* ---- .Call entry point (tests) ----------------------------------------- */

/* n uniforms through bnmf_unif(), one Gamma(shape, 1) draw of R's rgamma()
 * lent the state, then n more uniforms: under L'Ecuyer-CMRG the tests
 * compare them with c(runif(n), rgamma(1, shape), runif(n)). */
SEXP bnmf_unif_call(SEXP n_, SEXP shape_)
{
    if ((TYPEOF(n_) != REALSXP && TYPEOF(n_) != INTSXP) || XLENGTH(n_) != 1)
        Rf_error("`n` must be a single whole number from 0 to 1e7.");
    const double dn = Rf_asReal(n_);
    if (ISNAN(dn) || dn < 0.0 || dn != floor(dn) || dn > 1e7)
        Rf_error("`n` must be a single whole number from 0 to 1e7.");
    if (TYPEOF(shape_) != REALSXP || XLENGTH(shape_) != 1 || !R_FINITE(REAL(shape_)[0]) ||
        !(REAL(shape_)[0] > 0.0))
        Rf_error("`shape` must be a single positive finite number.");
    const R_xlen_t n = (R_xlen_t) dn;
    const double shape = REAL(shape_)[0];
    SEXP out = PROTECT(Rf_allocVector(REALSXP, 2 * n + 1));
    double *po = REAL(out);
    bnmf_rng_get(1);
    for (R_xlen_t i = 0; i < n; i++) po[i] = bnmf_unif();
    const int lent = bnmf_rng_lend();
    po[n] = rgamma(shape, 1.0);
    bnmf_rng_reclaim(lent);
    for (R_xlen_t i = 0; i < n; i++) po[n + 1 + i] = bnmf_unif();
    bnmf_rng_put();
    UNPROTECT(1);
    return out;
}
