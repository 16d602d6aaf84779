#!/bin/sh
# A disk that fills up mid-run: the database on a 500 kB tmpfs. The run must stop with a
# non-zero exit and a message that names the cause ("database or disk is full"), not a later
# consequence of it ("no transaction is active", which the first error used to be overwritten
# with); after the space is freed (the tmpfs grown), a rerun must finish the sweep with rows
# identical to an uninterrupted run. Needs root to mount a tmpfs: skipped (77) elsewhere.
# Planted errors: letting a later message replace the first fails the message check; a commit
# that leaves half a result behind fails the comparison of rows.
# usage: store_diskfull.sh WORKDIR   (env AIMSWEEP, SRCDIR)
set -u
W=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to mount a tmpfs"; exit 77; }
rm -rf "$W" && mkdir -p "$W/mnt" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
mount -t tmpfs -o size=500k tmpfs "$W/mnt" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
trap 'mountpoint -q "$W/mnt" && umount "$W/mnt"' EXIT
cat > "$W/df.yaml" <<Y
name: diskfull
fixed: {decomposition: tied, d: 12, tau_end: 0.2, records: 30, solvers: sgd}
seeds: 80
Y
"$AIMSWEEP" run "$W/df.yaml" --db "$W/ref.db" --quiet || fail "reference run"
"$AIMSWEEP" run "$W/df.yaml" --db "$W/mnt/df.db" --quiet --commit-interval 0 2>"$W/full.err"
rc=$?
echo "full disk: exit $rc: $(cat "$W/full.err")"
[ $rc -ne 0 ] || fail "exit 0 on a full disk"
grep -q "database or disk is full" "$W/full.err" || fail "the message does not name the cause"
grep -q "no transaction is active" "$W/full.err" && fail "a later error hid the first"
grep -q "sqlite3_\|(s->" "$W/full.err" && fail "C source text in the message: $(cat "$W/full.err")"
ndone=$(q "$W/mnt/df.db" "SELECT count(*) FROM tasks WHERE status = 'done'")
echo "stored before the disk was full: $ndone of 80"
[ "${ndone:-0}" -gt 0 ] && [ "${ndone:-0}" -lt 80 ] || fail "expected part of the sweep stored, got $ndone"
mount -o remount,size=32m "$W/mnt" || fail "cannot grow the tmpfs"
"$AIMSWEEP" run "$W/df.yaml" --db "$W/mnt/df.db" --quiet || fail "rerun after freeing space"
rows "$W/ref.db" > "$W/ref.txt"
rows "$W/mnt/df.db" > "$W/df.txt"
cmp -s "$W/ref.txt" "$W/df.txt" || fail "rows differ from an uninterrupted run: $(diff "$W/ref.txt" "$W/df.txt" | head -3)"
[ "$(q "$W/mnt/df.db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check"
echo "rows: $(wc -l < "$W/df.txt") lines, identical: $(cmp -s "$W/ref.txt" "$W/df.txt" && echo yes || echo no)"
echo "$((fails == 0)) passed, $fails failed"
[ $fails -eq 0 ]
