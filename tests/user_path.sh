#!/bin/bash
# A new user's path through an installed aimsweep: `cmake --install` into a scratch prefix, then
# the man page renders and holds every command's --help; bash completion completes a command,
# a flag and a flag's values; `aimsweep help CMD` is `aimsweep CMD --help`; `plan --list` on a
# logspace sweep prints each expanded lr; `--set seeds=N` runs N seeds; the installed
# `aimsweep figures` writes PNGs; aimdb.to_dataframe reads a view into pandas.
# usage: user_path.sh BUILDDIR WORKDIR   (env AIMSWEEP, SRCDIR)
set -u
B=$1 W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
P=$W/prefix
cmake --install "$B" --prefix "$P" >"$W/install.log" 2>&1 || { cat "$W/install.log"; fail "cmake --install"; }
A=$P/bin/aimsweep

# the man page: renders, and carries each command's --help (it is made from them)
page=$P/share/man/man1/aimsweep.1
[ -f "$page" ] || fail "no man page in the prefix"
MANWIDTH=200 man -l "$page" >"$W/man.txt" 2>"$W/man.err" || fail "man -l: $(head -2 "$W/man.err")"
for c in single run plan status query export merge reset recommend figures report; do
    grep -q "aimsweep $c" "$W/man.txt" || fail "man page: no section for $c"
done
grep -q -- "--checkpoint-interval" "$W/man.txt" && grep -q "AIMSWEEP_SYNC" "$W/man.txt" ||
    fail "man page: run's options or the environment missing"

# help CMD is CMD --help
[ "$("$A" help run)" = "$("$A" run --help)" ] || fail "aimsweep help run differs from run --help"
"$A" help nosuch >/dev/null 2>&1
[ $? -eq 2 ] || fail "aimsweep help nosuch: not exit 2"

# completion, installed where bash-completion looks
comp=$P/share/bash-completion/completions/aimsweep
[ -f "$comp" ] || fail "no bash completion in the prefix"
complete_words() { # complete_words WORD...: what TAB offers after the last word
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _aimsweep; echo "${COMPREPLY[*]}"' _ "$comp" "$A" "$@"
}
[ "$(complete_words ru)" = run ] || fail "completion of 'ru': '$(complete_words ru)'"
[ "$(complete_words single --decomposition '')" = "direct tied untied" ] ||
    fail "completion of --decomposition: '$(complete_words single --decomposition '')'"
complete_words single --activation '' | grep -q "h3 h4" || fail "completion of --activation"
complete_words run x.yaml --chec | grep -q -- "--checkpoint-interval" || fail "completion of run's flags"

# plan --list: every point with its values, logspace and expressions evaluated
cat >"$W/list.yaml" <<EOS
grid:
  d: [20, 40]
  lr: {logspace: [0.001, 0.1, 3]}
fixed:
  init_scale: "0.5 / log(d)"
  tau_end: 0.1
EOS
"$A" plan "$W/list.yaml" --list >"$W/list.txt" 2>&1 || fail "plan --list: exit $?"
for lr in 0.001 0.01 0.1; do
    [ "$(awk -v v=$lr '$3 == v' "$W/list.txt" | wc -l)" -eq 2 ] || fail "plan --list: lr $lr not on 2 lines"
done
grep -q "0.1669041003476670" "$W/list.txt" || fail "plan --list: init_scale 0.5/log(20) not evaluated"

# --set seeds=N on a run, with the installed binary; then figures and pandas on its database
# (resumed: the progress counts the whole study, the end says how many recovered and what next)
"$A" run "$SRCDIR/tests/tiny.yaml" --db "$W/tiny.db" --quiet >"$W/run1.log" 2>&1 || fail "run: exit $?"
"$A" run "$SRCDIR/tests/tiny.yaml" --db "$W/tiny.db" --set seeds=2 >"$W/run.log" 2>&1 ||
    fail "run --set seeds=2: exit $? ($(tail -1 "$W/run.log"))"
[ "$(q "$W/tiny.db" "SELECT count(*) || ' ' || count(DISTINCT seed) FROM tasks")" = "24 2" ] ||
    fail "--set seeds=2: not 24 tasks over 2 seeds"
grep -q "\] 24/24 finished" "$W/run.log" || fail "resumed run: progress not counted over the study"
rec=$(q "$W/tiny.db" "SELECT sum(recovered) || ' of ' || sum(seeds) FROM recovery WHERE solver = 'sgd'")
grep -q "weak recovery .*sgd $rec" "$W/run.log" || fail "end of run: not 'sgd $rec' as the recovery view"
grep -q "next: aimsweep status" "$W/run.log" || fail "end of run: no next commands"
if /usr/bin/python3 -c "import matplotlib, numpy" 2>/dev/null; then
    (cd "$W" && "$A" figures tiny.db --out figs >"$W/figures.log" 2>&1) || fail "installed figures: exit $?"
    ls "$W/figs/"*.png >/dev/null 2>&1 || fail "installed figures wrote no PNG"
else
    echo "skipped: figures (no numpy/matplotlib for /usr/bin/python3)"
fi
if /usr/bin/python3 -c "import pandas" 2>/dev/null; then
    shape=$(cd "$W" && PYTHONPATH="$P/share/aimsweep/analysis" /usr/bin/python3 -c \
        "import aimdb; print(aimdb.to_dataframe('tiny.db', 'recovery').shape[0])") ||
        fail "aimdb.to_dataframe failed"
    [ "$shape" = "$(q "$W/tiny.db" "SELECT count(*) FROM recovery")" ] || fail "to_dataframe: $shape rows"
else
    echo "skipped: pandas (python3-pandas not installed)"
fi
# a Python without numpy and matplotlib (site-packages left out with -S): every plotting
# script names the package to install instead of a bare ModuleNotFoundError
for script in figures.py phase.py scaling.py report.py cor2.py probe_figures.py; do
    out=$(cd "$W" && /usr/bin/python3 -S "$P/share/aimsweep/analysis/$script" tiny.db --out figs2 2>&1)
    case $out in *"apt-get install python3-"*"pip install"*) ;;
    *) fail "$script under a Python without numpy: $(printf '%s' "$out" | tail -1)" ;; esac
done
[ "$fails" -eq 0 ] && echo "user_path: all checks passed"
[ "$fails" -eq 0 ]
