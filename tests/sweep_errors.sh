#!/bin/sh
# Malformed sweep files: each must give a one-line message naming the file, the line and the
# key, exit with code 2 (from both run and plan), and leave no database behind.
# usage: sweep_errors.sh WORKDIR   (env AIMSWEEP = the binary)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
fails=0 n=0

# case NAME EXPECTED-SUBSTRING: the sweep file on stdin
case_() {
    name=$1 expect=$2
    f="$W/$name.yaml"
    cat > "$f"
    n=$((n + 1))
    out=$("$AIMSWEEP" run "$f" --db "$W/$name.db" --quiet 2>&1 >/dev/null)
    rc=$?
    ok=1
    [ $rc -eq 2 ] || { echo "FAIL $name: exit code $rc, expected 2"; ok=0; }
    case "$out" in *"$f:$expect"*) ;; *) echo "FAIL $name: expected '$f:$expect' in: $out"; ok=0 ;; esac
    [ -e "$W/$name.db" ] && { echo "FAIL $name: a database was created"; ok=0; }
    "$AIMSWEEP" plan "$f" >/dev/null 2>&1
    [ $? -eq 2 ] || { echo "FAIL $name: plan did not exit 2"; ok=0; }
    [ $ok -eq 1 ] && echo "ok   $name: $out" || fails=$((fails + 1))
}

case_ syntax_bracket "3: YAML syntax error" <<'Y'
grid:
  d: [10, 20
  lr: [0.1]
Y
case_ syntax_indent "3: YAML syntax error" <<'Y'
grid:
  d: [10]
 lr: [0.1]
Y
case_ syntax_tab "2: YAML syntax error: a tab character; YAML indents with spaces only" <<'Y'
grid:
	d: [10]
Y
case_ empty_file "1: empty sweep file" </dev/null
case_ root_list "1: a sweep file is a mapping" <<'Y'
- d: 10
- d: 20
Y
case_ two_documents "3: a sweep file holds one YAML document" <<'Y'
fixed: {d: 10}
---
fixed: {d: 20}
Y
case_ unknown_top_key "2: key 'gird': unknown key" <<'Y'
name: x
gird:
  d: [10]
Y
case_ param_at_top "1: key 'd': parameters go under grid" <<'Y'
d: 10
Y
case_ unknown_grid_key "3: key 'dd': unknown parameter" <<'Y'
grid:
  d: [10]
  dd: [20]
Y
case_ unknown_fixed_key "2: key 'learning_rate': unknown parameter" <<'Y'
fixed:
  learning_rate: 0.1
Y
case_ grid_scalar "2: key 'd': grid values are lists" <<'Y'
grid:
  d: 10
Y
case_ grid_empty_list "2: key 'lr': empty list" <<'Y'
grid:
  lr: []
Y
case_ grid_nested_list "2: key 'd': list items are single values" <<'Y'
grid:
  d: [[10, 20]]
Y
case_ grid_not_mapping "2: key 'grid': must be a mapping" <<'Y'
grid:
  - d
  - lr
Y
case_ grid_empty_section "1: key 'grid': empty section" <<'Y'
grid:
Y
case_ fixed_list "2: key 'lr': fixed values are single values" <<'Y'
fixed:
  lr: [0.1, 0.2]
Y
case_ missing_value "3: key 'lr': missing value" <<'Y'
fixed:
  d: 10
  lr:
Y
case_ bad_activation "2: key 'activation'" <<'Y'
grid:
  activation: [h1, h9]
Y
case_ bad_decomposition "2: key 'decomposition'" <<'Y'
grid:
  decomposition: [direct, sideways]
Y
case_ d_zero "3: key 'd'" <<'Y'
grid:
  d: [10,
      0]
Y
case_ d_not_integer "2: key 'd'" <<'Y'
fixed:
  d: ten
Y
case_ negative_lr "3: key 'lr'" <<'Y'
grid:
  d: [10]
  lr: [0.1, -0.5]
Y
case_ bad_teacher "2: key 'teacher'" <<'Y'
fixed:
  teacher: wishart(oops
Y
case_ in_grid_and_fixed "4: key 'd': given twice (also on line 2)" <<'Y'
grid:
  d: [10, 20]
fixed:
  d: 30
Y
case_ duplicate_key "3: key 'lr': given twice (also on line 2)" <<'Y'
grid:
  lr: [0.1]
  lr: [0.2]
Y
case_ duplicate_value "2: key 'lr': value '5e-2' repeats '0.05'" <<'Y'
grid:
  lr: [0.05, 5e-2]
Y
case_ seeds_zero "1: key 'seeds'" <<'Y'
seeds: 0
fixed: {d: 10}
Y
case_ seeds_text "1: key 'seeds'" <<'Y'
seeds: three
fixed: {d: 10}
Y
case_ seeds_repeated "1: key 'seeds': seed 2 appears twice" <<'Y'
seeds: [1, 2, 2]
fixed: {d: 10}
Y
case_ seed_and_seeds "3: key 'seed': given both here and as \`seeds\`" <<'Y'
seeds: 3
fixed:
  seed: 4
Y
case_ bad_solver "1: key 'solvers'" <<'Y'
solvers: [sgd, magic]
fixed: {d: 10}
Y
case_ solvers_scalar "1: key 'solvers': must be a list" <<'Y'
solvers: sgd
fixed: {d: 10}
Y
case_ solvers_empty "1: key 'solvers': empty list" <<'Y'
solvers: []
fixed: {d: 10}
Y
case_ name_list "1: key 'name': must be a non-empty string" <<'Y'
name: [a, b]
fixed: {d: 10}
Y
case_ nothing_to_sweep "1: nothing to sweep" <<'Y'
name: only-a-name
Y
case_ bad_closure "2: key 'closure'" <<'Y'
grid:
  closure: [auto, wizard]
Y
case_ tied_uncentred "4: key 'index': index uncentred with tied" <<'Y'
grid:
  decomposition: [direct, tied]
fixed:
  index: uncentred
Y
case_ token_corr_one "2: key 'token_corr'" <<'Y'
grid:
  token_corr: [0, 0.5, 1]
Y
case_ softmax_outputs_all "4: key 'grid': 2 of 2 points cannot run" <<'Y'
fixed:
  activation: softmax(1)
  outputs: all
grid:
  d: [10, 20]
Y
case_ init_trace_untied "3: key 'init_trace'" <<'Y'
grid:
  decomposition: [direct, untied]
  init_trace: [0.5]
Y

case_ unknown_top_key_hint "1: key 'gird': unknown key (did you mean 'grid'?)" <<'Y'
gird:
  d: [10]
Y
case_ unknown_key_hint "2: key 'decompositon': unknown parameter (did you mean 'decomposition'?)" <<'Y'
grid:
  decompositon: [tied]
Y
case_ enum_hint "2: key 'decomposition': decomposition: 'Tied' is not one of direct | tied | untied (did you mean 'tied'?)" <<'Y'
grid:
  decomposition: [Tied]
Y
case_ range_in_message "2: key 'seed': seed = -1: must be an integer from 0 to" <<'Y'
fixed:
  seed: -1
Y
case_ zip_unequal "4: key 'zip': lists of unequal length: d has 2 values (line 3), lr has 1" <<'Y'
grid:
  zip:
    d: [40, 80]
    lr: [0.1]
Y
case_ expr_unknown_name "4: key 'lr': expression '0.5 / log(dd)': unknown name 'dd' (did you mean 'd'?)" <<'Y'
grid:
  d: [40, 80]
fixed:
  lr: "0.5 / log(dd)"
Y
case_ expr_division_by_zero "4: key 'lr': expression '1 / (d - 40)': division by zero (1 point: (d=40))" <<'Y'
grid:
  d: [40, 80]
fixed:
  lr: "1 / (d - 40)"
Y
case_ expr_syntax "2: key 'lr': expression '0.5 / (d', column 9: expected ')'" <<'Y'
fixed:
  lr: "0.5 / (d"
Y
case_ range_not_integer "2: key 'd': linspace gives 13.3333333333333, but d takes integers" <<'Y'
grid:
  d: {linspace: [10, 20, 4]}
Y
case_ range_typo "2: key 'lr': 'linspce' is not a range (did you mean 'linspace'?)" <<'Y'
grid:
  lr: {linspce: [0.01, 0.1, 3]}
Y
case_ whole_grid "1: key 'grid': 2 of 4 points cannot run:" <<'Y'
grid:
  decomposition: [tied, untied]
  order_m: [3, 4]
fixed:
  closure: flat
solvers: [sgd, ode]
Y
case_ softmax_empty "2: key 'activation': activation 'softmax()': write softmax or softmax(beta)" <<'Y'
fixed:
  activation: softmax()
Y

vals=$(awk 'BEGIN { for (i = 1; i <= 101; i++) printf "%s%d", (i > 1 ? ", " : ""), i }')
printf 'grid:\n  seed: [%s]\n  weight_decay: [%s]\n  records: [%s]\n' "$vals" "$vals" "$vals" > "$W/many.txt"
case_ too_many_points "1: key 'grid': 1030301 grid points, more than the limit" < "$W/many.txt"

echo "$n malformed files, $fails failed"
[ ! -e "$W/missing.yaml" ] || exit 1
out=$("$AIMSWEEP" run "$W/missing.yaml" --db "$W/missing.db" 2>&1); rc=$?
case "$out" in *"missing.yaml: cannot open sweep file"*) ;; *) echo "FAIL missing file: $out"; fails=$((fails + 1)) ;; esac
[ $rc -eq 2 ] || { echo "FAIL missing file: exit $rc"; fails=$((fails + 1)); }
[ $n -ge 20 ] && [ $fails -eq 0 ]
