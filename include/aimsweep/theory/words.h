/*
 * words.h: the word hierarchy of the tied and untied decompositions (docs/model.md §6-§7).
 *
 * A word is a product of letters; its moment is m(w) = Tr(w)/d. Letters:
 *   tied:   S = W W^T/kappa, P = S*                                   (codes S=0, P=1)
 *   untied: S = U V^T/kappa, P = S*, S^T, Sigma = U U^T/kappa, Lambda = V V^T/kappa
 *                                                                     (S=0, P=1, ST=2, SG=3, LM=4)
 * Two words are the same class when one is a cyclic rotation of the other or of its transpose
 * (the word reversed with S <-> S^T; Sigma, Lambda, P and the tied S are symmetric). A class is
 * named by its canonical representative: the lexicographically smallest string of its orbit.
 *
 * A basis holds every class up to a length, numbered by length and then lexicographically,
 * with class 0 the empty word (m = 1). The moment system of order M (words_system_create)
 * tracks every class of length <= M with a student letter; pure-teacher classes are
 * constants; classes of length M + 1 come from the closure (params.closure).
 */
#ifndef AIMSWEEP_WORDS_H
#define AIMSWEEP_WORDS_H

#include <stddef.h>

#include "aimsweep/model/model.h"
#include "aimsweep/theory/mom.h"

enum { WORDS_S = 0, WORDS_P = 1, WORDS_ST = 2, WORDS_SIGMA = 3, WORDS_LAMBDA = 4 };

#define WORDS_MAX_LEN 16 /* longest word a basis holds (tied); untied holds at most 8 */

struct words_basis;

/* Enumerates every class of the decomposition's alphabet (DECOMP_TIED or DECOMP_UNTIED) up to
 * length maxlen. Returns NULL on allocation failure or an unsupported length. */
struct words_basis *words_basis_create(int decomposition, int maxlen);
void words_basis_destroy(struct words_basis **b);

int words_basis_nletters(const struct words_basis *b);
int words_basis_count(const struct words_basis *b);              /* classes, empty word included */
int words_basis_count_len(const struct words_basis *b, int len); /* classes of one length */
/* Class of a string of letters (any representative); -1 when the length is out of range. */
int words_basis_index(const struct words_basis *b, int len, const int *w);
/* Length of a class and its canonical letters (w holds at least the length). */
int words_basis_class(const struct words_basis *b, int cls, int *w);
/* Canonical form of a string under rotation and transposition (alphabet of the basis). */
void words_canonical(const struct words_basis *b, int len, const int *w, int *out);
/* Text of a class ("SPS", "S'G", with ' for S^T, G for Sigma, L for Lambda). */
void words_class_name(const struct words_basis *b, int cls, char *buf, size_t n);

/* Exact normalised traces m(w) = Tr(w)/d of every class of the basis, for the letter matrices
 * letters[code] (d x d, row-major; tied: S, P; untied: S, P, S^T, Sigma, Lambda). Uses BLAS:
 * one d x d product per distinct proper prefix. out has words_basis_count values. Returns 0,
 * or -1 on allocation failure. */
int words_traces(const struct words_basis *b, int d, const double *const *letters, double *out);

/* Number of d x d products words_traces needs for the basis, or -1 on allocation failure. */
long words_traces_products(const struct words_basis *b);

/* Exact initial traces up to this many flops (2 d^3 per product; about a minute on one core),
 * else free probability beyond length 2. At d = 800 that is exact up to tied M = 11 (455
 * products) and untied M = 6 (725 products). */
#define WORDS_EXACT_FLOPS 1e12

/* words_traces_products of the basis that words_system_create builds for p (its order and
 * closure resolved the same way), whatever d: what the exact initial values cost, for the cost
 * model of task.c. -1 on allocation failure or a p the word system refuses. */
long words_init_products(const struct params *p);

/* Initial values of every class for the model's own initial matrices: exact traces
 * (words_traces) when they cost at most WORDS_EXACT_FLOPS (words_traces.c), otherwise, or when
 * force_free, exact for words of length <= 2 and free-probability values (words_free_init,
 * with the teacher's exact moments) beyond; force_free 2 (ode_init limit) takes every length
 * from free probability. *exact says which. Returns 0 or -1. */
int words_initial_values(const struct model *m, const struct words_basis *b, int force_free,
                         double *out, int *exact);

/* Forms the letter matrices of a student (tied W, or untied U, V; d x r) and teacher P into
 * letters[] (each d x d, allocated by the caller: 2 for tied, 5 for untied). */
void words_letters(const struct words_basis *b, int d, int r, double kappa, const double *A,
                   const double *B, const double *teacher, double *const *letters);

/* Moments of the free initialisation: student W (or U, V independent) with i.i.d. N(0, s0^2)
 * entries at aspect ratio rho = r/d, free from a teacher whose moments Tr(P^k)/d (k = 0..maxlen)
 * are given in pmom. d -> infinity values of every class into out. Returns 0 or -1. */
int words_free_init(const struct words_basis *b, double s0, double rho, const double *pmom,
                    double *out);

/* Free cumulants of every class from the moments of every class (mom, length
 * words_basis_count): the non-crossing moment-cumulant inversion. kappa[0] = 0. */
int words_free_cumulants(const struct words_basis *b, const double *mom, double *kappa);

/* The moment system of order M = m->p.order_m for tied or untied, initial values matched to the
 * model's own initial matrices (exact traces). State: the tracked classes in basis order.
 * Returns 0, or -1 with a message in err. */
int words_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen);

/* The checks words_system_create makes before it builds anything (order range, closure and
 * order): 0, or -1 with a message that says what to use instead. */
int words_check(const struct params *p, char *err, size_t errlen);

#endif
