/*
 * task.h: a grid point as the scheduler and the database see it: its canonical parameter
 * text (params_canonical), the id hashed from that text (params_task_id), and an estimated
 * cost. The text is all a rank needs to rebuild the point (task_parse), so the id and the seed
 * define the run whichever rank runs it.
 */
#ifndef AIMSWEEP_TASK_H
#define AIMSWEEP_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "aimsweep/base/params.h"

/* Nominal machine speed that turns the cost model into seconds for one core (rough: the
 * scheduler rescales it with the measured wall times as tasks finish). */
#define TASK_FLOPS_PER_S 6.0e9

struct task {
    uint64_t id;
    char *text;  /* canonical parameter text, owned */
    double cost; /* estimated seconds on one core at TASK_FLOPS_PER_S */
};

/* Fills t from a validated point. Returns 0, or -1 on allocation failure (t zeroed). */
int task_make(const struct params *p, struct task *t);
void task_free(struct task *t);

/* Rebuilds a point from canonical text (or any "key=value;..." text): defaults, then each
 * key with params_set, then params_validate. Returns 0, or -1 with a message in err. */
int task_parse(const char *text, struct params *p, char *err, size_t errlen);

/* The estimated cost in seconds of all solvers of a point (see task.c for the model), and of
 * one solver (SOLVER_SGD, SOLVER_FLOW, SOLVER_ODE). */
double task_cost(const struct params *p);
double task_cost_solver(const struct params *p, int solver);
/* The set-up of a task's model (teacher, start, S*'s eigendecomposition), once per task and
 * in no solver's time (summary.wall_s), in seconds: part of task_cost and task_cost_learned. */
double task_cost_model(const struct params *p);
/* The moment ODE's set-up from the d x d matrices (eigenvalues, Gram matrix, exact traces), in
 * flops at TASK_FLOPS_PER_S: part of task_cost_solver(p, SOLVER_ODE) (task.c has the model). */
double task_ode_setup_flops(const struct params *p);
/* The flops of one evaluation of the population loss and its gradient at p's activation and
 * tokens (0 for closed forms; see task.c). */
double task_phi_flops(const struct params *p);

/* The cost model corrected by measurements: geometric means of measured / nominal seconds per
 * (solver, decomposition, activation), with fallbacks (task.c). Zero-initialise, feed with
 * task_cost_learn, free with task_cost_model_free. */
struct cost_entry {
    int solver, decomposition; /* decomposition -1: any */
    char activation[64];       /* "": any */
    double sum_log;
    long n;
};
struct cost_model {
    struct cost_entry *e;
    size_t n, cap;
};
/* One finished solver run of wall_s seconds. Returns 0, or -1 when out of memory. */
int task_cost_learn(struct cost_model *cm, const struct params *p, int solver, double wall_s);
/* measured / nominal for a solver of p (1 when nothing was learned); cm may be NULL. */
double task_cost_factor(const struct cost_model *cm, const struct params *p, int solver);
/* The corrected estimate of all solvers of p, in seconds. */
double task_cost_learned(const struct cost_model *cm, const struct params *p);
void task_cost_model_free(struct cost_model *cm);

/* The id as 16 lowercase hex digits (the form the database stores), and back. */
void task_id_hex(uint64_t id, char out[17]);
int task_id_parse(const char *hex, uint64_t *id);

#endif
