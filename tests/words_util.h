/*
 * words_util.h: a helper shared by the word-hierarchy test and measurement programs: the
 * parameters from key=value text. (Both integrate with the project's integrator, mom.h.)
 */
#ifndef AIMSWEEP_TESTS_WORDS_UTIL_H
#define AIMSWEEP_TESTS_WORDS_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/params.h"
#include "aimsweep/model/model.h"
#include "aimsweep/theory/mom.h"

/* "key=value key=value ..." on top of the defaults; exits on a bad key. */
static inline void wu_params(struct params *p, const char *text)
{
    char buf[1024], err[256];
    params_default(p);
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            fprintf(stderr, "bad parameter text '%s'\n", tok);
            exit(2);
        }
        *eq = 0;
        if (params_set(p, tok, eq + 1, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            exit(2);
        }
    }
    if (params_validate(p, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
}

#endif
