/*
 * test_harness.c: the harness modules without MPI: sweep files, grid expansion, task text,
 * result bytes and the results database.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/task_status.h"
#include "aimsweep/harness/grid.h"
#include "aimsweep/harness/spec.h"
#include "aimsweep/harness/store.h"
#include "aimsweep/harness/task.h"
#include "aimsweep/model/model.h"
#include "aimsweep/model/phi.h"
#include "aimsweep/run/result.h"
#include "aimsweep/theory/ode.h"
#include "check.h"

static const char good[] = "name: t\n"
                           "grid:\n"
                           "  decomposition: [direct, tied]\n"
                           "  d: [10, 12, 14]\n"
                           "  init-scale: [0.5]\n"
                           "fixed:\n"
                           "  tau_end: 0.02\n"
                           "  records: 3\n"
                           "  lr: 5e-2\n"
                           "seeds: [3, 7]\n"
                           "solvers: [sgd, flow]\n";

static struct sweep_spec *parse(const char *text, char *err, size_t n)
{
    struct sweep_spec *s = NULL;
    spec_parse("x.yaml", text, strlen(text), &s, err, n);
    return s;
}

static void test_spec_grid(void)
{
    char err[1024] = "";
    struct sweep_spec *s = parse(good, err, sizeof err);
    CHECK_TRUE(s != NULL);
    if (!s) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK_TRUE(!strcmp(s->name, "t"));
    CHECK_TRUE(s->ngrid == 4); /* decomposition, d, init_scale, seed (seed last) */
    CHECK_TRUE(!strcmp(s->grid[3].key, "seed"));
    CHECK_TRUE(!strcmp(s->grid[2].key, "init_scale"));
    CHECK_TRUE(grid_size(s) == 12);
    struct params *pts = NULL;
    size_t n = 0;
    CHECK_TRUE(grid_expand(s, &pts, &n, err, sizeof err) == 0);
    CHECK_TRUE(n == 12);
    /* last axis fastest: point 0 = direct, d 10, seed 3; point 1 = seed 7; point 2 = d 12 */
    CHECK_TRUE(pts[0].decomposition == DECOMP_DIRECT && pts[0].d == 10 && pts[0].seed == 3);
    CHECK_TRUE(pts[1].seed == 7 && pts[2].d == 12 && pts[6].decomposition == DECOMP_TIED);
    CHECK_TRUE(pts[5].lr == 0.05 && pts[5].records == 3 && pts[5].init_scale == 0.5);
    CHECK_TRUE(pts[5].solvers == (SOLVER_SGD | SOLVER_FLOW));
    /* every point a distinct task; canonical text rebuilds the same point and id */
    for (size_t i = 0; i < n; i++) {
        struct task t;
        struct params q;
        CHECK_TRUE(task_make(&pts[i], &t) == 0);
        CHECK_TRUE(task_parse(t.text, &q, err, sizeof err) == 0);
        CHECK_TRUE(params_task_id(&q) == t.id);
        CHECK_TRUE(t.cost > 0);
        for (size_t j = 0; j < i; j++)
            CHECK_TRUE(params_task_id(&pts[j]) != t.id);
        char hex[17];
        uint64_t back;
        task_id_hex(t.id, hex);
        CHECK_TRUE(strlen(hex) == 16 && task_id_parse(hex, &back) == 0 && back == t.id);
        task_free(&t);
    }
    /* cost grows with d and with tau_end/lr */
    struct params a = pts[0], b = pts[0];
    b.d *= 2;
    CHECK_TRUE(task_cost(&b) > 4 * task_cost(&a));
    b = a;
    b.lr /= 2;
    CHECK_TRUE(task_cost(&b) > task_cost(&a));
    free(pts);
    spec_destroy(&s);
    CHECK_TRUE(s == NULL);
    spec_destroy(&s);

    /* same point written two ways: one task id */
    struct sweep_spec *s1 = parse("fixed: {lr: 0.050, d: 12}\n", err, sizeof err);
    struct sweep_spec *s2 = parse("fixed: {lr: 5e-2, d: 12}\n", err, sizeof err);
    CHECK_TRUE(s1 && s2);
    if (s1 && s2) {
        struct params *p1, *p2;
        size_t n1, n2;
        CHECK_TRUE(grid_expand(s1, &p1, &n1, err, sizeof err) == 0 && n1 == 1);
        CHECK_TRUE(grid_expand(s2, &p2, &n2, err, sizeof err) == 0 && n2 == 1);
        CHECK_TRUE(params_task_id(p1) == params_task_id(p2));
        free(p1);
        free(p2);
    }
    spec_destroy(&s1);
    spec_destroy(&s2);

    /* an error names file, line and key: a value out of range when the file is read, a
     * combination out of range when the grid is expanded */
    s = parse("grid:\n  d: [10, 20]\n  lr: [0.1,\n    -1]\n", err, sizeof err);
    CHECK_TRUE(s == NULL && strstr(err, "x.yaml:4: key 'lr'") != NULL &&
               strstr(err, "(0, 1000]") != NULL);
    s = parse("grid:\n  d: [10, 20]\n  teacher: [goe,\n    wishart(0.03)]\n", err, sizeof err);
    CHECK_TRUE(s != NULL);
    if (s) {
        struct params *bad = NULL;
        CHECK_TRUE(grid_expand(s, &bad, &n, err, sizeof err) != 0 && bad == NULL);
        CHECK_TRUE(strstr(err, "x.yaml:1: key 'grid'") != NULL &&
                   strstr(err, "d=10, teacher=wishart(0.03)") != NULL);
        spec_destroy(&s);
    }
    s = parse("grid:\n  d: [10, 20]\n  lr: [0.1, 0.2]\n  d: [5]\n", err, sizeof err);
    CHECK_TRUE(s == NULL && strstr(err, "x.yaml:4: key 'd'") != NULL);
}

static void fake_result(struct task_result *r, int n, double base)
{
    memset(r, 0, sizeof *r);
    r->nsolvers = 2;
    r->wall_s = 1.5;
    for (int s = 0; s < 2; s++) {
        traj_init(&r->traj[s], s ? SOLVER_FLOW : SOLVER_SGD, n);
        for (int k = 0; k < n; k++) {
            struct obs_row o = {0.1 * k, 10.0 * k, base + k,      2,      3,
                                4,       0.1 * k,  1.0 / (k + 1), 0.5 * k};
            traj_push(&r->traj[s], &o);
        }
        r->traj[s].status = RUN_OK;
        r->traj[s].diverged_at_samples = -1;
        r->sum[s] = (struct solver_summary){r->traj[s].solver, s ? 0.2 : -1, s ? 20 : -1, 0.5, 0.25,
                                            s ? 0.01 : -1,     RUN_OK,       0.125 * s};
    }
    r->traj[1].status = RUN_DIVERGED;
    snprintf(r->traj[1].error, sizeof r->traj[1].error, "exploded");
}

static void test_result_bytes(void)
{
    struct task_result r, back;
    unsigned char *buf;
    size_t len;
    char terr[256];
    fake_result(&r, 7, 1.0);
    CHECK_TRUE(result_pack(&r, NULL, &buf, &len) == 0);
    CHECK_TRUE(result_unpack(buf, len, &back, terr, sizeof terr) == 0);
    CHECK_TRUE(back.nsolvers == 2 && back.traj[0].n == 7 && back.traj[1].rows[6].omega11 == 7.0);
    CHECK_TRUE(back.traj[1].status == RUN_DIVERGED && !strcmp(back.traj[1].error, "exploded"));
    CHECK_TRUE(back.sum[1].max_gap_to_sgd == 0.01 && back.wall_s == 1.5 && terr[0] == 0);
    CHECK_TRUE(back.sum[1].mu_star == 0.125 &&
               back.traj[1].rows[6].mu == 3.0); /* docs/model.md §10's means */
    worker_result_free(&back);
    /* every truncation and a trailing byte are refused */
    int refused = 1;
    for (size_t cut = 0; cut < len; cut++)
        if (result_unpack(buf, cut, &back, terr, sizeof terr) == 0) {
            refused = 0;
            worker_result_free(&back);
        }
    CHECK_TRUE(refused);
    unsigned char *big = malloc(len + 1);
    memcpy(big, buf, len);
    big[len] = 0;
    CHECK_TRUE(result_unpack(big, len + 1, &back, terr, sizeof terr) != 0);
    free(big);
    free(buf);
    CHECK_TRUE(result_pack(NULL, "bad task", &buf, &len) == 0);
    CHECK_TRUE(result_unpack(buf, len, &back, terr, sizeof terr) == 0 && back.nsolvers == 0 &&
               !strcmp(terr, "bad task"));
    free(buf);
    worker_result_free(&r);
}

static int count(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *q;
    int n = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return n;
}

/* The status words, spelled out here independently of task_status.c: a word misspelt or moved
 * there breaks the round trip or the exact SQL list (and with it the CHECK of every new
 * database), and a status dropped from a set changes the lists below. */
static void test_task_status(void)
{
    static const char *const words[] = {"new",   "pending",     "running",
                                        "done",  "diverged",    "ode_diverged",
                                        "error", "interrupted", "timeout"};
    CHECK_TRUE(sizeof words / sizeof *words == TASK_STATUS_COUNT);
    for (int i = 0; i < TASK_STATUS_COUNT; i++) {
        enum task_status st = TASK_STATUS_COUNT;
        CHECK_TRUE(!strcmp(task_status_name((enum task_status)i), words[i]));
        CHECK_TRUE(task_status_parse(words[i], &st) == 0 && st == (enum task_status)i);
    }
    enum task_status st = TASK_DONE;
    CHECK_TRUE(task_status_parse("finished", &st) == -1 && st == TASK_DONE);
    CHECK_TRUE(!strcmp(task_status_name(TASK_STATUS_COUNT), "?"));
    char buf[128];
    CHECK_TRUE(
        task_status_sql_list(TASK_STATUS_STORED, buf, sizeof buf) == 0 &&
        !strcmp(
            buf,
            "'pending','running','done','diverged','ode_diverged','error','interrupted','timeout'"));
    CHECK_TRUE(task_status_sql_list(TASK_STATUS_TO_RUN, buf, sizeof buf) == 0 &&
               !strcmp(buf, "'pending','running','interrupted'"));
    CHECK_TRUE(task_status_sql_list(TASK_STATUS_FINISHED, buf, sizeof buf) == 0 &&
               !strcmp(buf, "'done','diverged','ode_diverged','error','timeout'"));
    CHECK_TRUE(task_status_sql_list(TASK_STATUS_STORED, buf, 20) == -1);
    /* a solver's outcome maps onto the same words */
    CHECK_TRUE(!strcmp(run_status_name(RUN_OK), "done") &&
               !strcmp(run_status_name(RUN_ODE_DIVERGED), "ode_diverged") &&
               !strcmp(run_status_name(RUN_INTERRUPTED), "interrupted") &&
               !strcmp(run_status_name(RUN_ERROR), "error"));
}

static void test_store(const char *dir)
{
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/test_harness.db", dir);
    unlink(path);
    struct sweep_spec *s = parse(good, err, sizeof err);
    struct params *pts = NULL;
    size_t n = 0;
    CHECK_TRUE(s && grid_expand(s, &pts, &n, err, sizeof err) == 0);
    struct task *tasks = calloc(n, sizeof *tasks);
    for (size_t i = 0; i < n; i++)
        task_make(&pts[i], &tasks[i]);
    struct store_provenance pv = {"v", "c", "h", "cc", "blas", "mpi", 1, "avx512"};
    struct store *st = store_open(path, err, sizeof err);
    CHECK_TRUE(st != NULL);
    if (!st) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK_TRUE(count(store_db(st), "PRAGMA user_version") == STORE_SCHEMA_VERSION);
    CHECK_TRUE(store_add_sweep(st, s->name, s->text, &pv, pts, tasks, n, err, sizeof err) == 1);
    /* a second run of an overlapping sweep adds only the new tasks */
    CHECK_TRUE(store_add_sweep(st, s->name, s->text, &pv, pts, tasks, n / 2, err, sizeof err) == 2);
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM tasks") == (int)n);
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM sweep_tasks") == (int)(n + n / 2));
    enum task_status *status = calloc(n, sizeof *status);
    int *attempts = calloc(n, sizeof *attempts);
    CHECK_TRUE(store_task_status(st, tasks, n, status, attempts) == 0 &&
               status[0] == TASK_PENDING && attempts[0] == 0);
    CHECK_TRUE(task_status_todo(TASK_PENDING, 0) && task_status_todo(TASK_RUNNING, 0) &&
               task_status_todo(TASK_INTERRUPTED, 0) && task_status_todo(TASK_NEW, 0));
    CHECK_TRUE(!task_status_todo(TASK_DONE, 0) && !task_status_todo(TASK_DIVERGED, 0) &&
               !task_status_todo(TASK_ERROR, 0));
    CHECK_TRUE(task_status_todo(TASK_ERROR, 1) && !task_status_todo(TASK_ODE_DIVERGED, 1));
    /* the CHECK constraint derived from the enum refuses a word it does not know */
    CHECK_TRUE(sqlite3_exec(store_db(st), "UPDATE tasks SET status = 'finished'", NULL, NULL,
                            NULL) == SQLITE_CONSTRAINT_CHECK);
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM tasks WHERE status = 'pending'") ==
               (int)n);

    struct task_result r;
    enum task_status out;
    fake_result(&r, 5, 1.0);
    CHECK_TRUE(store_begin(st) == 0 && store_mark_running(st, tasks[0].id, 3, "node", "avx2") == 0);
    CHECK_TRUE(store_put_result(st, tasks[0].id, &r, NULL, &out, err, sizeof err) == 0 &&
               out == TASK_DIVERGED);
    /* the same task again: rows replaced, never duplicated */
    CHECK_TRUE(store_put_result(st, tasks[0].id, &r, NULL, &out, err, sizeof err) == 0);
    CHECK_TRUE(store_commit(st) == 0);
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM trajectory") == 10);
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM summary") == 2);
    CHECK_TRUE(count(store_db(st),
                     "SELECT count(*) FROM summary WHERE tau_wr IS NULL AND solver = 'sgd'") == 1);
    CHECK_TRUE(count(store_db(st), "SELECT attempts FROM tasks WHERE status = 'diverged'") ==
               0); /* deaths only */
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM results") == 2);
    r.traj[1].status = RUN_OK;
    CHECK_TRUE(store_put_result(st, tasks[1].id, &r, NULL, &out, err, sizeof err) == 0 &&
               out == TASK_DONE);
    r.traj[0].status = RUN_INTERRUPTED;
    CHECK_TRUE(store_put_result(st, tasks[1].id, &r, NULL, &out, err, sizeof err) == 0 &&
               out == TASK_INTERRUPTED);
    CHECK_TRUE(store_put_result(st, tasks[2].id, NULL, "cannot parse", &out, err, sizeof err) ==
                   0 &&
               out == TASK_ERROR);
    CHECK_TRUE(store_mark_interrupted(st, tasks[3].id) == 0);
    /* handed out, given back unstarted: pending again, the attempt not counted */
    CHECK_TRUE(store_mark_running(st, tasks[5].id, 1, "node", NULL) == 0 &&
               store_mark_pending(st, tasks[5].id) == 0);
    CHECK_TRUE(
        count(
            store_db(st),
            "SELECT count(*) FROM tasks WHERE status = 'pending' AND attempts = 0 AND rank IS NULL") ==
        (int)n - 4);
    CHECK_TRUE(store_commit(st) == 0);
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM trajectory") ==
               10); /* interrupted keeps no rows */
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM tasks WHERE status = 'interrupted'") == 2);
    CHECK_TRUE(store_mark_error(st, tasks[4].id, "crashed") == 0 && store_commit(st) == 0);
    CHECK_TRUE(store_task_status(st, tasks, n, status, attempts) == 0 && status[4] == TASK_ERROR);
    CHECK_TRUE(status[0] == TASK_DIVERGED && attempts[0] == 0 && status[1] == TASK_INTERRUPTED);
    /* a write SQLite refuses (here a trigger on the task's final update) fails with what failed
     * and SQLite's message (no C source text), and leaves no binding behind: the failed write had bound an
     * error text, the next one has none, and its row must show none. A step whose failure went
     * unnoticed returns 0; a binding left over shows as error = 'first'. */
    CHECK_TRUE(sqlite3_exec(store_db(st),
                            "CREATE TEMP TRIGGER no_finish BEFORE UPDATE OF finished_at ON tasks"
                            " BEGIN SELECT RAISE(ABORT, 'finish refused'); END",
                            NULL, NULL, NULL) == SQLITE_OK);
    CHECK_TRUE(store_put_result(st, tasks[6].id, NULL, "first", &out, err, sizeof err) == -1 &&
               strstr(err, "cannot store the result: finish refused") && !strstr(err, "sqlite3_") &&
               strstr(store_errmsg(st), "finish refused"));
    store_rollback(st);
    CHECK_TRUE(sqlite3_exec(store_db(st), "DROP TRIGGER no_finish", NULL, NULL, NULL) == SQLITE_OK);
    r.traj[0].status = r.traj[1].status = RUN_OK;
    CHECK_TRUE(store_put_result(st, tasks[7].id, &r, NULL, &out, err, sizeof err) == 0 &&
               out == TASK_DONE && store_commit(st) == 0);
    char sql[160], hex7[17];
    task_id_hex(tasks[7].id, hex7);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM tasks WHERE task_id = '%s' AND error IS NULL",
             hex7);
    CHECK_TRUE(count(store_db(st), sql) == 1);
    /* a death counts an attempt; a recorded stop marks running tasks interrupted at once */
    CHECK_TRUE(store_note_death(st, tasks[0].id) == 0 && store_commit(st) == 0);
    CHECK_TRUE(count(store_db(st), "SELECT attempts FROM tasks WHERE status = 'diverged'") == 1);
    int ninter = count(store_db(st), "SELECT count(*) FROM tasks WHERE status = 'interrupted'");
    CHECK_TRUE(store_begin(st) == 0 &&
               store_mark_running(st, tasks[8].id, 2, "node", "portable") == 0 &&
               store_commit(st) == 0);
    CHECK_TRUE(store_note_stop(st, 15, "pid 1 (test)") == 0);
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM tasks WHERE status = 'running'") == 0);
    CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM tasks WHERE status = 'interrupted'") ==
               ninter + 1);
    /* a second writer is refused while the first holds the file (after waiting for it a while) */
    store_lock_wait_s = 0.5;
    struct store *st2 = store_open(path, err, sizeof err);
    CHECK_TRUE(st2 == NULL && strstr(err, "another aimsweep run"));
    store_close(&st2);
    store_close(&st);
    CHECK_TRUE(st == NULL);
    worker_result_free(&r);

    /* read-only connection refuses writes */
    st = store_open_readonly(path, err, sizeof err);
    CHECK_TRUE(st != NULL);
    if (st) {
        CHECK_TRUE(sqlite3_exec(store_db(st), "DELETE FROM tasks", NULL, NULL, NULL) != SQLITE_OK);
        CHECK_TRUE(count(store_db(st), "SELECT count(*) FROM tasks") == (int)n);
        store_close(&st);
    }
    /* a file that is not a database is refused and left as it was */
    snprintf(path, sizeof path, "%s/test_harness.txt", dir);
    FILE *f = fopen(path, "w");
    const char text[] =
        "precious notes, not a database, long enough to look like a header......................"
        "...............................................................................\n";
    fputs(text, f);
    fclose(f);
    CHECK_TRUE(store_open(path, err, sizeof err) == NULL && strstr(err, "not an SQLite database"));
    CHECK_TRUE(store_open_readonly(path, err, sizeof err) == NULL);
    f = fopen(path, "r");
    char back[512] = "";
    size_t got = fread(back, 1, sizeof back - 1, f);
    fclose(f);
    CHECK_TRUE(got == strlen(text) && !memcmp(back, text, got));
    /* an SQLite file of something else is refused */
    snprintf(path, sizeof path, "%s/test_harness_other.db", dir);
    unlink(path);
    sqlite3 *db;
    sqlite3_open(path, &db);
    sqlite3_exec(db, "CREATE TABLE mine(x); INSERT INTO mine VALUES (42);", NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK_TRUE(store_open(path, err, sizeof err) == NULL &&
               strstr(err, "not an aimsweep results database"));

    for (size_t i = 0; i < n; i++)
        task_free(&tasks[i]);
    free(tasks);
    free(status);
    free(attempts);
    free(pts);
    spec_destroy(&s);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of one population-loss evaluation: the mean over at least 0.15 s of them, at
 * eight points of the kind a run visits. */
static double phi_seconds(const struct params *p)
{
    struct phi_val v;
    int n = 0;
    double t0 = cpu_s();
    while (cpu_s() - t0 < 0.15 || n < 3) {
        phi_eval(&p->activation, p->tokens, 0.5 + 0.05 * (n % 8), 0.3, 0.2 + 0.02 * (n % 8), &v);
        n++;
    }
    return (cpu_s() - t0) / n;
}

/* The cost model's share of the population loss (task.c) against the loss's own evaluation
 * times measured here, as ratios to softmax with T = 3 tokens (the machine's speed cancels):
 * T = 4 (the tensor rule on fewer nodes) and T = 5 (Monte Carlo) within a factor 2 (measured on
 * the project's machine: 0.66 and 3.1, the model 0.59 and 2.85); softmax with T = 2 and tanh
 * (Mehler's series) below 1/20 in both (measured 0.001 to 0.05 by the point and beta, the model
 * 0.004 and 0.008). And a softmax T = 3 flow task must cost more than 10 times its T = 2 twin
 * (the model 21 times at d = 20; measured: 3.5 s of CPU against 0.02 s). Planted errors: the
 * model without the loss's share (task_phi_flops 0) gives NaN for the ratios and 1 for the task
 * ratio (5 checks fail); the tensor rule's points counted as n^T instead of n^(2T) (343 + 216
 * at T = 3, 256 + 81 at T = 4) gives T = 4 and T = 5 ratios of 0.80 and 840 (the second fails)
 * and a task ratio of 1.07 (fails). */
static void test_cost_phi(void)
{
    struct params t3;
    char err[256];
    params_default(&t3);
    t3.d = 20;
    t3.tokens = 3;
    t3.solvers = SOLVER_FLOW;
    CHECK(params_parse_act("softmax(1)", &t3.activation, err, sizeof err) == 0, "%s", err);
    struct params t2 = t3, t4 = t3, t5 = t3, th = t3;
    t2.tokens = th.tokens = 2;
    t4.tokens = 4;
    t5.tokens = 5;
    CHECK(params_parse_act("tanh", &th.activation, err, sizeof err) == 0, "%s", err);
    double m3 = phi_seconds(&t3), c3 = task_phi_flops(&t3);
    const struct params *other[4] = {&t4, &t5, &t2, &th};
    const char *name[4] = {"softmax T = 4", "softmax T = 5", "softmax T = 2", "tanh"};
    for (int k = 0; k < 4; k++) {
        double mr = phi_seconds(other[k]) / m3, cr = task_phi_flops(other[k]) / c3;
        printf("cost of one loss evaluation, %s against softmax T = 3: measured %.3g, model %.3g\n",
               name[k], mr, cr);
        if (k < 2)
            CHECK(cr > mr / 2 && cr < mr * 2, "%s: model ratio %.3g, measured %.3g", name[k], cr,
                  mr);
        else
            CHECK(cr < 0.05 && mr < 0.05, "%s: model ratio %.3g, measured %.3g, both < 1/20",
                  name[k], cr, mr);
    }
    double r = task_cost(&t3) / task_cost(&t2);
    CHECK(r > 10, "softmax flow task, T = 3 against T = 2: cost ratio %.3g, expected > 10", r);
    /* softmax(beta): the flow's and the ODE's cost against beta = 1 within a factor 2 of the
     * CPU seconds of `single` measured on the project's machine (d = 20, tau_end 0.1, records
     * 5; task.c): ode T = 3 2.5 and 47.9 at beta = 5 and 20, T = 4 3.6 and 51.0; flow T = 3
     * 2.7 and 25.1, T = 4 3.3 and 37.0. Planted: the model without beta (the factor 1) fails
     * all eight. */
    static const struct {
        int solver, T;
        double beta, measured;
    } beta_runs[] = {{SOLVER_ODE, 3, 5, 2.5},  {SOLVER_ODE, 3, 20, 47.9},
                     {SOLVER_ODE, 4, 5, 3.6},  {SOLVER_ODE, 4, 20, 51.0},
                     {SOLVER_FLOW, 3, 5, 2.7}, {SOLVER_FLOW, 3, 20, 25.1},
                     {SOLVER_FLOW, 4, 5, 3.3}, {SOLVER_FLOW, 4, 20, 37.0}};
    for (size_t k = 0; k < sizeof beta_runs / sizeof beta_runs[0]; k++) {
        struct params b1 = t3, bb;
        b1.tokens = beta_runs[k].T;
        b1.tau_end = 0.1;
        b1.records = 5;
        b1.solvers = (unsigned)beta_runs[k].solver;
        bb = b1;
        char act[32];
        snprintf(act, sizeof act, "softmax(%g)", beta_runs[k].beta);
        CHECK(params_parse_act(act, &bb.activation, err, sizeof err) == 0, "%s", err);
        double cr = task_cost_solver(&bb, beta_runs[k].solver) /
                    task_cost_solver(&b1, beta_runs[k].solver),
               mr = beta_runs[k].measured;
        CHECK(cr > mr / 2 && cr < mr * 2,
              "%s T = %d, %s against softmax(1): model %.3g, measured %.3g",
              beta_runs[k].solver == SOLVER_ODE ? "ode" : "flow", beta_runs[k].T, act, cr, mr);
    }
}

extern void openblas_set_num_threads(int n);

/* CPU seconds of model_create(p) (*model_s) and of the moment ODE's set-up from that model
 * (ode_system_create, *setup_s); the best of three. Returns -1 when either fails. */
static int setup_seconds(const struct params *p, double *model_s, double *setup_s)
{
    *model_s = *setup_s = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        char err[256];
        double t0 = cpu_s();
        struct model *m = model_create(p);
        double t1 = cpu_s();
        struct mom_sys sys;
        if (!m || ode_system_create(m, &sys, err, sizeof err)) {
            model_destroy(&m);
            return -1;
        }
        double t2 = cpu_s();
        mom_sys_destroy(&sys);
        model_destroy(&m);
        *model_s = t1 - t0 < *model_s ? t1 - t0 : *model_s;
        *setup_s = t2 - t1 < *setup_s ? t2 - t1 : *setup_s;
    }
    return 0;
}

/* The cost model's set-ups (task.c) against the times measured here, as ratios (the machine's
 * speed cancels): for tied (spectral: eigenvalues and the Gram matrix) and untied (exact word
 * traces), the ODE's set-up at d = 400 against the model's own set-up at d = 400, and the growth
 * of the set-up from d = 200 to 400, each within a factor 2.5 of the measured ratio; direct's
 * ODE has no set-up worth counting (below 0.2 of the model's, in the measurement and in the
 * model). Measured (one run, two engineers' loads) on an Intel Xeon: set-up / model 1.11 (tied),
 * 1.93 (untied); on an AMD EPYC (Zen 5): 0.73-0.96 and 2.8-3.9; the model 1.22 and 2.4, between
 * the two (it said 1.75 and 1.5 when fitted to the first alone, and the Zen 5's loaded 3.87 then
 * failed); growth 200 -> 400 of 7.9-9.0 and 6.6-7.7 (Xeon), 8.8-9.8 and 6.3-6.8 (Zen 5), the
 * model 8.0 and 8.0. The full tasks at d = 320, 640, 1280 (`aimsweep single --solvers ode`,
 * tau_end 0.3, one BLAS thread; CPU s 0.08, 0.66, 15.3 tied, 0.09, 0.67, 4.6 untied) came out at
 * estimate/measured 1.4, 1.1, 1.05 (tied) and 1.2, 1.0, 1.1 (untied); the TLB cliff of the tied
 * Gram loop at d = 1280 is not measured here (15 s). Planted errors: the set-up left out (as
 * before it was modelled) gives ratios of 0 and growths of 0/0 (4 checks fail); the set-up
 * counted as d^2 (the same coefficient) is 400 times too small at d = 400 (the two ratio checks
 * fail). */
static void test_cost_ode_setup(void)
{
    /* one BLAS thread, as aimsweep runs (main.c): the CPU time of several threads that spin
     * while the machine is loaded is not the model's one core (measured: untied's set-up / model
     * 3.8 under ctest -j2 at load 4 with OpenBLAS's own threads, 1.9 with one) */
    openblas_set_num_threads(1);
    static const enum decomp decs[3] = {DECOMP_TIED, DECOMP_UNTIED, DECOMP_DIRECT};
    for (int k = 0; k < 3; k++) {
        struct params p;
        char err[256];
        params_default(&p);
        p.decomposition = decs[k];
        p.teacher.kind = TEACHER_GOE;
        p.solvers = SOLVER_ODE;
        CHECK(params_parse_act("h2", &p.activation, err, sizeof err) == 0, "%s", err);
        struct params small = p;
        p.d = 400;
        small.d = 200;
        double model_s, setup_s, model_small, setup_small;
        if (setup_seconds(&p, &model_s, &setup_s) ||
            setup_seconds(&small, &model_small, &setup_small)) {
            CHECK(0, "%s: model or ODE set-up failed", params_decomp_name(decs[k]));
            continue;
        }
        double meas = setup_s / model_s;
        double est = task_ode_setup_flops(&p) / TASK_FLOPS_PER_S / task_cost_model(&p);
        printf("ODE set-up, %s, d = 400: model %.3g s, set-up %.3g s (CPU); set-up / model "
               "measured %.3g, model %.3g",
               params_decomp_name(decs[k]), model_s, setup_s, meas, est);
        if (decs[k] == DECOMP_DIRECT) {
            printf("\n");
            CHECK(meas < 0.2 && est < 0.2, "direct: set-up / model measured %.3g, model %.3g", meas,
                  est);
            continue;
        }
        double gm = setup_s / setup_small,
               ge = task_ode_setup_flops(&p) / task_ode_setup_flops(&small);
        printf("; growth 200 -> 400 measured %.3g, model %.3g\n", gm, ge);
        CHECK(est > meas / 2.5 && est < meas * 2.5, "%s: set-up / model: model %.3g, measured %.3g",
              params_decomp_name(decs[k]), est, meas);
        CHECK(ge > gm / 2.5 && ge < gm * 2.5, "%s: growth 200 -> 400: model %.3g, measured %.3g",
              params_decomp_name(decs[k]), ge, gm);
        /* the ODE's solver estimate holds the set-up: at d = 400 it is most of it */
        CHECK(task_cost_solver(&p, SOLVER_ODE) >
                      0.5 * task_ode_setup_flops(&p) / TASK_FLOPS_PER_S &&
                  task_cost(&p) > task_cost_model(&p) + task_ode_setup_flops(&p) / TASK_FLOPS_PER_S,
              "%s: the ODE's estimate leaves out its set-up or the model's",
              params_decomp_name(decs[k]));
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    test_cost_phi();
    test_cost_ode_setup();
    test_spec_grid();
    test_result_bytes();
    test_task_status();
    test_store(dir);
    return check_done("test_harness");
}
