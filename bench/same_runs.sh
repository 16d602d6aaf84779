#!/usr/bin/env bash
# The same 36 runs of `aimsweep single` (SGD only: direct, tied and untied; h1, relu and
# softmax(1); T = 2 at d = 73 and T = 3 at d = 70; double and single) from two builds or two
# kernel paths, and whether each run's csv is byte for byte the same. A side is a binary,
# optionally preceded by KEY=VALUE words for its environment (AIMSWEEP_KERNELS=avx2 ...); a side
# with spaces goes in quotes:
#   bench/same_runs.sh OLD/aimsweep build/aimsweep
#   bench/same_runs.sh "AIMSWEEP_KERNELS=avx2 build/aimsweep" "AIMSWEEP_KERNELS=avx512 build/aimsweep"
# Prints one line per run that differs and "same: N of 36"; exits 1 when any differs.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bench/same_runs.sh SIDE_A SIDE_B" >&2; exit 2; }
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# a side's run: its csv, then its summaries (stderr) without the wall-clock time
run() {
    # shellcheck disable=SC2086 # a side is words: the environment, then the binary
    env $1 "${args[@]}" 2>"$tmp" || true
    sed 's/ wall_s=[0-9.e+-]*//' "$tmp"
}
same=0 total=0
for prec in double single; do
    for dec in direct tied untied; do
        for act in h1 relu 'softmax(1)'; do
            for td in "2 73" "3 70"; do
                set -- "$1" "$2"
                read -r T d <<<"$td"
                args=(single --decomposition "$dec" --activation "$act" --tokens "$T" --d "$d"
                      --precision "$prec" --tau-end 0.3 --records 6 --solvers sgd --seed 5 --format csv)
                a=$(run "$1") b=$(run "$2")
                total=$((total + 1))
                if [ "$a" = "$b" ]; then same=$((same + 1)); else echo "differs: $prec $dec $act T=$T d=$d"; fi
            done
        done
    done
done
echo "same: $same of $total"
[ "$same" = "$total" ]
