/*
 * sgd_reference.c: one SGD step written as docs/model.md §4 states it, the gradient g formed as
 * a d x d matrix and applied to the parameters in the model's layout (sgd.h). Slow and plain on
 * purpose: the tests check the fused step of sgd.c and sgd_direct.c against it.
 */
#include <math.h>
#include <stdlib.h>

#include <cblas.h>

#include "aimsweep/solvers/sgd.h"

int sgd_reference_step(const struct params *p, struct student *s, const double *teacher,
                       const double *x)
{
    int d = s->d, r = s->r, T = p->tokens, rc = 0;
    double *S = malloc(sizeof(double) * (size_t)d * d), *g = calloc((size_t)d * d, sizeof(double));
    if (!S || !g) {
        rc = -1;
        goto out;
    }
    double h[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS], hs[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS],
        D[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    model_form_S(s, S);
    double C[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS], L[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS],
        ci[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    model_token_cov(p, C, L, ci);
    model_index_general(d, T, S, x, ci, h);
    model_index_general(d, T, teacher, x, ci, hs);
    model_loss_outputs(&p->activation, T, p->outputs, h, hs, D);
    double sqd = sqrt((double)d), mu = p->lr / d,
           alpha = 1 - p->weight_decay * p->lr / ((double)d * d);
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double f = D[a * T + b] / sqd;
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++)
                    g[(size_t)i * d + j] += f * (x[(size_t)a * d + i] * x[(size_t)b * d + j] -
                                                 (i == j) * ci[a * T + b]);
        }
    if (s->decomposition == DECOMP_DIRECT) {
        for (size_t i = 0; i < (size_t)d * d; i++)
            s->A[i] = alpha * s->A[i] - mu * g[i];
    } else if (s->decomposition == DECOMP_TIED) {
        double *H = malloc(sizeof(double) * (size_t)d * d),
               *HW = malloc(sizeof(double) * (size_t)d * r);
        if (!H || !HW) {
            free(H);
            free(HW);
            rc = -1;
            goto out;
        }
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++)
                H[(size_t)i * d + j] = g[(size_t)i * d + j] + g[(size_t)j * d + i];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, d, 1.0, H, d, s->A, r, 0.0, HW,
                    r);
        for (size_t i = 0; i < (size_t)d * r; i++)
            s->A[i] = alpha * s->A[i] - mu * HW[i];
        free(H);
        free(HW);
    } else {
        double *gV = malloc(sizeof(double) * (size_t)d * r),
               *gU = malloc(sizeof(double) * (size_t)d * r);
        if (!gV || !gU) {
            free(gV);
            free(gU);
            rc = -1;
            goto out;
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, d, 1.0, g, d, s->B, r, 0.0, gV,
                    r);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, r, d, 1.0, g, d, s->A, r, 0.0, gU,
                    r);
        for (size_t i = 0; i < (size_t)d * r; i++) {
            s->A[i] = alpha * s->A[i] - mu * gV[i];
            s->B[i] = alpha * s->B[i] - mu * gU[i];
        }
        free(gV);
        free(gU);
    }
out:
    free(S);
    free(g);
    return rc;
}
