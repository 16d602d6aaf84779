/*
 * mpicheck.h: checked MPI calls, in the manner of PETSc's PetscCallMPI.
 *
 * Every MPI call of the harness and the command line goes through MPICHECK (return an error
 * code from the calling function) or MPICHECK_FAILED (an expression, for functions that leave
 * through a cleanup label). A failed call is reported on stderr with its text, its place, the
 * world rank and MPI's own message:
 *   aimsweep: rank 2: MPI_Send(msg, ..., comm) failed (sched.c:250): MPI_ERR_TRUNCATE: ...
 * MPI's default handler (MPI_ERRORS_ARE_FATAL) would kill the job before a code comes back:
 * mpicheck_errors_return sets MPI_ERRORS_RETURN on a communicator so that failures return.
 * None of these functions is collective.
 */
#ifndef AIMSWEEP_MPICHECK_H
#define AIMSWEEP_MPICHECK_H

#include <mpi.h>

/* Reports a failed call (code != MPI_SUCCESS) and returns 1; returns 0 for MPI_SUCCESS.
 * call is the call's text, file and line where it is. Not collective. */
int mpicheck_failed(int code, const char *call, const char *file, int line);

/* Sets MPI_ERRORS_RETURN on comm. Returns 0, or -1 after reporting. Not collective (it
 * changes this rank's handle only). */
int mpicheck_errors_return(MPI_Comm comm);

/* 1 (after the report) when the MPI call fails, else 0. */
#define MPICHECK_FAILED(call) mpicheck_failed((call), #call, __FILE__, __LINE__)

/* Runs an MPI call; when it fails, reports it and returns err from the calling function.
 * (It stringises call itself: through MPICHECK_FAILED the text would be macro-expanded.) */
#define MPICHECK(call, err)                                                                        \
    do {                                                                                           \
        if (mpicheck_failed((call), #call, __FILE__, __LINE__))                                    \
            return (err);                                                                          \
    } while (0)

#endif
