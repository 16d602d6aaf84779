#!/usr/bin/env bash
# Makes everything in analysis/probe/: the trained checkpoints (in WORK, not kept), their probe
# rows, aimsweep's own SGD runs of the same point, the csv files and the figures.
# usage: analysis/probe/run.sh   (from the repository root; AIMSWEEP=build/aimsweep,
#        WORK=/tmp/aimsweep-probe, SEEDS="1 2 3 4 5", MARKOV_STEPS=1500)
set -euo pipefail
AIM=${AIMSWEEP:-build/aimsweep}
WORK=${WORK:-/tmp/aimsweep-probe}
SEEDS=${SEEDS:-1 2 3 4 5}
MARKOV_STEPS=${MARKOV_STEPS:-1500}
OUT=analysis/probe
PY=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1
mkdir -p "$WORK" "$OUT"
rm -f "$WORK/probe.db"
# (a) aimsweep's teacher, one head, online SGD at aimsweep's normalisation, against aimsweep.
POINT=(--d 48 --lr 0.2 --tau-end 1 --records 10 --init-scale 0.7)
for dec in untied tied; do
    for s in $SEEDS; do
        dir=$WORK/teacher_${dec}_s$s
        rm -rf "$dir"
        nice -n 10 $PY analysis/train_probe.py teacher "$dir" --decomposition $dec --seed "$s" \
            --rho 0.5 "${POINT[@]}"
        nice -n 10 "$AIM" probe "$dir"/step_*.safetensors --db "$WORK/probe.db" \
            --run "teacher_${dec}_s$s" --teacher "$dir/teacher.npy" --pairs 2000 >/dev/null
        nice -n 10 "$AIM" single --decomposition $dec --activation h1 --teacher 'wishart(0.5)' \
            "${POINT[@]}" --seed "$s" --solvers sgd --format csv 2>/dev/null |
            sed "s/^/$dec,$s,/; 1s/^$dec,$s,/decomposition,seed,/" >"$WORK/sgd_${dec}_s$s.csv"
    done
done
{ head -1 "$WORK/sgd_untied_s1.csv"; for f in "$WORK"/sgd_*.csv; do tail -n +2 "$f"; done; } \
    >"$OUT/sgd.csv"
# (b) a Markov-chain language, 2 layers x 4 heads at width 128, tied and untied.
for tied in 0 1; do
    name=markov_$([ $tied = 1 ] && echo tied || echo untied)
    dir=$WORK/$name
    rm -rf "$dir"
    nice -n 10 $PY analysis/train_probe.py markov "$dir" --tied $tied --steps "$MARKOV_STEPS" --every 100
    cp "$dir/train.json" "$OUT/$name.json"
    nice -n 10 "$AIM" probe "$dir"/step_*.safetensors --db "$WORK/probe.db" --run "$name" \
        --pairs 10000 >/dev/null
done
# (aimsweep query reads study databases only; this one holds the probe tables alone.)
sqlite3 -header -csv "$WORK/probe.db" "SELECT * FROM probe ORDER BY run, layer, head, step" \
    >"$OUT/probe.csv"
sqlite3 -header -csv "$WORK/probe.db" "SELECT * FROM probe_curves" >"$OUT/probe_curves.csv"
sqlite3 -header -csv "$WORK/probe.db" \
    "SELECT * FROM probe_pair WHERE run LIKE 'markov%' ORDER BY run, step, layer, head, head2" \
    >"$OUT/probe_pair.csv"
MPLBACKEND=Agg $PY analysis/probe_figures.py "$OUT"
