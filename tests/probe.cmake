# Tests of `aimsweep probe` (src/probe/, src/cli/cli_probe*.c; included from tests/CMakeLists.txt
# when the command is built). The checkpoint files are written by NumPy at test time.
set(PROBE_DIR ${CMAKE_CURRENT_BINARY_DIR}/probe)
add_test(NAME probe_files COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/probe/test_probe_files.py
         $<TARGET_FILE:aimsweep> ${PROBE_DIR}/files)
set_tests_properties(probe_files PROPERTIES LABELS unit TIMEOUT 120
                     ENVIRONMENT "OPENBLAS_NUM_THREADS=1;ASAN_OPTIONS=detect_leaks=1")
# Theorem 1's check: passes on an extensive-rank S, flags a rank-1 S, fails a planted Omega.
add_executable(test_probe test_probe.c)
target_link_libraries(test_probe PRIVATE aimsweep_probe)
aimsweep_warnings(test_probe)
add_test(NAME test_probe COMMAND test_probe)
set_tests_properties(test_probe PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
# A short sample of the readers' fuzzing (the long run: docs/probe.md, under build-asan).
add_executable(probe_fuzz probe_fuzz.c)
target_link_libraries(probe_fuzz PRIVATE aimsweep_probe)
aimsweep_warnings(probe_fuzz)
add_test(NAME probe_fuzz_sample COMMAND sh -c
         "\"$0\" 1500 1 $(/usr/bin/python3 '${CMAKE_CURRENT_SOURCE_DIR}/probe/fuzz_seeds.py' '${PROBE_DIR}/fuzz')"
         $<TARGET_FILE:probe_fuzz>)
set_tests_properties(probe_fuzz_sample PROPERTIES LABELS unit TIMEOUT 120
                     ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
