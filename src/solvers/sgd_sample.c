/*
 * sgd_sample.c: the samples of an SGD run (sgd.c) and their teacher projections: drawn one at a
 * time, or st->ahead at a time with every row of the teacher's factor projected for all of them
 * in one read of the teacher's factor (the look-ahead, see the top of sgd.c), and the sample
 * after the next one for the two-step pass (sgd_two.c). The state is sgd_impl.h.
 */
#include <string.h>

#include <cblas.h>

#include "aimsweep/model/kern.h"
#include "aimsweep/model/rng.h"
#include "sgd_impl.h"

/* Draws the next sample. Its teacher projections are made by the step's pass
 * (kern_update_project_fused) and teacher_rest. */
void sgd_draw_next(struct sgd_state *st)
{
    size_t n = (size_t)st->T * st->d;
    rng_normals(&st->g, st->xn, n);
    if (st->m->corr)
        model_correlate(st->d, st->T, st->m->L, st->xn);
    if (st->single)
        for (size_t i = 0; i < n; i++)
            st->xnf[i] = (float)st->xn[i];
}

/* With the paired layout the samples are drawn st->ahead at a time, and the teacher's rows (all
 * st->nfz = k of them) are projected for all of them in one read of F (kern_project_fused_order,
 * each sum as the fused pass makes it), so that the pass streams only the parameters. Every row
 * of F goes there, not only the rows/2 a one-step fused pass projects along the way (the rest
 * were read once a sample, by sgd_teacher_rest): with a goe teacher (k = d) that made direct in
 * double 1.26x as fast at d = 400 and tied 1.24x (aimsweep single, h1, tau_end 0.02, lr 0.1,
 * three alternating runs; in single 1.09x and 1.06x). The rows past rows/2 are then summed in
 * the fused order instead of kern_project's, which moves such runs (k > rows/2: goe,
 * wishart(rho > 0.5), wishart(0.5) at odd d) at the level of rounding against a build without
 * the look-ahead: 10^-16 relative in double, 10^-8 in single where the float orders differ
 * (at d = 101, not at d = 100). The generator after each sample is kept with it: a checkpoint
 * saves the one just past the next sample, as without the look-ahead, and a restored run draws
 * again from there. */
static void ahead_fill(struct sgd_state *st)
{
    int d = st->d, T = st->T, k = st->k;
    size_t Td = (size_t)T * d;
    for (int s = 0; s < st->ahead; s++) {
        double *x = st->ax + (size_t)s * Td;
        rng_normals(&st->g, x, Td);
        if (st->m->corr)
            model_correlate(d, T, st->m->L, x);
        st->ag[s] = st->g;
        if (st->single)
            for (size_t i = 0; i < Td; i++)
                st->axf[(size_t)s * Td + i] = (float)x[i];
        else
            kern_interleave2(x, d, st->ayy + (size_t)s * Td);
    }
    if (st->single)
        kern_project_fused_order_f32(st->Ftf, st->nfz, d, st->ahead, st->axf, Td, st->az,
                                     (size_t)T * k, k);
    else
        kern_project_fused_order(st->Ft, st->nfz, d, st->ahead, st->ax, Td, st->ayy, Td, st->az,
                                 (size_t)T * k, k);
    st->apos = 0;
    st->acount = st->ahead;
}

/* The teacher rows of the next sample xn (all of them), when xn was not drawn ahead (the first
 * sample, a restored state). */
void sgd_ahead_rows(struct sgd_state *st)
{
    if (st->single) {
        kern_project_fused_order_f32(st->Ftf, st->nfz, st->d, 1, st->xnf, 0, st->zn, 0, st->k);
        st->zn_ready = 1;
        return;
    }
    kern_interleave2(st->xn, st->d, st->ptmp);
    kern_project_fused_order(st->Ft, st->nfz, st->d, 1, st->xn, 0, st->ptmp, 0, st->zn, 0, st->k);
    st->zn_ready = 1;
}

/* The next sample into xn: drawn now, or taken from those drawn ahead with its teacher rows. */
void sgd_next_sample(struct sgd_state *st)
{
    if (!st->ahead) {
        sgd_draw_next(st);
        return;
    }
    if (st->apos >= st->acount)
        ahead_fill(st);
    int s = st->apos++, T = st->T, k = st->k;
    size_t Td = (size_t)T * st->d;
    memcpy(st->xn, st->ax + (size_t)s * Td, sizeof(double) * Td);
    if (st->single)
        memcpy(st->xnf, st->axf + (size_t)s * Td, sizeof(float) * Td);
    for (int b = 0; b < T; b++)
        memcpy(st->zn + (size_t)b * k, st->az + (size_t)s * T * k + (size_t)b * k,
               sizeof(double) * (size_t)st->nfz);
    st->gnext = st->ag[s];
    st->zn_ready = 1;
}

/* The teacher projections z_t = F^T y_t of the tokens y (T x d; yf their float copy in single
 * precision) into z (T x k), from row `from` of F^T on (the rows before it were projected by
 * the pass). */
void sgd_teacher_rest(struct sgd_state *st, const double *y, const float *yf, double *z, int from)
{
    int d = st->d, k = st->k, T = st->T, left = k - from;
    if (left <= 0)
        return;
    if (st->single) {
        kern_project_f32(st->Ftf + (size_t)from * d, left, d, T, yf, z + from, k);
        return;
    }
    if (T != 2) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, left, d, 1.0, y, d,
                    st->Ft + (size_t)from * d, d, 0.0, z + from, k);
        return;
    }
    kern_project(st->Ft + (size_t)from * d, left, d, T, y, z + from, k);
}

/* The sample after xn (T x d), from those drawn ahead: the one sgd_next_sample takes next. */
const double *sgd_peek_sample(struct sgd_state *st)
{
    if (st->apos >= st->acount)
        ahead_fill(st);
    return st->ax + (size_t)st->apos * st->T * st->d;
}

/* Its float copy (precision single). */
const float *sgd_peek_sample_f32(struct sgd_state *st)
{
    sgd_peek_sample(st); /* draws ahead when none is left */
    return st->axf + (size_t)st->apos * st->T * st->d;
}
