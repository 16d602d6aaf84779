#!/bin/sh
# aimsweep recommend on a database of tiny runs, against an independent computation in awk
# from the raw summary rows: the per-decomposition medians (+inf for runs that never recovered),
# the order statistics of the median's interval with the binomial coverage summed term by term,
# the pick and the ODE's pick. The d = 12 points get 9 seeds (a second run), the d = 16 points
# 6, so that both an odd count with l = 2 and an even count with l = 1 are checked. A median
# that drops the +inf runs, takes one middle order statistic for an even count, or an interval
# off by one rank makes the comparison fail; so does a pick that is not the smallest median.
# usage: sweep_recommend.sh WORKDIR   (env AIMSWEEP, SRCDIR)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
DB=$W/rec.db

"$AIMSWEEP" run "$SRCDIR/tests/recommend.yaml" --db "$DB" --quiet || fail "run"
sed 's/d: \[12, 16\]/d: [12]/; s/^seeds: 6/seeds: [7, 8, 9]/; s/name: recommend/name: recommend-more/' \
    "$SRCDIR/tests/recommend.yaml" > "$W/more.yaml"
"$AIMSWEEP" run "$W/more.yaml" --db "$DB" --quiet || fail "second run"
[ "$(q "$DB" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = 90 ] || fail "not 90 finished tasks"
[ "$(q "$DB" "SELECT count(*) FROM summary WHERE solver = 'sgd' AND samples_wr IS NULL")" -gt 0 ] ||
    fail "no SGD run without recovery: the +inf case is not exercised"

# the raw runs: k d lr decomposition solver samples_wr (1e300 = never recovered)
q "$DB" "SELECT coalesce(t.info_exponent, t.activation), t.d, t.lr, t.decomposition, s.solver,
                coalesce(s.samples_wr, 1e300) FROM tasks t JOIN summary s USING (task_id)
         WHERE (s.solver = 'sgd' AND s.status IN ('done', 'diverged')) OR (s.solver = 'ode' AND s.status = 'done')" \
    > "$W/raw.csv"
# per key, decomposition and solver: runs, recovered, median, lo, hi, level
awk -F, '
function binom_cdf(n, j,   i, c, s) { c = 1; s = 0; for (i = 0; i <= j; i++) { s += c; c = c * (n - i) / (i + 1) }
                                      return s / 2 ^ n }
{ key = $1 "," $2 "," $3 "," $4 "," $5; n[key]++; v[key, n[key]] = $6 + 0 }
END {
    for (key in n) {
        N = n[key]
        for (i = 1; i <= N; i++) a[i] = v[key, i]
        for (i = 2; i <= N; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        rec = 0; for (i = 1; i <= N; i++) if (a[i] < 1e300) rec++
        med = (a[int((N + 1) / 2)] + a[int(N / 2) + 1]) / 2
        if (a[int((N + 1) / 2)] >= 1e300 || a[int(N / 2) + 1] >= 1e300) med = 1e300
        l = 1; while (binom_cdf(N, l) <= 0.025) l++      # P(B <= l - 1) <= 0.025 for this l
        if (binom_cdf(N, 0) > 0.025) l = 1
        printf "%s,%d,%d,%.10g,%.10g,%.10g,%.4f\n", key, N, rec, med, a[l], a[N + 1 - l], 1 - 2 * binom_cdf(N, l - 1)
    }
}' "$W/raw.csv" | sort > "$W/expect.csv"
[ "$(wc -l < "$W/expect.csv")" = 24 ] || fail "reference: not 24 groups"
grep -q ',9,[0-9]*,.*,0.9609$' "$W/expect.csv" || fail "reference: no 9-run group with l = 2"

# recommend --all: the same numbers, every decomposition
"$AIMSWEEP" recommend "$DB" --all --csv > "$W/all.csv" || fail "recommend --all"
head -1 "$W/all.csv" | grep -q '^k,d,lr,decomposition,runs,recovered,n_wr,n_wr_lo,n_wr_hi,level,place,ode_runs' ||
    fail "recommend --all header"
tail -n +2 "$W/all.csv" | awk -F, '
function num(s) { return s == "inf" ? 1e300 : s + 0 }
{ printf "%s,%s,%s,%s,sgd,%d,%d,%.10g,%.10g,%.10g,%.4f\n", $1, $2, $3, $4, $5, $6, num($7), num($8), num($9), $10
  if ($12 != "") printf "%s,%s,%s,%s,ode,%d,%d,%.10g,,,\n", $1, $2, $3, $4, $12, $13, num($14) }' | sort > "$W/got.csv"
# the ODE rows carry no interval: compare the reference without it
awk -F, -v OFS=, '$5 == "ode" { $9 = ""; $10 = ""; $11 = "" } { print }' "$W/expect.csv" | sort > "$W/expect2.csv"
cmp -s "$W/expect2.csv" "$W/got.csv" || fail "recommend --all differs from the reference (diff $W/expect2.csv $W/got.csv)"

# the picks: the smallest SGD median (ties: smaller hi, then name), 'none' when it is +inf; the ODE's likewise
awk -F, '{ print $1 "," $2 "," $3 "," $5 "," $8 "," $10 "," $4 }' "$W/expect.csv" | sort -t, -k1,4 -k5,5g -k6,6g -k7,7 |
    awk -F, '!seen[$1 "," $2 "," $3 "," $4]++ { print $1 "," $2 "," $3 "," $4 "," ($5 < 1e300 ? $7 : "none") }' \
    | sort > "$W/expect_pick.csv"
"$AIMSWEEP" recommend "$DB" --csv > "$W/pick.csv" || fail "recommend"
head -1 "$W/pick.csv" | grep -q '^k,d,lr,pick,runs,recovered,n_wr,n_wr_lo,n_wr_hi,level,next,next_n_wr,separated,ode_n_wr_of_pick,ode_pick,ode_n_wr,agree$' ||
    fail "recommend header"
[ "$(tail -n +2 "$W/pick.csv" | wc -l)" = 4 ] || fail "recommend: not 4 rows (k x d)"
tail -n +2 "$W/pick.csv" | awk -F, '{ print $1 "," $2 "," $3 ",sgd," $4; print $1 "," $2 "," $3 ",ode," $15
    if ($17 != ($4 == $15)) print "agree column wrong" }' | sort > "$W/got_pick.csv"
cmp -s "$W/expect_pick.csv" "$W/got_pick.csv" || fail "picks differ from the reference (diff $W/expect_pick.csv $W/got_pick.csv)"

# --sql prints the statement that runs: through aimsweep query it gives the same table
"$AIMSWEEP" recommend --sql > "$W/rec.sql" || fail "recommend --sql"
"$AIMSWEEP" query "$DB" "$(cat "$W/rec.sql")" --csv | cmp -s - "$W/pick.csv" || fail "--sql through query differs"
"$AIMSWEEP" recommend "$DB" | head -1 | grep -q '^k  *d  *lr  *pick ' || fail "table output"

# --by adds a key column, --where filters tasks
[ "$("$AIMSWEEP" recommend "$DB" --by teacher --csv | head -1 | cut -d, -f4)" = teacher ] || fail "--by teacher"
[ "$("$AIMSWEEP" recommend "$DB" --where "t.d = 16" --csv | tail -n +2 | cut -d, -f2 | sort -u)" = 16 ] || fail "--where"

# what the table pools over is named on stderr: nothing here, the teacher in a database of two
"$AIMSWEEP" recommend "$DB" 2>"$W/note.txt" >/dev/null
[ ! -s "$W/note.txt" ] || fail "a pooling note where nothing was pooled: $(cat "$W/note.txt")"
"$AIMSWEEP" run "$SRCDIR/tests/tiny.yaml" --db "$W/two.db" --quiet || fail "tiny run"
sed 's/name: tiny/name: tiny-goe/; s/^fixed:/fixed:\n  teacher: goe/' "$SRCDIR/tests/tiny.yaml" > "$W/goe.yaml"
"$AIMSWEEP" run "$W/goe.yaml" --db "$W/two.db" --quiet || fail "tiny goe run"
"$AIMSWEEP" recommend "$W/two.db" 2>"$W/note.txt" >/dev/null
grep -q "pooled over teacher " "$W/note.txt" || fail "no pooling note for two teachers: $(cat "$W/note.txt")"
"$AIMSWEEP" recommend "$W/two.db" --by teacher 2>"$W/note.txt" >/dev/null
[ ! -s "$W/note.txt" ] || fail "a pooling note with --by teacher: $(cat "$W/note.txt")"

# bad input: exit 2 and a message
for args in "--by seed" "--by nosuchcolumn" "--by d;drop" "--solver ode" "--solver nope" "--bogus"; do
    # shellcheck disable=SC2086
    out=$("$AIMSWEEP" recommend "$DB" $args 2>&1 >/dev/null)
    [ $? -eq 2 ] && [ -n "$out" ] || fail "recommend $args: not exit 2 with a message"
done
"$AIMSWEEP" recommend "$W/missing.db" 2>/dev/null
[ $? -eq 2 ] || fail "missing database: not exit 2"
"$AIMSWEEP" recommend 2>/dev/null
[ $? -eq 2 ] || fail "no database: not exit 2"

echo "$fails failed"
[ $fails -eq 0 ]
