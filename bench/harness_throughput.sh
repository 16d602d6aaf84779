#!/bin/sh
# Dispatch and commit throughput of `aimsweep run` on tiny tasks, against GNU parallel running
# the same tasks through `aimsweep single` (one process per task, csv collected in one file).
# usage: bench/harness_throughput.sh [NTASKS] [BUILD_DIR] [NTASKS_PARALLEL]
#        (defaults 20000, build, 2000: GNU parallel gets fewer tasks, it is 100 times slower)
set -eu
N=${1:-20000}
B=${2:-build}
NP=${3:-2000}
A=$(cd "$B" && pwd)/aimsweep
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
export OPENBLAS_NUM_THREADS=1
# a tiny task: direct, d = 10, 20 SGD steps, 3 records
P="--decomposition direct --d 10 --tau-end 0.01 --records 2 --solvers sgd"
cat > "$W/bench.yaml" <<Y
name: bench
fixed: {decomposition: direct, d: 10, tau_end: 0.01, records: 2}
seeds: $N
solvers: [sgd]
Y

now() { date +%s.%N; }
rate() { awk -v n="${3:-$N}" -v a="$1" -v b="$2" 'BEGIN { printf "%8.0f tasks/s  (%6.2f s)", n / (b - a), b - a }'; }
# the rate inside the run, without process and MPI start-up: the run's own final "...; X s"
inner() { awk -v n="$N" '/not started;/ { s = $NF; sub(/ s$/, "", s); t = $(NF-1) } END { printf "%8.0f tasks/s inside the run", n / t }' "$1"; }

printf "%-36s %-30s %s\n" "" "wall clock, start to end" "dispatch + commit only"
t0=$(now); "$A" run "$W/bench.yaml" --db "$W/serial.db" 2>"$W/e1"; t1=$(now)
printf "%-36s %-30s %s\n" "aimsweep run, 1 rank (serial)" "$(rate "$t0" "$t1")" "$(inner "$W/e1")"
# the same with synchronous=NORMAL (commits not fsynced; what the default FULL costs)
t0=$(now); AIMSWEEP_SYNC=normal "$A" run "$W/bench.yaml" --db "$W/normal.db" 2>"$W/e0"; t1=$(now)
printf "%-36s %-30s %s\n" "  the same, AIMSWEEP_SYNC=normal" "$(rate "$t0" "$t1")" "$(inner "$W/e0")"
t0=$(now); $MPIRUN -n 2 "$A" run "$W/bench.yaml" --db "$W/mpi2.db" 2>"$W/e2"; t1=$(now)
printf "%-36s %-30s %s\n" "aimsweep run, mpirun -n 2" "$(rate "$t0" "$t1")" "$(inner "$W/e2")"
t0=$(now); $MPIRUN -n 3 "$A" run "$W/bench.yaml" --db "$W/mpi3.db" 2>"$W/e3"; t1=$(now)
printf "%-36s %-30s %s\n" "aimsweep run, mpirun -n 3 (2 workers)" "$(rate "$t0" "$t1")" "$(inner "$W/e3")"
t0=$(now); seq 1 "$NP" | parallel -j2 "$A" single $P --format csv --seed {} > "$W/parallel.csv" 2>"$W/parallel.err"; t1=$(now)
printf "%-36s %-30s\n" "GNU parallel -j2, aimsweep single" "$(rate "$t0" "$t1" "$NP") ($NP tasks)"
t0=$(now); "$A" run "$W/bench.yaml" --db "$W/mpi2.db" --quiet; t1=$(now)
printf "%-36s %-30s\n" "rerun, nothing left to do (1 rank)" "$(rate "$t0" "$t1")"
echo "rows: $("$A" query "$W/mpi2.db" "SELECT count(*) FROM trajectory" --csv --no-header) trajectory rows in the database" \
     "for $N tasks; $(grep -c '^sgd' "$W/parallel.csv") csv rows from parallel for $NP"
