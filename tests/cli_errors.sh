#!/bin/sh
# Command-line mistakes: each must exit with status 2 before anything runs, with a message that
# holds the suggestion or the allowed values (the expected text below), and leave no database.
# The sweep-file mistakes are tests/sweep_errors.sh; this is the command line of single, run,
# plan, export and query. A message that loses its "did you mean" or its range fails here.
# usage: cli_errors.sh WORKDIR   (env AIMSWEEP = the binary)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
fails=0 n=0
A=$AIMSWEEP
printf 'grid:\n  d: [10, 12]\nfixed:\n  tau_end: 0.01\n  records: 2\n' > "$W/s.yaml"
printf 'grid:\n  zip:\n    d: [10, 12]\n    lr: [0.1, 0.2]\nfixed:\n  tau_end: 0.01\n' > "$W/z.yaml"
"$A" run "$W/s.yaml" --db "$W/ok.db" --quiet || { echo "FAIL: the good sweep does not run"; exit 1; }

# case NAME EXPECTED-SUBSTRING COMMAND...
case_() {
    name=$1 expect=$2
    shift 2
    n=$((n + 1))
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    ok=1
    [ $rc -eq 2 ] || { echo "FAIL $name: exit code $rc, expected 2"; ok=0; }
    case "$out" in *"$expect"*) ;; *) echo "FAIL $name: expected '$expect' in: $out"; ok=0 ;; esac
    [ -e "$W/x.db" ] && { echo "FAIL $name: a database was created"; rm -f "$W/x.db"*; ok=0; }
    [ $ok -eq 1 ] && echo "ok   $name: $(echo "$out" | head -2 | tr '\n' ' ')" || fails=$((fails + 1))
}

S="$A single --tau-end 0.01 --records 2"
case_ flag_typo "unknown flag '--decompositon' (did you mean --decomposition?)" $S --decompositon tied
case_ flag_dashes "(did you mean --tau-end?)" $S --tauend 1
case_ enum_case "'Tied' is not one of direct | tied | untied (did you mean 'tied'?)" $S --decomposition Tied
case_ enum_closure "is not one of auto | free_cumulant | freeze | zero | spectral | spectral_mp | free_residual | flat (did you mean 'flat'?)" $S --closure flatt
case_ solver_typo "solvers: 'flw' is not a solver (sgd, flow, ode) (did you mean 'flow'?)" $S --solvers sgd,flw
case_ solver_twice "solvers: 'sgd' is named twice" $S --solvers sgd,sgd
case_ solver_empty_item "has an empty item" $S --solvers sgd,,flow
case_ seed_range "seed = -1: must be an integer from 0 to 9007199254740991" $S --seed -1
case_ d_range "d = 1: must be an integer from 2 to 100000" $S --d 1
case_ d_integer "d = 12.5: not an integer (an integer from 2 to 100000)" $S --d 12.5
case_ lr_range "lr = -0.5: must be a number in (0, 1000]" $S --lr=-0.5
case_ lr_text "lr: 'fast' is not a number (a number in (0, 1000])" $S --lr fast
case_ threshold_range "recovery_threshold = 2: must be a number in (0, 1]" $S --recovery-threshold 2
case_ width_range "width = 5: must be a number in (0, 4]" $S --width 5
case_ tokens_range "tokens = 40: must be an integer from 2 to 16" $S --tokens 40
case_ bool_value "ode_noise: 'maybe' is not on or off" $S --ode-noise maybe
case_ log_grid_value "log_grid: 'sometimes' is not on, off or a start tau > 0" $S --log-grid sometimes
case_ log_start_range "the start of the log grid must be below tau_end" $S --log-grid 0.5
case_ activation_typo "(did you mean 'tanh'?)" $S --activation tahn
case_ softmax_empty "write softmax or softmax(beta) with one number beta > 0" $S --activation 'softmax()'
case_ teacher_typo "(did you mean 'goe'?)" $S --teacher gooe
case_ duplicate_flag "flag --d given twice; give each flag once" $S --d 40 --d 60
case_ duplicate_dashed "given twice" $S --tau-end 0.02
case_ empty_value "lr: empty value (a number in (0, 1000])" $S --lr ''
case_ empty_argument "empty argument" $S ''
case_ missing_value "flag --lr needs a value (a number in (0, 1000])" $S --lr
case_ format_value "--format: 'jsn' is not csv or table" $S --format jsn
case_ positional "unexpected argument 'tied'" $S tied
case_ flat_even_order "closure flat needs an odd order_m (got 4; even orders measured unstable): use order_m 3 or 5" \
    $S --decomposition untied --closure flat --order-m 4 --solvers ode
case_ spectral_untied "closure spectral exists for tied only, not untied" $S --decomposition untied --closure spectral
case_ spectral_noise "has no O(eta) noise term: use ode_noise off" $S --closure spectral --ode-noise on --solvers ode
case_ untied_order "order_m = 9: the untied moment ODE supports order_m up to 6" \
    $S --decomposition untied --closure free_cumulant --order-m 9 --solvers ode

case_ run_flag_typo "unknown flag '--retry-error' (did you mean --retry-errors?)" $A run "$W/s.yaml" --db "$W/x.db" --retry-error
case_ run_db_twice "flag --db given twice" $A run "$W/s.yaml" --db "$W/x.db" --db "$W/y.db"
case_ run_no_db "need --db FILE" $A run "$W/s.yaml"
case_ run_db_missing "--db needs a value" $A run "$W/s.yaml" --db
case_ run_two_sweeps "a second sweep file" $A run "$W/s.yaml" "$W/z.yaml" --db "$W/x.db"
case_ run_empty "empty argument" $A run "" --db "$W/x.db"
case_ run_grace "--grace '-1': must be a number of seconds >= 0" $A run "$W/s.yaml" --db "$W/x.db" --grace -1
case_ run_journal "--journal 'wall': must be wal, delete or auto" $A run "$W/s.yaml" --db "$W/x.db" --journal wall
case_ run_journal_env "AIMSWEEP_JOURNAL='nfs': must be wal, delete or auto" env AIMSWEEP_JOURNAL=nfs $A run "$W/s.yaml" --db "$W/x.db"
case_ run_ckpt_dir "--checkpoint-dir needs a value" $A run "$W/s.yaml" --db "$W/x.db" --checkpoint-dir
case_ run_attempts "--max-attempts '0': must be an integer from 1 to 1000000" $A run "$W/s.yaml" --db "$W/x.db" --max-attempts 0
case_ set_typo "--set tau_endd=2: unknown parameter 'tau_endd' (did you mean 'tau_end'?)" \
    $A run "$W/s.yaml" --db "$W/x.db" --set tau_endd=2
case_ set_form "write --set KEY=VALUE" $A run "$W/s.yaml" --db "$W/x.db" --set tau_end
case_ set_range "--set lr=0: lr = 0: must be a number in (0, 1000]" $A run "$W/s.yaml" --db "$W/x.db" --set lr=0
case_ set_empty "--set lr=: empty value" $A run "$W/s.yaml" --db "$W/x.db" --set lr=
case_ set_zip "d is part of a zip block" $A run "$W/z.yaml" --db "$W/x.db" --set d=20
case_ set_expr "expression '1 / (d - 10)': division by zero" $A run "$W/s.yaml" --db "$W/x.db" --set "lr=1 / (d - 10)"
case_ plan_set_typo "(did you mean 'tau_end'?)" $A plan "$W/s.yaml" --set tau-endd=2
case_ plan_flag_typo "unknown flag '--rank' (did you mean --ranks?)" $A plan "$W/s.yaml" --rank 4
case_ plan_ranks "--ranks 'x': must be an integer from 1 to 1000000" $A plan "$W/s.yaml" --ranks x
case_ plan_twice "flag --db given twice" $A plan "$W/s.yaml" --db "$W/ok.db" --db "$W/ok.db"
case_ export_table "has no table or view 'resuls' (did you mean 'results'?); it has" $A export "$W/ok.db" --table resuls
case_ export_format "--format 'jsn' is not csv or json (did you mean 'json'?)" $A export "$W/ok.db" --format jsn
case_ export_flag "unknown flag '--tabel' (did you mean --table?)" $A export "$W/ok.db" --tabel tasks
case_ query_flag "unknown flag '--cvs' (did you mean --csv?)" $A query "$W/ok.db" "SELECT 1" --cvs
case_ query_sql "SQL error: no such column: tua_wr" $A query "$W/ok.db" "SELECT tua_wr FROM summary"
case_ query_two "one SQL statement at a time" $A query "$W/ok.db" "SELECT 1; SELECT 2"
case_ bench_format "--format takes table or csv, not 'cvs'" $A bench --format cvs
case_ command_typo "unknown command 'plann' (did you mean 'plan'?)" $A plann "$W/s.yaml"

# --set applies to plan and run alike: the override shows in plan and in the stored points
"$A" plan "$W/s.yaml" --set tau_end=0.02 | grep -q 'tau_end = 0.02 (--set)' || { echo "FAIL set shown by plan"; fails=$((fails + 1)); }
"$A" run "$W/s.yaml" --db "$W/set.db" --quiet --set tau_end=0.02 --set "lr=0.5 / log(d)" || { echo "FAIL run --set"; fails=$((fails + 1)); }
got=$("$A" query "$W/set.db" "SELECT tau_end, lr FROM tasks ORDER BY d" --csv --no-header | tr '\n' ' ')
want=$(python3 -c "import math; print(' '.join('0.02,%r' % (0.5 / math.log(d)) for d in (10, 12)), end=' ')")
[ "$got" = "$want" ] || { echo "FAIL --set values: $got, expected $want"; fails=$((fails + 1)); }

echo "$n command-line mistakes, $fails failed"
[ $n -ge 30 ] && [ $fails -eq 0 ]
