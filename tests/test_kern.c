/* The SGD step's inner loops (kern.h) against a plain long-double evaluation of what they
 * compute, over shapes that exercise every tail: odd row counts, row lengths that are not
 * multiples of the vector width, one token and several. In a build with AVX2 and FMA this
 * checks the hand-written kernels; in any build it checks the portable loops. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/kern.h"
#include "aimsweep/model/model.h"
#include "aimsweep/model/rng.h"
#include "check.h"
#include "paths.h"

/* Rows updated and projected in long double: the reference. */
static void naive(double *M, int n, int m, int T, const double *C, const double *X, const double *Y,
                  double *O)
{
    for (int i = 0; i < n; i++) {
        double *row = M + (size_t)i * m;
        for (int j = 0; j < m; j++) {
            long double v = row[j];
            for (int a = 0; a < T; a++)
                v -= (long double)C[(size_t)a * n + i] * X[(size_t)a * m + j];
            row[j] = (double)v;
        }
        for (int b = 0; b < T; b++) {
            long double s = 0;
            for (int j = 0; j < m; j++)
                s += (long double)row[j] * Y[(size_t)b * m + j];
            O[(size_t)b * n + i] = (double)s;
        }
    }
}

static double maxabs(const double *a, size_t n)
{
    double v = 0;
    for (size_t i = 0; i < n; i++)
        v = fmax(v, fabs(a[i]));
    return v;
}

static double maxdiff(const double *a, const double *b, size_t n)
{
    double v = 0;
    for (size_t i = 0; i < n; i++)
        v = fmax(v, fabs(a[i] - b[i]));
    return v;
}

static void one(struct rng *g, int n, int m, int T)
{
    size_t nm = (size_t)n * m, Tn = (size_t)T * n, Tm = (size_t)T * m;
    double *M0 = malloc(sizeof(double) * nm), *M1 = malloc(sizeof(double) * nm),
           *M2 = malloc(sizeof(double) * nm);
    double *C = malloc(sizeof(double) * Tn), *X = malloc(sizeof(double) * Tm),
           *Y = malloc(sizeof(double) * Tm);
    double *O0 = malloc(sizeof(double) * Tn), *O1 = malloc(sizeof(double) * Tn),
           *O2 = malloc(sizeof(double) * Tn);
    rng_normals(g, M0, nm);
    rng_normals(g, C, Tn);
    rng_normals(g, X, Tm);
    rng_normals(g, Y, Tm);
    memcpy(M1, M0, sizeof(double) * nm);
    memcpy(M2, M0, sizeof(double) * nm);
    naive(M0, n, m, T, C, X, Y, O0);
    kern_update_project(M1, n, m, T, C, X, Y, O1);
    kern_update_project_portable(M2, n, m, T, C, X, Y, O2);
    /* the entries of M are O(1) and the dot products O(sqrt(m) T): a few ulps of each */
    double tm = 1e-14 * maxabs(M0, nm), to = 1e-14 * (double)m * maxabs(O0, Tn);
    CHECK(maxdiff(M1, M0, nm) <= tm, "update n=%d m=%d T=%d: rows differ by %.3g", n, m, T,
          maxdiff(M1, M0, nm));
    CHECK(maxdiff(O1, O0, Tn) <= to, "update n=%d m=%d T=%d: projections differ by %.3g", n, m, T,
          maxdiff(O1, O0, Tn));
    CHECK(maxdiff(M2, M0, nm) <= tm && maxdiff(O2, O0, Tn) <= to,
          "portable update n=%d m=%d T=%d differs", n, m, T);
    /* projection only, of the updated rows */
    kern_project(M0, n, m, T, Y, O1, n);
    kern_project_portable(M0, n, m, T, Y, O2, n);
    CHECK(maxdiff(O1, O0, Tn) <= to, "project n=%d m=%d T=%d: differs by %.3g", n, m, T,
          maxdiff(O1, O0, Tn));
    CHECK(maxdiff(O2, O0, Tn) <= to, "portable project n=%d m=%d T=%d: differs by %.3g", n, m, T,
          maxdiff(O2, O0, Tn));
    /* into rows of a longer output (ldo = n + 2): the same values, the gaps untouched */
    for (int port = 0; port < 2; port++) {
        int ldo = n + 2;
        double *O3 = malloc(sizeof(double) * (size_t)T * ldo), worst = 0;
        for (size_t i = 0; i < (size_t)T * ldo; i++)
            O3[i] = NAN;
        if (port)
            kern_project_portable(M0, n, m, T, Y, O3, ldo);
        else
            kern_project(M0, n, m, T, Y, O3, ldo);
        int gaps = 1;
        for (int b = 0; b < T; b++) {
            for (int i = 0; i < n; i++) {
                double e = fabs(O3[(size_t)b * ldo + i] - O0[(size_t)b * n + i]);
                if (!(e <= worst)) /* an entry left unwritten (NaN) makes worst NaN */
                    worst = e;
            }
            gaps &= isnan(O3[(size_t)b * ldo + n]) && isnan(O3[(size_t)b * ldo + n + 1]);
        }
        CHECK(worst <= to && gaps,
              "%s project n=%d m=%d T=%d ldo=%d: differs by %.3g or gaps written",
              port ? "portable" : "vector", n, m, T, ldo, worst);
        free(O3);
    }
    /* fused with the projection of nf rows of another matrix F, at two offsets of Z's rows */
    for (int nf = 0; nf <= n; nf += n / 2 + 1) {
        int ldz = nf + 3;
        double *F = malloc(sizeof(double) * ((size_t)nf * m + 1)),
               *Z = malloc(sizeof(double) * (size_t)T * ldz);
        rng_normals(g, F, (size_t)nf * m);
        memcpy(M1, M2, sizeof(double) * nm);
        memcpy(M0, M2, sizeof(double) * nm);
        naive(M0, n, m, T, C, X, Y, O0);
        for (size_t i = 0; i < (size_t)T * ldz; i++)
            Z[i] = NAN;
        int done = kern_update_project_fused(M1, n, m, T, C, X, Y, O1, F, nf, Z, ldz);
        int want = T == 2 ? (nf < n / 2 ? nf : n / 2) : 0;
        CHECK(done == want, "fused n=%d m=%d T=%d nf=%d: %d rows of F projected, want %d", n, m, T,
              nf, done, want);
        CHECK(maxdiff(M1, M0, nm) <= 1e-14 * maxabs(M0, nm) &&
                  maxdiff(O1, O0, Tn) <= 1e-14 * (double)m * maxabs(O0, Tn),
              "fused n=%d m=%d T=%d nf=%d: update differs", n, m, T, nf);
        double zd = 0, zmax = 0;
        for (int p = 0; p < done; p++)
            for (int b = 0; b < T; b++) {
                long double t = 0;
                for (int j = 0; j < m; j++)
                    t += (long double)F[(size_t)p * m + j] * Y[(size_t)b * m + j];
                zd = fmax(zd, fabs(Z[(size_t)b * ldz + p] - (double)t));
                zmax = fmax(zmax, fabs((double)t));
            }
        int untouched = 1;
        for (int b = 0; b < T; b++)
            for (int p = done; p < ldz; p++)
                untouched &= isnan(Z[(size_t)b * ldz + p]);
        CHECK(zd <= 1e-14 * (double)m * (1 + zmax) && untouched,
              "fused n=%d m=%d T=%d nf=%d: teacher rows differ by %.3g or rows past %d written", n,
              m, T, nf, zd, done);
        free(F);
        free(Z);
    }
    free(M0);
    free(M1);
    free(M2);
    free(C);
    free(X);
    free(Y);
    free(O0);
    free(O1);
    free(O2);
}

/* The paired layout and its kernel (kern.h): the layout a permutation of the entries (every
 * index in range, hit once, pack then unpack the identity), and the paired kernel's rows,
 * projections and teacher rows bit for bit those of kern_update_project_fused on the same
 * matrix row-major, for nf from 0 (no teacher row: the two-partial-sum pairs) to past n/2 (one
 * teacher row per pair), odd n (the last row stays row-major) and every m % 8. A lane of one row
 * landing in the other's half, or a sum taken in another order, fails these (with random
 * entries two orders agree to the last bit in a few percent of sums only). Without the AVX-512
 * kernel kern_update_project_fused_paired must refuse (-1) and leave M alone. */
static void paired(struct rng *g, int n, int m)
{
    size_t nm = (size_t)n * m;
    int T = 2;
    double *A = malloc(sizeof(double) * nm), *P = malloc(sizeof(double) * nm),
           *B = malloc(sizeof(double) * nm), *C = malloc(sizeof(double) * 2 * n),
           *X = malloc(sizeof(double) * 2 * m), *Y = malloc(sizeof(double) * 2 * m),
           *O0 = malloc(sizeof(double) * 2 * n), *O1 = malloc(sizeof(double) * 2 * n);
    unsigned char *hit = calloc(nm, 1);
    rng_normals(g, A, nm);
    rng_normals(g, C, 2 * (size_t)n);
    rng_normals(g, X, 2 * (size_t)m);
    rng_normals(g, Y, 2 * (size_t)m);
    int perm = 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            size_t e = kern_paired_index(n, m, i, j);
            perm &= e < nm && !hit[e];
            if (e < nm)
                hit[e] = 1;
        }
    kern_paired_pack(A, P, n, m);
    kern_paired_unpack(P, B, n, m);
    CHECK(perm && !memcmp(A, B, sizeof(double) * nm),
          "paired n=%d m=%d: the layout is not a permutation, or pack/unpack not inverse", n, m);
    for (int nf = 0; nf <= n; nf += n / 4 + 1) {
        int ldz = nf + 1;
        double *F = malloc(sizeof(double) * ((size_t)nf * m + 1)),
               *Z0 = calloc(2 * (size_t)ldz, sizeof(double)),
               *Z1 = calloc(2 * (size_t)ldz, sizeof(double));
        rng_normals(g, F, (size_t)nf * m);
        memcpy(B, A, sizeof(double) * nm);
        kern_paired_pack(A, P, n, m);
        int d0 = kern_update_project_fused(B, n, m, T, C, X, Y, O0, F, nf, Z0, ldz);
        int d1 = kern_update_project_fused_paired(P, n, m, T, C, X, Y, O1, F, nf, Z1, ldz);
        if (kern_paired(T)) {
            double *U = malloc(sizeof(double) * nm);
            kern_paired_unpack(P, U, n, m);
            CHECK(d0 == d1 && !memcmp(U, B, sizeof(double) * nm) &&
                      !memcmp(O0, O1, sizeof(double) * 2 * n) &&
                      !memcmp(Z0, Z1, sizeof(double) * 2 * ldz),
                  "paired n=%d m=%d nf=%d: not bit for bit the row-major kernel's", n, m, nf);
            /* without F: the same rows; the teacher rows of 5 samples at once, the third being
             * Y, those of the pass with F */
            int K = 5;
            double *P2 = malloc(sizeof(double) * nm), *O2 = malloc(sizeof(double) * 2 * n),
                   *Ys = malloc(sizeof(double) * 2 * (size_t)m * K),
                   *YYs = malloc(sizeof(double) * 2 * (size_t)m * K),
                   *Zs = malloc(sizeof(double) * 2 * (size_t)ldz * K);
            kern_paired_pack(A, P2, n, m);
            int d2 = kern_update_project_fused_paired(P2, n, m, T, C, X, Y, O2, NULL, nf, NULL, 0);
            rng_normals(g, Ys, 2 * (size_t)m * K);
            memcpy(Ys + 4 * (size_t)m, Y, sizeof(double) * 2 * m);
            for (int s = 0; s < K; s++)
                kern_interleave2(Ys + 2 * (size_t)m * s, m, YYs + 2 * (size_t)m * s);
            int rc = kern_project_fused_order(F, d1, m, K, Ys, 2 * (size_t)m, YYs, 2 * (size_t)m,
                                              Zs, 2 * (size_t)ldz, ldz);
            int same = 1;
            for (int b = 0; b < 2; b++)
                for (int p = 0; p < d1; p++)
                    same &= Zs[4 * (size_t)ldz + (size_t)b * ldz + p] == Z1[(size_t)b * ldz + p];
            CHECK(rc == 0 && d2 == d1 && !memcmp(P2, P, sizeof(double) * nm) &&
                      !memcmp(O2, O1, sizeof(double) * 2 * n) && same,
                  "paired n=%d m=%d nf=%d: without F, or the teacher rows apart, not the same", n,
                  m, nf);
            free(P2);
            free(O2);
            free(Ys);
            free(YYs);
            free(Zs);
            free(U);
        } else {
            kern_paired_pack(A, B, n, m);
            CHECK(d1 == -1 && !memcmp(P, B, sizeof(double) * nm),
                  "paired n=%d m=%d: ran without the AVX-512 kernel", n, m);
        }
        free(F);
        free(Z0);
        free(Z1);
    }
    free(A);
    free(P);
    free(B);
    free(C);
    free(X);
    free(Y);
    free(O0);
    free(O1);
    free(hit);
}

/* Adds v to the diagonal of the paired n x n matrix P (as the direct step does before a pass). */
static void add_diag(double *P, int n, double v)
{
    for (int i = 0; i < n; i++)
        P[kern_paired_index(n, n, i, i)] += v;
}

/* |O - exact| within the rounding bound of a sum of m products, m eps sum_j |M_ij Y_bj| (the
 * bound is gamma_m = m u / (1 - m u) with u = eps / 2: twice that), the exact sum in long
 * double over the rows of the paired matrix P. */
static int proj_ok(const double *P, int n, int m, const double *Y, const double *O)
{
    int ok = 1;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 2; b++) {
            long double s = 0, a = 0;
            for (int j = 0; j < m; j++) {
                long double t =
                    (long double)P[kern_paired_index(n, m, i, j)] * Y[(size_t)b * m + j];
                s += t;
                a += fabsl(t);
            }
            ok &= fabsl((long double)O[(size_t)b * n + i] - s) <= (long double)m * DBL_EPSILON * a;
        }
    return ok;
}

/* The two-step pass (kern_update2_project2_paired) against two one-step passes
 * (kern_update_project_fused_paired, with the diagonal terms added before each as the direct
 * step adds them) on the same samples: the stored rows bit for bit, for every n = m tail and
 * odd n, with and without the diagonal term, and for n != m without it; the four projections
 * within m eps sum |M_ij Y_bj| of the exact sums; a correction alone then the rest (the flush of
 * sgd_direct.c, then a one-correction pass) the same rows and projections bit for bit as the
 * two-step pass; and a projection alone (C1 = C2 = NULL) the two-step pass's second projections
 * bit for bit. A diagonal term added in the wrong lane or before the first correction, a
 * correction applied with the other's tokens, or a block skipped, fails the first check (a
 * rounding differs in most entries); a projection of the wrong row or sample fails the second
 * by many orders of magnitude. Without the AVX-512 kernel the pass must refuse (-1). */
static void two_step(struct rng *g, int n, int m, double dg2)
{
    size_t nm = (size_t)n * m;
    double *A = malloc(sizeof(double) * nm), *P1 = malloc(sizeof(double) * nm),
           *P2 = malloc(sizeof(double) * nm), *P3 = malloc(sizeof(double) * nm),
           *C1 = malloc(sizeof(double) * 2 * n), *C2 = malloc(sizeof(double) * 2 * n),
           *X1 = malloc(sizeof(double) * 2 * m), *X2 = malloc(sizeof(double) * 2 * m),
           *Y = malloc(sizeof(double) * 2 * m), *Y2 = malloc(sizeof(double) * 2 * m),
           *Oa = malloc(sizeof(double) * 2 * n), *O = malloc(sizeof(double) * 2 * n),
           *O2 = malloc(sizeof(double) * 2 * n), *Q = malloc(sizeof(double) * 2 * n),
           *Q2 = malloc(sizeof(double) * 2 * n), *R = malloc(sizeof(double) * 2 * n);
    double dg1 = n == m ? 0.25 : 0;
    rng_normals(g, A, nm);
    rng_normals(g, C1, 2 * (size_t)n);
    rng_normals(g, C2, 2 * (size_t)n);
    rng_normals(g, X1, 2 * (size_t)m);
    rng_normals(g, X2, 2 * (size_t)m);
    rng_normals(g, Y, 2 * (size_t)m);
    rng_normals(g, Y2, 2 * (size_t)m);
    kern_paired_pack(A, P1, n, m);
    kern_paired_pack(A, P2, n, m);
    if (dg1 != 0) {
        add_diag(P1, n, dg1);
        add_diag(P2, n, dg1);
    }
    int rc = kern_update2_project2_paired(P2, n, m, C1, X1, dg2, C2, X2, Y, Y2, O, O2);
    if (!kern_paired(2)) {
        kern_paired_pack(A, P1, n, m);
        if (dg1 != 0)
            add_diag(P1, n, dg1);
        CHECK(rc == -1 && !memcmp(P1, P2, sizeof(double) * nm),
              "two-step n=%d m=%d: ran without the AVX-512 kernel", n, m);
        goto out;
    }
    kern_update_project_fused_paired(P1, n, m, 2, C1, X1, Y, Oa, NULL, 0, NULL, 0);
    if (dg2 != 0)
        add_diag(P1, n, dg2);
    kern_update_project_fused_paired(P1, n, m, 2, C2, X2, Y, Oa, NULL, 0, NULL, 0);
    CHECK(rc == 0 && !memcmp(P1, P2, sizeof(double) * nm),
          "two-step n=%d m=%d dg=%g: the rows are not two one-step passes' bit for bit", n, m, dg2);
    CHECK(proj_ok(P2, n, m, Y, O) && proj_ok(P2, n, m, Y2, O2),
          "two-step n=%d m=%d dg=%g: projections off the exact sums by more than m eps", n, m, dg2);
    /* the first correction alone, then the diagonal term and the second correction */
    kern_paired_pack(A, P3, n, m);
    if (dg1 != 0)
        add_diag(P3, n, dg1);
    kern_update2_project2_paired(P3, n, m, C1, X1, 0, NULL, NULL, NULL, NULL, NULL, NULL);
    if (dg2 != 0)
        add_diag(P3, n, dg2);
    kern_update2_project2_paired(P3, n, m, NULL, NULL, 0, C2, X2, Y, Y2, Q, Q2);
    kern_update2_project2_paired(P3, n, m, NULL, NULL, 0, NULL, NULL, Y2, NULL, R, NULL);
    CHECK(!memcmp(P3, P2, sizeof(double) * nm) && !memcmp(Q, O, sizeof(double) * 2 * n) &&
              !memcmp(Q2, O2, sizeof(double) * 2 * n) && !memcmp(R, O2, sizeof(double) * 2 * n),
          "two-step n=%d m=%d dg=%g: split into its parts, not bit for bit the same", n, m, dg2);
out:
    free(A);
    free(P1);
    free(P2);
    free(P3);
    free(C1);
    free(C2);
    free(X1);
    free(X2);
    free(Y);
    free(Y2);
    free(Oa);
    free(O);
    free(O2);
    free(Q);
    free(Q2);
    free(R);
}

/* kern_update2_project2_paired_ld on a block of an N x N paired matrix, as sgd_sym.c takes its
 * bands: rows r0 to r0 + rows, columns from s (a multiple of 4) to the rows' end, the tokens
 * and coefficients taken at those offsets. The block's entries are bit for bit those of the
 * call over the whole matrix (each entry's operations do not depend on the others), with the
 * diagonal term on the block's own diagonal (s = r0); everything outside the block is left as
 * it was; without the diagonal term the block's entries and sums are bit for bit those of the
 * call over a matrix of the block alone; with it, the sums are within m eps of the exact sums
 * over the block's rows. (Planted: the second token's row taken m entries on instead of ldx
 * fails 24 checks; the second pair of rows taken 2 m entries on instead of 2 ld, 35.) */
static void block_ld(struct rng *g, int N, int r0, int rows, int s, double dg)
{
    int m = N - s;
    size_t NN = (size_t)N * N, nm = (size_t)rows * m;
    double *A = malloc(sizeof(double) * NN), *Pb = malloc(sizeof(double) * NN),
           *Pf = malloc(sizeof(double) * NN), *P0 = malloc(sizeof(double) * NN),
           *As = malloc(sizeof(double) * nm), *Ps = malloc(sizeof(double) * nm),
           *Bs = malloc(sizeof(double) * nm), *C1 = malloc(sizeof(double) * 2 * N),
           *C2 = malloc(sizeof(double) * 2 * N), *X1 = malloc(sizeof(double) * 2 * N),
           *X2 = malloc(sizeof(double) * 2 * N), *Y = malloc(sizeof(double) * 2 * N),
           *Y2 = malloc(sizeof(double) * 2 * N), *O = calloc(2 * (size_t)N, sizeof(double)),
           *O2 = calloc(2 * (size_t)N, sizeof(double)), *Os = malloc(sizeof(double) * 2 * rows),
           *O2s = malloc(sizeof(double) * 2 * rows), *c1 = malloc(sizeof(double) * 2 * rows),
           *c2 = malloc(sizeof(double) * 2 * rows), *x1 = malloc(sizeof(double) * 2 * m),
           *x2 = malloc(sizeof(double) * 2 * m), *y = malloc(sizeof(double) * 2 * m),
           *y2 = malloc(sizeof(double) * 2 * m), *Of = malloc(sizeof(double) * 2 * N);
    rng_normals(g, A, NN);
    double *v[] = {C1, C2, X1, X2, Y, Y2};
    for (int k = 0; k < 6; k++)
        rng_normals(g, v[k], 2 * (size_t)N);
    kern_paired_pack(A, Pb, N, N);
    memcpy(Pf, Pb, sizeof(double) * NN);
    memcpy(P0, Pb, sizeof(double) * NN);
    int rc = kern_update2_project2_paired_ld(Pb + (size_t)r0 * N + 2 * (size_t)s, rows, m,
                                             (size_t)N, N, N, C1 + r0, X1 + s, dg, C2 + r0, X2 + s,
                                             Y + s, Y2 + s, O + r0, O2 + r0);
    if (!kern_paired(2)) {
        CHECK(rc == -1 && !memcmp(Pb, P0, sizeof(double) * NN),
              "block N=%d: ran without the AVX-512 kernel", N);
        goto out;
    }
    kern_update2_project2_paired(Pf, N, N, C1, X1, dg, C2, X2, Y, Y2, Of, Of);
    int inside = 1, outside = 1;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            size_t e = kern_paired_index(N, N, i, j);
            if (i >= r0 && i < r0 + rows && j >= s)
                inside &= !memcmp(Pb + e, Pf + e, sizeof(double));
            else
                outside &= !memcmp(Pb + e, P0 + e, sizeof(double));
        }
    CHECK(!rc && inside && outside,
          "block N=%d r0=%d rows=%d s=%d dg=%g: entries inside %d, outside untouched %d", N, r0,
          rows, s, dg, inside, outside);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < m; j++)
            Bs[(size_t)i * m + j] = Pb[kern_paired_index(N, N, r0 + i, s + j)];
    double *Ob[2] = {O + r0, O2 + r0};
    int sums = 1;
    for (int w = 0; w < 2; w++) {
        const double *yy = w ? Y2 : Y;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < rows; i++) {
                long double t = 0, a = 0;
                for (int j = 0; j < m; j++) {
                    long double p = (long double)Bs[(size_t)i * m + j] * yy[(size_t)b * N + s + j];
                    t += p;
                    a += fabsl(p);
                }
                sums &= fabsl((long double)Ob[w][(size_t)b * N + i] - t) <=
                        (long double)m * DBL_EPSILON * a;
            }
    }
    CHECK(sums, "block N=%d r0=%d rows=%d s=%d dg=%g: sums off the exact ones by more than m eps",
          N, r0, rows, s, dg);
    if (dg == 0) { /* the block alone */
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < m; j++)
                As[(size_t)i * m + j] = A[(size_t)(r0 + i) * N + s + j];
        for (int b = 0; b < 2; b++) {
            for (int i = 0; i < rows; i++) {
                c1[b * rows + i] = C1[(size_t)b * N + r0 + i];
                c2[b * rows + i] = C2[(size_t)b * N + r0 + i];
            }
            for (int j = 0; j < m; j++) {
                x1[b * m + j] = X1[(size_t)b * N + s + j];
                x2[b * m + j] = X2[(size_t)b * N + s + j];
                y[b * m + j] = Y[(size_t)b * N + s + j];
                y2[b * m + j] = Y2[(size_t)b * N + s + j];
            }
        }
        kern_paired_pack(As, Ps, rows, m);
        kern_update2_project2_paired(Ps, rows, m, c1, x1, 0, c2, x2, y, y2, Os, O2s);
        int same = 1;
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < m; j++)
                same &= !memcmp(Ps + kern_paired_index(rows, m, i, j), Bs + (size_t)i * m + j,
                                sizeof(double));
            for (int b = 0; b < 2; b++)
                same &= Os[b * rows + i] == O[(size_t)b * N + r0 + i] &&
                        O2s[b * rows + i] == O2[(size_t)b * N + r0 + i];
        }
        CHECK(same, "block N=%d r0=%d rows=%d s=%d: not the block alone's entries and sums", N, r0,
              rows, s);
    }
out:
    free(A), free(Pb), free(Pf), free(P0), free(As), free(Ps), free(Bs), free(C1), free(C2);
    free(X1), free(X2), free(Y), free(Y2), free(O), free(O2), free(Os), free(O2s), free(c1);
    free(c2), free(x1), free(x2), free(y), free(y2), free(Of);
}

int main(void)
{
    test_path_start();
    struct rng g;
    rng_init(&g, 7, STREAM_TEST, 0);
    int ns[] = {1, 2, 3, 5, 8, 33};
    int ms[] = {1, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 40, 401};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof ms / sizeof ms[0]; b++)
            for (int T = 1; T <= 3; T++)
                one(&g, ns[a], ms[b], T);
    int pn[] = {1, 2, 3, 4, 5, 6, 7, 9, 12, 33};
    int pm[] = {1, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 40, 401};
    for (size_t a = 0; a < sizeof pn / sizeof pn[0]; a++)
        for (size_t b = 0; b < sizeof pm / sizeof pm[0]; b++)
            paired(&g, pn[a], pm[b]);
    int sq[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18, 40, 41, 42, 43, 64, 401};
    for (size_t a = 0; a < sizeof sq / sizeof sq[0]; a++) {
        two_step(&g, sq[a], sq[a], 0);
        two_step(&g, sq[a], sq[a], -0.375);
    }
    int rn[] = {6, 9, 12, 13}, rm[] = {9, 6, 5, 40};
    for (size_t a = 0; a < sizeof rn / sizeof rn[0]; a++)
        two_step(&g, rn[a], rm[a], 0);
    /* rows over 600 columns: groups of pair blocks over spans of 256 columns, more rows than one
     * round of groups, the diagonal in every span, every tail (planted: spans ending four columns
     * early fail every shape; every group corrected with the first group's coefficients fails
     * every shape of two groups or more) */
    int ln[] = {601, 603, 640, 641, 1030, 70, 67}, lm[] = {601, 603, 640, 641, 1030, 700, 1025};
    for (size_t a = 0; a < sizeof ln / sizeof ln[0]; a++) {
        two_step(&g, ln[a], lm[a], 0);
        if (ln[a] == lm[a])
            two_step(&g, ln[a], lm[a], -0.375);
    }
    /* blocks as sgd_sym.c's bands: the first, inner ones, a last one shorter than the band
     * with every tail of the rows, one of rows over 600 columns (groups and spans) */
    int bN[] = {40, 40, 42, 43, 70, 70, 13, 700, 701};
    int br[] = {0, 8, 32, 36, 32, 64, 4, 64, 672};
    int bk[] = {8, 8, 10, 6, 32, 6, 4, 32, 28};
    for (size_t a = 0; a < sizeof bN / sizeof bN[0]; a++) {
        block_ld(&g, bN[a], br[a], bk[a], br[a], 0);
        block_ld(&g, bN[a], br[a], bk[a], br[a], -0.375);
    }
    printf("vector kernels in this build: %s\n", kern_vector() == 2 ? "yes (AVX-512, and AVX2, FMA)"
                                                 : kern_vector() == 1 ? "yes (AVX2, FMA)"
                                                                      : "no (portable loops)");
    /* kern_fma_burst (aimsweep bench's compute roof) and kern_fma_loads (`bench --loads`) count
     * what they do: kern_fma_chains() chains (16, or 12 with AVX2) of vectors of 8 doubles or 16
     * floats with AVX-512, 4 or 8 with AVX2, single scalars otherwise; and the sum is that of the
     * recurrences they run, within float rounding: a <- 0.9999 a + c for a chain that does not
     * load, a <- 0.9999 a + 1 for one of the first `loads` that adds its loaded vector of ones
     * (a loop the compiler dropped, fewer rounds than counted, or a chain that did not load, or
     * loaded another value, ends elsewhere: each chain's 1 adds about 950 to the sum), with or
     * without the two stores a round, which change no chain. A count of loads other than 0, 2,
     * ..., kern_fma_chains(), or of stores other than 0 and 2, is refused with NAN. */
    int chains = kern_fma_chains();
    CHECK(chains == (kern_vector() == 1 ? 12 : 16), "fma chains: %d", chains);
    for (int single = 0; single < 2; single++) {
        int lanes = kern_vector() == 2 ? 8 : kern_vector() == 1 ? 4 : 1;
        if (single && kern_vector())
            lanes *= 2;
        long n = 1000;
        double f = pow(0.9999, (double)n), c = single ? 1e-6 : 1e-9;
        for (int loads = -2; loads <= chains; loads += 2)
            for (int stores = 0; stores <= 2; stores += 2) {
                double want = 0;
                for (int q = 0; q < chains; q++)
                    want += q * f + (q < loads ? 1 : c) * (1 - f) / (1 - 0.9999);
                double fmas = 0, sink = loads < 0 ? kern_fma_burst(single, n, &fmas)
                                                  : kern_fma_loads(single, loads, stores, n, &fmas);
                CHECK(fmas == (double)chains * lanes * (double)n,
                      "fma loads %d stores %d (single %d): %g multiply-adds, want %g", loads,
                      stores, single, fmas, (double)chains * lanes * (double)n);
                CHECK(fabs(sink - want) <= (single ? 1e-4 : 1e-12) * want,
                      "fma loads %d stores %d (single %d): sum %.17g, the recurrences give %.17g",
                      loads, stores, single, sink, want);
            }
        double fmas = 0;
        CHECK(isnan(kern_fma_loads(single, 3, 0, 10, &fmas)) &&
                  isnan(kern_fma_loads(single, chains + 2, 0, 10, &fmas)) &&
                  isnan(kern_fma_loads(single, -2, 0, 10, &fmas)) &&
                  isnan(kern_fma_loads(single, 2, 1, 10, &fmas)),
              "fma loads (single %d): a count of 3, %d or -2 loads, or 1 store, not refused",
              single, chains + 2);
    }
    return check_done("test_kern");
}
