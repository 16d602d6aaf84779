#!/bin/bash
# The database against its users' text and its own failures:
#   1. SQL from the command line (reset --where, recommend --where, query, export --table):
#      injection attempts exit 2 and every row and table stays;
# (further sections: see below)
# usage: store_safety.sh WORKDIR [SECTION...]   (env: AIMSWEEP, SRCDIR; see harness_lib.sh)
W=${1:?workdir}
shift
. "$SRCDIR/tests/harness_lib.sh"
rm -rf "$W"
mkdir -p "$W"
want() { [ $# -eq 0 ] && return 0; for s in "${SECTIONS[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
SECTIONS=("$@")
[ ${#SECTIONS[@]} -eq 0 ] && SECTIONS=(inject)

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
    [ "$(q "$W/x.db" "PRAGMA user_version")" = 6 ] || fail "query: PRAGMA user_version refused"
    "$AIMSWEEP" recommend "$W/x.db" --where "t.d = 12" >/dev/null || fail "recommend --where t.d = 12"
    echo "injection: done"
fi

[ "$fails" -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
