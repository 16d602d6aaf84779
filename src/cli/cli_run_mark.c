/*
 * cli_run_mark.c: the mark a computing rank leaves of the task it runs, so that a task that kills
 * its rank is charged an attempt and nothing else is (docs/cluster.md, "The attempt rule").
 *
 * Before a task starts, its rank writes CKPT_DIR/rank-R.hold: the task's id on the first line.
 * When the task ends the file is removed. A crash of the rank while the task runs (SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL, SIGABRT: the task's own code) adds a second line, "crash SIG", from
 * the signal handler, and the rank then dies of the signal as it would have. A rank killed from
 * outside (SIGKILL, a node lost) cannot write that line: its mark names the task but charges
 * nothing. The next run reads the marks before any task starts (run_marks_read) and charges the
 * tasks of the marks that say crash.
 *
 * AIMSWEEP_TEST_CRASH_TASK=ID (16 hex digits) makes the rank that runs task ID crash with
 * SIGSEGV once its mark is written: the tests' stand-in for a task whose code kills its rank.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"

#define MARK_ID_BYTES 17 /* 16 hex digits and a newline */

static volatile sig_atomic_t mark_fd = -1;
static char mark_file[4200];
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NCRASH ((int)(sizeof crash_signals / sizeof crash_signals[0]))
static struct sigaction crash_old[NCRASH];

/* Writes "crash SIG" after the task's id, puts back the handler that was there (Open MPI's
 * backtrace, or the default) and raises the signal again. Async-signal-safe. */
static void on_crash(int sig)
{
    int fd = mark_fd;
    if (fd >= 0) {
        char line[16] = "crash ";
        int k = 6, d = sig >= 10 ? 2 : 1;
        line[k + d] = '\n';
        for (int s = sig, j = d - 1; j >= 0; j--, s /= 10)
            line[k + j] = (char)('0' + s % 10);
        size_t len = (size_t)k + (size_t)d + 1;
        (void)!pwrite(fd, line, len, MARK_ID_BYTES);
        fdatasync(fd);
    }
    for (int i = 0; i < NCRASH; i++)
        if (crash_signals[i] == sig)
            sigaction(sig, &crash_old[i], NULL);
    raise(sig);
}

static void crash_handlers_install(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    for (int i = 0; i < NCRASH; i++)
        sigaction(crash_signals[i], &sa, &crash_old[i]);
}

static int mark_path(const char *dir, int rank, char *path, size_t n)
{
    return snprintf(path, n, "%s/rank-%d.hold", dir, rank) < (int)n ? 0 : -1;
}

void run_mark_begin(const char *dir, int rank, const char *hex)
{
    char *path = mark_file;
    if (!dir || mark_path(dir, rank, path, sizeof mark_file))
        return;
    crash_handlers_install();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        run_log("cannot write the mark %s (%s): a crash of this rank will not be charged to its "
                "task",
                path, strerror(errno));
        return;
    }
    char line[MARK_ID_BYTES + 1];
    snprintf(line, sizeof line, "%.16s\n", hex);
    if (write(fd, line, MARK_ID_BYTES) != MARK_ID_BYTES) {
        close(fd);
        return;
    }
    mark_fd = fd;
    const char *crash = getenv("AIMSWEEP_TEST_CRASH_TASK");
    if (crash && !strcmp(crash, hex)) {
        run_log("task %s: AIMSWEEP_TEST_CRASH_TASK: crashing this rank (SIGSEGV)", hex);
        raise(SIGSEGV);
    }
}

void run_mark_end(void)
{
    int fd = mark_fd;
    if (fd < 0)
        return;
    mark_fd = -1;
    if (unlink(mark_file) != 0 && ftruncate(fd, 0) != 0)
        run_log("cannot remove this rank's mark %s: %s", mark_file, strerror(errno));
    close(fd);
}

/* Whether a file name is a mark's, rank-R.hold. */
static int is_mark(const char *name)
{
    if (strncmp(name, "rank-", 5) != 0)
        return 0;
    size_t nd = strspn(name + 5, "0123456789");
    return nd > 0 && !strcmp(name + 5 + nd, ".hold");
}

int run_marks_read(const char *dir, uint64_t *crashed, int *sigs, size_t cap, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_mark(e->d_name))
            continue;
        char path[4200], id[64] = "", crash[64] = "";
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int got = fgets(id, sizeof id, f) && fgets(crash, sizeof crash, f);
        fclose(f);
        /* "ID\ncrash SIG\n": anything else (no crash line: a kill from outside) charges nothing */
        char *end;
        id[strcspn(id, "\n")] = 0;
        uint64_t v = strtoull(id, &end, 16);
        if (!got || strlen(id) != 16 || *end || strncmp(crash, "crash ", 6) != 0)
            continue;
        long sig = strtol(crash + 6, &end, 10);
        if (sig > 0 && sig < 65 && (*end == '\n' || !*end) && *n < cap) {
            crashed[*n] = v;
            sigs[(*n)++] = (int)sig;
        }
    }
    closedir(d);
    return 0;
}

void run_marks_clear(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!is_mark(e->d_name))
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
}
