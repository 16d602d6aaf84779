/*
 * store_impl.h: what the files of the results database share and no one else. store.c opens and
 * closes the connection (the lock, the batches, the record of a failed call); store_schema.c
 * holds the schema, its views and column documentation, and the migrations from every older
 * version; store_write.c the rows of a run (sweeps, tasks, results) and what a run reads back;
 * store_merge.c the merge of part databases and the reset of tasks. The interface is
 * include/aimsweep/harness/store.h.
 */
#ifndef AIMSWEEP_HARNESS_STORE_IMPL_H
#define AIMSWEEP_HARNESS_STORE_IMPL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "aimsweep/harness/store.h"

/* The statements a writing store prepares once (store_stmt_sql, store_write.c). */
enum {
    ST_INS_TASK,
    ST_INS_LINK,
    ST_STATUS,
    ST_RUNNING,
    ST_DEL_TRAJ,
    ST_DEL_SUM,
    ST_INS_TRAJ,
    ST_INS_SUM,
    ST_FINISH,
    ST_PENDING,
    ST_COUNT
};

extern const char *const store_stmt_sql[ST_COUNT];

struct store {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    int in_txn;
    int lock_fd;
    int readonly;
    int64_t sweep_id; /* the sweep registered by this run, or 0 */
    /* the last checkpoint (store_checkpoint_after_commit): its time (0: none yet, the open), the
     * commits since, and the interval (-1 until read from AIMSWEEP_CHECKPOINT_S) */
    double ckpt_at, ckpt_every_s;
    long ckpt_commits;
    char err[512];     /* SQLite's message of the last failed call (store_errmsg) */
    char journal[160]; /* the journal mode chosen and why (store_journal) */
};

/* Records a failed call: SQLite's message, after `what` (words saying what was being done, or
 * NULL) in s->err, and resets and unbinds the cached statements, so that no value bound for a
 * failed write is left for the next one. The callers of store_errmsg say what failed. */
void store_failed(struct store *s, int rc, const char *what);

/* Runs an SQLite call that must return SQLITE_OK; otherwise records SQLite's message
 * (store_failed; never the call's text, which is no message for a user) and goes to the
 * function's fail label. */
#define STORE_CALL(s, call)                                                                        \
    do {                                                                                           \
        int store_rc_ = (call);                                                                    \
        if (store_rc_ != SQLITE_OK) {                                                              \
            store_failed((s), store_rc_, NULL);                                                    \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Steps a write to its end and makes q ready for the next one. Returns 0, or -1 recorded
 * (store_failed). */
int store_step_done(struct store *s, sqlite3_stmt *q);

/* The current time as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC) into buf. */
void store_now_iso(char *buf, size_t n);

/* Runs one statement with up to three text parameters (NULL binds NULL) and an optional integer
 * ?4. Returns 0 or -1 (the message is SQLite's, sqlite3_errmsg). */
int store_run_stmt(struct store *s, const char *sql, const char *a, const char *b, const char *c,
                   int64_t n);

/* Runs sql (several statements) on db. Returns 0, or -1 with "PATH: message" in err. */
int store_exec(sqlite3 *db, const char *sql, char *err, size_t errlen, const char *path);

/* Reads user_version and whether the file has any schema. SQLite reads the header here, so a
 * file that is not a database fails at this point, before anything is written. Returns 0, or -1
 * with err for a file that is not SQLite, another program's database or a newer schema. */
int store_schema_inspect(sqlite3 *db, const char *path, int *version, int *nobjects, char *err,
                         size_t errlen);

/* Brings a database of schema version (0: empty) to STORE_SCHEMA_VERSION: creates the schema, or
 * migrates one transaction per version. Returns 0, or -1 with err; a failed step leaves the file
 * at the last version it reached. */
int store_schema_update(sqlite3 *db, int version, const char *path, char *err, size_t errlen);

/* For a database of an older version read as it is: the views it lacks, as temporary views.
 * Returns 0, or -1 with err. */
int store_schema_temp_views(sqlite3 *db, int version, const char *path, char *err, size_t errlen);

#endif
