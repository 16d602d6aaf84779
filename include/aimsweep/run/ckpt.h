/*
 * ckpt.h: checkpoint files of a task that was stopped before its end.
 *
 * A checkpoint holds the trajectories a task has so far (those of the solvers that finished,
 * and the rows of the solver that was stopped) and that solver's state (opaque bytes from
 * sgd_run_ctl or flow_run_ctl; none for the ODE, which restarts). It is tied to one task: its
 * id and a hash of its canonical text are in the file, and a file of another task, another
 * format or with a wrong checksum is refused. Files are written to a temporary name, synced
 * and renamed, so that a kill at any moment leaves the old checkpoint or the new one, never
 * half of one.
 */
#ifndef AIMSWEEP_CKPT_H
#define AIMSWEEP_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "aimsweep/base/params.h"
#include "aimsweep/model/obs.h"

struct ckpt {
    int ntraj;                      /* trajectories held, in solver order */
    struct traj traj[SOLVER_COUNT]; /* the last one is the stopped solver's when state_len > 0 */
    unsigned char *state;           /* the stopped solver's state, or NULL */
    size_t state_len;
};

/* The identity a checkpoint is tied to: FNV-1a of the canonical text. */
uint64_t ckpt_text_hash(const char *text);

/* Writes trajs[0..ntraj) and the state (NULL, 0: none) to path atomically. Returns 0, or -1
 * with a message in err (the previous file, if any, is left as it was). */
int ckpt_write(const char *path, uint64_t id, uint64_t text_hash, const struct traj *trajs,
               int ntraj, const void *state, size_t state_len, char *err, size_t errlen);

/* Reads path into c. Returns 0, 1 when there is no such file, or -1 with the reason in err when
 * the file is not a checkpoint of this task (foreign, corrupt, truncated). */
int ckpt_read(const char *path, uint64_t id, uint64_t text_hash, struct ckpt *c, char *err,
              size_t errlen);
void ckpt_free(struct ckpt *c);

#endif
