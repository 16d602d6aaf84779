/*
 * task_status.c: the words of enum task_status (the only place they are spelled) and the
 * sets derived from them.
 */
#include "aimsweep/base/task_status.h"

#include <stdio.h>
#include <string.h>

static const char *const task_status_names[TASK_STATUS_COUNT] = {
    [TASK_NEW] = "new",           [TASK_PENDING] = "pending",
    [TASK_RUNNING] = "running",   [TASK_DONE] = "done",
    [TASK_DIVERGED] = "diverged", [TASK_ODE_DIVERGED] = "ode_diverged",
    [TASK_ERROR] = "error",       [TASK_INTERRUPTED] = "interrupted",
    [TASK_TIMEOUT] = "timeout",
};

const char *task_status_name(enum task_status s)
{
    return (unsigned)s < TASK_STATUS_COUNT ? task_status_names[s] : "?";
}

int task_status_parse(const char *name, enum task_status *s)
{
    for (int i = 0; name && i < TASK_STATUS_COUNT; i++)
        if (!strcmp(name, task_status_names[i])) {
            *s = (enum task_status)i;
            return 0;
        }
    return -1;
}

int task_status_todo(enum task_status s, int retry_errors)
{
    unsigned todo = TASK_STATUS_TO_RUN | TASK_STATUS_BIT(TASK_NEW);
    if (retry_errors)
        todo |= TASK_STATUS_BIT(TASK_ERROR) | TASK_STATUS_BIT(TASK_TIMEOUT);
    return (unsigned)s < TASK_STATUS_COUNT && (todo & TASK_STATUS_BIT(s)) != 0;
}

int task_status_sql_list(unsigned mask, char *buf, size_t n)
{
    size_t o = 0;
    if (n)
        buf[0] = 0;
    for (int i = 0; i < TASK_STATUS_COUNT; i++) {
        if (!(mask & TASK_STATUS_BIT(i)))
            continue;
        int k = snprintf(buf + o, n - o, "%s'%s'", o ? "," : "", task_status_names[i]);
        if (k < 0 || (size_t)k >= n - o)
            return -1;
        o += (size_t)k;
    }
    return 0;
}
