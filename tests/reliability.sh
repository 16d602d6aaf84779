#!/bin/bash
# The database against its users' text and its own failures:
#   1. SQL from the command line (reset --where, recommend --where, query, export --table):
#      injection attempts exit 2 and every row and table stays;
#   2. expressions: a sweep file whose lr is a chain of 10^6 terms: plan exits 2 with a message;
#   3. a run killed with kill -9 after its -wal file was deleted keeps what was committed one
#      checkpoint interval before (AIMSWEEP_CHECKPOINT_S=0.5 here);
#   4. merge: a part merged twice leaves sweeps and sweep_tasks as after the first merge; a
#      merge refused (a part with no schema yet) leaves no study file behind;
#   5. messages: no C source text (sqlite3_..., (s->...) in any message of the store's error paths
#      (a full disk too, when root can mount a small tmpfs), and none stringified by a macro in
#      the sources; a file whose user_version is older than its columns says so;
#   6. a damaged file (one index page overwritten): run, merge and reset refuse it with exit 2
#      and what to do, and write nothing into it; status and query warn;
#   7. cost: single refuses a point estimated above 24 core-hours without --force, at once, and
#      says its estimate before it starts when above a minute;
# usage: reliability.sh WORKDIR [SECTION...]   (env: AIMSWEEP, SRCDIR; see harness_lib.sh)
W=${1:?workdir}
shift
. "$SRCDIR/tests/harness_lib.sh"
rm -rf "$W"
mkdir -p "$W"
want() { [ $# -eq 0 ] && return 0; for s in "${SECTIONS[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(inject expr wal merge messages corrupt cost)

"$AIMSWEEP" run "$SRCDIR/tests/tiny.yaml" --db "$W/ref.db" --quiet || { echo "FAIL: the tiny sweep"; exit 1; }
# what must survive: the count of rows of every table, and the list of tables
census() {
    q "$1" "SELECT (SELECT count(*) FROM tasks), (SELECT count(*) FROM trajectory),
                   (SELECT count(*) FROM summary), (SELECT count(*) FROM sweeps),
                   (SELECT count(*) FROM sweep_tasks), (SELECT count(*) FROM tasks WHERE status = 'done'),
                   (SELECT group_concat(name) FROM (SELECT name FROM sqlite_schema ORDER BY name))"
}
REF=$(census "$W/ref.db")

# 1. injection: each must exit 2 with a message and change nothing
if want inject; then
    set -- \
        "1=0); DELETE FROM trajectory; --" \
        "1=0); DROP TABLE sweep_tasks; CREATE TABLE pwned(x); --" \
        "1=0) /*" \
        "1=0) RETURNING *; --" \
        "1=0 OR (SELECT count(*) FROM pragma_table_info('tasks')) > 0" \
        "1=0 AND load_extension('x') IS NULL" \
        "status = 'done' AND (d = 12" \
        "no_such_column = 1"
    for w in "$@"; do
        for cmd in reset recommend; do
            cp "$W/ref.db" "$W/x.db"
            if [ $cmd = reset ]; then
                "$AIMSWEEP" reset "$W/x.db" --where "$w" >"$W/out" 2>"$W/err"
            else
                "$AIMSWEEP" recommend "$W/x.db" --where "$w" >"$W/out" 2>"$W/err"
            fi
            rc=$?
            [ $rc -eq 2 ] || fail "$cmd --where \"$w\": exit $rc, not 2 ($(head -c 200 "$W/out"))"
            [ -s "$W/err" ] || fail "$cmd --where \"$w\": no message"
            [ "$(census "$W/x.db")" = "$REF" ] || fail "$cmd --where \"$w\": the database changed: $(census "$W/x.db")"
        done
    done
    # the statements a query must refuse (it reads only), and an export of a made-up table
    set -- "DELETE FROM trajectory" "SELECT 1; DELETE FROM trajectory" "DROP TABLE sweep_tasks" \
        "ATTACH '$W/other.db' AS o" "PRAGMA query_only = 0" "PRAGMA user_version = 1" \
        "PRAGMA journal_mode = DELETE" "VACUUM INTO '$W/copy.db'" "SELECT load_extension('x')"
    for sql in "$@"; do
        cp "$W/ref.db" "$W/x.db"
        "$AIMSWEEP" query "$W/x.db" "$sql" >/dev/null 2>"$W/err"
        rc=$?
        [ $rc -eq 2 ] || fail "query \"$sql\": exit $rc, not 2"
        [ -s "$W/err" ] || fail "query \"$sql\": no message"
        [ "$(census "$W/x.db")" = "$REF" ] || fail "query \"$sql\": the database changed"
    done
    [ ! -e "$W/other.db" ] && [ ! -e "$W/copy.db" ] || fail "query: a refused statement left a file"
    cp "$W/ref.db" "$W/x.db"
    "$AIMSWEEP" export "$W/x.db" --table 'tasks"; DELETE FROM trajectory; --' >/dev/null 2>&1
    [ $? -eq 2 ] || fail "export --table with SQL in it: not exit 2"
    [ "$(census "$W/x.db")" = "$REF" ] || fail "export: the database changed"
    # what still works: conditions that read other tables, comments, quotes with parentheses
    cp "$W/ref.db" "$W/x.db"
    out=$("$AIMSWEEP" reset "$W/x.db" --where "sweep_id IN (SELECT sweep_id FROM sweeps) AND decomposition = 'tied' AND ')' = ')' -- the tied ones")
    [ "$out" = "4 tasks back to pending" ] || fail "reset: a good condition: '$out'"
    [ "$(q "$W/x.db" "PRAGMA table_info(tasks)" | head -1 | cut -d, -f2)" = task_id ] || fail "query: PRAGMA table_info refused"
    case $(q "$W/x.db" "PRAGMA user_version") in '' | *[!0-9]*) fail "query: PRAGMA user_version refused" ;; esac
    "$AIMSWEEP" recommend "$W/x.db" --where "t.d = 12" >/dev/null || fail "recommend --where t.d = 12"
    echo "injection: done"
fi

# 2. a chain of 10^6 terms (+ and *) and one of 2000 (under the length, over the term bound):
#    exit 2 naming the key, no crash; 400 terms still evaluate to their sum
if want expr; then
    for op in + '*'; do
        /usr/bin/python3 -c "
import sys
n, op = 10**6, sys.argv[1]
lr = op.join(['0.05' if op == '+' else '1'] * n)
open('$W/chain.yaml', 'w').write('name: chain\ngrid:\n  d: [12]\nfixed:\n  tau_end: 0.05\n  lr: ' + lr + '\nseeds: 1\nsolvers: [ode]\n')" "$op"
        "$AIMSWEEP" plan "$W/chain.yaml" >/dev/null 2>"$W/err"
        rc=$?
        [ $rc -eq 2 ] || fail "plan, lr a chain of 10^6 '$op': exit $rc, not 2"
        grep -q "chain.yaml:6: key 'lr'.*characters" "$W/err" || fail "plan, 10^6 '$op': message $(head -c 200 "$W/err")"
    done
    printf 'name: c\ngrid:\n  d: [12]\nfixed:\n  tau_end: 0.05\n  lr: (%s1)*1e-6\nseeds: 1\nsolvers: [ode]\n' \
        "$(printf '1+%.0s' $(seq 999))" >"$W/chain.yaml"
    "$AIMSWEEP" plan "$W/chain.yaml" >/dev/null 2>"$W/err"
    [ $? -eq 2 ] && grep -q "more than 1024" "$W/err" || fail "plan, 1000 terms: $(head -c 200 "$W/err")"
    printf 'name: c\ngrid:\n  d: [12]\nfixed:\n  tau_end: 0.05\n  lr: %s0.0001\nseeds: 1\nsolvers: [ode]\n' \
        "$(printf '0.0001+%.0s' $(seq 399))" >"$W/chain.yaml"
    "$AIMSWEEP" run "$W/chain.yaml" --db "$W/chain.db" --quiet || fail "run, 400 terms"
    # the sum added left to right in double, as Python adds it
    want_lr=$(/usr/bin/python3 -c "
s = 0.0
for i in range(400): s += 0.0001
print(repr(s))")
    [ "$(q "$W/chain.db" "SELECT lr FROM tasks")" = "$want_lr" ] || fail "400 terms of 1e-4: lr $(q "$W/chain.db" "SELECT lr FROM tasks"), not $want_lr"
    echo "expressions: done"
fi

# 3. the -wal file lost, then the run killed
if want wal; then
    cat >"$W/slow.yaml" <<'YAML'
name: slow
grid:
  d: [32]
fixed:
  decomposition: direct
  activation: h2
  tau_end: 0.5
  records: 5
  lr: 0.05
seeds: 2000
solvers: [sgd]
YAML
    AIMSWEEP_CHECKPOINT_S=0.5 "$AIMSWEEP" run "$W/slow.yaml" --db "$W/wal.db" --quiet 2>"$W/wal.err" &
    pid=$!
    c1=0
    for i in $(seq 300); do
        c1=$(q "$W/wal.db" "SELECT count(*) FROM tasks WHERE status = 'done'" 2>/dev/null)
        [ "${c1:-0}" -ge 20 ] && break
        sleep 0.1
    done
    # one commit interval (1 s) and one checkpoint interval later, everything counted in c1 is
    # in the file itself
    sleep 2.5
    c2=$(q "$W/wal.db" "SELECT count(*) FROM tasks WHERE status = 'done'")
    rm -f "$W/wal.db-wal"
    kill -9 $pid
    wait $pid 2>/dev/null
    c3=$(q "$W/wal.db" "SELECT count(*) FROM tasks WHERE status = 'done'" 2>&1)
    echo "wal: $c1 done before the wait, $c2 when the -wal was deleted, $c3 after the kill"
    [ "${c1:-0}" -ge 20 ] || fail "wal: the run did not get going ($c1 done)"
    [ "$c2" -lt 2000 ] || fail "wal: the run ended before the kill"
    [ "$c3" -ge "$c1" ] 2>/dev/null || fail "wal: $c3 done after the loss, fewer than the $c1 committed before the last checkpoint"
    [ "$(q "$W/wal.db" "PRAGMA integrity_check" 2>&1)" = ok ] || fail "wal: integrity_check"
    # the run goes on from there
    sed 's/seeds: 2000/seeds: 30/' "$W/slow.yaml" >"$W/slow30.yaml"
    "$AIMSWEEP" run "$W/slow30.yaml" --db "$W/wal.db" --quiet >/dev/null 2>&1 || fail "wal: a run after the loss"
    [ "$(q "$W/wal.db" "SELECT count(*) FROM sweeps")" = 2 ] || fail "wal: the second run's sweep"
fi

# 4. merge twice; a refused merge
if want merge; then
    for i in 1 2; do
        "$AIMSWEEP" run "$SRCDIR/tests/tiny.yaml" --db "$W/part$i.db" --part $i/2 --quiet || fail "merge: part $i"
    done
    "$AIMSWEEP" merge "$W/study.db" "$W/part1.db" "$W/part2.db" >/dev/null || fail "merge: the first"
    first=$(census "$W/study.db")
    links=$(q "$W/study.db" "SELECT sweep_id, task_id FROM sweep_tasks ORDER BY 1, 2")
    "$AIMSWEEP" merge "$W/study.db" "$W/part1.db" "$W/part2.db" >"$W/out" || fail "merge: the second"
    [ "$(census "$W/study.db")" = "$first" ] || fail "merge: twice: $(census "$W/study.db"), after the first $first"
    [ "$(q "$W/study.db" "SELECT sweep_id, task_id FROM sweep_tasks ORDER BY 1, 2")" = "$links" ] || fail "merge: sweep_tasks changed"
    [ "$(q "$W/study.db" "SELECT count(*) FROM sweeps")" = 2 ] || fail "merge: $(q "$W/study.db" "SELECT count(*) FROM sweeps") sweeps rows for 2 parts"
    grep -q "0 runs, 0 tasks added" "$W/out" || fail "merge: the second says $(cat "$W/out")"
    # a part whose run goes on after the merge: its new run is added, once
    "$AIMSWEEP" run "$SRCDIR/tests/tiny.yaml" --db "$W/part1.db" --part 1/2 --quiet || fail "merge: part 1 again"
    "$AIMSWEEP" merge "$W/study.db" "$W/part1.db" >/dev/null || fail "merge: part 1 again"
    "$AIMSWEEP" merge "$W/study.db" "$W/part1.db" >/dev/null || fail "merge: part 1 again"
    [ "$(q "$W/study.db" "SELECT count(*) FROM sweeps")" = 3 ] || fail "merge: a later run of a part"
    # refused: a part with no schema yet (a run that is starting): no study left, the part untouched
    : >"$W/empty.db"
    "$AIMSWEEP" merge "$W/new.db" "$W/part1.db" "$W/empty.db" >/dev/null 2>"$W/err"
    [ $? -eq 2 ] || fail "merge: an empty part not refused with exit 2"
    [ ! -e "$W/new.db" ] && [ ! -e "$W/new.db-wal" ] || fail "merge: a refused merge left $(ls "$W"/new.db*)"
    [ ! -s "$W/empty.db" ] || fail "merge: the empty part was written"
    echo "merge: done"
fi

# 5. messages
if want messages; then
    M="$W/messages.txt"
    : >"$M"
    cp "$W/ref.db" "$W/uv.db"
    /usr/bin/python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 5'); c.commit()" "$W/uv.db"
    "$AIMSWEEP" run "$SRCDIR/tests/tiny.yaml" --db "$W/uv.db" --quiet 2>"$W/err"
    [ $? -eq 2 ] || fail "messages: a user_version older than the columns: not exit 2"
    grep -q "user_version" "$W/err" && ! grep -q "duplicate column name" "$W/err" ||
        fail "messages: user_version: $(cat "$W/err")"
    cat "$W/err" >>"$M"
    echo "not a database" >"$W/text.db"
    cp "$W/ref.db" "$W/newer.db"
    /usr/bin/python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 99'); c.commit()" "$W/newer.db"
    : >"$W/empty.db"
    for db in "$W/text.db" "$W/newer.db" "$W/empty.db" "$W/uv.db" "$W/nodir/x.db"; do
        for cmd in run status query reset merge; do
            case $cmd in
                run) "$AIMSWEEP" run "$SRCDIR/tests/tiny.yaml" --db "$db" --quiet ;;
                status) "$AIMSWEEP" status "$db" ;;
                query) "$AIMSWEEP" query "$db" "SELECT 1 FROM tasks" ;;
                reset) "$AIMSWEEP" reset "$db" --where "1" ;;
                merge) "$AIMSWEEP" merge "$W/m.db" "$db" ;;
            esac >/dev/null 2>>"$M"
        done
    done
    cp "$W/ref.db" "$W/x.db"
    "$AIMSWEEP" reset "$W/x.db" --where "1=0); DELETE FROM trajectory; --" 2>>"$M"
    "$AIMSWEEP" reset "$W/x.db" --where "no_such_column = 1" 2>>"$M"
    "$AIMSWEEP" query "$W/x.db" "PRAGMA query_only = 0" 2>>"$M"
    # a full disk (root with tmpfs only): the commit that fails
    if [ "$(id -u)" -eq 0 ] && mkdir -p "$W/mnt" && mount -t tmpfs -o size=400k tmpfs "$W/mnt" 2>/dev/null; then
        printf 'name: full\nfixed: {decomposition: tied, d: 12, tau_end: 0.2, records: 30, solvers: sgd}\nseeds: 200\n' >"$W/full.yaml"
        "$AIMSWEEP" run "$W/full.yaml" --db "$W/mnt/full.db" --quiet --commit-interval 0 2>"$W/err"
        rc=$?
        umount "$W/mnt"
        [ $rc -ne 0 ] && grep -q "disk is full" "$W/err" || fail "messages: the full disk: exit $rc, $(cat "$W/err")"
        cat "$W/err" >>"$M"
    else
        echo "messages: the full disk skipped (needs root and tmpfs)"
    fi
    nmsg=$(grep -c . "$M")
    [ "$nmsg" -ge 20 ] || fail "messages: only $nmsg lines of messages collected"
    if grep -n "sqlite3_\|(s->" "$M"; then fail "messages: C source text in a message (above)"; fi
    # the sources: no string literal naming an SQLite call, no macro turning its argument into
    # text in src/harness (MPICHECK's report of a failed MPI call names the call on purpose)
    if grep -rnE '"[^"]*(sqlite3_[a-z_0-9]+|\(s->)[^"]*"' "$SRCDIR/src" "$SRCDIR/include"; then
        fail "messages: a string literal with C source text (above)"
    fi
    if grep -rnE '[^#]#[a-z_]+\)' "$SRCDIR/src/harness" "$SRCDIR/src/cli" "$SRCDIR/src/base" | grep -v '#include'; then
        fail "messages: a macro stringifies its argument (above)"
    fi
    echo "messages: $nmsg lines checked"
fi

# 6. a damaged file
if want corrupt; then
    cp "$W/ref.db" "$W/bad.db"
    /usr/bin/python3 - "$W/bad.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
ps = c.execute("PRAGMA page_size").fetchone()[0]
root = c.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'trajectory_row'").fetchone()[0]
c.close()
with open(sys.argv[1], "r+b") as f:  # the index's cell pointers and cells, past its header
    f.seek((root - 1) * ps + 8)
    f.write(b"\xab" * 200)
PY
    sum0=$(md5sum <"$W/bad.db")
    "$AIMSWEEP" run "$SRCDIR/tests/tiny.yaml" --db "$W/bad.db" --quiet 2>"$W/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "damaged" "$W/err" && grep -q "\.recover" "$W/err" && grep -q backup "$W/err" ||
        fail "corrupt: run: exit $rc, $(cat "$W/err")"
    "$AIMSWEEP" merge "$W/cstudy.db" "$W/bad.db" >/dev/null 2>"$W/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "damaged" "$W/err" || fail "corrupt: merge of a damaged part: exit $rc, $(cat "$W/err")"
    [ ! -e "$W/cstudy.db" ] || fail "corrupt: the refused merge left its study"
    cp "$W/bad.db" "$W/badstudy.db"
    "$AIMSWEEP" merge "$W/badstudy.db" "$W/ref.db" >/dev/null 2>"$W/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "damaged" "$W/err" || fail "corrupt: merge into a damaged study: exit $rc"
    "$AIMSWEEP" reset "$W/bad.db" --where 1 >/dev/null 2>"$W/err"
    [ $? -eq 2 ] || fail "corrupt: reset not refused"
    [ "$(md5sum <"$W/bad.db")" = "$sum0" ] || fail "corrupt: the damaged file was written"
    "$AIMSWEEP" status "$W/bad.db" >/dev/null 2>"$W/err"
    grep -q "warning: .*damaged" "$W/err" || fail "corrupt: status does not warn: $(cat "$W/err")"
    "$AIMSWEEP" query "$W/bad.db" "SELECT count(*) FROM tasks" >/dev/null 2>"$W/err"
    grep -q "warning: .*damaged" "$W/err" || fail "corrupt: query does not warn: $(cat "$W/err")"
    # a whole file: no warning
    "$AIMSWEEP" status "$W/ref.db" >/dev/null 2>"$W/err"
    [ ! -s "$W/err" ] || fail "corrupt: status warns on a whole file: $(cat "$W/err")"
    echo "corrupt: done"
fi

# 7. cost
if want cost; then
    t0=$(date +%s.%N)
    timeout 10 "$AIMSWEEP" single --d 20 --lr 1e-9 --tau-end 1000 >/dev/null 2>"$W/err"
    rc=$?
    t=$(echo "$(date +%s.%N) - $t0" | bc)
    [ $rc -eq 2 ] || fail "cost: single --d 20 --lr 1e-9 --tau-end 1000: exit $rc, not 2"
    [ "$(echo "$t < 1" | bc)" = 1 ] || fail "cost: the refusal took $t s"
    grep -q "estimated at .* h .* of one core" "$W/err" && grep -q -- "--force" "$W/err" ||
        fail "cost: the message: $(cat "$W/err")"
    # with --force (or a higher --cost-limit) it starts, saying its estimate first
    timeout 1 "$AIMSWEEP" single --d 20 --lr 1e-9 --tau-end 1000 --force >/dev/null 2>"$W/err"
    [ $? -eq 124 ] && grep -q "estimated .* of one core" "$W/err" || fail "cost: --force: $(cat "$W/err")"
    timeout 1 "$AIMSWEEP" single --d 20 --lr 1e-9 --tau-end 1000 --cost-limit 1e6 >/dev/null 2>"$W/err"
    [ $? -eq 124 ] || fail "cost: --cost-limit 1e6 did not start the run"
    "$AIMSWEEP" single --d 20 --tau-end 0.1 --cost-limit 0 >/dev/null 2>"$W/err"
    [ $? -eq 2 ] || fail "cost: --cost-limit 0 not refused"
    # a short point says nothing
    "$AIMSWEEP" single --d 12 --tau-end 0.05 --solvers ode >/dev/null 2>"$W/err" || fail "cost: a short point"
    grep -q "estimated" "$W/err" && fail "cost: a short point prints an estimate"
    echo "cost: done"
fi

[ "$fails" -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
