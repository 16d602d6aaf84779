#!/bin/sh
# `cmake --install` and the Slurm job scripts. Installs the build into a scratch prefix, then
# runs both job scripts with stand-ins for mpirun and srun (they run the command line they are
# given, on one rank, and log which binary it named): found on PATH they must run the installed
# binary, with AIMSWEEP set that one, and with neither, from a submit directory holding
# build/aimsweep, that one; without any they must refuse with exit 2. Each sweep must fill its
# database (12 done tasks). A job script that still named build/aimsweep fails the PATH case;
# a missing install rule fails at once.
# usage: install_jobs.sh BUILDDIR WORKDIR   (env AIMSWEEP, SRCDIR)
set -u
B=$1 W=$2
rm -rf "$W" && mkdir -p "$W/fake" "$W/submit/build" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
P=$W/prefix
cmake --install "$B" --prefix "$P" >"$W/install.log" 2>&1 || { cat "$W/install.log"; fail "cmake --install"; }
[ -x "$P/bin/aimsweep" ] || fail "no bin/aimsweep in the prefix"
[ -f "$P/share/aimsweep/jobs/sweep.sbatch" ] && [ -f "$P/share/aimsweep/sweeps/quick.yaml" ] ||
    fail "jobs and sweeps not installed"
"$P/bin/aimsweep" single --help >/dev/null 2>&1 || fail "the installed binary does not run"

# stand-ins: log the binary, drop the launcher's own options (-n N, --mca KEY VALUE), run the rest
for l in mpirun srun; do
    cat >"$W/fake/$l" <<EOS
#!/bin/sh
while [ \$# -gt 0 ] && case \$1 in -n) shift 2 ;; --mca) shift 3 ;; -*) shift ;; *) false ;; esac; do :; done
echo "\$1" >>"$W/launched"
exec "\$@"
EOS
    chmod +x "$W/fake/$l"
done
ln -s "$AIMSWEEP" "$W/submit/build/aimsweep"
base=$W/fake:/usr/bin:/bin
job() { # job NAME SCRIPT [VAR=VALUE...] [-- RUN OPTIONS]: runs the job script (under jobs/, or a
    # path) from the submit directory
    name=$1 script=$2
    shift 2
    case $script in /*) ;; *) script=$SRCDIR/jobs/$script ;; esac
    vars=
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        vars="$vars $1"
        shift
    done
    [ $# -gt 0 ] && shift
    rm -f "$W/launched"
    # shellcheck disable=SC2086 # vars holds VAR=VALUE words without spaces
    (cd "$W/submit" && env -u AIMSWEEP SLURM_NTASKS=1 SLURM_JOB_ID=0 SLURM_SUBMIT_DIR="$W/submit" $vars \
        bash "$script" "$SRCDIR/tests/tiny.yaml" "$W/$name.db" "$@") >"$W/$name.log" 2>&1
}
for script in sweep.sbatch sweep-srun.sbatch; do
    job path "$script" PATH="$P/bin:$base" || fail "$script from PATH: exit $? ($(tail -1 "$W/path.log"))"
    [ "$(cat "$W/launched" 2>/dev/null)" = "$P/bin/aimsweep" ] || fail "$script did not run the installed binary"
    job var "$script" PATH="$base" AIMSWEEP="$P/bin/aimsweep" || fail "$script with AIMSWEEP: exit $?"
    [ "$(cat "$W/launched" 2>/dev/null)" = "$P/bin/aimsweep" ] || fail "$script ignored AIMSWEEP"
    job tree "$script" PATH="$base" || fail "$script from the submit tree: exit $?"
    [ "$(cat "$W/launched" 2>/dev/null)" = "$W/submit/build/aimsweep" ] || fail "$script did not use build/aimsweep"
    for name in path var tree; do
        [ "$(q "$W/$name.db" "SELECT count(*) FROM tasks WHERE status = 'done'")" = 12 ] ||
            fail "$script ($name): not 12 done tasks"
        rm -f "$W/$name.db"*
    done
    rm "$W/submit/build/aimsweep"
    job none "$script" PATH="$base"
    rc=$?
    [ "$rc" -eq 2 ] && grep -q "aimsweep not found" "$W/none.log" || fail "$script without a binary: exit $rc"
    ln -s "$AIMSWEEP" "$W/submit/build/aimsweep"
done

# options the scripts would also pass: the user's replace theirs (aimsweep run refuses a flag
# given twice), and sweep.sbatch's plan sees the --set overrides
job opts sweep.sbatch PATH="$P/bin:$base" -- --term-grace 5 --end-time $(($(date +%s) + 3600)) --set tau_end=0.02 ||
    fail "sweep.sbatch with --term-grace, --end-time, --set: exit $? ($(tail -1 "$W/opts.log"))"
grep -q "term-grace as given" "$W/opts.log" && grep -q "end-time as given" "$W/opts.log" &&
    grep -q "tau_end = 0.02 (--set)" "$W/opts.log" || fail "sweep.sbatch: the user's options not taken as given"
[ "$(q "$W/opts.db" "SELECT count(*) FROM tasks WHERE status = 'done' AND tau_end = 0.02")" = 12 ] ||
    fail "sweep.sbatch with options: not 12 done tasks at tau_end 0.02"
job grace sweep-srun.sbatch PATH="$P/bin:$base" -- --grace 10 ||
    fail "sweep-srun.sbatch --grace 10: exit $? ($(tail -1 "$W/grace.log"))"

# an array element run from Slurm's copy of the script (not under jobs/), submitted from a
# directory without jobs/: it finds sweep.sbatch beside the installed aimsweep, runs its part
# and merges it into the study; --part among the options is refused
mkdir -p "$W/spool" && cp "$P/share/aimsweep/jobs/sweep-array.sbatch" "$W/spool/" && rm -rf "$W/submit/jobs"
array() { # array NAME [RUN OPTIONS]: element 1 of 1
    name=$1
    shift
    job "$name" "$W/spool/sweep-array.sbatch" PATH="$P/bin:$base" SLURM_ARRAY_JOB_ID=0 SLURM_ARRAY_TASK_ID=1 \
        SLURM_ARRAY_TASK_COUNT=1 SLURM_ARRAY_TASK_MIN=1 -- "$@"
}
array study || fail "installed array element: exit $? ($(tail -1 "$W/study.log"))"
grep -q "merged into $W/study.db" "$W/study.log" || fail "installed array element: no merge"
[ "$(q "$W/study.db" "SELECT count(*) FROM tasks WHERE status = 'done'")" = 12 ] ||
    fail "installed array element: not 12 done tasks in the study"
array parted --part 1/2
rc=$?
[ "$rc" -eq 2 ] && grep -q "leave --part out" "$W/parted.log" || fail "array element with --part: exit $rc"
env -u AIMSWEEP PATH="$base" SLURM_SUBMIT_DIR="$W/submit" bash "$W/spool/sweep-array.sbatch" x.yaml x.db >"$W/nojobs.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "sweep.sbatch not found" "$W/nojobs.log" || fail "array without sweep.sbatch: exit $rc"

[ "$fails" -eq 0 ] && echo "install_jobs: all checks passed"
[ "$fails" -eq 0 ]
