/*
 * store.c: the connection to the SQLite results database (schema and statuses in store.h; the
 * schema itself and its migrations in store_schema.c, the rows in store_write.c, the merge of
 * parts in store_merge.c).
 *
 * Opening is careful not to damage what is there: a file that is not SQLite, an SQLite file
 * of something else, or a newer schema are refused before anything is written; the journal
 * mode (WAL, or the rollback journal on a network file system: store_journal.c) is set only
 * after that. An exclusive flock on the database file keeps two runs apart (SQLite's
 * own locks are fcntl locks, which flock does not touch on Linux). An older schema is migrated
 * (store_schema_update) after the lock is taken.
 *
 * Every SQLite call whose result matters is checked: STORE_CALL (in the manner of PETSc's
 * PetscCall) turns a failed call into the function's -1 through its fail label, with
 * SQLite's message kept for store_errmsg (the caller says what failed); a failed step does the same
 * (store_step_done). A failure resets and unbinds the cached statements, so that no value bound
 * for a failed write is left for the next one.
 */
#include "aimsweep/harness/store.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "aimsweep/base/clock.h"
#include "store_impl.h"

/* How long a statement waits for a lock held by a reader before giving up. */
#define STORE_BUSY_TIMEOUT_MS 10000
/* How often a run looks again at a database another run holds (store_lock_wait_s). */
#define STORE_LOCK_POLL_S 0.25

void store_failed(struct store *s, int rc, const char *what)
{
    snprintf(s->err, sizeof s->err, "%s%s%s", what ? what : "", what ? ": " : "",
             s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    for (int i = 0; i < ST_COUNT; i++)
        if (s->st[i]) {
            sqlite3_reset(s->st[i]);
            sqlite3_clear_bindings(s->st[i]);
        }
}

void store_now_iso(char *buf, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + k, n - k, ".%03ldZ", ts.tv_nsec / 1000000);
}

sqlite3 *store_db(struct store *s) { return s->db; }
const char *store_journal(const struct store *s) { return s->journal; }
const char *store_errmsg(struct store *s)
{
    return !s || !s->db ? "no database" : s->err[0] ? s->err : sqlite3_errmsg(s->db);
}

void store_close(struct store **sp)
{
    if (!sp || !*sp)
        return;
    struct store *s = *sp;
    if (s->in_txn)
        store_commit(s);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    if (s->db)
        sqlite3_close(s->db);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    free(s);
    *sp = NULL;
}

/* Who holds the run lock on path, for the refusal: the process (from /proc/locks, when it runs
 * on this host: pid and command line) and the last run registered in the database (its host,
 * when it started, its command). Empty when neither can be told. */
static void lock_holder(struct store *s, const char *path, char *buf, size_t n)
{
    struct stat st;
    size_t off = 0;
    buf[0] = '\0';
    FILE *f = stat(path, &st) == 0 ? fopen("/proc/locks", "r") : NULL;
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        /* "1: FLOCK  ADVISORY  WRITE 4711 08:01:123456 0 EOF" */
        char *tok[6], *save = NULL;
        int nt = 0;
        for (char *t = strtok_r(line, " \t\n", &save); t && nt < 6;
             t = strtok_r(NULL, " \t\n", &save))
            tok[nt++] = t;
        if (nt < 6 || strcmp(tok[1], "FLOCK") != 0)
            continue;
        char *end;
        long pid = strtol(tok[4], &end, 10);
        unsigned long maj = strtoul(tok[5], &end, 16), min = 0;
        unsigned long long ino = 0;
        if (*end == ':')
            min = strtoul(end + 1, &end, 16);
        if (*end == ':')
            ino = strtoull(end + 1, &end, 10);
        if (*end || ino != (unsigned long long)st.st_ino || maj != major(st.st_dev) ||
            min != minor(st.st_dev) || pid == (long)getpid())
            continue;
        char cmd[160] = "", proc[64];
        snprintf(proc, sizeof proc, "/proc/%ld/cmdline", pid);
        FILE *c = fopen(proc, "r");
        size_t got = c ? fread(cmd, 1, sizeof cmd - 1, c) : 0;
        if (c)
            fclose(c);
        for (size_t i = 0; i + 1 < got; i++)
            if (!cmd[i])
                cmd[i] = ' ';
        cmd[got] = '\0';
        off += (size_t)snprintf(buf + off, n - off, ": held by pid %ld on this host (%s)", pid,
                                got ? cmd : "command unknown");
        break;
    }
    if (f)
        fclose(f);
    sqlite3_stmt *q = NULL;
    if (off < n &&
        sqlite3_prepare_v2(s->db,
                           "SELECT host, created_at, command FROM sweeps ORDER BY sweep_id DESC "
                           "LIMIT 1",
                           -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(buf + off, n - off,
                 "%s the last run registered in it started on host %s at %s: %.120s",
                 off ? ";" : ":", (const char *)sqlite3_column_text(q, 0),
                 sqlite3_column_text(q, 1) ? (const char *)sqlite3_column_text(q, 1) : "?",
                 sqlite3_column_text(q, 2) ? (const char *)sqlite3_column_text(q, 2) : "");
    sqlite3_finalize(q);
}

double store_lock_wait_s = STORE_LOCK_WAIT_S;

/* A closed store for path (no connection, no lock), or NULL with err. */
static struct store *store_alloc(const char *path, int readonly, char *err, size_t errlen)
{
    struct store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    s->lock_fd = -1;
    s->readonly = readonly;
    s->ckpt_every_s = -1;
    return s;
}

/* Opens s's connection with flags, with the busy timeout, and extended result codes when
 * asked. Returns 0, or -1 with err. */
static int store_connect(struct store *s, const char *path, int flags, int extended, char *err,
                         size_t errlen)
{
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open database: %s", path,
                 s->db ? sqlite3_errmsg(s->db) : "out of memory");
        return -1;
    }
    if (sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS) != SQLITE_OK ||
        (extended && sqlite3_extended_result_codes(s->db, 1) != SQLITE_OK)) {
        snprintf(err, errlen, "%s: cannot set up the connection: %s", path, sqlite3_errmsg(s->db));
        return -1;
    }
    return 0;
}

struct store *store_open(const char *path, char *err, size_t errlen)
{
    struct store *s = store_alloc(path, 0, err, errlen);
    if (!s)
        return NULL;
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        goto fail;
    }
    {
        /* SQLite keeps -wal and -shm files beside the database: its directory must be writable. */
        char *copy = strdup(path);
        const char *dir = copy ? dirname(copy) : ".";
        char probe[4096];
        snprintf(probe, sizeof probe, "%s/.aimsweep-probe-XXXXXX", dir);
        int fd = mkstemp(probe);
        if (fd < 0) {
            snprintf(
                err, errlen,
                "%s: cannot write in directory %s (%s); the database and its -wal file need a writable directory",
                path, dir, strerror(errno));
            free(copy);
            goto fail;
        }
        close(fd);
        unlink(probe);
        free(copy);
    }
    if (exists && access(path, R_OK | W_OK) != 0) {
        snprintf(err, errlen, "%s: cannot open for writing: %s", path, strerror(errno));
        goto fail;
    }
    if (store_connect(s, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, 1,
                      err, errlen))
        goto fail;
    s->lock_fd = open(path, O_RDWR | O_CLOEXEC);
    if (s->lock_fd < 0) {
        snprintf(err, errlen, "%s: cannot open for locking: %s", path, strerror(errno));
        goto fail;
    }
    double waited = 0;
    while (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK &&
           waited < store_lock_wait_s) {
        if (waited == 0)
            fprintf(stderr,
                    "aimsweep: %s: in use by another run; waiting up to %.0f s for it to end\n",
                    path, store_lock_wait_s);
        usleep((useconds_t)(STORE_LOCK_POLL_S * 1e6));
        waited += STORE_LOCK_POLL_S;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            char who[600];
            lock_holder(s, path, who, sizeof who);
            snprintf(err, errlen,
                     "%s: another aimsweep run is using this database (waited %.0f s)%s; wait "
                     "for it to end, or stop it (a killed job's ranks let go within seconds)",
                     path, waited, who);
            goto fail;
        }
        /* some network file systems have no flock: go on, unguarded, and say so */
        fprintf(stderr,
                "aimsweep: %s: cannot lock (%s); make sure no other run uses this database\n", path,
                strerror(errno));
    }
    {
        /* the file locked must still be the one at path: a merge that created a study and
         * failed removes it (cli_ops.c), and a run waiting on the lock would write into a
         * file no longer there */
        struct stat at, held;
        if (stat(path, &at) != 0 || fstat(s->lock_fd, &held) != 0 || at.st_ino != held.st_ino ||
            at.st_dev != held.st_dev) {
            snprintf(err, errlen, "%s: removed or replaced while this run waited for it; run again",
                     path);
            goto fail;
        }
    }
    /* Looked at under the lock: another run (two array elements merging into a study that did
     * not exist yet) may have written the schema while this one waited. */
    int version, nobj;
    if (store_schema_inspect(s->db, path, &version, &nobj, err, errlen))
        goto fail;
    /* synchronous=FULL: every commit reaches the disk (the WAL is fsynced) before it counts.
     * With NORMAL, commits between checkpoints lived in the page cache only, and a file system
     * that went read-only lost all of them, schema included (tests/store_fsfail.sh). A
     * scratch database may trade that for speed with AIMSWEEP_SYNC=normal. */
    const char *sync = getenv("AIMSWEEP_SYNC");
    if (sync && strcmp(sync, "full") != 0 && strcmp(sync, "normal") != 0) {
        snprintf(err, errlen, "AIMSWEEP_SYNC='%s': must be full (the default) or normal", sync);
        goto fail;
    }
    /* a damaged file is refused before anything is written into it */
    if (version > 0) {
        int qc = store_quick_check(s, path, store_check_budget_s(STORE_QUICK_CHECK_S), err, errlen);
        if (qc == 2)
            fprintf(stderr, "aimsweep: %s\n", err);
        else if (qc)
            goto fail;
    }
    char why[160], pragmas[160];
    const char *journal = store_journal_mode(path, why, sizeof why);
    if (!journal) {
        snprintf(err, errlen, "%s", why);
        goto fail;
    }
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=%s; PRAGMA synchronous=%s; PRAGMA foreign_keys=ON;", journal,
             sync && !strcmp(sync, "normal") ? "NORMAL" : "FULL");
    snprintf(s->journal, sizeof s->journal, "%s", why);
    if (store_exec(s->db, pragmas, err, errlen, path))
        goto fail;
    if (store_register_functions(s->db)) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(s->db));
        goto fail;
    }
    if (store_schema_update(s->db, version, path, err, errlen))
        goto fail;
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(s->db, store_stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                               NULL) != SQLITE_OK) {
            snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(s->db));
            goto fail;
        }
    return s;
fail:
    store_close(&s);
    return NULL;
}

double store_check_budget_s(double dflt)
{
    const char *v = getenv("AIMSWEEP_QUICK_CHECK_S");
    char *end = NULL;
    double x = v ? strtod(v, &end) : -1;
    return v && end != v && !*end && x >= 0 ? x : dflt;
}

/* The progress handler of a check with a time budget: stops it at the deadline. */
static int check_deadline(void *ctx)
{
    const double *deadline = ctx;
    return *deadline > 0 && clock_now_s() > *deadline;
}

int store_quick_check(struct store *s, const char *path, double budget_s, char *msg, size_t n)
{
    sqlite3_stmt *q = NULL;
    char first[256] = "";
    double deadline = budget_s > 0 ? clock_now_s() + budget_s : 0;
    sqlite3_progress_handler(s->db, 10000, check_deadline, &deadline);
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(" STORE_QUICK_CHECK_ERRORS ")", -1, &q,
                                NULL),
        bad = 0;
    if (rc == SQLITE_OK)
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            const char *line = (const char *)sqlite3_column_text(q, 0);
            if (line && strcmp(line, "ok") != 0 && !bad++) {
                /* "*** in database main ***\nOn tree page 8 cell 0: ..." on one line */
                const char *head = "*** in database main ***\n";
                if (!strncmp(line, head, strlen(head)))
                    line += strlen(head);
                snprintf(first, sizeof first, "%s", line);
                for (char *c = first; *c; c++)
                    if (*c == '\n')
                        *c = ' ';
            }
        }
    sqlite3_finalize(q);
    sqlite3_progress_handler(s->db, 0, NULL, NULL);
    if (!bad && rc == SQLITE_INTERRUPT) {
        snprintf(msg, n,
                 "%s: its check (PRAGMA quick_check) stopped after %g s, the file not checked whole"
                 " (AIMSWEEP_QUICK_CHECK_S=0 checks it whole)",
                 path, budget_s);
        return 2;
    }
    /* a file damaged where quick_check itself reads (the schema, a root page) fails the check */
    int ec = sqlite3_errcode(s->db) & 0xff;
    if (!bad && rc != SQLITE_DONE && (ec == SQLITE_CORRUPT || ec == SQLITE_NOTADB)) {
        bad = 1;
        snprintf(first, sizeof first, "%s", sqlite3_errmsg(s->db));
    }
    if (!bad && rc != SQLITE_DONE) {
        snprintf(msg, n, "%s: cannot check the file: %s", path, sqlite3_errmsg(s->db));
        return -1;
    }
    if (!bad)
        return 0;
    snprintf(msg, n,
             "%s is damaged (SQLite's quick_check: %s%s). Keep a copy of it as it is; restore a"
             " backup, or save what can be read into a new file with sqlite3 %s .recover |"
             " sqlite3 recovered.db, and use that",
             path, first, bad > 1 ? ", and more" : "", path);
    return 1;
}

int store_is_empty(struct store *s)
{
    sqlite3_stmt *q = NULL;
    int empty = sqlite3_prepare_v2(
                    s->db, "SELECT (SELECT count(*) FROM sweeps) + (SELECT count(*) FROM tasks)",
                    -1, &q, NULL) == SQLITE_OK &&
                sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) == 0;
    sqlite3_finalize(q);
    return empty;
}

/* "file:PATH?immutable=1" with PATH percent-escaped. Returns 0, or -1 when it does not fit. */
static int uri_file(const char *path, char *out, size_t n)
{
    size_t o = (size_t)snprintf(out, n, "file:");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if (o + 4 >= n)
            return -1;
        if (*c == '%' || *c == '?' || *c == '#' || *c <= ' ' || *c >= 0x7f)
            o += (size_t)snprintf(out + o, n - o, "%%%02X", *c);
        else
            out[o++] = (char)*c;
    }
    return snprintf(out + o, n - o, "?immutable=1") >= (int)(n - o) ? -1 : 0;
}

struct store *store_open_readonly(const char *path, char *err, size_t errlen)
{
    struct store *s = store_alloc(path, 1, err, errlen);
    if (!s)
        return NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        goto fail;
    }
    if (store_connect(s, path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, 0, err, errlen))
        goto fail;
    int version, nobj;
    if (store_schema_inspect(s->db, path, &version, &nobj, err, errlen)) {
        /* A WAL database in a directory we cannot write (a read-only share): SQLite cannot make
         * its -shm file. With no -wal file left over, the file alone is the whole database and
         * can be read as immutable. */
        char wal[4096], uri[8192];
        int ec = sqlite3_errcode(s->db);
        snprintf(wal, sizeof wal, "%s-wal", path);
        if ((ec & 0xff) != SQLITE_READONLY && (ec & 0xff) != SQLITE_CANTOPEN)
            goto fail;
        if (access(wal, F_OK) == 0 || uri_file(path, uri, sizeof uri))
            goto fail;
        sqlite3_close(s->db);
        s->db = NULL;
        if (sqlite3_open_v2(uri, &s->db,
                            SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                            NULL) != SQLITE_OK ||
            store_schema_inspect(s->db, path, &version, &nobj, err, errlen))
            goto fail;
    }
    if (version == 0) {
        snprintf(err, errlen, "%s: not an aimsweep results database (empty)", path);
        goto fail;
    }
    if (store_register_functions(s->db))
        goto fail;
    if (store_schema_temp_views(s->db, version, path, err, errlen))
        goto fail;
    if (store_exec(s->db, "PRAGMA query_only=ON;", err, errlen, path))
        goto fail;
    return s;
fail:
    store_close(&s);
    return NULL;
}

/* Opens (open = 1) or commits (open = 0) the batch, unless it is so already. */
static int batch(struct store *s, int open)
{
    if (s->in_txn == open)
        return 0;
    STORE_CALL(s, sqlite3_exec(s->db, open ? "BEGIN IMMEDIATE" : "COMMIT", NULL, NULL, NULL));
    s->in_txn = open;
    return 0;
fail:
    /* a commit that failed on a full disk or an I/O error may have rolled the transaction
     * back itself: then there is none left to commit or roll back */
    if (!open && sqlite3_get_autocommit(s->db))
        s->in_txn = 0;
    return -1;
}

int store_checkpoint(struct store *s, int truncate)
{
    if (!s || !s->db || s->readonly)
        return 0;
    if (store_commit(s))
        return -1;
    int rc = sqlite3_wal_checkpoint_v2(
        s->db, NULL, truncate ? SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc == SQLITE_BUSY && truncate) /* a reader stays: what it does not need, at least */
        rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    s->ckpt_at = clock_now_s();
    s->ckpt_commits = 0;
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
        store_failed(s, rc, "copying the write-ahead log into the database file");
        return -1;
    }
    return 0;
}

/* After a commit: a passive checkpoint when it is due (store_checkpoint). A failed one is not
 * the commit's failure: the results are safe in the log; the next one tries again. */
static void checkpoint_after_commit(struct store *s)
{
    double now = clock_now_s();
    if (s->ckpt_every_s < 0) {
        const char *v = getenv("AIMSWEEP_CHECKPOINT_S");
        char *end = NULL;
        double x = v ? strtod(v, &end) : -1;
        s->ckpt_every_s = v && end != v && !*end && x >= 0 ? x : STORE_CHECKPOINT_S;
    }
    /* the first commit of this connection checkpoints at once: the schema and the sweep's
     * registration go into the file from the start */
    if (s->ckpt_at > 0 && ++s->ckpt_commits < STORE_CHECKPOINT_COMMITS &&
        now - s->ckpt_at < s->ckpt_every_s)
        return;
    (void)sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    s->ckpt_at = now;
    s->ckpt_commits = 0;
}

int store_begin(struct store *s) { return batch(s, 1); }
int store_commit(struct store *s)
{
    int was_open = s->in_txn;
    if (batch(s, 0))
        return -1;
    if (was_open && !s->readonly)
        checkpoint_after_commit(s);
    return 0;
}

void store_rollback(struct store *s)
{
    if (!s->in_txn)
        return;
    /* unchecked on purpose: it runs after a failure, whose message it must not replace, and a
     * failed ROLLBACK means SQLite has already rolled the transaction back itself */
    (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    s->in_txn = 0;
}

int store_step_done(struct store *s, sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    if (rc != SQLITE_DONE) {
        store_failed(s, rc, NULL);
        return -1;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return 0;
}

int store_run_stmt(struct store *s, const char *sql, const char *a, const char *b, const char *c,
                   int64_t n)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return -1;
    const char *v[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (v[i])
            sqlite3_bind_text(q, i + 1, v[i], -1, SQLITE_TRANSIENT);
    if (sqlite3_bind_parameter_count(q) >= 4)
        sqlite3_bind_int64(q, 4, n);
    int rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(q);
    return rc;
}
