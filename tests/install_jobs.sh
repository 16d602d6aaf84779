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

# stand-ins: log the binary, drop the launcher's own options, run the rest
for l in mpirun srun; do
    cat >"$W/fake/$l" <<EOS
#!/bin/sh
while [ \$# -gt 0 ] && case \$1 in -n) shift 2 ;; -*) shift ;; *) false ;; esac; do :; done
echo "\$1" >>"$W/launched"
exec "\$@"
EOS
    chmod +x "$W/fake/$l"
done
ln -s "$AIMSWEEP" "$W/submit/build/aimsweep"
base=$W/fake:/usr/bin:/bin
job() { # job NAME SCRIPT [VAR=VALUE...]: runs the job script from the submit directory
    name=$1 script=$2
    shift 2
    rm -f "$W/launched"
    (cd "$W/submit" && env -u AIMSWEEP SLURM_NTASKS=1 SLURM_JOB_ID=0 SLURM_SUBMIT_DIR="$W/submit" "$@" \
        bash "$SRCDIR/jobs/$script" "$SRCDIR/tests/tiny.yaml" "$W/$name.db") >"$W/$name.log" 2>&1
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
[ "$fails" -eq 0 ] && echo "install_jobs: all checks passed"
[ "$fails" -eq 0 ]
