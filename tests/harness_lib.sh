# Shared by the harness test scripts: how to launch N ranks, and small checks.
# env: AIMSWEEP (the binary), MPIEXEC (mpirun), SRCDIR (the source tree)
MPIRUN="${MPIEXEC:-mpirun} --oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
fails=0

fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# q DB SQL: one value (or csv rows) from a read-only query
q() { "$AIMSWEEP" query "$1" "$2" --csv --no-header; }

# launch NP ARGS...: aimsweep under mpirun with NP ranks (NP = 0: no mpirun at all)
launch() {
    np=$1
    shift
    if [ "$np" -eq 0 ]; then "$AIMSWEEP" "$@"; else $MPIRUN -n "$np" "$AIMSWEEP" "$@"; fi
}

# The numbers of a database, in a fixed order: every trajectory and summary row.
rows() {
    q "$1" "SELECT task_id, solver, k, tau, samples, omega11, psi11, omega12, trace, overlap, loss
            FROM trajectory ORDER BY task_id, solver, k"
    q "$1" "SELECT task_id, solver, tau_wr, samples_wr, final_overlap, final_loss, max_gap_to_sgd, status
            FROM summary ORDER BY task_id, solver"
    q "$1" "SELECT task_id, status, params FROM tasks ORDER BY task_id"
}
