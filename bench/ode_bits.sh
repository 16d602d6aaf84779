#!/usr/bin/env bash
# The moment ODE's output of the phase-ode-d60 points (sweeps/phase-ode-d60.yaml: d = 60,
# wishart(0.5) teacher, tau_end = 1, 50 records), one binary against another: for every
# decomposition, activation, init scale, rate and noise setting, the md5 of `aimsweep single
# --solvers ode` csv (rows and the status line without its wall time) from each binary, and
# whether they are equal. Prints one line per point and a closing count.
# usage: bench/ode_bits.sh [--acts LIST] [--decs LIST] BIN_OLD BIN_NEW
set -euo pipefail
acts="h1 h2 h3 h4 relu tanh erf softmax(1)" decs="direct tied untied"
while [ $# -gt 0 ]; do
    case "$1" in
    --acts) acts=${2:?}; shift 2 ;;
    --decs) decs=${2:?}; shift 2 ;;
    *) break ;;
    esac
done
if [ $# -ne 2 ]; then
    echo "usage: bench/ode_bits.sh [--acts LIST] [--decs LIST] BIN_OLD BIN_NEW" >&2
    exit 2
fi
same=0 differ=0
run() {
    "$1" single --decomposition "$2" --activation "$3" --d 60 --teacher 'wishart(0.5)' \
        --init-scale "$4" --lr "$5" --ode-noise "$6" --tau-end 1 --records 50 --solvers ode \
        --format csv 2>&1 | sed 's/ wall_s=[0-9.e+-]*//' | md5sum | cut -c1-12
}
for dec in $decs; do
    for act in $acts; do
        for s0 in 0.3 0.7 1.2; do
            for lr in 0.01 0.03; do
                for nz in off on; do
                    a=$(run "$1" "$dec" "$act" "$s0" "$lr" "$nz")
                    b=$(run "$2" "$dec" "$act" "$s0" "$lr" "$nz")
                    if [ "$a" = "$b" ]; then
                        v=same same=$((same + 1))
                    else
                        v=DIFFER differ=$((differ + 1))
                    fi
                    echo "$dec $act s0=$s0 lr=$lr noise=$nz $a $b $v"
                done
            done
        done
    done
done
echo "points: $same same, $differ differ"
