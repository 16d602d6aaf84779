/*
 * words_free.c: free probability on the word basis: the non-crossing moment-cumulant relations
 * and the moments of the free initialisation.
 *
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
 */
#include "aimsweep/theory/words.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "words_impl.h"

/* ---------------------------------------------------------------- non-crossing expansions */

void words_nc_free(struct words_nc *nc)
{
    free(nc->tstart);
    free(nc->t);
    memset(nc, 0, sizeof *nc);
}

int words_nc_build(const struct words_basis *b, int maxl, struct words_nc *nc)
{
    long cap = 0;
    memset(nc, 0, sizeof *nc);
    nc->maxl = maxl;
    for (int c = b->first[1]; c < b->first[maxl + 1]; c++)
        cap += ((long)1 << (b->len[c] - 1)) * (b->len[c] + 2);
    nc->tstart = malloc(sizeof(int) * (b->ncls + 1));
    nc->t = malloc(sizeof(int) * (cap > 0 ? cap : 1));
    if (!nc->tstart || !nc->t) {
        words_nc_free(nc);
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
double words_nc_sum(const struct words_nc *nc, int c, const double *kap, const double *mom)
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
    struct words_nc nc;
    if (words_nc_build(b, b->maxlen, &nc))
        return -1;
    kap[0] = 0;
    for (int c = 1; c < b->ncls; c++)
        kap[c] = mom[c] - words_nc_sum(&nc, c, kap, mom);
    words_nc_free(&nc);
    return 0;
}

/* Pure-student moment at d -> infinity by non-crossing pairings of the 2L factors. */
struct pairing_walk {
    int n;                      /* 2L factor points */
    int mat[2 * WORDS_MAX_LEN]; /* underlying matrix: 0 = U (or W), 1 = V */
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
    struct words_nc nc;
    if (!mom || !kap || words_nc_build(b, b->maxlen, &nc)) {
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
            kap[c] = mom[c] - words_nc_sum(&nc, c, kap, mom);
    }
    /* now every moment from the cumulants, by length (mixed words only need shorter ones) */
    out[0] = 1;
    for (int c = 1; c < n; c++)
        out[c] = isnan(mom[c]) ? kap[c] + words_nc_sum(&nc, c, kap, out) : mom[c];
    rc = 0;
    words_nc_free(&nc);
    free(mom);
    free(kap);
    return rc;
}
