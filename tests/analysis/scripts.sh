#!/bin/sh
# The analysis scripts on any database: a demo-like one (every script exits 0 and writes
# non-empty images of each kind its data supports), one whose tasks never ran (exit 0, says
# what it could not draw, no crash), the same runs through a results csv, and bad input (a missing file, a file that is not a
# database: exit 2 with a message).
# usage: scripts.sh DB WORKDIR   env: AIMSWEEP, SRCDIR
set -u
db=$1
work=$2
py=/usr/bin/python3
an="$SRCDIR/analysis"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
rm -rf "$work"
mkdir -p "$work"

# nonempty DIR GLOB: at least one such file and none empty
nonempty() {
    n=0
    for f in "$1"/$2; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        [ -s "$f" ] || fail "empty image $f"
    done
    [ "$n" -gt 0 ] || fail "no $2 in $1"
}

$py "$an/figures.py" "$db" --out "$work/figs" > "$work/figures.out" 2>&1 || fail "figures.py exit $? ($(tail -1 "$work/figures.out"))"
for kind in "curves-*.png" "curves-*.pdf" "orders-*.png" "nwr-*.png"; do nonempty "$work/figs" "$kind"; done
$py "$an/scaling.py" "$db" --out "$work/figs" --boot 50 --csv "$work/scaling.csv" > "$work/scaling.out" 2>&1 \
    || fail "scaling.py exit $? ($(tail -1 "$work/scaling.out"))"
nonempty "$work/figs" "scaling-nwr.png"
# three values of d (16, 24, 32): a and b are not identifiable, and the script must say so
grep -q "n_wr = A d^a (ln d)^b: not identifiable (3 values of d" "$work/scaling.out" ||
    fail "scaling.py did not say that (a, b) are not identifiable from 3 values of d"
grep -q "n_wr = A d^a (ln d)^b:  a = " "$work/scaling.out" && fail "scaling.py printed an (a, b) fit from 3 values of d"
[ -s "$work/scaling.csv" ] || fail "scaling.py wrote no csv"
grep -q "tau_wr = p + q ln d: q = .*(q = 0: n_wr ∝ d²; q > 0: n_wr ∝ d² ln d)" "$work/scaling.out" ||
    fail "scaling.py printed no tau_wr = p + q ln d fit read for a fixed lr"
# The same runs read from a per-seed results csv (the committed extracts' format) instead of the
# database: the same per-d table (seeds, recovered, quartiles) and fits; a csv reader that lost
# a column, a status or a seed changes these rows.
"$AIMSWEEP" query "$db" --csv "SELECT task_id, decomposition, activation, info_exponent, d, lr,
    init_scale, width, teacher, order_m, closure, tau_end, seed, solver, status, tau_wr, samples_wr
    FROM results" > "$work/results.csv" || fail "query of the results view"
$py "$an/scaling.py" "$work/results.csv" --out "$work/figs-csv" --boot 50 > "$work/scaling-csv.out" 2>&1 \
    || fail "scaling.py on a csv: exit $? ($(tail -1 "$work/scaling-csv.out"))"
table() { grep -E '^ +[0-9]+ +[0-9.e+-]+ +[0-9]+ ' "$1" | sort; }
[ -n "$(table "$work/scaling.out")" ] || fail "scaling.py printed no per-d rows"
[ "$(table "$work/scaling.out")" = "$(table "$work/scaling-csv.out")" ] \
    || fail "scaling.py: the csv gives other per-d rows than the database"
# pooling: the csv split by seed parity into two files gives the whole table back, and the
# database with its own csv counts every run once (a pooler that dropped a file, or counted a
# run twice, changes the seed counts)
head -1 "$work/results.csv" > "$work/odd.csv"
head -1 "$work/results.csv" > "$work/even.csv"
awk -F, -v odd="$work/odd.csv" -v even="$work/even.csv" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "seed") c = i; next }
    { print >> (($c % 2) ? odd : even) }' "$work/results.csv"
$py "$an/scaling.py" "$work/odd.csv" "$work/even.csv" --out "$work/figs-csv" --boot 50 > "$work/scaling-halves.out" 2>&1 \
    || fail "scaling.py pooling two csv files: exit $?"
[ "$(table "$work/scaling.out")" = "$(table "$work/scaling-halves.out")" ] \
    || fail "scaling.py: two halves of the csv pooled give other per-d rows than the whole"
$py "$an/scaling.py" "$db" "$work/results.csv" --out "$work/figs-csv" --boot 50 > "$work/scaling-both.out" 2>&1 \
    || fail "scaling.py pooling a database and a csv: exit $?"
grep -q "pooled with a csv: a setting is decomposition, activation" "$work/scaling-both.out" \
    || fail "scaling.py did not say how it pooled"
grep -q "not counted twice" "$work/scaling-both.out" || fail "scaling.py did not say it dropped duplicates"
[ "$(table "$work/scaling.out")" = "$(table "$work/scaling-both.out")" ] \
    || fail "scaling.py: a database pooled with its own csv gives other per-d rows"
$py "$an/phase.py" "$db" --out "$work/figs" > "$work/phase.out" 2>&1 || fail "phase.py exit $? ($(tail -1 "$work/phase.out"))"
for kind in fraction diverged tauwr; do nonempty "$work/figs" "phase-$kind.png"; done
grep -q "SGD and ODE at" "$work/phase.out" || fail "phase.py did not compare SGD with the ODE"

# Figure 1's gaps: the demo's orders.yaml points (spectral M = 2, 3 beside the flow) give a table
$py "$an/fig1_gaps.py" "$db" > "$work/gaps.out" 2>&1 || fail "fig1_gaps.py exit $?"
grep -q "^| spectral | loss | [0-9]" "$work/gaps.out" || fail "fig1_gaps.py printed no spectral row"

# a database whose tasks never ran: --time-limit 0 registers them and starts none
"$AIMSWEEP" run "$SRCDIR/tests/analysis/orders.yaml" --db "$work/pending.db" --time-limit 0.000001 > /dev/null 2>&1
for s in figures scaling phase fig1_gaps; do
    out="--out $work/pending"; [ "$s" = fig1_gaps ] && out=""   # fig1_gaps.py only prints
    $py "$an/$s.py" "$work/pending.db" $out > "$work/pending-$s.out" 2>&1 \
        || fail "$s.py on a database without results: exit $?"
    grep -qi "no \|not drawn" "$work/pending-$s.out" || fail "$s.py did not say what it could not draw"
done

# bad input
printf 'not a database\n' > "$work/junk.db"
for s in figures scaling phase fig1_gaps; do
    out="--out $work/x"; [ "$s" = fig1_gaps ] && out=""
    $py "$an/$s.py" "$work/missing.db" $out > "$work/bad.out" 2>&1
    [ $? -eq 2 ] || fail "$s.py on a missing file: expected exit 2"
    grep -q "no such file" "$work/bad.out" || fail "$s.py on a missing file: no message"
    $py "$an/$s.py" "$work/junk.db" $out > "$work/bad.out" 2>&1
    [ $? -eq 2 ] || fail "$s.py on a non-database: expected exit 2"
done
[ "$fails" -eq 0 ] && echo "analysis scripts: all passed"
exit "$fails"
