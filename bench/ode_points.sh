#!/usr/bin/env bash
# The moment ODE's cost per grid point, per activation: every point of sweeps/phase-ode-d60.yaml
# (d = 60, tau_end = 1, 50 records; 3 decompositions x 3 init scales x 2 rates x noise off/on
# = 36 points per activation) run with `aimsweep single --solvers ode`, one after the other, with
# each of the binaries given (interleaved point by point, so that a shared machine's load falls
# on both alike). Prints per activation and binary the total and the largest point time (s) and
# the ratio of the totals to the first binary. A point that runs past LIMIT seconds (default 60)
# is stopped and counted at LIMIT (marked '>').
# usage: bench/ode_points.sh [--limit S] [--acts "h2 relu ..."] BIN [BIN2 ...]
set -euo pipefail
limit=60 acts="h1 h2 h3 h4 relu tanh erf softmax(1)"
while [ $# -gt 0 ]; do
    case "$1" in
    --limit) limit=${2:?}; shift 2 ;;
    --acts) acts=${2:?}; shift 2 ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: bench/ode_points.sh [--limit S] [--acts LIST] BIN [BIN2 ...]" >&2; exit 2; }
bins=("$@")
now() { date +%s.%N; }
printf 'activation'
for b in "${bins[@]}"; do printf ',total_s[%s],max_s[%s]' "$b" "$b"; done
printf ',ratio\n'
for act in $acts; do
    declare -A tot=() mx=() cut=()
    for dec in direct tied untied; do
        for s0 in 0.3 0.7 1.2; do
            for lr in 0.01 0.03; do
                for nz in off on; do
                    for i in "${!bins[@]}"; do
                        t0=$(now)
                        timeout "$limit" "${bins[$i]}" single --decomposition "$dec" --activation "$act" \
                            --d 60 --teacher 'wishart(0.5)' --init-scale "$s0" --lr "$lr" --ode-noise "$nz" \
                            --tau-end 1 --records 50 --solvers ode --format csv >/dev/null 2>&1 || true
                        dt=$(echo "$(now) - $t0" | bc -l)
                        if (($(echo "$dt >= $limit" | bc -l))); then cut[$i]='>'; fi
                        tot[$i]=$(echo "${tot[$i]:-0} + $dt" | bc -l)
                        if (($(echo "$dt > ${mx[$i]:-0}" | bc -l))); then mx[$i]=$dt; fi
                    done
                done
            done
        done
    done
    printf '%s' "$act"
    for i in "${!bins[@]}"; do printf ',%s%.3f,%.3f' "${cut[$i]:-}" "${tot[$i]}" "${mx[$i]}"; done
    last=$((${#bins[@]} - 1))
    printf ',%.1f\n' "$(echo "${tot[0]} / ${tot[$last]}" | bc -l)"
    unset tot mx cut
done
