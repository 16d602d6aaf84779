#!/bin/sh
# Bad database paths: a read-only directory, a file that is not a database, an SQLite file of
# something else, a directory. Each: a clear message, exit code 2, and the file untouched.
# usage: sweep_baddb.sh WORKDIR   (env AIMSWEEP, SRCDIR)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
SWEEP=$SRCDIR/tests/tiny.yaml
fails=0

expect() { # name expected-rc expected-substring command...
    name=$1 erc=$2 pat=$3
    shift 3
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne "$erc" ]; then echo "FAIL $name: exit $rc, expected $erc ($out)"; fails=$((fails + 1)); return; fi
    case "$out" in *"$pat"*) echo "ok   $name: $out" ;; *) echo "FAIL $name: expected '$pat' in: $out"; fails=$((fails + 1)) ;; esac
}

# read-only directory (as an unprivileged user when we are root: root ignores permissions)
mkdir -p "$W/ro" && chmod 555 "$W/ro"
AS=""
if [ "$(id -u)" -eq 0 ]; then
    chmod 755 "$W"
    AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
expect readonly_dir 2 "cannot write in directory" $AS "$AIMSWEEP" run "$SWEEP" --db "$W/ro/results.db" --quiet
[ -e "$W/ro/results.db" ] && { echo "FAIL readonly_dir: file created"; fails=$((fails + 1)); }

# not a database: refused, byte for byte unchanged
printf 'my notes: do not lose these\n%.0s' 1 2 3 4 5 6 7 8 9 10 > "$W/notes.txt"
cp "$W/notes.txt" "$W/notes.orig"
expect not_a_database 2 "not an SQLite database" "$AIMSWEEP" run "$SWEEP" --db "$W/notes.txt" --quiet
[ -e "$W/notes.txt.log" ] && { echo "FAIL not_a_database: a log left beside it"; fails=$((fails + 1)); }
expect not_a_database_query 2 "not an SQLite database" "$AIMSWEEP" query "$W/notes.txt" "SELECT 1"
expect not_a_database_status 2 "not an SQLite database" "$AIMSWEEP" status "$W/notes.txt"
cmp -s "$W/notes.txt" "$W/notes.orig" || { echo "FAIL not_a_database: file changed"; fails=$((fails + 1)); }
[ -e "$W/notes.txt-wal" ] && { echo "FAIL not_a_database: a -wal file appeared"; fails=$((fails + 1)); }

# an SQLite database of something else
if command -v sqlite3 >/dev/null; then
    sqlite3 "$W/other.db" "CREATE TABLE t(x); INSERT INTO t VALUES (1);"
    cp "$W/other.db" "$W/other.orig"
    expect foreign_sqlite 2 "not an aimsweep results database" "$AIMSWEEP" run "$SWEEP" --db "$W/other.db" --quiet
    cmp -s "$W/other.db" "$W/other.orig" || { echo "FAIL foreign_sqlite: file changed"; fails=$((fails + 1)); }
fi

# a directory, and a query on a file that does not exist (never created)
expect directory 2 "not a regular file" "$AIMSWEEP" run "$SWEEP" --db "$W" --quiet
expect query_missing 2 "No such file" "$AIMSWEEP" query "$W/none.db" "SELECT 1"
[ -e "$W/none.db" ] && { echo "FAIL query_missing: file created"; fails=$((fails + 1)); }

# a good database, then a bad query: a clear message, nothing changed (a statement that would
# write is refused before it runs, exit 2; SQL that cannot run as written is bad input too, exit 2)
"$AIMSWEEP" run "$SWEEP" --db "$W/good.db" --quiet || { echo "FAIL good run"; fails=$((fails + 1)); }
expect query_write 2 "a query only reads the database" "$AIMSWEEP" query "$W/good.db" "DELETE FROM tasks"
expect query_syntax 2 "SQL error" "$AIMSWEEP" query "$W/good.db" "SELEKT 1"
n=$("$AIMSWEEP" query "$W/good.db" "SELECT count(*) FROM tasks WHERE status = 'done'" --csv --no-header)
[ "$n" = 12 ] || { echo "FAIL good.db: $n done tasks, expected 12"; fails=$((fails + 1)); }

# a finished database on a read-only share can still be queried, and run refuses it untouched
chmod 755 "$W/ro" && cp "$W/good.db" "$W/ro/good.db" && chmod 644 "$W/ro/good.db" && chmod 555 "$W/ro"
n=$($AS "$AIMSWEEP" query "$W/ro/good.db" "SELECT count(*) FROM summary" --csv --no-header 2>&1)
[ "$n" = 36 ] || { echo "FAIL query on a read-only share: $n"; fails=$((fails + 1)); }
expect readonly_share 2 "cannot write in directory" $AS "$AIMSWEEP" run "$SWEEP" --db "$W/ro/good.db" --quiet
cmp -s "$W/good.db" "$W/ro/good.db" || { echo "FAIL readonly_share: file changed"; fails=$((fails + 1)); }

# a database in use: the refusal names the holder (pid and command on this host, and the run
# registered last); another study's database is named, not taken silently
"$AIMSWEEP" run "$SRCDIR/tests/ids_quick.yaml" --db "$W/busy.db" --quiet 2>/dev/null &
holder=$!
i=0
while [ $i -lt 100 ] && ! "$AIMSWEEP" query "$W/busy.db" "SELECT 1 FROM sweeps" >/dev/null 2>&1; do
    sleep 0.1
    i=$((i + 1))
done
expect lock_holder 2 "held by pid $holder on this host" "$AIMSWEEP" run "$SWEEP" --db "$W/busy.db" --quiet --lock-wait 0.2
kill $holder 2>/dev/null
wait $holder 2>/dev/null
out=$("$AIMSWEEP" plan "$SWEEP" --db "$W/busy.db" 2>&1)
case "$out" in *"also holds other sweeps: quick ("*) echo "ok   other_study: named" ;;
*) echo "FAIL other_study: plan did not name the other sweep: $out"; fails=$((fails + 1)) ;; esac

chmod 755 "$W/ro"
echo "$fails failed"
[ $fails -eq 0 ]
