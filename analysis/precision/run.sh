#!/usr/bin/env bash
# The accuracy of precision single against double (README, Speed): the same grid point and
# seed run both ways with SGD only, for tied, untied and direct, h1, h2 and softmax(1), 8 seeds at
# d = 400 and 800; and tied h2 with a goe teacher (information exponent 2) through weak
# recovery at d = 200 (tau_wr = 0.5-0.7), 8 seeds. Each run's csv goes to $OUT (default analysis/precision/data);
# compare.py reads them. Three runs at a time, niced; a run whose file or .tmp exists is skipped
# (rerun after removing leftover .tmp files of an interrupted run).
# usage: analysis/precision/run.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-analysis/precision/data}
bin=${AIMSWEEP:-build/aimsweep}
mkdir -p "$out"
jobs=$(mktemp)
trap 'rm -f "$jobs"' EXIT
seeds="1 2 3 4 5 6 7 8"
# Weak recovery at information exponent 2 first, then the short runs (tau_end sized to this
# shared 2-core machine: 16000 steps at d = 400, 5120 at d = 800).
for s in $seeds; do
    for pr in double single; do
        echo "$out/wr_tied_h2_200_${s}_${pr}.csv --decomposition tied --activation h2 --teacher goe --d 200 --lr 0.05 --tau-end 1 --records 20 --seed $s --precision $pr"
    done
done >"$jobs"
for d in 400 800; do
    for dec in tied untied direct; do
        for act in h1 h2 softmax1; do
            a=$act lr=0.5 tau=$([ $d = 400 ] && echo 0.05 || echo 0.004)
            [ $act = softmax1 ] && a="'softmax(1)'"
            # h2 diverges at lr = 0.5 (tied, d = 400): lr = 0.1 there, the same step counts
            [ $act = h2 ] && lr=0.1 tau=$([ $d = 400 ] && echo 0.01 || echo 0.0008)
            for s in $seeds; do
                for pr in double single; do
                    echo "$out/short_${dec}_${act}_${d}_${s}_${pr}.csv --decomposition $dec --activation $a --d $d --lr $lr --tau-end $tau --records 10 --seed $s --precision $pr"
                done
            done
        done
    done
done >>"$jobs"
# shellcheck disable=SC2016
tr '\n' '\0' <"$jobs" | OPENBLAS_NUM_THREADS=1 xargs -0 -P 3 -I{} sh -c 'set -- {}; f=$1; shift; [ -s "$f" ] || [ -e "$f.tmp" ] || { nice -n 5 "'"$bin"'" single "$@" --solvers sgd --format csv >"$f.tmp" && mv "$f.tmp" "$f"; }'
