/*
 * cli_probe.h: what `aimsweep probe` (cli_probe.c) shares with its database half
 * (cli_probe_db.c).
 */
#ifndef AIMSWEEP_CLI_PROBE_H
#define AIMSWEEP_CLI_PROBE_H

#include <stdint.h>

#include "aimsweep/probe/gauss.h"
#include "aimsweep/probe/stats.h"

struct probe_opts {
    const char *run, *pattern;
    int heads, tokens, csv, teacher_d;
    long pairs;
    double token_corr, ks_max;
    uint64_t seed;
    double *teacher;
};

struct probe_db;

/* Opens (creating if missing) path, creates the probe tables and view if they are missing and
 * begins a transaction. Returns 0, or 1 with a message. */
int probe_db_open(struct probe_db **db, const char *path);

/* One head's row (replacing a row of the same run, step, layer and head). Returns 0 or 1. */
int probe_db_head(struct probe_db *db, const struct probe_opts *o, long long step, const char *file,
                  int layer, const char *layer_name, int head, int d, int dh,
                  const struct probe_head *h, const struct probe_t1_head *t1,
                  const struct probe_t1_layer *lay, int in_regime);

/* The H x H pair matrices of one layer. Returns 0 or 1. */
int probe_db_pairs(struct probe_db *db, const char *run, long long step, int layer, int H,
                   const double *omega, const double *psi);

/* Commits (ok) or rolls back, and closes. Returns 0 or 1. */
int probe_db_close(struct probe_db **db, int ok);

#endif
