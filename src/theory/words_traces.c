/*
 * words_traces.c: exact normalised traces of every class of a basis for given letter matrices,
 * and the initial values of the moment system.
 *
 * Exact traces walk the prefix tree of the canonical words: one d x d product per distinct
 * proper prefix, and m(w) of a class of length l + 2 as <X, (a b)^T>/d from its prefix product X
 * of length l and the last two letters a b.
 *
 * The system's initial values are the exact traces of the run's own matrices; beyond
 * WORDS_EXACT_FLOPS they fall back to the free-probability values (words_free.c) for words
 * longer than 2 (the order parameters stay exact).
 */
#include "aimsweep/theory/words.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "words_impl.h"

struct trace_walk {
    const struct words_basis *b;
    int d;
    const double *const *letters;
    double **t2;          /* (a b)^T for every pair of letters */
    double **work;        /* one d x d product per depth */
    unsigned char **need; /* need[l][code]: a prefix of length l of some class of length >= l + 2 */
    double *out;
};

static double dot_dd(int d, const double *x, const double *y)
{
    return cblas_ddot(d * d, x, 1, y, 1);
}

/* X: the product of the prefix `code` of length l. */
static void walk(struct trace_walk *tw, int l, long code, const double *X)
{
    const struct words_basis *b = tw->b;
    int nl = b->nl, d = tw->d;
    if (l + 2 <= b->maxlen) {
        int L = l + 2;
        for (int ab = 0; ab < nl * nl; ab++) {
            long c2 = code * nl * nl + ab;
            int cls = b->lookup[L][c2];
            if (b->code[cls] == c2)
                tw->out[cls] = dot_dd(d, X, tw->t2[ab]) / d;
        }
    }
    if (l + 1 > b->maxlen - 2)
        return;
    for (int a = 0; a < nl; a++) {
        long c1 = code * nl + a;
        if (!tw->need[l + 1][c1])
            continue;
        double *Y = tw->work[l + 1];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, X, d, tw->letters[a],
                    d, 0.0, Y, d);
        walk(tw, l + 1, c1, Y);
    }
}

int words_traces(const struct words_basis *b, int d, const double *const *letters, double *out)
{
    int nl = b->nl, rc = -1;
    size_t dd = (size_t)d * d;
    struct trace_walk tw = {b, d, letters, NULL, NULL, NULL, out};
    tw.t2 = calloc(nl * nl, sizeof(double *));
    tw.work = calloc(b->maxlen + 1, sizeof(double *));
    tw.need = calloc(b->maxlen + 1, sizeof(unsigned char *));
    if (!tw.t2 || !tw.work || !tw.need)
        goto done;
    for (int c = 0; c < b->ncls; c++)
        out[c] = 0;
    out[0] = 1;
    for (int c = b->first[1]; c < b->first[2] && 1 <= b->maxlen; c++) {
        const double *A = letters[b->let[b->off[c]]];
        double s = 0;
        for (int i = 0; i < d; i++)
            s += A[(size_t)i * d + i];
        out[c] = s / d;
    }
    if (b->maxlen < 2) {
        rc = 0;
        goto done;
    }
    for (int a = 0; a < nl; a++)
        for (int c = 0; c < nl; c++) {
            double *T = tw.t2[a * nl + c] = malloc(sizeof(double) * dd);
            if (!T)
                goto done;
            /* (A C)^T = C^T A^T */
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, d, d, d, 1.0, letters[c], d,
                        letters[a], d, 0.0, T, d);
        }
    /* length-2 classes: Tr(a c)/d = <I, (a c)^T> */
    for (int c = b->first[2]; c < b->first[3]; c++) {
        const double *T = tw.t2[b->let[b->off[c]] * nl + b->let[b->off[c] + 1]];
        double s = 0;
        for (int i = 0; i < d; i++)
            s += T[(size_t)i * d + i];
        out[c] = s / d;
    }
    for (int l = 1; l <= b->maxlen - 2; l++) {
        tw.need[l] = calloc(b->pw[l], 1);
        tw.work[l] = malloc(sizeof(double) * dd);
        if (!tw.need[l] || !tw.work[l])
            goto done;
    }
    for (int c = b->first[3]; c < b->ncls; c++) {
        int L = b->len[c];
        for (int l = 1; l <= L - 2; l++) {
            if (!tw.need[l])
                goto done; /* a class longer than maxlen, which has no table */
            long p = b->code[c] / b->pw[L - l];
            tw.need[l][p] = 1;
        }
    }
    for (int a = 0; a < nl; a++)
        if (b->maxlen >= 3 && tw.need[1][a])
            walk(&tw, 1, a, letters[a]);
    rc = 0;
done:
    if (tw.t2)
        for (int i = 0; i < nl * nl; i++)
            free(tw.t2[i]);
    if (tw.work)
        for (int l = 0; l <= b->maxlen; l++)
            free(tw.work[l]);
    if (tw.need)
        for (int l = 0; l <= b->maxlen; l++)
            free(tw.need[l]);
    free(tw.t2);
    free(tw.work);
    free(tw.need);
    return rc;
}

long words_traces_products(const struct words_basis *b)
{
    int nl = b->nl;
    long count = (long)nl * nl;
    unsigned char *need[WORDS_MAX_LEN + 1] = {0};
    for (int l = 2; l <= b->maxlen - 2; l++)
        if (!(need[l] = calloc(b->pw[l], 1)))
            count = -1;
    for (int c = b->first[3]; c < b->ncls && count >= 0; c++)
        for (int l = 2; l <= b->len[c] - 2; l++) {
            if (!need[l]) {
                count = -1; /* a class longer than maxlen, which has no table */
                break;
            }
            long p = b->code[c] / b->pw[b->len[c] - l];
            if (!need[l][p]) {
                need[l][p] = 1;
                count++;
            }
        }
    for (int l = 0; l <= WORDS_MAX_LEN; l++)
        free(need[l]);
    return count;
}

int words_initial_values(const struct model *m, const struct words_basis *b, int force_free,
                         double *out, int *exact)
{
    int nl = b->nl, d = m->d, rc = -1;
    size_t dd = (size_t)d * d;
    double *lm[5] = {0}, *pk = NULL, *tmp = NULL, *fr = NULL;
    if (nl != 2 && nl != 5)
        return -1; /* the tied (S, P) or untied (S, P, S^T, Sigma, Lambda) alphabet */
    long np = words_traces_products(b);
    *exact = !force_free && np >= 0 && 2.0 * np * d * d * (double)d <= WORDS_EXACT_FLOPS;
    /* The free-probability values are those of the Gaussian start: an orthogonal one always
     * takes the exact traces, whatever they cost. */
    if (m->p.init == INIT_ORTHOGONAL && !force_free && np >= 0)
        *exact = 1;
    for (int i = 0; i < nl; i++)
        if (!(lm[i] = malloc(sizeof(double) * dd)))
            goto done;
    words_letters(b, d, m->r, m->kappa, m->W0, m->V0, m->teacher, lm);
    if (*exact) {
        rc = words_traces(b, d, (const double *const *)lm, out);
        goto done;
    }
    /* Free-probability values beyond length 2; lengths <= 2 exact (O(d^2) each), and the
     * teacher's moments exact from its powers. */
    double pm[WORDS_MAX_LEN + 1];
    pk = malloc(sizeof(double) * dd);
    tmp = malloc(sizeof(double) * dd);
    fr = malloc(sizeof(double) * b->ncls);
    if (!pk || !tmp || !fr)
        goto done;
    pm[0] = 1;
    memcpy(pk, m->teacher, sizeof(double) * dd);
    for (int k = 1; k <= b->maxlen; k++) {
        double s = 0;
        for (int i = 0; i < d; i++)
            s += pk[(size_t)i * d + i];
        pm[k] = s / d;
        if (k < b->maxlen) {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, pk, d, m->teacher,
                        d, 0.0, tmp, d);
            double *t = pk;
            pk = tmp;
            tmp = t;
        }
    }
    if (words_free_init(b, m->p.init_scale, (double)m->r / d, pm, fr))
        goto done;
    for (int c = 0; c < b->ncls; c++) {
        int L = b->len[c];
        const unsigned char *w = b->let + b->off[c];
        double s = 0;
        int exact_short = force_free != 2 && (L == 1 || L == 2); /* 2: every length free */
        if (L == 0) {
            s = 1;
        } else if (!exact_short) {
            s = fr[c];
        } else if (L == 1) {
            for (int i = 0; i < d; i++)
                s += lm[w[0]][(size_t)i * d + i];
            s /= d;
        } else { /* L == 2 */
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++)
                    s += lm[w[0]][(size_t)i * d + j] * lm[w[1]][(size_t)j * d + i];
            s /= d;
        }
        out[c] = s;
    }
    rc = 0;
done:
    for (int i = 0; i < nl; i++)
        free(lm[i]);
    free(pk);
    free(tmp);
    free(fr);
    return rc;
}

void words_letters(const struct words_basis *b, int d, int r, double kappa, const double *A,
                   const double *B, const double *teacher, double *const *letters)
{
    size_t dd = (size_t)d * d;
    memcpy(letters[WORDS_P], teacher, sizeof(double) * dd);
    if (b->nl == 2) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, r, 1.0 / kappa, A, r, A, r, 0.0,
                    letters[WORDS_S], d);
        return;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, r, 1.0 / kappa, A, r, B, r, 0.0,
                letters[WORDS_S], d);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++)
            letters[WORDS_ST][(size_t)i * d + j] = letters[WORDS_S][(size_t)j * d + i];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, r, 1.0 / kappa, A, r, A, r, 0.0,
                letters[WORDS_SIGMA], d);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, r, 1.0 / kappa, B, r, B, r, 0.0,
                letters[WORDS_LAMBDA], d);
}
