/*
 * words_closure.c: the closures of the word hierarchy, which give the length-(M + 1) classes
 * that the order-M system needs but does not track (words_system.c).
 *
 * Closures of the length-(M + 1) classes (enum closure):
 *  free_cumulant  m(w) = kappa_{M+1}(w) + sum over non-crossing partitions pi != 1 of kappa_pi,
 *                 every kappa_pi a product of mixed free cumulants of sub-words of length <= M,
 *                 which are themselves functions of the tracked moments (the moment-cumulant
 *                 inversion below). The top cumulant kappa_{M+1}(w) is frozen at its tau = 0
 *                 value, computed from the exact initial traces (≈ 0 for mixed words of a free
 *                 initialisation, up to O(1/d)). Exact at tau = 0.
 *  freeze         m(w) frozen at its tau = 0 value.
 *  zero           m(w) = 0. (Without weight decay, zero at order M is freeze at order M - 1:
 *                 a length-M word then has a zero derivative.)
 *  free_residual  free_cumulant applied to the residuals R_X = X - c0_X - c1_X P of each student
 *                 letter X regressed on P (c1 = (m(XP) - m(X)m(P))/(m(P^2) - m(P)^2), c0 = m(X) -
 *                 c1 m(P), recomputed at every right-hand side): the words are expanded in
 *                 {R_X, P} (3^s terms for s student letters), closed there with frozen top
 *                 cumulants, and mapped back. Meant to stay accurate as S aligns with P (then R
 *                 -> 0 and mixed cumulants stay small). Measured: no better than free_cumulant.
 *  flat           the flat extension of the moment matrix, the noncommutative analogue of Gauss
 *                 quadrature (quadrature method of moments). With V_K the span of the strings
 *                 of length <= K = (M - 1)/2 acting on the cyclic vector, Gram matrix
 *                 G_uv = m(u^T v) (length <= M - 1), a top word w = wL wR (|wL| = |wR| = K + 1)
 *                 is closed as <P_K wL^T 1, P_K wR 1>, i.e.
 *                   m(w) = sum_uv m(wL u) G^+_uv m(v^T wR),
 *                 averaged over the M + 1 rotations of w; G^+ is the pseudo-inverse on G's
 *                 positive eigenspace, so the closed moments are those of a positive functional
 *                 on a finite matrix model (every student spectrum stays a positive measure).
 *                 For one letter this is exactly the (K + 1)-node Gauss quadrature closure, which
 *                 is invariant under the pushforward dynamics dS = f(S); it does not share the
 *                 finite radius of convergence of the cumulant closures. Odd M only (an even
 *                 order has no flat extension that uses its top tracked length; measured
 *                 unstable, refused).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/params.h"
#include "words_impl.h"

/* flat: eigen-directions of G below this times the largest are dropped. Tied keeps every direction
 * down to rounding (its orders 7 and 9 need them: at 1e-10 tied h2, d = 300, order 7 stops).
 * Untied drops those below the integrator's tolerance (1e-9): at strong recovery its letters
 * S, S^T, Sigma, Lambda become nearly dependent, a direction sinks to rounding and integration
 * error, and weighting it by up to 1e12 made order 5 collapse its step (analysis/general_index.md
 * §10). */
#define WORDS_FLAT_CUT_TIED 1e-12
#define WORDS_FLAT_CUT_UNTIED 1e-8
/* flat: (top class, rotation) pairs per block of flat_top, whose values stay in the L1 cache */
#define WORDS_FLAT_BLOCK 256
#define WORDS_FLAT_LANES 16 /* pairs summed at once (a block's rows are padded to a multiple) */

static int letter_type(int x) { return x == WORDS_SIGMA ? 1 : x == WORDS_LAMBDA ? 2 : 0; }

/* Expansion of every class under X -> R_X + c0 + c1 P for each student letter (3^s terms). */
static int build_sub(struct words_closure *cl)
{
    const struct words_basis *b = cl->b;
    int w[WORDS_MAX_LEN], v[WORDS_MAX_LEN], pos[WORDS_MAX_LEN];
    long cap = 0;
    for (int c = 0; c < b->ncls; c++) {
        long k = 1;
        for (int i = 0; i < b->len[c]; i++)
            if (b->let[b->off[c] + i] != WORDS_P)
                k *= 3;
        cap += k;
    }
    /* at least one element: malloc(0) may return NULL, which would read as out of memory */
    cl->sub = malloc(sizeof(struct sub_term) * (cap > 0 ? cap : 1));
    cl->sub_off = malloc(sizeof(long) * (b->ncls + 1));
    if (!cl->sub || !cl->sub_off)
        return -1;
    long n = 0;
    for (int c = 0; c < b->ncls; c++) {
        cl->sub_off[c] = n;
        int L = words_basis_class(b, c, w), ns = 0;
        for (int i = 0; i < L; i++)
            if (w[i] != WORDS_P)
                pos[ns++] = i;
        long nch = 1;
        for (int i = 0; i < ns; i++)
            nch *= 3;
        for (long ch = 0; ch < nch; ch++) {
            struct sub_term t;
            memset(&t, 0, sizeof t);
            int choice[WORDS_MAX_LEN], nv = 0;
            long r = ch;
            for (int i = 0; i < L; i++)
                choice[i] = 0;
            for (int i = 0; i < ns; i++) {
                choice[pos[i]] = (int)(r % 3);
                r /= 3;
            }
            for (int i = 0; i < L; i++) {
                if (choice[i] == 0) {
                    v[nv++] = w[i];
                } else if (choice[i] == 1) {
                    t.e0[letter_type(w[i])]++;
                } else {
                    t.e1[letter_type(w[i])]++;
                    v[nv++] = WORDS_P;
                }
            }
            t.to = words_basis_index(b, nv, v);
            cl->sub[n++] = t;
        }
    }
    cl->sub_off[b->ncls] = n;
    return 0;
}

/* The regression coefficients c0, c1 of each student letter type on P (from the moments). */
static void residual_coefs(const struct words_closure *cl, const double *mom, double *c0,
                           double *c1)
{
    double mp = mom[cl->c_p], vp = mom[cl->c_pp] - mp * mp;
    for (int t = 0; t < 3; t++) {
        if (cl->c_x[t] < 0) {
            c0[t] = c1[t] = 0;
            continue;
        }
        c1[t] = (mom[cl->c_xp[t]] - mom[cl->c_x[t]] * mp) / vp;
        c0[t] = mom[cl->c_x[t]] - c1[t] * mp;
    }
}

/* sum over the substitution terms of class c of coef * src[to], with the coefficients
 * sign * c0, sign * c1 */
static double sub_eval(const struct words_closure *cl, int c, const double *c0, const double *c1,
                       double sign, const double *src)
{
    double p0[3][WORDS_MAX_LEN + 1], p1[3][WORDS_MAX_LEN + 1], s = 0;
    int L = cl->b->len[c];
    for (int t = 0; t < 3; t++) {
        p0[t][0] = p1[t][0] = 1;
        for (int k = 1; k <= L; k++) {
            p0[t][k] = p0[t][k - 1] * sign * c0[t];
            p1[t][k] = p1[t][k - 1] * sign * c1[t];
        }
    }
    for (long i = cl->sub_off[c]; i < cl->sub_off[c + 1]; i++) {
        const struct sub_term *t = &cl->sub[i];
        s += p0[0][t->e0[0]] * p0[1][t->e0[1]] * p0[2][t->e0[2]] * p1[0][t->e1[0]] *
             p1[1][t->e1[1]] * p1[2][t->e1[2]] * src[t->to];
    }
    return s;
}

/* free_residual: the moments mom (classes up to M, or all when `all`) mapped to the residual
 * moments momr, their free cumulants kapr up to M, and the top residual moments by the frozen
 * top cumulants topr0 (when topr0 is NULL the top residual moments are left as mapped). */
static void residual_moments(struct words_closure *cl, const double *mom, const double *c0,
                             const double *c1, int all)
{
    const struct words_basis *b = cl->b;
    int t0 = b->first[cl->M + 1], t1 = b->ncls;
    for (int c = 0; c < (all ? t1 : t0); c++)
        cl->momr[c] = sub_eval(cl, c, c0, c1, -1.0, mom);
    cl->kapr[0] = 0;
    for (int c = 1; c < t0; c++)
        cl->kapr[c] = cl->momr[c] - words_nc_sum(&cl->nc, c, cl->kapr, cl->momr);
    if (!all)
        for (int c = t0; c < t1; c++)
            cl->momr[c] = b->stud[c] ? cl->topr0[c] + words_nc_sum(&cl->nc, c, cl->kapr, cl->momr)
                                     : cl->mom0[c];
}

extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

/* flat: the index tables (the head comment). */
static int build_flat(struct words_closure *cl)
{
    const struct words_basis *b = cl->b;
    int M = cl->M, K = M % 2 ? (M - 1) / 2 : M / 2 - 1, Lt = M + 1,
        lr = M % 2 ? (M + 1) / 2 : M / 2;
    int ns = 0, nl = b->nl, (*str)[WORDS_MAX_LEN], *slen;
    if (K < 0)
        return -1; /* M >= 1 gives K >= 0: at least the empty string, ns >= 1 */
    for (int l = 0, p = 1; l <= K; l++, p *= nl)
        ns += p;
    str = calloc(ns, sizeof(*str)); /* zeroed: the ns = sum_l pw[l] strings are written below */
    slen = calloc(ns, sizeof(int));
    cl->fK = K;
    cl->fns = ns;
    cl->fnrot = Lt;
    int ntop = b->first[M + 2] - b->first[M + 1];
    cl->fgram = malloc(sizeof(int) * ns * ns);
    size_t npair = (size_t)ntop * Lt;
    cl->fbt = WORDS_FLAT_BLOCK / Lt > 0 ? WORDS_FLAT_BLOCK / Lt : 1;
    cl->fst = (cl->fbt * Lt + WORDS_FLAT_LANES - 1) / WORDS_FLAT_LANES * WORDS_FLAT_LANES;
    size_t nblk = (size_t)cl->fst * ns;
    cl->fa = malloc(sizeof(int) * npair * ns);
    cl->fb = malloc(sizeof(int) * npair * ns);
    cl->fG = malloc(sizeof(double) * ns * ns);
    cl->fGp = malloc(sizeof(double) * ns * ns);
    cl->fw = malloc(sizeof(double) * ns);
    /* zeroed: the padding past a block's pairs is summed, never read */
    cl->fav = calloc(nblk, sizeof(double));
    cl->fbv = calloc(nblk, sizeof(double));
    cl->fy = calloc(nblk, sizeof(double));
    cl->fsc = malloc(sizeof(double) * ns);
    cl->flwork = 8 * ns + 64;
    cl->fwork = malloc(sizeof(double) * cl->flwork);
    if (!str || !slen || !cl->fgram || !cl->fa || !cl->fb || !cl->fG || !cl->fGp || !cl->fw ||
        !cl->fav || !cl->fbv || !cl->fy || !cl->fsc || !cl->fwork) {
        free(str);
        free(slen);
        return -1;
    }
    int k = 0;
    for (int l = 0; l <= K; l++)
        for (long code = 0; code < b->pw[l]; code++) {
            words_decode(nl, l, code, str[k]);
            slen[k++] = l;
        }
    int v[2 * WORDS_MAX_LEN];
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++) {
            int n = 0;
            for (int q = slen[i] - 1; q >= 0; q--)
                v[n++] = b->tr[str[i][q]];
            for (int q = 0; q < slen[j]; q++)
                v[n++] = str[j][q];
            cl->fgram[i * ns + j] = words_basis_index(b, n, v);
        }
    int w[WORDS_MAX_LEN] = {0}, rw[WORDS_MAX_LEN] = {0};
    for (int t = 0; t < ntop; t++) {
        words_basis_class(b, b->first[M + 1] + t, w);
        for (int r = 0; r < Lt; r++) {
            for (int q = 0; q < Lt; q++)
                rw[q] = w[(q + r) % Lt];
            int ll = Lt - lr; /* wL = rw[0..ll), wR = rw[ll..Lt) */
            for (int u = 0; u < ns; u++) {
                int n = 0;
                for (int q = 0; q < ll; q++)
                    v[n++] = rw[q];
                for (int q = 0; q < slen[u]; q++)
                    v[n++] = str[u][q];
                cl->fa[(size_t)u * npair + (size_t)t * Lt + r] = words_basis_index(b, n, v);
                n = 0;
                for (int q = slen[u] - 1; q >= 0; q--)
                    v[n++] = b->tr[str[u][q]];
                for (int q = ll; q < Lt; q++)
                    v[n++] = rw[q];
                cl->fb[(size_t)u * npair + (size_t)t * Lt + r] = words_basis_index(b, n, v);
            }
        }
    }
    free(str);
    free(slen);
    return 0;
}

/* flat: the top moments from the pseudo-inverse of the Gram matrix, into out[top classes]. */
static int flat_top(struct words_closure *cl, const double *mom, double *out)
{
    const struct words_basis *b = cl->b;
    int ns = cl->fns, info, M = cl->M, Lt = M + 1;
    for (int i = 0; i < ns; i++) {
        double g = mom[cl->fgram[i * ns + i]];
        cl->fsc[i] = g > 0 ? 1 / sqrt(g) : 1;
    }
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++)
            cl->fG[i * ns + j] = mom[cl->fgram[i * ns + j]] * cl->fsc[i] * cl->fsc[j];
    dsyev_("V", "U", &ns, cl->fG, &ns, cl->fw, cl->fwork, &cl->flwork, &info);
    if (info)
        return -1;
    double lmax = fabs(cl->fw[ns - 1]);
    double cut = b->nl == 2 ? WORDS_FLAT_CUT_TIED : WORDS_FLAT_CUT_UNTIED;
    cl->f_lmin = lmax > 0 ? cl->fw[0] / lmax : 0;
    memset(cl->fGp, 0, sizeof(double) * ns * ns);
    /* Pseudo-inverse on the positive part of the Jacobi-scaled G (the strings' norms differ by
     * orders of magnitude); directions below the cut times the largest are dropped. */
    for (int e = 0; e < ns; e++) {
        double l = cl->fw[e];
        if (!(l > cut * lmax))
            continue;                               /* a negative direction is not a state */
        const double *ve = cl->fG + (size_t)e * ns; /* row-major storage of column-major vectors */
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < ns; j++)
                cl->fGp[i * ns + j] += ve[i] * ve[j] / l;
    }
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++)
            cl->fGp[i * ns + j] *= cl->fsc[i] * cl->fsc[j];
    /* m(w) = (1/Lt) sum_r a_r^T G^+ b_r over the rotations r, a_r = m(wL u), b_r = m(u^T wR),
     * a block of top classes at a time with the strings outermost, so that y = G^+ b runs along
     * the block's (class, rotation) pairs in vector lanes. Each pair's sums keep the order of
     * a_i (sum_j G^+_ij b_j): the result is the same, bit for bit, as pair by pair. The a and b
     * classes are shorter than M + 1, so out may be mom. */
    int ntop = b->first[M + 2] - b->first[M + 1], bt = cl->fbt, st = cl->fst;
    size_t npair = (size_t)ntop * Lt;
    double *A = cl->fav, *B = cl->fbv, *Y = cl->fy;
    for (int t0 = 0; t0 < ntop; t0 += bt) {
        int nt = ntop - t0 < bt ? ntop - t0 : bt, np = nt * Lt;
        for (int u = 0; u < ns; u++) {
            const int *ia = cl->fa + (size_t)u * npair + (size_t)t0 * Lt,
                      *ib = cl->fb + (size_t)u * npair + (size_t)t0 * Lt;
            for (int q = 0; q < np; q++) {
                A[u * st + q] = mom[ia[q]];
                B[u * st + q] = mom[ib[q]];
            }
        }
        for (int i = 0; i < ns; i++) {
            double *y = Y + i * st;
            const double *g = cl->fGp + i * ns;
            for (int q0 = 0; q0 < np; q0 += WORDS_FLAT_LANES) {
                double acc[WORDS_FLAT_LANES] = {0};
                for (int j = 0; j < ns; j++)
                    for (int l = 0; l < WORDS_FLAT_LANES; l++)
                        acc[l] += g[j] * B[j * st + q0 + l];
                for (int l = 0; l < WORDS_FLAT_LANES; l++)
                    y[q0 + l] = acc[l];
            }
        }
        for (int k = 0; k < nt; k++) {
            int c = b->first[M + 1] + t0 + k;
            if (!b->stud[c]) {
                out[c] = cl->mom0[c];
                continue;
            }
            double acc = 0;
            for (int r = 0; r < Lt; r++)
                for (int i = 0; i < ns; i++)
                    acc += A[i * st + k * Lt + r] * Y[i * st + k * Lt + r];
            out[c] = acc / Lt;
        }
    }
    return 0;
}

void words_closure_apply(struct words_closure *cl, double *mom)
{
    const struct words_basis *b = cl->b;
    int t0 = b->first[cl->M + 1], t1 = b->first[cl->M + 2];
    switch (cl->kind) {
        case CLOSURE_ZERO:
            for (int c = t0; c < t1; c++)
                mom[c] = b->stud[c] ? 0 : cl->mom0[c];
            break;
        case CLOSURE_FREEZE:
            for (int c = t0; c < t1; c++)
                mom[c] = cl->mom0[c];
            break;
        case CLOSURE_FLAT: flat_top(cl, mom, mom); break;
        case CLOSURE_FREE_RESIDUAL: {
            double c0[3], c1[3];
            residual_coefs(cl, mom, c0, c1);
            residual_moments(cl, mom, c0, c1, 0);
            for (int c = t0; c < t1; c++)
                mom[c] = b->stud[c] ? sub_eval(cl, c, c0, c1, 1.0, cl->momr) : cl->mom0[c];
            break;
        }
        default: /* free_cumulant */
            for (int c = 1; c < t0; c++)
                cl->kap[c] = mom[c] - words_nc_sum(&cl->nc, c, cl->kap, mom);
            for (int c = t0; c < t1; c++)
                mom[c] =
                    b->stud[c] ? cl->top0[c] + words_nc_sum(&cl->nc, c, cl->kap, mom) : cl->mom0[c];
            break;
    }
}

int words_closure_init(struct words_closure *cl, const struct words_basis *b, int kind, int M,
                       const double *mom0)
{
    int n = b->ncls, nl = b->nl;
    memset(cl, 0, sizeof *cl);
    cl->kind = kind;
    cl->M = M;
    cl->b = b;
    cl->mom0 = mom0;
    cl->kap = calloc(n, sizeof(double));
    cl->top0 = calloc(n, sizeof(double));
    if (!cl->kap || !cl->top0 || words_nc_build(b, M + 1, &cl->nc))
        return -1;
    for (int c = 1; c < n; c++)
        cl->kap[c] = mom0[c] - words_nc_sum(&cl->nc, c, cl->kap, mom0);
    for (int c = b->first[M + 1]; c < n; c++)
        cl->top0[c] = cl->kap[c]; /* the frozen top cumulant */
    cl->c_p = words_class_of(b, WORDS_P, -1);
    cl->c_pp = words_class_of(b, WORDS_P, WORDS_P);
    for (int t = 0; t < 3; t++) {
        int x = t == 0 ? WORDS_S : t == 1 ? WORDS_SIGMA : WORDS_LAMBDA;
        cl->c_x[t] = (nl == 2 && t > 0) ? -1 : words_class_of(b, x, -1);
        cl->c_xp[t] = (nl == 2 && t > 0) ? -1 : words_class_of(b, x, WORDS_P);
    }
    if (kind == CLOSURE_FLAT) {
        /* one evaluation at tau = 0: the eigen-solve must succeed on the initial moments */
        double *top = malloc(sizeof(double) * n);
        int rc = !top || build_flat(cl) ? -1 : flat_top(cl, mom0, top);
        free(top);
        if (rc)
            return -1;
    }
    if (kind == CLOSURE_FREE_RESIDUAL) {
        double c0[3], c1[3];
        cl->momr = calloc(n, sizeof(double));
        cl->kapr = calloc(n, sizeof(double));
        cl->topr0 = calloc(n, sizeof(double));
        if (!cl->momr || !cl->kapr || !cl->topr0 || build_sub(cl))
            return -1;
        residual_coefs(cl, mom0, c0, c1);
        residual_moments(cl, mom0, c0, c1, 1);
        for (int c = b->first[M + 1]; c < n; c++)
            cl->topr0[c] = cl->momr[c] - words_nc_sum(&cl->nc, c, cl->kapr, cl->momr);
    }
    return 0;
}

void words_closure_free(struct words_closure *cl)
{
    words_nc_free(&cl->nc);
    free(cl->kap);
    free(cl->top0);
    free(cl->sub);
    free(cl->sub_off);
    free(cl->momr);
    free(cl->kapr);
    free(cl->topr0);
    free(cl->fgram);
    free(cl->fa);
    free(cl->fb);
    free(cl->fG);
    free(cl->fGp);
    free(cl->fw);
    free(cl->fwork);
    free(cl->fav);
    free(cl->fbv);
    free(cl->fy);
    free(cl->fsc);
    memset(cl, 0, sizeof *cl);
}
