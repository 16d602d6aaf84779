/*
 * words_impl.h: declarations shared by the files of the word hierarchy (words_basis.c,
 * words_traces.c, words_free.c, words_closure.c, words_system.c) and by no one else: the layout
 * of a basis, the first-block terms of the non-crossing expansions, and the closures' state.
 * The interface is include/aimsweep/theory/words.h.
 */
#ifndef AIMSWEEP_THEORY_WORDS_IMPL_H
#define AIMSWEEP_THEORY_WORDS_IMPL_H

#include "aimsweep/theory/words.h"

#define WORDS_UNTIED_MAX_LEN 8

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

/* Letters of the string with code c (base nl, length len). */
void words_decode(int nl, int len, long c, int *w);

/* Class of the one- or two-letter word l0 (l1 < 0) or l0 l1. */
static inline int words_class_of(const struct words_basis *b, int l0, int l1)
{
    int w[2] = {l0, l1};
    return words_basis_index(b, l1 < 0 ? 1 : 2, w);
}

/* First-block terms of every class of length 1..maxl: for class c, the terms (full block
 * excluded) are stored from tstart[c] to tstart[c + 1] in t as [kcls, ngap, gap...]. */
struct words_nc {
    int maxl;
    int *tstart; /* ncls + 1 */
    int *t;
    long nt;
};

/* Builds the first-block terms of every class of length 1..maxl. Returns 0, or -1 on
 * allocation failure (nc left empty). */
int words_nc_build(const struct words_basis *b, int maxl, struct words_nc *nc);
void words_nc_free(struct words_nc *nc);
/* Sum of the non-full first-block terms of class c: kappa of the first block times the moments
 * of the gaps. */
double words_nc_sum(const struct words_nc *nc, int c, const double *kap, const double *mom);

/* One term of the substitution X -> R_X + c0_X + c1_X P in a word: the class reached and the
 * exponents of c0 and c1 of the letter types S (and S^T), Sigma, Lambda. */
struct sub_term {
    int to;
    unsigned char e0[3], e1[3];
};

/* The closure of the length-(M + 1) classes (words_closure.c) and the state it keeps. */
struct words_closure {
    int kind; /* enum closure, resolved: free_cumulant, freeze, zero, free_residual or flat */
    int M;
    const struct words_basis *b; /* borrowed, holds every class up to M + 1 */
    const double *mom0;          /* borrowed: the tau = 0 moments of every class */
    struct words_nc nc;          /* first-block terms up to length M + 1 */
    double *kap, *top0;          /* free cumulants, and the frozen top cumulants */
    /* free_residual: the substitution X = R_X + c0 + c1 P and the residual moments */
    struct sub_term *sub;
    long *sub_off; /* per class */
    double *momr, *kapr, *topr0;
    int c_x[3], c_xp[3], c_p, c_pp; /* classes X, X P for X in {S, Sigma, Lambda}; P, P P */
    /* flat: strings of length <= K, the classes of the Gram matrix and of the split vectors */
    int fK, fns, fnrot;
    int *fgram; /* fns x fns: class of u^T v */
    /* per string u, top class t and rotation r (at u * ntop * fnrot + t * fnrot + r): the classes
     * of wL u and u^T wR */
    int *fa, *fb;
    int fbt, fst; /* top classes per block of flat_top; a block's row stride (padded) */
    /* fav, fbv, fy: per string, a block's values of m(wL u), m(u^T wR) and (G^+ b)_u */
    double *fG, *fw, *fwork, *fGp, *fav, *fbv, *fy, *fsc;
    double f_lmin; /* flat: the least eigenvalue / the largest of the last Gram matrix */
    int flwork;
};

/* Sets up the closure `kind` of order M over the basis b with the initial moments mom0 (both
 * borrowed for the closure's life). Returns 0, or -1 on allocation failure or when the flat
 * closure's eigen-solve fails at tau = 0; words_closure_free releases what was built either way. */
int words_closure_init(struct words_closure *cl, const struct words_basis *b, int kind, int M,
                       const double *mom0);
/* Fills the length-(M + 1) classes of mom from the classes of length <= M. */
void words_closure_apply(struct words_closure *cl, double *mom);
void words_closure_free(struct words_closure *cl);

#endif
