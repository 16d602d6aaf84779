/*
 * words.c: the word hierarchy of tied and untied (MODEL.md §6-§7), its closures, matched and
 * free-probability initial values, and the O(eta) SGD-noise drift.
 *
 * The derivative rule. m(w) = Tr(w)/d changes, along the population flow, by replacing each
 * student letter in turn by its right-hand side (MODEL.md §6), with
 *   G = a S + b S^T + c P,   a = 2 Phi_omega, b = 2 Phi_psi, c = Phi_12,
 * at (omega11, psi11, omega12) = (m(S S^T), m(S S), m(S P)):
 *   tied   (S^T = S):  S -> -(H S + S H),  H = G + G^T = h_S S + h_P P,  h_S = 2(a + b), h_P = 2c
 *   untied:            S -> -(G Lambda + Sigma G),   S^T -> its transpose,
 *                      Sigma -> -(G S^T + S G^T),    Lambda -> -(G^T S + S^T G)
 * and weight decay lambda adds -2 lambda per letter S, S^T, Sigma, Lambda (each is a product of
 * two parameters). A word of length L thus needs words of length L + 1; the right-hand side of
 * each tracked class is a fixed sparse combination of classes whose coefficients are the
 * scalars (h_S, h_P, lambda) or (a, b, c, lambda), built once (struct lin_term).
 *
 * The general index (MODEL.md §10, untied): G gains g I, g = sqrt(d) Phi_mu, Phi taken at
 * mu = sqrt(d) m(S); then S -> -(G Lambda + Sigma G) gains -g (Lambda + Sigma), and likewise
 * S^T -> -g (Lambda + Sigma), Sigma -> -g (S + S^T), Lambda -> -g (S + S^T): a fifth coefficient
 * kind (K_MU) whose replacements keep the length. dm(S)/dtau then holds -g (m(Sigma) + m(Lambda)),
 * i.e. dmu/dtau = -d Phi_mu (t_Sigma + t_Lambda) + ..., rate d: the system is stiff and
 * integrated implicitly (ode.c). With `ode_mean slaved` g = 0 and m(S) is replaced, wherever it
 * enters, by mu*(q)/sqrt(d) (phi_mu_slow), the d -> inf fast-slow limit.
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
 * The sum over NC(n) uses the first-block recursion: with V the block of position 1,
 *   m(a_1..a_n) = sum_{V = {1 = i_1 < ... < i_s}} kappa_s(a_{i_1}, .., a_{i_s})
 *                 * prod_j m(a_{i_j + 1} .. a_{i_{j+1} - 1})      (i_{s+1} = n + 1),
 * 2^{n-1} terms per word; the gaps are contiguous sub-words whose own partitions sum to their
 * moments. Free cumulants in a tracial space are invariant under rotation and transposition,
 * so they are functions of the class, like the moments.
 *
 * Free initialisation (words_free_init). W (or U, V) has i.i.d. N(0, s0^2) entries, free from P.
 * A pure-student word expands into 2L rectangular factors (each letter X Y^T/kappa with X, Y in
 * {U, V}); at d -> infinity Tr/d is the sum over non-crossing pairings of the factors that pair
 * U with U^T and V with V^T, each weighing s0^{2L} rho^{#r - L/2} (#r: index loops of the r side;
 * #r + #d = L + 1 for a non-crossing pairing). Their free cumulants follow by inversion; mixed
 * cumulants with P vanish (freeness); moments of mixed words by the first-block recursion.
 * The system's initial values are the exact traces of the run's own matrices (one d x d
 * product per distinct prefix of the canonical words); beyond WORDS_EXACT_FLOPS they fall back
 * to these free-probability values for words longer than 2 (the order parameters stay exact).
 *
 * The O(eta) noise drift (params.ode_noise). One SGD step changes each rectangular factor
 * linearly in eps = eta/d: tied W -> W - eps g^ W (g^ = g + g^T), untied U -> U - eps g V,
 * V -> V - eps g^T U. The second-order part of Tr(w)/d is eps^2 times the sum over unordered
 * pairs of distinct factors of the word with both replaced; each such term is Tr(X A Y B)/d with
 * X, Y in {g, g^T} and A, B the two arcs of the cyclic word between them, re-paired into
 * letters. At leading order in d the tokens contract as x_b^T A x_c ≈ delta_bc Tr A, so
 *   Tr(g A g^T B)/d ≈ Tr(g^T A g B)/d ≈ N1 m(A) m(B),   Tr(g A g B)/d ≈ N2 m(A) m(B),
 *   N1 = E sum_ab D_ab^2,  N2 = E sum_ab D_ab D_ba,   (tied: g^ on both sides, E|D + D^T|^2 = 2N1 + 2N2)
 * the expectations over the Gaussian indices (MODEL.md §5: Cov(h_ab, h_ba) = psi, the teacher's
 * h*_ab = h*_ba). Per unit tau (d^2/eta steps) the drift is eta * N m(A) m(B) per pair: quadratic
 * in the moments, with arcs no longer than the word, so no closure is needed. Check: direct
 * omega11 gives eta N1 = eta T(T-1) E[(sigma(u) - sigma(w))^2 sigma'(u)^2], MODEL.md §6.
 */
#include "aimsweep/model/limits.h"
#include "aimsweep/theory/words.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/lrs.h"
#include "aimsweep/model/obs.h"
#include "aimsweep/base/params.h"
#include "aimsweep/model/phi.h"
#include "aimsweep/theory/noise.h"

#define WORDS_UNTIED_MAX_LEN 8
/* Exact initial traces up to this many flops (about a minute on one core), else free
 * probability beyond length 2. At d = 800 that is exact up to tied M = 11 (455 products) and
 * untied M = 6 (725 products). */
#define WORDS_EXACT_FLOPS 1e12
#define WORDS_FLAT_CUT 1e-12 /* flat: eigen-directions of G below this times the largest dropped */

struct words_basis {
    int dec, nl, maxlen;
    int tr[5];
    int ncls;
    int *len;            /* per class */
    int *off;            /* offset of the canonical letters in let */
    unsigned char *let;  /* canonical letters of every class */
    long *code;          /* canonical code per class */
    unsigned char *stud; /* 1 when the class has a student letter */
    int first[WORDS_MAX_LEN + 2];
    long pw[WORDS_MAX_LEN + 1];
    int *lookup[WORDS_MAX_LEN + 1]; /* string code -> class, per length */
};

/* ---------------------------------------------------------------- the word algebra */

static long words_code(int nl, int len, const int *w)
{
    long c = 0;
    for (int i = 0; i < len; i++)
        c = c * nl + w[i];
    return c;
}

static void words_decode(int nl, int len, long c, int *w)
{
    for (int i = len - 1; i >= 0; i--) {
        w[i] = (int)(c % nl);
        c /= nl;
    }
}

/* Lexicographic comparison of rotation k of a (length L) with the string best. */
static int rot_less(const int *a, int L, int k, const int *best)
{
    for (int i = 0; i < L; i++) {
        int x = a[(i + k) % L];
        if (x != best[i])
            return x < best[i];
    }
    return 0;
}

static void canonical_tr(const int *tr, int len, const int *w, int *out)
{
    int t[WORDS_MAX_LEN];
    if (len == 0)
        return;
    memcpy(out, w, sizeof(int) * len);
    for (int i = 0; i < len; i++)
        t[i] = tr[w[len - 1 - i]];
    for (int k = 0; k < len; k++) {
        if (rot_less(w, len, k, out))
            for (int i = 0; i < len; i++)
                out[i] = w[(i + k) % len];
        if (rot_less(t, len, k, out))
            for (int i = 0; i < len; i++)
                out[i] = t[(i + k) % len];
    }
}

void words_canonical(const struct words_basis *b, int len, const int *w, int *out)
{
    canonical_tr(b->tr, len, w, out);
}

struct words_basis *words_basis_create(int decomposition, int maxlen)
{
    struct words_basis *b;
    int nl = decomposition == DECOMP_TIED ? 2 : 5;
    if ((decomposition != DECOMP_TIED && decomposition != DECOMP_UNTIED) || maxlen < 1 ||
        maxlen > (nl == 2 ? WORDS_MAX_LEN : WORDS_UNTIED_MAX_LEN))
        return NULL;
    b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->dec = decomposition;
    b->nl = nl;
    b->maxlen = maxlen;
    for (int i = 0; i < 5; i++)
        b->tr[i] = i;
    if (nl == 5) {
        b->tr[WORDS_S] = WORDS_ST;
        b->tr[WORDS_ST] = WORDS_S;
    }
    long total = 0;
    b->pw[0] = 1;
    for (int L = 1; L <= maxlen; L++)
        b->pw[L] = b->pw[L - 1] * nl;
    for (int L = 0; L <= maxlen; L++)
        total += b->pw[L];
    /* classes <= strings; allocate for the worst case, trimmed never (small) */
    b->len = malloc(sizeof(int) * total);
    b->off = malloc(sizeof(int) * total);
    b->code = malloc(sizeof(long) * total);
    b->stud = malloc(total);
    long letcap = 0;
    for (int L = 0; L <= maxlen; L++)
        letcap += b->pw[L] * L;
    b->let = malloc(letcap > 0 ? letcap : 1);
    if (!b->len || !b->off || !b->code || !b->stud || !b->let)
        goto fail;
    int nc = 0, loff = 0;
    int w[WORDS_MAX_LEN], c[WORDS_MAX_LEN];
    for (int L = 0; L <= maxlen; L++) {
        b->first[L] = nc;
        b->lookup[L] = malloc(sizeof(int) * b->pw[L]);
        if (!b->lookup[L])
            goto fail;
        for (long code = 0; code < b->pw[L]; code++) {
            words_decode(nl, L, code, w);
            canonical_tr(b->tr, L, w, c);
            long cc = words_code(nl, L, c);
            if (cc == code) {
                b->len[nc] = L;
                b->off[nc] = loff;
                b->code[nc] = code;
                int st = 0;
                for (int i = 0; i < L; i++) {
                    b->let[loff++] = (unsigned char)w[i];
                    st |= w[i] != WORDS_P;
                }
                b->stud[nc] = (unsigned char)st;
                b->lookup[L][code] = nc++;
            } else {
                b->lookup[L][code] = b->lookup[L][cc]; /* cc < code: already assigned */
            }
        }
    }
    b->first[maxlen + 1] = nc;
    b->ncls = nc;
    return b;
fail:
    words_basis_destroy(&b);
    return NULL;
}

void words_basis_destroy(struct words_basis **pb)
{
    struct words_basis *b = pb ? *pb : NULL;
    if (!b)
        return;
    for (int L = 0; L <= WORDS_MAX_LEN; L++)
        free(b->lookup[L]);
    free(b->len);
    free(b->off);
    free(b->code);
    free(b->stud);
    free(b->let);
    free(b);
    *pb = NULL;
}

int words_basis_nletters(const struct words_basis *b) { return b->nl; }
int words_basis_maxlen(const struct words_basis *b) { return b->maxlen; }
int words_basis_count(const struct words_basis *b) { return b->ncls; }

int words_basis_count_len(const struct words_basis *b, int len)
{
    if (len < 0 || len > b->maxlen)
        return 0;
    return b->first[len + 1] - b->first[len];
}

int words_basis_index(const struct words_basis *b, int len, const int *w)
{
    if (len < 0 || len > b->maxlen)
        return -1;
    return b->lookup[len][words_code(b->nl, len, w)];
}

int words_basis_class(const struct words_basis *b, int cls, int *w)
{
    int L = b->len[cls];
    for (int i = 0; i < L; i++)
        w[i] = b->let[b->off[cls] + i];
    return L;
}

int words_basis_student(const struct words_basis *b, int cls) { return b->stud[cls]; }

void words_class_name(const struct words_basis *b, int cls, char *buf, size_t n)
{
    static const char *names[5] = {"S", "P", "S'", "G", "L"};
    size_t k = 0;
    if (n == 0)
        return;
    buf[0] = 0;
    if (b->len[cls] == 0) {
        snprintf(buf, n, "1");
        return;
    }
    for (int i = 0; i < b->len[cls] && k + 3 < n; i++) {
        const char *s = names[b->let[b->off[cls] + i]];
        size_t l = strlen(s);
        memcpy(buf + k, s, l);
        k += l;
    }
    buf[k] = 0;
}

/* ---------------------------------------------------------------- exact traces */

struct trace_walk {
    const struct words_basis *b;
    int d;
    const double *const *letters;
    double **t2;   /* (a b)^T for every pair of letters */
    double **work; /* one d x d product per depth */
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
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, X, d, tw->letters[a], d,
                    0.0, Y, d);
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

int words_initial_values(const struct model *m, const struct words_basis *b, int force_free, double *out,
                         int *exact)
{
    int nl = b->nl, d = m->d, rc = -1;
    size_t dd = (size_t)d * d;
    double *lm[5] = {0}, *pk = NULL, *tmp = NULL, *fr = NULL;
    long np = words_traces_products(b);
    *exact = !force_free && np >= 0 && 2.0 * np * d * d * (double)d <= WORDS_EXACT_FLOPS;
    /* The free-probability values below are those of the Gaussian start: an orthogonal one
     * always takes the exact traces, whatever they cost. */
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
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, pk, d, m->teacher, d, 0.0, tmp,
                        d);
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
        if (L == 0) {
            s = 1;
        } else if (L == 1) {
            for (int i = 0; i < d; i++)
                s += lm[w[0]][(size_t)i * d + i];
            s /= d;
        } else if (L == 2) {
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++)
                    s += lm[w[0]][(size_t)i * d + j] * lm[w[1]][(size_t)j * d + i];
            s /= d;
        } else {
            s = fr[c];
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

/* ---------------------------------------------------------------- non-crossing expansions */

/* First-block terms of every class of length 1..maxl: for class c, the terms (full block
 * excluded) are stored from tstart[c] to tstart[c + 1] in t as [kcls, ngap, gap...]. */
struct nc_terms {
    int maxl;
    int *tstart; /* ncls + 1 */
    int *t;
    long nt;
};

static void nc_terms_free(struct nc_terms *nc)
{
    free(nc->tstart);
    free(nc->t);
    memset(nc, 0, sizeof *nc);
}

static int nc_terms_build(const struct words_basis *b, int maxl, struct nc_terms *nc)
{
    long cap = 0;
    memset(nc, 0, sizeof *nc);
    nc->maxl = maxl;
    for (int c = b->first[1]; c < b->first[maxl + 1]; c++)
        cap += ((long)1 << (b->len[c] - 1)) * (b->len[c] + 2);
    nc->tstart = malloc(sizeof(int) * (b->ncls + 1));
    nc->t = malloc(sizeof(int) * (cap > 0 ? cap : 1));
    if (!nc->tstart || !nc->t) {
        nc_terms_free(nc);
        return -1;
    }
    long k = 0;
    int w[WORDS_MAX_LEN], sub[WORDS_MAX_LEN];
    for (int c = 0; c < b->ncls; c++) {
        nc->tstart[c] = (int)k;
        if (b->len[c] < 1 || b->len[c] > maxl)
            continue;
        int n = words_basis_class(b, c, w);
        for (long mask = 0; mask < ((long)1 << (n - 1)); mask++) {
            /* V = {0} plus the positions i >= 1 with bit i-1 of mask */
            if (mask == ((long)1 << (n - 1)) - 1)
                continue; /* the full block: the cumulant itself */
            int pos[WORDS_MAX_LEN], s = 0;
            pos[s++] = 0;
            for (int i = 1; i < n; i++)
                if (mask >> (i - 1) & 1)
                    pos[s++] = i;
            for (int i = 0; i < s; i++)
                sub[i] = w[pos[i]];
            nc->t[k++] = words_basis_index(b, s, sub);
            long ng = k++;
            int ngap = 0;
            for (int j = 0; j < s; j++) {
                int lo = pos[j] + 1, hi = j + 1 < s ? pos[j + 1] : n;
                if (hi > lo) {
                    nc->t[k++] = words_basis_index(b, hi - lo, w + lo);
                    ngap++;
                }
            }
            nc->t[ng] = ngap;
        }
    }
    nc->tstart[b->ncls] = (int)k;
    nc->nt = k;
    return 0;
}

/* sum of the non-full first-block terms of class c */
static double nc_sum(const struct nc_terms *nc, int c, const double *kap, const double *mom)
{
    double s = 0;
    const int *t = nc->t + nc->tstart[c], *e = nc->t + nc->tstart[c + 1];
    while (t < e) {
        double v = kap[t[0]];
        int ng = t[1];
        for (int g = 0; g < ng; g++)
            v *= mom[t[2 + g]];
        s += v;
        t += 2 + ng;
    }
    return s;
}

int words_free_cumulants(const struct words_basis *b, const double *mom, double *kap)
{
    struct nc_terms nc;
    if (nc_terms_build(b, b->maxlen, &nc))
        return -1;
    kap[0] = 0;
    for (int c = 1; c < b->ncls; c++)
        kap[c] = mom[c] - nc_sum(&nc, c, kap, mom);
    nc_terms_free(&nc);
    return 0;
}

/* Pure-student moment at d -> infinity by non-crossing pairings of the 2L factors. */
struct pairing_walk {
    int n;        /* 2L factor points */
    int mat[2 * WORDS_MAX_LEN];   /* underlying matrix: 0 = U (or W), 1 = V */
    int pair[2 * WORDS_MAX_LEN];
    double rho, sum;
    int L;
};

static int uf_find(int *p, int i)
{
    while (p[i] != i)
        i = p[i] = p[p[i]];
    return i;
}

static void pairing_eval(struct pairing_walk *pw)
{
    /* index j_k sits between factor k and k+1 (cyclic, 0-based factors); factor k has row
     * index j_{k-1} and column j_k. Factor 2i is X (d x r): j_{2i-1} d-type, j_{2i} r-type. */
    int n = pw->n, par[2 * WORDS_MAX_LEN];
    for (int i = 0; i < n; i++)
        par[i] = i;
    for (int p = 0; p < n; p++) {
        int q = pw->pair[p];
        if (p & 1)
            continue; /* each pair once, from its even (d x r) factor */
        /* X = M at p: M_{j_{p-1} j_p};  Y^T = M^T at q: M_{j_q j_{q-1}} */
        int a = uf_find(par, (p - 1 + n) % n), bb = uf_find(par, q);
        par[a] = bb;
        a = uf_find(par, p);
        bb = uf_find(par, (q - 1 + n) % n);
        par[a] = bb;
    }
    int nr = 0;
    for (int i = 0; i < n; i++)
        if ((i & 1) == 0 && uf_find(par, i) == i)
            nr++;
    /* r-type indices are j_{even}; count roots among them (a component is single-typed) */
    pw->sum += pow(pw->rho, nr - 0.5 * pw->L);
}

/* Non-crossing pairings of the factor points 0..n-1 (the cycle cut at 0): the pending
 * intervals [lo[i], hi[i]) each pair up inside themselves. */
static void pairing_rec(struct pairing_walk *pw, int nint, const int *lo, const int *hi)
{
    int l2[2 * WORDS_MAX_LEN + 2], h2[2 * WORDS_MAX_LEN + 2];
    while (nint > 0 && lo[nint - 1] >= hi[nint - 1])
        nint--;
    if (nint == 0) {
        pairing_eval(pw);
        return;
    }
    int a = lo[nint - 1], e = hi[nint - 1];
    for (int q = a + 1; q < e; q += 2) {
        if (pw->mat[a] != pw->mat[q])
            continue;
        pw->pair[a] = q;
        pw->pair[q] = a;
        memcpy(l2, lo, sizeof(int) * (nint - 1));
        memcpy(h2, hi, sizeof(int) * (nint - 1));
        l2[nint - 1] = a + 1;
        h2[nint - 1] = q;
        l2[nint] = q + 1;
        h2[nint] = e;
        pairing_rec(pw, nint + 1, l2, h2);
    }
}

/* d -> infinity m(w) of a pure-student word of length L under the free initialisation with
 * s0 = 1 (multiply by s0^{2L}). */
static double pairing_moment(const struct words_basis *b, int L, const int *w, double rho)
{
    struct pairing_walk pw;
    memset(&pw, 0, sizeof pw);
    pw.n = 2 * L;
    pw.L = L;
    pw.rho = rho;
    for (int i = 0; i < L; i++) {
        int x = w[i], m0, m1; /* letter = X Y^T with X = m0, Y = m1 (0 = U/W, 1 = V) */
        if (b->nl == 2 || x == WORDS_SIGMA) {
            m0 = 0;
            m1 = 0;
        } else if (x == WORDS_S) {
            m0 = 0;
            m1 = 1;
        } else if (x == WORDS_ST) {
            m0 = 1;
            m1 = 0;
        } else {
            m0 = 1;
            m1 = 1;
        }
        pw.mat[2 * i] = m0;
        pw.mat[2 * i + 1] = m1;
    }
    int lo = 0, hi = pw.n;
    pairing_rec(&pw, 1, &lo, &hi);
    return pw.sum;
}

int words_free_init(const struct words_basis *b, double s0, double rho, const double *pmom,
                    double *out)
{
    int n = b->ncls, w[WORDS_MAX_LEN], rc = -1;
    double *mom = malloc(sizeof(double) * n), *kap = malloc(sizeof(double) * n);
    struct nc_terms nc;
    if (!mom || !kap || nc_terms_build(b, b->maxlen, &nc)) {
        free(mom);
        free(kap);
        return -1;
    }
    /* moments of the pure words, then their cumulants; mixed cumulants vanish */
    for (int c = 0; c < n; c++) {
        int L = words_basis_class(b, c, w), np = 0;
        for (int i = 0; i < L; i++)
            np += w[i] == WORDS_P;
        if (np == L)
            mom[c] = pmom[L];
        else if (np == 0)
            mom[c] = pow(s0, 2 * L) * pairing_moment(b, L, w, rho);
        else
            mom[c] = NAN;
    }
    kap[0] = 0;
    for (int c = 1; c < n; c++) {
        if (isnan(mom[c]))
            kap[c] = 0;
        else
            kap[c] = mom[c] - nc_sum(&nc, c, kap, mom);
    }
    /* now every moment from the cumulants, by length (mixed words only need shorter ones) */
    out[0] = 1;
    for (int c = 1; c < n; c++)
        out[c] = isnan(mom[c]) ? kap[c] + nc_sum(&nc, c, kap, out) : mom[c];
    rc = 0;
    nc_terms_free(&nc);
    free(mom);
    free(kap);
    return rc;
}

/* ---------------------------------------------------------------- the moment system */

/* Coefficient kinds of the linear part. tied: h_S, h_P, -, lambda; untied: a, b, c, lambda. */
enum { K_A = 0, K_B, K_C, K_LAM, K_MU, K_N };
/* Kinds of the noise part: N1, N2, and the tied E|D + D^T|^2. */
enum { Q_N1 = 0, Q_N2, Q_TIED, Q_N };

struct lin_term {
    int row, col, kind;
    double coef;
};

struct quad_term {
    int row, a, b, kind;
    double coef;
};

/* One term of the substitution X -> R_X + c0_X + c1_X P in a word: the class reached and the
 * exponents of c0 and c1 of the letter types S (and S^T), Sigma, Lambda. */
struct sub_term {
    int to;
    unsigned char e0[3], e1[3];
};

struct repl {
    int kind;
    double coef;
    int n, l[2];
};

/* The right-hand side of each student letter (see the head comment). */
static const struct repl repl_tied[] = {
    {K_A, -2, 2, {WORDS_S, WORDS_S}},
    {K_B, -1, 2, {WORDS_P, WORDS_S}},
    {K_B, -1, 2, {WORDS_S, WORDS_P}},
    {K_LAM, -2, 1, {WORDS_S, 0}},
};
static const struct repl repl_s[] = {
    {K_A, -1, 2, {WORDS_S, WORDS_LAMBDA}},   {K_B, -1, 2, {WORDS_ST, WORDS_LAMBDA}},
    {K_C, -1, 2, {WORDS_P, WORDS_LAMBDA}},   {K_A, -1, 2, {WORDS_SIGMA, WORDS_S}},
    {K_B, -1, 2, {WORDS_SIGMA, WORDS_ST}},   {K_C, -1, 2, {WORDS_SIGMA, WORDS_P}},
    {K_LAM, -2, 1, {WORDS_S, 0}},            {K_MU, -1, 1, {WORDS_LAMBDA, 0}},
    {K_MU, -1, 1, {WORDS_SIGMA, 0}},
};
static const struct repl repl_st[] = {
    {K_A, -1, 2, {WORDS_LAMBDA, WORDS_ST}},  {K_B, -1, 2, {WORDS_LAMBDA, WORDS_S}},
    {K_C, -1, 2, {WORDS_LAMBDA, WORDS_P}},   {K_A, -1, 2, {WORDS_ST, WORDS_SIGMA}},
    {K_B, -1, 2, {WORDS_S, WORDS_SIGMA}},    {K_C, -1, 2, {WORDS_P, WORDS_SIGMA}},
    {K_LAM, -2, 1, {WORDS_ST, 0}},           {K_MU, -1, 1, {WORDS_LAMBDA, 0}},
    {K_MU, -1, 1, {WORDS_SIGMA, 0}},
};
static const struct repl repl_sigma[] = {
    {K_A, -2, 2, {WORDS_S, WORDS_ST}}, {K_B, -1, 2, {WORDS_ST, WORDS_ST}},
    {K_C, -1, 2, {WORDS_P, WORDS_ST}}, {K_B, -1, 2, {WORDS_S, WORDS_S}},
    {K_C, -1, 2, {WORDS_S, WORDS_P}},  {K_LAM, -2, 1, {WORDS_SIGMA, 0}},
    {K_MU, -1, 1, {WORDS_S, 0}},       {K_MU, -1, 1, {WORDS_ST, 0}},
};
static const struct repl repl_lambda[] = {
    {K_A, -2, 2, {WORDS_ST, WORDS_S}}, {K_B, -1, 2, {WORDS_S, WORDS_S}},
    {K_C, -1, 2, {WORDS_P, WORDS_S}},  {K_B, -1, 2, {WORDS_ST, WORDS_ST}},
    {K_C, -1, 2, {WORDS_ST, WORDS_P}}, {K_LAM, -2, 1, {WORDS_LAMBDA, 0}},
    {K_MU, -1, 1, {WORDS_S, 0}},       {K_MU, -1, 1, {WORDS_ST, 0}},
};

struct words_ctx {
    struct words_basis *b;
    int M, dec, closure, noise, T;
    struct act act;
    double lambda, t2;
    struct lrs sch; /* the noise term takes the rate in force */
    /* the general index (untied): the law, sqrt(d), and for the slaved mean the last mu*(q) */
    struct phi_law law;
    int general, slaved;
    double sqd, mu_guess;
    int ntr;
    int *trk;  /* class of each state component */
    double *mom, *mom0, *kap, *top0;
    struct nc_terms nc;
    struct lin_term *lin;
    int nlin;
    struct quad_term *quad;
    int nquad;
    int c_s, c_ss, c_sst, c_sp; /* classes of the observables */
    /* free_residual: the substitution X = R_X + c0 + c1 P and the residual moments */
    struct sub_term *sub;
    long *sub_off; /* per class */
    double *momr, *kapr, *topr0;
    int c_x[3], c_xp[3], c_p, c_pp; /* classes X, X P for X in {S, Sigma, Lambda}; P, P P */
    /* flat: strings of length <= K, the classes of the Gram matrix and of the split vectors */
    int fK, fns, fnrot;
    int *fgram;        /* fns x fns: class of u^T v */
    int *fa, *fb;      /* per top class, rotation and string: classes of wL u and v^T wR */
    double *fG, *fw, *fwork, *fGp, *fav, *fbv, *fsc;
    int flwork;
};

static int cmp_lin(const void *x, const void *y)
{
    const struct lin_term *a = x, *b = y;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return (a->kind > b->kind) - (a->kind < b->kind);
}

static int build_lin(struct words_ctx *cx)
{
    const struct words_basis *b = cx->b;
    int cap = 0, w[WORDS_MAX_LEN], v[WORDS_MAX_LEN + 1];
    for (int i = 0; i < cx->ntr; i++)
        cap += b->len[cx->trk[i]] * 9;
    cx->lin = malloc(sizeof(struct lin_term) * (cap > 0 ? cap : 1));
    if (!cx->lin)
        return -1;
    int n = 0;
    for (int row = 0; row < cx->ntr; row++) {
        int L = words_basis_class(b, cx->trk[row], w);
        for (int i = 0; i < L; i++) {
            const struct repl *rp;
            int nr;
            if (b->nl == 2) {
                if (w[i] != WORDS_S)
                    continue;
                rp = repl_tied;
                nr = 4;
            } else if (w[i] == WORDS_S) {
                rp = repl_s;
                nr = cx->general ? 9 : 7;
            } else if (w[i] == WORDS_ST) {
                rp = repl_st;
                nr = cx->general ? 9 : 7;
            } else if (w[i] == WORDS_SIGMA) {
                rp = repl_sigma;
                nr = cx->general ? 8 : 6;
            } else if (w[i] == WORDS_LAMBDA) {
                rp = repl_lambda;
                nr = cx->general ? 8 : 6;
            } else {
                continue;
            }
            for (int k = 0; k < nr; k++) {
                int nv = 0;
                for (int j = 0; j < i; j++)
                    v[nv++] = w[j];
                for (int j = 0; j < rp[k].n; j++)
                    v[nv++] = rp[k].l[j];
                for (int j = i + 1; j < L; j++)
                    v[nv++] = w[j];
                cx->lin[n].row = row;
                cx->lin[n].col = words_basis_index(b, nv, v);
                cx->lin[n].kind = rp[k].kind;
                cx->lin[n].coef = rp[k].coef;
                n++;
            }
        }
    }
    qsort(cx->lin, n, sizeof *cx->lin, cmp_lin);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && !cmp_lin(&cx->lin[m - 1], &cx->lin[i]))
            cx->lin[m - 1].coef += cx->lin[i].coef;
        else
            cx->lin[m++] = cx->lin[i];
    }
    cx->nlin = m;
    return 0;
}

/* Rectangular factors of the noise expansion, and the two markers g, g^T. */
enum { F_U = 0, F_UT, F_V, F_VT, F_P, F_G, F_GT };

static int units_to_letters(int nl, const int *u, int n, int *w)
{
    int L = 0;
    for (int i = 0; i < n; i++) {
        if (u[i] == F_P) {
            w[L++] = WORDS_P;
            continue;
        }
        if (i + 1 >= n)
            return -1;
        int x = u[i], y = u[++i];
        if (nl == 2 && x == F_U && y == F_UT)
            w[L++] = WORDS_S;
        else if (nl == 5 && x == F_U && y == F_VT)
            w[L++] = WORDS_S;
        else if (nl == 5 && x == F_V && y == F_UT)
            w[L++] = WORDS_ST;
        else if (nl == 5 && x == F_U && y == F_UT)
            w[L++] = WORDS_SIGMA;
        else if (nl == 5 && x == F_V && y == F_VT)
            w[L++] = WORDS_LAMBDA;
        else
            return -1;
    }
    return L;
}

static int build_quad(struct words_ctx *cx)
{
    const struct words_basis *b = cx->b;
    int w[WORDS_MAX_LEN], u[2 * WORDS_MAX_LEN], cap = 0;
    for (int i = 0; i < cx->ntr; i++) {
        int f = 2 * b->len[cx->trk[i]];
        cap += f * (f - 1) / 2;
    }
    cx->quad = malloc(sizeof(struct quad_term) * (cap > 0 ? cap : 1));
    if (!cx->quad)
        return -1;
    int nq = 0;
    for (int row = 0; row < cx->ntr; row++) {
        int L = words_basis_class(b, cx->trk[row], w), n = 0;
        for (int i = 0; i < L; i++) {
            int x = w[i];
            if (x == WORDS_P) {
                u[n++] = F_P;
            } else if (b->nl == 2 || x == WORDS_SIGMA) {
                u[n++] = F_U;
                u[n++] = F_UT;
            } else if (x == WORDS_S) {
                u[n++] = F_U;
                u[n++] = F_VT;
            } else if (x == WORDS_ST) {
                u[n++] = F_V;
                u[n++] = F_UT;
            } else {
                u[n++] = F_V;
                u[n++] = F_VT;
            }
        }
        for (int i = 0; i < n; i++) {
            if (u[i] == F_P)
                continue;
            for (int j = i + 1; j < n; j++) {
                if (u[j] == F_P)
                    continue;
                int s[2 * WORDS_MAX_LEN + 2], ns = 0, mk[2], nm = 0;
                for (int k = 0; k < n; k++) {
                    int x = u[k];
                    if (k != i && k != j) {
                        s[ns++] = x;
                        continue;
                    }
                    int g = b->nl == 2 ? F_G : (x == F_U || x == F_VT) ? F_G : F_GT;
                    if (b->nl == 2) {
                        if (x == F_U) {
                            mk[nm++] = ns;
                            s[ns++] = g;
                            s[ns++] = F_U;
                        } else {
                            s[ns++] = F_UT;
                            mk[nm++] = ns;
                            s[ns++] = g;
                        }
                    } else if (x == F_U) { /* U -> g V */
                        mk[nm++] = ns;
                        s[ns++] = g;
                        s[ns++] = F_V;
                    } else if (x == F_V) { /* V -> g^T U */
                        mk[nm++] = ns;
                        s[ns++] = g;
                        s[ns++] = F_U;
                    } else if (x == F_UT) { /* U^T -> V^T g^T */
                        s[ns++] = F_VT;
                        mk[nm++] = ns;
                        s[ns++] = g;
                    } else { /* V^T -> U^T g */
                        s[ns++] = F_UT;
                        mk[nm++] = ns;
                        s[ns++] = g;
                    }
                }
                int wa[WORDS_MAX_LEN], wb[WORDS_MAX_LEN], ub[2 * WORDS_MAX_LEN + 2], nb = 0;
                int la = units_to_letters(b->nl, s + mk[0] + 1, mk[1] - mk[0] - 1, wa);
                for (int k = mk[1] + 1; k < ns; k++)
                    ub[nb++] = s[k];
                for (int k = 0; k < mk[0]; k++)
                    ub[nb++] = s[k];
                int lb = units_to_letters(b->nl, ub, nb, wb);
                if (la < 0 || lb < 0)
                    return -1; /* cannot happen: arcs always re-pair */
                cx->quad[nq].row = row;
                cx->quad[nq].a = words_basis_index(b, la, wa);
                cx->quad[nq].b = words_basis_index(b, lb, wb);
                cx->quad[nq].kind =
                    b->nl == 2 ? Q_TIED : (s[mk[0]] == s[mk[1]] ? Q_N2 : Q_N1);
                cx->quad[nq].coef = 1;
                nq++;
            }
        }
    }
    cx->nquad = nq;
    return 0;
}

static int letter_type(int x) { return x == WORDS_SIGMA ? 1 : x == WORDS_LAMBDA ? 2 : 0; }

/* Expansion of every class under X -> R_X + c0 + c1 P for each student letter (3^s terms). */
static int build_sub(struct words_ctx *cx)
{
    const struct words_basis *b = cx->b;
    int w[WORDS_MAX_LEN], v[WORDS_MAX_LEN], pos[WORDS_MAX_LEN];
    long cap = 0;
    for (int c = 0; c < b->ncls; c++) {
        long k = 1;
        for (int i = 0; i < b->len[c]; i++)
            if (b->let[b->off[c] + i] != WORDS_P)
                k *= 3;
        cap += k;
    }
    cx->sub = malloc(sizeof(struct sub_term) * cap);
    cx->sub_off = malloc(sizeof(long) * (b->ncls + 1));
    if (!cx->sub || !cx->sub_off)
        return -1;
    long n = 0;
    for (int c = 0; c < b->ncls; c++) {
        cx->sub_off[c] = n;
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
            cx->sub[n++] = t;
        }
    }
    cx->sub_off[b->ncls] = n;
    return 0;
}

/* The regression coefficients c0, c1 of each student letter type on P (from the moments). */
static void residual_coefs(const struct words_ctx *cx, const double *mom, double *c0, double *c1)
{
    double mp = mom[cx->c_p], vp = mom[cx->c_pp] - mp * mp;
    for (int t = 0; t < 3; t++) {
        if (cx->c_x[t] < 0) {
            c0[t] = c1[t] = 0;
            continue;
        }
        c1[t] = (mom[cx->c_xp[t]] - mom[cx->c_x[t]] * mp) / vp;
        c0[t] = mom[cx->c_x[t]] - c1[t] * mp;
    }
}

/* sum over the substitution terms of class c of coef * src[to], with the coefficients
 * sign * c0, sign * c1 */
static double sub_eval(const struct words_ctx *cx, int c, const double *c0, const double *c1,
                       double sign, const double *src)
{
    double p0[3][WORDS_MAX_LEN + 1], p1[3][WORDS_MAX_LEN + 1], s = 0;
    int L = cx->b->len[c];
    for (int t = 0; t < 3; t++) {
        p0[t][0] = p1[t][0] = 1;
        for (int k = 1; k <= L; k++) {
            p0[t][k] = p0[t][k - 1] * sign * c0[t];
            p1[t][k] = p1[t][k - 1] * sign * c1[t];
        }
    }
    for (long i = cx->sub_off[c]; i < cx->sub_off[c + 1]; i++) {
        const struct sub_term *t = &cx->sub[i];
        s += p0[0][t->e0[0]] * p0[1][t->e0[1]] * p0[2][t->e0[2]] * p1[0][t->e1[0]] * p1[1][t->e1[1]] *
             p1[2][t->e1[2]] * src[t->to];
    }
    return s;
}

/* free_residual: the moments mom (classes up to M, or all when `all`) mapped to the residual
 * moments momr, their free cumulants kapr up to M, and the top residual moments by the frozen
 * top cumulants topr0 (when topr0 is NULL the top residual moments are left as mapped). */
static void residual_moments(struct words_ctx *cx, const double *mom, const double *c0, const double *c1,
                             int all)
{
    const struct words_basis *b = cx->b;
    int t0 = b->first[cx->M + 1], t1 = b->ncls;
    for (int c = 0; c < (all ? t1 : t0); c++)
        cx->momr[c] = sub_eval(cx, c, c0, c1, -1.0, mom);
    cx->kapr[0] = 0;
    for (int c = 1; c < t0; c++)
        cx->kapr[c] = cx->momr[c] - nc_sum(&cx->nc, c, cx->kapr, cx->momr);
    if (!all)
        for (int c = t0; c < t1; c++)
            cx->momr[c] = b->stud[c] ? cx->topr0[c] + nc_sum(&cx->nc, c, cx->kapr, cx->momr)
                                     : cx->mom0[c];
}

extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

/* flat: the index tables (see the closure comment in words_system_create's header). */
static int build_flat(struct words_ctx *cx)
{
    const struct words_basis *b = cx->b;
    int M = cx->M, K = M % 2 ? (M - 1) / 2 : M / 2 - 1, Lt = M + 1, lr = M % 2 ? (M + 1) / 2 : M / 2;
    int ns = 0, nl = b->nl, (*str)[WORDS_MAX_LEN], *slen;
    for (int l = 0, p = 1; l <= K; l++, p *= nl)
        ns += p;
    str = malloc(sizeof(*str) * ns);
    slen = malloc(sizeof(int) * ns);
    cx->fK = K;
    cx->fns = ns;
    cx->fnrot = Lt;
    int ntop = b->first[M + 2] - b->first[M + 1];
    cx->fgram = malloc(sizeof(int) * ns * ns);
    cx->fa = malloc(sizeof(int) * (size_t)ntop * Lt * ns);
    cx->fb = malloc(sizeof(int) * (size_t)ntop * Lt * ns);
    cx->fG = malloc(sizeof(double) * ns * ns);
    cx->fGp = malloc(sizeof(double) * ns * ns);
    cx->fw = malloc(sizeof(double) * ns);
    cx->fav = malloc(sizeof(double) * ns);
    cx->fbv = malloc(sizeof(double) * ns);
    cx->fsc = malloc(sizeof(double) * ns);
    cx->flwork = 8 * ns + 64;
    cx->fwork = malloc(sizeof(double) * cx->flwork);
    if (!str || !slen || !cx->fgram || !cx->fa || !cx->fb || !cx->fG || !cx->fGp || !cx->fw || !cx->fav ||
        !cx->fbv || !cx->fsc || !cx->fwork) {
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
            cx->fgram[i * ns + j] = words_basis_index(b, n, v);
        }
    int w[WORDS_MAX_LEN], rw[WORDS_MAX_LEN];
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
                cx->fa[((size_t)t * Lt + r) * ns + u] = words_basis_index(b, n, v);
                n = 0;
                for (int q = slen[u] - 1; q >= 0; q--)
                    v[n++] = b->tr[str[u][q]];
                for (int q = ll; q < Lt; q++)
                    v[n++] = rw[q];
                cx->fb[((size_t)t * Lt + r) * ns + u] = words_basis_index(b, n, v);
            }
        }
    }
    free(str);
    free(slen);
    return 0;
}

/* flat: the top moments from the pseudo-inverse of the Gram matrix, into out[top classes]. */
static int flat_top(struct words_ctx *cx, const double *mom, double *out)
{
    const struct words_basis *b = cx->b;
    int ns = cx->fns, info, M = cx->M, Lt = M + 1;
    for (int i = 0; i < ns; i++) {
        double g = mom[cx->fgram[i * ns + i]];
        cx->fsc[i] = g > 0 ? 1 / sqrt(g) : 1;
    }
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++)
            cx->fG[i * ns + j] = mom[cx->fgram[i * ns + j]] * cx->fsc[i] * cx->fsc[j];
    dsyev_("V", "U", &ns, cx->fG, &ns, cx->fw, cx->fwork, &cx->flwork, &info);
    if (info)
        return -1;
    double lmax = fabs(cx->fw[ns - 1]);
    memset(cx->fGp, 0, sizeof(double) * ns * ns);
    /* Pseudo-inverse on the positive part of the Jacobi-scaled G (the strings' norms differ by
     * orders of magnitude); directions below WORDS_FLAT_CUT of the largest are dropped. */
    for (int e = 0; e < ns; e++) {
        double l = cx->fw[e];
        if (!(l > WORDS_FLAT_CUT * lmax))
            continue; /* a negative direction is not a state */
        const double *ve = cx->fG + (size_t)e * ns; /* row-major storage of column-major vectors */
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < ns; j++)
                cx->fGp[i * ns + j] += ve[i] * ve[j] / l;
    }
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++)
            cx->fGp[i * ns + j] *= cx->fsc[i] * cx->fsc[j];
    int ntop = b->first[M + 2] - b->first[M + 1];
    for (int t = 0; t < ntop; t++) {
        int c = b->first[M + 1] + t;
        if (!b->stud[c]) {
            out[c] = cx->mom0[c];
            continue;
        }
        double acc = 0;
        for (int r = 0; r < Lt; r++) {
            const int *ia = cx->fa + ((size_t)t * Lt + r) * ns, *ib = cx->fb + ((size_t)t * Lt + r) * ns;
            for (int u = 0; u < ns; u++) {
                cx->fav[u] = mom[ia[u]];
                cx->fbv[u] = mom[ib[u]];
            }
            for (int i = 0; i < ns; i++) {
                double s = 0;
                for (int j = 0; j < ns; j++)
                    s += cx->fGp[i * ns + j] * cx->fbv[j];
                acc += cx->fav[i] * s;
            }
        }
        out[c] = acc / Lt;
    }
    return 0;
}

/* Fills cx->mom from the state: tracked classes, constants, and the closure. */
static void fill_moments(struct words_ctx *cx, const double *y)
{
    const struct words_basis *b = cx->b;
    for (int i = 0; i < cx->ntr; i++)
        cx->mom[cx->trk[i]] = y[i];
    int t0 = b->first[cx->M + 1], t1 = b->first[cx->M + 2];
    switch (cx->closure) {
    case CLOSURE_ZERO:
        for (int c = t0; c < t1; c++)
            cx->mom[c] = b->stud[c] ? 0 : cx->mom0[c];
        break;
    case CLOSURE_FREEZE:
        for (int c = t0; c < t1; c++)
            cx->mom[c] = cx->mom0[c];
        break;
    case CLOSURE_FLAT:
        flat_top(cx, cx->mom, cx->mom);
        break;
    case CLOSURE_FREE_RESIDUAL: {
        double c0[3], c1[3];
        residual_coefs(cx, cx->mom, c0, c1);
        residual_moments(cx, cx->mom, c0, c1, 0);
        for (int c = t0; c < t1; c++)
            cx->mom[c] = b->stud[c] ? sub_eval(cx, c, c0, c1, 1.0, cx->momr) : cx->mom0[c];
        break;
    }
    default: /* free_cumulant */
        for (int c = 1; c < t0; c++)
            cx->kap[c] = cx->mom[c] - nc_sum(&cx->nc, c, cx->kap, cx->mom);
        for (int c = t0; c < t1; c++)
            cx->mom[c] = b->stud[c] ? cx->top0[c] + nc_sum(&cx->nc, c, cx->kap, cx->mom)
                                    : cx->mom0[c];
        break;
    }
}

static int words_rhs(void *ctx, double tau, const double *y, double *dy)
{
    struct words_ctx *cx = ctx;
    struct phi_val pv;
    for (int i = 0; i < cx->ntr; i++)
        if (!isfinite(y[i]) || fabs(y[i]) > LIMIT_MOMENT_MAX)
            return -1;
    fill_moments(cx, y);
    double om = cx->mom[cx->c_sst], ps = cx->mom[cx->c_ss], o12 = cx->mom[cx->c_sp];
    if (cx->general) {
        double mu = cx->sqd * cx->mom[cx->c_s];
        if (cx->slaved) {
            if (phi_mu_slow(&cx->act, cx->T, &cx->law, cx->mu_guess, om, ps, o12, &mu))
                return -1;
            cx->mom[cx->c_s] = mu / cx->sqd;
        }
        if (phi_eval_law(&cx->act, cx->T, &cx->law, mu, om, ps, o12, &pv))
            return -1;
        if (cx->slaved)
            pv.d_mu = 0;
    } else if (phi_eval(&cx->act, cx->T, om, ps, o12, &pv)) {
        return -1;
    }
    double k[K_N];
    double a = 2 * pv.d_omega11, bb = 2 * pv.d_psi11, c = pv.d_omega12;
    if (cx->dec == DECOMP_TIED) {
        k[K_A] = 2 * (a + bb);
        k[K_B] = 2 * c;
        k[K_C] = 0;
    } else {
        k[K_A] = a;
        k[K_B] = bb;
        k[K_C] = c;
    }
    k[K_LAM] = cx->lambda;
    k[K_MU] = cx->sqd * pv.d_mu;
    for (int i = 0; i < cx->ntr; i++)
        dy[i] = 0;
    for (int i = 0; i < cx->nlin; i++) {
        const struct lin_term *t = &cx->lin[i];
        dy[t->row] += k[t->kind] * t->coef * cx->mom[t->col];
    }
    if (cx->noise) {
        struct noise_val nv;
        double q[Q_N];
        if (noise_eval(&cx->act, cx->T, om, cx->dec == DECOMP_TIED ? om : ps, o12, 0, &nv))
            return -1;
        double eta = lrs_rate(&cx->sch, tau);
        q[Q_N1] = eta * nv.n1;
        q[Q_N2] = eta * nv.n2;
        q[Q_TIED] = eta * 2 * (nv.n1 + nv.n2);
        for (int i = 0; i < cx->nquad; i++) {
            const struct quad_term *t = &cx->quad[i];
            dy[t->row] += q[t->kind] * t->coef * cx->mom[t->a] * cx->mom[t->b];
        }
    }
    return 0;
}

int words_noise_drift(const struct mom_sys *sys, const double *y, double n1, double n2, double *out)
{
    struct words_ctx *cx = sys->ctx;
    double q[Q_N] = {n1, n2, 2 * (n1 + n2)};
    fill_moments(cx, y);
    for (int i = 0; i < cx->ntr; i++)
        out[i] = 0;
    for (int i = 0; i < cx->nquad; i++) {
        const struct quad_term *t = &cx->quad[i];
        out[t->row] += q[t->kind] * t->coef * cx->mom[t->a] * cx->mom[t->b];
    }
    return 0;
}

static int words_observe(void *ctx, const double *y, struct obs_row *row)
{
    struct words_ctx *cx = ctx;
    struct phi_val pv;
    for (int i = 0; i < cx->ntr; i++)
        cx->mom[cx->trk[i]] = y[i];
    row->omega11 = cx->mom[cx->c_sst];
    row->psi11 = cx->mom[cx->c_ss];
    row->omega12 = cx->mom[cx->c_sp];
    row->trace = cx->mom[cx->c_s];
    double mu = cx->sqd * row->trace;
    if (cx->general && cx->slaved) {
        if (phi_mu_slow(&cx->act, cx->T, &cx->law, cx->mu_guess, row->omega11, row->psi11, row->omega12, &mu))
            return -1;
        cx->mu_guess = mu;
        row->trace = mu / cx->sqd;
    }
    row->overlap = obs_overlap(row->omega11, row->omega12, row->trace, cx->t2);
    if (cx->general ? phi_eval_law(&cx->act, cx->T, &cx->law, mu, row->omega11, row->psi11, row->omega12, &pv)
                    : phi_eval(&cx->act, cx->T, row->omega11, row->psi11, row->omega12, &pv)) {
        row->loss = NAN;
        return -1;
    }
    row->loss = pv.phi;
    return 0;
}

static void words_ctx_destroy(void *ctx)
{
    struct words_ctx *cx = ctx;
    if (!cx)
        return;
    words_basis_destroy(&cx->b);
    nc_terms_free(&cx->nc);
    free(cx->trk);
    free(cx->mom);
    free(cx->mom0);
    free(cx->kap);
    free(cx->top0);
    free(cx->lin);
    free(cx->quad);
    free(cx->sub);
    free(cx->sub_off);
    free(cx->momr);
    free(cx->kapr);
    free(cx->topr0);
    free(cx->fgram);
    free(cx->fa);
    free(cx->fb);
    free(cx->fG);
    free(cx->fGp);
    free(cx->fw);
    free(cx->fwork);
    free(cx->fav);
    free(cx->fbv);
    free(cx->fsc);
    free(cx);
}

const struct words_basis *words_system_basis(const struct mom_sys *sys)
{
    return ((const struct words_ctx *)sys->ctx)->b;
}

const int *words_system_classes(const struct mom_sys *sys)
{
    return ((const struct words_ctx *)sys->ctx)->trk;
}

static int class_of(const struct words_basis *b, int l0, int l1)
{
    int w[2] = {l0, l1};
    return words_basis_index(b, l1 < 0 ? 1 : 2, w);
}

int words_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
{
    const struct params *p = &m->p;
    struct words_ctx *cx = NULL;
    int M = p->order_m, nl;
    enum closure closure = p->closure;
    memset(sys, 0, sizeof *sys);
    /* auto: the positive `flat` closure at the largest odd order <= M (flat needs odd orders;
     * measured to run through strong recovery at order 3 where the cumulant closures stop,
     * docs/closures.md), or free_cumulant when M < 3. */
    if (closure == CLOSURE_AUTO) {
        if (M >= 3) {
            closure = CLOSURE_FLAT;
            M -= M % 2 == 0;
        } else {
            closure = CLOSURE_FREE_CUMULANT;
        }
    }
    if (p->decomposition != DECOMP_TIED && p->decomposition != DECOMP_UNTIED) {
        snprintf(err, errlen, "words: the word hierarchy is for tied and untied only");
        return -1;
    }
    nl = p->decomposition == DECOMP_TIED ? 2 : 5;
    if (M < 2 || M + 1 > (nl == 2 ? WORDS_MAX_LEN : WORDS_UNTIED_MAX_LEN)) {
        snprintf(err, errlen, "words: order %d out of range [2, %d] for %s", M,
                 (nl == 2 ? WORDS_MAX_LEN : WORDS_UNTIED_MAX_LEN) - 1,
                 params_decomp_name(p->decomposition));
        return -1;
    }
    if (closure == CLOSURE_SPECTRAL || closure == CLOSURE_SPECTRAL_MP) {
        snprintf(err, errlen, "words: closure spectral is not a word closure");
        return -1;
    }
    if (closure == CLOSURE_FLAT && M % 2 == 0) {
        snprintf(err, errlen, "words: closure flat needs an odd order (got %d; even orders measured unstable)", M);
        return -1;
    }
    if (closure == CLOSURE_FREE_RESIDUAL && M + 1 > (nl == 2 ? 10 : 6)) {
        snprintf(err, errlen, "words: closure free_residual supports order <= %d for %s", nl == 2 ? 9 : 5,
                 params_decomp_name(p->decomposition));
        return -1;
    }
    cx = calloc(1, sizeof *cx);
    if (!cx)
        goto oom;
    cx->M = M;
    cx->dec = p->decomposition;
    cx->closure = (int)closure;
    cx->noise = p->ode_noise;
    cx->T = m->T;
    cx->act = p->activation;
    cx->lambda = p->weight_decay;
    lrs_init(&cx->sch, p);
    cx->t2 = m->t2;
    cx->law = m->law;
    cx->general = !phi_law_special(&m->law);
    cx->slaved = p->ode_mean == ODE_MEAN_SLAVED;
    cx->sqd = sqrt((double)m->d);
    cx->b = words_basis_create(p->decomposition, M + 1);
    if (!cx->b)
        goto oom;
    const struct words_basis *b = cx->b;
    int n = b->ncls;
    cx->mom = malloc(sizeof(double) * n);
    cx->mom0 = malloc(sizeof(double) * n);
    cx->kap = calloc(n, sizeof(double));
    cx->top0 = calloc(n, sizeof(double));
    cx->trk = malloc(sizeof(int) * n);
    if (!cx->mom || !cx->mom0 || !cx->kap || !cx->top0 || !cx->trk)
        goto oom;
    for (int c = 0; c < b->first[M + 1]; c++)
        if (b->stud[c])
            cx->trk[cx->ntr++] = c;
    /* matched initial values: exact traces of the run's own matrices where affordable */
    int exact;
    if (words_initial_values(m, b, 0, cx->mom0, &exact))
        goto oom;
    memcpy(cx->mom, cx->mom0, sizeof(double) * n);
    if (nc_terms_build(b, M + 1, &cx->nc))
        goto oom;
    for (int c = 1; c < n; c++)
        cx->kap[c] = cx->mom0[c] - nc_sum(&cx->nc, c, cx->kap, cx->mom0);
    for (int c = b->first[M + 1]; c < n; c++)
        cx->top0[c] = cx->kap[c]; /* the frozen top cumulant */
    if (build_lin(cx) || build_quad(cx))
        goto oom;
    cx->c_s = class_of(b, WORDS_S, -1);
    cx->c_ss = class_of(b, WORDS_S, WORDS_S);
    cx->c_sst = nl == 2 ? cx->c_ss : class_of(b, WORDS_S, WORDS_ST);
    cx->c_sp = class_of(b, WORDS_S, WORDS_P);
    cx->c_p = class_of(b, WORDS_P, -1);
    cx->c_pp = class_of(b, WORDS_P, WORDS_P);
    for (int t = 0; t < 3; t++) {
        int x = t == 0 ? WORDS_S : t == 1 ? WORDS_SIGMA : WORDS_LAMBDA;
        cx->c_x[t] = (nl == 2 && t > 0) ? -1 : class_of(b, x, -1);
        cx->c_xp[t] = (nl == 2 && t > 0) ? -1 : class_of(b, x, WORDS_P);
    }
    if (cx->closure == CLOSURE_FLAT) {
        if (build_flat(cx) || flat_top(cx, cx->mom0, cx->mom))
            goto oom;
        memcpy(cx->mom, cx->mom0, sizeof(double) * n);
    }
    if (cx->closure == CLOSURE_FREE_RESIDUAL) {
        double c0[3], c1[3];
        cx->momr = malloc(sizeof(double) * n);
        cx->kapr = calloc(n, sizeof(double));
        cx->topr0 = calloc(n, sizeof(double));
        if (!cx->momr || !cx->kapr || !cx->topr0 || build_sub(cx))
            goto oom;
        residual_coefs(cx, cx->mom0, c0, c1);
        residual_moments(cx, cx->mom0, c0, c1, 1);
        for (int c = b->first[M + 1]; c < n; c++)
            cx->topr0[c] = cx->momr[c] - nc_sum(&cx->nc, c, cx->kapr, cx->momr);
    }
    sys->dim = cx->ntr;
    sys->y0 = malloc(sizeof(double) * cx->ntr);
    if (!sys->y0)
        goto oom;
    for (int i = 0; i < cx->ntr; i++)
        sys->y0[i] = cx->mom0[cx->trk[i]];
    sys->rhs = words_rhs;
    sys->observe = words_observe;
    sys->destroy = words_ctx_destroy;
    sys->ctx = cx;
    if (cx->general) {
        cx->mu_guess = cx->sqd * cx->mom0[cx->c_s];
        if (cx->slaved &&
            phi_mu_slow(&cx->act, cx->T, &cx->law, cx->mu_guess, cx->mom0[cx->c_sst], cx->mom0[cx->c_ss],
                        cx->mom0[cx->c_sp], &cx->mu_guess)) {
            snprintf(err, errlen, "words: no slow manifold mu*(q) (Phi_mu = 0) at the initial moments: use ode_mean stiff");
            words_ctx_destroy(cx);
            free(sys->y0);
            memset(sys, 0, sizeof *sys);
            return -1;
        }
        sys->stiff = !cx->slaved;
    }
    return 0;
oom:
    words_ctx_destroy(cx);
    free(sys->y0);
    memset(sys, 0, sizeof *sys);
    snprintf(err, errlen, "words: out of memory building the order-%d system", M);
    return -1;
}
