/*
 * task_status.h: the one vocabulary of task and solver outcomes.
 *
 * A task in the results database has one of these statuses (tasks.status), and each of its
 * solvers one of the finished ones (summary.status, and what `aimsweep single` prints). The
 * words are spelled once, in task_status.c; the database's CHECK constraint, the set of tasks
 * a run still has to do, the queries of `aimsweep status` and every message are derived from
 * this enum and its sets, so a status added here reaches all of them.
 *   new           not in the database yet (never stored: the CHECK leaves it out)
 *   pending       registered, not run yet
 *   running       handed to a rank; a job that died leaves this, and the next run reruns it
 *   done          every solver finished
 *   diverged      sgd or flow stopped on non-finite or exploding values (a result, not a failure)
 *   ode_diverged  only the moment ODE stopped that way
 *   error         a solver or the task failed; not rerun unless asked
 *   interrupted   stopped by a signal or time limit; rerun by the next run
 *   timeout       stopped by its own wall limit (run --task-timeout); rerun only when asked,
 *                 like error
 * The order is the order of the CHECK list and of the counts a run prints at its end.
 */
#ifndef AIMSWEEP_TASK_STATUS_H
#define AIMSWEEP_TASK_STATUS_H

#include <stddef.h>

enum task_status {
    TASK_NEW = 0,
    TASK_PENDING,
    TASK_RUNNING,
    TASK_DONE,
    TASK_DIVERGED,
    TASK_ODE_DIVERGED,
    TASK_ERROR,
    TASK_INTERRUPTED,
    TASK_TIMEOUT,
    TASK_STATUS_COUNT
};

/* Sets of statuses, as bit masks over enum task_status. */
#define TASK_STATUS_BIT(s) (1u << (unsigned)(s))
/* What the database may hold (everything but new). */
#define TASK_STATUS_STORED (((1u << TASK_STATUS_COUNT) - 1u) & ~TASK_STATUS_BIT(TASK_NEW))
/* In the database and still to run (error only when a run is asked to retry errors). */
#define TASK_STATUS_TO_RUN                                                                         \
    (TASK_STATUS_BIT(TASK_PENDING) | TASK_STATUS_BIT(TASK_RUNNING) |                               \
     TASK_STATUS_BIT(TASK_INTERRUPTED))
/* Finished for good: a run does not start them again (error unless asked). */
#define TASK_STATUS_FINISHED                                                                       \
    (TASK_STATUS_BIT(TASK_DONE) | TASK_STATUS_BIT(TASK_DIVERGED) |                                 \
     TASK_STATUS_BIT(TASK_ODE_DIVERGED) | TASK_STATUS_BIT(TASK_ERROR) |                            \
     TASK_STATUS_BIT(TASK_TIMEOUT))
/* A solver's outcome: the statuses a finished solver reports. */
#define TASK_STATUS_SOLVER (TASK_STATUS_FINISHED | TASK_STATUS_BIT(TASK_INTERRUPTED))

/* The status's word (a static string), or "?" for a value out of range. */
const char *task_status_name(enum task_status s);

/* The status named by a word. Returns 0, or -1 (and *s untouched) for an unknown word. */
int task_status_parse(const char *name, enum task_status *s);

/* 1 when a task in status s still has to run: new, pending, running, interrupted, and error
 * and timeout too when retry_errors. */
int task_status_todo(enum task_status s, int retry_errors);

/* The statuses of mask as an SQL list, "'pending','running'" (for "status IN (...)"), into
 * buf. Returns 0, or -1 when it does not fit in n bytes. */
int task_status_sql_list(unsigned mask, char *buf, size_t n);

#endif
