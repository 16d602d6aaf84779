#!/bin/sh
# aimsweep single with teacher goe_mean(m) reports the teacher's mean mu_star = Tr S*/sqrt(d)
# equal to m, its closed form (docs/model.md §10), to rounding, for m = 0 (Corollary 4 (ii)'s
# mu* = 0), 0.8 and -1.5, at d = 30 and 101, through the index uncentred.
# usage: teacher_mean_cli.sh   (env AIMSWEEP = the binary)
set -u
fails=0
for m in 0 0.8 -1.5; do
    for d in 30 101; do
        out=$("$AIMSWEEP" single --decomposition direct --activation h2 --teacher "goe_mean($m)" \
            --index uncentred --d $d --tau-end 0.01 --records 1 --solvers flow --seed 7 2>&1) ||
            { echo "FAIL: m $m d $d: aimsweep single failed: $out"; fails=$((fails + 1)); continue; }
        mu=$(echo "$out" | sed -n 's/.*mu_star=\([^ ]*\).*/\1/p')
        if [ -z "$mu" ] || ! awk -v a="$mu" -v b="$m" 'BEGIN { e = a - b; if (e < 0) e = -e; exit !(e < 1e-13) }'; then
            echo "FAIL: m $m d $d: mu_star '$mu', closed form $m"
            fails=$((fails + 1))
        else
            echo "ok   m $m d $d: mu_star $mu"
        fi
    done
done
[ $fails -eq 0 ] && echo "teacher_mean_cli: all passed" || echo "teacher_mean_cli: $fails failed"
exit $fails
