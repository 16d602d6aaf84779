/*
 * text.c: shortest round-trip numbers and edit-distance suggestions (see text.h).
 *
 * Shortest form: %.{p}g for p = 1, 2, ..., 17 until strtod gives back the same bits. 17
 * significant digits always suffice for an IEEE double, so the loop ends; the common values of
 * a sweep (0.05, 1e-3, 200) stop after a few tries. Integral values up to 2^53 print as
 * integers ("28000", never "2.8e+04"), because %g switches to the exponent form only when the
 * exponent reaches the precision, and the loop then reaches a precision that avoids it.
 */
#include "aimsweep/base/text.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int text_double(double x, char *buf, size_t n)
{
    if (isnan(x))
        return snprintf(buf, n, "nan");
    if (isinf(x))
        return snprintf(buf, n, x > 0 ? "inf" : "-inf");
    char tmp[TEXT_DOUBLE_MAX];
    int digits = 1;
    /* integers below 2^53 in full: %g with enough digits writes them without an exponent */
    if (x == floor(x) && fabs(x) < 9007199254740992.0)
        digits = fabs(x) < 1 ? 1 : (int)floor(log10(fabs(x))) + 1;
    for (; digits < 17; digits++) {
        snprintf(tmp, sizeof tmp, "%.*g", digits, x);
        if (strtod(tmp, NULL) == x)
            break;
    }
    snprintf(tmp, sizeof tmp, "%.*g", digits, x);
    return snprintf(buf, n, "%s", tmp);
}

static int same(char a, char b)
{
    if (a == '-')
        a = '_';
    if (b == '-')
        b = '_';
    return tolower((unsigned char)a) == tolower((unsigned char)b);
}

int text_distance(const char *a, const char *b)
{
    /* optimal string alignment: insertions, deletions, substitutions and swaps of two
     * neighbours ("gird" -> "grid") each count one */
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 1000;
    int m[65][65];
    for (size_t i = 0; i <= la; i++)
        m[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        m[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int best = m[i - 1][j - 1] + !same(a[i - 1], b[j - 1]);
            if (m[i - 1][j] + 1 < best)
                best = m[i - 1][j] + 1;
            if (m[i][j - 1] + 1 < best)
                best = m[i][j - 1] + 1;
            if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]) &&
                m[i - 2][j - 2] + 1 < best)
                best = m[i - 2][j - 2] + 1;
            m[i][j] = best;
        }
    return m[la][lb];
}

const char *text_closest(const char *w, const char *const *words)
{
    const char *best = NULL, *prefix = NULL;
    int bestd = 1000, nprefix = 0;
    size_t lw = strlen(w);
    if (!lw)
        return NULL;
    for (int i = 0; words[i]; i++) {
        int d = text_distance(w, words[i]);
        if (d < bestd) {
            bestd = d;
            best = words[i];
        }
        if (lw >= 2 && strlen(words[i]) > lw && !strncmp(words[i], w, lw)) {
            prefix = words[i];
            nprefix++;
        }
    }
    int limit = lw <= 4 ? 1 : (int)(lw / 3);
    if (best && bestd <= limit &&
        strcmp(best, w) != 0) /* distance 0: differs only in case or '-' */
        return best;
    if (nprefix == 1)
        return prefix;
    return NULL;
}

void text_suggest(char *buf, size_t n, const char *w, const char *const *words)
{
    const char *c = text_closest(w, words);
    size_t used = strlen(buf);
    if (c && used < n)
        snprintf(buf + used, n - used, " (did you mean '%s'?)", c);
}

void text_join(char *buf, size_t n, const char *const *words, const char *sep)
{
    size_t used = 0;
    if (n)
        buf[0] = 0;
    for (int i = 0; words[i] && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? sep : "", words[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}
