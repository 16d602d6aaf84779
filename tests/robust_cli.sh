#!/bin/sh
# Issue 13's campaign cases against the command line, each as it was found: a crash, a result
# silently wrong or stored as done, a near-hang, or a misleading message. Every case must now
# be refused with exit 2 and a message that names the value and its range, or finish
# correctly, within a time limit.
# usage: robust_cli.sh WORKDIR   (env AIMSWEEP, SRCDIR)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
passed=0

# refuse EXPECTED ARGS...: `aimsweep single ARGS` exits 2 within 10 s with EXPECTED in stderr
refuse() {
    expect=$1
    shift
    out=$(timeout 10 "$AIMSWEEP" single "$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -eq 2 ] && case "$out" in *"$expect"*) true ;; *) false ;; esac; then
        passed=$((passed + 1))
    else
        fail "single $*: exit $rc, expected 2 with '$expect': $out"
    fi
}

# 2. a segfault: the teacher's rank had no bound and its allocation was not checked
refuse "teacher 'wishart(1e8)': wishart rho = 100000000: must be in (0, 16]" --d 12 --solvers sgd --teacher 'wishart(1e8)'
# 4. silent nonsense: a NaN loss stored as done, 0 samples after an llround overflow, an
#    lround overflow in the rank, a seed replaced by its neighbour
refuse "activation 'softmax(1e300)': softmax beta = 1e+300: must be in (0, 20]" --d 12 --solvers sgd --activation 'softmax(1e300)'
refuse "SGD would take tau_end d^2 / lr = 7.2e+31 samples, more than the limit" --d 12 --solvers sgd --lr 1e-30
refuse "width = 1e20: must be a number in (0, 4]" --d 12 --solvers sgd --width 1e20
refuse "seed = 9007199254740993.0: must be" --d 12 --seed 9007199254740993.0
refuse "seed = 9007199254740993: must be" --d 12 --seed 9007199254740993
refuse "seed = 18446744073709551616: must be" --d 12 --seed 18446744073709551616
# 5. near-hangs the cost model did not see
refuse "weight_decay = 1e10: must be a number in [0, 1000]" --decomposition direct --solvers flow --weight-decay 1e10
refuse "the flow would need at least weight_decay tau_end = 1e+07 steps" --weight-decay 1000 --tau-end 10000
refuse "the untied moment ODE supports order_m up to 6" --decomposition untied --solvers ode --order-m 7 --tau-end 1e-9
refuse "the task needs about" --decomposition direct --d 60000
# 6. messages that misled
refuse "teacher 'wishart(1e308)': wishart rho = 1e+308: must be in (0, 16]" --d 12 --teacher 'wishart(1e308)'
refuse "init_scale = 1e300: must be a number in [0, 100]" --solvers ode --decomposition untied --init-scale 1e300
refuse "recovery_threshold = 1.0000001: must be a number in (0, 1]" --recovery-threshold 1.0000001
refuse "d = 12.5: not an integer (an integer from 2 to 100000)" --d 12.5

# the largest seed, 2^53 - 1, is kept exactly (2^53 + 1 used to become ...992)
out=$("$AIMSWEEP" single --d 12 --solvers sgd --seed 9007199254740991 --records 1 2>&1)
case "$out" in *"seed=9007199254740991;"*) passed=$((passed + 1)) ;; *) fail "seed 2^53-1 not kept: $out" ;; esac

# a result is done only when finite and complete: what runs is done with finite numbers
out=$("$AIMSWEEP" single --d 12 --solvers sgd,flow --activation 'softmax(20)' --records 2 --format csv 2>&1)
if printf '%s\n' "$out" | grep -q "status=done" && ! printf '%s\n' "$out" | grep -qi "nan"; then
    passed=$((passed + 1))
else
    fail "softmax(20): $out"
fi

# query: VACUUM INTO and ATTACH refused before they run and leave no file; an endless
# recursive CTE stops at --timeout in table mode too, in bounded memory (a table that
# buffered every row needed 65 MB/s and fails under the 60 MB limit below)
"$AIMSWEEP" run "$SRCDIR/tests/tiny.yaml" --db "$W/t.db" --quiet || fail "tiny run"
cd "$W" || exit 1
out=$("$AIMSWEEP" query t.db "VACUUM INTO 'copy.db'" 2>&1); rc=$?
[ $rc -eq 2 ] && [ ! -e copy.db ] && passed=$((passed + 1)) || fail "VACUUM INTO: exit $rc, $(ls copy.db 2>&1): $out"
out=$("$AIMSWEEP" query t.db "ATTACH 'other.db' AS o" 2>&1); rc=$?
[ $rc -eq 2 ] && [ ! -e other.db ] && passed=$((passed + 1)) || fail "ATTACH: exit $rc: $out"
out=$("$AIMSWEEP" query t.db "DELETE FROM tasks" 2>&1); rc=$?
[ $rc -eq 2 ] && passed=$((passed + 1)) || fail "DELETE: exit $rc: $out"
CTE="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x, 'padding' FROM c"
# AddressSanitizer reserves terabytes of address space: no virtual memory limit under it
limit=60000
ldd "$AIMSWEEP" 2>/dev/null | grep -q libasan && limit=unlimited
for fmt in table csv; do
    t0=$(date +%s)
    out=$( (ulimit -v $limit; timeout 30 "$AIMSWEEP" query t.db "$CTE" --timeout 2 --format $fmt 2>&1 >/dev/null) )
    rc=$?
    t=$(($(date +%s) - t0))
    case "$out" in
    *"query stopped after 2 s"*) [ $t -le 10 ] && passed=$((passed + 1)) || fail "CTE ($fmt): took $t s" ;;
    *) fail "endless CTE ($fmt): exit $rc after $t s: $out" ;;
    esac
done
# the default limit is finite: a plain query says so in --help
"$AIMSWEEP" query --help | grep -q "stopped \[60" && passed=$((passed + 1)) || fail "no finite default timeout"
out=$("$AIMSWEEP" query t.db "SELECT count(*) FROM trajectory" --csv --no-header)
[ "$out" -eq 216 ] && passed=$((passed + 1)) || fail "plain query: $out"

echo "$passed passed, $fails failed"
[ $fails -eq 0 ]
