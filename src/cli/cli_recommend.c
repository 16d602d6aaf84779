/*
 * cli_recommend.c: `aimsweep recommend`: from a results database, for each (information
 * exponent, d, lr) the decomposition that reaches weak recovery in the fewest samples, with
 * the moment ODE's choice beside it.
 *
 * Everything is one SQL statement on a read-only connection (printed by --sql, and runnable
 * with `aimsweep query`), so the table can be checked by hand. For every point of the key and
 * every decomposition it takes the finished runs of the measured solver (SGD unless --solver
 * flow: status done or diverged) and of the ODE (status done):
 *   - n = samples_wr, and +inf for a run that never reached weak recovery inside its tau_end
 *     (a diverged run that had not recovered counts as +inf too: it never got there). The
 *     median handles the +inf values: it is finite as long as more than half the seeds
 *     recovered.
 *   - median over seeds (the mean of the two middle order statistics for an even count, in
 *     real arithmetic: samples_wr is an INTEGER column);
 *   - its distribution-free interval [X_(l), X_(N+1-l)] from the order statistics of N runs:
 *     the number B of runs below the true median is Binomial(N, 1/2), so the interval covers
 *     the median with probability 1 - 2 P(B <= l - 1). l is the largest index with
 *     P(B <= l - 1) <= (1 - RECOMMEND_LEVEL)/2, i.e. coverage >= RECOMMEND_LEVEL; for N <= 5
 *     no such l exists, l = 1 (the range of the runs) and `level` reports the coverage it has
 *     (N = 5: 0.9375, N = 3: 0.75, N = 1: 0). The binomial law is computed in the statement
 *     (a recursive table of log-probabilities).
 * The pick is the decomposition with the smallest median (ties: the smaller upper end, then
 * the name); `none` when no decomposition's median is finite. The ODE's pick is made the same
 * way from the ODE's own samples_wr for the same tasks. `separated` says whether the pick's
 * interval ends below the runner-up's.
 *
 * The information exponent keys Hermite activations; an activation without one (relu, tanh,
 * erf, softmax) keys by its name. Everything else that varies in the database (teacher, width,
 * init scale, ...) is pooled unless named with --by.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/store.h"

/* Coverage asked of the median's interval. */
#define RECOMMEND_LEVEL 0.95
/* Extra key columns (--by) at most. */
#define RECOMMEND_MAX_BY 8

struct rec_opts {
    const char *file, *solver, *where;
    const char *by[RECOMMEND_MAX_BY];
    int nby, all, sql, csv;
};

static void rec_usage(FILE *f)
{
    fprintf(
        f,
        "usage: aimsweep recommend FILE [--solver sgd|flow] [--by COL,...] [--where EXPR] [--all]\n"
        "                          [--sql] [--csv]\n\n"
        "  per (information exponent k, d, lr): the decomposition whose runs reach weak recovery in\n"
        "  the fewest samples (median over seeds, runs that never recovered count as +inf), with the\n"
        "  median's order-statistic interval (coverage in `level`) and the moment ODE's pick beside it\n\n"
        "  --solver S   the measured solver (default sgd)\n"
        "  --by COLS    more key columns of the tasks table (e.g. teacher,width); the rest is pooled\n"
        "  --where EXPR only tasks t satisfying EXPR (SQL on the tasks columns, e.g. \"t.tau_end = 2\")\n"
        "  --all        one row per key and decomposition instead of the picks\n"
        "  --sql        print the SQL statement instead of running it\n"
        "  --csv        csv instead of an aligned table\n");
}

/* A tasks column a key may name: an identifier that the database's tasks table has, and not
 * one that identifies a run (seed, ids, statuses); with db NULL only the spelling is checked.
 * Returns 1 if so. */
static int key_column_ok(sqlite3 *db, const char *col)
{
    static const char *const refused[] = {
        "task_id", "sweep_id",      "seed",          "status", "attempts", "rank",
        "host",    "started_at",    "finished_at",   "wall_s", "error",    "cost",
        "params",  "decomposition", "info_exponent", "d",      "lr",       NULL};
    if (!*col)
        return 0;
    for (const char *c = col; *c; c++)
        if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_'))
            return 0;
    for (int i = 0; refused[i]; i++)
        if (!strcmp(col, refused[i]))
            return 0;
    if (!db)
        return 1;
    sqlite3_stmt *q = NULL;
    int ok = sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('tasks') WHERE name = ?1", -1,
                                &q, NULL) == SQLITE_OK &&
             sqlite3_bind_text(q, 1, col, -1, SQLITE_STATIC) == SQLITE_OK &&
             sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    return ok;
}

/* On stderr, the parameter columns that take more than one value among the tasks compared and
 * are not in the key: the table pools over them. */
static void note_pooled(sqlite3 *db, const struct rec_opts *o)
{
    sqlite3_stmt *cols = NULL;
    char line[1024] = "", sql[2048];
    size_t len = 0;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info('tasks')", -1, &cols, NULL) !=
        SQLITE_OK)
        return;
    while (sqlite3_step(cols) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(cols, 0);
        int skip = !c || !key_column_ok(NULL, c) || !strcmp(c, "activation") ||
                   !strcmp(c, "solvers") ||
                   !strcmp(c, "sign_symmetric"); /* the activation's parity (docs/model.md §8) */
        for (int i = 0; !skip && i < o->nby; i++)
            skip = !strcmp(c, o->by[i]);
        if (skip)
            continue;
        snprintf(
            sql, sizeof sql,
            "SELECT count(DISTINCT t.%s) FROM tasks t WHERE t.status IN ('done', 'diverged')%s%s%s",
            c, o->where ? " AND (" : "", o->where ? o->where : "", o->where ? ")" : "");
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 1 &&
            len + strlen(c) + 3 < sizeof line)
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", len ? ", " : "", c);
        sqlite3_finalize(q);
    }
    sqlite3_finalize(cols);
    if (len)
        fprintf(
            stderr,
            "aimsweep recommend: pooled over %s (they vary among these tasks; add --by to split)\n",
            line);
}

/* The key's extra columns, each prefixed: ", P.col". */
static void put_by(FILE *f, const struct rec_opts *o, const char *p)
{
    for (int i = 0; i < o->nby; i++)
        fprintf(f, ", %s%s", p, o->by[i]);
}

/* "a.k IS b.k AND a.d IS b.d AND ..." over the whole key. */
static void put_join(FILE *f, const struct rec_opts *o, const char *a, const char *b)
{
    fprintf(f, "%s.k IS %s.k AND %s.d IS %s.d AND %s.lr IS %s.lr", a, b, a, b, a, b);
    for (int i = 0; i < o->nby; i++)
        fprintf(f, " AND %s.%s IS %s.%s", a, o->by[i], b, o->by[i]);
}

/* The whole statement, malloc'd (NULL on allocation failure). */
static char *build_sql(const struct rec_opts *o)
{
    char *sql = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&sql, &len);
    if (!f)
        return NULL;
    const char *S = o->solver;
    fprintf(
        f,
        "WITH RECURSIVE\n"
        "-- every finished run of the measured solver (%s) and of the ODE; nwr = samples to weak recovery,\n"
        "-- +inf (1e999) when the run never reached it\n"
        "runs AS (\n"
        "  SELECT CASE WHEN t.info_exponent IS NULL THEN t.activation ELSE t.info_exponent END AS k,\n"
        "         t.d, t.lr",
        S);
    put_by(f, o, "t.");
    fprintf(
        f,
        ", t.decomposition, s.solver, coalesce(s.samples_wr, 1e999) AS nwr\n"
        "  FROM tasks t JOIN summary s ON s.task_id = t.task_id\n"
        "  WHERE ((s.solver = '%s' AND s.status IN ('done', 'diverged')) OR (s.solver = 'ode' AND s.status = 'done'))",
        S);
    if (o->where)
        fprintf(f, "\n    AND (%s)", o->where);
    fprintf(f, "\n),\n"
               "-- the runs of each key, decomposition and solver in order of nwr: i = 1..cnt\n"
               "ranked AS (\n"
               "  SELECT r.*, row_number() OVER (PARTITION BY k, d, lr");
    put_by(f, o, "");
    fprintf(f, ", decomposition, solver ORDER BY nwr) AS i,\n"
               "         count(*) OVER (PARTITION BY k, d, lr");
    put_by(f, o, "");
    fprintf(
        f,
        ", decomposition, solver) AS cnt\n"
        "  FROM runs r\n"
        "),\n"
        "-- P(B <= j) for B ~ Binomial(cnt, 1/2), the number of runs below the median, for each cnt present\n"
        "binom(cnt, j, lp, cdf) AS (\n"
        "  SELECT cnt, 0, -cnt * ln(2), exp(-cnt * ln(2)) FROM (SELECT DISTINCT cnt FROM ranked)\n"
        "  UNION ALL\n"
        "  SELECT cnt, j + 1, lp + ln(cnt - j) - ln(j + 1), cdf + exp(lp + ln(cnt - j) - ln(j + 1))\n"
        "  FROM binom WHERE j + 1 < cnt\n"
        "),\n"
        "-- the median's interval [X_(l), X_(cnt+1-l)] covers it with probability 1 - 2 P(B <= l - 1):\n"
        "-- the largest l with coverage >= %g, or l = 1 (the range) when cnt is too small for that\n"
        "levels AS (\n"
        "  SELECT b.cnt, c.l, 1 - 2 * b.cdf AS level\n"
        "  FROM (SELECT cnt, max(1, sum(cdf <= %.6g)) AS l FROM binom GROUP BY cnt) c\n"
        "  JOIN binom b ON b.cnt = c.cnt AND b.j = c.l - 1\n"
        "),\n"
        "stats AS (\n"
        "  SELECT k, d, lr",
        RECOMMEND_LEVEL, (1 - RECOMMEND_LEVEL) / 2);
    put_by(f, o, "");
    fprintf(
        f,
        ", decomposition, solver, r.cnt AS runs, sum(nwr < 1e999) AS recovered,\n"
        "         (max(CASE WHEN i = (r.cnt + 1) / 2 THEN nwr END) + max(CASE WHEN i = r.cnt / 2 + 1 THEN nwr END)) / 2.0\n"
        "           AS median,\n"
        "         max(CASE WHEN i = v.l THEN nwr END) AS lo, max(CASE WHEN i = r.cnt + 1 - v.l THEN nwr END) AS hi,\n"
        "         v.level\n"
        "  FROM ranked r JOIN levels v ON v.cnt = r.cnt\n"
        "  GROUP BY k, d, lr");
    put_by(f, o, "");
    fprintf(f, ", decomposition, solver\n"
               "),\n"
               "-- place 1 = the fewest samples (ties: the smaller upper end, then the name)\n"
               "ordered AS (\n"
               "  SELECT *, row_number() OVER (PARTITION BY k, d, lr");
    put_by(f, o, "");
    fprintf(f, ", solver ORDER BY median, hi, decomposition) AS place\n"
               "  FROM stats\n"
               ")\n");
    if (o->all) {
        fprintf(f, "SELECT m.k, m.d, m.lr");
        put_by(f, o, "m.");
        fprintf(
            f,
            ", m.decomposition, m.runs, m.recovered, m.median AS n_wr, m.lo AS n_wr_lo,\n"
            "       m.hi AS n_wr_hi, round(m.level, 4) AS level, m.place,\n"
            "       o.runs AS ode_runs, o.recovered AS ode_recovered, o.median AS ode_n_wr, o.place AS ode_place\n"
            "FROM ordered m\n"
            "LEFT JOIN ordered o ON ");
        put_join(f, o, "o", "m");
        fprintf(f,
                " AND o.decomposition = m.decomposition AND o.solver = 'ode'\n"
                "WHERE m.solver = '%s'\n"
                "ORDER BY m.k, m.d, m.lr",
                S);
        put_by(f, o, "m.");
        fprintf(f, ", m.place;\n");
    } else {
        fprintf(f, "SELECT m.k, m.d, m.lr");
        put_by(f, o, "m.");
        fprintf(
            f,
            ",\n"
            "       CASE WHEN m.median < 1e999 THEN m.decomposition ELSE 'none' END AS pick,\n"
            "       m.runs, m.recovered, m.median AS n_wr, m.lo AS n_wr_lo, m.hi AS n_wr_hi,\n"
            "       round(m.level, 4) AS level,\n"
            "       x.decomposition AS next, x.median AS next_n_wr, m.hi < x.lo AS separated,\n"
            "       CASE WHEN m.median < 1e999 THEN a.median END AS ode_n_wr_of_pick,\n"
            "       CASE WHEN o.median < 1e999 THEN o.decomposition WHEN o.median IS NOT NULL THEN 'none' END\n"
            "         AS ode_pick,\n"
            "       o.median AS ode_n_wr,\n"
            "       CASE WHEN o.median IS NOT NULL THEN\n"
            "         (CASE WHEN m.median < 1e999 THEN m.decomposition ELSE 'none' END) =\n"
            "         (CASE WHEN o.median < 1e999 THEN o.decomposition ELSE 'none' END) END AS agree\n"
            "FROM ordered m\n"
            "LEFT JOIN ordered x ON ");
        put_join(f, o, "x", "m");
        fprintf(f, " AND x.solver = m.solver AND x.place = 2\n"
                   "LEFT JOIN ordered o ON ");
        put_join(f, o, "o", "m");
        fprintf(f, " AND o.solver = 'ode' AND o.place = 1\n"
                   "LEFT JOIN ordered a ON ");
        put_join(f, o, "a", "m");
        fprintf(f,
                " AND a.solver = 'ode' AND a.decomposition = m.decomposition\n"
                "WHERE m.solver = '%s' AND m.place = 1\n"
                "ORDER BY m.k, m.d, m.lr",
                S);
        put_by(f, o, "m.");
        fprintf(f, ";\n");
    }
    if (fclose(f) != 0) {
        free(sql);
        return NULL;
    }
    return sql;
}

/* Splits "a,b,c" into o->by (pointers into a copy kept by the caller). Returns 0 or -1. */
static int parse_by(char *list, struct rec_opts *o)
{
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        if (o->nby == RECOMMEND_MAX_BY)
            return -1;
        o->by[o->nby++] = tok;
    }
    return 0;
}

int cli_recommend(int argc, char **argv)
{
    struct rec_opts o = {.solver = "sgd"};
    char *bylist = NULL;
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            rec_usage(stdout);
            free(bylist);
            return 0;
        }
        if (!strcmp(a, "--sql"))
            o.sql = 1;
        else if (!strcmp(a, "--csv"))
            o.csv = 1;
        else if (!strcmp(a, "--all"))
            o.all = 1;
        else if (!strcmp(a, "--solver") && i + 1 < argc)
            o.solver = argv[++i];
        else if (!strcmp(a, "--where") && i + 1 < argc)
            o.where = argv[++i];
        else if (!strcmp(a, "--by") && i + 1 < argc) {
            free(bylist);
            o.nby = 0;
            if (!(bylist = strdup(argv[++i])) || parse_by(bylist, &o)) {
                fprintf(stderr,
                        "aimsweep recommend: --by takes at most %d comma-separated columns\n",
                        RECOMMEND_MAX_BY);
                goto out;
            }
        } else if (a[0] != '-' && !o.file)
            o.file = a;
        else {
            fprintf(stderr, "aimsweep recommend: unknown or incomplete option '%s'\n", a);
            rec_usage(stderr);
            goto out;
        }
    }
    if (strcmp(o.solver, "sgd") && strcmp(o.solver, "flow")) {
        fprintf(
            stderr,
            "aimsweep recommend: --solver %s: the measured solver is sgd or flow (the ODE is the prediction)\n",
            o.solver);
        goto out;
    }
    if (!o.file && !o.sql) {
        fprintf(stderr, "aimsweep recommend: no database given\n");
        rec_usage(stderr);
        goto out;
    }
    struct store *s = NULL;
    if (o.file) {
        char err[1024];
        if (!(s = store_open_readonly(o.file, err, sizeof err))) {
            fprintf(stderr, "aimsweep: %s\n", err);
            goto out;
        }
    }
    if (s && o.where) {
        /* the condition goes into the statement as text: checked first to be one condition
         * that only reads (the rules of reset --where, store.h) */
        char err[1024];
        if (store_condition_check(store_db(s), "tasks t JOIN summary s ON s.task_id = t.task_id",
                                  o.where, err, sizeof err)) {
            fprintf(stderr, "aimsweep recommend: --where: %s\n", err);
            store_close(&s);
            goto out;
        }
    }
    for (int i = 0; i < o.nby; i++)
        if (!key_column_ok(s ? store_db(s) : NULL, o.by[i])) {
            fprintf(stderr,
                    "aimsweep recommend: --by %s: not a parameter column of the tasks table"
                    " (e.g. activation, teacher, width, init_scale)\n",
                    o.by[i]);
            store_close(&s);
            goto out;
        }
    char *sql = build_sql(&o);
    if (!sql) {
        fprintf(stderr, "aimsweep recommend: out of memory\n");
        store_close(&s);
        rc = 1;
        goto out;
    }
    if (o.sql) {
        fputs(sql, stdout);
        rc = 0;
    } else {
        rc = cli_print_query(store_db(s), sql, o.csv, 1, stdout) ? 1 : 0;
        if (!rc)
            note_pooled(store_db(s), &o);
    }
    free(sql);
    store_close(&s);
out:
    free(bylist);
    return rc;
}
