/*
 * test_grid.c: grids researchers write (ranges, zip blocks, expressions, --set overrides), task
 * ids across the change to shortest numbers, interpolated weak recovery, the view
 * recovery_segments against a direct computation, and the 1 -> 2 schema migration.
 * usage: test_grid SRCDIR WORKDIR
 *
 * What planted errors do: ids hashed from the shortest text break all 270 ids of tests/ids.txt;
 * a zip expanded as a product gives 9 points instead of 3; an off-by-one in the view's window
 * (m_max_before including record k) finds no crossing at all; an interpolation that uses
 * record k + 1 puts tau_wr outside its bracket.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/text.h"
#include "aimsweep/harness/grid.h"
#include "aimsweep/harness/spec.h"
#include "aimsweep/harness/store.h"
#include "aimsweep/harness/task.h"
#include "aimsweep/run/worker.h"
#include "check.h"

static const char *srcdir, *workdir;

static struct sweep_spec *parse(const char *text, char *err, size_t n)
{
    struct sweep_spec *s = NULL;
    spec_parse("x.yaml", text, strlen(text), &s, err, n);
    return s;
}

/* Expands text; returns the points (caller frees) or NULL with err. */
static struct params *expand(const char *text, size_t *n, char *err, size_t errlen)
{
    struct sweep_spec *s = parse(text, err, errlen);
    struct params *p = NULL;
    *n = 0;
    if (s && grid_expand(s, &p, n, err, errlen))
        p = NULL;
    spec_destroy(&s);
    return p;
}

static void test_ids(void)
{
    const char *files[] = {"tests/ids_quick.yaml", "tests/ids_phase.yaml", "tests/ids.yaml"};
    char path[4096], err[2048], line[64];
    snprintf(path, sizeof path, "%s/tests/ids.txt", srcdir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "no %s", path);
    if (!f)
        return;
    int n = 0, same = 0;
    for (size_t k = 0; k < 3; k++) {
        struct sweep_spec *s = NULL;
        struct params *p = NULL;
        size_t np = 0;
        snprintf(path, sizeof path, "%s/%s", srcdir, files[k]);
        CHECK(spec_load(path, &s, err, sizeof err) == 0 &&
                  grid_expand(s, &p, &np, err, sizeof err) == 0,
              "%s: %s", path, err);
        for (size_t i = 0; i < np && fgets(line, sizeof line, f); i++) {
            char hex[17];
            task_id_hex(params_task_id(&p[i]), hex);
            same += !strncmp(line, hex, 16);
            n++;
            /* the stored text in shortest numbers gives back the point and its id */
            char text[8192];
            struct params q;
            params_canonical(&p[i], text, sizeof text);
            CHECK(task_parse(text, &q, err, sizeof err) == 0 &&
                      params_task_id(&q) == params_task_id(&p[i]),
                  "%s does not give back its id", text);
            CHECK(!strstr(text, "00000000") && !strstr(text, "99999999"), "not shortest: %s", text);
        }
        free(p);
        spec_destroy(&s);
    }
    fclose(f);
    CHECK(n == 270 && same == n, "%d of %d task ids as before the change", same, n);
}

static void test_ranges(void)
{
    char err[2048];
    size_t n;
    struct params *p =
        expand("grid:\n  lr: {logspace: [0.01, 0.1, 3]}\n  d: {range: [40, 200, 40]}\n"
               "  init_scale: {linspace: [0.1, 0.5, 5]}\n",
               &n, err, sizeof err);
    CHECK(p && n == 3 * 4 * 5, "ranges: %zu points (%s)", n, err);
    if (p) {
        /* last axis fastest: init_scale 0.1 0.2 0.3 0.4 0.5, exactly the decimals */
        const double is[5] = {0.1, 0.2, 0.3, 0.4, 0.5};
        for (int i = 0; i < 5; i++)
            CHECK(p[i].init_scale == is[i], "linspace value %d = %.17g", i, p[i].init_scale);
        CHECK(p[0].d == 40 && p[5].d == 80 && p[15].d == 160, "range values %d %d %d", p[0].d,
              p[5].d, p[15].d);
        CHECK(p[0].lr == 0.01 && fabs(p[20].lr - sqrt(0.001)) < 1e-15 && p[40].lr == 0.1,
              "logspace %g %g %g", p[0].lr, p[20].lr, p[40].lr);
    }
    free(p);
    const char *bad[][2] = {
        {"grid:\n  d: {linspace: [10, 20, 4]}\n", "x.yaml:2: key 'd': linspace gives"},
        {"grid:\n  lr: {logspace: [0, 0.1, 3]}\n", "x.yaml:2: key 'lr': logspace"},
        {"grid:\n  lr: {range: [0.1, 0.01, 0.01]}\n", "x.yaml:2: key 'lr': range"},
        {"grid:\n  lr: {linspce: [0.1, 0.2, 2]}\n", "did you mean 'linspace'"},
        {"grid:\n  lr: {linspace: [0.1, 0.2]}\n",
         "x.yaml:2: key 'lr': linspace takes three numbers"},
        {"grid:\n  activation: {linspace: [1, 2, 2]}\n", "needs a numeric key"},
        {"grid:\n  lr: {linspace: [0.1, 0.1, 2]}\n", "repeats"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = expand(bad[i][0], &n, err, sizeof err);
        CHECK(!p && strstr(err, bad[i][1]), "'%s' gave '%s', expected '%s'", bad[i][0],
              p ? "points" : err, bad[i][1]);
        free(p);
    }
}

static void test_zip_expr(void)
{
    char err[2048];
    size_t n;
    struct params *p =
        expand("grid:\n  decomposition: [tied, untied]\n  zip:\n    d: [40, 80, 160]\n"
               "    tau_end: [0.1, 0.2, 0.3]\nfixed:\n  lr: \"0.5 / log(d)\"\n",
               &n, err, sizeof err);
    CHECK(p && n == 6, "zip: %zu points (%s)", n, err);
    if (p) {
        const int d[3] = {40, 80, 160};
        const double te[3] = {0.1, 0.2, 0.3};
        for (int i = 0; i < 6; i++) {
            CHECK(p[i].d == d[i % 3] && p[i].tau_end == te[i % 3], "zip point %d: d %d tau_end %g",
                  i, p[i].d, p[i].tau_end);
            char want[64];
            text_double(0.5 / log((double)d[i % 3]), want, sizeof want);
            CHECK(p[i].lr == strtod(want, NULL), "expression at d = %d: lr %.17g, expected %s",
                  d[i % 3], p[i].lr, want);
        }
    }
    free(p);
    /* a zip's list may repeat a value (each closure with its own orders); the pairs differ */
    p = expand("grid:\n  zip:\n    closure: [spectral, spectral, free_cumulant]\n"
               "    order_m: [1, 2, 2]\nsolvers: [ode]\n",
               &n, err, sizeof err);
    CHECK(p && n == 3 && p[0].order_m == 1 && p[1].order_m == 2 && p[2].order_m == 2 &&
              p[0].closure == p[1].closure && p[2].closure != p[1].closure,
          "zip with a repeated value: %zu points (%s)", p ? n : 0, err);
    free(p);
    /* an expression in a grid list, of a grid key */
    p = expand("grid:\n  d: [20, 40]\n  lr: [\"1/d\", \"2/d\"]\n", &n, err, sizeof err);
    CHECK(p && n == 4 && p[0].lr == 0.05 && p[1].lr == 0.1 && p[2].lr == 0.025 && p[3].lr == 0.05,
          "grid expr (%s)", err);
    free(p);
    const char *bad[][2] = {
        {"grid:\n  zip:\n    d: [40, 80]\n    lr: [0.1]\n",
         "x.yaml:4: key 'zip': lists of unequal length"},
        {"grid:\n  d: [40]\nfixed:\n  lr: \"0.5 / log(dd)\"\n",
         "x.yaml:4: key 'lr': expression '0.5 / log(dd)': unknown name 'dd' (did you mean 'd'?)"},
        {"grid:\n  d: [40, 80]\nfixed:\n  lr: \"1 / (d - 40)\"\n",
         "x.yaml:4: key 'lr': expression '1 / (d - 40)': division by zero"},
        {"fixed:\n  lr: \"0.5 / (d\"\n", "x.yaml:2: key 'lr': expression '0.5 / (d', column"},
        {"fixed:\n  lr: \"2 * lr\"\n", "names its own key"},
        {"fixed:\n  lr: \"1/d\"\n  init_scale: \"lr * 2\"\n",
         "x.yaml:3: key 'init_scale': expression 'lr * 2' names lr, which is itself an expression"},
        {"fixed:\n  d: \"10 * log(10)\"\n",
         "x.yaml:2: key 'd': expression '10 * log(10)' = 23.02585092994046: d = 23.02585092994046: not an integer"},
        {"fixed:\n  lr: \"1 - d\"\n",
         "x.yaml:2: key 'lr': expression '1 - d' = -99: lr = -99: must be a number in (0, 1000]"},
        {"fixed:\n  zip:\n    d: [40]\n", "zip blocks go under grid"},
        /* the same pair twice (5e-2 is 0.05): the same points twice */
        {"grid:\n  zip:\n    d: [40, 80, 40]\n    lr: [0.05, 0.1, 5e-2]\n",
         "x.yaml:3: key 'zip': value 3 of the zip (d = 40, ...) repeats value 1 (line 3): the same points twice"},
        {"grid:\n  zip:\n    d: [40, 40]\n",
         "x.yaml:3: key 'zip': value 2 of the zip (d = 40, ...) repeats value 1"},
        /* outside a zip a repeat is refused as before */
        {"grid:\n  d: [40, 80, 40]\n", "x.yaml:2: key 'd': value '40' repeats '40'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = expand(bad[i][0], &n, err, sizeof err);
        CHECK(!p && strstr(err, bad[i][1]), "'%s' gave '%s', expected '%s'", bad[i][0],
              p ? "points" : err, bad[i][1]);
        free(p);
    }
    /* every failing point listed, grouped by message */
    p = expand(
        "grid:\n  decomposition: [tied, untied, direct]\n  order_m: [3, 4, 6]\nfixed:\n  closure: flat\n"
        "solvers: [ode]\n",
        &n, err, sizeof err);
    CHECK(!p && strstr(err, "x.yaml:1: key 'grid': 4 of 9 points cannot run") &&
              strstr(err, "(decomposition=tied, order_m=4)") &&
              strstr(err, "(decomposition=untied, order_m=6)"),
          "whole-grid check: %s", err);
    free(p);
}

static void test_override(void)
{
    char err[2048];
    struct sweep_spec *s =
        parse("grid:\n  d: [20, 40]\n  lr: [0.1, 0.2]\nfixed:\n  tau_end: 0.5\n", err, sizeof err);
    CHECK(s != NULL, "%s", err);
    if (!s)
        return;
    CHECK(spec_override(s, "tau_end=2", err, sizeof err) == 0, "%s", err);
    CHECK(spec_override(s, "lr=0.05", err, sizeof err) == 0, "%s", err);
    CHECK(spec_override(s, "init_scale=0.5 / log(d)", err, sizeof err) == 0, "%s", err);
    CHECK(spec_override(s, "tau_endd=2", err, sizeof err) != 0 &&
              strstr(err, "did you mean 'tau_end'"),
          "%s", err);
    CHECK(spec_override(s, "d=1", err, sizeof err) != 0 &&
              strstr(err, "--set d=1: d = 1: must be an integer from 2"),
          "%s", err);
    CHECK(spec_override(s, "tau_end", err, sizeof err) != 0 && strstr(err, "KEY=VALUE"), "%s", err);
    CHECK(strstr(s->text, "# --set tau_end=2") != NULL, "override not recorded in the text");
    struct params *p = NULL;
    size_t n = 0;
    CHECK(grid_expand(s, &p, &n, err, sizeof err) == 0 && n == 2, "override grid: %zu (%s)", n,
          err);
    for (size_t i = 0; p && i < n; i++)
        CHECK(p[i].tau_end == 2 && p[i].lr == 0.05 && p[i].init_scale == 0.5 / log((double)p[i].d),
              "override point");
    free(p);
    spec_destroy(&s);
}

/* --set seeds=N means what `seeds: N` means in the file: the same points, the same task ids, in
 * the same order, whatever seed the file gave. */
static void test_override_seeds(void)
{
    char err[2048];
    struct sweep_spec *a = parse("grid:\n  d: [20, 40]\nfixed:\n  seed: 7\n", err, sizeof err);
    struct sweep_spec *b = parse("grid:\n  d: [20, 40]\nseeds: 3\n", err, sizeof err);
    CHECK(a && b, "%s", err);
    if (!a || !b) {
        spec_destroy(&a);
        spec_destroy(&b);
        return;
    }
    CHECK(spec_override(a, "seeds=3", err, sizeof err) == 0, "%s", err);
    CHECK(spec_override(a, "seeds=0", err, sizeof err) != 0 && strstr(err, "integer from 1"), "%s",
          err);
    CHECK(spec_override(a, "seeds=2x", err, sizeof err) != 0, "seeds=2x accepted");
    struct params *p = NULL, *q = NULL;
    size_t np = 0, nq = 0;
    CHECK(grid_expand(a, &p, &np, err, sizeof err) == 0 && np == 6, "seeds=3: %zu points (%s)", np,
          err);
    CHECK(grid_expand(b, &q, &nq, err, sizeof err) == 0 && nq == 6, "seeds: 3: %zu points", nq);
    for (size_t i = 0; p && q && i < np && i < nq; i++)
        CHECK(params_task_id(&p[i]) == params_task_id(&q[i]) && p[i].seed == (uint64_t)(i % 3 + 1),
              "point %zu: --set seeds=3 differs from seeds: 3", i);
    free(p);
    free(q);
    spec_destroy(&a);
    spec_destroy(&b);
}

/* The list of points that cannot run: a message is blamed on a line only when that value alone
 * fails with the same message (untied's order_m is not blamed on index uncentred, which fails
 * alone only over the default tied), and a long list is cut between whole entries. */
static void test_bad_points_message(void)
{
    char err[8192];
    struct sweep_spec *s = parse("grid:\n  decomposition: [direct, tied, untied]\n"
                                 "  index: [centred, uncentred]\n  order_m: [4, 8, 10]\n"
                                 "  activation: [h1, h2, h3, h4, h5, h6]\n"
                                 "  lr: [0.01, 0.02, 0.03, 0.04, 0.05]\nsolvers: [ode]\n",
                                 err, sizeof err);
    CHECK(s != NULL, "%s", err);
    if (!s)
        return;
    struct params *p = NULL;
    size_t n = 0;
    for (size_t len = 300; len <= sizeof err; len = len * 3 / 2) {
        memset(err, 'x', sizeof err);
        CHECK(grid_expand(s, &p, &n, err, len) != 0, "the bad grid expanded");
        size_t l = strlen(err);
        CHECK(l < len, "message overflows its %zu bytes", len);
        CHECK(l > 0 && (err[l - 1] == ')' || !strcmp(err + l - 8, "messages")),
              "message cut mid-entry at %zu bytes: ...%s", len, err + (l > 40 ? l - 40 : 0));
        CHECK(!strstr(err, "key 'index': order_m"), "order_m's message blamed on index: %s", err);
    }
    CHECK(strstr(err, "210 of 540 points cannot run") != NULL, "%s", err);
    free(p);
    spec_destroy(&s);
}

/* A trajectory with |m| given at tau = 0, 0.1, ...; samples = 1000 tau. */
static void make_traj(struct traj *t, const double *m, int n)
{
    traj_init(t, SOLVER_SGD, n);
    for (int k = 0; k < n; k++) {
        struct obs_row r = {0};
        r.tau = 0.1 * k;
        r.samples = 1000 * r.tau;
        r.overlap = k % 2 ? -m[k] : m[k]; /* the sign plays no role */
        traj_push(t, &r);
    }
}

static void test_recovery(void)
{
    const double m[] = {0.01, 0.05, 0.2, 0.45, 0.3, 0.8, 0.9};
    struct traj t;
    make_traj(&t, m, 7); /* signs alternate: 0.01, -0.05, 0.2, -0.45, 0.3, -0.8, 0.9 */
    double tau, ns;
    /* |m| (an even activation): 0.4 is first reached between records 2 (0.2) and 3 (0.45) */
    CHECK(obs_recovery(&t, 1, 0.4, &tau, &ns) == 0, "0.4 not reached");
    CHECK(tau > 0.2 && tau < 0.3, "tau_wr %g outside [0.2, 0.3]", tau);
    CHECK_CLOSE(tau, 0.2 + 0.1 * (0.4 - 0.2) / (0.45 - 0.2), 1e-15, 0, "tau_wr(0.4)");
    CHECK(ns == round(1000 * tau), "n_wr %g", ns);
    /* 0.5: record 3 falls back below, the crossing is between 4 (0.3) and 5 (0.8) */
    CHECK(obs_recovery(&t, 1, 0.5, &tau, &ns) == 0 && tau > 0.4 && tau < 0.5, "tau_wr(0.5) = %g",
          tau);
    CHECK(obs_recovery(&t, 1, 0.005, &tau, &ns) == 0 && tau == 0 && ns == 0, "reached at record 0");
    CHECK(obs_recovery(&t, 1, 0.95, &tau, &ns) != 0, "0.95 reached");
    /* the signed m (an activation with an odd part): records 3 (-0.45) and 5 (-0.8) do not
     * count; 0.4 and 0.5 are first reached at record 6 (0.9), linear from record 5's -0.8.
     * A rule that still reads |m| gives tau in [0.2, 0.3] and [0.4, 0.5] (both checks fail). */
    CHECK(obs_recovery(&t, 0, 0.4, &tau, &ns) == 0, "signed 0.4 not reached");
    CHECK_CLOSE(tau, 0.5 + 0.1 * (0.4 + 0.8) / (0.9 + 0.8), 1e-15, 0, "signed tau_wr(0.4)");
    CHECK(ns == round(500 + 100 * (0.4 + 0.8) / (0.9 + 0.8)), "signed n_wr %g", ns);
    CHECK(obs_recovery(&t, 0, 0.5, &tau, &ns) == 0 && tau > 0.5 && tau < 0.6,
          "signed tau_wr(0.5) = %g", tau);
    CHECK(obs_recovery(&t, 0, 0.95, &tau, &ns) != 0, "signed 0.95 reached");
    /* a run that only ever goes to -S* never recovers */
    for (int k = 0; k < t.n; k++)
        t.rows[k].overlap = -fabs(t.rows[k].overlap);
    CHECK(obs_recovery(&t, 0, 0.05, &tau, &ns) != 0, "an anti-aligned run counted as recovered");
    CHECK(obs_recovery(&t, 1, 0.5, &tau, &ns) == 0, "even: |m| of the anti-aligned run");
    traj_free(&t);
    /* the parity of each activation family (docs/model.md §8) */
    static const struct {
        const char *act;
        int even;
    } acts[] = {{"h1", 0},
                {"h2", 1},
                {"h3", 0},
                {"h4", 1},
                {"h6", 1},
                {"hermite(0.5,0,1,0,0.2)", 1},
                {"hermite(0,0,1,1)", 0},
                {"hermite(0,0.1,1)", 0},
                {"relu", 0},
                {"tanh", 0},
                {"erf", 0},
                {"softmax(1)", 0}};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        struct act a;
        char err[256];
        CHECK(params_parse_act(acts[i].act, &a, err, sizeof err) == 0, "%s", err);
        CHECK(params_act_sign_symmetric(&a) == acts[i].even, "%s: sign_symmetric %d", acts[i].act,
              params_act_sign_symmetric(&a));
    }
}

static double direct_tau_wr(sqlite3 *db, const char *task, const char *solver, double th,
                            int *found)
{
    /* the first record with m >= th (h1 of test_view: the sign counts), and the one before it,
     * read row by row */
    sqlite3_stmt *q;
    sqlite3_prepare_v2(
        db, "SELECT tau, overlap FROM trajectory WHERE task_id = ?1 AND solver = ?2 ORDER BY k", -1,
        &q, NULL);
    sqlite3_bind_text(q, 1, task, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, solver, -1, SQLITE_STATIC);
    double tp = 0, mp = -1, r = -1;
    int k = 0;
    *found = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        double tau = sqlite3_column_double(q, 0), m = sqlite3_column_double(q, 1);
        if (sqlite3_column_type(q, 1) != SQLITE_NULL && m >= th) {
            r = k == 0 ? tau : tp + (th - mp) * (tau - tp) / (m - mp);
            *found = 1;
            break;
        }
        tp = tau;
        mp = m;
        k++;
    }
    sqlite3_finalize(q);
    return r;
}

static void test_view(void)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/view.db", workdir);
    unlink(path);
    struct store *s = store_open(path, err, sizeof err);
    CHECK(s != NULL, "%s", err);
    if (!s)
        return;
    /* three real points (tied h1 recovers by drift), each with sgd and flow */
    struct params pts[3];
    struct task tasks[3];
    for (int i = 0; i < 3; i++) {
        params_default(&pts[i]);
        pts[i].d = 24 + 8 * i;
        pts[i].tau_end = 0.6;
        pts[i].records = 7;
        pts[i].recovery_threshold = 0.3;
        task_make(&pts[i], &tasks[i]);
    }
    struct store_provenance pv = {"t", "t", "h", "c", "b", "m", 1, NULL};
    CHECK(store_add_sweep(s, "v", "text", &pv, pts, tasks, 3, err, sizeof err) > 0, "%s", err);
    for (int i = 0; i < 3; i++) {
        struct task_result r;
        enum task_status st;
        CHECK(worker_run(&pts[i], &r, NULL, NULL) == 0, "worker");
        CHECK(store_put_result(s, tasks[i].id, &r, NULL, &st, err, sizeof err) == 0, "%s", err);
        worker_result_free(&r);
    }
    store_commit(s);
    sqlite3 *db = store_db(s);
    int compared = 0, bad = 0;
    const double ths[] = {0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.99};
    for (int i = 0; i < 3; i++) {
        char hex[17];
        task_id_hex(tasks[i].id, hex);
        for (int sv = 0; sv < 2; sv++) {
            const char *solver = sv ? "flow" : "sgd";
            for (size_t j = 0; j < sizeof ths / sizeof ths[0]; j++) {
                int found, rows = 0;
                double want = direct_tau_wr(db, hex, solver, ths[j], &found), got = -1;
                sqlite3_stmt *q;
                sqlite3_prepare_v2(
                    db,
                    "SELECT crossing(?3, tau_prev, tau, m_prev, m), tau_prev, tau FROM recovery_segments"
                    " WHERE task_id = ?1 AND solver = ?2 AND m >= ?3 AND m_max_before < ?3",
                    -1, &q, NULL);
                sqlite3_bind_text(q, 1, hex, -1, SQLITE_STATIC);
                sqlite3_bind_text(q, 2, solver, -1, SQLITE_STATIC);
                sqlite3_bind_double(q, 3, ths[j]);
                while (sqlite3_step(q) == SQLITE_ROW) {
                    got = sqlite3_column_double(q, 0);
                    /* between the two records around the crossing */
                    if (sqlite3_column_type(q, 1) != SQLITE_NULL &&
                        !(got >= sqlite3_column_double(q, 1) && got <= sqlite3_column_double(q, 2)))
                        bad++;
                    rows++;
                }
                sqlite3_finalize(q);
                CHECK(rows == found, "%s %s th %g: %d rows from the view, found %d", hex, solver,
                      ths[j], rows, found);
                if (found) {
                    CHECK_CLOSE(got, want, 1e-14, 1e-12, "view against the direct computation");
                    compared++;
                }
            }
            /* the stored summary is the view at the point's own threshold */
            sqlite3_stmt *q;
            sqlite3_prepare_v2(
                db,
                "SELECT tau_wr, typeof(samples_wr) FROM summary WHERE task_id = ?1 AND solver = ?2",
                -1, &q, NULL);
            sqlite3_bind_text(q, 1, hex, -1, SQLITE_STATIC);
            sqlite3_bind_text(q, 2, solver, -1, SQLITE_STATIC);
            int found;
            double want = direct_tau_wr(db, hex, solver, 0.3, &found);
            int have = sqlite3_step(q) == SQLITE_ROW;
            CHECK(have, "%s %s: no summary row", hex, solver);
            if (have && found) {
                CHECK_CLOSE(sqlite3_column_double(q, 0), want, 1e-14, 1e-12, "summary.tau_wr");
                CHECK(!strcmp((const char *)sqlite3_column_text(q, 1), "integer"),
                      "samples_wr not INTEGER");
            } else if (have) { /* never reached: both NULL */
                CHECK(sqlite3_column_type(q, 0) == SQLITE_NULL &&
                          !strcmp((const char *)sqlite3_column_text(q, 1), "null"),
                      "%s %s: summary has a recovery the trajectory does not show", hex, solver);
            }
            sqlite3_finalize(q);
        }
    }
    CHECK(compared >= 12 && bad == 0, "%d thresholds compared, %d outside their records", compared,
          bad);
    for (int i = 0; i < 3; i++)
        task_free(&tasks[i]);
    store_close(&s);
}

/* The version-1 schema as aimsweep wrote it before schema 2 (store.c at commit bda7db1). */
static const char v1_schema[] =
    "CREATE TABLE sweeps( sweep_id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, created_at TEXT NOT NULL,"
    " version TEXT, git_commit TEXT, host TEXT, compiler TEXT, blas TEXT, mpi TEXT, ranks INTEGER);"
    "CREATE TABLE tasks( task_id TEXT PRIMARY KEY, sweep_id INTEGER NOT NULL REFERENCES sweeps(sweep_id),"
    " decomposition TEXT NOT NULL, activation TEXT NOT NULL, d INTEGER NOT NULL, lr REAL NOT NULL,"
    " init_scale REAL NOT NULL, tokens INTEGER NOT NULL, teacher TEXT NOT NULL, width REAL NOT NULL,"
    " weight_decay REAL NOT NULL, order_m INTEGER NOT NULL, closure TEXT NOT NULL, tau_end REAL NOT NULL,"
    " seed INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN"
    "  ('pending','running','done','diverged','ode_diverged','error','interrupted')),"
    " attempts INTEGER NOT NULL DEFAULT 0, rank INTEGER, host TEXT, started_at TEXT, finished_at TEXT,"
    " wall_s REAL, error TEXT, info_exponent INTEGER, records INTEGER NOT NULL, log_grid INTEGER NOT NULL,"
    " recovery_threshold REAL NOT NULL, ode_noise INTEGER NOT NULL, solvers TEXT NOT NULL, cost REAL, params TEXT NOT NULL);"
    "CREATE TABLE sweep_tasks(sweep_id INTEGER NOT NULL REFERENCES sweeps(sweep_id),"
    " task_id TEXT NOT NULL REFERENCES tasks(task_id), PRIMARY KEY (sweep_id, task_id)) WITHOUT ROWID;"
    "CREATE TABLE trajectory( task_id TEXT NOT NULL REFERENCES tasks(task_id), solver TEXT NOT NULL, k INTEGER NOT NULL,"
    " tau REAL, samples REAL, omega11 REAL, psi11 REAL, omega12 REAL, trace REAL, overlap REAL, loss REAL);"
    "CREATE TABLE summary( task_id TEXT NOT NULL REFERENCES tasks(task_id), solver TEXT NOT NULL, tau_wr REAL, samples_wr REAL,"
    " final_overlap REAL, final_loss REAL, max_gap_to_sgd REAL, status TEXT NOT NULL, wall_s REAL,"
    " diverged_at_samples REAL, error TEXT);"
    "CREATE UNIQUE INDEX trajectory_row ON trajectory(task_id, solver, k);"
    "CREATE UNIQUE INDEX summary_row ON summary(task_id, solver);"
    "CREATE VIEW results AS SELECT t.task_id, t.d, s.solver, s.tau_wr, s.samples_wr"
    " FROM tasks t JOIN summary s ON s.task_id = t.task_id;"
    "PRAGMA user_version=1;";

static void test_migration(void)
{
    char path[4096], err[1024], sql[16384], canon17[2048], hex[17];
    snprintf(path, sizeof path, "%s/v1.db", workdir);
    unlink(path);
    sqlite3 *db;
    sqlite3_open(path, &db);
    CHECK(sqlite3_exec(db, v1_schema, NULL, NULL, NULL) == SQLITE_OK, "v1 schema: %s",
          sqlite3_errmsg(db));
    /* a point written the old way: %.17g numbers, samples as tau d^2/eta in REAL */
    struct params p;
    params_default(&p);
    p.lr = 0.1;
    p.init_scale = 0.3;
    p.d = 20;
    size_t off = 0;
    for (int i = 0; params_keys[i]; i++) {
        char v[256];
        if (!strcmp(params_keys[i], "precision")) /* a key of schema 4 */
            continue;
        params_get(&p, params_keys[i], v, sizeof v);
        if (!strcmp(params_keys[i], "lr") || !strcmp(params_keys[i], "init_scale") ||
            !strcmp(params_keys[i], "width") || !strcmp(params_keys[i], "tau_end") ||
            !strcmp(params_keys[i], "recovery_threshold") ||
            !strcmp(params_keys[i], "weight_decay"))
            snprintf(v, sizeof v, "%.17g", strtod(v, NULL));
        if (!strcmp(params_keys[i], "teacher"))
            snprintf(v, sizeof v, "wishart(%.17g)", p.teacher.arg);
        off += (size_t)snprintf(canon17 + off, sizeof canon17 - off, "%s%s=%s", i ? ";" : "",
                                params_keys[i], v);
    }
    CHECK(strstr(canon17, "lr=0.10000000000000001") != NULL, "old text: %s", canon17);
    task_id_hex(params_task_id(&p), hex);
    snprintf(
        sql, sizeof sql,
        "INSERT INTO sweeps VALUES (1, 'v1', 'x', 'now', '', '', '', '', '', '', 1);"
        "INSERT INTO tasks(task_id, sweep_id, decomposition, activation, d, lr, init_scale, tokens, teacher, width,"
        " weight_decay, order_m, closure, tau_end, seed, status, records, log_grid, recovery_threshold, ode_noise,"
        " solvers, params) VALUES ('%s', 1, 'tied', 'h1', 20, 0.1, 0.3, 2, 'wishart(0.5)', 1, 0, 4, 'auto', 0.5, 1,"
        " 'done', 4, 0, 0.5, 0, 'sgd', '%s');"
        "INSERT INTO trajectory VALUES ('%s', 'sgd', 0, 0, 0, 1, 1, 0, 0, 0.1, 1),"
        " ('%s', 'sgd', 1, 0.1, 400.00000000000006, 1, 1, 0, 0, 0.3, 1),"
        " ('%s', 'sgd', 2, 0.2, 800.0000000000001, 1, 1, 0, 0, 0.7, 1);"
        "INSERT INTO summary VALUES ('%s', 'sgd', 0.2, 800.0000000000001, 0.7, 1, NULL, 'done', 1, NULL, NULL);",
        hex, canon17, hex, hex, hex, hex);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "v1 rows: %s", sqlite3_errmsg(db));
    sqlite3_close(db);

    struct store *s = store_open(path, err, sizeof err);
    CHECK(s != NULL, "open v1: %s", err);
    if (!s)
        return;
    db = store_db(s);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(
        db,
        "SELECT (SELECT user_version FROM pragma_user_version), t.params, t.task_id, s.tau_wr,"
        " typeof(s.samples_wr), s.samples_wr,"
        " (SELECT group_concat(typeof(samples) || samples) FROM trajectory), (SELECT count(*) FROM results)"
        " FROM tasks t JOIN summary s USING (task_id)",
        -1, &q, NULL);
    CHECK(sqlite3_step(q) == SQLITE_ROW, "migrated rows: %s", sqlite3_errmsg(db));
    CHECK(sqlite3_column_int(q, 0) == STORE_SCHEMA_VERSION, "user_version %d",
          sqlite3_column_int(q, 0));
    char want[4096];
    params_canonical(&p, want, sizeof want);
    CHECK(!strcmp((const char *)sqlite3_column_text(q, 1), want), "params %s",
          sqlite3_column_text(q, 1));
    CHECK(!strcmp((const char *)sqlite3_column_text(q, 2), hex), "task id changed");
    /* 0.5 is reached between tau 0.1 (0.3) and 0.2 (0.7): tau_wr = 0.15, n_wr = 600 */
    CHECK_CLOSE(sqlite3_column_double(q, 3), 0.15, 1e-15, 0, "migrated tau_wr");
    CHECK(!strcmp((const char *)sqlite3_column_text(q, 4), "integer") &&
              sqlite3_column_int(q, 5) == 600,
          "samples_wr %s %d", sqlite3_column_text(q, 4), sqlite3_column_int(q, 5));
    CHECK(!strcmp((const char *)sqlite3_column_text(q, 6), "integer0,integer400,integer800"),
          "trajectory samples %s", sqlite3_column_text(q, 6));
    CHECK(sqlite3_column_int(q, 7) == 1, "the view results survives");
    sqlite3_finalize(q);
    /* schema 4: the task ran in double */
    sqlite3_prepare_v2(db, "SELECT precision FROM tasks", -1, &q, NULL);
    CHECK(q && sqlite3_step(q) == SQLITE_ROW &&
              !strcmp((const char *)sqlite3_column_text(q, 0), "double"),
          "migrated precision: %s", sqlite3_errmsg(db));
    sqlite3_finalize(q);
    store_close(&s);
}

int main(int argc, char **argv)
{
    srcdir = argc > 1 ? argv[1] : ".";
    workdir = argc > 2 ? argv[2] : ".";
    test_ids();
    test_ranges();
    test_zip_expr();
    test_override();
    test_override_seeds();
    test_bad_points_message();
    test_recovery();
    test_view();
    test_migration();
    return check_done("test_grid");
}
