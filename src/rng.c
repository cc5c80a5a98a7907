/* rng.c -- R's uniform random numbers for the package's samplers.
 *
 * Every draw of the package comes from R's generator, so that set.seed()
 * reproduces a fit. R's unif_rand() is a function call through R's table
 * of generators; under L'Ecuyer-CMRG, the kind on which bnmf() runs its
 * chains (one stream a chain), it cost about 19 ns a uniform against 5 ns
 * under Mersenne-Twister, most of a truncated-normal draw. While a routine
 * holds the state here (bnmf_rng_get(1) under L'Ecuyer-CMRG), bnmf_unif()
 * steps the same recurrence from a copy of .Random.seed and writes the
 * state back at bnmf_rng_put(): the same uniforms in the same order, so
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
 *
 * The uniforms are stepped 64 at a time into a buffer (bnmf_mrg_refill()).
 * Each recursion's new value waits on the one before it (the second's on
 * y_{n-1}): one multiplication and reduction after another. So on
 * processors with AVX2 the buffer is filled four values at a time: with
 * the jump-ahead matrices A^1..A^4 of each recursion (from the state
 * (v_{n-3}, v_{n-2}, v_{n-1}), the last row of A^(r+1) gives v_{n+r}), the
 * four are independent linear combinations of the state, reduced exactly
 * in 64-bit lanes (2^32 = 209 mod m1 and 22853 mod m2, folded in). The
 * same values, bit for bit: the tests compare both fills with runif().
 * 4.8 ns a uniform against 11 ns one at a time (bench/unif-speed.R).
 */
#include <stdlib.h>
#include <string.h>
#include "bnmf_call.h"

#ifdef BNMF_AVX2_AT_RUNTIME
#define BNMF_MRG_AVX2 1
#include <immintrin.h>
#endif

attribute_hidden bnmf_rng_state bnmf_rng;

/* ---- the buffer of uniforms ---------------------------------------------- */

#define M1 ((uint64_t) BNMF_MRG_M1)
#define M2 ((uint64_t) BNMF_MRG_M2)

/* The step of R's recursion, one uniform at a time: from the state at
 * xb[0..2], yb[0..2], every u[n] and its two values. */
static void refill_scalar(void)
{
    bnmf_rng_state *g = &bnmf_rng;
    for (int n = 0; n < BNMF_MRG_NB; n++) {
        const uint32_t *x = g->xb + n, *y = g->yb + n;
        /* the products with the negative coefficients turned positive
         * (m - v for v), so that the reductions are unsigned */
        const uint64_t p1 = (1403580ULL * x[1] + 810728ULL * (M1 - x[0])) % M1;
        const uint64_t p2 = (527612ULL * y[2] + 1370589ULL * (M2 - y[0])) % M2;
        g->xb[n + 3] = (uint32_t) p1;
        g->yb[n + 3] = (uint32_t) p2;
        double v = (double) (p1 > p2 ? p1 - p2 : p1 + M1 - p2) *
            2.328306549295727688e-10;   /* 1 / (m1 + 1) */
        /* R's guard against 0 and 1 (half of 1 / (2^32 - 1) inside each end) */
        if (v <= 0.0) v = 0.5 * 2.328306437080797e-10;
        if (1.0 - v <= 0.0) v = 1.0 - 0.5 * 2.328306437080797e-10;
        g->u[n] = v;
    }
}

#ifdef BNMF_MRG_AVX2
/* The last rows of A^1..A^4 of each recursion: jc1[c] holds, lane r, the
 * coefficient of v_{n-3+c} in x_{n+r} (jc2: y). */
static uint32_t jc1[3][4], jc2[3][4];
static int use_avx2 = 0;

/* Four steps at a time (see the top of the file). The values are in [0, m)
 * and their products with the coefficients below 2^64; each is folded once
 * (hi 2^32 + lo = hi c + lo mod m, c = 2^32 - m), their sum again (twice
 * for m2, whose c is larger), and m subtracted where the result is >= m.
 * The combination: x - y, plus m1 where it is <= 0, over m1 + 1, in (0, 1)
 * (R's guard never applies); its conversion to double is exact (< 2^33:
 * the integer's bits under the exponent of 2^52, minus 2^52). */
__attribute__((target("avx2"))) static void refill_avx2(void)
{
    bnmf_rng_state *g = &bnmf_rng;
    const __m256i lo32 = _mm256_set1_epi64x(0xffffffffLL);
    const __m256i k1 = _mm256_set1_epi64x(209), k2 = _mm256_set1_epi64x(22853);
    const __m256i m1 = _mm256_set1_epi64x((long long) M1);
    const __m256i m2 = _mm256_set1_epi64x((long long) M2);
    const __m256i m1l = _mm256_set1_epi64x((long long) M1 - 1);
    const __m256i m2l = _mm256_set1_epi64x((long long) M2 - 1);
    const __m256i exp52 = _mm256_set1_epi64x(0x4330000000000000LL);
    const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
    const __m256d normc = _mm256_set1_pd(2.328306549295727688e-10);
    const __m256i evens = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    __m256i c1[3], c2[3], sx[3], sy[3];
    for (int c = 0; c < 3; c++) {
        c1[c] = _mm256_setr_epi64x(jc1[c][0], jc1[c][1], jc1[c][2], jc1[c][3]);
        c2[c] = _mm256_setr_epi64x(jc2[c][0], jc2[c][1], jc2[c][2], jc2[c][3]);
        sx[c] = _mm256_set1_epi64x(g->xb[c]);
        sy[c] = _mm256_set1_epi64x(g->yb[c]);
    }
#define BNMF_FOLD(v, k) \
    _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(v, 32), k), _mm256_and_si256(v, lo32))
    for (int n = 0; n < BNMF_MRG_NB; n += 4) {
        __m256i x = BNMF_FOLD(_mm256_mul_epu32(c1[0], sx[0]), k1);
        x = _mm256_add_epi64(x, BNMF_FOLD(_mm256_mul_epu32(c1[1], sx[1]), k1));
        x = _mm256_add_epi64(x, BNMF_FOLD(_mm256_mul_epu32(c1[2], sx[2]), k1));
        x = BNMF_FOLD(x, k1);                        /* < 2^32 + 2^18 */
        x = _mm256_sub_epi64(x, _mm256_and_si256(_mm256_cmpgt_epi64(x, m1l), m1));
        __m256i y = BNMF_FOLD(_mm256_mul_epu32(c2[0], sy[0]), k2);
        y = _mm256_add_epi64(y, BNMF_FOLD(_mm256_mul_epu32(c2[1], sy[1]), k2));
        y = _mm256_add_epi64(y, BNMF_FOLD(_mm256_mul_epu32(c2[2], sy[2]), k2));
        y = BNMF_FOLD(BNMF_FOLD(y, k2), k2);         /* < 2^32 + 22853 */
        y = _mm256_sub_epi64(y, _mm256_and_si256(_mm256_cmpgt_epi64(y, m2l), m2));
        /* the next state: lanes 1, 2, 3 */
        sx[0] = _mm256_permute4x64_epi64(x, 0x55);
        sx[1] = _mm256_permute4x64_epi64(x, 0xaa);
        sx[2] = _mm256_permute4x64_epi64(x, 0xff);
        sy[0] = _mm256_permute4x64_epi64(y, 0x55);
        sy[1] = _mm256_permute4x64_epi64(y, 0xaa);
        sy[2] = _mm256_permute4x64_epi64(y, 0xff);
        __m256i d = _mm256_sub_epi64(x, y);
        d = _mm256_add_epi64(d, _mm256_andnot_si256(_mm256_cmpgt_epi64(x, y), m1));
        const __m256d v = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(d, exp52)), two52);
        _mm256_storeu_pd(g->u + n, _mm256_mul_pd(v, normc));
        _mm_storeu_si128((__m128i *) (g->xb + 3 + n),
                         _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x, evens)));
        _mm_storeu_si128((__m128i *) (g->yb + 3 + n),
                         _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(y, evens)));
    }
#undef BNMF_FOLD
}

/* 3 x 3 matrices modulo m < 2^32: C = A B (C may be A or B). */
static void mat_mul_mod(const uint64_t A[3][3], const uint64_t B[3][3], uint64_t C[3][3],
                        uint64_t m)
{
    uint64_t T[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            uint64_t t = 0;
            for (int k = 0; k < 3; k++) t = (t + A[i][k] * B[k][j] % m) % m;
            T[i][j] = t;
        }
    memcpy(C, T, sizeof T);
}
#endif

void bnmf_mrg_init(void)
{
#ifdef BNMF_MRG_AVX2
    /* The recursions as matrices on (v_{n-3}, v_{n-2}, v_{n-1}). */
    const uint64_t A1[3][3] = {{0, 1, 0}, {0, 0, 1}, {M1 - 810728ULL, 1403580ULL, 0}};
    const uint64_t A2[3][3] = {{0, 1, 0}, {0, 0, 1}, {M2 - 1370589ULL, 0, 527612ULL}};
    uint64_t P1[3][3], P2[3][3];
    memcpy(P1, A1, sizeof P1);
    memcpy(P2, A2, sizeof P2);
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 3; c++) {
            jc1[c][r] = (uint32_t) P1[2][c];
            jc2[c][r] = (uint32_t) P2[2][c];
        }
        mat_mul_mod(A1, P1, P1, M1);
        mat_mul_mod(A2, P2, P2, M2);
    }
    __builtin_cpu_init();
    use_avx2 = __builtin_cpu_supports("avx2");
#endif
}

/* BNMF_MRG_FILL=scalar (read at bnmf_rng_get(1)) keeps the one-at-a-time
 * fill: the tests compare both with runif(). */
static int fill_scalar = 0;

void bnmf_mrg_refill(void)
{
    bnmf_rng_state *g = &bnmf_rng;
    memcpy(g->xb, g->s, 3 * sizeof(uint32_t));
    memcpy(g->yb, g->s + 3, 3 * sizeof(uint32_t));
#ifdef BNMF_MRG_AVX2
    if (use_avx2 && !fill_scalar)
        refill_avx2();
    else
#endif
        refill_scalar();
    memcpy(g->s, g->xb + BNMF_MRG_NB, 3 * sizeof(uint32_t));
    memcpy(g->s + 3, g->yb + BNMF_MRG_NB, 3 * sizeof(uint32_t));
    g->pos = 0;
}

/* The state after the last uniform used into s; the rest of the buffer is
 * dropped. */
static void sync_state(void)
{
    bnmf_rng_state *g = &bnmf_rng;
    if (g->pos < BNMF_MRG_NB) {
        memcpy(g->s, g->xb + g->pos, 3 * sizeof(uint32_t));
        memcpy(g->s + 3, g->yb + g->pos, 3 * sizeof(uint32_t));
        g->pos = BNMF_MRG_NB;
    }
}

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
    bnmf_rng.pos = BNMF_MRG_NB;
    bnmf_rng.on = 1;
}

/* .Random.seed from the state held here (R's own copy is then stale; every
 * R entry to the generator reads .Random.seed first). */
static void give_seed(void)
{
    sync_state();
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
        const char *f = getenv("BNMF_MRG_FILL");
        fill_scalar = f && strcmp(f, "scalar") == 0;
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
