/*
 * sgd.c: online SGD of the student (docs/model.md §4).
 *
 * One step, with g = sum_ab D_ab (x_a x_b^T - delta_ab I)/sqrt(d), mu = eta/d and
 * alpha = 1 - lambda eta/d^2 (weight decay):
 *   direct: S <- alpha S - mu g
 *   tied:   W <- alpha W - mu (g + g^T) W
 *   untied: U <- alpha U - mu g V,  V <- alpha V - mu g^T U
 * The general index (docs/model.md §10): tokens x_a = sum_b L_ab z_b (C = L L^T), the index
 * subtracts cidx_ab Tr S (cidx = C for centred, 0 for uncentred) and g = sum_ab D_ab (x_a x_b^T -
 * cidx_ab I)/sqrt(d). Every update below has the same form with trD = sum_ab cidx_ab D_ab in
 * place of sum_a D_aa (the coefficient of I in g, times sqrt(d)); with c = 0 and the centred
 * index cidx = I and the arithmetic is that of the special case, operation for operation.
 * With the projections a_t = W^T x_t (tied), p_t = U^T x_t, q_t = V^T x_t (untied) or
 * y_t = S x_t (direct), every update is a rank-T correction plus a multiple of the parameters:
 *   (g + g^T) W = sum_a x_a c_a^T - 2 trD W/sqrt(d),  c_a = sum_b (D_ab + D_ba) a_b / sqrt(d),
 *   g V = sum_a x_a (sum_b D_ab q_b)^T/sqrt(d) - trD V/sqrt(d), and likewise g^T U.
 *
 * How the parameters are stored. The correction of row j of W^T is -sum_a c_a[j] x_a, and the
 * next sample's projection is (W^T y)_j = (row j) . y: both run along rows of W^T. So the state
 * keeps W^T (r x d), and for untied P = (U + V)^T and Q = (U - V)^T, in which the mixing of U
 * and V (U <- alpha U + beta V - ..., beta = mu trD/sqrt(d)) becomes a pure scaling:
 *   P <- (alpha + beta) P - sum_a (cu_a + cv_a) x_a^T,  Q <- (alpha - beta) Q - sum_a (cu_a - cv_a) x_a^T.
 * Direct keeps S, whose rows already have this form. Each stored matrix carries a scale s (the
 * parameters are s times the array), so that multiplying by alpha costs one scalar product
 * instead of a pass: the array receives the correction divided by the new scale. The scale is
 * folded into the array every SGD_RESYNC steps, and at once if it leaves [2^-32, 2^32].
 *
 * The step is then one pass over each stored matrix (kern_update_project_fused) that writes the
 * new row and, from it, the projections of the next sample (drawn before the pass), and that
 * takes the teacher's projections of the next sample, z = F^T y, along the way (the rows of F^T
 * are as long as those of the parameters); each parameter is read once and written once per
 * step, and the teacher's factor read once. The norms the next step needs (Tr S for tied and
 * untied, |U|^2 and |V|^2) follow in closed form from the projections. sgd_student writes the
 * parameters back in the model's layout when asked.
 *
 * Precision single (`precision`): the stored matrices and the teacher's factor are float (Pf,
 * Qf, Ftf), and so is a copy of each sample's tokens for the kernels (xf, xnf); the samples are
 * drawn in double as always, so a single and a double run see the same samples. Everything
 * else stays double: the scales, the coefficients of the correction, the projections (summed in
 * double, kern_f32_body.h), the indices, the loss and its derivatives, the norms kept in closed form
 * and the traces of the resync (float entries, double sums). What changes is where the
 * parameters are rounded: each entry is rounded to float after each update, a relative error
 * of at most u = 2^-24 per entry per step (tests/test_single.c bounds what that adds up to).
 * The record at tau = 0 is the model's initial student, before any rounding, in both.
 *
 * With the AVX-512 kernel (kern_paired: a build with AVX-512, T = 2, double) the stored matrices
 * are kept in kern.h's paired layout, two rows interleaved four columns at a time, for the
 * 8-lane pass whose sums are the 4-lane pass's bit for bit. Entries are then reached through
 * `at`; the norms of the resync are taken on the arrays put back row-major for the moment (the
 * same sums as without the layout), and checkpoints hold the row-major arrays, so that the
 * kernel's sums are the same with and without AVX-512 and a checkpoint loads in either build
 * (untied can still differ at 1e-15 between -march levels, outside the kernel). With that layout
 * the samples are also drawn SGD_AHEAD at a time (SGD_AHEAD_F32 in single precision) and their
 * teacher projections made in one read of F for all of them (next_sample), in the pass's order,
 * so that the pass reads only the parameters.
 * Precision single does the same with its AVX2 kernels (T = 2): the samples' float tokens are
 * kept with them, kern_project_fused_order_f32 makes each teacher sum as the fused float pass
 * makes it, and kern_update_project_ahead_f32 is that pass without the teacher's rows, so that
 * the look-ahead changes no bit of a single-precision run either.
 *
 * With the paired layout, and in single precision with the float kernels, a pass makes two
 * steps (sgd_two.c): the step at even n defers its correction and makes its successor's
 * projections in closed form, O(T^2 (d + rows)), and the pass of the step at odd n applies both
 * corrections to each row, the entries bit for bit as two one-step passes leave them, and
 * projects the two samples that follow: half the bytes of the parameters per step.
 * Its projections are summed in another order than the one-step pass's, so the output in double
 * differs from the one-step path's at the level of rounding (tests/test_two_step.c), and in
 * single at the level of float's (the closed form sums in double what the one-step pass sums
 * over float rows). Where a run stops changes no bit.
 *
 * Direct with an elementwise activation keeps, on that path, half of the symmetric S
 * (sgd_sym.c: K with S = K + K^T, over bands of rows), which halves the work of a pass again;
 * tied and untied in single keep their float matrices there in bands of rows, each band column
 * by column (sgd_two.c).
 *
 * The files: this one (the state, tied and untied, the run), sgd_direct.c (direct's step),
 * sgd_two.c (two steps per pass), sgd_sym.c (half of direct's S), sgd_sample.c (the samples and
 * the look-ahead), sgd_reference.c (the plain step the tests compare with). The state's layout
 * is in sgd_impl.h; sgd_state.c writes it as bytes for checkpoints and reads it back.
 */
#include "aimsweep/solvers/sgd.h"
#include "aimsweep/model/limits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "aimsweep/model/kern.h"
#include "aimsweep/model/rng.h"
#include "sgd_impl.h"

/* Every SGD_RESYNC steps the scales are folded into the arrays and the norms kept in closed
 * form are recomputed from the parameters, so that rounding cannot accumulate (the schedule
 * depends on the step count only). */
#define SGD_RESYNC 4096
/* The stop callback is polled after about this many parameter entries of steps (a few ms). */
#define SGD_POLL_ENTRIES 4.0e6
/* Samples drawn ahead with the paired layout (their teacher rows from one read of F). */

/* 64-byte aligned, so that the kernels' vector loads never straddle a cache line (rows of a
 * multiple of 8 entries stay aligned), and zeroed, so that a buffer a decomposition never
 * writes (pb for tied and direct) holds zeros in a checkpoint, not malloc's leftovers. NULL on
 * failure; freed with free. */
static void *alloc_zeroed(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes))
        return NULL;
    memset(p, 0, bytes);
    return p;
}

static double *alloc_doubles(size_t n) { return alloc_zeroed(sizeof(double) * n); }

static float *alloc_floats(size_t n) { return alloc_zeroed(sizeof(float) * n); }

static double dot(const double *a, const double *b, int n) { return kern_dot(a, b, n); }

/* a . b over n entries of a stored matrix: double arrays a, b, or float af, bf summed in double. */
static double dot_stored(const double *a, const float *af, const double *b, const float *bf,
                         size_t n)
{
    return a ? cblas_ddot((int)n, a, 1, b, 1) : kern_dot_f32(af, bf, n);
}

static void swap_f(float **a, float **b)
{
    float *t = *a;
    *a = *b;
    *b = t;
}

static void swap(double **a, double **b)
{
    double *t = *a;
    *a = *b;
    *b = t;
}

/* Folds the scale *s into the array a, or af in single precision (n entries): the parameters
 * stay s a. */
static void fold(double *a, float *af, size_t n, double *s)
{
    if (*s != 1.0) {
        if (a)
            cblas_dscal((int)n, *s, a, 1);
        else
            for (size_t i = 0; i < n; i++)
                af[i] = (float)(*s * af[i]);
    }
    *s = 1;
}

/* Multiplies the scale *s by f; folds it into the array when it leaves range. */
void sgd_scale_by(double *a, float *af, size_t n, double *s, double f)
{
    *s *= f;
    if (!(fabs(*s) >= SGD_SCALE_MIN && fabs(*s) <= 1 / SGD_SCALE_MIN))
        fold(a, af, n, s);
}

/* In place, the projections (U + V)^T y, (U - V)^T y into U^T y, V^T y (n entries each). */
void sgd_uv_from_pq(double *p, double *q, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double a = p[i], b = q[i];
        p[i] = (a + b) / 2;
        q[i] = (a - b) / 2;
    }
}

/* The index of entry (i, j) of a stored matrix in double (row-major, or paired: kern.h). */
size_t sgd_at(const struct sgd_state *st, int i, int j)
{
    return st->paired ? kern_paired_index(st->rows, st->d, i, j) : (size_t)i * st->d + j;
}

/* A stored matrix M from the paired layout to row-major in place (to_rows = 1), or back; each
 * pair of rows keeps its span of 2d entries, so one pair at a time goes through st->ptmp. */
static void reorder(struct sgd_state *st, double *M, int to_rows)
{
    int n = st->rows, m = st->d;
    for (int i = 0; i + 1 < n; i += 2) {
        double *blk = M + (size_t)i * m;
        memcpy(st->ptmp, blk, sizeof(double) * 2 * (size_t)m);
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < m; j++) {
                size_t e = kern_paired_index(n, m, i + h, j) - (size_t)i * m,
                       r = (size_t)h * m + (size_t)j;
                if (to_rows)
                    blk[r] = st->ptmp[e];
                else
                    blk[e] = st->ptmp[r];
            }
    }
}

static void sgd_resync(struct sgd_state *st)
{
    size_t n = (size_t)st->rows * st->d;
    sgd_two_flush(st);
    st->yn_ready = 0; /* made again from the folded rows (sgd_two.c) */
    fold(st->P, st->Pf, n, &st->sp);
    /* the norms are the same sums over the row-major arrays as without the paired layout */
    int rows = st->paired && st->s.decomposition != DECOMP_DIRECT;
    if (rows) {
        reorder(st, st->P, 1);
        if (st->Q)
            reorder(st, st->Q, 1);
    }
    switch (st->s.decomposition) {
        case DECOMP_DIRECT:
            st->trS = 0;
            for (int i = 0; i < st->d; i++)
                st->trS += st->P ? st->P[sgd_at(st, i, i)] : st->Pf[sgd_diag_at_f32(st, i)];
            if (st->sym)
                st->trS *= 2;
            break;
        case DECOMP_TIED:
            st->trS = dot_stored(st->P, st->Pf, st->P, st->Pf, n) / st->s.kappa;
            break;
        case DECOMP_UNTIED: {
            fold(st->Q, st->Qf, n, &st->sq);
            double pp = dot_stored(st->P, st->Pf, st->P, st->Pf, n),
                   qq = dot_stored(st->Q, st->Qf, st->Q, st->Qf, n);
            double pq = dot_stored(st->P, st->Pf, st->Q, st->Qf, n);
            st->nU = (pp + qq + 2 * pq) / 4;
            st->nV = (pp + qq - 2 * pq) / 4;
            st->trS = (pp - qq) / 4 / st->s.kappa;
            break;
        }
    }
    if (rows) {
        reorder(st, st->P, 0);
        if (st->Q)
            reorder(st, st->Q, 0);
    }
}

/* The stored matrices from the model's initial state, and the projections of the first sample. */
static void load_student(struct sgd_state *st)
{
    const struct student *s = &st->s;
    int d = st->d, r = st->r, T = st->T, n = st->rows;
    if (s->decomposition == DECOMP_DIRECT) {
        if (st->P)
            memcpy(st->P, s->A, sizeof(double) * (size_t)d * d);
        else
            for (size_t i = 0; i < (size_t)d * d; i++)
                st->Pf[i] = (float)s->A[i];
    } else {
        for (int i = 0; i < d; i++)
            for (int j = 0; j < r; j++) {
                double u = s->A[(size_t)i * r + j],
                       v = s->decomposition == DECOMP_TIED ? 0 : s->B[(size_t)i * r + j];
                double p = s->decomposition == DECOMP_TIED ? u : u + v, q = u - v;
                if (st->P) {
                    st->P[(size_t)j * d + i] = p;
                    if (st->Q)
                        st->Q[(size_t)j * d + i] = q;
                } else {
                    st->Pf[(size_t)j * d + i] = (float)p;
                    if (st->Qf)
                        st->Qf[(size_t)j * d + i] = (float)q;
                }
            }
    }
    st->sp = st->sq = 1;
    if (st->sym)
        sgd_sym_from_full(st, 0); /* row-major until the reordering below */
    if (st->single && st->sym)
        sgd_sym_kernel(st, NULL, 0, NULL, st->x, st->xf, NULL, NULL, st->pa, NULL);
    else if (st->single)
        kern_project_f32(st->Pf, n, d, T, st->xf, st->pa, n);
    else
        kern_project(st->P, n, d, T, st->x, st->pa, n);
    if (s->decomposition == DECOMP_UNTIED) {
        if (st->single)
            kern_project_f32(st->Qf, n, d, T, st->xf, st->pb, n);
        else
            kern_project(st->Q, n, d, T, st->x, st->pb, n);
        sgd_uv_from_pq(st->pa, st->pb, (size_t)T * n);
    }
    if (st->paired) { /* projected row-major above, stored paired from here on */
        reorder(st, st->P, 0);
        if (st->Q)
            reorder(st, st->Q, 0);
    }
    sgd_cols_set(st, st->two); /* likewise, tied's and untied's float bands (sgd_two.c) */
    st->synced = 1;
    sgd_resync(st);
}

const struct student *sgd_student(struct sgd_state *st)
{
    if (st->synced)
        return &st->s;
    sgd_two_flush(st);
    struct student *s = &st->s;
    int d = st->d, r = st->r;
    double sp = st->sp, sq = st->sq;
    const double *P = st->P, *Q = st->Q;
    const float *Pf = st->Pf, *Qf = st->Qf;
    if (st->sym) {
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++)
                s->A[(size_t)i * d + j] = sp * sgd_sym_entry(st, i, j);
    } else if (st->paired && s->decomposition == DECOMP_DIRECT) {
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++)
                s->A[(size_t)i * d + j] = sp * P[sgd_at(st, i, j)];
    } else if (s->decomposition == DECOMP_DIRECT) {
        for (size_t i = 0; i < (size_t)d * d; i++)
            s->A[i] = sp * (P ? P[i] : Pf[i]);
    } else {
        for (int j = 0; j < r; j++)
            for (int i = 0; i < d; i++) {
                size_t e = P          ? sgd_at(st, j, i)
                           : st->cols ? sgd_cols_at(st->rows, d, j, i)
                                      : (size_t)j * d + i;
                double p = sp * (P ? P[e] : Pf[e]);
                if (s->decomposition == DECOMP_TIED) {
                    s->A[(size_t)i * r + j] = p;
                } else {
                    double q = sq * (Q ? Q[e] : Qf[e]);
                    s->A[(size_t)i * r + j] = (p + q) / 2;
                    s->B[(size_t)i * r + j] = (p - q) / 2;
                }
            }
    }
    st->synced = 1;
    return s;
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
    st->rows = p->decomposition == DECOMP_DIRECT ? m->d : m->r;
    st->mu = p->lr / m->d;
    st->alpha = 1.0 - p->weight_decay * p->lr / ((double)m->d * m->d);
    st->sqd = sqrt((double)m->d);
    st->trP = m->t2 * m->d;
    st->single = p->precision == PRECISION_SINGLE;
    st->paired = !st->single && kern_paired(m->T);
    /* the look-ahead: double with the paired layout, single with the float vector kernels */
    int ahead = st->paired || (st->single && m->T == 2 && kern_vector() > 0);
    if (student_init_copy(&st->s, m))
        goto fail;
    int d = st->d, k = st->k, sg = st->single;
    size_t Td = (size_t)st->T * d, Tn = (size_t)st->T * st->rows, Tk = (size_t)st->T * k;
    size_t nP = (size_t)st->rows * d, nQ = p->decomposition == DECOMP_UNTIED ? nP : 0;
    /* two steps per pass (sgd_two.c): in double with the paired layout, in single with the float
     * kernels (the look-ahead's) */
    st->two = st->paired || (sg && ahead);
    size_t tw = st->two ? Td : 0, tn = st->two ? Tn : 0, tq = nQ ? tn : 0;
    double **bufs[] = {&st->P,   &st->Q,   &st->Ft,  &st->x,  &st->xn,  &st->pa, &st->pb,
                       &st->pan, &st->pbn, &st->z,   &st->zn, &st->ca,  &st->cb, &st->ptmp,
                       &st->xp,  &st->cp,  &st->pnn, &st->cq, &st->pbnn};
    size_t sizes[] = {
        sg ? 0 : nP, sg ? 0 : nQ, sg ? 0 : (size_t)k * d,         Td, Td, Tn, Tn, Tn, Tn, Tk, Tk,
        Tn,          Tn,          st->paired ? 2 * (size_t)d : 0, tw, tn, tn, tq, tq};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i] && !(*bufs[i] = alloc_doubles(sizes[i])))
            goto fail;
    if (ahead) { /* the look-ahead: every row of the teacher's factor, for all of the samples */
        st->ahead = sg ? SGD_AHEAD_F32 : SGD_AHEAD;
        st->nfz = k;
        st->ax = alloc_doubles((size_t)st->ahead * Td);
        if (sg)
            st->axf = alloc_floats((size_t)st->ahead * Td);
        else
            st->ayy = alloc_doubles((size_t)st->ahead * Td);
        st->az = alloc_doubles((size_t)st->ahead * Tk);
        st->ag = malloc(sizeof *st->ag * (size_t)st->ahead);
        if (!st->ax || !(st->ayy || st->axf) || !st->az || !st->ag)
            goto fail;
    }
    float **fbufs[] = {&st->Pf, &st->Qf, &st->Ftf, &st->xf, &st->xnf, &st->xpf};
    size_t fsizes[] = {nP, nQ, (size_t)k * d, Td, Td, tw};
    for (size_t i = 0; sg && i < sizeof fsizes / sizeof fsizes[0]; i++)
        if (fsizes[i] && !(*fbufs[i] = alloc_floats(fsizes[i])))
            goto fail;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < k; j++) {
            double f = m->tF[(size_t)i * k + j];
            if (sg)
                st->Ftf[(size_t)j * d + i] = (float)f;
            else
                st->Ft[(size_t)j * d + i] = f;
        }
    st->sym = sgd_sym_possible(st);
    if (st->sym && !(sg ? (void *)(st->hxf = alloc_floats(2 * Td + SGD_SYM_BAND * (size_t)d))
                        : (void *)(st->hx = alloc_doubles(2 * Td))))
        goto fail;
    /* tied and untied in single on the two-step path: their bands column by column (sgd_two.c) */
    if (sg && st->two && p->decomposition != DECOMP_DIRECT &&
        !(st->colsw = alloc_floats(SGD_COLS_BAND * (size_t)d)))
        goto fail;
    rng_init(&st->g, p->seed, STREAM_SGD, (uint32_t)d);
    rng_seek_normal(&st->g, (uint64_t)first * Td);
    sgd_draw_next(st);
    swap(&st->x, &st->xn);
    swap_f(&st->xf, &st->xnf);
    sgd_teacher_rest(st, st->x, st->xf, st->z, 0);
    load_student(st);
    sgd_draw_next(st);
    st->gnext = st->g;
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
    double *bufs[] = {st->P,   st->Q,   st->Ft,  st->x,  st->xn,  st->pa, st->pb,
                      st->pan, st->pbn, st->z,   st->zn, st->ca,  st->cb, st->ptmp,
                      st->xp,  st->cp,  st->pnn, st->cq, st->pbnn};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    float *fbufs[] = {st->Pf, st->Qf, st->Ftf, st->xf, st->xnf, st->xpf};
    for (size_t i = 0; i < sizeof fbufs / sizeof fbufs[0]; i++)
        free(fbufs[i]);
    free(st->ax);
    free(st->ayy);
    free(st->axf);
    free(st->az);
    free(st->ag);
    free(st->hx);
    free(st->hxf);
    free(st->colsw);
    free(st);
    *pst = NULL;
}

void sgd_set_lr(struct sgd_state *st, double lr)
{
    const struct params *p = &st->m->p;
    st->mu = lr / st->m->d;
    st->alpha = 1.0 - p->weight_decay * lr / ((double)st->m->d * st->m->d);
}

/* The T x T indices of the current sample, student h and teacher hs. Returns 0, or 1 when an
 * entry is not finite or exceeds LIMIT_INDEX_MAX. */
static int indices(const struct sgd_state *st, double *h, double *hs)
{
    int T = st->T, k = st->k;
    int len = st->s.decomposition == DECOMP_DIRECT ? st->d : st->r;
    const double *L = st->s.decomposition == DECOMP_DIRECT ? st->x : st->pa;
    const double *R = st->s.decomposition == DECOMP_UNTIED ? st->pb : st->pa;
    double scale = st->s.decomposition == DECOMP_DIRECT ? 1.0 : 1.0 / st->s.kappa;
    const double *sg = st->m->tsign, *ci = st->m->cidx;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double v = dot(L + (size_t)a * len, R + (size_t)b * len, len);
            if (st->sym) /* x_a^T (K + K^T) x_b (sgd_sym.c) */
                v += dot(L + (size_t)b * len, R + (size_t)a * len, len);
            const double *za = st->z + (size_t)a * k, *zb = st->z + (size_t)b * k;
            double t = kern_dot3(sg, za, zb, k);
            h[a * T + b] = (v * scale - ci[a * T + b] * st->trS) / st->sqd;
            hs[a * T + b] = (t - ci[a * T + b] * st->trP) / st->sqd;
            if (!(fabs(h[a * T + b]) <= LIMIT_INDEX_MAX))
                return 1;
        }
    return 0;
}

/* The Gram matrix of the sample's tokens, xx[a T + b] = x_a . x_b (T x d tokens). */
static void gram_tokens(const double *x, int d, int T, double *xx)
{
    for (int a = 0; a < T; a++)
        for (int b = 0; b <= a; b++)
            xx[a * T + b] = xx[b * T + a] = dot(x + (size_t)a * d, x + (size_t)b * d, d);
}

/* sum_ab (x_a . x_b)(c_a . e_b) = <X C^T, X E^T> for T x n coefficients, xx from gram_tokens. */
static double gram_pair(const double *xx, const double *c, const double *e, int n, int T)
{
    double s = 0;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            s += xx[a * T + b] * dot(c + (size_t)a * n, e + (size_t)b * n, n);
    return s;
}

/* sum_a p_a . c_a over T rows of n. */
double sgd_dot_rows(const double *p, const double *c, int n, int T)
{
    double s = 0;
    for (int a = 0; a < T; a++)
        s += dot(p + (size_t)a * n, c + (size_t)a * n, n);
    return s;
}

/* One pass over a stored matrix M (Mf in single precision) of scale s (already multiplied by
 * this step's factor): its rows take the correction C / s (C, T x rows, is overwritten), O
 * receives the next sample's projections on the parameters s M, and the teacher's rows from *f
 * on are projected along the way (*f advances past those done). */
void sgd_pass(struct sgd_state *st, double *M, float *Mf, double s, double *C, double *O, int *f)
{
    size_t n = (size_t)st->T * st->rows, skip = (size_t)*f * st->d;
    for (size_t i = 0; i < n; i++)
        C[i] /= s;
    if (st->ahead) { /* the teacher's rows were all projected ahead (next_sample) */
        if (Mf)
            kern_update_project_ahead_f32(Mf, st->rows, st->d, st->T, C, st->xf, st->xnf, O,
                                          st->k - *f);
        else
            kern_update_project_fused_paired(M, st->rows, st->d, st->T, C, st->x, st->xn, O, NULL,
                                             st->k - *f, NULL, 0);
        *f = st->nfz;
    } else if (st->paired)
        *f += kern_update_project_fused_paired(M, st->rows, st->d, st->T, C, st->x, st->xn, O,
                                               st->Ft + skip, st->k - *f, st->zn + *f, st->k);
    else if (Mf)
        *f += kern_update_project_fused_f32(Mf, st->rows, st->d, st->T, C, st->xf, st->xnf, O,
                                            st->Ftf + skip, st->k - *f, st->zn + *f, st->k);
    else
        *f += kern_update_project_fused(M, st->rows, st->d, st->T, C, st->x, st->xn, O,
                                        st->Ft + skip, st->k - *f, st->zn + *f, st->k);
    for (size_t i = 0; i < n; i++)
        O[i] *= s;
}

static void step_tied(struct sgd_state *st, const double *D, double trD)
{
    int d = st->d, r = st->r, T = st->T;
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
    /* W' = alpha W - X C^T: |W'|^2 = alpha^2 |W|^2 - 2 alpha sum_a a_a . c_a + <X C^T, X C^T>,
     * since <W, X C^T> = sum_a (W^T x_a) . c_a. */
    double alpha = st->alpha + 2 * st->mu * trD / st->sqd,
           xx[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    gram_tokens(st->x, d, T, xx);
    double nrm = alpha * alpha * st->trS * st->s.kappa -
                 2 * alpha * sgd_dot_rows(st->pa, st->ca, r, T) +
                 gram_pair(xx, st->ca, st->ca, r, T);
    int f = 0;
    if (st->two) {
        f = st->nfz; /* the teacher rows of xn made ahead (sgd_sample.c) */
        double *es[2] = {st->ca, NULL}, al[2] = {alpha, 0};
        sgd_two_step(st, es, 0, al);
    } else {
        sgd_scale_by(st->P, st->Pf, (size_t)r * d, &st->sp, alpha);
        sgd_pass(st, st->P, st->Pf, st->sp, st->ca, st->pan, &f);
    }
    sgd_teacher_rest(st, st->xn, st->xnf, st->zn, f);
    st->trS = nrm / st->s.kappa;
}

static void step_untied(struct sgd_state *st, const double *D, double trD)
{
    int d = st->d, r = st->r, T = st->T;
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
    /* |U'|^2, |V'|^2 and <U', V'> in closed form (U' = alpha U + beta V - X Cu^T, ...):
     * <U, X C^T> = sum_a p_a . c_a with p_a = U^T x_a, and <X A^T, X B^T> = sum_ab (x_a . x_b)(a_a . b_b). */
    double alpha = st->alpha, beta = st->mu * trD / st->sqd;
    const double *cu = st->ca, *cv = st->cb, *x = st->x;
    double Pu = sgd_dot_rows(st->pa, cu, r, T), Qu = sgd_dot_rows(st->pb, cu, r, T);
    double Pv = sgd_dot_rows(st->pa, cv, r, T), Qv = sgd_dot_rows(st->pb, cv, r, T);
    double xx[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    gram_tokens(x, d, T, xx);
    double Xuu = gram_pair(xx, cu, cu, r, T), Xvv = gram_pair(xx, cv, cv, r, T),
           Xuv = gram_pair(xx, cu, cv, r, T);
    double NU = st->nU, NV = st->nV, UV = st->trS * st->s.kappa;
    st->nU = alpha * alpha * NU + 2 * alpha * beta * UV + beta * beta * NV - 2 * alpha * Pu -
             2 * beta * Qu + Xuu;
    st->nV = alpha * alpha * NV + 2 * alpha * beta * UV + beta * beta * NU - 2 * alpha * Qv -
             2 * beta * Pv + Xvv;
    double tr = (alpha * alpha + beta * beta) * UV + alpha * beta * (NU + NV) - alpha * (Pv + Qu) -
                beta * (Qv + Pu) + Xuv;
    /* P = (U + V)^T scales by alpha + beta and Q = (U - V)^T by alpha - beta (see the top). */
    size_t n = (size_t)r * d;
    for (size_t i = 0; i < (size_t)T * r; i++) { /* the corrections of P and Q */
        double a = st->ca[i], b = st->cb[i];
        st->ca[i] = a + b;
        st->cb[i] = a - b;
    }
    int f = 0;
    if (st->two) {
        f = st->nfz; /* the teacher rows of xn made ahead (sgd_sample.c) */
        double *es[2] = {st->ca, st->cb}, al[2] = {alpha + beta, alpha - beta};
        sgd_two_step(st, es, 0, al);
    } else {
        sgd_scale_by(st->P, st->Pf, n, &st->sp, alpha + beta);
        sgd_scale_by(st->Q, st->Qf, n, &st->sq, alpha - beta);
        sgd_pass(st, st->P, st->Pf, st->sp, st->ca, st->pan, &f);
        sgd_pass(st, st->Q, st->Qf, st->sq, st->cb, st->pbn, &f);
        sgd_uv_from_pq(st->pan, st->pbn, (size_t)T * r);
    }
    sgd_teacher_rest(st, st->xn, st->xnf, st->zn, f);
    st->trS = tr / st->s.kappa;
}

int sgd_samples_per_factor_read(const struct sgd_state *st) { return st->ahead ? st->ahead : 1; }

int sgd_steps_per_pass(const struct sgd_state *st) { return st->two ? 2 : 1; }

size_t sgd_entries_per_pass(const struct sgd_state *st)
{
    size_t d = (size_t)st->d, n = (size_t)st->rows * d;
    if (st->sym) { /* the bands of sgd_sym.c: their rows from s on */
        n = 0;
        for (size_t s = 0; s < d; s += SGD_SYM_BAND)
            n += (d - s < SGD_SYM_BAND ? d - s : SGD_SYM_BAND) * (d - s);
    }
    return st->s.decomposition == DECOMP_UNTIED ? 2 * n : n;
}

void sgd_project_current(struct sgd_state *st)
{
    int n = st->rows, d = st->d, T = st->T;
    if (st->sym)
        sgd_sym_kernel(st, NULL, 0, NULL, st->x, st->xf, NULL, NULL, st->pa, NULL);
    else if (st->paired)
        kern_update2_project2_paired(st->P, n, d, NULL, NULL, 0, NULL, NULL, st->x, NULL, st->pa,
                                     NULL);
    else if (st->cols)
        sgd_cols_project(st, st->Pf, st->xf, st->pa);
    else if (st->single)
        kern_project_f32(st->Pf, n, d, T, st->xf, st->pa, n);
    else
        kern_project(st->P, n, d, T, st->x, st->pa, n);
    for (size_t i = 0; i < (size_t)T * n; i++)
        st->pa[i] *= st->sp;
}

/* P from K to S (on = 0) or back (on = 1, where the state can keep K), and the projections of
 * the current sample made again on what P then holds. */
static void set_sym(struct sgd_state *st, int on)
{
    on = on && (st->hx || st->hxf) && sgd_sym_possible(st);
    if (on == st->sym)
        return;
    if (on)
        sgd_sym_from_full(st, st->paired); /* cannot fail: the state has the scratch (hxf) */
    else
        sgd_sym_to_full(st, st->paired, st->Pf ? -SGD_SYM_BAND : SGD_SYM_BAND);
    st->sym = on;
    st->synced = 0;
    sgd_project_current(st);
}

void sgd_set_two_step(struct sgd_state *st, int on)
{
    sgd_two_flush(st);
    st->two = on && st->xp; /* xp is there where the two-step pass is */
    sgd_cols_set(st, st->two);
    set_sym(st, st->two && !st->half_off);
    st->yn_ready = 0;
}

void sgd_set_symmetric(struct sgd_state *st, int on)
{
    sgd_two_flush(st);
    st->half_off = !on;
    set_sym(st, on);
    st->yn_ready = 0;
}

int sgd_symmetric(const struct sgd_state *st) { return st->sym; }

int sgd_steps(struct sgd_state *st, long nsteps)
{
    double h[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS], hs[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    double D[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    const struct act *act = &st->m->p.activation;
    const double *ci = st->m->cidx;
    enum outputs_kind outputs = st->m->p.outputs;
    int T = st->T, TT = T * T;
    for (long it = 0; it < nsteps; it++) {
        if (indices(st, h, hs) || !isfinite(st->trS))
            return 1;
        model_loss_outputs(act, T, outputs, h, hs, D);
        double trD = 0; /* sum_ab cidx_ab D_ab: the coefficient of I in sqrt(d) g */
        for (int i = 0; i < TT; i++)
            trD += ci[i] * D[i];
        st->synced = 0;
        if (st->ahead && !st->zn_ready)
            sgd_ahead_rows(st);
        switch (st->s.decomposition) {
            case DECOMP_TIED: step_tied(st, D, trD); break;
            case DECOMP_UNTIED: step_untied(st, D, trD); break;
            case DECOMP_DIRECT: sgd_step_direct(st, D, trD); break;
        }
        swap(&st->x, &st->xn);
        swap_f(&st->xf, &st->xnf);
        swap(&st->z, &st->zn);
        swap(&st->pa, &st->pan);
        swap(&st->pb, &st->pbn);
        if (st->two) { /* the two-step pass projected the sample after xn too */
            swap(&st->pan, &st->pnn);
            if (st->pbnn)
                swap(&st->pbn, &st->pbnn);
        }
        sgd_next_sample(st);
        st->n++;
        if (st->n % SGD_RESYNC == 0)
            sgd_resync(st);
    }
    return 0;
}

/* Hands the state to ctl->save (a failed save is not fatal: the run goes on). */
static void checkpoint(struct sgd_state *st, const struct obs_ctl *ctl, const struct traj *out)
{
    if (!ctl || !ctl->save)
        return;
    size_t n = sgd_state_size(st);
    unsigned char *buf = malloc(n);
    if (!buf)
        return;
    sgd_state_save(st, buf);
    ctl->save(ctl->save_ctx, out, buf, n);
    free(buf);
}

int sgd_run(const struct model *m, struct traj *out, obs_stop_fn stop, void *ctx)
{
    struct obs_ctl ctl = {stop, ctx, NULL, NULL, NULL, NULL, 0};
    return sgd_run_ctl(m, out, &ctl);
}

int sgd_run_ctl(const struct model *m, struct traj *out, const struct obs_ctl *ctl)
{
    const struct params *p = &m->p;
    struct sgd_state *st = sgd_state_create(m);
    double *taus = malloc(sizeof(double) * (size_t)(p->records + 1));
    if (!st || !taus) {
        sgd_state_destroy(&st);
        free(taus);
        return -1;
    }
    int k0 = 0;
    if (ctl && ctl->resume) {
        if (sgd_state_restore(st, ctl->resume, ctl->resume_len) || out->n > p->records + 1) {
            sgd_state_destroy(&st);
            free(taus);
            return -2;
        }
        k0 = out->n;
    }
    obs_tau_grid(p, taus);
    long n1 = params_switch_steps(p); /* two_phase: the first n1 steps at eta1, then lr */
    if (n1 > 0)
        sgd_set_lr(st, st->n < n1 ? p->lr_schedule.eta1 : p->lr);
    /* between polls of the stop callback: about SGD_POLL_ENTRIES parameter entries of work */
    long poll = (long)(SGD_POLL_ENTRIES / ((double)st->rows * st->d * st->T *
                                           (st->s.decomposition == DECOMP_UNTIED ? 2 : 1)));
    if (poll < 1)
        poll = 1;
    for (int k = k0; k <= p->records; k++) {
        /* params_validate keeps tau_end d^2 / lr <= 2^53, so the count fits a long exactly */
        double want = nearbyint(params_samples(p, taus[k]));
        if (!(want >= 0 && want <= 9007199254740992.0)) {
            out->status = RUN_ERROR;
            snprintf(out->error, sizeof out->error,
                     "sgd: %.3g samples at tau = %g is not a countable number", want, taus[k]);
            break;
        }
        long target = (long)want;
        int diverged = 0, stopped = 0;
        while (target > st->n) {
            long upto = st->n < n1 && target > n1 ? n1 : target;
            long chunk = upto - st->n < poll ? upto - st->n : poll;
            if (sgd_steps(st, chunk)) {
                diverged = 1;
                break;
            }
            if (n1 > 0 && st->n == n1)
                sgd_set_lr(st, p->lr);
            if (target > st->n && (stopped = obs_ctl_stop(ctl)) != 0)
                break;
            if (ctl && ctl->due && ctl->due(ctl->save_ctx))
                checkpoint(st, ctl, out);
        }
        if (diverged) {
            out->status = RUN_DIVERGED;
            out->diverged_at_samples = (double)st->n;
            break;
        }
        if (stopped) {
            checkpoint(st, ctl, out);
            out->status = RUN_INTERRUPTED;
            break;
        }
        struct obs_row row = {.tau = taus[k], .samples = (double)st->n};
        if (model_observe(m, sgd_student(st), &row)) {
            sgd_state_destroy(&st);
            free(taus);
            return -1;
        }
        if (!(row.omega11 <= LIMIT_OMEGA_MAX) || !isfinite(row.omega12) || !isfinite(row.psi11) ||
            !isfinite(row.trace) || !isfinite(row.overlap)) {
            out->status = RUN_DIVERGED;
            out->diverged_at_samples = (double)st->n;
            break;
        }
        if (!isfinite(row.loss)) {
            out->status = RUN_ERROR;
            snprintf(
                out->error, sizeof out->error,
                "sgd: the population loss is not finite at tau = %g (omega11 = %g, omega12 = %g)",
                taus[k], row.omega11, row.omega12);
            break;
        }
        if (traj_push(out, &row)) {
            sgd_state_destroy(&st);
            free(taus);
            return -1;
        }
        if (k < p->records && obs_ctl_stop(ctl)) {
            checkpoint(st, ctl, out);
            out->status = RUN_INTERRUPTED;
            break;
        }
    }
    sgd_state_destroy(&st);
    free(taus);
    return 0;
}
