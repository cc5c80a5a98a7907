/* particles.h -- kernels of the particle (Stein-weighted) fits: stein.c,
 * simplex_qp.c and svgd.c. Plain C pointers only; the .Call entries are in bnmf_call.h. */
#ifndef BNMF_PARTICLES_H
#define BNMF_PARTICLES_H
#include "bnmf.h"

/** The M x M Stein kernel matrix of particles split into B blocks (stein.c). */
void bnmf_stein_kernel(double **T, double **S, const int *d, int B, int M,
                       const double *par, double *K);

/** min w'Kw on the simplex by a primal active-set method (simplex_qp.c). */
int bnmf_simplex_qp(const double *K0, int M, double *w, double tol, int maxit,
                    int *iter);

/** Relative KKT residual of w for min w'Kw on the simplex (simplex_qp.c). */
double bnmf_simplex_kkt(const double *K, int M, const double *w);
/** SVGD directions and the score-fixed part of the gradient of w'Kw (svgd.c). */
void bnmf_stein_directions(double **T, double **S, const int *d, int B, int M,
                           const double *par, const double *w, double **V, double **G);

#endif
