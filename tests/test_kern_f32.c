/* The single-precision inner loops (kern_f32_body.h) against a long-double evaluation of what they
 * compute from the same float inputs, over shapes that exercise every tail (odd row counts, row
 * lengths that are not multiples of 8 or 16, one token and several, rows longer than a block).
 *
 * Tolerances, from kern_f32_body.h's bound: an updated entry is r - a x0 - b x1 rounded to float
 * after at most two float operations, so within 2 eps_f (|r| + |a x0| + |b x1|) of the exact
 * value (eps_f = 2^-24); a projection of float rows sums products in float over at most
 * q = KERN_F32_TERMS = 32 terms per partial sum and then in double, so within q u sum_j |M_j Y_j|
 * (u = eps_f/2, to first order) of the exact sum of the kernel's own rows (a teacher row of at
 * most 512 columns, whose lanes are added in float, within (q + 4) u sum |M Y|): the tolerance is
 * KERN_F32_TOL = 1.5 q units of u sum |M Y|. The constant rows (every entry 0.1f) at
 * m = 16411 are the case a float accumulation over the whole row fails: the rounding of a
 * running sum of equal terms does not average out, and over 512 terms per partial sum it
 * reaches 230-300 u sum |M Y| (measured), five times the tolerance (planted: without the block
 * fold, KERN_F32_TERMS = 2^16, the m = 16411 checks fail; a wrong stride or a skipped tail
 * makes most checks fail). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/kern.h"
#include "aimsweep/model/model.h"
#include "aimsweep/model/rng.h"
#include "check.h"
#include "paths.h"

#define KERN_F32_TOL 48.0

static float *floats(struct rng *g, size_t n, int positive)
{
    double *t = malloc(sizeof(double) * (n + 1));
    float *f = malloc(sizeof(float) * (n + 1));
    rng_normals(g, t, n);
    for (size_t i = 0; i < n; i++)
        f[i] = positive ? 0.1f : (float)t[i];
    free(t);
    return f;
}

/* For each row and token b: the worst |O - exact| / (eps_f sum |M Y|) over the kernel's rows M. */
static double proj_err(const float *M, int n, int m, int T, const float *Y, const double *O,
                       int ldo)
{
    double worst = 0;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < T; b++) {
            long double s = 0, a = 0;
            for (int j = 0; j < m; j++) {
                long double p = (long double)M[(size_t)i * m + j] * Y[(size_t)b * m + j];
                s += p;
                a += fabsl(p);
            }
            double e =
                fabs(O[(size_t)b * ldo + i] - (double)s) / (FLT_EPSILON / 2 * (double)a + DBL_MIN);
            if (!(e <= worst))
                worst = e;
        }
    return worst;
}

/* The worst |M1 - exact update of M0| / (eps_f (|r| + sum_a |c x_a|)). */
static double update_err(const float *M0, const float *M1, int n, int m, int T, const double *C,
                         const float *X)
{
    double worst = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            long double v = M0[(size_t)i * m + j], a = fabsl(v);
            for (int t = 0; t < T; t++) {
                long double c = (float)C[(size_t)t * n + i], p = c * X[(size_t)t * m + j];
                v -= p;
                a += fabsl(p);
            }
            double e =
                fabs(M1[(size_t)i * m + j] - (double)v) / (FLT_EPSILON / 2 * (double)a + FLT_MIN);
            if (!(e <= worst))
                worst = e;
        }
    return worst;
}

static void one(struct rng *g, int n, int m, int T, int positive)
{
    size_t nm = (size_t)n * m, Tn = (size_t)T * n, Tm = (size_t)T * m;
    float *M0 = floats(g, nm, positive), *X = floats(g, Tm, 0), *Y = floats(g, Tm, positive);
    float *M1 = malloc(sizeof(float) * nm), *M2 = malloc(sizeof(float) * nm);
    double *C = malloc(sizeof(double) * Tn), *O1 = malloc(sizeof(double) * Tn),
           *O2 = malloc(sizeof(double) * Tn);
    rng_normals(g, C, Tn);
    for (size_t i = 0; i < Tn; i++)
        C[i] *= positive ? 0 : 1; /* keep the rows constant */
    memcpy(M1, M0, sizeof(float) * nm);
    memcpy(M2, M0, sizeof(float) * nm);
    kern_update_project_f32(M1, n, m, T, C, X, Y, O1);
    kern_update_project_f32_portable(M2, n, m, T, C, X, Y, O2);
    double ev = update_err(M0, M1, n, m, T, C, X), ep = update_err(M0, M2, n, m, T, C, X);
    CHECK(ev <= 2 * T && ep <= 2 * T,
          "update n=%d m=%d T=%d: rows off by %.3g (vector), %.3g (portable) eps_f", n, m, T, ev,
          ep);
    ev = proj_err(M1, n, m, T, Y, O1, n);
    ep = proj_err(M2, n, m, T, Y, O2, n);
    CHECK(
        ev <= KERN_F32_TOL && ep <= KERN_F32_TOL,
        "update n=%d m=%d T=%d pos=%d: projections off by %.3g (vector), %.3g (portable) eps_f sum|MY|",
        n, m, T, positive, ev, ep);
    /* projection only, into a longer output whose gaps stay untouched */
    int ldo = n + 2;
    double *O3 = malloc(sizeof(double) * (size_t)T * ldo);
    for (int port = 0; port < 2; port++) {
        for (size_t i = 0; i < (size_t)T * ldo; i++)
            O3[i] = NAN;
        (port ? kern_project_f32_portable : kern_project_f32)(M1, n, m, T, Y, O3, ldo);
        int gaps = 1;
        for (int b = 0; b < T; b++)
            gaps &= isnan(O3[(size_t)b * ldo + n]) && isnan(O3[(size_t)b * ldo + n + 1]);
        double e = proj_err(M1, n, m, T, Y, O3, ldo);
        CHECK(e <= KERN_F32_TOL && gaps,
              "%s project n=%d m=%d T=%d pos=%d: off by %.3g eps_f sum|MY| or gaps written",
              port ? "portable" : "vector", n, m, T, positive, e);
    }
    free(O3);
    /* fused with nf rows of another matrix F */
    for (int nf = 0; nf <= n; nf += n / 2 + 1) {
        int ldz = nf + 3;
        float *F = floats(g, (size_t)nf * m, positive);
        double *Z = malloc(sizeof(double) * (size_t)T * ldz);
        for (size_t i = 0; i < (size_t)T * ldz; i++)
            Z[i] = NAN;
        memcpy(M1, M0, sizeof(float) * nm);
        int done = kern_update_project_fused_f32(M1, n, m, T, C, X, Y, O1, F, nf, Z, ldz);
        int want = T == 2 ? (nf < n / 2 ? nf : n / 2) : 0;
        CHECK(done == want, "fused n=%d m=%d T=%d nf=%d: %d rows of F projected, want %d", n, m, T,
              nf, done, want);
        double eu = update_err(M0, M1, n, m, T, C, X), eo = proj_err(M1, n, m, T, Y, O1, n);
        double ez = proj_err(F, done, m, T, Y, Z, ldz);
        int untouched = 1;
        for (int b = 0; b < T; b++)
            for (int p = done; p < ldz; p++)
                untouched &= isnan(Z[(size_t)b * ldz + p]);
        CHECK(
            eu <= 2 * T && eo <= KERN_F32_TOL && ez <= KERN_F32_TOL && untouched,
            "fused n=%d m=%d T=%d nf=%d pos=%d: rows %.3g, projections %.3g, teacher %.3g eps_f, or rows past %d "
            "written",
            n, m, T, nf, positive, eu, eo, ez, done);
        /* the look-ahead (sgd.c): the pass without F and the teacher rows of K samples in one
         * read of F must be the fused pass's bit for bit (sample 2 of K = 5 is Y, the others
         * other tokens; planted: a fold at another column or the two sums of project_pair_f32
         * make these differ in the last bits, a wrong sample stride everywhere) */
        if (T == 2 && kern_vector()) {
            enum { K = 5 };
            float *YK = floats(g, (size_t)K * Tm, positive);
            memcpy(YK + 2 * Tm, Y, sizeof(float) * Tm);
            double *ZK = malloc(sizeof(double) * K * 2 * (size_t)ldz);
            memcpy(M2, M0, sizeof(float) * nm);
            int done2 = kern_update_project_ahead_f32(M2, n, m, T, C, X, Y, O2, nf);
            int rc = kern_project_fused_order_f32(F, done, m, K, YK, Tm, ZK, 2 * (size_t)ldz, ldz);
            int same = done2 == done && rc == 0 && !memcmp(M1, M2, sizeof(float) * nm) &&
                       !memcmp(O1, O2, sizeof(double) * Tn);
            for (int b = 0; b < 2; b++)
                for (int p = 0; p < done; p++)
                    same &= !memcmp(&Z[(size_t)b * ldz + p], &ZK[4 * (size_t)ldz + b * ldz + p],
                                    sizeof(double));
            CHECK(same, "ahead n=%d m=%d nf=%d pos=%d: not the fused pass bit for bit", n, m, nf,
                  positive);
            free(YK);
            free(ZK);
        }
        free(F);
        free(Z);
    }
    /* the double accumulation of kern_dot_f32 against the exact sum */
    double dd = fabs(kern_dot_f32(M0, Y, (size_t)m) - (double)0), ex = 0, ab = 0;
    for (int j = 0; j < m; j++) {
        ex += (double)M0[j] * Y[j];
        ab += fabs((double)M0[j] * Y[j]);
    }
    dd = fabs(kern_dot_f32(M0, Y, (size_t)m) - ex);
    CHECK(dd <= 4 * DBL_EPSILON * m * ab + DBL_MIN, "dot_f32 m=%d: off by %.3g", m, dd);
    free(M0);
    free(M1);
    free(M2);
    free(X);
    free(Y);
    free(C);
    free(O1);
    free(O2);
}

/* The vector kernels' order of operations, written out lane by lane in scalar C (fmaf is the
 * hardware's fused multiply-add, correctly rounded either way), so that every build with the
 * vector kernels (8-lane AVX2, or 16-lane AVX-512, whose lanes must take the same products in
 * the same order) can be held to it with memcmp. One row r (the rows of a pass are
 * independent): the update v = fma(-b, x1, fma(-a, x0, r)) per entry, then for each token c two
 * float partial sums of eight lanes, s over columns 16c + l and t over 16c + 8 + l, for blocks
 * of 16 KERN_F32_TERMS columns, each block's s then t added into eight double lanes
 * (o[l] += (double)s[l]); then one 8-column step (a partial sum of one product per lane), then
 * the last m % 8 columns (products rounded to float, the missing lanes +0); the result is
 * w[l] = o[l] + o[l + 4], then (w[0] + w[2]) + (w[1] + w[3]). update = 0 leaves r alone
 * (kern_project_fused_order_f32's teacher rows); of such a row of whole 16-column steps, at
 * most 16 KERN_F32_TERMS of them, the sum is instead its 16 lanes a_l added in float (the same
 * tree: p_l = a_l + a_{l+8}, r_l = p_l + p_{l+4}, (r_0 + r_2) + (r_1 + r_3)), then in double. */
enum { EMU_TERMS = 32 }; /* KERN_F32_TERMS */

static double emu_tree(const float a[16])
{
    float p[8], r[4];
    for (int l = 0; l < 8; l++)
        p[l] = a[l] + a[l + 8];
    for (int l = 0; l < 4; l++)
        r[l] = p[l] + p[l + 4];
    return (double)((r[0] + r[2]) + (r[1] + r[3]));
}

static void emu_fold(double o[8], const float s[8])
{
    for (int i = 0; i < 8; i++)
        o[i] += (double)s[i];
}

static float emu_entry(float *r, int j, int update, float a, float b, const float *x0,
                       const float *x1)
{
    if (!update)
        return r[j];
    float v = fmaf(-b, x1[j], fmaf(-a, x0[j], r[j]));
    r[j] = v;
    return v;
}

static void emu_row(float *r, int m, int update, float a, float b, const float *x0, const float *x1,
                    const float *y0, const float *y1, double out[2])
{
    const float *y[2] = {y0, y1};
    if (!update && m % 16 == 0 && m <= 16 * EMU_TERMS) { /* a short teacher row */
        float a[2][16] = {{0}};
        for (int j = 0; j < m; j += 16)
            for (int l = 0; l < 16; l++)
                for (int c = 0; c < 2; c++)
                    a[c][l] = fmaf(r[j + l], y[c][j + l], a[c][l]);
        for (int c = 0; c < 2; c++)
            out[c] = emu_tree(a[c]);
        return;
    }
    double o[2][8] = {{0}};
    int j = 0;
    while (j + 16 <= m) {
        int end = j + 16 * EMU_TERMS <= m ? j + 16 * EMU_TERMS : m - (m - j) % 16;
        float s[2][16] = {{0}};
        for (; j < end; j += 16)
            for (int l = 0; l < 16; l++) {
                float v = emu_entry(r, j + l, update, a, b, x0, x1);
                for (int c = 0; c < 2; c++)
                    s[c][l] = fmaf(v, y[c][j + l], s[c][l]);
            }
        for (int c = 0; c < 2; c++) {
            emu_fold(o[c], s[c]);
            emu_fold(o[c], s[c] + 8);
        }
    }
    if (j + 8 <= m) {
        float s[2][8] = {{0}};
        for (int l = 0; l < 8; l++) {
            float v = emu_entry(r, j + l, update, a, b, x0, x1);
            for (int c = 0; c < 2; c++)
                s[c][l] = fmaf(v, y[c][j + l], 0.0f);
        }
        for (int c = 0; c < 2; c++)
            emu_fold(o[c], s[c]);
        j += 8;
    }
    if (j < m) {
        float s[2][8] = {{0}};
        for (int l = 0; j + l < m; l++) {
            float v = emu_entry(r, j + l, update, a, b, x0, x1);
            for (int c = 0; c < 2; c++)
                s[c][l] = v * y[c][j + l];
        }
        for (int c = 0; c < 2; c++)
            emu_fold(o[c], s[c]);
    }
    for (int c = 0; c < 2; c++) {
        double w[4];
        for (int i = 0; i < 4; i++)
            w[i] = o[c][i] + o[c][i + 4];
        out[c] = (w[0] + w[2]) + (w[1] + w[3]);
    }
}

/* The T = 2 passes of the vector build against emu_row, bit for bit, on the rows that go
 * through the vector kernels (every row of a pair; an odd last row takes the portable loop):
 * kern_update_project_f32 (two partial sums), kern_update_project_ahead_f32 with every pair,
 * half of them or none projected ahead (every sum in the one order, four rows at a time with
 * AVX-512), and kern_project_fused_order_f32's teacher rows for five samples. Planted in the 16-lane kernels:
 * a block of the pass one 16-column step longer fails 48 checks, the total's lanes added as
 * neighbours (l + 1) instead of l + 4 708, the second teacher row multiplied by the first's
 * register 93, the fourth row of the look-ahead's four taking the third's coefficient b 186; the
 * 8-lane kernels (x86-64-v3 build) are held to the same order. In the teacher rows of at most
 * 512 columns (project_short_f32, finish_tree2_f32 where they are whole 16-column steps): a
 * sample's two tokens swapped fails 40 checks, the float tree's third level pairing other lanes
 * 36, the two rows of a pair swapped 40, a whole group's last token not stored 30. (Folding t
 * before s cannot show: a sum in double of a few float partial sums is exact, in either order.) */
static void order_one(struct rng *g, int n, int m)
{
    size_t nm = (size_t)n * m;
    float *M0 = floats(g, nm, 0), *X = floats(g, 2 * (size_t)m, 0);
    float *Y = floats(g, 10 * (size_t)m, 0), *M1 = malloc(sizeof(float) * nm),
          *M2 = malloc(sizeof(float) * nm);
    double *C = malloc(sizeof(double) * 2 * n), *O1 = malloc(sizeof(double) * 2 * n),
           *O2 = malloc(sizeof(double) * 2 * n);
    rng_normals(g, C, 2 * (size_t)n);
    int pairs = n / 2;
    for (int mode = 0; mode < 4; mode++) { /* 0: kern_update_project_f32; 1-3: ahead, nf */
        int nf = mode == 0 ? 0 : mode == 1 ? pairs : mode == 2 ? pairs / 2 : 0;
        memcpy(M1, M0, sizeof(float) * nm);
        memcpy(M2, M0, sizeof(float) * nm);
        if (mode == 0)
            kern_update_project_f32(M1, n, m, 2, C, X, Y, O1);
        else
            kern_update_project_ahead_f32(M1, n, m, 2, C, X, Y, O1, nf);
        int same = 1;
        for (int i = 0; i < 2 * pairs; i++) {
            double out[2];
            emu_row(M2 + (size_t)i * m, m, 1, (float)C[i], (float)C[n + i], X, X + m, Y, Y + m,
                    out);
            same &= !memcmp(M1 + (size_t)i * m, M2 + (size_t)i * m, sizeof(float) * m) &&
                    !memcmp(&O1[i], &out[0], sizeof(double)) &&
                    !memcmp(&O1[n + i], &out[1], sizeof(double));
        }
        CHECK(same, "order n=%d m=%d mode=%d nf=%d: rows or sums not the kernels' order", n, m,
              mode, nf);
    }
    /* teacher rows: the n rows of M0 as F, five samples of two tokens (Y, stride 2 m): a whole
     * group of four samples and one of one */
    double *Z = malloc(sizeof(double) * 5 * 2 * n);
    int rc = kern_project_fused_order_f32(M0, n, m, 5, Y, 2 * (size_t)m, Z, 2 * (size_t)n, n);
    int same = rc == 0;
    for (int s = 0; s < 5; s++)
        for (int p = 0; p < n; p++) {
            double out[2];
            const float *ys = Y + (size_t)s * 2 * m;
            emu_row(M0 + (size_t)p * m, m, 0, 0, 0, X, X + m, ys, ys + m, out);
            same &= !memcmp(&Z[(size_t)s * 2 * n + p], &out[0], sizeof(double)) &&
                    !memcmp(&Z[(size_t)s * 2 * n + n + p], &out[1], sizeof(double));
        }
    CHECK(same, "order n=%d m=%d: teacher rows not the kernels' order", n, m);
    free(Z);
    free(M0);
    free(M1);
    free(M2);
    free(X);
    free(Y);
    free(C);
    free(O1);
    free(O2);
}

/* n coefficients of a correction: normals times 0.01 (a step's size). */
static void small_coefficients(struct rng *g, double *C, size_t n)
{
    rng_normals(g, C, n);
    for (size_t i = 0; i < n; i++)
        C[i] *= 0.01;
}

/* kern_update2_project2_f32 (two steps per pass in single precision, sgd_two.c) against two
 * one-step passes of the look-ahead kernel, with direct's diagonal term dg between them as its
 * step adds it (in double, then rounded): the rows bit for bit, the projections on Y bit for bit
 * those of the second one-step pass, those on Y2 bit for bit a projection alone over the same
 * rows, and within KERN_F32_TOL of the exact sums of the kernel's own rows; the first correction
 * alone (a flush) followed by the second with dg and the projections gives the same rows and
 * sums. Planted (tried): the corrections in the other order fail every shape with m >= 16;
 * Y2's sums taken from Y fail them all; dg added in float (dg rounded first) fails 27 checks. */
static void two_step_one(struct rng *g, int n, int m, double dg)
{
    size_t nm = (size_t)n * m, Tn = 2 * (size_t)n, Tm = 2 * (size_t)m;
    float *M0 = floats(g, nm, 0), *X1 = floats(g, Tm, 0), *X2 = floats(g, Tm, 0);
    float *Y = floats(g, Tm, 0), *Y2 = floats(g, Tm, 0);
    float *A = malloc(sizeof(float) * nm), *B = malloc(sizeof(float) * nm),
          *F = malloc(sizeof(float) * nm);
    double *C1 = malloc(sizeof(double) * Tn), *C2 = malloc(sizeof(double) * Tn);
    double *Ot = malloc(sizeof(double) * Tn), *Oa = malloc(sizeof(double) * Tn),
           *O2a = malloc(sizeof(double) * Tn), *Ob = malloc(sizeof(double) * Tn),
           *O2b = malloc(sizeof(double) * Tn), *Of = malloc(sizeof(double) * Tn),
           *O2f = malloc(sizeof(double) * Tn);
    small_coefficients(g, C1, Tn);
    small_coefficients(g, C2, Tn);
    memcpy(A, M0, sizeof(float) * nm);
    memcpy(B, M0, sizeof(float) * nm);
    memcpy(F, M0, sizeof(float) * nm);
    /* direct's diagonal term between the steps, as its one-step path adds it (n = m) */
    kern_update_project_ahead_f32(A, n, m, 2, C1, X1, Y, Ot, 0);
    for (int i = 0; dg != 0 && i < n; i++)
        A[(size_t)i * m + i] = (float)(A[(size_t)i * m + i] + dg);
    kern_update_project_ahead_f32(A, n, m, 2, C2, X2, Y, Oa, 0);
    int r0 = kern_update2_project2_f32(A, n, m, NULL, NULL, 0, NULL, NULL, Y2, NULL, O2a, NULL);
    int r1 = kern_update2_project2_f32(B, n, m, C1, X1, dg, C2, X2, Y, Y2, Ob, O2b);
    int r2 = kern_update2_project2_f32(F, n, m, C1, X1, 0, NULL, NULL, NULL, NULL, NULL, NULL);
    int r3 = kern_update2_project2_f32(F, n, m, NULL, NULL, dg, C2, X2, Y, Y2, Of, O2f);
    CHECK(!r0 && !r1 && !r2 && !r3, "two-step n=%d m=%d dg=%g: a case refused (%d %d %d %d)", n, m,
          dg, r0, r1, r2, r3);
    CHECK(!memcmp(A, B, sizeof(float) * nm) && !memcmp(A, F, sizeof(float) * nm),
          "two-step n=%d m=%d dg=%g: the rows are not two one-step passes' bit for bit", n, m, dg);
    CHECK(!memcmp(Oa, Ob, sizeof(double) * Tn) && !memcmp(Oa, Of, sizeof(double) * Tn),
          "two-step n=%d m=%d dg=%g: the sums on Y are not the one-step pass's bit for bit", n, m,
          dg);
    CHECK(!memcmp(O2a, O2b, sizeof(double) * Tn) && !memcmp(O2a, O2f, sizeof(double) * Tn),
          "two-step n=%d m=%d dg=%g: the sums on Y2 are not a projection's bit for bit", n, m, dg);
    double e1 = proj_err(B, n, m, 2, Y, Ob, n), e2 = proj_err(B, n, m, 2, Y2, O2b, n);
    CHECK(e1 <= KERN_F32_TOL && e2 <= KERN_F32_TOL,
          "two-step n=%d m=%d: sums off the exact ones by %.3g and %.3g u sum |M Y| (tolerance %g)",
          n, m, e1, e2, KERN_F32_TOL);
    free(M0), free(X1), free(X2), free(Y), free(Y2), free(A), free(B), free(F);
    free(C1), free(C2), free(Ot), free(Oa), free(O2a), free(Ob), free(O2b), free(Of), free(O2f);
}

/* kern_update2_project2_f32_ld on a block of an N x N matrix, as sgd_sym.c takes its bands:
 * rows r0 to r0 + rows, columns from s = r0 to the rows' end, the tokens and coefficients taken
 * at those offsets. The block's entries are bit for bit those of the call over the whole matrix,
 * with the diagonal term on the block's own diagonal; everything outside the block is left as it
 * was; the sums are within KERN_F32_TOL of the exact sums over the block's rows, and without the
 * diagonal term the entries and sums are bit for bit those of the call over a matrix of the block
 * alone. (Planted: the second token's row of the first correction taken m entries on instead
 * of ldx fails 12 checks, the rows of a pair m entries apart instead of ld 20.) */
static void block_ld(struct rng *g, int N, int r0, int rows, double dg)
{
    int s = r0, m = N - s;
    size_t NN = (size_t)N * N, nm = (size_t)rows * m, TN = 2 * (size_t)N;
    float *M0 = floats(g, NN, 0), *X1 = floats(g, TN, 0), *X2 = floats(g, TN, 0);
    float *Y = floats(g, TN, 0), *Y2 = floats(g, TN, 0);
    float *Mb = malloc(sizeof(float) * NN), *Mf = malloc(sizeof(float) * NN),
          *Bs = malloc(sizeof(float) * nm), *Ms = malloc(sizeof(float) * nm),
          *x1 = malloc(sizeof(float) * 2 * m), *x2 = malloc(sizeof(float) * 2 * m),
          *y = malloc(sizeof(float) * 2 * m), *y2 = malloc(sizeof(float) * 2 * m);
    double *C1 = malloc(sizeof(double) * TN), *C2 = malloc(sizeof(double) * TN),
           *O = calloc(TN, sizeof(double)), *O2 = calloc(TN, sizeof(double)),
           *Of = malloc(sizeof(double) * TN), *Os = malloc(sizeof(double) * 2 * rows),
           *O2s = malloc(sizeof(double) * 2 * rows), *c1 = malloc(sizeof(double) * 2 * rows),
           *c2 = malloc(sizeof(double) * 2 * rows), *Ob = malloc(sizeof(double) * 2 * rows),
           *O2b = malloc(sizeof(double) * 2 * rows);
    small_coefficients(g, C1, TN);
    small_coefficients(g, C2, TN);
    memcpy(Mb, M0, sizeof(float) * NN);
    memcpy(Mf, M0, sizeof(float) * NN);
    int rc =
        kern_update2_project2_f32_ld(Mb + (size_t)r0 * N + s, rows, m, (size_t)N, N, N, C1 + r0,
                                     X1 + s, dg, C2 + r0, X2 + s, Y + s, Y2 + s, O + r0, O2 + r0);
    int rf = kern_update2_project2_f32(Mf, N, N, C1, X1, dg, C2, X2, Y, Y2, Of, Of);
    CHECK(!rc && !rf, "block N=%d: refused (%d %d)", N, rc, rf);
    int inside = 1, outside = 1;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            size_t e = (size_t)i * N + j;
            if (i >= r0 && i < r0 + rows && j >= s)
                inside &= !memcmp(Mb + e, Mf + e, sizeof(float));
            else
                outside &= !memcmp(Mb + e, M0 + e, sizeof(float));
        }
    CHECK(inside && outside,
          "block N=%d r0=%d rows=%d dg=%g: entries inside %d, outside untouched %d", N, r0, rows,
          dg, inside, outside);
    for (int i = 0; i < rows; i++)
        memcpy(Bs + (size_t)i * m, Mb + (size_t)(r0 + i) * N + s, sizeof(float) * m);
    for (int b = 0; b < 2; b++) {
        for (int i = 0; i < rows; i++) {
            Ob[b * rows + i] = O[(size_t)b * N + r0 + i];
            O2b[b * rows + i] = O2[(size_t)b * N + r0 + i];
            c1[b * rows + i] = C1[(size_t)b * N + r0 + i];
            c2[b * rows + i] = C2[(size_t)b * N + r0 + i];
        }
        memcpy(x1 + (size_t)b * m, X1 + (size_t)b * N + s, sizeof(float) * m);
        memcpy(x2 + (size_t)b * m, X2 + (size_t)b * N + s, sizeof(float) * m);
        memcpy(y + (size_t)b * m, Y + (size_t)b * N + s, sizeof(float) * m);
        memcpy(y2 + (size_t)b * m, Y2 + (size_t)b * N + s, sizeof(float) * m);
    }
    double e1 = proj_err(Bs, rows, m, 2, y, Ob, rows), e2 = proj_err(Bs, rows, m, 2, y2, O2b, rows);
    CHECK(e1 <= KERN_F32_TOL && e2 <= KERN_F32_TOL,
          "block N=%d r0=%d rows=%d: sums off the exact ones by %.3g and %.3g u sum |M Y|", N, r0,
          rows, e1, e2);
    if (dg == 0) { /* the block alone */
        for (int i = 0; i < rows; i++)
            memcpy(Ms + (size_t)i * m, M0 + (size_t)(r0 + i) * N + s, sizeof(float) * m);
        kern_update2_project2_f32(Ms, rows, m, c1, x1, 0, c2, x2, y, y2, Os, O2s);
        CHECK(!memcmp(Ms, Bs, sizeof(float) * nm) && !memcmp(Os, Ob, sizeof(double) * 2 * rows) &&
                  !memcmp(O2s, O2b, sizeof(double) * 2 * rows),
              "block N=%d r0=%d rows=%d: not the block alone's entries and sums", N, r0, rows);
    }
    free(M0), free(X1), free(X2), free(Y), free(Y2), free(Mb), free(Mf), free(Bs), free(Ms);
    free(x1), free(x2), free(y), free(y2), free(C1), free(C2), free(O), free(O2), free(Of);
    free(Os), free(O2s), free(c1), free(c2), free(Ob), free(O2b);
}

/* kern_band2_project2_f32 on a block kept column by column, against kern_update2_project2_f32_ld
 * on the same block row-major, for each case of the flags (`which`: both corrections, the second
 * alone, the first alone, the projection alone; dg with the first two): the entries bit for bit,
 * each sum bit for bit the lane order written out below (a float partial sum over each
 * BAND_TERMS = 128 columns in their order, fmaf, then added in double), and within
 * BAND_TOL = 1.5 BAND_TERMS units of u sum |M Y| of the exact sum (kern_f32_body.h's bound for the
 * bands). Blocks of 2 to 32 rows (whole and partial vectors of 8 and 16 lanes), rows of one
 * column to several partial sums, the tokens' and coefficients' rows apart by more than the
 * block. (Planted: the second token's sums written to the first's place fails 710 checks, dg
 * left out 224, partial sums over 64 columns instead of 128 180.) */
enum { BAND_TERMS = 128 }; /* KERN_F32_BAND_TERMS */
#define BAND_TOL (1.5 * BAND_TERMS)
static void band_one(struct rng *g, int rows, int m, int which, double dg)
{
    int ldx = m + 3, ldc = rows + 5;
    size_t nm = (size_t)rows * m;
    float *R = floats(g, nm, 0), *B = malloc(sizeof(float) * nm),
          *X1 = floats(g, 2 * (size_t)ldx, 0), *X2 = floats(g, 2 * (size_t)ldx, 0),
          *Y = floats(g, 2 * (size_t)ldx, 0), *Y2 = floats(g, 2 * (size_t)ldx, 0);
    double *C1 = malloc(sizeof(double) * 2 * ldc), *C2 = malloc(sizeof(double) * 2 * ldc);
    double *Oa = calloc(2 * (size_t)ldc, sizeof(double)),
           *O2a = calloc(2 * (size_t)ldc, sizeof(double)),
           *Ob = calloc(2 * (size_t)ldc, sizeof(double)),
           *O2b = calloc(2 * (size_t)ldc, sizeof(double));
    small_coefficients(g, C1, 2 * (size_t)ldc);
    small_coefficients(g, C2, 2 * (size_t)ldc);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < m; j++)
            B[(size_t)j * rows + r] = R[(size_t)r * m + j];
    const double *c1 = which == 0 || which == 2 ? C1 : NULL, *c2 = which <= 1 ? C2 : NULL;
    const float *y = which == 2 ? NULL : Y, *y2 = which <= 1 ? Y2 : NULL;
    int ny = y ? (y2 ? 4 : 2) : 0;
    int ra = kern_update2_project2_f32_ld(R, rows, m, (size_t)m, ldx, ldc, c1, c1 ? X1 : NULL, dg,
                                          c2, c2 ? X2 : NULL, y, y2, Oa, O2a);
    int rb = kern_band2_project2_f32(B, rows, m, ldx, ldc, c1, c1 ? X1 : NULL, dg, c2,
                                     c2 ? X2 : NULL, y, y2, Ob, O2b);
    CHECK(!ra && !rb, "band rows=%d m=%d case %d: refused (%d %d)", rows, m, which, ra, rb);
    int same = 1;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < m; j++)
            same &= !memcmp(&B[(size_t)j * rows + r], &R[(size_t)r * m + j], sizeof(float));
    CHECK(same, "band rows=%d m=%d case %d dg=%g: entries not the row-major kernel's", rows, m,
          which, dg);
    const float *yq[4] = {Y, Y + ldx, Y2, Y2 + ldx};
    const double *oq[4] = {Ob, Ob + ldc, O2b, O2b + ldc};
    int order = 1;
    for (int q = 0; q < ny; q++)
        for (int r = 0; r < rows; r++) {
            double t = 0;
            for (int j0 = 0; j0 < m; j0 += BAND_TERMS) {
                float p = 0;
                for (int j = j0; j < m && j < j0 + BAND_TERMS; j++)
                    p = fmaf(B[(size_t)j * rows + r], yq[q][j], p);
                t += (double)p;
            }
            order &= !memcmp(&t, &oq[q][r], sizeof t);
        }
    CHECK(order, "band rows=%d m=%d case %d: sums not in the lane order", rows, m, which);
    if (ny) { /* against the exact sums over the rows (row-major R holds them too) */
        double e1 = proj_err(R, rows, m, 1, Y, Ob, ldc),
               e2 = proj_err(R, rows, m, 1, Y + ldx, Ob + ldc, ldc);
        CHECK(e1 <= BAND_TOL && e2 <= BAND_TOL,
              "band rows=%d m=%d case %d: sums off the exact ones by %.3g and %.3g u sum |M Y|",
              rows, m, which, e1, e2);
    }
    free(R), free(B), free(X1), free(X2), free(Y), free(Y2), free(C1), free(C2);
    free(Oa), free(O2a), free(Ob), free(O2b);
}

int main(void)
{
    test_path_start();
    struct rng g;
    rng_init(&g, 11, STREAM_TEST, 0);
    int ns[] = {1, 2, 3, 5, 8, 33};
    int ms[] = {1, 3, 7, 8, 9, 15, 16, 17, 40, 127, 128, 129, 401};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof ms / sizeof ms[0]; b++)
            for (int T = 1; T <= 3; T++)
                one(&g, ns[a], ms[b], T, 0);
    for (int T = 1; T <= 3; T++)
        one(&g, 4, 16411, T, 1);
    if (kern_vector()) {
        int on[] = {2, 3, 8, 9, 16, 17};
        int om[] = {1,   7,   8,   9,   15,  16,  17,  24,  31,  127,
                    128, 129, 130, 255, 256, 400, 401, 512, 1000};
        for (size_t a = 0; a < sizeof on / sizeof on[0]; a++)
            for (size_t b = 0; b < sizeof om / sizeof om[0]; b++)
                order_one(&g, on[a], om[b]);
        /* more teacher rows than one block of kern_project_fused_order_f32 (32), rows of
         * several spans (512 columns) with every kind of end (planted: spans ending 16 columns
         * early fail 176 checks, the rows past the first 32 of a block taken from its start 8) */
        int bn[] = {33, 67};
        int bm[] = {513, 1024, 1100, 1545};
        for (size_t a = 0; a < sizeof bn / sizeof bn[0]; a++)
            for (size_t b = 0; b < sizeof bm / sizeof bm[0]; b++)
                order_one(&g, bn[a], bm[b]);
        int tn[] = {1, 2, 3, 5, 16, 17};
        int tm[] = {1, 7, 8, 9, 15, 16, 17, 31, 255, 256, 257, 401, 1100};
        for (size_t a = 0; a < sizeof tn / sizeof tn[0]; a++)
            for (size_t b = 0; b < sizeof tm / sizeof tm[0]; b++)
                two_step_one(&g, tn[a], tm[b], 0);
        /* direct's diagonal term (square: every tail, the odd last row, spans) */
        int sq[] = {1, 2, 3, 15, 16, 17, 31, 33, 255, 257, 401, 1025, 1545};
        for (size_t a = 0; a < sizeof sq / sizeof sq[0]; a++)
            two_step_one(&g, sq[a], sq[a], -0.37512345678901234);
        /* long rows (over 1024 columns: spans of 512 columns, 16 pairs of rows at a time), more
         * rows than one block, every kind of end (planted: spans ending 16 columns early fail
         * every shape of two rows or more with rows over 1024 columns; every pair of a block
         * corrected with the first pair's coefficients fails every shape of two pairs or more) */
        int ln[] = {2, 33, 67};
        int lm[] = {1025, 1040, 1536, 1545, 2055};
        for (size_t a = 0; a < sizeof ln / sizeof ln[0]; a++)
            for (size_t b = 0; b < sizeof lm / sizeof lm[0]; b++)
                two_step_one(&g, ln[a], lm[b], 0);
        /* blocks as sgd_sym.c's bands: the first, inner ones, a last one shorter than the band
         * with every tail of the rows, rows of several spans */
        int bN[] = {40, 40, 42, 43, 70, 70, 13, 1200, 1201};
        int br[] = {0, 8, 32, 36, 32, 64, 4, 64, 1184};
        int bk[] = {8, 8, 10, 7, 32, 6, 4, 32, 17};
        for (size_t a = 0; a < sizeof bN / sizeof bN[0]; a++) {
            block_ld(&g, bN[a], br[a], bk[a], 0);
            block_ld(&g, bN[a], br[a], bk[a], -0.37512345678901234);
        }
        /* the bands column by column */
        int kr[] = {2, 6, 8, 10, 16, 18, 24, 30, 32};
        int km[] = {1, 2, 16, 17, 33, 65, 128, 129, 401};
        for (size_t a = 0; a < sizeof kr / sizeof kr[0]; a++)
            for (size_t b = 0; b < sizeof km / sizeof km[0]; b++)
                for (int w = 0; w < 4; w++) {
                    band_one(&g, kr[a], km[b], w, 0);
                    if (w <= 1 && km[b] >= kr[a])
                        band_one(&g, kr[a], km[b], w, -0.37512345678901234);
                }
        float one = 1;
        double o[2] = {0, 0};
        CHECK(kern_band2_project2_f32(&one, 34, 1, 1, 34, NULL, NULL, 0, NULL, NULL, &one, NULL, o,
                                      o) == -1,
              "band of 34 rows not refused");
    }
    printf("vector kernels in this build: %s\n", kern_vector() == 2 ? "yes (AVX-512 and AVX2, FMA)"
                                                 : kern_vector()    ? "yes (AVX2, FMA)"
                                                                    : "no (portable loops)");
    return check_done("test_kern_f32");
}
