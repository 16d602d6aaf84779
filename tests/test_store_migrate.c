/*
 * test_store_migrate.c: databases of schema versions 1 to 6 (tests/data/schema_v1.sql,
 * schema_v2.sql, written by the builds before the general index, schema_v3.sql, before
 * precision and the views recovery and curves, schema_v4.sql, before the operations'
 * columns, schema_v5.sql, before the signed weak recovery, and schema_v6.sql, before the signed
 * kernels' path, the signed curves and the traceless goe_mean) opened by the current store: migrated to STORE_SCHEMA_VERSION in place,
 * its rows kept, the new columns holding what the old tasks ran with (token_corr 0, centred,
 * offdiag, ...; mu = sqrt(d) trace), the sweeps' new columns (command, part, stop_signal,
 * stop_sender, stopped_at) present and NULL, the status timeout accepted by tasks' CHECK, its
 * task ids still the ids of the same points (the canonical text leaves the new keys out at their
 * defaults), and writable by a run.
 * The 5 -> 6 step (signed weak recovery, docs/model.md §8): every task gets sign_symmetric from
 * its activation; the tau_wr and samples_wr of the version-5 file's runs of odd activations (h1,
 * h3) are compared with obs_recovery (obs.c, the C side) run on the trajectory as the fixture
 * stores it, and those of the even h2 must be the stored ones, unchanged (h2 seed 3 recovers
 * -S*: |m| counts); the h3 SGD runs that version 5 counted (m ends at -0.68 and -0.70) become
 * NULL and the recovery view counts them as anti_recovered; a run whose trajectory was deleted
 * by hand before the migration (h1 seed 3, ode) gets NULL (it cannot be recomputed); a read-only
 * open of the version-5 file sees the same values through its temporary views.
 * The 6 -> 8 step (schema_v6.sql, written by the build before it): the curves view gains the
 * signed m (m_mean, m_sd, m_min, m_max), compared with the trajectory's own overlaps by SQL that
 * does not use the view, after the migration and through the temporary views of a read-only
 * open; the tasks of the earlier goe_mean teacher are renamed goe_mean_v1 in teacher and params
 * (and their text no longer parses), the others keep their text and id; the text of such a task
 * with the current goe_mean hashes to another id than the stored one; a goe_mean task whose id
 * is the current hash (a version-6 file written by a build of the new teacher) is kept.
 * Planted errors: a migration that keeps |m| leaves the h3 values (4 checks fail); one that
 * recomputes the even rows with the signed rule changes h2 seed 3 (fails); temporary views that
 * read |m| fail the read-only comparison.
 * A planted error shows: a migration that forgets a column fails the column checks; a 4 -> 5
 * step skipped for one starting version fails its sweeps and timeout checks; a canonical text
 * that names the new keys changes the ids (the id checks fail); a migration that is not
 * idempotent fails the reopen.
 */
#include <linux/magic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "aimsweep/base/params.h"
#include "aimsweep/harness/store.h"
#include "aimsweep/harness/task.h"
#include "aimsweep/model/obs.h"
#include "check.h"

static double value(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *q = NULL;
    double v = NAN;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_type(q, 0) == SQLITE_NULL ? NAN : sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    return v;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

#define EXPECT_MAX 64
struct expect {
    char task[17], solver[8], act[32];
    double tau, samples;   /* -1: never (NULL) */
    double tau5, samples5; /* as version 5 stored them (-1: NULL) */
    int has_traj;
};

static double col_or(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? -1 : sqlite3_column_double(q, i);
}

/* What version 6 must hold for each run of a version-5 file: obs_recovery with the activation's
 * parity on the stored trajectory; NULL for a run without one. */
static int expected_wr(sqlite3 *db, struct expect *ex)
{
    sqlite3_stmt *q = NULL, *r = NULL;
    int n = 0;
    sqlite3_prepare_v2(db,
                       "SELECT s.task_id, s.solver, t.activation, t.recovery_threshold, s.tau_wr,"
                       " s.samples_wr FROM summary s JOIN tasks t USING (task_id)",
                       -1, &q, NULL);
    sqlite3_prepare_v2(db,
                       "SELECT tau, samples, overlap FROM trajectory WHERE task_id = ?1 AND"
                       " solver = ?2 ORDER BY k",
                       -1, &r, NULL);
    while (sqlite3_step(q) == SQLITE_ROW && n < EXPECT_MAX) {
        struct expect *e = &ex[n++];
        snprintf(e->task, sizeof e->task, "%s", (const char *)sqlite3_column_text(q, 0));
        snprintf(e->solver, sizeof e->solver, "%s", (const char *)sqlite3_column_text(q, 1));
        snprintf(e->act, sizeof e->act, "%s", (const char *)sqlite3_column_text(q, 2));
        double th = sqlite3_column_double(q, 3);
        e->tau5 = col_or(q, 4);
        e->samples5 = col_or(q, 5);
        struct act a;
        char err[256];
        CHECK(params_parse_act(e->act, &a, err, sizeof err) == 0, "%s", err);
        struct traj t;
        traj_init(&t, SOLVER_SGD, 16);
        sqlite3_bind_text(r, 1, e->task, -1, SQLITE_STATIC);
        sqlite3_bind_text(r, 2, e->solver, -1, SQLITE_STATIC);
        while (sqlite3_step(r) == SQLITE_ROW) {
            struct obs_row row = {0};
            row.tau = sqlite3_column_double(r, 0);
            row.samples = sqlite3_column_double(r, 1);
            row.overlap = sqlite3_column_double(r, 2);
            traj_push(&t, &row);
        }
        sqlite3_reset(r);
        e->has_traj = t.n > 0;
        if (obs_recovery(&t, params_act_sign_symmetric(&a), th, &e->tau, &e->samples))
            e->tau = e->samples = -1;
        traj_free(&t);
    }
    sqlite3_finalize(q);
    sqlite3_finalize(r);
    return n;
}

static void check_wr(sqlite3 *db, const struct expect *ex, int n, const char *what)
{
    sqlite3_stmt *q = NULL;
    sqlite3_prepare_v2(db,
                       "SELECT tau_wr, samples_wr FROM summary WHERE task_id = ?1 AND solver = ?2",
                       -1, &q, NULL);
    int changed = 0;
    for (int i = 0; i < n; i++) {
        const struct expect *e = &ex[i];
        sqlite3_bind_text(q, 1, e->task, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, e->solver, -1, SQLITE_STATIC);
        CHECK(sqlite3_step(q) == SQLITE_ROW, "%s: no summary row", what);
        double tau = col_or(q, 0), ns = col_or(q, 1);
        sqlite3_reset(q);
        if (!strcmp(e->act, "h2")) { /* even: kept as version 5 stored them */
            CHECK(tau == e->tau5 && ns == e->samples5, "%s: h2 %s changed: %.17g -> %.17g", what,
                  e->solver, e->tau5, tau);
            CHECK(fabs(tau - e->tau) <= 1e-12, "%s: h2 %s: %.17g, obs_recovery %.17g", what,
                  e->solver, tau, e->tau);
            continue;
        }
        if (!e->has_traj) {
            CHECK(tau == -1 && ns == -1 && e->tau5 > 0, "%s: a run without its trajectory: %g",
                  what, tau);
            continue;
        }
        CHECK(fabs(tau - e->tau) <= 1e-12, "%s: %s %s tau_wr %.17g, obs_recovery %.17g", what,
              e->act, e->solver, tau, e->tau);
        CHECK(ns == e->samples, "%s: %s %s samples_wr %g, obs_recovery %g", what, e->act, e->solver,
              ns, e->samples);
        if (!strcmp(e->act, "h3") && !strcmp(e->solver, "sgd"))
            CHECK(e->tau5 > 0 && tau == -1, "%s: h3 sgd: version 5 %g, now %g", what, e->tau5, tau);
        changed += tau != e->tau5;
    }
    CHECK(changed >= 2, "%s: only %d runs changed", what, changed);
    sqlite3_finalize(q);
}

/* The curves view's signed m (version 8) against the trajectory's overlaps, aggregated here by
 * point (the canonical text without its seed, cut in C), solver and record. */
static void check_signed_curves(sqlite3 *db, const char *what)
{
    sqlite3_stmt *q = NULL;
    int rows = 0, bad = 0, negative = 0;
    const char *sql =
        "SELECT c.point, c.solver, c.k, c.m_mean, c.m_sd, c.m_min, c.m_max, c.abs_m_mean FROM curves c";
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
        CHECK(0, "%s: curves without the signed m: %s", what, sqlite3_errmsg(db));
        return;
    }
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *point = (const char *)sqlite3_column_text(q, 0);
        const char *solver = (const char *)sqlite3_column_text(q, 1);
        int k = sqlite3_column_int(q, 2);
        double v[4];
        for (int i = 0; i < 4; i++)
            v[i] = sqlite3_column_type(q, 3 + i) == SQLITE_NULL ? NAN
                                                                : sqlite3_column_double(q, 3 + i);
        /* the same from the tables: every finished run of this point, solver and record */
        sqlite3_stmt *r = NULL;
        double sum = 0, sum2 = 0, lo = INFINITY, hi = -INFINITY;
        int n = 0;
        if (sqlite3_prepare_v2(
                db,
                "SELECT t.params, r.overlap FROM trajectory r JOIN tasks t USING (task_id)"
                " JOIN summary s ON s.task_id = r.task_id AND s.solver = r.solver"
                " WHERE r.solver = ?1 AND r.k = ?2"
                " AND s.status IN ('done', 'diverged', 'ode_diverged')",
                -1, &r, NULL) == SQLITE_OK &&
            sqlite3_bind_text(r, 1, solver, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
            sqlite3_bind_int(r, 2, k) == SQLITE_OK)
            while (sqlite3_step(r) == SQLITE_ROW) {
                char key[4096], *at;
                snprintf(key, sizeof key, "%s", (const char *)sqlite3_column_text(r, 0));
                if ((at = strstr(key, ";seed="))) {
                    char *end = strchr(at + 1, ';');
                    memmove(at, end ? end : at + strlen(at),
                            strlen(end ? end : at + strlen(at)) + 1);
                }
                if (strcmp(key, point))
                    continue;
                double m = sqlite3_column_double(r, 1);
                sum += m;
                sum2 += m * m;
                lo = fmin(lo, m);
                hi = fmax(hi, m);
                n++;
            }
        sqlite3_finalize(r);
        double mean = n ? sum / n : NAN,
               sd = n > 1 ? sqrt(fmax(0, (sum2 - sum * sum / n) / (n - 1))) : NAN;
        int ok = n > 0 && fabs(v[0] - mean) < 1e-12 && fabs(v[2] - lo) < 1e-15 &&
                 fabs(v[3] - hi) < 1e-15 && (n < 2 ? isnan(v[1]) : fabs(v[1] - sd) < 1e-9) &&
                 v[3] >= v[0] && v[0] >= v[2];
        bad += !ok;
        negative += fabs(v[0] - sqlite3_column_double(q, 7)) > 1e-6;
        rows++;
    }
    sqlite3_finalize(q);
    CHECK(rows > 0 && bad == 0, "%s: %d of %d curves rows with a signed m unlike the trajectory's",
          what, bad, rows);
    CHECK(negative > 0, "%s: no record where the signed mean differs from |m|'s (%d rows)", what,
          rows);
}

static void migrate(const char *srcdir, const char *builddir, int from)
{
    char fixture[1024], path[1024], err[1024];
    snprintf(fixture, sizeof fixture, "%s/tests/data/schema_v%d.sql", srcdir, from);
    snprintf(path, sizeof path, "%s/test_store_migrate_v%d.db", builddir, from);
    unlink(path);
    char *sql = slurp(fixture);
    CHECK(sql != NULL, "cannot read %s", fixture);
    if (!sql)
        return;
    sqlite3 *raw = NULL;
    CHECK(sqlite3_open(path, &raw) == SQLITE_OK &&
              sqlite3_exec(raw, sql, NULL, NULL, NULL) == SQLITE_OK,
          "loading the fixture: %s", sqlite3_errmsg(raw));
    free(sql);
    double ntraj = value(raw, "SELECT count(*) FROM trajectory");
    double ntasks = value(raw, "SELECT count(*) FROM tasks"), ntraj_rerun = ntraj;
    double nsum = value(raw, "SELECT count(*) FROM summary");
    /* version 5: the run that cannot be recomputed, and what the C side gives for the others */
    struct expect ex[EXPECT_MAX];
    int nex = 0;
    if (from == 5) {
        CHECK(sqlite3_exec(raw,
                           "DELETE FROM trajectory WHERE solver = 'ode' AND task_id = (SELECT"
                           " task_id FROM tasks WHERE activation = 'h1' AND seed = 3)",
                           NULL, NULL, NULL) == SQLITE_OK &&
                  sqlite3_changes(raw) > 0,
              "deleting a trajectory: %s", sqlite3_errmsg(raw));
        ntraj = value(raw, "SELECT count(*) FROM trajectory");
        nex = expected_wr(raw, ex);
        CHECK(nex == 12, "version-5 fixture: %d runs", nex);
    }
    char kept[17] = "";
    if (from == 6) { /* one goe_mean task as if made by a version-6 build of the new teacher */
        sqlite3_stmt *q = NULL;
        char perr[256], sql2[1024];
        struct params p;
        CHECK(sqlite3_prepare_v2(raw,
                                 "SELECT task_id, params FROM tasks WHERE teacher ="
                                 " 'goe_mean(0.5)' AND activation = 'h2' AND seed = 2",
                                 -1, &q, NULL) == SQLITE_OK &&
                  sqlite3_step(q) == SQLITE_ROW &&
                  task_parse((const char *)sqlite3_column_text(q, 1), &p, perr, sizeof perr) == 0,
              "v6 fixture: the goe_mean h2 task");
        task_id_hex(params_task_id(&p), kept);
        snprintf(sql2, sizeof sql2,
                 "UPDATE tasks SET task_id = '%s' WHERE task_id = '%s';"
                 "UPDATE summary SET task_id = '%s' WHERE task_id = '%s';"
                 "UPDATE trajectory SET task_id = '%s' WHERE task_id = '%s';"
                 "UPDATE sweep_tasks SET task_id = '%s' WHERE task_id = '%s';",
                 kept, sqlite3_column_text(q, 0), kept, sqlite3_column_text(q, 0), kept,
                 sqlite3_column_text(q, 0), kept, sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        CHECK(sqlite3_exec(raw, sql2, NULL, NULL, NULL) == SQLITE_OK, "re-id: %s",
              sqlite3_errmsg(raw));
    }
    CHECK(value(raw, "PRAGMA user_version") == from && ntraj > 0,
          "fixture is not a version-%d database", from);
    sqlite3_close(raw);

    /* read-only commands read it as it is, without migrating */
    struct store *ro = store_open_readonly(path, err, sizeof err);
    CHECK(ro != NULL, "read-only open of a version-%d database: %s", from, err);
    if (ro)
        CHECK(value(store_db(ro), "SELECT count(*) FROM results") == nsum, "v1 results view");
    if (ro && from == 5)
        check_wr(store_db(ro), ex, nex, "read-only");
    if (ro && from == 6) {
        check_signed_curves(store_db(ro), "v6 read-only");
        CHECK(value(store_db(ro), "SELECT count(*) FROM pragma_table_info('tasks')"
                                  " WHERE name = 'kernels'") == 0,
              "v6 read-only: a kernels column added without a migration");
    }
    store_close(&ro);

    for (int pass = 0; pass < 2;
         pass++) { /* the second open finds the current version: nothing to do */
        struct store *st = store_open(path, err, sizeof err);
        CHECK(st != NULL, "open v%d (pass %d): %s", from, pass, err);
        if (!st)
            return;
        /* version 7: the kernels' path, not recorded before */
        if (pass == 0)
            CHECK(
                value(store_db(st), "SELECT count(*) FROM tasks WHERE kernels IS NULL") == ntasks &&
                    value(store_db(st), "SELECT count(*) FROM sweeps WHERE kernels IS NOT NULL") ==
                        0,
                "v%d: old rows with a kernels' path", from);
        sqlite3 *db = store_db(st);
        CHECK(value(db, "PRAGMA user_version") == STORE_SCHEMA_VERSION,
              "user_version after migration");
        CHECK(value(db, "SELECT count(*) FROM trajectory") == ntraj, "rows lost");
        CHECK(
            value(
                db,
                "SELECT count(*) FROM tasks WHERE token_corr = 0 AND index_kind = 'centred' AND outputs = "
                "'offdiag' AND lr_schedule = 'constant' AND init = 'gaussian' AND init_trace = 0 AND "
                "ode_mean = 'stiff'") == ntasks,
            "old tasks without their defaults");
        CHECK(value(db, "SELECT count(*) FROM tasks WHERE precision = 'double'") == ntasks,
              "old tasks not in double");
        CHECK(value(db, "SELECT count(*) FROM tasks WHERE ode_init = 'matched'") == ntasks,
              "old tasks without ode_init matched");
        CHECK(
            value(
                db,
                "SELECT max(abs(tr.mu - tr.trace * sqrt(t.d))) FROM trajectory tr JOIN tasks t USING "
                "(task_id)") < 1e-12 &&
                value(db, "SELECT count(*) FROM trajectory WHERE mu IS NULL") == 0,
            "mu not backfilled from the trace");
        /* mu_star: NULL for the versions before it, written by the version-3 build */
        CHECK(
            value(
                db,
                from < 3
                    ? "SELECT count(*) FROM results WHERE token_corr = 0 AND mu_star IS NULL"
                    : "SELECT count(*) FROM results WHERE token_corr = 0 AND mu_star IS NOT NULL") ==
                nsum,
            "results view without the new columns");
        CHECK(
            value(
                db,
                "SELECT count(*) FROM sweeps WHERE command IS NULL AND part IS NULL AND stop_signal IS "
                "NULL AND stop_sender IS NULL AND stopped_at IS NULL") == (from < 5),
            "v%d: sweeps without the version-5 columns", from);
        /* the CHECK list takes timeout (inside a transaction that is rolled back) */
        CHECK(sqlite3_exec(
                  db, "SAVEPOINT t; UPDATE tasks SET status = 'timeout'; ROLLBACK TO t; RELEASE t;",
                  NULL, NULL, NULL) == SQLITE_OK,
              "v%d: status timeout refused after migration: %s", from, sqlite3_errmsg(db));
        CHECK(sqlite3_exec(db, "SAVEPOINT t; UPDATE tasks SET status = 'bogus'; RELEASE t;", NULL,
                           NULL, NULL) != SQLITE_OK,
              "v%d: the status CHECK was lost", from);
        sqlite3_exec(db, "ROLLBACK TO t; RELEASE t;", NULL, NULL, NULL);
        /* every task has its parity: h2 is even, h1 and h3 are not */
        CHECK(value(db, "SELECT count(*) FROM tasks WHERE sign_symmetric IS NULL OR sign_symmetric"
                        " != (activation = 'h2')") == 0,
              "v%d: tasks.sign_symmetric", from);
        if (from == 6) {
            check_signed_curves(db, "v6 migrated");
            char sql3[256];
            snprintf(sql3, sizeof sql3,
                     "SELECT count(*) FROM tasks WHERE task_id = '%s' AND teacher = 'goe_mean(0.5)'"
                     " AND instr(params, ';teacher=goe_mean(0.5);') > 0",
                     kept);
            CHECK(value(db, "SELECT count(*) FROM tasks WHERE teacher = 'goe_mean_v1(0.5)' AND"
                            " instr(params, ';teacher=goe_mean_v1(0.5);') > 0") == 3 &&
                      value(db, sql3) == 1 &&
                      value(db, "SELECT count(*) FROM tasks WHERE instr(params, 'goe_mean(') > 0"
                                " OR teacher LIKE 'goe_mean(%'") == 1 &&
                      value(db, "SELECT count(*) FROM tasks WHERE teacher = 'goe'") == 4,
                  "v6: the earlier goe_mean tasks not renamed (or others touched)");
            CHECK(value(db, "SELECT count(DISTINCT point) FROM curves") == 5,
                  "v6: curves points %g", value(db, "SELECT count(DISTINCT point) FROM curves"));
        }
        if (from == 5) {
            check_wr(db, ex, nex, "migrated");
            CHECK(value(db, "SELECT sum(recovered) FROM recovery WHERE activation = 'h3'") == 0 &&
                      value(db, "SELECT anti_recovered FROM recovery WHERE activation = 'h3' AND"
                                " solver = 'sgd'") == 2,
                  "v5: h3 runs counted as recovered, or not as anti_recovered");
        }
        store_close(&st);
    }

    /* the ids: each old task's stored text, parsed now, gives the same canonical text and id */
    struct store *st = store_open(path, err, sizeof err);
    sqlite3_stmt *q = NULL;
    int seen = 0, marked = 0;
    if (st && sqlite3_prepare_v2(store_db(st), "SELECT task_id, params FROM tasks", -1, &q, NULL) ==
                  SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            const char *hex = (const char *)sqlite3_column_text(q, 0);
            const char *text = (const char *)sqlite3_column_text(q, 1);
            struct params p;
            struct task t;
            char id[17];
            if (from == 6 && strstr(text, "teacher=goe_mean_v1(")) {
                /* the earlier teacher: not made any more, and the current one has another id */
                char now[4096];
                CHECK(task_parse(text, &p, err, sizeof err) != 0, "goe_mean_v1 parses: %s", text);
                snprintf(now, sizeof now, "%s", text);
                char *at = strstr(now, "goe_mean_v1(");
                memmove(at + strlen("goe_mean"), at + strlen("goe_mean_v1"),
                        strlen(at + strlen("goe_mean_v1")) + 1);
                CHECK(task_parse(now, &p, err, sizeof err) == 0 && task_make(&p, &t) == 0, "%s: %s",
                      now, err);
                task_id_hex(t.id, id);
                CHECK(strcmp(id, hex) != 0, "goe_mean: the new teacher kept the old id %s", hex);
                task_free(&t);
                seen++;
                continue;
            }
            CHECK(task_parse(text, &p, err, sizeof err) == 0, "old text does not parse: %s", err);
            CHECK(task_make(&p, &t) == 0, "task_make");
            task_id_hex(t.id, id);
            CHECK(!strcmp(id, hex), "task id changed: %s -> %s", hex, id);
            CHECK(!strcmp(t.text, text), "canonical text changed:\n%s\n%s", text, t.text);
            CHECK(store_begin(st) == 0 && store_mark_running(st, t.id, 1, "node", "avx2") == 0 &&
                      store_commit(st) == 0,
                  "store_mark_running into the migrated database");
            marked++;
            /* a run writes into the migrated database: the new columns are filled */
            struct task_result r;
            enum task_status status;
            CHECK(worker_run(&p, &r, NULL, NULL) == 0, "worker_run");
            CHECK(store_begin(st) == 0 &&
                      store_put_result(st, t.id, &r, NULL, &status, err, sizeof err) == 0 &&
                      store_commit(st) == 0,
                  "store_put_result into the migrated database: %s", err);
            worker_result_free(&r);
            task_free(&t);
            seen++;
        }
    }
    sqlite3_finalize(q);
    CHECK(seen == ntasks, "old tasks seen: %d", seen);
    if (st)
        CHECK(value(store_db(st), "SELECT count(*) FROM tasks WHERE kernels = 'avx2'") == marked,
              "v%d: the kernels' path of a task handed out after the migration", from);
    if (st && from != 6) { /* v6: the goe_mean_v1 tasks are not run again */
        CHECK(value(store_db(st), "SELECT count(*) FROM summary WHERE mu_star IS NOT NULL") == nsum,
              "mu_star written");
        CHECK(value(store_db(st), "SELECT count(*) FROM trajectory") == ntraj_rerun, "rerun rows");
    }
    store_close(&st);
}

/* The journal mode (store_journal.c): the network file systems by the kernel's own magic
 * numbers (linux/magic.h) and those of the vendors' headers, the local build directory's file
 * system, the override, and what an opened database reports. */
static void journal(const char *builddir)
{
    const char *nfs = store_fs_network(NFS_SUPER_MAGIC);
    CHECK(nfs && !strcmp(nfs, "NFS"), "NFS_SUPER_MAGIC: %s", nfs ? nfs : "not a network one");
    CHECK(store_fs_network(SMB2_SUPER_MAGIC) && store_fs_network(CIFS_SUPER_MAGIC) &&
              store_fs_network(V9FS_MAGIC) && store_fs_network(AFS_SUPER_MAGIC),
          "SMB2, CIFS, 9p or AFS not taken for a network file system");
    CHECK(store_fs_network(0x0BD00BD0UL) != NULL, "Lustre (LL_SUPER_MAGIC) not a network one");
    CHECK(store_fs_network(0x47504653UL) != NULL, "GPFS not a network one");
    CHECK(store_fs_network(EXT4_SUPER_MAGIC) == NULL, "ext4 taken for a network file system");
    CHECK(store_fs_network(TMPFS_MAGIC) == NULL, "tmpfs taken for a network file system");
    CHECK(store_fs_network(XFS_SUPER_MAGIC) == NULL, "xfs taken for a network file system");
    char path[4096], why[160], err[512];
    snprintf(path, sizeof path, "%s/journal.db", builddir);
    unlink(path);
    const char *m = store_journal_mode(path, why, sizeof why);
    CHECK(m && !strcmp(m, "wal"), "the build directory: %s (%s)", m ? m : "NULL", why);
    store_journal_override = "delete";
    m = store_journal_mode(path, why, sizeof why);
    CHECK(m && !strcmp(m, "delete"), "--journal delete: %s", m ? m : "NULL");
    struct store *s = store_open(path, err, sizeof err);
    CHECK(s != NULL, "%s", err);
    if (s) {
        sqlite3_stmt *q = NULL;
        CHECK(sqlite3_prepare_v2(store_db(s), "PRAGMA journal_mode", -1, &q, NULL) == SQLITE_OK &&
                  sqlite3_step(q) == SQLITE_ROW &&
                  !strcmp((const char *)sqlite3_column_text(q, 0), "delete"),
              "the database's journal mode is not delete");
        sqlite3_finalize(q);
        CHECK(strstr(store_journal(s), "as asked") != NULL, "store_journal: %s", store_journal(s));
        store_close(&s);
    }
    store_journal_override = "bogus";
    m = store_journal_mode(path, why, sizeof why);
    CHECK(m == NULL && strstr(why, "wal, delete or auto"), "a bad mode: %s", why);
    s = store_open(path, err, sizeof err);
    CHECK(s == NULL && strstr(err, "'bogus'"), "store_open with a bad mode: %s", err);
    store_close(&s);
    store_journal_override = NULL;
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_store_migrate SRCDIR BUILDDIR\n");
        return 2;
    }
    migrate(argv[1], argv[2], 1); /* through every step, 1 -> 2 to 4 -> 5 */
    migrate(argv[1], argv[2], 2);
    migrate(argv[1], argv[2], 3);
    migrate(argv[1], argv[2], 4);
    migrate(argv[1], argv[2], 5);
    migrate(argv[1], argv[2], 6);
    journal(argv[2]);
    return check_done("test_store_migrate");
}
