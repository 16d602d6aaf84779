# Tests of the analysis scripts (label `analysis`; included from tests/CMakeLists.txt when the
# harness is built). They run /usr/bin/python3 with Debian's numpy and matplotlib. The fixture
# makes a demo-like database with the aimsweep binary (a few seconds); the views are checked
# against Python, the fit against planted laws, the scripts on that database and on bad input.
set(ANALYSIS_DIR ${CMAKE_CURRENT_BINARY_DIR}/analysis)
set(ANALYSIS_DB ${ANALYSIS_DIR}/demo.db)
set(ANALYSIS_ENV "AIMSWEEP=$<TARGET_FILE:aimsweep>" "SRCDIR=${CMAKE_SOURCE_DIR}" "OPENBLAS_NUM_THREADS=1"
    "ASAN_OPTIONS=detect_leaks=0" "MPLBACKEND=Agg")

add_test(NAME analysis_db COMMAND sh -c
         "rm -rf '${ANALYSIS_DIR}' && mkdir -p '${ANALYSIS_DIR}' && \"$AIMSWEEP\" run '${CMAKE_CURRENT_SOURCE_DIR}/analysis/demo.yaml' --db '${ANALYSIS_DB}' && \"$AIMSWEEP\" run '${CMAKE_CURRENT_SOURCE_DIR}/analysis/orders.yaml' --db '${ANALYSIS_DB}'")
set_tests_properties(analysis_db PROPERTIES LABELS analysis TIMEOUT 120 ENVIRONMENT "${ANALYSIS_ENV}"
                     FIXTURES_SETUP analysis_db)

add_test(NAME analysis_views COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/analysis/views.py
         ${ANALYSIS_DB} $<TARGET_FILE:aimsweep> ${CMAKE_CURRENT_SOURCE_DIR}/analysis/demo.yaml ${ANALYSIS_DIR}/views)
set_tests_properties(analysis_views PROPERTIES LABELS analysis TIMEOUT 120 ENVIRONMENT "${ANALYSIS_ENV}"
                     FIXTURES_REQUIRED analysis_db)

add_test(NAME analysis_fit COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/analysis/fit.py)
set_tests_properties(analysis_fit PROPERTIES LABELS analysis TIMEOUT 180)

add_test(NAME analysis_scripts COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/analysis/scripts.sh ${ANALYSIS_DB}
         ${ANALYSIS_DIR}/scripts)
set_tests_properties(analysis_scripts PROPERTIES LABELS analysis TIMEOUT 900 ENVIRONMENT "${ANALYSIS_ENV}"
                     FIXTURES_REQUIRED analysis_db)

add_test(NAME analysis_report COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/analysis/report.sh ${ANALYSIS_DB}
         ${ANALYSIS_DIR}/report)
set_tests_properties(analysis_report PROPERTIES LABELS analysis TIMEOUT 300 ENVIRONMENT "${ANALYSIS_ENV}"
                     FIXTURES_REQUIRED analysis_db)
