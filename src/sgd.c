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

#include "aimsweep/phi.h"
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
    long n;
};

/* Draws the next sample and its teacher projections z_t = F^T x_t. */
static void draw_next(struct sgd_state *st)
{
    const struct model *m = st->m;
    rng_normals(&st->g, st->xn, (size_t)st->T * st->d);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, st->T, st->k, st->d, 1.0, st->xn,
                st->d, m->tF, st->k, 0.0, st->zn, st->k);
}

static void swap(double **a, double **b)
{
    double *t = *a;
    *a = *b;
    *b = t;
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
    if (s->decomposition == DECOMP_TIED) {
        st->trS = cblas_ddot(d * r, s->A, 1, s->A, 1) / s->kappa;
    } else {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, r, d, 1.0, st->x, d, s->B, r, 0.0, st->pb, r);
        st->trS = cblas_ddot(d * r, s->A, 1, s->B, 1) / s->kappa;
    }
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
        double *n0 = st->pan, *n1 = st->pan + r;
        for (int i = 0; i < d; i++) {
            double *w = W + (size_t)i * r;
            double x0 = st->x[i], x1 = st->x[d + i], y0 = st->xn[i], y1 = st->xn[d + i];
#pragma omp simd reduction(+ : nrm)
            for (int j = 0; j < r; j++) {
                double v = alpha * w[j] - x0 * c0[j] - x1 * c1[j];
                w[j] = v;
                n0[j] += y0 * v;
                n1[j] += y1 * v;
                nrm += v * v;
            }
        }
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
        double *p0 = st->pan, *p1 = st->pan + r, *q0 = st->pbn, *q1 = st->pbn + r;
        for (int i = 0; i < d; i++) {
            double *ui = U + (size_t)i * r, *vi = V + (size_t)i * r;
            double x0 = st->x[i], x1 = st->x[d + i], y0 = st->xn[i], y1 = st->xn[d + i];
#pragma omp simd reduction(+ : tr)
            for (int j = 0; j < r; j++) {
                double uo = ui[j], vo = vi[j];
                double un = alpha * uo + beta * vo - x0 * u0[j] - x1 * u1[j];
                double vn = alpha * vo + beta * uo - x0 * v0[j] - x1 * v1[j];
                ui[j] = un;
                vi[j] = vn;
                p0[j] += y0 * un;
                p1[j] += y1 * un;
                q0[j] += y0 * vn;
                q1[j] += y1 * vn;
                tr += un * vn;
            }
        }
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
    for (int i = 0; i < d; i++) {
        double *s = S + (size_t)i * d;
        if (T == 2) {
            double e0 = e[i], e1 = e[d + i], y0 = 0, y1 = 0;
            const double *x0 = st->x, *x1 = st->x + d, *n0 = st->xn, *n1 = st->xn + d;
#pragma omp simd reduction(+ : y0, y1)
            for (int j = 0; j < d; j++) {
                double v = alpha * s[j] - e0 * x0[j] - e1 * x1[j];
                s[j] = v;
                y0 += v * n0[j];
                y1 += v * n1[j];
            }
            s[i] += diag;
            y0 += diag * n0[i];
            y1 += diag * n1[i];
            st->pan[i] = y0;
            st->pan[d + i] = y1;
        } else {
            for (int j = 0; j < d; j++) {
                double v = alpha * s[j];
                for (int b = 0; b < T; b++)
                    v -= e[(size_t)b * d + i] * st->x[(size_t)b * d + j];
                s[j] = v;
            }
            s[i] += diag;
            for (int b = 0; b < T; b++)
                st->pan[(size_t)b * d + i] = cblas_ddot(d, s, 1, st->xn + (size_t)b * d, 1);
        }
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

/* Observables of a student state. */
static void observe(const struct model *m, const struct student *s, struct obs_row *row)
{
    struct order_params o;
    struct phi_val pv;
    model_order_params(m, s, &o);
    row->omega11 = o.omega11;
    row->psi11 = o.psi11;
    row->omega12 = o.omega12;
    row->trace = o.t1;
    row->overlap = obs_overlap(o.omega11, o.omega12, o.t1, m->t2);
    row->loss = phi_eval(&m->p.activation, m->T, o.omega11, o.psi11, o.omega12, &pv) ? NAN : pv.phi;
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
        observe(m, &st->s, &row);
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
