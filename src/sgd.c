/*
 * sgd.c: online SGD of the student (MODEL.md §4).
 *
 * One step, with g = sum_ab D_ab (x_a x_b^T - delta_ab I)/sqrt(d), mu = eta/d and
 * alpha = 1 - lambda eta/d^2 (weight decay):
 *   direct: S <- alpha S - mu g
 *   tied:   W <- alpha W - mu (g + g^T) W
 *   untied: U <- alpha U - mu g V,  V <- alpha V - mu g^T U
 * With the projections a_t = W^T x_t (tied), p_t = U^T x_t, q_t = V^T x_t (untied) or
 * y_t = S x_t (direct), every update is a rank-T correction plus a multiple of the parameters:
 *   (g + g^T) W = sum_a x_a c_a^T - 2 trD W/sqrt(d),  c_a = sum_b (D_ab + D_ba) a_b / sqrt(d),
 *   g V = sum_a x_a (sum_b D_ab q_b)^T/sqrt(d) - trD V/sqrt(d), and likewise g^T U.
 * The step is one pass over the rows of the parameters that writes the new row and, from it,
 * accumulates the projections of the next sample (drawn before the pass) and the trace of S.
 * So each parameter is read once and written once per step, and S is never formed.
 */
#include "aimsweep/sgd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "aimsweep/rng.h"

/* A step whose attention index exceeds this in magnitude (or is not finite) has diverged. */
#define SGD_H_MAX 1e6

struct sgd_state {
    const struct model *m;
    struct student s;
    int d, r, T, k;
    double mu, alpha, sqd;
    struct rng g;
    double *x, *xn;       /* T x d: this sample and the next */
    double *pa, *pb;      /* T x r (T x d for direct): projections of this sample */
    double *pan, *pbn;    /* the same, being accumulated for the next sample */
    double *z, *zn;       /* T x k teacher projections of this and the next sample */
    double *ca, *cb;      /* T x r coefficient vectors of the rank-T update */
    double trS, trP;      /* Tr S and Tr S* */
    double nU, nV;        /* |U|^2, |V|^2 (untied), updated in closed form with Tr S */
    long n;
};

/* Draws the next sample and its teacher projections z_t = F^T x_t. For T = 2 a blocked loop
 * (four rows of F per pass over the accumulators) beats a 2-row GEMM call. */
static void draw_next(struct sgd_state *st)
{
    const struct model *m = st->m;
    int d = st->d, k = st->k;
    rng_normals(&st->g, st->xn, (size_t)st->T * d);
    if (st->T != 2) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, st->T, k, d, 1.0, st->xn, d, m->tF, k, 0.0,
                    st->zn, k);
        return;
    }
    const double *F = m->tF, *y = st->xn;
    double *z0 = st->zn, *z1 = st->zn + k;
    memset(st->zn, 0, sizeof(double) * 2 * (size_t)k);
    int i = 0;
    for (; i + 4 <= d; i += 4) {
        const double *f0 = F + (size_t)i * k, *f1 = f0 + k, *f2 = f1 + k, *f3 = f2 + k;
        double e0 = y[i], e1 = y[i + 1], e2 = y[i + 2], e3 = y[i + 3];
        double g0 = y[d + i], g1 = y[d + i + 1], g2 = y[d + i + 2], g3 = y[d + i + 3];
#pragma omp simd
        for (int j = 0; j < k; j++) {
            z0[j] += e0 * f0[j] + e1 * f1[j] + e2 * f2[j] + e3 * f3[j];
            z1[j] += g0 * f0[j] + g1 * f1[j] + g2 * f2[j] + g3 * f3[j];
        }
    }
    for (; i < d; i++) {
        const double *f = F + (size_t)i * k;
        double e = y[i], g = y[d + i];
#pragma omp simd
        for (int j = 0; j < k; j++) {
            z0[j] += e * f[j];
            z1[j] += g * f[j];
        }
    }
}

static void swap(double **a, double **b)
{
    double *t = *a;
    *a = *b;
    *b = t;
}

/* Every SGD_RESYNC steps the norms kept in closed form are recomputed from the parameters,
 * so that rounding cannot accumulate (the schedule depends on the step count only). */
#define SGD_RESYNC 4096

static void sgd_resync(struct sgd_state *st)
{
    const struct student *s = &st->s;
    int n = s->d * s->r;
    if (s->decomposition == DECOMP_TIED) {
        st->trS = cblas_ddot(n, s->A, 1, s->A, 1) / s->kappa;
    } else if (s->decomposition == DECOMP_UNTIED) {
        st->trS = cblas_ddot(n, s->A, 1, s->B, 1) / s->kappa;
        st->nU = cblas_ddot(n, s->A, 1, s->A, 1);
        st->nV = cblas_ddot(n, s->B, 1, s->B, 1);
    }
}

/* Projections of the current sample from scratch (at start). */
static void project_current(struct sgd_state *st)
{
    int d = st->d, r = st->r, T = st->T;
    const struct student *s = &st->s;
    if (s->decomposition == DECOMP_DIRECT) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, d, d, 1.0, st->x, d, s->A, d, 0.0, st->pa, d);
        st->trS = 0;
        for (int i = 0; i < d; i++)
            st->trS += s->A[(size_t)i * d + i];
        return;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, r, d, 1.0, st->x, d, s->A, r, 0.0, st->pa, r);
    if (s->decomposition == DECOMP_UNTIED) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, r, d, 1.0, st->x, d, s->B, r, 0.0, st->pb, r);
    }
    sgd_resync(st);
}

struct sgd_state *sgd_state_create(const struct model *m) { return sgd_state_create_at(m, 0); }

struct sgd_state *sgd_state_create_at(const struct model *m, long first)
{
    struct sgd_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    const struct params *p = &m->p;
    st->m = m;
    st->d = m->d;
    st->r = m->r;
    st->T = m->T;
    st->k = m->tk;
    st->mu = p->lr / m->d;
    st->alpha = 1.0 - p->weight_decay * p->lr / ((double)m->d * m->d);
    st->sqd = sqrt((double)m->d);
    st->trP = m->t2 * m->d;
    if (student_init_copy(&st->s, m))
        goto fail;
    size_t Td = (size_t)st->T * st->d, Tr = (size_t)st->T * (p->decomposition == DECOMP_DIRECT ? st->d : st->r);
    size_t Tk = (size_t)st->T * st->k;
    double **bufs[] = {&st->x, &st->xn, &st->pa, &st->pb, &st->pan, &st->pbn, &st->ca, &st->cb};
    size_t sizes[] = {Td, Td, Tr, Tr, Tr, Tr, Tr, Tr};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!(*bufs[i] = malloc(sizeof(double) * sizes[i])))
            goto fail;
    if (!(st->z = malloc(sizeof(double) * Tk)) || !(st->zn = malloc(sizeof(double) * Tk)))
        goto fail;
    rng_init(&st->g, p->seed, STREAM_SGD, (uint32_t)m->d);
    rng_seek_normal(&st->g, (uint64_t)first * Td);
    draw_next(st);
    swap(&st->x, &st->xn);
    swap(&st->z, &st->zn);
    project_current(st);
    draw_next(st);
    return st;
fail:
    sgd_state_destroy(&st);
    return NULL;
}

void sgd_state_destroy(struct sgd_state **pst)
{
    if (!pst || !*pst)
        return;
    struct sgd_state *st = *pst;
    student_free(&st->s);
    free(st->x);
    free(st->xn);
    free(st->pa);
    free(st->pb);
    free(st->pan);
    free(st->pbn);
    free(st->z);
    free(st->zn);
    free(st->ca);
    free(st->cb);
    free(st);
    *pst = NULL;
}

const struct student *sgd_student(const struct sgd_state *st) { return &st->s; }
long sgd_count(const struct sgd_state *st) { return st->n; }

/* The T x T indices of the current sample, student h and teacher hs. Returns 0, or 1 when an
 * entry is not finite or exceeds SGD_H_MAX. */
static int indices(const struct sgd_state *st, double *h, double *hs)
{
    int T = st->T, k = st->k;
    int len = st->s.decomposition == DECOMP_DIRECT ? st->d : st->r;
    const double *L = st->s.decomposition == DECOMP_DIRECT ? st->x : st->pa;
    const double *R = st->s.decomposition == DECOMP_UNTIED ? st->pb : st->pa;
    double scale = st->s.decomposition == DECOMP_DIRECT ? 1.0 : 1.0 / st->s.kappa;
    const double *sg = st->m->tsign;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double v = 0, t = 0;
            const double *la = L + (size_t)a * len, *rb = R + (size_t)b * len;
#pragma omp simd reduction(+ : v)
            for (int j = 0; j < len; j++)
                v += la[j] * rb[j];
            const double *za = st->z + (size_t)a * k, *zb = st->z + (size_t)b * k;
#pragma omp simd reduction(+ : t)
            for (int j = 0; j < k; j++)
                t += sg[j] * za[j] * zb[j];
            h[a * T + b] = (v * scale - (a == b ? st->trS : 0)) / st->sqd;
            hs[a * T + b] = (t - (a == b ? st->trP : 0)) / st->sqd;
            if (!(fabs(h[a * T + b]) <= SGD_H_MAX))
                return 1;
        }
    return 0;
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < n; j++)
        s += a[j] * b[j];
    return s;
}

/* The tied pass for T = 2: W <- alpha W - x0 c0^T - x1 c1^T row by row, accumulating the next
 * sample's projections n = W_new^T y. Four rows at a time, so the accumulators are loaded and
 * stored once per four rows. `scaled` is a constant at each call: without weight decay and
 * with a zero-diagonal D, alpha = 1 and the multiply drops out. */
static inline __attribute__((always_inline)) void tied_pass2(double *W, int d, int r, const double *c0,
                                                             const double *c1, const double *x,
                                                             const double *y, double *pan, double alpha,
                                                             int scaled)
{
    double *n0 = pan, *n1 = pan + r;
    int i = 0;
    for (; i + 4 <= d; i += 4) {
        double *w0 = W + (size_t)i * r, *w1 = w0 + r, *w2 = w1 + r, *w3 = w2 + r;
        double a0 = x[i], a1 = x[i + 1], a2 = x[i + 2], a3 = x[i + 3];
        double b0 = x[d + i], b1 = x[d + i + 1], b2 = x[d + i + 2], b3 = x[d + i + 3];
        double e0 = y[i], e1 = y[i + 1], e2 = y[i + 2], e3 = y[i + 3];
        double f0 = y[d + i], f1 = y[d + i + 1], f2 = y[d + i + 2], f3 = y[d + i + 3];
#pragma omp simd
        for (int j = 0; j < r; j++) {
            double v0 = (scaled ? alpha * w0[j] : w0[j]) - a0 * c0[j] - b0 * c1[j];
            double v1 = (scaled ? alpha * w1[j] : w1[j]) - a1 * c0[j] - b1 * c1[j];
            double v2 = (scaled ? alpha * w2[j] : w2[j]) - a2 * c0[j] - b2 * c1[j];
            double v3 = (scaled ? alpha * w3[j] : w3[j]) - a3 * c0[j] - b3 * c1[j];
            w0[j] = v0;
            w1[j] = v1;
            w2[j] = v2;
            w3[j] = v3;
            n0[j] += e0 * v0 + e1 * v1 + e2 * v2 + e3 * v3;
            n1[j] += f0 * v0 + f1 * v1 + f2 * v2 + f3 * v3;
        }
    }
    for (; i < d; i++) {
        double *w = W + (size_t)i * r;
        double x0 = x[i], x1 = x[d + i], y0 = y[i], y1 = y[d + i];
#pragma omp simd
        for (int j = 0; j < r; j++) {
            double v = (scaled ? alpha * w[j] : w[j]) - x0 * c0[j] - x1 * c1[j];
            w[j] = v;
            n0[j] += y0 * v;
            n1[j] += y1 * v;
        }
    }
}

static void step_tied(struct sgd_state *st, const double *D, double trD)
{
    int d = st->d, r = st->r, T = st->T;
    double *W = st->s.A;
    /* c_a = sum_b (D_ab + D_ba) a_b / sqrt(d), pre-multiplied by mu */
    for (int a = 0; a < T; a++) {
        double *c = st->ca + (size_t)a * r;
        memset(c, 0, sizeof(double) * (size_t)r);
        for (int b = 0; b < T; b++) {
            double f = st->mu * (D[a * T + b] + D[b * T + a]) / st->sqd;
            const double *ab = st->pa + (size_t)b * r;
            for (int j = 0; j < r; j++)
                c[j] += f * ab[j];
        }
    }
    double alpha = st->alpha + 2 * st->mu * trD / st->sqd;
    memset(st->pan, 0, sizeof(double) * (size_t)T * r);
    double nrm = 0;
    if (T == 2) {
        const double *c0 = st->ca, *c1 = st->ca + r;
        /* |W_new|^2 = alpha^2 |W|^2 - 2 alpha sum_a a_a.c_a + sum_ab (x_a.x_b)(c_a.c_b) for
         * W_new = alpha W - sum_a x_a c_a^T, a_a = W^T x_a: the pass needs no reduction. */
        double ac = dot(st->pa, c0, r) + dot(st->pa + r, c1, r);
        nrm = alpha * alpha * st->trS * st->s.kappa - 2 * alpha * ac +
              dot(st->x, st->x, d) * dot(c0, c0, r) + 2 * dot(st->x, st->x + d, d) * dot(c0, c1, r) +
              dot(st->x + d, st->x + d, d) * dot(c1, c1, r);
        if (alpha == 1.0)
            tied_pass2(W, d, r, c0, c1, st->x, st->xn, st->pan, 1.0, 0);
        else
            tied_pass2(W, d, r, c0, c1, st->x, st->xn, st->pan, alpha, 1);
    } else {
        for (int i = 0; i < d; i++) {
            double *w = W + (size_t)i * r;
            for (int j = 0; j < r; j++) {
                double v = alpha * w[j];
                for (int a = 0; a < T; a++)
                    v -= st->x[(size_t)a * d + i] * st->ca[(size_t)a * r + j];
                w[j] = v;
                nrm += v * v;
                for (int a = 0; a < T; a++)
                    st->pan[(size_t)a * r + j] += st->xn[(size_t)a * d + i] * v;
            }
        }
    }
    st->trS = nrm / st->s.kappa;
}

/* The untied pass for T = 2 (see tied_pass2): U <- alpha U + beta V - x0 cu0^T - x1 cu1^T and
 * V <- alpha V + beta U - x0 cv0^T - x1 cv1^T from the old U, V, accumulating p = U_new^T y,
 * q = V_new^T y. `scaled` and `mixed` are constants at each call (alpha = 1 and beta = 0
 * without weight decay and with a zero-diagonal D). */
static inline __attribute__((always_inline)) void untied_pass2(double *U, double *V, int d, int r,
                                                               const double *u0, const double *u1,
                                                               const double *v0, const double *v1,
                                                               const double *x, const double *y, double *pan,
                                                               double *pbn, double alpha, double beta,
                                                               int scaled, int mixed)
{
    double *p0 = pan, *p1 = pan + r, *q0 = pbn, *q1 = pbn + r;
        int i = 0;
        for (; i + 4 <= d; i += 4) {
            double *U0 = U + (size_t)i * r, *U1 = U0 + r, *U2 = U1 + r, *U3 = U2 + r;
            double *V0 = V + (size_t)i * r, *V1 = V0 + r, *V2 = V1 + r, *V3 = V2 + r;
            double a0 = x[i], a1 = x[i + 1], a2 = x[i + 2], a3 = x[i + 3];
            double b0 = x[d + i], b1 = x[d + i + 1], b2 = x[d + i + 2], b3 = x[d + i + 3];
            double e0 = y[i], e1 = y[i + 1], e2 = y[i + 2], e3 = y[i + 3];
            double f0 = y[d + i], f1 = y[d + i + 1], f2 = y[d + i + 2], f3 = y[d + i + 3];
#pragma omp simd
            for (int j = 0; j < r; j++) {
                double cu0 = u0[j], cu1 = u1[j], cv0 = v0[j], cv1 = v1[j];
                double ou0 = U0[j], ov0 = V0[j], ou1 = U1[j], ov1 = V1[j];
                double ou2 = U2[j], ov2 = V2[j], ou3 = U3[j], ov3 = V3[j];
                double n0u = (scaled ? alpha * ou0 : ou0) - a0 * cu0 - b0 * cu1;
                double n0v = (scaled ? alpha * ov0 : ov0) - a0 * cv0 - b0 * cv1;
                if (mixed) {
                    n0u += beta * ov0;
                    n0v += beta * ou0;
                }
                double n1u = (scaled ? alpha * ou1 : ou1) - a1 * cu0 - b1 * cu1;
                double n1v = (scaled ? alpha * ov1 : ov1) - a1 * cv0 - b1 * cv1;
                if (mixed) {
                    n1u += beta * ov1;
                    n1v += beta * ou1;
                }
                double n2u = (scaled ? alpha * ou2 : ou2) - a2 * cu0 - b2 * cu1;
                double n2v = (scaled ? alpha * ov2 : ov2) - a2 * cv0 - b2 * cv1;
                if (mixed) {
                    n2u += beta * ov2;
                    n2v += beta * ou2;
                }
                double n3u = (scaled ? alpha * ou3 : ou3) - a3 * cu0 - b3 * cu1;
                double n3v = (scaled ? alpha * ov3 : ov3) - a3 * cv0 - b3 * cv1;
                if (mixed) {
                    n3u += beta * ov3;
                    n3v += beta * ou3;
                }
                U0[j] = n0u;
                V0[j] = n0v;
                U1[j] = n1u;
                V1[j] = n1v;
                U2[j] = n2u;
                V2[j] = n2v;
                U3[j] = n3u;
                V3[j] = n3v;
                p0[j] += e0 * n0u + e1 * n1u + e2 * n2u + e3 * n3u;
                p1[j] += f0 * n0u + f1 * n1u + f2 * n2u + f3 * n3u;
                q0[j] += e0 * n0v + e1 * n1v + e2 * n2v + e3 * n3v;
                q1[j] += f0 * n0v + f1 * n1v + f2 * n2v + f3 * n3v;
            }
        }
        for (; i < d; i++) {
            double *ui = U + (size_t)i * r, *vi = V + (size_t)i * r;
            double x0 = x[i], x1 = x[d + i], y0 = y[i], y1 = y[d + i];
#pragma omp simd
            for (int j = 0; j < r; j++) {
                double uo = ui[j], vo = vi[j];
                double un = (scaled ? alpha * uo : uo) - x0 * u0[j] - x1 * u1[j];
                double vn = (scaled ? alpha * vo : vo) - x0 * v0[j] - x1 * v1[j];
                if (mixed) {
                    un += beta * vo;
                    vn += beta * uo;
                }
                ui[j] = un;
                vi[j] = vn;
                p0[j] += y0 * un;
                p1[j] += y1 * un;
                q0[j] += y0 * vn;
                q1[j] += y1 * vn;
            }
        }
}

static void step_untied(struct sgd_state *st, const double *D, double trD)
{
    int d = st->d, r = st->r, T = st->T;
    double *U = st->s.A, *V = st->s.B;
    /* cu_a = mu sum_b D_ab q_b/sqrt(d), cv_b = mu sum_a D_ab p_a/sqrt(d) */
    for (int a = 0; a < T; a++) {
        double *cu = st->ca + (size_t)a * r, *cv = st->cb + (size_t)a * r;
        memset(cu, 0, sizeof(double) * (size_t)r);
        memset(cv, 0, sizeof(double) * (size_t)r);
        for (int b = 0; b < T; b++) {
            double fu = st->mu * D[a * T + b] / st->sqd, fv = st->mu * D[b * T + a] / st->sqd;
            const double *qb = st->pb + (size_t)b * r, *pb = st->pa + (size_t)b * r;
            for (int j = 0; j < r; j++) {
                cu[j] += fu * qb[j];
                cv[j] += fv * pb[j];
            }
        }
    }
    double alpha = st->alpha, beta = st->mu * trD / st->sqd;
    memset(st->pan, 0, sizeof(double) * (size_t)T * r);
    memset(st->pbn, 0, sizeof(double) * (size_t)T * r);
    double tr = 0;
    if (T == 2) {
        const double *u0 = st->ca, *u1 = st->ca + r, *v0 = st->cb, *v1 = st->cb + r;
        const double *x = st->x, *pa = st->pa, *pb = st->pb;
        /* |U'|^2, |V'|^2 and <U', V'> in closed form (U' = alpha U + beta V - X Cu^T, ...):
         * <U, X C^T> = sum_a p_a.c_a with p_a = U^T x_a, and <X A^T, X B^T> = sum_ab (x_a.x_b)(a_a.b_b). */
        double Pu = dot(pa, u0, r) + dot(pa + r, u1, r), Qu = dot(pb, u0, r) + dot(pb + r, u1, r);
        double Pv = dot(pa, v0, r) + dot(pa + r, v1, r), Qv = dot(pb, v0, r) + dot(pb + r, v1, r);
        double x00 = dot(x, x, d), x01 = dot(x, x + d, d), x11 = dot(x + d, x + d, d);
        double Xuu = x00 * dot(u0, u0, r) + 2 * x01 * dot(u0, u1, r) + x11 * dot(u1, u1, r);
        double Xvv = x00 * dot(v0, v0, r) + 2 * x01 * dot(v0, v1, r) + x11 * dot(v1, v1, r);
        double Xuv = x00 * dot(u0, v0, r) + x01 * (dot(u0, v1, r) + dot(u1, v0, r)) + x11 * dot(u1, v1, r);
        double NU = st->nU, NV = st->nV, UV = st->trS * st->s.kappa;
        st->nU = alpha * alpha * NU + 2 * alpha * beta * UV + beta * beta * NV - 2 * alpha * Pu - 2 * beta * Qu + Xuu;
        st->nV = alpha * alpha * NV + 2 * alpha * beta * UV + beta * beta * NU - 2 * alpha * Qv - 2 * beta * Pv + Xvv;
        tr = (alpha * alpha + beta * beta) * UV + alpha * beta * (NU + NV) - alpha * (Pv + Qu) - beta * (Qv + Pu) + Xuv;
        if (alpha == 1.0 && beta == 0.0)
            untied_pass2(U, V, d, r, u0, u1, v0, v1, x, st->xn, st->pan, st->pbn, 1.0, 0.0, 0, 0);
        else
            untied_pass2(U, V, d, r, u0, u1, v0, v1, x, st->xn, st->pan, st->pbn, alpha, beta, 1, 1);
    } else {
        for (int i = 0; i < d; i++) {
            double *ui = U + (size_t)i * r, *vi = V + (size_t)i * r;
            for (int j = 0; j < r; j++) {
                double uo = ui[j], vo = vi[j];
                double un = alpha * uo + beta * vo, vn = alpha * vo + beta * uo;
                for (int a = 0; a < T; a++) {
                    double xa = st->x[(size_t)a * d + i];
                    un -= xa * st->ca[(size_t)a * r + j];
                    vn -= xa * st->cb[(size_t)a * r + j];
                }
                ui[j] = un;
                vi[j] = vn;
                tr += un * vn;
                for (int a = 0; a < T; a++) {
                    double ya = st->xn[(size_t)a * d + i];
                    st->pan[(size_t)a * r + j] += ya * un;
                    st->pbn[(size_t)a * r + j] += ya * vn;
                }
            }
        }
    }
    st->trS = tr / st->s.kappa;
}

static void step_direct(struct sgd_state *st, const double *D, double trD)
{
    int d = st->d, T = st->T;
    double *S = st->s.A;
    /* S_new = alpha S - sum_b e_b x_b^T + mu trD/sqrt(d) I, e_b = mu/sqrt(d) sum_a D_ab x_a */
    double *e = st->ca; /* T x d */
    for (int b = 0; b < T; b++) {
        double *eb = e + (size_t)b * d;
        memset(eb, 0, sizeof(double) * (size_t)d);
        for (int a = 0; a < T; a++) {
            double f = st->mu * D[a * T + b] / st->sqd;
            const double *xa = st->x + (size_t)a * d;
            for (int i = 0; i < d; i++)
                eb[i] += f * xa[i];
        }
    }
    double diag = st->mu * trD / st->sqd, tr = 0, alpha = st->alpha;
    int i = 0;
    if (T == 2) {
        /* Four rows at a time: the tokens are loaded once per four rows. */
        const double *x0 = st->x, *x1 = st->x + d, *n0 = st->xn, *n1 = st->xn + d;
        for (; i + 4 <= d; i += 4) {
            double *s0 = S + (size_t)i * d, *s1 = s0 + d, *s2 = s1 + d, *s3 = s2 + d;
            double a0 = e[i], a1 = e[i + 1], a2 = e[i + 2], a3 = e[i + 3];
            double b0 = e[d + i], b1 = e[d + i + 1], b2 = e[d + i + 2], b3 = e[d + i + 3];
            double y00 = 0, y01 = 0, y10 = 0, y11 = 0, y20 = 0, y21 = 0, y30 = 0, y31 = 0;
#pragma omp simd reduction(+ : y00, y01, y10, y11, y20, y21, y30, y31)
            for (int j = 0; j < d; j++) {
                double v0 = alpha * s0[j] - a0 * x0[j] - b0 * x1[j];
                double v1 = alpha * s1[j] - a1 * x0[j] - b1 * x1[j];
                double v2 = alpha * s2[j] - a2 * x0[j] - b2 * x1[j];
                double v3 = alpha * s3[j] - a3 * x0[j] - b3 * x1[j];
                s0[j] = v0;
                s1[j] = v1;
                s2[j] = v2;
                s3[j] = v3;
                y00 += v0 * n0[j];
                y01 += v0 * n1[j];
                y10 += v1 * n0[j];
                y11 += v1 * n1[j];
                y20 += v2 * n0[j];
                y21 += v2 * n1[j];
                y30 += v3 * n0[j];
                y31 += v3 * n1[j];
            }
            double y0[4] = {y00, y10, y20, y30}, y1[4] = {y01, y11, y21, y31};
            for (int q = 0; q < 4; q++) {
                double *s = S + (size_t)(i + q) * d;
                s[i + q] += diag;
                st->pan[i + q] = y0[q] + diag * n0[i + q];
                st->pan[d + i + q] = y1[q] + diag * n1[i + q];
                tr += s[i + q];
            }
        }
    }
    for (; i < d; i++) {
        double *s = S + (size_t)i * d;
        for (int j = 0; j < d; j++) {
            double v = alpha * s[j];
            for (int b = 0; b < T; b++)
                v -= e[(size_t)b * d + i] * st->x[(size_t)b * d + j];
            s[j] = v;
        }
        s[i] += diag;
        for (int b = 0; b < T; b++)
            st->pan[(size_t)b * d + i] = cblas_ddot(d, s, 1, st->xn + (size_t)b * d, 1);
        tr += s[i];
    }
    st->trS = tr;
}

int sgd_steps(struct sgd_state *st, long nsteps)
{
    double h[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS], hs[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    double D[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    const struct act *act = &st->m->p.activation;
    int T = st->T;
    for (long it = 0; it < nsteps; it++) {
        if (indices(st, h, hs) || !isfinite(st->trS))
            return 1;
        model_loss(act, T, h, hs, D);
        double trD = 0;
        for (int a = 0; a < T; a++)
            trD += D[a * T + a];
        switch (st->s.decomposition) {
        case DECOMP_TIED: step_tied(st, D, trD); break;
        case DECOMP_UNTIED: step_untied(st, D, trD); break;
        case DECOMP_DIRECT: step_direct(st, D, trD); break;
        }
        swap(&st->x, &st->xn);
        swap(&st->z, &st->zn);
        swap(&st->pa, &st->pan);
        swap(&st->pb, &st->pbn);
        draw_next(st);
        st->n++;
        if (st->n % SGD_RESYNC == 0)
            sgd_resync(st);
    }
    return 0;
}

void sgd_reference_step(const struct params *p, struct student *s, const double *teacher,
                        const double *x)
{
    int d = s->d, r = s->r, T = p->tokens;
    double *S = malloc(sizeof(double) * (size_t)d * d), *g = calloc((size_t)d * d, sizeof(double));
    double h[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS], hs[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS],
        D[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    model_form_S(s, S);
    model_index(d, T, S, x, h);
    model_index(d, T, teacher, x, hs);
    model_loss(&p->activation, T, h, hs, D);
    double sqd = sqrt((double)d), mu = p->lr / d, alpha = 1 - p->weight_decay * p->lr / ((double)d * d);
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double f = D[a * T + b] / sqd;
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++)
                    g[(size_t)i * d + j] += f * (x[(size_t)a * d + i] * x[(size_t)b * d + j] - (a == b && i == j));
        }
    if (s->decomposition == DECOMP_DIRECT) {
        for (size_t i = 0; i < (size_t)d * d; i++)
            s->A[i] = alpha * s->A[i] - mu * g[i];
    } else if (s->decomposition == DECOMP_TIED) {
        double *H = malloc(sizeof(double) * (size_t)d * d), *HW = malloc(sizeof(double) * (size_t)d * r);
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++)
                H[(size_t)i * d + j] = g[(size_t)i * d + j] + g[(size_t)j * d + i];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, d, 1.0, H, d, s->A, r, 0.0, HW, r);
        for (size_t i = 0; i < (size_t)d * r; i++)
            s->A[i] = alpha * s->A[i] - mu * HW[i];
        free(H);
        free(HW);
    } else {
        double *gV = malloc(sizeof(double) * (size_t)d * r), *gU = malloc(sizeof(double) * (size_t)d * r);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, d, 1.0, g, d, s->B, r, 0.0, gV, r);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, r, d, 1.0, g, d, s->A, r, 0.0, gU, r);
        for (size_t i = 0; i < (size_t)d * r; i++) {
            s->A[i] = alpha * s->A[i] - mu * gV[i];
            s->B[i] = alpha * s->B[i] - mu * gU[i];
        }
        free(gV);
        free(gU);
    }
    free(S);
    free(g);
}

/* Order parameters this large mean the run has blown up even if the index has not. */
#define SGD_OMEGA_MAX 1e12

int sgd_run(const struct model *m, struct traj *out, worker_stop_fn stop, void *ctx)
{
    const struct params *p = &m->p;
    struct sgd_state *st = sgd_state_create(m);
    double *taus = malloc(sizeof(double) * (size_t)(p->records + 1));
    if (!st || !taus) {
        sgd_state_destroy(&st);
        free(taus);
        return -1;
    }
    obs_tau_grid(p, taus);
    double per_tau = (double)m->d * m->d / p->lr;
    for (int k = 0; k <= p->records; k++) {
        long target = (long)llround(taus[k] * per_tau);
        if (target > st->n && sgd_steps(st, target - st->n)) {
            out->status = RUN_DIVERGED;
            out->diverged_at_samples = (double)st->n;
            break;
        }
        struct obs_row row = {.tau = taus[k], .samples = (double)st->n};
        model_observe(m, &st->s, &row);
        if (!(row.omega11 <= SGD_OMEGA_MAX) || !isfinite(row.omega12)) {
            out->status = RUN_DIVERGED;
            out->diverged_at_samples = (double)st->n;
            break;
        }
        if (traj_push(out, &row)) {
            sgd_state_destroy(&st);
            free(taus);
            return -1;
        }
        if (stop && k < p->records && stop(ctx)) {
            out->status = RUN_INTERRUPTED;
            break;
        }
    }
    sgd_state_destroy(&st);
    free(taus);
    return 0;
}
