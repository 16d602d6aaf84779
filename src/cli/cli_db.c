/*
 * cli_db.c: reading a results database: `aimsweep status`, `aimsweep query`, `aimsweep
 * export`. Every connection here is read-only (SQLITE_OPEN_READONLY and query_only), so a
 * query can never change results, and it can run while a sweep is writing (WAL).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/task_status.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/store.h"

/* The widest a column of the table output gets before it is cut with "...". */
#define DB_MAX_COL_WIDTH 60

enum out_format { OUT_TABLE, OUT_CSV };

static void csv_field(FILE *f, sqlite3_stmt *q, int col)
{
    int type = sqlite3_column_type(q, col);
    if (type == SQLITE_NULL)
        return;
    if (type == SQLITE_FLOAT) {
        fprintf(f, "%.17g", sqlite3_column_double(q, col));
        return;
    }
    const char *v = (const char *)sqlite3_column_text(q, col);
    if (!v)
        return;
    if (!strpbrk(v, ",\"\n\r")) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"')
            fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

/* Text of a cell for the table output (floats with 6 significant digits). */
static char *cell_text(sqlite3_stmt *q, int col)
{
    char buf[64];
    switch (sqlite3_column_type(q, col)) {
    case SQLITE_NULL: return strdup("NULL");
    case SQLITE_FLOAT:
        snprintf(buf, sizeof buf, "%.6g", sqlite3_column_double(q, col));
        return strdup(buf);
    case SQLITE_BLOB:
        snprintf(buf, sizeof buf, "<blob %d bytes>", sqlite3_column_bytes(q, col));
        return strdup(buf);
    default: {
        const char *t = (const char *)sqlite3_column_text(q, col);
        char *s = strdup(t ? t : "");
        for (char *c = s; c && *c; c++)
            if (*c == '\n' || *c == '\t')
                *c = ' ';
        if (s && strlen(s) > DB_MAX_COL_WIDTH)
            memcpy(s + DB_MAX_COL_WIDTH - 3, "...", 4);
        return s;
    }
    }
}

/* The database, read-only, or NULL after printing why. */
static struct store *open_readonly(const char *file)
{
    char err[1024];
    struct store *s = store_open_readonly(file, err, sizeof err);
    if (!s)
        fprintf(stderr, "aimsweep: %s\n", err);
    return s;
}

/* Runs one statement and prints its rows. Returns 0, or -1 with the SQLite message printed. */
static int print_query(sqlite3 *db, const char *sql, enum out_format fmt, int header, FILE *f)
{
    sqlite3_stmt *q = NULL;
    const char *tail = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, &tail) != SQLITE_OK) {
        fprintf(stderr, "aimsweep: SQL error: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    if (!q)
        return 0; /* empty statement */
    while (tail && (*tail == ' ' || *tail == '\n' || *tail == '\t' || *tail == ';'))
        tail++;
    if (tail && *tail) {
        fprintf(stderr, "aimsweep: one SQL statement at a time (extra text: '%.40s')\n", tail);
        sqlite3_finalize(q);
        return -1;
    }
    int nc = sqlite3_column_count(q), rc;
    if (fmt == OUT_CSV) {
        for (int c = 0; header && c < nc; c++)
            fprintf(f, "%s%s", c ? "," : "", sqlite3_column_name(q, c));
        if (header && nc)
            fputc('\n', f);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            for (int c = 0; c < nc; c++) {
                if (c)
                    fputc(',', f);
                csv_field(f, q, c);
            }
            fputc('\n', f);
        }
    } else {
        size_t nrow = 0, cap = 0;
        char **cells = NULL;
        int *w = calloc((size_t)nc + 1, sizeof *w);
        for (int c = 0; c < nc; c++)
            w[c] = (int)strlen(sqlite3_column_name(q, c));
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            if ((nrow + 1) * (size_t)nc > cap) {
                cap = cap ? 2 * cap : 64 * (size_t)nc;
                char **nb = realloc(cells, cap * sizeof *cells);
                if (!nb)
                    break;
                cells = nb;
            }
            for (int c = 0; c < nc; c++) {
                char *s = cell_text(q, c);
                cells[nrow * (size_t)nc + (size_t)c] = s;
                if (s && (int)strlen(s) > w[c])
                    w[c] = (int)strlen(s);
            }
            nrow++;
        }
        if (header && nc) {
            for (int c = 0; c < nc; c++)
                fprintf(f, "%s%-*s", c ? "  " : "", w[c], sqlite3_column_name(q, c));
            fputc('\n', f);
            for (int c = 0; c < nc; c++) {
                fprintf(f, "%s", c ? "  " : "");
                for (int k = 0; k < w[c]; k++)
                    fputc('-', f);
            }
            fputc('\n', f);
        }
        for (size_t r = 0; r < nrow; r++) {
            for (int c = 0; c < nc; c++) {
                char *s = cells[r * (size_t)nc + (size_t)c];
                fprintf(f, "%s%-*s", c ? "  " : "", w[c], s ? s : "");
                free(s);
            }
            fputc('\n', f);
        }
        free(cells);
        free(w);
    }
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "aimsweep: SQL error: %s\n", sqlite3_errmsg(db));
        sqlite3_finalize(q);
        return -1;
    }
    sqlite3_finalize(q);
    return 0;
}

int cli_print_query(sqlite3 *db, const char *sql, int csv, int header, FILE *f)
{
    return print_query(db, sql, csv ? OUT_CSV : OUT_TABLE, header, f);
}

int cli_query(int argc, char **argv)
{
    const char *file = NULL, *sql = NULL;
    enum out_format fmt = OUT_TABLE;
    int header = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: aimsweep query FILE \"SQL\" [--csv] [--no-header]\n"
                   "  runs one read-only SQL statement (tables sweeps, tasks, sweep_tasks, trajectory, summary;\n"
                   "  view results) and prints an aligned table, or csv with --csv\n");
            return 0;
        }
        if (!strcmp(argv[i], "--csv"))
            fmt = OUT_CSV;
        else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "csv"))
                fmt = OUT_CSV;
            else if (!strcmp(v, "table"))
                fmt = OUT_TABLE;
            else {
                fprintf(stderr, "aimsweep query: unknown format '%s' (table, csv)\n", v);
                return 2;
            }
        } else if (!strcmp(argv[i], "--no-header"))
            header = 0;
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else if (!sql)
            sql = argv[i];
        else {
            fprintf(stderr, "aimsweep query: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!file || !sql) {
        fprintf(stderr, "usage: aimsweep query FILE \"SQL\" [--csv] [--no-header]\n");
        return 2;
    }
    struct store *s = open_readonly(file);
    if (!s)
        return 2;
    int rc = print_query(store_db(s), sql, fmt, header, stdout);
    store_close(&s);
    return rc ? 1 : 0;
}

int cli_export(int argc, char **argv)
{
    const char *file = NULL, *table = "results", *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: aimsweep export FILE --format csv [--table results|tasks|summary|trajectory|sweeps]"
                   " [--out PATH]\n  writes one table or view as csv (default: the view results, to stdout)\n");
            return 0;
        }
        if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            if (strcmp(argv[++i], "csv") != 0) {
                fprintf(stderr, "aimsweep export: unknown format '%s' (csv)\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--table") && i + 1 < argc)
            table = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else {
            fprintf(stderr, "aimsweep export: unknown or incomplete option '%s'\n", argv[i]);
            return 2;
        }
    }
    static const char *const tables[] = {"results", "tasks", "summary", "trajectory", "sweeps", "sweep_tasks", NULL};
    int ok = 0;
    for (int k = 0; tables[k]; k++)
        ok |= !strcmp(table, tables[k]);
    if (!file || !ok) {
        fprintf(stderr, "usage: aimsweep export FILE --format csv [--table results|tasks|summary|trajectory|sweeps]"
                        " [--out PATH]\n");
        return 2;
    }
    char sql[128];
    struct store *s = open_readonly(file);
    if (!s)
        return 2;
    FILE *f = stdout;
    if (out && !(f = fopen(out, "w"))) {
        perror(out);
        store_close(&s);
        return 2;
    }
    snprintf(sql, sizeof sql, "SELECT * FROM %s ORDER BY rowid", table);
    if (!strcmp(table, "results") || !strcmp(table, "sweep_tasks"))
        snprintf(sql, sizeof sql, "SELECT * FROM %s", table);
    int rc = print_query(store_db(s), sql, OUT_CSV, 1, f);
    if (f != stdout && fclose(f) != 0)
        rc = -1;
    store_close(&s);
    return rc ? 1 : 0;
}

int cli_status(int argc, char **argv)
{
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: aimsweep status FILE\n  the sweeps in a results database and their task statuses\n");
            return 0;
        }
        if (argv[i][0] != '-' && !file)
            file = argv[i];
        else {
            fprintf(stderr, "aimsweep status: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!file) {
        fprintf(stderr, "usage: aimsweep status FILE\n");
        return 2;
    }
    struct store *s = open_readonly(file);
    if (!s)
        return 2;
    sqlite3 *db = store_db(s);
    int rc = 0;
    /* the status sets of task_status.h as SQL lists, and the two words the queries count alone */
    char finished[128], to_run[128], diverged[128], sql[1024];
    const char *done = task_status_name(TASK_DONE), *error = task_status_name(TASK_ERROR);
    task_status_sql_list(TASK_STATUS_FINISHED, finished, sizeof finished);
    task_status_sql_list(TASK_STATUS_TO_RUN, to_run, sizeof to_run);
    task_status_sql_list(TASK_STATUS_BIT(TASK_DIVERGED) | TASK_STATUS_BIT(TASK_ODE_DIVERGED), diverged,
                         sizeof diverged);
    printf("sweeps\n");
    snprintf(sql, sizeof sql,
             "SELECT w.sweep_id AS id, w.name, w.created_at, w.ranks, w.version, w.git_commit,"
             " count(t.task_id) AS tasks, sum(t.status IN (%s)) AS finished, sum(t.status IN (%s)) AS to_run"
             " FROM sweeps w LEFT JOIN sweep_tasks l ON l.sweep_id = w.sweep_id"
             " LEFT JOIN tasks t ON t.task_id = l.task_id GROUP BY w.sweep_id ORDER BY w.sweep_id",
             finished, to_run);
    rc |= print_query(db, sql, OUT_TABLE, 1, stdout);
    printf("\ntasks by status\n");
    rc |= print_query(db,
                      "SELECT status, count(*) AS tasks, round(sum(wall_s), 1) AS wall_s,"
                      " max(finished_at) AS last_finished FROM tasks GROUP BY status ORDER BY count(*) DESC",
                      OUT_TABLE, 1, stdout);
    printf("\nby decomposition and activation\n");
    snprintf(sql, sizeof sql,
             "SELECT decomposition, activation, count(*) AS tasks, sum(status = '%s') AS %s,"
             " sum(status IN (%s)) AS diverged, sum(status = '%s') AS %s, sum(status IN (%s)) AS to_run"
             " FROM tasks GROUP BY decomposition, activation ORDER BY decomposition, activation",
             done, done, diverged, error, error, to_run);
    rc |= print_query(db, sql, OUT_TABLE, 1, stdout);
    sqlite3_stmt *q = NULL;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM tasks WHERE status = '%s'", error);
    int qrc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (qrc == SQLITE_OK)
        qrc = sqlite3_step(q);
    if (qrc != SQLITE_ROW) {
        fprintf(stderr, "aimsweep: SQL error: %s\n", sqlite3_errmsg(db));
        rc = 1;
    } else if (sqlite3_column_int(q, 0) > 0) {
        printf("\nmost frequent errors\n");
        snprintf(sql, sizeof sql,
                 "SELECT count(*) AS tasks, error FROM tasks WHERE status = '%s'"
                 " GROUP BY error ORDER BY count(*) DESC LIMIT 5",
                 error);
        rc |= print_query(db, sql, OUT_TABLE, 1, stdout);
    }
    sqlite3_finalize(q);
    store_close(&s);
    return rc ? 1 : 0;
}
