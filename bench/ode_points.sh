#!/usr/bin/env bash
# The moment ODE's cost per grid point, per activation, old build against new: the points of
# sweeps/phase-ode-d60.yaml (d = 60, wishart(0.5) teacher, tau_end = 1, 50 records; 3
# decompositions x init scales x rates x noise off/on) run with `aimsweep single --solvers ode`,
# interleaved point by point between the binaries given, each point's CPU time (user + sys, so
# that other jobs on a shared machine do not count) summed per activation. Prints, per
# activation and binary, the total and the largest point (CPU s), and the ratio of the first
# binary's total to the last one's. A point that runs past LIMIT s of wall time (default 60) is
# stopped and counted as it stood (its total is marked '>'). With --repeat N each point runs N
# times per binary (interleaved) and counts its least CPU time: on a shared machine the others'
# jobs slow a run down (caches, frequency), never speed it up.
# usage: bench/ode_points.sh [--limit S] [--repeat N] [--acts LIST] [--scales LIST] [--lrs LIST]
#        BIN [BIN2 ...]   (defaults: every activation of the sweep, init scales 0.3 0.7 1.2,
#        rates 0.01 0.03, one run)
set -euo pipefail
# One BLAS thread, as a sweep's ranks run (jobs/*.sbatch): otherwise OpenBLAS starts a thread per
# core when the library loads, before aimsweep can set the count, and that start-up's system
# time (about 0.09 s a process on a 2-core Zen 5 machine) would count as the point's.
export OPENBLAS_NUM_THREADS=1
limit=60 repeat=1 acts="h1 h2 h3 h4 relu tanh erf softmax(1)" scales="0.3 0.7 1.2" lrs="0.01 0.03"
while [ $# -gt 0 ]; do
    case "$1" in
    --limit) limit=${2:?}; shift 2 ;;
    --repeat) repeat=${2:?}; shift 2 ;;
    --acts) acts=${2:?}; shift 2 ;;
    --scales) scales=${2:?}; shift 2 ;;
    --lrs) lrs=${2:?}; shift 2 ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: bench/ode_points.sh [--limit S] [--acts LIST] BIN [BIN2 ...]" >&2; exit 2; }
bins=("$@")
tf=$(mktemp)
trap 'rm -f "$tf"' EXIT
printf 'activation,points'
for b in "${bins[@]}"; do printf ',cpu_s[%s],max_s[%s]' "$b" "$b"; done
printf ',ratio\n'
for act in $acts; do
    declare -A tot=() mx=() cut=()
    np=0
    for dec in direct tied untied; do
        for s0 in $scales; do
            for lr in $lrs; do
                for nz in off on; do
                    np=$((np + 1))
                    declare -A best=()
                    for ((r = 0; r < repeat; r++)); do
                        for i in "${!bins[@]}"; do
                            rc=0
                            /usr/bin/time -f '%U %S' -o "$tf" timeout "$limit" "${bins[$i]}" single \
                                --decomposition "$dec" --activation "$act" --d 60 --teacher 'wishart(0.5)' \
                                --init-scale "$s0" --lr "$lr" --ode-noise "$nz" --tau-end 1 --records 50 \
                                --solvers ode --format csv >/dev/null 2>&1 || rc=$?
                            [ "$rc" = 124 ] && cut[$i]='>'
                            dt=$(tail -1 "$tf" | awk '{print $1 + $2}')
                            if [ -z "${best[$i]:-}" ] || (($(echo "$dt < ${best[$i]}" | bc -l))); then
                                best[$i]=$dt
                            fi
                        done
                    done
                    for i in "${!bins[@]}"; do
                        dt=${best[$i]}
                        tot[$i]=$(echo "${tot[$i]:-0} + $dt" | bc -l)
                        if (($(echo "$dt > ${mx[$i]:-0}" | bc -l))); then mx[$i]=$dt; fi
                    done
                    unset best
                done
            done
        done
    done
    printf '%s,%d' "$act" "$np"
    for i in "${!bins[@]}"; do printf ',%s%.2f,%.2f' "${cut[$i]:-}" "${tot[$i]}" "${mx[$i]}"; done
    last=$((${#bins[@]} - 1))
    printf ',%.1f\n' "$(echo "${tot[0]} / ${tot[$last]}" | bc -l)"
    unset tot mx cut
done
