/*
 * test_mpicheck.c: checked MPI calls (mpicheck.h) on one rank. A send to a rank that does not
 * exist must come back as a failure, be reported with the call's text and place, and make a
 * function using MPICHECK return its error code; a call that succeeds must pass through.
 * Planted errors: a macro that ignored the code passes the bad send (3 checks fail); without
 * MPI_ERRORS_RETURN the bad send kills the process (the test fails); a report without the
 * call's text fails the message checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aimsweep/harness/mpicheck.h"
#include "check.h"

/* A send to rank `to`; returns -7 through MPICHECK when it fails. */
static int send_to(int to)
{
    int x = 1;
    MPICHECK(MPI_Send(&x, 1, MPI_INT, to, 5, MPI_COMM_WORLD), -7);
    return 0;
}

int main(int argc, char **argv)
{
    int size = 0, rank = -1;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 1;
    CHECK(mpicheck_errors_return(MPI_COMM_WORLD) == 0, "set MPI_ERRORS_RETURN");
    CHECK(!MPICHECK_FAILED(MPI_Comm_size(MPI_COMM_WORLD, &size)) && size >= 1, "size %d", size);
    CHECK(!MPICHECK_FAILED(MPI_Comm_rank(MPI_COMM_WORLD, &rank)) && rank == 0, "rank %d", rank);

    /* the report goes to stderr: catch it in a file */
    char path[] = "/tmp/test_mpicheck-XXXXXX";
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);
    CHECK(fd >= 0 && saved >= 0, "temporary file");
    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    int bad = MPICHECK_FAILED(MPI_Send(&size, 1, MPI_INT, size + 3, 5, MPI_COMM_WORLD));
    int ret = send_to(size + 3);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    CHECK(bad == 1, "a send to rank %d counted as a success", size + 3);
    CHECK(ret == -7, "MPICHECK returned %d, not the caller's code -7", ret);

    char text[4096] = "";
    FILE *f = fdopen(fd, "r");
    size_t n = f ? (rewind(f), fread(text, 1, sizeof text - 1, f)) : 0;
    text[n] = 0;
    if (f)
        fclose(f);
    unlink(path);
    printf("%s", text);
    CHECK(
        strstr(
            text,
            "aimsweep: rank 0: MPI_Send(&size, 1, MPI_INT, size + 3, 5, MPI_COMM_WORLD) failed") !=
            NULL,
        "report of the first call");
    CHECK(strstr(text, "test_mpicheck.c:") != NULL, "the report names the file");
    CHECK(strstr(text, "MPI_Send(&x, 1, MPI_INT, to, 5, MPI_COMM_WORLD) failed") != NULL,
          "report of the second");
    /* a call that succeeds passes: a send to ourselves is buffered, then received */
    int y = 0, z = 42;
    MPI_Request req;
    CHECK(!MPICHECK_FAILED(MPI_Isend(&z, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, &req)) &&
              !MPICHECK_FAILED(MPI_Recv(&y, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE)) &&
              !MPICHECK_FAILED(MPI_Wait(&req, MPI_STATUS_IGNORE)) && y == 42,
          "self send: got %d", y);
    MPI_Finalize();
    return check_done("test_mpicheck");
}
