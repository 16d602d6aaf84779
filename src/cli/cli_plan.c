/*
 * cli_plan.c: `aimsweep plan`: a sweep's grid size and estimated cost, and (with --db) what the
 * database already holds of it and what a run would still do. Reads only; no MPI.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aimsweep/base/task_status.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/grid.h"
#include "aimsweep/harness/spec.h"
#include "aimsweep/harness/store.h"
#include "aimsweep/harness/task.h"

int cli_plan(int argc, char **argv)
{
    const char *sweep = NULL, *db = NULL;
    int ranks = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: aimsweep plan SWEEP.yaml [--db FILE] [--ranks N]\n"
                   "  grid size, estimated cost, and (with --db) what the database already holds\n");
            return 0;
        }
        if (!strcmp(argv[i], "--db") && i + 1 < argc)
            db = argv[++i];
        else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || v < 1 || v > 1000000) {
                fprintf(stderr, "aimsweep plan: --ranks takes a whole number of ranks >= 1, not '%s'\n", argv[i]);
                return 2;
            }
            ranks = (int)v;
        } else if (argv[i][0] != '-' && !sweep)
            sweep = argv[i];
        else {
            fprintf(stderr, "aimsweep plan: unknown or incomplete option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!sweep) {
        fprintf(stderr, "usage: aimsweep plan SWEEP.yaml [--db FILE] [--ranks N]\n");
        return 2;
    }
    char err[1024];
    struct sweep_spec *spec = NULL;
    struct params *pts = NULL;
    struct task *tasks = NULL;
    enum task_status *status = NULL;
    struct store *store = NULL;
    size_t n = 0;
    int code = 2;
    if (spec_load(sweep, &spec, err, sizeof err) || grid_expand(spec, &pts, &n, err, sizeof err)) {
        fprintf(stderr, "aimsweep: %s\n", err);
        goto out;
    }
    tasks = calloc(n ? n : 1, sizeof *tasks);
    status = calloc(n ? n : 1, sizeof *status);
    if (!tasks || !status)
        goto out;
    double total = 0, maxc = 0, left = 0;
    for (size_t i = 0; i < n; i++) {
        if (task_make(&pts[i], &tasks[i]))
            goto out;
        total += tasks[i].cost;
        maxc = fmax(maxc, tasks[i].cost);
        status[i] = TASK_NEW;
    }
    printf("sweep       %s (%s)\n", spec->name, sweep);
    printf("grid points %zu =", n);
    for (size_t i = 0; i < spec->ngrid; i++)
        printf("%s %zu %s", i ? " x" : "", spec->grid[i].n, spec->grid[i].key);
    printf("%s\n", spec->ngrid ? "" : " 1 (fixed values only)");
    for (size_t i = 0; i < spec->nfixed; i++)
        printf("fixed       %s = %s\n", spec->fixed[i].key, spec->fixed[i].values[0]);
    if (db) {
        if (access(db, F_OK) != 0)
            printf("database    %s does not exist yet: everything is to do\n", db);
        else if (!(store = store_open_readonly(db, err, sizeof err))) {
            fprintf(stderr, "aimsweep: %s\n", err);
            goto out;
        } else if (store_task_status(store, tasks, n, status, NULL)) {
            fprintf(stderr, "aimsweep: %s: %s\n", db, store_errmsg(store));
            goto out;
        }
    }
    size_t cnt[TASK_STATUS_COUNT] = {0}, todo = 0;
    for (size_t i = 0; i < n; i++) {
        cnt[status[i]]++;
        if (task_status_todo(status[i], 0)) {
            todo++;
            left += tasks[i].cost;
        }
    }
    printf("estimate    %.3g core-s in all, largest task %.3g s (nominal %.0e flop/s)\n", total, maxc,
           TASK_FLOPS_PER_S);
    if (store) {
        printf("database    %s:", db);
        for (int k = 0; k < TASK_STATUS_COUNT; k++)
            if (cnt[k])
                printf(" %zu %s", cnt[k], task_status_name((enum task_status)k));
        printf("\n");
    }
    printf("to run      %zu of %zu tasks, %.3g core-s", todo, n, left);
    if (ranks > 1)
        printf(", about %.3g s on %d ranks (%d workers)", fmax(left / (ranks - 1), maxc), ranks, ranks - 1);
    printf("\n");
    code = 0;
out:
    store_close(&store);
    for (size_t i = 0; tasks && i < n; i++)
        task_free(&tasks[i]);
    free(tasks);
    free(status);
    free(pts);
    spec_destroy(&spec);
    return code;
}
