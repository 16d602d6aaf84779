#!/bin/sh
# `aimsweep bench` as a user reads it: every row's multiply-adds per step are the step's count
# (2T per parameter entry a pass takes and T per entry of the teacher's factor, T = 2: direct
# 4 d^2 + 2 d k, tied 4 d r + 2 d k, untied 8 d r + 2 d k, with r = d and k = round(d/2); direct
# keeping half of S, at even d where the two-step pass runs, takes the rows of each band of 32
# from the band's first column on, and with --half off the whole of S), the roofline is the larger
# of the memory and the compute times, the ratio is the step's time over it, and each measured
# rate is positive and finite. Timings themselves are not checked (the machine may be shared).
# usage: bench_cli.sh WORKDIR   (env AIMSWEEP, SRCDIR)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
passed=0
# direct at d = 40 keeps half of S where the two-step pass runs: in double with AVX-512, in
# single with AVX2 (the kernels the table's first line names); with --half off, never
kernels=$("$AIMSWEEP" bench --d 40 --decomposition tied --seconds 0.01 | head -1)
want_half=0
case "$kernels" in "kernels: portable"*) ;; "kernels: avx512"*) want_half=2 ;; "kernels: avx2"*) want_half=1 ;; *) fail "bench's first line does not name the kernels: $kernels" ;; esac
for half in on off; do
"$AIMSWEEP" bench --d 40,41 --precision double,single --half $half --seconds 0.05 --format csv \
    >"$W/b.csv" || fail "aimsweep bench exited $?"
rows=$(awk 'END { print NR - 1 }' "$W/b.csv")
[ "$rows" -eq 12 ] || fail "bench: $rows rows, expected 12 (3 decompositions x 2 sizes x 2 precisions)"
HALVES=$want_half
[ $half = off ] && HALVES=0
bad=$(awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    {
        d = $c["d"]; k = int(d / 2 + 0.5); dec = $c["decomposition"]; e = $c["param_entries"]
        half = 0
        for (s = 0; s < d; s += 32) half += (d - s < 32 ? d - s : 32) * (d - s)
        if (e != (dec == "untied" ? 2 : 1) * d * d && !(dec == "direct" && d % 2 == 0 && e == half))
            printf "%s d=%s %s: %s entries a pass\n", dec, d, $c["precision"], e
        if (dec == "direct" && d % 2 == 0 && e == half) halves++
        want = 4 * e + 2 * d * k
        mem = $c["memory_us"]; comp = $c["compute_us"]; roof = $c["roofline_us"]
        top = mem > comp ? mem : comp
        if ($c["fma_per_step"] != want)
            printf "%s d=%s %s: %s multiply-adds per step, expected %d\n", dec, d, $c["precision"], $c["fma_per_step"], want
        if (roof - top > 1e-3 * top || top - roof > 1e-3 * top)
            printf "%s d=%s: roofline %s is not max(memory %s, compute %s)\n", dec, d, roof, mem, comp
        r = $c["us_per_step"] / roof
        if (r - $c["ratio_to_roofline"] > 2e-3 * r || $c["ratio_to_roofline"] - r > 2e-3 * r)
            printf "%s d=%s: ratio %s, the step over the roofline is %g\n", dec, d, $c["ratio_to_roofline"], r
        if (!($c["gfma_per_s"] > 0) || !($c["bandwidth_gbs"] > 0) || !($c["steps_per_s"] > 0))
            printf "%s d=%s: a rate is not positive: %s GFMA/s, %s GB/s, %s steps/s\n", dec, d, $c["gfma_per_s"], $c["bandwidth_gbs"], $c["steps_per_s"]
        if (comp * $c["gfma_per_s"] * 1e3 - want > 1e-2 * want || want - comp * $c["gfma_per_s"] * 1e3 > 1e-2 * want)
            printf "%s d=%s: compute time %s us is not %d multiply-adds at %s GFMA/s\n", dec, d, comp, want, $c["gfma_per_s"]
    }
    END { if (halves != HALVES) printf "%d rows of direct keep half of S, expected %d\n", halves, HALVES }' \
    HALVES="$HALVES" "$W/b.csv")
[ -z "$bad" ] && passed=$((passed + 1)) || fail "--half $half: $bad"
done
# bench/compare.sh: one row per configuration, one column per build, the first build at 1.00x
# (the same binary twice: the second within the machine's noise of it, not checked)
sh_out=$(bash "$SRCDIR/bench/compare.sh" --d 40 --decomposition tied,untied --rounds 2 \
    --seconds 0.02 "$AIMSWEEP" "$AIMSWEEP" 2>&1) || fail "bench/compare.sh exited $?: $sh_out"
n=$(printf '%s\n' "$sh_out" | grep -c '^| \(tied\|untied\)/40/double | [0-9]* (1.00x) | [0-9]* ([0-9.]*x) |$')
[ "$n" -eq 2 ] && passed=$((passed + 1)) || fail "bench/compare.sh: $n of 2 rows as expected in
$sh_out"
bash "$SRCDIR/bench/compare.sh" "$AIMSWEEP" >/dev/null 2>&1
[ $? -eq 2 ] && passed=$((passed + 1)) || fail "bench/compare.sh with one build: not refused with exit 2"
# --loads: one row per precision and stores (0, 2) for L = 0, 2, ..., chains (16, or 12 with
# AVX2), rates positive and finite, L = 0 without stores at ratio 1 and each ratio the rate over
# that row's (the rates' order is the machine's, not checked)
"$AIMSWEEP" bench --loads --seconds 0.05 --format csv >"$W/l.csv" || fail "bench --loads exited $?"
bad=$(awk -F, '
    NR == 1 { next }
    { key = $1 "/" $4; n[key]++; rows++; r = $5 + 0; ch = $2
      if ($3 != 2 * (n[key] - 1)) printf "%s: row %d has L = %s\n", key, n[key], $3
      if (!(r > 0) || r > 1e6) printf "%s L=%s: rate %s\n", key, $3, $5
      if ($3 == 0 && $4 == 0) { base[$1] = r; if ($6 != 1) printf "%s L=0: ratio %s\n", key, $6 }
      else if (base[$1] > 0) { q = r / base[$1]; if (q - $6 > 1e-3 * q || $6 - q > 1e-3 * q)
          printf "%s L=%s: ratio %s, the rate over L=0 is %g\n", key, $3, $6, q } }
    END { if ((ch != 12 && ch != 16) || rows != 4 * (ch / 2 + 1))
          printf "%s chains: %d rows\n", ch, rows }' "$W/l.csv")
[ -z "$bad" ] && passed=$((passed + 1)) || fail "bench --loads: $bad"
"$AIMSWEEP" bench --loads --d 400 >/dev/null 2>&1
[ $? -eq 2 ] && passed=$((passed + 1)) || fail "bench --loads --d 400: not refused with exit 2"
# a malformed option is refused with exit 2
"$AIMSWEEP" bench --precision quad >/dev/null 2>&1
[ $? -eq 2 ] && passed=$((passed + 1)) || fail "bench --precision quad: not refused with exit 2"
"$AIMSWEEP" bench --half maybe >/dev/null 2>&1
[ $? -eq 2 ] && passed=$((passed + 1)) || fail "bench --half maybe: not refused with exit 2"
"$AIMSWEEP" bench --loads --half off >/dev/null 2>&1
[ $? -eq 2 ] && passed=$((passed + 1)) || fail "bench --loads --half off: not refused with exit 2"
echo "$passed passed, $fails failed"
[ "$fails" -eq 0 ]
