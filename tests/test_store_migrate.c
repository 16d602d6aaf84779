/*
 * test_store_migrate.c: databases of schema versions 1 to 4 (tests/data/schema_v1.sql,
 * schema_v2.sql, written by the builds before the general index, schema_v3.sql, before
 * precision and the views recovery and curves, and schema_v4.sql, before the operations'
 * columns) opened by the current store: migrated to STORE_SCHEMA_VERSION in place,
 * its rows kept, the new columns holding what the old tasks ran with (token_corr 0, centred,
 * offdiag, ...; mu = sqrt(d) trace), the sweeps' new columns (command, part, stop_signal,
 * stop_sender, stopped_at) present and NULL, the status timeout accepted by tasks' CHECK, its
 * task ids still the ids of the same points (the canonical text leaves the new keys out at their
 * defaults), and writable by a run.
 * A planted error shows: a migration that forgets a column fails the column checks; a 4 -> 5
 * step skipped for one starting version fails its sweeps and timeout checks; a canonical text
 * that names the new keys changes the ids (the id checks fail); a migration that is not
 * idempotent fails the reopen.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "aimsweep/harness/store.h"
#include "aimsweep/harness/task.h"
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
    CHECK(value(raw, "PRAGMA user_version") == from && ntraj > 0,
          "fixture is not a version-%d database", from);
    sqlite3_close(raw);

    /* read-only commands read it as it is, without migrating */
    struct store *ro = store_open_readonly(path, err, sizeof err);
    CHECK(ro != NULL, "read-only open of a version-%d database: %s", from, err);
    if (ro)
        CHECK(value(store_db(ro), "SELECT count(*) FROM results") == 4, "v1 results view");
    store_close(&ro);

    for (int pass = 0; pass < 2;
         pass++) { /* the second open finds the current version: nothing to do */
        struct store *st = store_open(path, err, sizeof err);
        CHECK(st != NULL, "open v%d (pass %d): %s", from, pass, err);
        if (!st)
            return;
        sqlite3 *db = store_db(st);
        CHECK(value(db, "PRAGMA user_version") == STORE_SCHEMA_VERSION,
              "user_version after migration");
        CHECK(value(db, "SELECT count(*) FROM trajectory") == ntraj, "rows lost");
        CHECK(
            value(
                db,
                "SELECT count(*) FROM tasks WHERE token_corr = 0 AND index_kind = 'centred' AND outputs = "
                "'offdiag' AND lr_schedule = 'constant' AND init = 'gaussian' AND init_trace = 0 AND "
                "ode_mean = 'stiff'") == 2,
            "old tasks without their defaults");
        CHECK(value(db, "SELECT count(*) FROM tasks WHERE precision = 'double'") == 2,
              "old tasks not in double");
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
                4,
            "results view without the new columns");
        CHECK(
            value(
                db,
                "SELECT count(*) FROM sweeps WHERE command IS NULL AND part IS NULL AND stop_signal IS "
                "NULL AND stop_sender IS NULL AND stopped_at IS NULL") == 1,
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
        store_close(&st);
    }

    /* the ids: each old task's stored text, parsed now, gives the same canonical text and id */
    struct store *st = store_open(path, err, sizeof err);
    sqlite3_stmt *q = NULL;
    int seen = 0;
    if (st && sqlite3_prepare_v2(store_db(st), "SELECT task_id, params FROM tasks", -1, &q, NULL) ==
                  SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            const char *hex = (const char *)sqlite3_column_text(q, 0);
            const char *text = (const char *)sqlite3_column_text(q, 1);
            struct params p;
            struct task t;
            char id[17];
            CHECK(task_parse(text, &p, err, sizeof err) == 0, "old text does not parse: %s", err);
            CHECK(task_make(&p, &t) == 0, "task_make");
            task_id_hex(t.id, id);
            CHECK(!strcmp(id, hex), "task id changed: %s -> %s", hex, id);
            CHECK(!strcmp(t.text, text), "canonical text changed:\n%s\n%s", text, t.text);
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
    CHECK(seen == 2, "old tasks seen: %d", seen);
    if (st) {
        CHECK(value(store_db(st), "SELECT count(*) FROM summary WHERE mu_star IS NOT NULL") == 4,
              "mu_star written");
        CHECK(value(store_db(st), "SELECT count(*) FROM trajectory") == ntraj, "rerun rows");
    }
    store_close(&st);
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
    return check_done("test_store_migrate");
}
