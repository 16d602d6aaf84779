/*
 * model.h: the attention-indexed teacher-student model (docs/model.md §1-3).
 *
 * A `model` holds one grid point's sampled teacher S* (d x d, symmetric, Tr(S*^2)/d = 1) and
 * the student's initial parameters, both drawn from counter-based streams keyed by (seed,
 * task stream), so that the same parameters give the same matrices on any rank. All
 * matrices are row-major doubles.
 *
 * Student parameters: direct: S (d x d); tied: W (d x r); untied: U, V (d x r). S = W W^T/kappa
 * or U V^T/kappa with kappa = sqrt(r d) (kappa = 1 for direct).
 */
#ifndef AIMSWEEP_MODEL_H
#define AIMSWEEP_MODEL_H

#include "aimsweep/base/params.h"
#include "aimsweep/model/obs.h"
#include "aimsweep/model/phi.h"

struct model {
    struct params p;
    int d, r, T;
    double kappa;
    double *teacher; /* S*, d x d */
    double t2;       /* Tr(S*)/d */
    /* The teacher as a signed factor: S* = F diag(sign) F^T with F d x k (row-major), so that
     * a sample's teacher index costs k d, not d^2 (k = r* for wishart). */
    double *tF;
    double *tsign;
    int tk;
    /* initial student parameters */
    double *S0; /* direct: d x d, else NULL */
    double *W0; /* tied: W; untied: U (d x r) */
    double *V0; /* untied: V (d x r), else NULL */
    /* The general index (docs/model.md §10): token covariance C = (1 - c) I + c 1 1^T = L L^T
     * (Cholesky, L lower), and cidx[a T + b] = C_ab for the centred index, 0 for the
     * uncentred one (what the index subtracts times Tr S, and the gradient times I). */
    int corr; /* c != 0: tokens are drawn as x = L z */
    double C[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    double L[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    double cidx[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    double mu_star;     /* Tr(S*)/sqrt(d) */
    struct phi_law law; /* the index law Phi is taken under (phi_eval_law) */
};

/* Streams of the counter-based generator, per task. */
enum { STREAM_TEACHER = 1, STREAM_INIT = 2, STREAM_SGD = 3, STREAM_TEST = 100 };

/* Builds the model of a validated parameter set. Returns NULL on allocation (or LAPACK)
 * failure. */
struct model *model_create(const struct params *p);
void model_destroy(struct model **m);

/* The scale c of the orthogonal initialisation (init orthogonal): W = c Q with Q^T Q = I_r,
 * chosen so that Omega11(0) is the Gaussian's expectation at init scale s0 (derived in model.c):
 * c^2 = s0^2 sqrt(d (d + r + 1)) for tied, s0^2 d for untied (each of U and V). */
double model_orthogonal_scale(enum decomp decomposition, int d, int r, double s0);

/* Student state in parameter form, for solvers that evolve it. */
struct student {
    enum decomp decomposition;
    int d, r;
    double kappa;
    double *A; /* S (direct), W (tied) or U (untied) */
    double *B; /* V (untied) or NULL */
};
int student_init_copy(struct student *s, const struct model *m); /* copy of the initial state */
void student_free(struct student *s);

/* Order parameters of a student state: omega11, psi11, omega12, t1 (Tr S / d). Uses BLAS;
 * never forms S for tied/untied except through r x r Gram matrices and S* W. */
struct order_params {
    double omega11, psi11, omega12, t1;
};
/* Returns 0, or -1 when out of memory (then every field is NAN). */
int model_order_params(const struct model *m, const struct student *s, struct order_params *o);

/* The recorded observables of a student state (docs/model.md §8): everything in row but tau and
 * samples. The loss is NAN where Phi cannot be evaluated. Returns 0, or -1 when out of memory. */
int model_observe(const struct model *m, const struct student *s, struct obs_row *row);

/* Forms S = W W^T/kappa (tied), U V^T/kappa (untied) or copies S (direct) into out (d x d). */
void model_form_S(const struct student *s, double *out);

/* The centred attention index of a sample: h[a*T + b] = (x_a^T S x_b - delta_ab Tr S)/sqrt(d)
 * for a d x d matrix S and tokens x (T rows of d). A reference implementation (O(T d^2)). */
void model_index(int d, int T, const double *S, const double *x, double *h);

/* Per-sample loss l = 1/2 sum (Y(h) - Y(h*))^2 over the output entries, and D = dl/dh (T x T,
 * may be NULL). */
double model_loss(const struct act *a, int T, const double *h, const double *hstar, double *D);

/* The same with the choice of docs/model.md §10: outputs OUTPUTS_ALL puts the diagonal entries of an
 * elementwise activation into the loss too (softmax rows always hold them). */
double model_loss_outputs(const struct act *a, int T, enum outputs_kind outputs, const double *h,
                          const double *hstar, double *D);

/* C, its Cholesky factor L and cidx of a parameter set (see struct model), T x T each. */
void model_token_cov(const struct params *p, double *C, double *L, double *cidx);

/* Tokens in place: z (T rows of d, i.i.d. N(0, 1)) becomes x_a = sum_b L_ab z_b. */
void model_correlate(int d, int T, const double *L, double *x);

/* The general index of docs/model.md §10: h[a T + b] = (x_a^T S x_b - cidx_ab Tr S)/sqrt(d) (cidx from
 * model_token_cov). A reference implementation (O(T d^2)). */
void model_index_general(int d, int T, const double *S, const double *x, const double *cidx,
                         double *h);

#endif
