/*
 * words_hooks.h: test-only hooks into a moment system built by words_system_create. Not part
 * of the interface (include/aimsweep/theory/words.h): the tests reach this header through the
 * private include path src/theory.
 */
#ifndef AIMSWEEP_THEORY_WORDS_HOOKS_H
#define AIMSWEEP_THEORY_WORDS_HOOKS_H

#include "aimsweep/theory/words.h"

/* The basis of a system built by words_system_create and the class of each state component
 * (length sys->dim). Borrowed pointers, valid until the system is destroyed. */
const struct words_basis *words_system_basis(const struct mom_sys *sys);
const int *words_system_classes(const struct mom_sys *sys);

/* How far outside the realisable set (relative to max(omega11, 1)) the right-hand side takes a
 * state onto the set rather than failing (WORDS_REAL_TOL by default; words_system.c). */
void words_system_set_real_tol(struct mom_sys *sys, double tol);

/* The noise drift per unit eta of the state y for given expectations n1 = E sum D_ab^2 and
 * n2 = E sum D_ab D_ba (words_system.c head comment), into out (sys->dim values). */
int words_noise_drift(const struct mom_sys *sys, const double *y, double n1, double n2,
                      double *out);

#endif
