/*
 * blas_threads.c -- the number of threads of R's BLAS, read and set at run
 * time where the library says how.
 *
 * Tasks run as futures (chains, restarts, ranks, folds; R/tasks.R) run side
 * by side, one per core. A multithreaded BLAS in each of them (OpenBLAS
 * starts one thread per core by default, as Debian, Ubuntu and conda give
 * it to R) puts several threads on every core, and those threads wait for
 * each other: two chains on two workers of a 2-core machine then finished
 * no faster than one after the other (bench/README.md, "chains.R"). So a
 * task in a worker runs with one BLAS thread and gives the worker back its
 * setting when it ends.
 *
 * R offers no interface to the BLAS's threads. The libraries that have one
 * export it as a C function: FlexiBLAS (whatever backend it forwards to),
 * OpenBLAS and Intel MKL, looked for in that order among the symbols of
 * the R process (the BLAS is loaded with R, in its global scope). R's
 * reference BLAS, Apple's Accelerate and the others have none: then
 * nothing is changed and the calls say so.
 */
#include "bnmf_call.h"
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define BNMF_HAVE_DLSYM 1
#endif

typedef int (*threads_get)(void);
typedef void (*threads_set)(int);

/* the libraries whose thread count bnmf can read and set: their number is
 * the code C_blas_threads returns (1-based; 0 for none) */
static const char *const lib_get[] = {"flexiblas_get_num_threads",
                                      "openblas_get_num_threads", "MKL_Get_Max_Threads"};
static const char *const lib_set[] = {"flexiblas_set_num_threads",
                                      "openblas_set_num_threads", "MKL_Set_Num_Threads"};
#define N_LIBS 3

#ifdef BNMF_HAVE_DLSYM
/* A function of the process's global scope (the R executable and the
 * libraries loaded with it, R's BLAS among them), or NULL. The pointer is
 * copied out through a void * as POSIX prescribes for dlsym(): ISO C has
 * no conversion from an object pointer to a function pointer. */
static int find_pair(const char *get_name, const char *set_name, threads_get *get,
                     threads_set *set)
{
    void *self = dlopen(NULL, RTLD_LAZY);
    if (!self) return 0;
    void *g = dlsym(self, get_name), *s = dlsym(self, set_name);
    dlclose(self);
    if (!g || !s) return 0;
    memcpy(get, &g, sizeof g);
    memcpy(set, &s, sizeof s);
    return 1;
}
#endif

/**
 * Read, and optionally set, the number of threads of R's BLAS.
 * @param n    the number of threads to set (> 0), or 0 to read only
 * @param lib  receives the library found: 1 FlexiBLAS, 2 OpenBLAS, 3 MKL,
 *             0 none (then nothing is read or set)
 * @return the number of threads before the call (0 when lib is 0)
 */
static int blas_threads(int n, int *lib)
{
    *lib = 0;
#ifdef BNMF_HAVE_DLSYM
    for (int l = 0; l < N_LIBS; l++) {
        threads_get get;
        threads_set set;
        if (!find_pair(lib_get[l], lib_set[l], &get, &set)) continue;
        const int before = get();
        if (n > 0 && n != before) set(n);
        *lib = l + 1;
        return before;
    }
#else
    (void) n;
#endif
    return 0;
}

/* .Call entry: n (one integer, 1 to 1024, or NA to read only) -> c(threads
 * before, library code), both NA when no library was found */
SEXP bnmf_blas_threads_call(SEXP n)
{
    if (!Rf_isInteger(n) || XLENGTH(n) != 1) Rf_error("blas_threads: `n` must be one integer");
    const int want = INTEGER(n)[0];
    if (want != NA_INTEGER && (want < 1 || want > 1024))
        Rf_error("blas_threads: `n` must be NA or between 1 and 1024");
    int lib;
    const int before = blas_threads(want == NA_INTEGER ? 0 : want, &lib);
    SEXP out = PROTECT(Rf_allocVector(INTSXP, 2));
    INTEGER(out)[0] = lib ? before : NA_INTEGER;
    INTEGER(out)[1] = lib ? lib : NA_INTEGER;
    UNPROTECT(1);
    return out;
}
