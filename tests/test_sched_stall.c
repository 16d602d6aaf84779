/*
 * test_sched_stall.c: the scheduler's stall bookkeeping (sched.c) with stand-in tasks, under
 * mpirun -n 3 (rank 0 schedules, ranks 1 and 2 compute; no solver, no database).
 *
 * A task "works" for TASK_WORK_S, polling its stop callback every millisecond, so that each one
 * outlasts the stall timeout many times over: only the heartbeats keep its rank from being taken
 * for stalled. Rank 1's first task is stuck instead: it sleeps STUCK_S without polling (as in a
 * hung kernel call), then polls again. The cheapest task (handed out last) waits until rank 0
 * has seen rank 1's late result (a flag file that rank 0's note callback writes), so that the
 * late result always arrives while the sweep still runs, whatever the machine's load.
 * Checks (rank 0): ops.finished saw every task exactly once and never from rank 1 after the
 * stall; rank 1's stuck task was handed out again and finished on rank 2; stats say 1 stalled
 * rank, its task reassigned, 1 late result ignored, no silent rank; the stall is noted with
 * rank 1's pid. Rank 1: its stuck task's stop callback answered OBS_STOP_ABANDON (so the solver
 * leaves no checkpoint), and it ran no task after that. Every rank's failures are summed.
 * Planted errors: no heartbeat from the stop callback takes rank 2 for stalled too (stalled 2,
 * and with no rank left the sweep ends with tasks unfinished: 4+ checks fail); a late result
 * passed on to ops.finished counts the stuck task twice and from rank 1 (2 checks); a stalled
 * rank's task not queued again leaves it unfinished (2 checks); DONE sent to an idle rank 2
 * while rank 1 still holds its task leaves nobody to rerun it (2 checks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aimsweep/base/clock.h"
#include "aimsweep/harness/sched.h"
#include "aimsweep/model/obs.h"
#include "check.h"

#define NTASK 6
#define TASK_WORK_S 1.2
#define STUCK_S 3.0
#define STALL_S 1.0
#define FLAG_WAIT_S 60.0

static char flag_path[512];
static int my_rank;

/* rank 0's record */
static int nfinished[NTASK], finished_by[NTASK], nstarted[NTASK], started_by[NTASK][4], nreturned;
static int stall_noted, late_noted;
static char pid_text[64];

/* rank 1's record */
static int stuck_answer = -1, tasks_after_stuck;

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int run(void *ctx, uint64_t id, const char *text, int (*stop)(void *), void *stop_ctx,
               unsigned char **out, size_t *len)
{
    (void)ctx;
    (void)id;
    static int first = 1;
    int answer = 0, last = !strcmp(text, "t5");
    if (my_rank == 1 && !first)
        tasks_after_stuck++;
    if (my_rank == 1 && first) {
        first = 0;
        sleep_s(STUCK_S); /* no poll: no heartbeat */
        stuck_answer = stop(stop_ctx);
        answer = stuck_answer;
    }
    double t0 = clock_now_s();
    while (!answer && clock_now_s() - t0 < TASK_WORK_S) {
        answer = stop(stop_ctx);
        sleep_s(1e-3);
    }
    while (!answer && last && access(flag_path, F_OK) != 0 && clock_now_s() - t0 < FLAG_WAIT_S) {
        answer = stop(stop_ctx);
        sleep_s(1e-3);
    }
    *out = malloc(16);
    if (!*out)
        return -1;
    *len = (size_t)snprintf((char *)*out, 16, "r%d a%d", my_rank, answer) + 1;
    return 0;
}

static int started(void *ctx, size_t i, int rank, const char *host, const char *kernels)
{
    (void)ctx;
    (void)host;
    (void)kernels;
    if (i < NTASK && nstarted[i] < 4)
        started_by[i][nstarted[i]++] = rank;
    return 0;
}

static int finished(void *ctx, size_t i, int rank, const unsigned char *bytes, size_t len)
{
    (void)ctx;
    (void)len;
    CHECK(i < NTASK && bytes, "finished: task %zu, bytes %p", i, (const void *)bytes);
    if (i < NTASK) {
        nfinished[i]++;
        finished_by[i] = rank;
    }
    return 0;
}

static int returned(void *ctx, size_t i)
{
    (void)ctx;
    (void)i;
    nreturned++;
    return 0;
}

static void note(void *ctx, const char *line)
{
    (void)ctx;
    printf("note: %s\n", line);
    fflush(stdout);
    if (strstr(line, "has sent nothing") && strstr(line, "rank 1 ") && strstr(line, pid_text))
        stall_noted++;
    if (strstr(line, "late result") && strstr(line, "rank 1 ")) {
        late_noted++;
        FILE *f = fopen(flag_path, "w");
        if (f)
            fclose(f);
    }
}

int main(int argc, char **argv)
{
    int size = 0;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3) {
        if (my_rank == 0)
            fprintf(stderr, "test_sched_stall: needs mpirun -n 3 (got %d ranks)\n", size);
        MPI_Finalize();
        return 1;
    }
    snprintf(flag_path, sizeof flag_path, "%s/late.flag", argc > 1 ? argv[1] : "/tmp");
    if (my_rank == 0)
        unlink(flag_path);
    /* rank 1's pid, for the check that the note names it */
    long pid = (long)getpid(), pid1 = 0;
    MPI_Status st;
    if (my_rank == 1)
        MPI_Send(&pid, 1, MPI_LONG, 0, 99, MPI_COMM_WORLD);
    if (my_rank == 0) {
        MPI_Recv(&pid1, 1, MPI_LONG, 1, 99, MPI_COMM_WORLD, &st);
        snprintf(pid_text, sizeof pid_text, "pid %ld ", pid1);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    struct sched_task tasks[NTASK];
    static const char *const text[NTASK] = {"t0", "t1", "t2", "t3", "t4", "t5"};
    for (int i = 0; i < NTASK; i++) /* falling costs: t5 is handed out last */
        tasks[i] = (struct sched_task){(uint64_t)(1000 + i), text[i], 100.0 - i};
    struct sched_ops ops = {run, started, finished, returned, NULL, note, NULL, NULL};
    struct sched_opts opts = {0, 0, 0, 0, 0, STALL_S};
    struct sched_stats stats;
    memset(&stats, 0, sizeof stats);
    double t0 = clock_now_s();
    int rc = sched_run(MPI_COMM_WORLD, my_rank == 0 ? tasks : NULL, my_rank == 0 ? NTASK : 0, &ops,
                       &opts, &stats);
    CHECK(rc == 0, "rank %d: sched_run returned %d", my_rank, rc);
    if (my_rank == 0) {
        printf(
            "rank 0: %.1f s; stalled %zu, reassigned %zu, late ignored %zu, silent %zu, done %zu\n",
            clock_now_s() - t0, stats.stalled, stats.reassigned, stats.late_ignored,
            stats.stalled_silent, stats.done);
        CHECK(stats.stalled == 1, "stalled ranks: %zu, expected 1 (rank 1)", stats.stalled);
        CHECK(stats.reassigned == 1, "tasks reassigned: %zu, expected 1", stats.reassigned);
        CHECK(stats.late_ignored == 1, "late results ignored: %zu, expected 1", stats.late_ignored);
        CHECK(stats.stalled_silent == 0, "silent ranks: %zu (rank 1 answered again)",
              stats.stalled_silent);
        CHECK(stats.done == NTASK, "tasks done: %zu of %d", stats.done, NTASK);
        CHECK(nreturned == 1, "ops.returned told of the stalled task: %d times", nreturned);
        int stuck = -1;
        for (int i = 0; i < NTASK; i++) {
            CHECK(nfinished[i] == 1, "task %d finished %d times", i, nfinished[i]);
            CHECK(finished_by[i] == 2, "task %d finished by rank %d, expected 2", i,
                  finished_by[i]);
            if (nstarted[i] >= 1 && started_by[i][0] == 1)
                stuck = i;
        }
        CHECK(stuck >= 0, "no task was handed to rank 1");
        if (stuck >= 0)
            CHECK(nstarted[stuck] == 2 && started_by[stuck][1] == 2,
                  "rank 1's task %d handed out %d times (second to rank %d), expected twice, "
                  "then to rank 2",
                  stuck, nstarted[stuck], nstarted[stuck] > 1 ? started_by[stuck][1] : -1);
        CHECK(stall_noted == 1, "stall notes naming rank 1 and its pid: %d", stall_noted);
        CHECK(late_noted == 1, "late-result notes: %d", late_noted);
        unlink(flag_path);
    }
    if (my_rank == 1) {
        CHECK(stuck_answer == OBS_STOP_ABANDON,
              "rank 1: the stuck task's stop answered %d, "
              "expected OBS_STOP_ABANDON (%d)",
              stuck_answer, OBS_STOP_ABANDON);
        CHECK(tasks_after_stuck == 0, "rank 1 ran %d tasks after it was taken for stalled",
              tasks_after_stuck);
    }
    int fails = check_fail, total = 0;
    MPI_Reduce(&fails, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    char name[64];
    snprintf(name, sizeof name, "test_sched_stall rank %d", my_rank);
    int code = check_done(name);
    MPI_Finalize();
    return my_rank == 0 ? (total > 0) : code;
}
