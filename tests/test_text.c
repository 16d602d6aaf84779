/* Shortest round-trip numbers (text.c), suggestions, and the expression grammar (expr.c).
 * The round trip is checked against strtod on random bit patterns and on every decimal of a
 * grid: a formatter that dropped one digit too many fails hundreds of checks; one that kept
 * 17 digits fails the "shortest" checks below. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/expr.h"
#include "aimsweep/base/text.h"
#include "check.h"

static int lookup(void *ctx, const char *name, double *v)
{
    (void)ctx;
    if (!strcmp(name, "d")) {
        *v = 100;
        return 0;
    }
    if (!strcmp(name, "lr")) {
        *v = 0.05;
        return 0;
    }
    return -1;
}

static double eval(const char *text, int *ok, char *err, size_t n)
{
    struct expr *e = expr_compile(text, err, n);
    double v = NAN;
    *ok = e && expr_eval(e, lookup, NULL, &v, err, n) == 0;
    expr_destroy(&e);
    return v;
}

int main(void)
{
    char buf[TEXT_DOUBLE_MAX], err[256];
    /* shortest forms */
    const char *cases[][2] = {{"0.05", "0.05"},
                              {"5e-2", "0.05"},
                              {"0.1", "0.1"},
                              {"28000.000000000004", "28000.000000000004"},
                              {"28000", "28000"},
                              {"1e-3", "0.001"},
                              {"1e-7", "1e-07"},
                              {"0.3", "0.3"},
                              {"123456789012", "123456789012"},
                              {"-2.5", "-2.5"},
                              {"0", "0"},
                              {"1e300", "1e+300"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        text_double(strtod(cases[i][0], NULL), buf, sizeof buf);
        CHECK(!strcmp(buf, cases[i][1]), "%s -> %s, expected %s", cases[i][0], buf, cases[i][1]);
    }
    text_double(0.1 + 0.2, buf, sizeof buf);
    CHECK(!strcmp(buf, "0.30000000000000004"), "0.1 + 0.2 -> %s", buf);
    /* round trip: random bit patterns and decimals */
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (!isfinite(v))
            continue;
        text_double(v, buf, sizeof buf);
        bad += strtod(buf, NULL) != v;
    }
    for (int i = -3000; i <= 3000; i++) {
        char dec[32];
        snprintf(dec, sizeof dec, "%.3f", i * 0.001); /* the decimal, then its nearest double */
        double v = strtod(dec, NULL);
        text_double(v, buf, sizeof buf);
        bad += strtod(buf, NULL) != v || strlen(buf) > 6;
    }
    CHECK(bad == 0, "%d numbers do not read back (or are not short)", bad);

    /* suggestions */
    const char *const words[] = {"decomposition", "activation", "d", "lr", "tau_end", NULL};
    CHECK(text_closest("decompositon", words) &&
              !strcmp(text_closest("decompositon", words), "decomposition"),
          "typo");
    CHECK(text_closest("tau-end", words) && !strcmp(text_closest("tau-end", words), "tau_end"),
          "dash");
    CHECK(text_closest("zzzzzz", words) == NULL, "no suggestion for a far word");
    CHECK(text_closest("activ", words) && !strcmp(text_closest("activ", words), "activation"),
          "prefix");

    /* expressions against C arithmetic */
    int ok;
    double v = eval("0.5 / log(d)", &ok, err, sizeof err);
    CHECK(ok && v == 0.5 / log(100.0), "0.5/log(d) = %g (%s)", v, err);
    v = eval("0.5 / (d * log(d))", &ok, err, sizeof err);
    CHECK(ok && v == 0.5 / (100 * log(100.0)), "0.5/(d log d) = %g", v);
    v = eval("2^3^2", &ok, err, sizeof err);
    CHECK(ok && v == 512, "2^3^2 = %g", v);
    v = eval("-2^2 + 10 - 3 - 2", &ok, err, sizeof err);
    CHECK(ok && v == 1, "-2^2 + 10 - 3 - 2 = %g", v);
    v = eval("lr * sqrt(d) / 2 + abs(-1) + log10(1000) + log2(8) + exp(0)", &ok, err, sizeof err);
    CHECK(ok && fabs(v - (0.05 * 10 / 2 + 1 + 3 + 3 + 1)) < 1e-15, "mixed = %g", v);
    v = eval("12 / 4 / 3", &ok, err, sizeof err);
    CHECK(ok && v == 1, "left-assoc division %g", v);
    eval("1 / (d - 100)", &ok, err, sizeof err);
    CHECK(!ok && strstr(err, "division by zero"), "division by zero: %s", err);
    eval("log(d - 100)", &ok, err, sizeof err);
    CHECK(!ok && strstr(err, "not a finite"), "log 0: %s", err);
    eval("0.5 / dd", &ok, err, sizeof err);
    CHECK(!ok && strstr(err, "unknown name 'dd'"), "unknown name: %s", err);
    const char *syntax[] = {"0.5 /", "(d", "d)", "2 ** 3", "sin(d)", "d d", "", "1 +* 2", "log d"};
    for (size_t i = 0; i < sizeof syntax / sizeof syntax[0]; i++) {
        struct expr *e = expr_compile(syntax[i], err, sizeof err);
        CHECK(!e && strstr(err, "column"), "'%s' compiled (%s)", syntax[i], err);
        expr_destroy(&e);
    }
    char deep[400];
    memset(deep, '(', 200);
    strcpy(deep + 200, "1");
    struct expr *e = expr_compile(deep, err, sizeof err);
    CHECK(!e && strstr(err, "deeply"), "deep nesting: %s", err);
    CHECK(expr_looks_like("0.5 / log(d)") && expr_looks_like("d*2") && !expr_looks_like("5e-2") &&
              !expr_looks_like("-1.5") && !expr_looks_like("1E+3"),
          "expr_looks_like");
    return check_done("test_text");
}
