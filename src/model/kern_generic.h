/*
 * kern_generic.h: the loops of the SGD step that double (kern_f64_body.h) and float (kern_f32_body.h) share
 * to the letter, written once for an element type: the portable loops (two rows at a time for
 * T = 2, one row otherwise), the public portable entry points, and the dispatch that sends pairs
 * of rows to the file's vector kernels and the rest to the portable loops. It is not a header:
 * each of the two files includes it once, after its vector kernels, having defined
 *
 *   KERN_T             the element type of M, X, Y and F (C and O are double in both)
 *   KERN_NAME(x)       the name of a function for this type (x, or x_f32)
 *   KERN_PORTABLE(x)   the name of a public portable entry point (x_portable, x_f32_portable)
 *   KERN_WIDE(x)       x as a double, the type every projection is summed in
 *   KERN_DOT(a, b, m)  the file's dot product of two rows of m entries
 *   KERN_HAVE_VECTOR   1 when the file has its vector kernels: KERN_NAME(update_project_pair),
 *                      KERN_NAME(project_pair) and KERN_NAME(update_project_pair_f)
 *
 * For double every cast below is the identity, so kern_f64_body.h compiles to the code it had when it
 * spelled these loops out. What the two files do not share is their vector kernels (AVX2 on
 * doubles with two partial sums per product, AVX2 on floats with partial sums folded into
 * double every KERN_F32_TERMS products and masked tails) and their row dot products.
 */
#ifndef KERN_T
#error "kern_generic.h is included by kern_f64_body.h and kern_f32_body.h only, after KERN_T"
#endif

static void KERN_NAME(update_project_rows2)(KERN_T *restrict r0, KERN_T *restrict r1, int m,
                                            KERN_T a0, KERN_T b0, KERN_T a1, KERN_T b1,
                                            const KERN_T *restrict x0, const KERN_T *restrict x1,
                                            const KERN_T *restrict y0, const KERN_T *restrict y1,
                                            double out[4])
{
    double s00 = 0, s01 = 0, s10 = 0, s11 = 0;
#pragma omp simd reduction(+ : s00, s01, s10, s11)
    for (int j = 0; j < m; j++) {
        KERN_T v = r0[j] - a0 * x0[j] - b0 * x1[j], u = r1[j] - a1 * x0[j] - b1 * x1[j];
        r0[j] = v;
        r1[j] = u;
        s00 += KERN_WIDE(v) * y0[j];
        s01 += KERN_WIDE(v) * y1[j];
        s10 += KERN_WIDE(u) * y0[j];
        s11 += KERN_WIDE(u) * y1[j];
    }
    out[0] = s00;
    out[1] = s01;
    out[2] = s10;
    out[3] = s11;
}

/* out = f0.y0, f0.y1, f1.y0, f1.y1 */
static void KERN_NAME(project_rows2)(const KERN_T *restrict f0, const KERN_T *restrict f1, int m,
                                     const KERN_T *restrict y0, const KERN_T *restrict y1,
                                     double out[4])
{
    double s00 = 0, s01 = 0, s10 = 0, s11 = 0;
#pragma omp simd reduction(+ : s00, s01, s10, s11)
    for (int j = 0; j < m; j++) {
        s00 += KERN_WIDE(f0[j]) * y0[j];
        s01 += KERN_WIDE(f0[j]) * y1[j];
        s10 += KERN_WIDE(f1[j]) * y0[j];
        s11 += KERN_WIDE(f1[j]) * y1[j];
    }
    out[0] = s00;
    out[1] = s01;
    out[2] = s10;
    out[3] = s11;
}

/* The four results of a pair of rows i, i + 1 (T = 2) into O of row stride ld:
 * out = (row i . y0, row i . y1, row i+1 . y0, row i+1 . y1). */
static inline void KERN_NAME(put_pair)(double *O, int ld, int i, const double out[4])
{
    O[i] = out[0];
    O[ld + i] = out[1];
    O[i + 1] = out[2];
    O[ld + i + 1] = out[3];
}

/* The portable update-and-project with C and O of row stride ld >= n (so that a caller can hand
 * over the rows from some i on: M + i m, C + i, O + i, the same ld). The coefficients are
 * rounded to KERN_T once per row. */
static void KERN_NAME(update_project_portable_ld)(KERN_T *M, int n, int m, int T, const double *C,
                                                  const KERN_T *X, const KERN_T *Y, double *O,
                                                  int ld)
{
    int i = 0;
    if (T == 2)
        for (; i + 2 <= n; i += 2) {
            double out[4];
            KERN_T *r0 = M + (size_t)i * m;
            KERN_NAME(update_project_rows2)
            (r0, r0 + m, m, (KERN_T)C[i], (KERN_T)C[ld + i], (KERN_T)C[i + 1],
             (KERN_T)C[ld + i + 1], X, X + m, Y, Y + m, out);
            KERN_NAME(put_pair)(O, ld, i, out);
        }
    for (; i < n; i++) {
        KERN_T *row = M + (size_t)i * m;
        for (int a = 0; a < T; a++) {
            KERN_T c = (KERN_T)C[(size_t)a * ld + i];
            const KERN_T *xa = X + (size_t)a * m;
            for (int j = 0; j < m; j++)
                row[j] -= c * xa[j];
        }
        for (int b = 0; b < T; b++)
            O[(size_t)b * ld + i] = KERN_DOT(row, Y + (size_t)b * m, m);
    }
}

void KERN_PORTABLE(kern_update_project)(KERN_T *M, int n, int m, int T, const double *C,
                                        const KERN_T *X, const KERN_T *Y, double *O)
{
    KERN_NAME(update_project_portable_ld)(M, n, m, T, C, X, Y, O, n);
}

void KERN_PORTABLE(kern_project)(const KERN_T *M, int n, int m, int T, const KERN_T *Y, double *O,
                                 int ldo)
{
    int i = 0;
    /* the same pair loop stands in KERN_NAME(kern_project) with the vector kernel (see there) */
    if (T == 2)
        for (; i + 2 <= n; i += 2) {
            double out[4];
            const KERN_T *f0 = M + (size_t)i * m;
            KERN_NAME(project_rows2)(f0, f0 + m, m, Y, Y + m, out);
            KERN_NAME(put_pair)(O, ldo, i, out);
        }
    for (; i < n; i++)
        for (int b = 0; b < T; b++)
            O[(size_t)b * ldo + i] = KERN_DOT(M + (size_t)i * m, Y + (size_t)b * m, m);
}

/* The update-and-project from row `from` on, C and O of row stride n: pairs of rows through the
 * vector kernel, an odd last row (or every row without the kernels) through the portable loop. */
static void KERN_NAME(update_project_from)(KERN_T *M, int n, int m, int T, const double *C,
                                           const KERN_T *X, const KERN_T *Y, double *O, int from)
{
    int i = from;
#if KERN_HAVE_VECTOR
    if (T == 2)
        for (; i + 2 <= n; i += 2) {
            double out[4];
            KERN_T *r0 = M + (size_t)i * m;
            KERN_NAME(update_project_pair)
            (r0, r0 + m, m, (KERN_T)C[i], (KERN_T)C[n + i], (KERN_T)C[i + 1], (KERN_T)C[n + i + 1],
             X, X + m, Y, Y + m, out);
            KERN_NAME(put_pair)(O, n, i, out);
        }
#endif
    if (i < n) {
        KERN_T *rest = M + (size_t)i * m;
        KERN_NAME(update_project_portable_ld)(rest, n - i, m, T, C + i, X, Y, O + i, n);
    }
}

void KERN_NAME(kern_update_project)(KERN_T *M, int n, int m, int T, const double *C,
                                    const KERN_T *X, const KERN_T *Y, double *O)
{
    KERN_NAME(update_project_from)(M, n, m, T, C, X, Y, O, 0);
}

void KERN_NAME(kern_project)(const KERN_T *M, int n, int m, int T, const KERN_T *Y, double *O,
                             int ldo)
{
    int i = 0;
#if KERN_HAVE_VECTOR
    /* the pair loop of the portable kern_project with the vector kernel: written twice on
     * purpose, since one loop calling either kernel through a pointer compiles to other code */
    if (T == 2)
        for (; i + 2 <= n; i += 2) {
            double out[4];
            const KERN_T *f0 = M + (size_t)i * m;
            KERN_NAME(project_pair)(f0, f0 + m, m, Y, Y + m, out);
            KERN_NAME(put_pair)(O, ldo, i, out);
        }
#endif
    if (i < n)
        KERN_PORTABLE(kern_project)(M + (size_t)i * m, n - i, m, T, Y, O + i, ldo);
}

int KERN_NAME(kern_update_project_fused)(KERN_T *M, int n, int m, int T, const double *C,
                                         const KERN_T *X, const KERN_T *Y, double *O,
                                         const KERN_T *F, int nf, double *Z, int ldz)
{
    int pairs = n / 2, done = T != 2 ? 0 : nf < pairs ? nf : pairs;
#if KERN_HAVE_VECTOR
    for (int p = 0; p < done; p++) {
        int i = 2 * p;
        double out[6];
        KERN_T *r0 = M + (size_t)i * m;
        KERN_NAME(update_project_pair_f)
        (r0, r0 + m, F + (size_t)p * m, m, (KERN_T)C[i], (KERN_T)C[n + i], (KERN_T)C[i + 1],
         (KERN_T)C[n + i + 1], X, X + m, Y, Y + m, out);
        KERN_NAME(put_pair)(O, n, i, out);
        Z[p] = out[4];
        Z[ldz + p] = out[5];
    }
    KERN_NAME(update_project_from)(M, n, m, T, C, X, Y, O, 2 * done);
#else
    KERN_PORTABLE(kern_update_project)(M, n, m, T, C, X, Y, O);
    KERN_PORTABLE(kern_project)(F, done, m, T, Y, Z, ldz);
#endif
    return done;
}

/* The next inclusion (the float body after the double one, in one path's file) defines its own. */
#undef KERN_T
#undef KERN_NAME
#undef KERN_PORTABLE
#undef KERN_WIDE
#undef KERN_DOT
#undef KERN_HAVE_VECTOR
