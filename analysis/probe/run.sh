#!/usr/bin/env bash
# Makes everything in analysis/probe/: the trained checkpoints (in WORK, not kept), their probe
# rows (WORK/probe.db), aimsweep's own SGD runs of the same point, the csv files and the figures.
# usage: analysis/probe/run.sh   (from the repository root; AIMSWEEP=build/aimsweep,
#        WORK=/tmp/aimsweep-probe, SEEDS="1 ... 10", MARKOV_STEPS=1500,
#        PARTS="teacher markov icl" to redo only some parts; the others' rows stay in WORK/probe.db)
set -euo pipefail
AIM=${AIMSWEEP:-build/aimsweep}
WORK=${WORK:-/tmp/aimsweep-probe}
SEEDS=${SEEDS:-1 2 3 4 5 6 7 8 9 10}
MARKOV_STEPS=${MARKOV_STEPS:-1500}
PARTS=${PARTS:-teacher markov icl}
OUT=analysis/probe
PY=/usr/bin/python3
DB=$WORK/probe.db
export OPENBLAS_NUM_THREADS=1
mkdir -p "$WORK" "$OUT"
forget() { [ -f "$DB" ] && sqlite3 "$DB" "DELETE FROM probe WHERE run LIKE '$1'; DELETE FROM probe_pair WHERE run LIKE '$1'" || true; }
part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# (a) aimsweep's teacher, one head, online SGD at aimsweep's normalisation, against aimsweep.
POINT=(--d 48 --lr 0.2 --tau-end 1 --records 10 --init-scale 0.7)
if part teacher; then
    forget 'teacher_%'
    rm -f "$WORK"/sgd_*.csv
    for dec in untied tied; do
        for s in $SEEDS; do
            dir=$WORK/teacher_${dec}_s$s
            rm -rf "$dir"
            nice -n 10 $PY analysis/train_probe.py teacher "$dir" --decomposition $dec --seed "$s" \
                --rho 0.5 "${POINT[@]}"
            nice -n 10 "$AIM" probe "$dir"/step_*.safetensors --db "$DB" --run "teacher_${dec}_s$s" \
                --teacher "$dir/teacher.npy" --pairs 2000 >/dev/null
            nice -n 10 "$AIM" single --decomposition $dec --activation h1 --teacher 'wishart(0.5)' \
                "${POINT[@]}" --seed "$s" --solvers sgd --format csv 2>/dev/null |
                sed "s/^/$dec,$s,/; 1s/^$dec,$s,/decomposition,seed,/" >"$WORK/sgd_${dec}_s$s.csv"
        done
    done
    { head -1 "$WORK/sgd_untied_s1.csv"; for f in "$WORK"/sgd_*.csv; do tail -n +2 "$f"; done; } \
        >"$OUT/sgd.csv"
fi
# (b) Markov-chain languages, 2 layers x 4 heads at width 128, tied and untied: one fixed chain of
# 32 states (markov_*), and in-context chains of 3 states, a new matrix per sequence (icl_*).
for kind in markov icl; do
    part $kind || continue
    for tied in 0 1; do
        name=${kind}_$([ $tied = 1 ] && echo tied || echo untied)
        dir=$WORK/$name
        rm -rf "$dir"
        forget "$name"
        if [ $kind = icl ]; then extra=(--in-context 1 --vocab 3); else extra=(--vocab 32); fi
        nice -n 10 $PY analysis/train_probe.py markov "$dir" --tied $tied --steps "$MARKOV_STEPS" \
            --every 100 "${extra[@]}"
        cp "$dir/train.json" "$OUT/$name.json"
        nice -n 10 "$AIM" probe "$dir"/step_*.safetensors --db "$DB" --run "$name" \
            --pairs 10000 >/dev/null
    done
done
# (aimsweep query reads study databases only; this one holds the probe tables alone.)
sqlite3 -header -csv "$DB" "SELECT * FROM probe ORDER BY run, layer, head, step" >"$OUT/probe.csv"
sqlite3 -header -csv "$DB" "SELECT * FROM probe_curves" >"$OUT/probe_curves.csv"
sqlite3 -header -csv "$DB" \
    "SELECT * FROM probe_pair WHERE run NOT LIKE 'teacher%' ORDER BY run, step, layer, head, head2" \
    >"$OUT/probe_pair.csv"
MPLBACKEND=Agg $PY analysis/probe_figures.py "$OUT"
