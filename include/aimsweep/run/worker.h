/*
 * worker.h: one grid point, every requested solver, and its summary.
 *
 * This is all a rank needs to run a task: numerics in, rows and summaries out. It knows
 * nothing of MPI or SQLite.
 */
#ifndef AIMSWEEP_WORKER_H
#define AIMSWEEP_WORKER_H

#include "aimsweep/base/params.h"
#include "aimsweep/model/obs.h"

struct solver_summary {
    int solver;
    double tau_wr;     /* -1 when never reached (NULL in the database) */
    double samples_wr; /* samples at tau_wr (interpolated, an integer), -1 when never reached */
    double final_overlap;
    double final_loss;
    double
        max_gap_to_sgd; /* max |omega12 - omega12_sgd| over common records, -1 for sgd or without sgd */
    enum run_status status;
    double
        mu_star; /* the teacher's mean Tr(S*)/sqrt(d) (docs/model.md §10), the same for every solver */
};

struct task_result {
    int nsolvers;
    struct traj traj[SOLVER_COUNT];
    struct solver_summary sum[SOLVER_COUNT];
    double wall_s;
};

/* Most memory one task may need, by worker_estimate_bytes: larger points are refused before
 * they run (a larger node would still have to hold several ranks' tasks). */
#define WORKER_MAX_TASK_BYTES (16.0 * 1024 * 1024 * 1024)

/* The peak memory a task takes, in bytes, from its parameters alone: the model (teacher, its
 * factor, the initial student) plus the largest solver (SGD's stored matrices, the flow's
 * state and Runge-Kutta stages, the moment ODE's d x d trace workspaces), plus the records. */
double worker_estimate_bytes(const struct params *p);

/* Runs every solver in p->solvers, in the order sgd, flow, ode. Returns 0 (each solver's own
 * failure is a status in the result), or -1 on allocation failure. A solver is left `done'
 * (RUN_OK) only with every record present and finite (SGD: a positive sample count at the
 * end); otherwise it becomes RUN_ERROR with the reason. */
int worker_run(const struct params *p, struct task_result *res, obs_stop_fn stop, void *ctx);
void worker_result_free(struct task_result *res);

/* How a task is run: stop requests and checkpoints (see worker.c). */
struct worker_ctl {
    obs_stop_fn
        stop; /* polled by every solver within seconds; OBS_STOP_TIMEOUT marks RUN_TIMEOUT */
    void *stop_ctx;
    const char *ckpt_path; /* the task's checkpoint file, or NULL for none */
    double
        ckpt_every_s; /* write one at this wall-clock interval while running (0: only on a stop) */
    int resumed, saved; /* out: continued from a checkpoint; checkpoints written */
    char note[512];     /* out: what went wrong with a checkpoint (refused, not written), or "" */
};

/* worker_run steered by wc. Returns 0, or -1 on allocation failure. */
int worker_run_ctl(const struct params *p, struct task_result *res, struct worker_ctl *wc);

/* Every rule a point must meet to run: params_validate, for the moment ODE the closure's own
 * (ode_check), and its memory estimate within WORKER_MAX_TASK_BYTES. 0, or -1 with the message. `single` and `plan` call it on every point, so a
 * point that cannot run is refused before anything starts. */
int worker_check(const struct params *p, char *err, size_t errlen);

/* A setting that has no effect on p (a closure for direct, whose ODE is exact; ODE settings
 * without the ode solver): 1 with a sentence in buf, or 0. */
int worker_ignored(const struct params *p, char *buf, size_t n);

#endif
