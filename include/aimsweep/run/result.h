/*
 * result.h: a task's result as bytes, so that a worker rank can send it to rank 0 and the
 * scheduler can move it without knowing what is inside.
 *
 * The format is native-endian (the ranks of one job share an architecture), versioned by a
 * magic word, and bounds-checked on reading.
 */
#ifndef AIMSWEEP_RESULT_H
#define AIMSWEEP_RESULT_H

#include <stddef.h>

#include "aimsweep/run/worker.h"

/* Serialises r (may be NULL when the task failed before running) and a task-level error
 * message (NULL or "" when none). Returns 0 with a new buffer in *buf (free it), or -1. */
int result_pack(const struct task_result *r, const char *task_error, unsigned char **buf,
                size_t *len);

/* Reads bytes back. Returns 0 with r filled (free with worker_result_free) and the task-level
 * error copied into task_error (empty when none), or -1 on malformed bytes (r zeroed). */
int result_unpack(const unsigned char *buf, size_t len, struct task_result *r, char *task_error,
                  size_t errlen);

#endif
