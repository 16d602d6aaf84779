/*
 * cli_probe_db.c: the `probe` and `probe_pair` tables and the `probe_curves` view, in a new file
 * or beside a study's tables (created with IF NOT EXISTS: the study schema's version is not
 * involved). docs/probe.md describes the columns.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "aimsweep/harness/store.h"
#include "cli_probe.h"

static const char probe_schema[] =
    "CREATE TABLE IF NOT EXISTS probe (\n"
    "  run TEXT NOT NULL, step INTEGER NOT NULL, layer INTEGER NOT NULL, head INTEGER NOT NULL,\n"
    "  file TEXT, layer_name TEXT, d INTEGER, d_head INTEGER,\n"
    "  mu REAL, trace REAL, omega11 REAL, psi11 REAL, sym_share REAL, anti_share REAL,\n"
    "  op_norm REAL, frob REAL, rank_ratio REAL, eff_rank REAL, omega12 REAL, overlap REAL,\n"
    "  skew_pred REAL, kurt_pred REAL, ks_pred REAL,\n"
    "  mean_z REAL, cov_z REAL, z_crit REAL, kurt REAL, ks REAL, ks_noise REAL,\n"
    "  law_ok INTEGER, in_regime INTEGER, sv_hist TEXT, eig_hist TEXT,\n"
    "  token_corr REAL, tokens INTEGER, pairs INTEGER, seed INTEGER,\n"
    "  PRIMARY KEY (run, step, layer, head));\n"
    "CREATE TABLE IF NOT EXISTS probe_pair (\n"
    "  run TEXT NOT NULL, step INTEGER NOT NULL, layer INTEGER NOT NULL, head INTEGER NOT NULL,\n"
    "  head2 INTEGER NOT NULL, omega REAL, psi REAL,\n"
    "  PRIMARY KEY (run, step, layer, head, head2));\n"
    "CREATE VIEW IF NOT EXISTS probe_curves AS\n"
    "  SELECT run, step, layer, count(*) AS heads,\n"
    "         avg(mu) AS mu, avg(omega11) AS omega11, avg(psi11) AS psi11,\n"
    "         avg(omega12) AS omega12, avg(overlap) AS overlap, avg(sym_share) AS sym_share,\n"
    "         avg(rank_ratio) AS rank_ratio, min(rank_ratio) AS rank_ratio_min,\n"
    "         max(rank_ratio) AS rank_ratio_max, avg(eff_rank) AS eff_rank,\n"
    "         avg(kurt_pred) AS kurt_pred, avg(in_regime) AS in_regime_share,\n"
    "         min(law_ok) AS law_ok\n"
    "  FROM probe GROUP BY run, step, layer ORDER BY run, layer, step;\n";

struct probe_db {
    sqlite3 *db;
    sqlite3_stmt *head, *pair;
};

static int db_fail(struct probe_db *p, const char *what)
{
    fprintf(stderr, "aimsweep probe: database: %s: %s\n", what, sqlite3_errmsg(p->db));
    return 1;
}

int probe_db_open(struct probe_db **out, const char *path)
{
    struct probe_db *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return 1;
    /* a results database (made with the study schema when new, so that query, status and
     * export read it; an SQLite file of something else is refused untouched), then the probe's
     * tables beside the study's */
    char err[1024];
    struct store *study = store_open(path, err, sizeof err);
    if (!study) {
        fprintf(stderr, "aimsweep probe: %s\n", err);
        free(p);
        return 2;
    }
    store_close(&study);
    if (sqlite3_open_v2(path, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        fprintf(stderr, "aimsweep probe: cannot open database %s: %s\n", path,
                p->db ? sqlite3_errmsg(p->db) : "out of memory");
        sqlite3_close(p->db);
        free(p);
        return 1;
    }
    sqlite3_busy_timeout(p->db, 30000);
    if (sqlite3_exec(p->db, probe_schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(p->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(p->db,
                           "INSERT OR REPLACE INTO probe VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
                           " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,"
                           " ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36,"
                           " ?37)",
                           -1, &p->head, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(p->db,
                           "INSERT OR REPLACE INTO probe_pair VALUES (?1, ?2, ?3, ?4, ?5, "
                           "?6, ?7)",
                           -1, &p->pair, NULL) != SQLITE_OK) {
        int rc = db_fail(p, path);
        probe_db_close(&p, 0);
        return rc;
    }
    *out = p;
    return 0;
}

/* A REAL, NULL when not a number. */
static void bind_real(sqlite3_stmt *q, int i, double x)
{
    if (isfinite(x))
        sqlite3_bind_double(q, i, x);
    else
        sqlite3_bind_null(q, i);
}

int probe_db_head(struct probe_db *p, const struct probe_opts *o, long long step, const char *file,
                  int layer, const char *layer_name, int head, int d, int dh,
                  const struct probe_head *h, const struct probe_t1_head *t1,
                  const struct probe_t1_layer *lay, int in_regime)
{
    sqlite3_stmt *q = p->head;
    char sv[1024], eig[1024];
    sqlite3_reset(q);
    sqlite3_bind_text(q, 1, o->run, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, step);
    sqlite3_bind_int(q, 3, layer);
    sqlite3_bind_int(q, 4, head);
    sqlite3_bind_text(q, 5, file, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 6, layer_name, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 7, d);
    sqlite3_bind_int(q, 8, dh);
    const double v[] = {h->mu,         h->trace,   h->omega11,   h->psi11,      h->sym_share,
                        h->anti_share, h->op_norm, h->frob,      h->rank_ratio, h->eff_rank,
                        h->omega12,    h->overlap, h->skew_pred, h->kurt_pred,  h->ks_pred,
                        t1->mean_z,    t1->cov_z,  lay->z_crit,  t1->kurt,      t1->ks,
                        t1->ks_noise};
    int i = 9;
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        bind_real(q, i++, v[k]);
    if (lay->pass < 0)
        sqlite3_bind_null(q, i++);
    else
        sqlite3_bind_int(q, i++, lay->pass);
    sqlite3_bind_int(q, i++, in_regime);
    sqlite3_bind_text(q, i++, probe_hist_json(&h->sv, sv, sizeof sv), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, i++, probe_hist_json(&h->eig, eig, sizeof eig), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(q, i++, o->token_corr);
    sqlite3_bind_int(q, i++, o->tokens);
    sqlite3_bind_int64(q, i++, o->pairs);
    sqlite3_bind_int64(q, i++, (sqlite3_int64)o->seed);
    if (sqlite3_step(q) != SQLITE_DONE)
        return db_fail(p, "insert into probe");
    return 0;
}

int probe_db_pairs(struct probe_db *p, const char *run, long long step, int layer, int H,
                   const double *omega, const double *psi)
{
    sqlite3_stmt *q = p->pair;
    for (int k = 0; k < H; k++)
        for (int l = 0; l < H; l++) {
            sqlite3_reset(q);
            sqlite3_bind_text(q, 1, run, -1, SQLITE_STATIC);
            sqlite3_bind_int64(q, 2, step);
            sqlite3_bind_int(q, 3, layer);
            sqlite3_bind_int(q, 4, k);
            sqlite3_bind_int(q, 5, l);
            bind_real(q, 6, omega[k * H + l]);
            bind_real(q, 7, psi[k * H + l]);
            if (sqlite3_step(q) != SQLITE_DONE)
                return db_fail(p, "insert into probe_pair");
        }
    return 0;
}

int probe_db_close(struct probe_db **pp, int ok)
{
    struct probe_db *p = pp ? *pp : NULL;
    int rc = 0;
    if (!p)
        return 0;
    sqlite3_finalize(p->head);
    sqlite3_finalize(p->pair);
    if (sqlite3_get_autocommit(p->db) == 0 &&
        sqlite3_exec(p->db, ok ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
        rc = db_fail(p, "commit");
    sqlite3_close(p->db);
    free(p);
    *pp = NULL;
    return rc;
}
