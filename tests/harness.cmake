# Tests of the sweep harness (included from tests/CMakeLists.txt when the harness is built).
# unit: modules without MPI; mpi: whole sweeps at 1, 2 and 4 ranks (oversubscribed);
# fault: SIGKILL and SIGUSR1 in the middle of a sweep.
add_executable(test_harness test_harness.c)
target_link_libraries(test_harness PRIVATE aimsweep_harness)
aimsweep_warnings(test_harness)
add_test(NAME test_harness COMMAND test_harness ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_harness PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT "OPENBLAS_NUM_THREADS=1")

set(HARNESS_ENV "AIMSWEEP=$<TARGET_FILE:aimsweep>" "MPIEXEC=${MPIEXEC_EXECUTABLE}"
    "SRCDIR=${CMAKE_SOURCE_DIR}" "OPENBLAS_NUM_THREADS=1"
    # Open MPI leaks in MPI_Init by design; the harness itself is leak-checked by test_harness
    "ASAN_OPTIONS=detect_leaks=0")

add_test(NAME sweep_errors COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_errors.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_errors)
set_tests_properties(sweep_errors PROPERTIES LABELS unit TIMEOUT 240 ENVIRONMENT "${HARNESS_ENV}")

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

# Operations: exit codes, Ctrl-C under mpirun, SIGTERM after SIGUSR1, kill -9 while checkpoints are
# written, parts and merge, reset, a schema-1 database, the ODE point that needs --task-timeout.
add_test(NAME sweep_ops COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sweep_ops.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_ops)
set_tests_properties(sweep_ops PROPERTIES LABELS "fault;mpi" PROCESSORS 2 TIMEOUT 240 ENVIRONMENT "${HARNESS_ENV}")

# The job scripts on a real Slurm started by the test itself (root only; skipped otherwise).
add_test(NAME slurm COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/slurm/slurm_test.sh ${CMAKE_CURRENT_BINARY_DIR}/slurm)
set_tests_properties(slurm PROPERTIES LABELS slurm PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 1200 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${HARNESS_ENV}")
# Grids (ranges, zip, expressions, --set), task ids, weak recovery and its view, migration 1 -> 2.
add_executable(test_grid test_grid.c)
target_link_libraries(test_grid PRIVATE aimsweep_harness)
aimsweep_warnings(test_grid)
add_test(NAME test_grid COMMAND test_grid ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_grid PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT "OPENBLAS_NUM_THREADS=1")

add_test(NAME bench_cli COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/bench_cli.sh ${CMAKE_CURRENT_BINARY_DIR}/bench_cli)
set_tests_properties(bench_cli PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")
add_test(NAME cli_errors COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli_errors.sh ${CMAKE_CURRENT_BINARY_DIR}/cli_errors)
set_tests_properties(cli_errors PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")
add_test(NAME teacher_mean_cli COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/teacher_mean_cli.sh)
set_tests_properties(teacher_mean_cli PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT "${HARNESS_ENV}")

# Printed and stored numbers read back to the same doubles, in shortest form (python3).
add_test(NAME roundtrip COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/roundtrip.py ${CMAKE_CURRENT_BINARY_DIR}/roundtrip)
set_tests_properties(roundtrip PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")

# Checked MPI calls: a failing call comes back reported (one rank, started without mpirun).
add_executable(test_mpicheck test_mpicheck.c)
target_link_libraries(test_mpicheck PRIVATE aimsweep_harness)
aimsweep_warnings(test_mpicheck)
add_test(NAME test_mpicheck COMMAND test_mpicheck)
set_tests_properties(test_mpicheck PROPERTIES LABELS mpi PROCESSORS 1 TIMEOUT 60 ENVIRONMENT "${HARNESS_ENV}")

# cmake --install and the job scripts (with stand-ins for mpirun and srun).
add_test(NAME install_jobs COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/install_jobs.sh ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/install_jobs)
set_tests_properties(install_jobs PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")

# Databases of schema versions 1 to 6 (tests/data/schema_v*.sql) opened by the current store: migrated to 7.
add_executable(test_store_migrate test_store_migrate.c)
target_link_libraries(test_store_migrate PRIVATE aimsweep_harness)
aimsweep_warnings(test_store_migrate)
add_test(NAME test_store_migrate COMMAND test_store_migrate ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_store_migrate PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
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
# Deterministic fuzz of sweep files and `single` flag sets (issue 13): >= 500 cases, each
# exits 0 or 2 in time, with no sanitizer report, and names FILE:LINE or the flag.
add_test(NAME fuzz_inputs COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/fuzz.py ${CMAKE_CURRENT_BINARY_DIR}/fuzz_inputs 600)
set_tests_properties(fuzz_inputs PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT "${HARNESS_ENV}")

add_test(NAME sweep_recommend COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_recommend.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_recommend)
set_tests_properties(sweep_recommend PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")
# Stalled workers (issue 13): the scheduler's bookkeeping with stand-in tasks (one rank stuck
# without heartbeats), then real sweeps with a rank stopped by SIGSTOP, continued or not.
add_executable(test_sched_stall test_sched_stall.c)
target_link_libraries(test_sched_stall PRIVATE aimsweep_harness)
aimsweep_warnings(test_sched_stall)
add_test(NAME test_sched_stall
         COMMAND sh -c ". \"$SRCDIR/tests/harness_lib.sh\" && $MPIRUN -n 3 \"$0\" \"$1\""
                 $<TARGET_FILE:test_sched_stall> ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_sched_stall PROPERTIES LABELS "mpi;fault" PROCESSORS 3 TIMEOUT 120
                     ENVIRONMENT "${HARNESS_ENV}")
add_test(NAME sweep_stall COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_stall.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_stall)
set_tests_properties(sweep_stall PROPERTIES LABELS "fault;mpi" PROCESSORS 3 TIMEOUT 400 ENVIRONMENT "${HARNESS_ENV}")

# Weak recovery with the sign (docs/model.md §8): the C summary, the views and the 5 -> 6
# migration against numpy on real and stored trajectories (python3 with numpy).
add_test(NAME recovery_sign COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recovery_sign.py ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/recovery_sign)
set_tests_properties(recovery_sign PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")

# The database against its users' text and its own failures (reliability.sh says what each
# section checks): SQL injection through every command that takes SQL text.
add_test(NAME reliability COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/reliability.sh ${CMAKE_CURRENT_BINARY_DIR}/reliability)
set_tests_properties(reliability PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${HARNESS_ENV}")

add_test(NAME sweep_crash COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_crash.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_crash)
set_tests_properties(sweep_crash PROPERTIES LABELS "fault;mpi" PROCESSORS 2 TIMEOUT 180 ENVIRONMENT "${HARNESS_ENV}")

add_test(NAME sweep_kill_root COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/sweep_kill_root.sh ${CMAKE_CURRENT_BINARY_DIR}/sweep_kill_root)
set_tests_properties(sweep_kill_root PROPERTIES LABELS "fault;mpi" PROCESSORS 2 TIMEOUT 300 ENVIRONMENT "${HARNESS_ENV}")

# Two nodes on one machine (network namespaces joined by a veth pair): mpirun across them, a
# node lost mid-run, and two slurmd (root only; skipped otherwise).
add_test(NAME multinode COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/multinode/multinode_test.sh ${CMAKE_CURRENT_BINARY_DIR}/multinode)
set_tests_properties(multinode PROPERTIES LABELS multinode PROCESSORS 2 RUN_SERIAL TRUE TIMEOUT 600 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${HARNESS_ENV}")

# A new user's path through the installed tree: man page, completion, help, plan --list, --set
# seeds, figures and pandas from the prefix.
add_test(NAME user_path COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/user_path.sh ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/user_path)
set_tests_properties(user_path PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT "${HARNESS_ENV}")
