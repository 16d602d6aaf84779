/*
 * text.h: numbers and words as people write them.
 *
 * text_double writes a double in the shortest form that reads back to the same double
 * ("0.05", not "0.050000000000000003"); every number aimsweep prints or stores as text goes
 * through it. text_closest finds the nearest of a list of words by edit distance, for the
 * "did you mean" of every message about a mistyped flag, key or value.
 */
#ifndef AIMSWEEP_TEXT_H
#define AIMSWEEP_TEXT_H

#include <stddef.h>

/* Room for any double written by text_double, with its terminating NUL. */
#define TEXT_DOUBLE_MAX 32

/* Writes x with the fewest significant digits (1 to 17, %g style) that strtod reads back to
 * exactly x; "nan", "inf", "-inf" for the non-finite values. Returns the length (as snprintf). */
int text_double(double x, char *buf, size_t n);

/* Levenshtein distance between a and b (ASCII case-insensitive, '-' equal to '_'). */
int text_distance(const char *a, const char *b);

/* The word of the NULL-terminated list closest to w, or NULL when none is close enough to be a
 * plausible typo (distance at most 1 for short words, a third of the length for longer ones, or
 * w is a prefix of exactly one word). */
const char *text_closest(const char *w, const char *const *words);

/* Appends " (did you mean 'X'?)" to buf (of size n) when text_closest finds X. */
void text_suggest(char *buf, size_t n, const char *w, const char *const *words);

/* Joins the words of a NULL-terminated list with sep into buf. */
void text_join(char *buf, size_t n, const char *const *words, const char *sep);

#endif
