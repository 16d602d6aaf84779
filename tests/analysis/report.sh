#!/bin/sh
# analysis/report.py on the demo database: one self-contained page (no address fetched: every
# src is a data: URI, no http(s) link is loaded), rendered by headless Chromium (Debian's
# `chromium`, scripts/install-deps.sh) into a screenshot that is not blank (a share of non-white
# pixels and several distinct colours) and a DOM that holds every section (status, provenance,
# recovery, figures with at least one embedded image, laws, disagreement).
# usage: report.sh DB WORKDIR
set -u
DB=$1 W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
/usr/bin/python3 "$SRCDIR/analysis/report.py" "$DB" --out "$W/out" --boot 50 > "$W/report.log" 2>&1 ||
    { cat "$W/report.log"; echo "FAIL: report.py exited $?"; exit 1; }
P="$W/out/index.html"
[ -s "$P" ] || { echo "FAIL: no $P"; exit 1; }
# self-contained: every src is data:, no stylesheet or script is linked
srcs=$(grep -o "src=['\"][^'\"]*" "$P" | grep -vc "src=['\"]data:")
[ "$srcs" -eq 0 ] || fail "$srcs src attributes that are not data: URIs"
grep -qiE "<link|<script|@import|url\(" "$P" && fail "the page links or imports something"
CH=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CH" ] || { echo "FAIL: no chromium (scripts/install-deps.sh installs it)"; exit 1; }
FLAGS="--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync"
mkdir -p "$W/profile1" "$W/profile2"
# shellcheck disable=SC2086
timeout 120 "$CH" $FLAGS --user-data-dir="$W/profile1" --window-size=1280,2400 \
    --screenshot="$W/shot.png" "file://$P" > "$W/chromium1.log" 2>&1 || fail "chromium --screenshot exited $?"
# shellcheck disable=SC2086
timeout 120 "$CH" $FLAGS --user-data-dir="$W/profile2" --dump-dom "file://$P" > "$W/dom.html" 2> "$W/chromium2.log" ||
    fail "chromium --dump-dom exited $?"
for id in status provenance recovery figures laws disagreement; do
    grep -q "<section id=\"$id\"" "$W/dom.html" || fail "the rendered page has no section $id"
done
n=$(grep -o "<img " "$W/dom.html" | wc -l)
[ "$n" -ge 1 ] || fail "the rendered page has no image"
/usr/bin/python3 - "$W/shot.png" <<'PY' || fails=$((fails + 1))
import sys
import matplotlib.image as mi
import numpy as np
a = mi.imread(sys.argv[1])[..., :3]
ink = float((a.min(axis=2) < 0.9).mean())
colours = len({tuple(c) for c in (a[::7, ::7].reshape(-1, 3) * 31).astype(int)})
print(f"screenshot {a.shape[1]}x{a.shape[0]}: {ink:.1%} of the pixels not white, {colours} colours")
sys.exit(0 if ink > 0.01 and colours >= 8 else 1)
PY
[ $fails -eq 0 ] && echo "report: all passed ($n images)" || echo "report: $fails failed"
exit $fails
