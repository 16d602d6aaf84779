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
#include "aimsweep/cli/args.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/grid.h"
#include "aimsweep/harness/spec.h"
#include "aimsweep/harness/store.h"
#include "aimsweep/harness/task.h"
#include "aimsweep/run/worker.h"
#include "cli_run.h"

static void plan_usage(FILE *f)
{
    fprintf(
        f,
        "usage: aimsweep plan SWEEP.yaml [--db FILE] [--ranks N] [--set KEY=VALUE ...] [--list]\n"
        "  grid size, estimated cost, and (with --db) what the database already holds. Every grid\n"
        "  point is checked as a run would check it: a sweep that plan accepts runs.\n"
        "  --set KEY=VALUE overrides a parameter of the sweep file, as for aimsweep run.\n"
        "  --list prints every expanded point: its task id, the values of the keys that vary\n"
        "  (grid axes, and expressions such as lr: \"0.5 / log(d)\" evaluated), its estimated\n"
        "  cost in seconds and, with --db, its status.\n");
}

/* The value of KEY in a point's canonical text "k1=v1;k2=v2;...", into buf ("" when absent). */
static void canonical_value(const char *text, const char *key, char *buf, size_t n)
{
    size_t kl = strlen(key);
    buf[0] = '\0';
    for (const char *p = text; *p;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            snprintf(buf, n, "%.*s", (int)(len - kl - 1), p + kl + 1);
            return;
        }
        p += len + (end != NULL);
    }
}

/* Whether the axis's value differs between points: a grid axis, or a fixed expression. */
static int varies(const struct spec_axis *a, int fixed)
{
    return !fixed || (a->n && a->is_expr && a->is_expr[0]);
}

/* plan --list: one line per point, the columns aligned over every point (two passes). */
static void plan_list(const struct sweep_spec *spec, const struct params *pts,
                      const struct task *tasks, const enum task_status *status, size_t n,
                      int with_status)
{
    const char *cols[128];
    size_t nc = 0, width[128];
    for (int fixed = 0; fixed < 2; fixed++) {
        const struct spec_axis *ax = fixed ? spec->fixed : spec->grid;
        size_t na = fixed ? spec->nfixed : spec->ngrid;
        for (size_t i = 0; i < na && nc < 128; i++)
            if (varies(&ax[i], fixed))
                cols[nc++] = ax[i].key;
    }
    char text[8192], val[512], hex[17];
    for (size_t c = 0; c < nc; c++)
        width[c] = strlen(cols[c]);
    for (size_t i = 0; i < n; i++) {
        params_canonical(&pts[i], text, sizeof text);
        for (size_t c = 0; c < nc; c++) {
            canonical_value(text, cols[c], val, sizeof val);
            width[c] = strlen(val) > width[c] ? strlen(val) : width[c];
        }
    }
    printf("%-16s", "task_id");
    for (size_t c = 0; c < nc; c++)
        printf("  %-*s", (int)width[c], cols[c]);
    printf("  %10s%s\n", "cost_s", with_status ? "  status" : "");
    for (size_t i = 0; i < n; i++) {
        params_canonical(&pts[i], text, sizeof text);
        task_id_hex(tasks[i].id, hex);
        printf("%-16s", hex);
        for (size_t c = 0; c < nc; c++) {
            canonical_value(text, cols[c], val, sizeof val);
            printf("  %-*s", (int)width[c], val);
        }
        printf("  %10.3g", tasks[i].cost);
        if (with_status)
            printf("  %s", status[i] == TASK_NEW ? "new" : task_status_name(status[i]));
        printf("\n");
    }
}

int cli_plan(int argc, char **argv)
{
    static const char *const flags[] = {"db", "ranks", "set", "list", "help", NULL};
    const char *sweep = NULL, *db = NULL, *sets[RUN_MAX_SETS];
    int ranks = 0, nsets = 0, list = 0;
    struct cli_seen seen = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            plan_usage(stdout);
            return 0;
        }
        if (cli_nonempty("plan", "argument", a))
            return 2;
        if (!strcmp(a, "--list")) {
            if (cli_once(&seen, "plan", a + 2))
                return 2;
            list = 1;
            continue;
        }
        if (a[0] != '-') {
            if (sweep) {
                fprintf(
                    stderr,
                    "aimsweep plan: a second sweep file '%s' (after '%s'); one sweep at a time\n",
                    a, sweep);
                return 2;
            }
            sweep = a;
            continue;
        }
        if (strcmp(a, "--db") != 0 && strcmp(a, "--ranks") != 0 && strcmp(a, "--set") != 0)
            return cli_unknown("plan", a, flags);
        if (strcmp(a, "--set") != 0 && cli_once(&seen, "plan", a + 2))
            return 2;
        if (!v || !strncmp(v, "--", 2)) {
            fprintf(stderr, "aimsweep plan: %s needs a value\n", a);
            return 2;
        }
        if (cli_nonempty("plan", "value", v))
            return 2;
        i++;
        if (!strcmp(a, "--db"))
            db = v;
        else if (!strcmp(a, "--ranks")) {
            char *end;
            long r = strtol(v, &end, 10);
            if (*end || r < 1 || r > 1000000) {
                fprintf(stderr,
                        "aimsweep plan: --ranks '%s': must be an integer from 1 to 1000000\n", v);
                return 2;
            }
            ranks = (int)r;
        } else if (nsets == RUN_MAX_SETS) {
            fprintf(stderr, "aimsweep plan: more than %d --set overrides\n", RUN_MAX_SETS);
            return 2;
        } else
            sets[nsets++] = v;
    }
    if (!sweep) {
        fprintf(stderr, "aimsweep plan: need a sweep file\n");
        plan_usage(stderr);
        return 2;
    }
    char err[4096];
    struct sweep_spec *spec = NULL;
    struct params *pts = NULL;
    struct task *tasks = NULL;
    enum task_status *status = NULL;
    struct store *store = NULL;
    size_t n = 0;
    int code = 2;
    if (run_load_spec(sweep, sets, nsets, &spec, err, sizeof err) ||
        grid_expand(spec, &pts, &n, err, sizeof err)) {
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
    char shape[1024];
    printf("grid points %zu = %s\n", n, grid_shape(spec, shape, sizeof shape));
    for (size_t i = 0; i < spec->nfixed; i++)
        printf("fixed       %s = %s%s\n", spec->fixed[i].key, spec->fixed[i].values[0],
               spec->fixed[i].lines[0] ? "" : " (--set)");
    /* settings with no effect on some points: said once per distinct sentence */
    char note[256], last[256] = "";
    size_t nnote = 0;
    for (size_t i = 0; i < n; i++)
        if (worker_ignored(&pts[i], note, sizeof note)) {
            nnote++;
            if (strcmp(note, last) != 0) {
                printf("note        %s\n", note);
                snprintf(last, sizeof last, "%s", note);
            }
        }
    if (nnote)
        printf("note        (%zu of %zu points)\n", nnote, n);
    if (db) {
        if (access(db, F_OK) != 0)
            printf("database    %s does not exist yet: everything is to do\n", db);
        else if (!(store = store_open_readonly(db, err, sizeof err))) {
            fprintf(stderr, "aimsweep: %s\n", err);
            goto out;
        } else if (store_task_status(store, tasks, n, status, NULL)) {
            fprintf(stderr, "aimsweep: %s: %s\n", db, store_errmsg(store));
            goto out;
        } else {
            char others[512];
            if (store_other_sweeps(store, spec->name, others, sizeof others) > 0)
                printf("database    %s also holds other sweeps: %s\n", db, others);
        }
    }
    long learned = 0;
    if (store) {
        struct cost_model cm = {0};
        learned = store_learn_costs(store, &cm);
        if (learned > 0) {
            total = maxc = 0;
            for (size_t i = 0; i < n; i++) {
                tasks[i].cost = task_cost_learned(&cm, &pts[i]);
                total += tasks[i].cost;
                maxc = fmax(maxc, tasks[i].cost);
            }
        }
        task_cost_model_free(&cm);
    }
    size_t cnt[TASK_STATUS_COUNT] = {0}, todo = 0;
    for (size_t i = 0; i < n; i++) {
        cnt[status[i]]++;
        if (task_status_todo(status[i], 0)) {
            todo++;
            left += tasks[i].cost;
        }
    }
    char tot[32], big[32], lft[32], wall[32];
    cli_duration(total, tot, sizeof tot);
    cli_duration(maxc, big, sizeof big);
    cli_duration(left, lft, sizeof lft);
    if (learned > 0)
        printf(
            "estimate    %s of one core in all, largest task %s (cost model corrected by %ld finished solver"
            " runs in %s)\n",
            tot, big, learned, db);
    else
        printf(
            "estimate    %s of one core in all, largest task %s (nominal model, %.0e flop/s: run some"
            " tasks into the database to correct it)\n",
            tot, big, TASK_FLOPS_PER_S);
    if (store) {
        printf("database    %s:", db);
        for (int k = 0; k < TASK_STATUS_COUNT; k++)
            if (cnt[k])
                printf(" %zu %s", cnt[k], task_status_name((enum task_status)k));
        printf("\n");
    }
    printf("to run      %zu of %zu tasks, %s of one core", todo, n, lft);
    if (ranks > 1) {
        cli_duration(fmax(left / (ranks - 1), maxc), wall, sizeof wall);
        printf(", about %s on %d ranks (%d workers)", wall, ranks, ranks - 1);
    }
    printf("\n");
    if (list) {
        printf("\n");
        plan_list(spec, pts, tasks, status, n, store != NULL);
    }
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
