#!/bin/sh
# The folders of src/ and include/aimsweep/ form layers, bottom to top. A file may include
# headers of its own folder and of folders below it, never above: this test lists every
# #include "aimsweep/FOLDER/..." that breaks that, and fails if there is one. theory and
# solvers sit side by side (neither may include the other).
# usage: layering.sh SRCDIR
top=${1:-.}
rank() {
    case $1 in
    base) echo 0 ;; model) echo 1 ;; solvers) echo 2 ;; theory) echo 2 ;; probe) echo 2 ;; run) echo 3 ;;
    harness) echo 4 ;; cli) echo 5 ;; *) echo -1 ;;
    esac
}
bad=0
checked=0
for f in $(cd "$top" && find src include/aimsweep tests -name '*.[ch]'); do
    case $f in
    src/*) own=$(echo "$f" | cut -d/ -f2) ;;
    include/*) own=$(echo "$f" | cut -d/ -f3) ;;
    tests/*) own=cli ;; # tests may use anything
    esac
    r=$(rank "$own")
    [ "$r" -lt 0 ] && { echo "layering: $f is in no known folder ($own)"; bad=$((bad + 1)); continue; }
    for inc in $(sed -n 's|^#include "aimsweep/\([a-z]*\)/.*|\1|p' "$top/$f"); do
        checked=$((checked + 1))
        ri=$(rank "$inc")
        if [ "$ri" -lt 0 ] || [ "$ri" -gt "$r" ] || { [ "$ri" -eq "$r" ] && [ "$inc" != "$own" ]; }; then
            echo "layering: $f ($own) includes aimsweep/$inc/"
            bad=$((bad + 1))
        fi
    done
done
echo "layering: $checked includes checked, $bad across layers"
[ "$checked" -gt 100 ] && [ "$bad" -eq 0 ]
