# Tests of the sweep harness (included from tests/CMakeLists.txt when the harness is built).
# unit: modules without MPI; mpi: whole sweeps at 1, 2 and 4 ranks (oversubscribed);
# fault: SIGKILL and SIGUSR1 in the middle of a sweep.
add_executable(test_harness test_harness.c)
target_link_libraries(test_harness PRIVATE aimsweep_harness)
aimsweep_warnings(test_harness)
add_test(NAME test_harness COMMAND test_harness ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_harness PROPERTIES LABELS unit TIMEOUT 60)

set(HARNESS_ENV "AIMSWEEP=$<TARGET_FILE:aimsweep>" "MPIEXEC=${MPIEXEC_EXECUTABLE}"
    "SRCDIR=${CMAKE_SOURCE_DIR}" "OPENBLAS_NUM_THREADS=1"
    # Open MPI leaks in MPI_Init by design; the harness itself is leak-checked by test_harness
    "ASAN_OPTIONS=detect_leaks=0")

add_test(NAME sweep_errors COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_errors.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_errors)
set_tests_properties(sweep_errors PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")

add_test(NAME sweep_baddb COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_baddb.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_baddb)
set_tests_properties(sweep_baddb PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT "${HARNESS_ENV}")

foreach(np 1 2 4)
  add_test(NAME sweep_mpi_${np} COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_mpi.sh ${np} ${CMAKE_CURRENT_BINARY_DIR}/sweep_mpi_${np})
  set_tests_properties(sweep_mpi_${np} PROPERTIES LABELS mpi PROCESSORS ${np} TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")
endforeach()

add_test(NAME sweep_kill COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_kill.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_kill)
set_tests_properties(sweep_kill PROPERTIES LABELS "fault;mpi" PROCESSORS 2 TIMEOUT 180 ENVIRONMENT "${HARNESS_ENV}")

add_test(NAME sweep_signal COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_signal.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_signal)
set_tests_properties(sweep_signal PROPERTIES LABELS "fault;mpi" PROCESSORS 2 TIMEOUT 180 ENVIRONMENT "${HARNESS_ENV}")

# Storage failures (issue 13): a file system turning read-only mid-run (loop-mounted ext4,
# root only) and a full disk (small tmpfs, root only); both skip with a message elsewhere.
add_test(NAME store_fsfail COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/store_fsfail.sh ${CMAKE_CURRENT_BINARY_DIR}/store_fsfail)
set_tests_properties(store_fsfail PROPERTIES LABELS fault TIMEOUT 180 SKIP_RETURN_CODE 77 ENVIRONMENT "${HARNESS_ENV}")
add_test(NAME store_diskfull COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/store_diskfull.sh ${CMAKE_CURRENT_BINARY_DIR}/store_diskfull)
set_tests_properties(store_diskfull PROPERTIES LABELS fault TIMEOUT 120 SKIP_RETURN_CODE 77 ENVIRONMENT "${HARNESS_ENV}")
# The campaign's input cases against `single` and `query` (issue 13): refusals with ranges,
# exact seeds, query time limit, streaming table, statements that would write refused.
add_test(NAME robust_cli COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/robust_cli.sh ${CMAKE_CURRENT_BINARY_DIR}/robust_cli)
set_tests_properties(robust_cli PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")
# 20 random whole-job SIGKILLs (issue 13): 0 lost, 0 duplicate, no healthy task marked error.
add_test(NAME sweep_kill20 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_kill.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_kill20)
set_tests_properties(sweep_kill20 PROPERTIES LABELS "fault;mpi;slow" PROCESSORS 2 TIMEOUT 600
                     ENVIRONMENT "${HARNESS_ENV};KILL_ROUNDS=20")
