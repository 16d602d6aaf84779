/*
 * cli_db.c: reading a results database: `aimsweep status`, `aimsweep query`, `aimsweep
 * export`. Every connection here is read-only (SQLITE_OPEN_READONLY and query_only), so a
 * query can never change results, and it can run while a sweep is writing (WAL).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "aimsweep/base/clock.h"

#include "aimsweep/base/task_status.h"
#include "aimsweep/base/text.h"
#include "aimsweep/cli/args.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/store.h"

/* The widest a column of the table output gets before it is cut with "...". */
#define DB_MAX_COL_WIDTH 60
/* The table output sizes its columns on this many first rows and streams the rest, so that a
 * query of any length prints in bounded memory (a longer cell further down shifts its line). */
#define DB_TABLE_SAMPLE_ROWS 1000
/* `aimsweep query` stops a statement after this many seconds unless --timeout says otherwise
 * (0 = no limit): an endless recursive CTE ends instead of running until killed. */
#define DB_QUERY_TIMEOUT_S 60.0
/* SQLite calls the progress handler every this many virtual-machine steps (well under a
 * millisecond). */
#define DB_PROGRESS_STEPS 10000

enum out_format { OUT_TABLE, OUT_CSV };

static void csv_field(FILE *f, sqlite3_stmt *q, int col)
{
    int type = sqlite3_column_type(q, col);
    if (type == SQLITE_NULL)
        return;
    if (type == SQLITE_FLOAT) {
        char b[TEXT_DOUBLE_MAX];
        text_double(sqlite3_column_double(q, col), b, sizeof b);
        fputs(b, f);
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

/* Writes q's column names (when header) and every row as csv; returns the last sqlite3_step
 * code (SQLITE_DONE when every row was written). */
static int csv_rows(FILE *f, sqlite3_stmt *q, int header)
{
    int nc = sqlite3_column_count(q), rc;
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
    return rc;
}

/* Text of a cell for the table output (numbers in shortest round-trip form, as in csv). */
static char *cell_text(sqlite3_stmt *q, int col)
{
    char buf[64];
    switch (sqlite3_column_type(q, col)) {
        case SQLITE_NULL: return strdup("NULL");
        case SQLITE_FLOAT:
            text_double(sqlite3_column_double(q, col), buf, sizeof buf);
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
/* The time status and query give the check of the file (store_quick_check), and the largest
 * file query checks. quick_check of a 1.09 GB file took 3.7 s in the page cache (1 s of it in
 * one step that no time limit can cut) and 28-30 s from disk: status checks up to 10 s, query
 * only files up to 256 MB (0.25 s or so), so that repeated queries of a big file are not slowed
 * down. A check cut short says nothing here. */
#define DB_STATUS_CHECK_S 10.0
#define DB_QUERY_CHECK_S 1.0
#define DB_QUERY_CHECK_MAX_BYTES (256.0 * 1024 * 1024)

/* The database, read-only, or NULL after printing why. With check_s >= 0, a warning on stderr
 * when the file is damaged (quick_check for at most check_s seconds, AIMSWEEP_QUICK_CHECK_S). */
static struct store *open_readonly(const char *file, double check_s)
{
    char err[1024];
    struct store *s = store_open_readonly(file, err, sizeof err);
    if (!s)
        fprintf(stderr, "aimsweep: %s\n", err);
    else if (check_s >= 0 &&
             store_quick_check(s, file, store_check_budget_s(check_s), err, sizeof err) == 1)
        fprintf(stderr, "aimsweep: warning: %s\n", err);
    return s;
}

/* The query time limit: the progress handler interrupts the statement once past it. */
static double query_deadline, query_timeout_s;
static int timed_out, refused;

static int progress(void *unused)
{
    (void)unused;
    if (query_deadline > 0 && clock_now_s() > query_deadline) {
        timed_out = 1;
        return 1;
    }
    return 0;
}

/* What a query may do: read this database. Anything that could create or change a file
 * (ATTACH, VACUUM INTO, writes) is refused when the statement is prepared, before it runs, so
 * that a refused statement leaves nothing behind. */
static int authorize(void *unused, int action, const char *a, const char *b, const char *dbname,
                     const char *trigger)
{
    (void)unused, (void)dbname, (void)trigger;
    /* PRAGMAs that only report; the first group takes a table or index name as its argument.
     * Any other PRAGMA, or one of the second group given a value, would set something. */
    static const char *const named[] = {"table_info",      "table_xinfo", "index_list",
                                        "index_info",      "index_xinfo", "foreign_key_list",
                                        "integrity_check", "quick_check", NULL};
    static const char *const plain[] = {
        "user_version",    "schema_version", "page_count",    "page_size",    "freelist_count",
        "compile_options", "database_list",  "function_list", "pragma_list",  "table_list",
        "collation_list",  "module_list",    "encoding",      "journal_mode", NULL};
    switch (action) {
        case SQLITE_ATTACH:
        case SQLITE_DETACH: refused = 1; return SQLITE_DENY;
        case SQLITE_PRAGMA:
            for (int i = 0; a && named[i]; i++)
                if (!strcasecmp(a, named[i]))
                    return SQLITE_OK;
            for (int i = 0; a && !b && plain[i]; i++)
                if (!strcasecmp(a, plain[i]))
                    return SQLITE_OK;
            refused = 2;
            return SQLITE_DENY;
        case SQLITE_FUNCTION:
            if (b && !strcasecmp(b, "load_extension")) {
                refused = 2;
                return SQLITE_DENY;
            }
            return SQLITE_OK;
        default: return SQLITE_OK;
    }
}

/* Sets the time limit (seconds, 0 = none) and the authorizer on a read-only connection. */
static void guard(sqlite3 *db, double timeout_s)
{
    query_timeout_s = timeout_s;
    query_deadline = timeout_s > 0 ? clock_now_s() + timeout_s : 0;
    timed_out = 0;
    sqlite3_progress_handler(db, DB_PROGRESS_STEPS, progress, NULL);
    sqlite3_set_authorizer(db, authorize, NULL);
}

/* The end of a statement's rows: finalizes q and returns 0 when its steps ran to the end (rc is
 * SQLITE_DONE), else -1 with the database's message on stderr. */
static int rows_end(sqlite3 *db, sqlite3_stmt *q, int rc)
{
    if (rc != SQLITE_DONE)
        fprintf(stderr, "aimsweep: SQL error: %s\n", sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Runs one statement and prints its rows. Returns 0, -1 with the SQLite message printed when it
 * failed while running, or -2 for a statement that cannot run as given (bad SQL, more than one
 * statement) or is refused before it runs (it would write, attach or detach). */
static int print_query(sqlite3 *db, const char *sql, enum out_format fmt, int header, FILE *f)
{
    sqlite3_stmt *q = NULL;
    const char *tail = NULL;
    refused = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &q, &tail) != SQLITE_OK) {
        if (refused) {
            fprintf(stderr, "aimsweep: a query reads this database only (%s are refused)\n",
                    refused == 1 ? "ATTACH and DETACH"
                                 : "PRAGMAs that set something and load_extension()");
            return -2;
        }
        fprintf(stderr, "aimsweep: SQL error: %s\n", sqlite3_errmsg(db));
        return -2; /* the statement, as given, cannot run: bad input */
    }
    if (!q)
        return 0; /* empty statement */
    while (tail && (*tail == ' ' || *tail == '\n' || *tail == '\t' || *tail == ';'))
        tail++;
    if (tail && *tail) {
        fprintf(stderr, "aimsweep: one SQL statement at a time (extra text: '%.40s')\n", tail);
        sqlite3_finalize(q);
        return -2;
    }
    if (!sqlite3_stmt_readonly(q) || !strncasecmp(sql + strspn(sql, " \t\n;"), "vacuum", 6)) {
        fprintf(stderr,
                "aimsweep: a query only reads the database (this statement would write: '%.40s')\n",
                sql + strspn(sql, " \t\n;"));
        sqlite3_finalize(q);
        return -2;
    }
    int nc = sqlite3_column_count(q), rc = SQLITE_DONE;
    if (fmt == OUT_CSV) {
        rc = csv_rows(f, q, header);
    } else {
        size_t nrow = 0, cap = (size_t)DB_TABLE_SAMPLE_ROWS * (size_t)(nc ? nc : 1);
        char **cells = calloc(cap, sizeof *cells);
        int *w = calloc((size_t)nc + 1, sizeof *w), oom = !cells || !w;
        for (int c = 0; !oom && c < nc; c++)
            w[c] = (int)strlen(sqlite3_column_name(q, c));
        /* the first rows fix the widths */
        while (!oom && nrow < DB_TABLE_SAMPLE_ROWS && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            for (int c = 0; c < nc; c++) {
                char *cs = cell_text(q, c);
                cells[nrow * (size_t)nc + (size_t)c] = cs;
                if (cs && (int)strlen(cs) > w[c])
                    w[c] = (int)strlen(cs);
            }
            nrow++;
        }
        if (!oom && header && nc) {
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
        for (size_t r = 0; !oom && r < nrow; r++) {
            for (int c = 0; c < nc; c++) {
                char *cs = cells[r * (size_t)nc + (size_t)c];
                fprintf(f, "%s%-*s", c ? "  " : "", w[c], cs ? cs : "");
            }
            fputc('\n', f);
        }
        for (size_t i = 0; cells && i < nrow * (size_t)nc; i++)
            free(cells[i]);
        free(cells);
        /* the rest, row by row */
        while (!oom && nrow == DB_TABLE_SAMPLE_ROWS && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            for (int c = 0; c < nc; c++) {
                char *cs = cell_text(q, c);
                fprintf(f, "%s%-*s", c ? "  " : "", w[c], cs ? cs : "");
                free(cs);
            }
            fputc('\n', f);
        }
        free(w);
        if (oom) {
            fprintf(stderr, "aimsweep: out of memory for the table\n");
            sqlite3_finalize(q);
            return -1;
        }
    }
    if (rc == SQLITE_INTERRUPT && timed_out) {
        fprintf(stderr,
                "aimsweep: query stopped after %.3g s (--timeout S sets the limit, 0 for none)\n",
                query_timeout_s);
        sqlite3_finalize(q);
        return -1;
    }
    return rows_end(db, q, rc);
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
    double timeout = DB_QUERY_TIMEOUT_S;
    static const char *const flags[] = {"csv", "format", "no-header", "timeout", "help", NULL};
    struct cli_seen seen = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(
                "usage: aimsweep query FILE \"SQL\" [--csv | --format table|csv] [--no-header] [--timeout S]\n"
                "  runs one read-only SQL statement (tables sweeps, tasks, sweep_tasks, trajectory, summary;\n"
                "  views results, recovery, recovery_segments, curves) and prints an aligned table, or csv\n"
                "  with --csv (--format csv); --no-header leaves out the line of column names.\n"
                "  crossing(th, x_prev, x, m_prev, m) interpolates a row of recovery_segments: weak recovery\n"
                "  for any threshold th (docs/model.md); every column is explained in docs/model.md.\n"
                "  A statement that runs longer than --timeout S seconds is stopped [%g; 0 = no limit].\n",
                DB_QUERY_TIMEOUT_S);
            return 0;
        }
        if (cli_nonempty("query", "argument", argv[i]))
            return 2;
        if (!strncmp(argv[i], "--", 2) && argv[i][2] != '-' && argv[i][2] != ' ') {
            const char *a = argv[i];
            if (strcmp(a, "--csv") != 0 && strcmp(a, "--format") != 0 &&
                strcmp(a, "--no-header") != 0 && strcmp(a, "--timeout") != 0)
                return cli_unknown("query", a, flags);
            if (cli_once(&seen, "query", a + 2))
                return 2;
            if (!strcmp(a, "--format") && i + 1 >= argc) {
                fprintf(stderr, "aimsweep query: --format needs a value (table or csv)\n");
                return 2;
            }
        }
        if (!strcmp(argv[i], "--timeout")) {
            char *end = NULL;
            double v = i + 1 < argc ? strtod(argv[i + 1], &end) : -1;
            if (i + 1 >= argc || end == argv[i + 1] || *end || !(v >= 0 && v <= 1e9)) {
                fprintf(
                    stderr,
                    "aimsweep query: --timeout needs seconds in [0, 1e9] (0 = no limit), got '%s'\n",
                    i + 1 < argc ? argv[i + 1] : "");
                return 2;
            }
            timeout = v;
            i++;
        } else if (!strcmp(argv[i], "--csv"))
            fmt = OUT_CSV;
        else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "csv"))
                fmt = OUT_CSV;
            else if (!strcmp(v, "table"))
                fmt = OUT_TABLE;
            else {
                fprintf(stderr, "aimsweep query: --format '%s' is not table or csv\n", v);
                return 2;
            }
        } else if (!strcmp(argv[i], "--no-header"))
            header = 0;
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else if (!sql)
            sql = argv[i];
        else {
            fprintf(
                stderr,
                "aimsweep query: unexpected argument '%s' (after the file and one SQL statement)\n",
                argv[i]);
            return 2;
        }
    }
    if (!file || !sql) {
        fprintf(stderr, "usage: aimsweep query FILE \"SQL\" [--csv] [--no-header] [--timeout S]\n");
        return 2;
    }
    struct stat sb;
    struct store *s =
        open_readonly(file, stat(file, &sb) == 0 && (double)sb.st_size <= DB_QUERY_CHECK_MAX_BYTES
                                ? DB_QUERY_CHECK_S
                                : -1);
    if (!s)
        return 2;
    guard(store_db(s), timeout);
    int rc = print_query(store_db(s), sql, fmt, header, stdout);
    store_close(&s);
    return rc == -2 ? 2 : rc ? 1 : 0;
}

static void json_string(FILE *f, const char *v)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\t')
            fputs("\\t", f);
        else if (*c == '\r')
            fputs("\\r", f);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

static void json_value(FILE *f, sqlite3_stmt *q, int col)
{
    char b[TEXT_DOUBLE_MAX];
    switch (sqlite3_column_type(q, col)) {
        case SQLITE_NULL: fputs("null", f); return;
        case SQLITE_INTEGER: fprintf(f, "%lld", (long long)sqlite3_column_int64(q, col)); return;
        case SQLITE_FLOAT:
            text_double(sqlite3_column_double(q, col), b, sizeof b);
            fputs(b, f);
            return;
        default: json_string(f, (const char *)sqlite3_column_text(q, col)); return;
    }
}

/* The tables and views of the database, NULL-terminated, in out (at most max - 1). */
static int list_tables(sqlite3 *db, char names[][64], const char **out, int max)
{
    sqlite3_stmt *q = NULL;
    int n = 0;
    if (sqlite3_prepare_v2(
            db,
            "SELECT name FROM (SELECT name, type FROM sqlite_schema UNION ALL"
            " SELECT name, type FROM sqlite_temp_schema) WHERE type IN ('table', 'view')"
            " AND name NOT LIKE 'sqlite_%' ORDER BY type, name",
            -1, &q, NULL) != SQLITE_OK)
        return -1;
    while (n < max - 1 && sqlite3_step(q) == SQLITE_ROW) {
        snprintf(names[n], 64, "%s", (const char *)sqlite3_column_text(q, 0));
        out[n] = names[n];
        n++;
    }
    out[n] = NULL;
    sqlite3_finalize(q);
    return n;
}

/* One table or view as csv (with "# " header lines naming each column's unit and meaning,
 * unless plain) or as JSON {"table", "source", "schema_version", "columns": [{name, unit,
 * meaning}], "rows": [{column: value}]}. Numbers in shortest round-trip form. */
static int export_table(sqlite3 *db, const char *file, const char *table, int json, int plain,
                        FILE *f)
{
    char sql[256];
    sqlite3_stmt *q = NULL;
    /* tables in the order their rows were stored; views (and tables without rowid) as they come */
    /* table is one the database lists (cli_export); quoted as an identifier all the same (%w) */
    sqlite3_snprintf(sizeof sql, sql, "SELECT * FROM \"%w\" ORDER BY rowid", table);
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        sqlite3_snprintf(sizeof sql, sql, "SELECT * FROM \"%w\"", table);
    if (!q && sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
        fprintf(stderr, "aimsweep: SQL error: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    int nc = sqlite3_column_count(q), version = 0, rc;
    sqlite3_stmt *v = NULL;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &v, NULL) == SQLITE_OK &&
        sqlite3_step(v) == SQLITE_ROW)
        version = sqlite3_column_int(v, 0);
    sqlite3_finalize(v);
    if (json) {
        fprintf(f, "{\"table\": ");
        json_string(f, table);
        fprintf(f, ", \"source\": ");
        json_string(f, file);
        fprintf(f, ", \"schema_version\": %d,\n \"columns\": [", version);
        for (int c = 0; c < nc; c++) {
            const char *name = sqlite3_column_name(q, c);
            const struct store_column_doc *d = store_column_doc(table, name);
            fprintf(f, "%s\n  {\"name\": ", c ? "," : "");
            json_string(f, name);
            fprintf(f, ", \"unit\": ");
            json_string(f, d ? d->unit : "");
            fprintf(f, ", \"meaning\": ");
            json_string(f, d ? d->meaning : "");
            fputc('}', f);
        }
        fprintf(f, "],\n \"rows\": [");
        long nrow = 0;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            fprintf(f, "%s\n  {", nrow++ ? "," : "");
            for (int c = 0; c < nc; c++) {
                fprintf(f, "%s", c ? ", " : "");
                json_string(f, sqlite3_column_name(q, c));
                fputs(": ", f);
                json_value(f, q, c);
            }
            fputc('}', f);
        }
        fprintf(f, "]}\n");
    } else {
        if (!plain) {
            fprintf(
                f,
                "# aimsweep export of %s, table %s (schema version %d); units: tau = n eta/d^2, samples = n,"
                " s = seconds; the model and every column: docs/model.md\n",
                file, table, version);
            for (int c = 0; c < nc; c++) {
                const char *name = sqlite3_column_name(q, c);
                const struct store_column_doc *d = store_column_doc(table, name);
                fprintf(f, "# %s%s%s%s: %s\n", name, d && *d->unit ? " [" : "",
                        d && *d->unit ? d->unit : "", d && *d->unit ? "]" : "",
                        d ? d->meaning : "");
            }
        }
        rc = csv_rows(f, q, 1);
    }
    return rows_end(db, q, rc);
}

static void export_usage(FILE *f)
{
    fprintf(
        f,
        "usage: aimsweep export FILE [--format csv|json] [--table NAME] [--out PATH] [--plain]\n"
        "  writes one table or view (default: the view results) to stdout or PATH:\n"
        "  csv   a header of '# ' lines naming each column's unit and meaning (read with\n"
        "        pandas.read_csv(path, comment='#')), then the columns; --plain leaves the '# ' lines out\n"
        "  json  {\"table\", \"source\", \"schema_version\", \"columns\": [{\"name\", \"unit\", \"meaning\"}],\n"
        "        \"rows\": [{column: value, ...}]}\n"
        "  Tables: sweeps, tasks, sweep_tasks, trajectory, summary; views: results, recovery_segments\n"
        "  (and any other the database holds). Numbers are written in their shortest exact form.\n");
}

int cli_export(int argc, char **argv)
{
    static const char *const flags[] = {"format", "table", "out", "plain", "help", NULL};
    static const char *const formats[] = {"csv", "json", NULL};
    const char *file = NULL, *table = "results", *out = NULL;
    int json = 0, plain = 0;
    struct cli_seen seen = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            export_usage(stdout);
            return 0;
        }
        if (cli_nonempty("export", "argument", a))
            return 2;
        if (a[0] != '-') {
            if (file) {
                fprintf(stderr,
                        "aimsweep export: a second database '%s' (after '%s'); one at a time\n", a,
                        file);
                return 2;
            }
            file = a;
            continue;
        }
        if (strcmp(a, "--format") != 0 && strcmp(a, "--table") != 0 && strcmp(a, "--out") != 0 &&
            strcmp(a, "--plain") != 0)
            return cli_unknown("export", a, flags);
        if (cli_once(&seen, "export", a + 2))
            return 2;
        if (!strcmp(a, "--plain")) {
            plain = 1;
            continue;
        }
        if (!v || !strncmp(v, "--", 2)) {
            fprintf(stderr, "aimsweep export: %s needs a value\n", a);
            return 2;
        }
        if (cli_nonempty("export", "value", v))
            return 2;
        i++;
        if (!strcmp(a, "--format")) {
            if (strcmp(v, "csv") != 0 && strcmp(v, "json") != 0) {
                char hint[64] = "";
                text_suggest(hint, sizeof hint, v, formats);
                fprintf(stderr, "aimsweep export: --format '%s' is not csv or json%s\n", v, hint);
                return 2;
            }
            json = !strcmp(v, "json");
        } else if (!strcmp(a, "--table"))
            table = v;
        else
            out = v;
    }
    if (!file) {
        fprintf(stderr, "aimsweep export: need a results database\n");
        export_usage(stderr);
        return 2;
    }
    char names[64][64];
    const char *list[65];
    struct store *s = open_readonly(file, -1);
    if (!s)
        return 2;
    int nt = list_tables(store_db(s), names, list, 65), found = 0;
    for (int k = 0; k < nt; k++)
        found |= !strcmp(list[k], table);
    if (!found) {
        char all[1024], hint[96] = "";
        text_join(all, sizeof all, list, ", ");
        text_suggest(hint, sizeof hint, table, list);
        fprintf(stderr, "aimsweep export: %s has no table or view '%s'%s; it has %s\n", file, table,
                hint, all);
        store_close(&s);
        return 2;
    }
    FILE *f = stdout;
    if (out && !(f = fopen(out, "w"))) {
        fprintf(stderr, "aimsweep export: cannot write %s: %s\n", out, strerror(errno));
        store_close(&s);
        return 2;
    }
    guard(store_db(s), 0);
    int rc = export_table(store_db(s), file, table, json, plain, f);
    if (f != stdout && fclose(f) != 0)
        rc = -1;
    store_close(&s);
    return rc ? 1 : 0;
}

/* The number of tasks the last run's sweep (the newest sweeps row: the database takes one run
 * at a time) still has to run. Returns 0, or 1 on an SQL error. */
static int status_left(sqlite3 *db)
{
    char to_run[128], sql[512];
    task_status_sql_list(TASK_STATUS_TO_RUN, to_run, sizeof to_run);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM sweep_tasks l JOIN tasks t ON t.task_id = l.task_id"
             " WHERE l.sweep_id = (SELECT max(sweep_id) FROM sweeps) AND t.status IN (%s)",
             to_run);
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        fprintf(stderr, "aimsweep: SQL error: %s\n", sqlite3_errmsg(db));
        sqlite3_finalize(q);
        return 1;
    }
    printf("%lld\n", (long long)sqlite3_column_int64(q, 0));
    sqlite3_finalize(q);
    return 0;
}

int cli_status(int argc, char **argv)
{
    const char *file = NULL;
    int left = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: aimsweep status FILE [--left]\n  the sweeps in a results database and "
                   "their task statuses\n  --left  only the number of tasks the last run's sweep "
                   "still has to run (pending,\n          running, interrupted): what a job script "
                   "resubmits for\n");
            return 0;
        }
        if (!strcmp(argv[i], "--left"))
            left = 1;
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else {
            fprintf(stderr, "aimsweep status: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!file) {
        fprintf(stderr, "usage: aimsweep status FILE [--left]\n");
        return 2;
    }
    struct store *s = open_readonly(file, DB_STATUS_CHECK_S);
    if (!s)
        return 2;
    sqlite3 *db = store_db(s);
    guard(db, 0);
    if (left) {
        int lrc = status_left(db);
        store_close(&s);
        return lrc;
    }
    int rc = 0;
    /* the status sets of task_status.h as SQL lists, and the two words the queries count alone */
    char finished[128], to_run[128], diverged[128], sql[1024];
    const char *done = task_status_name(TASK_DONE), *error = task_status_name(TASK_ERROR);
    task_status_sql_list(TASK_STATUS_FINISHED, finished, sizeof finished);
    task_status_sql_list(TASK_STATUS_TO_RUN, to_run, sizeof to_run);
    task_status_sql_list(TASK_STATUS_BIT(TASK_DIVERGED) | TASK_STATUS_BIT(TASK_ODE_DIVERGED),
                         diverged, sizeof diverged);
    /* the kernels' path of each run and task: columns since schema 7 (NULL before) */
    sqlite3_stmt *q = NULL;
    int has_kernels = sqlite3_prepare_v2(db,
                                         "SELECT count(*) FROM pragma_table_info('tasks')"
                                         " WHERE name = 'kernels'",
                                         -1, &q, NULL) == SQLITE_OK &&
                      sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    q = NULL;
    const char *wk = has_kernels ? "w.kernels" : "NULL", *tk = has_kernels ? "t.kernels" : "NULL";
    printf("sweeps\n");
    snprintf(
        sql, sizeof sql,
        "SELECT w.sweep_id AS id, w.name, w.created_at, w.ranks, w.version, w.git_commit,"
        " %s AS kernels, count(t.task_id) AS tasks, sum(t.status IN (%s)) AS finished, sum(t.status IN (%s)) AS to_run"
        " FROM sweeps w LEFT JOIN sweep_tasks l ON l.sweep_id = w.sweep_id"
        " LEFT JOIN tasks t ON t.task_id = l.task_id GROUP BY w.sweep_id ORDER BY w.sweep_id",
        wk, finished, to_run);
    rc |= print_query(db, sql, OUT_TABLE, 1, stdout);
    printf("\ntasks by status\n");
    rc |= print_query(
        db,
        "SELECT status, count(*) AS tasks, round(sum(wall_s), 1) AS wall_s,"
        " max(finished_at) AS last_finished FROM tasks GROUP BY status ORDER BY count(*) DESC",
        OUT_TABLE, 1, stdout);
    printf("\nby build and kernels (the run that computed each task, the path of its rank)\n");
    snprintf(
        sql, sizeof sql,
        "SELECT w.version, w.git_commit, %s AS kernels, count(*) AS tasks, sum(t.status = '%s') AS %s,"
        " sum(t.status IN (%s)) AS diverged, sum(t.status = '%s') AS %s, sum(t.status IN (%s)) AS to_run,"
        " min(t.finished_at) AS first_finished, max(t.finished_at) AS last_finished"
        " FROM tasks t JOIN sweeps w ON w.sweep_id = t.sweep_id GROUP BY w.version, w.git_commit, %s"
        " ORDER BY max(t.finished_at)",
        tk, done, done, diverged, error, error, to_run, tk);
    rc |= print_query(db, sql, OUT_TABLE, 1, stdout);
    printf("\nby decomposition and activation\n");
    snprintf(
        sql, sizeof sql,
        "SELECT decomposition, activation, count(*) AS tasks, sum(status = '%s') AS %s,"
        " sum(status IN (%s)) AS diverged, sum(status = '%s') AS %s, sum(status IN (%s)) AS to_run"
        " FROM tasks GROUP BY decomposition, activation ORDER BY decomposition, activation",
        done, done, diverged, error, error, to_run);
    rc |= print_query(db, sql, OUT_TABLE, 1, stdout);
    /* the messages of the tasks that ended in error or timeout (the two of run's exit 3) */
    const char *timeout = task_status_name(TASK_TIMEOUT);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM tasks WHERE status IN ('%s', '%s')", error,
             timeout);
    int qrc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (qrc == SQLITE_OK)
        qrc = sqlite3_step(q);
    if (qrc != SQLITE_ROW) {
        fprintf(stderr, "aimsweep: SQL error: %s\n", sqlite3_errmsg(db));
        rc = 1;
    } else if (sqlite3_column_int(q, 0) > 0) {
        printf("\nmost frequent errors and timeouts\n");
        snprintf(sql, sizeof sql,
                 "SELECT count(*) AS tasks, status, error FROM tasks WHERE status IN ('%s', '%s')"
                 " GROUP BY status, error ORDER BY count(*) DESC LIMIT 5",
                 error, timeout);
        rc |= print_query(db, sql, OUT_TABLE, 1, stdout);
    }
    sqlite3_finalize(q);
    store_close(&s);
    return rc ? 1 : 0;
}
