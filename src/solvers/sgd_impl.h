/*
 * sgd_impl.h: the state of an SGD run, shared by the step (sgd.c) and its checkpoint bytes
 * (sgd_state.c) and by no one else. The interface is include/aimsweep/solvers/sgd.h; how the
 * parameters are stored (scaled arrays along rows, P and Q for untied) is explained at the top
 * of sgd.c.
 */
#ifndef AIMSWEEP_SOLVERS_SGD_IMPL_H
#define AIMSWEEP_SOLVERS_SGD_IMPL_H

#include "aimsweep/model/model.h"
#include "aimsweep/model/rng.h"
#include "aimsweep/solvers/sgd.h"

struct sgd_state {
    const struct model *m;
    struct student s; /* the parameters in the model's layout, written by sgd_student */
    int synced;       /* s holds the current parameters */
    int d, r, T, k;
    int rows; /* rows of the stored matrices: d (direct) or r; each row has d entries */
    double mu, alpha, sqd;
    struct rng g;
    double *P, *Q;  /* stored parameters (rows x d): S, W^T, or (U + V)^T and (U - V)^T */
    float *Pf, *Qf; /* the same in single precision (P and Q are then NULL) */
    double sp, sq;  /* their scales */
    double *Ft;     /* the teacher's factor transposed (k x d) */
    float *Ftf;     /* the same in single precision (Ft is then NULL) */
    int single;     /* precision single */
    int paired;     /* P and Q in kern.h's paired layout (double, AVX-512, T = 2) */
    double *ptmp;   /* 2 d entries: one pair of rows when the layout is changed in place */
    /* the samples drawn ahead (sgd.c's next_sample): */
    int ahead, nfz;    /* on; the teacher rows projected ahead (those the passes would do) */
    double *ax, *ayy;  /* SGD_AHEAD samples (T x d) and their tokens interleaved (double) */
    float *axf;        /* in single precision: those samples as float (for the kernels) */
    double *az;        /* their teacher rows (T x k each, the first nfz of each row) */
    struct rng *ag;    /* the generator just past each */
    int apos, acount;  /* the next one to take, how many were drawn */
    struct rng gnext;  /* the generator just past xn (what a checkpoint saves) */
    int zn_ready;      /* zn holds xn's first nfz teacher rows */
    float *xf, *xnf;   /* float copies of x and xn for the single-precision kernels */
    double *x, *xn;    /* T x d: this sample and the next */
    double *pa, *pb;   /* T x rows: projections of this sample (S x, W^T x, or U^T x and V^T x) */
    double *pan, *pbn; /* the same for the next sample */
    double *z, *zn;    /* T x k teacher projections of this and the next sample */
    double *ca, *cb;   /* T x rows: coefficients of the rank-T correction */
    double trS, trP;   /* Tr S and Tr S* */
    double nU, nV;     /* |U|^2, |V|^2 (untied), updated in closed form with Tr S */
    long n;
};

#endif
