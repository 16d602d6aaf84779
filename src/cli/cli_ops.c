/*
 * cli_ops.c: `aimsweep merge` and `aimsweep reset`, the two commands that change a finished
 * study's database (a running study's database is refused: both take the run's lock).
 *
 * merge STUDY.db PART.db...: the parts of a study run as `run --part I/N` (each into its own
 * database, e.g. one per element of a job array) go into one database, every task once, the
 * newest finished result of a task kept, every run's provenance (sweeps rows) copied.
 * reset DB --where "SQL": the tasks matching a condition over the columns of tasks go back to
 * pending, to be run again by the next `run` from the beginning (their rows stay until new
 * results replace them; their checkpoints are removed).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/store.h"

/* Removes a database this command created, with the files SQLite keeps beside it. */
static void remove_db(const char *path)
{
    char side[4200];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

int cli_merge(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf(
            "usage: aimsweep merge STUDY.db PART.db [PART.db ...]\n"
            "  merges the databases of `run --part I/N` into STUDY.db (created if missing): every task\n"
            "  once, a task's newest finished result kept, the provenance of every run copied\n");
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: aimsweep merge STUDY.db PART.db [PART.db ...]\n");
        return 2;
    }
    char err[1024];
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], argv[1]) || access(argv[i], R_OK) != 0) {
            fprintf(stderr, "aimsweep merge: %s: %s\n", argv[i],
                    !strcmp(argv[i], argv[1]) ? "the study itself cannot be a part"
                                              : "cannot read it");
            return 2;
        }
        /* a part with no schema yet (its run is starting, or it is not a results database) is
         * refused as it is: opening it for writing would make it an empty results database */
        struct store *p = store_open_readonly(argv[i], err, sizeof err);
        if (!p) {
            fprintf(stderr, "aimsweep merge: %s\n", err);
            return 2;
        }
        store_close(&p);
        /* opening a part for writing checks it, brings its schema up to date and makes sure no
         * run is still writing it */
        p = store_open(argv[i], err, sizeof err);
        if (!p) {
            fprintf(stderr, "aimsweep merge: %s\n", err);
            return 2;
        }
        store_close(&p);
    }
    /* a study this merge creates is removed again when nothing could be merged into it */
    int created = access(argv[1], F_OK) != 0;
    struct store *s = store_open(argv[1], err, sizeof err);
    if (!s) {
        fprintf(stderr, "aimsweep merge: %s\n", err);
        if (created)
            remove_db(argv[1]);
        return 2;
    }
    int code = 0, merged = 0;
    for (int i = 2; i < argc && !code; i++) {
        struct store_merge_stats ms;
        /* the part's lock held while it is read, so that no run starts writing it meanwhile */
        struct store *p = store_open(argv[i], err, sizeof err);
        if (!p) {
            fprintf(stderr, "aimsweep merge: %s (nothing of it was merged)\n", err);
            code = 2;
            break;
        }
        int failed = store_merge(s, argv[i], &ms, err, sizeof err);
        store_close(&p);
        if (failed) {
            fprintf(stderr, "aimsweep merge: %s (nothing of it was merged)\n", err);
            code = 1;
            break;
        }
        merged++;
        printf(
            "%s: %ld runs, %ld tasks added, %ld replaced by newer results, %ld kept as they were\n",
            argv[i], ms.sweeps, ms.added, ms.replaced, ms.kept);
    }
    /* removed under its lock, and only when still empty: another merge into the same new
     * study may have filled it while this one waited */
    if (code && created && !merged && store_is_empty(s))
        remove_db(argv[1]);
    store_close(&s);
    return code;
}

int cli_reset(int argc, char **argv)
{
    const char *file = NULL, *where = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(
                "usage: aimsweep reset FILE --where \"SQL condition\"\n"
                "  puts the tasks matching the condition (over the columns of tasks, e.g.\n"
                "  \"status = 'error'\" or \"sweep_id IN (SELECT sweep_id FROM sweeps WHERE git_commit = 'abc')\")\n"
                "  back to pending; the next run computes them again and replaces their rows\n");
            return 0;
        }
        if (!strcmp(argv[i], "--where") && i + 1 < argc)
            where = argv[++i];
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else {
            fprintf(stderr, "aimsweep reset: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!file || !where || !*where) {
        fprintf(stderr, "usage: aimsweep reset FILE --where \"SQL condition\"\n");
        return 2;
    }
    if (access(file, F_OK) != 0) {
        fprintf(stderr, "aimsweep reset: %s: no such database\n", file);
        return 2;
    }
    char err[1024];
    struct store *s = store_open(file, err, sizeof err);
    if (!s) {
        fprintf(stderr, "aimsweep reset: %s\n", err);
        return 2;
    }
    long n = 0;
    int code = 0;
    if (store_reset(s, where, &n, err, sizeof err)) {
        fprintf(stderr, "aimsweep reset: %s: %s\n", file, err);
        code = 2;
    } else {
        /* a reset task starts from the beginning: its checkpoint (of the build that wrote it) goes */
        long gone = 0;
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(store_db(s), "SELECT task_id FROM tasks WHERE status = 'pending'",
                               -1, &q, NULL) == SQLITE_OK)
            while (sqlite3_step(q) == SQLITE_ROW) {
                char path[4200];
                snprintf(path, sizeof path, "%s.ckpt/%s.ckpt", file,
                         (const char *)sqlite3_column_text(q, 0));
                gone += unlink(path) == 0;
            }
        sqlite3_finalize(q);
        printf("%ld task%s back to pending\n", n, n == 1 ? "" : "s");
        if (gone)
            printf("%ld checkpoint%s of them removed\n", gone, gone == 1 ? "" : "s");
    }
    store_close(&s);
    return code;
}
