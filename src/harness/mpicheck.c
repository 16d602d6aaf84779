/*
 * mpicheck.c: the report of a failed MPI call (see mpicheck.h).
 */
#include "aimsweep/harness/mpicheck.h"

#include <stdio.h>
#include <string.h>

int mpicheck_failed(int code, const char *call, const char *file, int line)
{
    if (code == MPI_SUCCESS)
        return 0;
    char msg[MPI_MAX_ERROR_STRING] = "", who[32] = "";
    int len = 0, init = 0, fin = 0, rank;
    if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error code %d", code);
    /* the rank only while MPI is up (the failed call may be MPI_Init itself) */
    if (MPI_Initialized(&init) == MPI_SUCCESS && init && MPI_Finalized(&fin) == MPI_SUCCESS &&
        !fin && MPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS)
        snprintf(who, sizeof who, "rank %d: ", rank);
    const char *base = strrchr(file, '/');
    fprintf(stderr, "aimsweep: %s%s failed (%s:%d): %s\n", who, call, base ? base + 1 : file, line,
            msg);
    return 1;
}

int mpicheck_errors_return(MPI_Comm comm)
{
    MPICHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), -1);
    return 0;
}
