/*
 * sgd_impl.h: the state of an SGD run, shared by the step (sgd.c) and its checkpoint bytes
 * (sgd_state.c) and by no one else. The interface is include/aimsweep/solvers/sgd.h; how the
 * parameters are stored (scaled arrays along rows, P and Q for untied) is explained at the top
 * of sgd.c. The functions below are the ones the step's files share: sgd.c (the steps, tied
 * and untied, the run), sgd_direct.c (direct's step), sgd_two.c (two steps per pass),
 * sgd_sym.c (half of direct's symmetric S), sgd_sample.c (the samples and their teacher
 * projections).
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
    int ahead, nfz;    /* samples a draw (0: off); the teacher rows projected ahead (all, k) */
    double *ax, *ayy;  /* `ahead` samples (T x d) and their tokens interleaved (double) */
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
    /* two steps per pass (sgd_two.c): */
    int two;      /* on: double with the paired layout, tied and untied in single */
    int pending;  /* P (Q) lacks the last step's correction cp (cq) along xp (direct: its
                     diagonal term is in) */
    int yn_ready; /* pan (pbn) holds the projections of xn on the stored P (Q) (pending 0) */
    double *xp;   /* T x d: the deferred step's tokens */
    float *xpf;   /* their float copy (precision single) */
    double *cp;   /* T x rows: its correction of P (over the scale) */
    double *pnn;  /* T x rows: projections on P of the sample after xn, from the two-step pass */
    double *cq;   /* untied: the deferred correction of Q */
    double *pbnn; /* untied: the projections on Q of the sample after xn */
    int cols;     /* tied and untied in single on this path: Pf (Qf) in bands of SGD_COLS_BAND
                     rows, each band column by column (sgd_two.c) */
    float *colsw; /* SGD_COLS_BAND d floats of scratch for turning them (NULL: never turned) */
    /* direct with an elementwise activation (sgd_sym.c): */
    int sym;      /* P holds K, S = K + K^T; the projections pa, pan, pnn are on K */
    int half_off; /* sgd_set_symmetric(0): the whole S kept, whatever the path */
    double *hx;   /* 2 T x d: the two corrections' tokens, one band halved (double) */
    float *hxf;   /* the same in single precision, then SGD_SYM_BAND x d floats of scratch for
                     the conversions of P (sgd_sym.c) */
    long n;
};

/* A scale outside [SGD_SCALE_MIN, 1/SGD_SCALE_MIN] is folded into its array at once. */
#define SGD_SCALE_MIN 0x1p-32
/* Samples drawn ahead with the paired layout (their teacher rows from one read of F), in double
 * and in single precision. In double, F's reads (wishart(0.5): 640 KB at d = 400, beside the
 * parameters' 1.28 MB in a second-level cache of 2 MB) come back from the third level after
 * each pass; 32 samples a read instead of 8 made direct and untied 1.03-1.05x as fast at d = 400
 * and 1600, tied 1.03x at 400 and 0.99-1.01x at 800 (bench/compare.sh, three rounds), 64 no
 * faster. In single, 32 gained nothing (0.94-1.00x). The count changes no bit: each sample's
 * sums are made alike. */
#define SGD_AHEAD 32
#define SGD_AHEAD_F32 8

/* The rows of a band of sgd_sym.c's K. */
#define SGD_SYM_BAND 32
/* The rows of a band of tied's and untied's float matrices on the two-step path (sgd_two.c): as
 * many as kern_band2_project2_f32 takes, two vectors of 16 rows a loop with AVX-512. */
#define SGD_COLS_BAND 32

/* sgd_sample.c */
void sgd_draw_next(struct sgd_state *st);
void sgd_ahead_rows(struct sgd_state *st);
void sgd_next_sample(struct sgd_state *st);
const double *sgd_peek_sample(struct sgd_state *st);
const float *sgd_peek_sample_f32(struct sgd_state *st);
void sgd_teacher_rest(struct sgd_state *st, const double *y, const float *yf, double *z, int from);
/* sgd.c */
void sgd_scale_by(double *a, float *af, size_t n, double *s, double f);
void sgd_uv_from_pq(double *p, double *q, size_t n);
size_t sgd_at(const struct sgd_state *st, int i, int j);
double sgd_dot_rows(const double *p, const double *c, int n, int T);
void sgd_pass(struct sgd_state *st, double *M, float *Mf, double s, double *C, double *O, int *f);
/* sgd_direct.c */
void sgd_step_direct(struct sgd_state *st, const double *D, double trD);
/* sgd_two.c: P <- alpha P and P_ii += diag over the new scale (the one-step path's start); a step
 * of the two-step path with corrections e[0] of P and, for untied, e[1] of Q (T x rows, divided
 * by the scale in place), factors alpha[0] and alpha[1], and diagonal term diag (0 but for
 * direct); the deferred corrections applied now, if there are. */
void sgd_scale_and_diag(struct sgd_state *st, double alpha, double diag);
void sgd_two_step(struct sgd_state *st, double *const e[2], double diag, const double alpha[2]);
void sgd_two_flush(struct sgd_state *st);
/* Where tied's and untied's float matrices (rows x d) keep entry (i, j) in bands column by
 * column; the state's float matrices into that layout (on, where the state has the scratch) or
 * back to row-major; the projections of Y (T x d floats) on a float matrix M in that layout into
 * O (T x rows), as the two-step pass sums them. */
size_t sgd_cols_at(int rows, int d, int i, int j);
void sgd_cols_set(struct sgd_state *st, int on);
void sgd_cols_project(const struct sgd_state *st, float *M, const float *Y, double *O);
/* sgd_sym.c: whether the state can keep K (direct, two steps per pass, an elementwise activation,
 * T = 2, d even); S's entry (i, j) over the scale from K; P from S to K (a state that keeps K)
 * and back (K over bands of `band` rows, -band for single's bands column by column; 0, or -1
 * with P untouched for a band it cannot read or when a state that keeps no K has no memory for
 * the scratch), the whole S row-major or paired; where K's entry (i, j) lies in single (j from
 * the start of i's band on); the two-step kernel
 * (sgd_two.c's) on K, the tokens of the corrections st->xp, st->x (and their float copies),
 * the projections of Y and Y2 (double, or the float copies in single precision); the closed
 * form of a deferring step on the projections o of y (d entries) on K, from the step's e
 * (T x d), tokens x, alpha and diagonal term (S's). */
int sgd_sym_possible(const struct sgd_state *st);
double sgd_sym_entry(const struct sgd_state *st, int i, int j);
void sgd_sym_from_full(struct sgd_state *st, int paired);
int sgd_sym_to_full(struct sgd_state *st, int paired, int band);
size_t sgd_sym_at_f32(int d, int i, int j);
/* Where the float P keeps its diagonal entry (i, i): K's place (sgd_sym_at_f32) or row-major. */
size_t sgd_diag_at_f32(const struct sgd_state *st, int i);
void sgd_sym_kernel(struct sgd_state *st, const double *C1, double dg, const double *C2,
                    const double *Y, const float *Yf, const double *Y2, const float *Y2f, double *O,
                    double *O2);
void sgd_sym_closed(const struct sgd_state *st, double *o, const double *e, const double *x,
                    const double *y, double alpha, double diag);
/* sgd.c: the projections pa of the current sample made again on P as it is stored (K or S). */
void sgd_project_current(struct sgd_state *st);

#endif
