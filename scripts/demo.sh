#!/usr/bin/env bash
# Sets up (Debian packages), builds, and runs the demo sweep (sweeps/quick.yaml: 72 small grid
# points with sgd, flow and ode) on three MPI ranks into quick.db, then prints its status and
# the weak-recovery table and the command that draws its figures. Rerunning resumes: only what
# is not done runs again.
# usage: scripts/demo.sh [DB]   (default quick.db in the source tree; a relative DB is taken
# from the directory the script is called from)
set -euo pipefail
if [ $# -gt 0 ] && [ "${1#/}" = "$1" ]; then
    set -- "$PWD/$1"
fi
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
db=${1:-quick.db}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -n 3 --oversubscribe build/aimsweep run sweeps/quick.yaml --db "$db"
build/aimsweep status "$db"
build/aimsweep query "$db" "SELECT decomposition, info_exponent AS k, d, count(*) AS runs,
  sum(samples_wr IS NOT NULL) AS recovered, round(avg(samples_wr)) AS mean_n_wr
  FROM results WHERE solver = 'sgd' AND status = 'done' GROUP BY decomposition, k, d"
echo
echo "Figures of this database (PNG and PDF into figs/):"
echo "  /usr/bin/python3 analysis/figures.py $db --out figs"
echo "and one self-contained page of the study (report/index.html):"
echo "  /usr/bin/python3 analysis/report.py $db --out report"
