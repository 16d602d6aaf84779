#!/usr/bin/env bash
# Regenerates the measurements of analysis/README.md: runs the small sweeps (those sized for a
# 2-core machine; about 4 hours on two shared cores, most of it scaling-small-d240/-d320/-d480,
# and the claims' sweeps cor3-*, cor4-*, fig2-contrast*: about 1.5 hours more)
# into databases under DIR, draws the figures into analysis/figs/ and exports the numbers to
# analysis/data/results/.
# usage: analysis/regen.sh [DIR]     (default runs/; rerunning resumes, only what is missing runs)
#        analysis/regen.sh DIR --figures-only
#        analysis/regen.sh DIR --claims-only   (only the claims' figures and numbers: cor3, cor4, fig2c, cor2)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-runs}
mkdir -p "$dir" analysis/figs analysis/data/results
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { # SWEEP DB
    nice mpirun -n 3 --oversubscribe build/aimsweep run "sweeps/$1.yaml" --db "$dir/$2.db"
}
run2() { # SWEEP DB, one worker
    nice -n 10 mpirun -n 2 --oversubscribe build/aimsweep run "sweeps/$1.yaml" --db "$dir/$2.db"
}
if [ -z "${2:-}" ]; then
    run phase phase
    run phase-sgd phase
    for s in scaling-small scaling-small-d240 scaling-small-d320 scaling-lnd-d120 \
             scaling-lnd-d80 scaling-lnd-d60 scaling-lnd-d40 scaling-h1-small scaling-du-small \
             scaling-h3-small; do
        run "$s" scaling
    done
    run scaling-small-d480 scaling-d480 # single precision: kept apart (scaling-d480-*.csv)
    run lnd-probe-d40 lnd-probe-d40
    run scaling-lnd lnd
    run scaling-lnd-d240 lnd
    run scaling-ode ode
    run scaling-ode-d1280 ode
    run fig1-d400 fig1
    run fig1-ode-d400 fig1
    run fig1-ode-d400-m1 fig1
    run fig1-small fig1-200
    run fig1-ode-small fig1-200
    run fig2-small fig2
    run fig2-small-untied fig2
    run fig3-small fig3
    run fig3-d80 fig3
    run fig3-d120 fig3
    run k3-collapse k3
    run k3-collapse-d160 k3
    run k3-h34-probe k3-h34-probe
    run quick quick
    # the claims in their own settings (schema 8): one worker each, as measured
    for s in cor3-flow cor3-lnd cor3-fixed cor3-ode cor3-lnd-d640 cor3-fixed-d640; do run2 "$s" cor3; done
    for s in cor4-mu1 cor4-mu0 cor4-mu0-d400; do run2 "$s" cor4; done
    for s in fig2-contrast fig2-contrast-d400; do run2 "$s" fig2c; done
    /usr/bin/python3 analysis/cor2.py --bin build/aimsweep
fi
py=/usr/bin/python3
# Corollary 3 (cor3), Corollary 4 (cor4), Figure 2's contrast (fig2c), Corollary 2 (cor2.py):
# fits, figures and per-seed numbers; the signed curves (schema 8) beside |m|.
claims() { # DIR TMP
    local dir=$1 tmp=$2 db
    for db in cor3 cor4 fig2c; do
        [ -f "$dir/$db.db" ] || { echo "regen: $dir/$db.db missing: its claim is not redrawn"; continue; }
        $py analysis/figures.py "$dir/$db.db" --out "$tmp/$db" --no-pdf > /dev/null
        build/aimsweep query "$dir/$db.db" --csv "SELECT * FROM recovery" > "analysis/data/results/$db-recovery.csv"
        build/aimsweep query "$dir/$db.db" --csv "SELECT task_id, decomposition, activation, d, lr, init_scale,
            teacher, tau_end, seed, solver, status, tau_wr, samples_wr, final_overlap, final_loss, mu_star,
            diverged_at_samples, wall_s FROM results" > "analysis/data/results/$db-results.csv"
        build/aimsweep query "$dir/$db.db" --csv "SELECT decomposition, activation, teacher, d, lr, solver, k, tau,
            seeds, m_mean, m_sd, m_min, m_max, abs_m_mean, abs_m_min, abs_m_max, loss_mean FROM curves" \
            > "analysis/data/results/$db-curves.csv"
    done
    if [ -f "$dir/cor3.db" ]; then
        $py analysis/scaling.py "$dir/cor3.db" --out "$tmp/cor3s" --csv analysis/data/results/cor3-per-d.csv \
            > analysis/data/results/cor3-fits.txt
        cp "$tmp/cor3s/scaling-nwr.png" analysis/figs/cor3-nwr.png
        cp "$tmp/cor3/"curves-*0.04_ln_d*.png analysis/figs/cor3-curves.png
    fi
    if [ -f "$dir/cor4.db" ]; then
        $py analysis/scaling.py "$dir/cor4.db" --out "$tmp/cor4s" --csv analysis/data/results/cor4-per-d.csv \
            > analysis/data/results/cor4-fits.txt
        cp "$tmp/cor4s/scaling-nwr.png" analysis/figs/cor4-nwr.png
        cp "$tmp/cor4/"curves-*goe_mean_0*.png analysis/figs/cor4-curves-mu0.png
        cp "$tmp/cor4/"curves-*goe_mean_1*.png analysis/figs/cor4-curves-mu1.png
    fi
    if [ -f "$dir/fig2c.db" ]; then
        cp "$tmp/fig2c/"curves-01-*.png analysis/figs/fig2-contrast.png
    fi
    $py analysis/cor2.py --report > analysis/data/results/cor2-rates.txt
}
# k = 3's collapse (README, "The drift law, k = 3"): per run, the student's variance Omega11, |m|
# and the loss at the first record and at the last
K3_FINAL="SELECT t.d, t.seed, s.solver, s.status, a.omega11 AS omega11_0, b.omega11 AS omega11_end,
    abs(b.overlap) AS abs_m_end, b.omega12 AS omega12_end, a.loss AS loss_0, b.loss AS loss_end, b.tau AS tau_end
    FROM tasks t JOIN summary s USING (task_id)
    JOIN trajectory a ON a.task_id = t.task_id AND a.solver = s.solver AND a.k = 0
    JOIN trajectory b ON b.task_id = t.task_id AND b.solver = s.solver
     AND b.k = (SELECT max(k) FROM trajectory c WHERE c.task_id = t.task_id AND c.solver = s.solver)
    ORDER BY t.d, s.solver, t.seed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${2:-}" = "--claims-only" ]; then
    claims "$dir" "$tmp"
    exit 0
fi
for db in fig1 fig2 fig3; do
    $py analysis/figures.py "$dir/$db.db" --out "$tmp/$db" --no-pdf
done
cp "$tmp/fig1/orders-01-"*.png analysis/figs/fig1-orders.png
cp "$tmp/fig2/curves-01-"*.png analysis/figs/fig2-curves.png
cp "$tmp/fig3/nwr-01-"*.png analysis/figs/fig3-nwr.png
$py analysis/figures.py "$dir/quick.db" --out "$tmp/quick" --no-pdf
cp "$tmp/quick/curves-04-"*.png analysis/figs/fig2-wishart.png
$py analysis/scaling.py "$dir/scaling.db" --out "$tmp/scaling-all" --csv analysis/data/results/scaling-per-d.csv \
    > analysis/data/results/scaling-fits.txt
$py analysis/scaling.py "$dir/scaling.db" "$dir/scaling-d480.db" --select decomposition=tied --select activation=h2 --select solver=sgd \
    --out "$tmp/scaling" --csv analysis/data/results/scaling-k2-per-d.csv > analysis/data/results/scaling-k2-fits.txt
cp "$tmp/scaling/scaling-nwr.png" analysis/figs/scaling-nwr.png
for db in lnd ode; do
    $py analysis/scaling.py "$dir/$db.db" --out "$tmp/$db" --csv "analysis/data/results/scaling-$db-per-d.csv" \
        > "analysis/data/results/scaling-$db-fits.txt"
    cp "$tmp/$db/scaling-nwr.png" "analysis/figs/scaling-$db-nwr.png"
done
$py analysis/fig1_gaps.py "$dir/fig1.db" > analysis/data/results/fig1-gaps.txt
build/aimsweep query "$dir/k3.db" --csv "$K3_FINAL" > analysis/data/results/k3-final.csv
$py analysis/phase.py "$dir/phase.db" --x init_scale --y lr --out "$tmp/phase" > analysis/data/results/phase.txt
for f in fraction diverged tauwr; do cp "$tmp/phase/phase-$f.png" "analysis/figs/phase-$f.png"; done
for db in fig1 fig1-200 fig2 fig3 scaling scaling-d480 phase lnd lnd-probe-d40 ode k3 k3-h34-probe; do
    build/aimsweep query "$dir/$db.db" --csv "SELECT * FROM recovery" > "analysis/data/results/$db-recovery.csv"
done
for db in fig1 fig1-200 fig2 fig3 scaling scaling-d480 lnd lnd-probe-d40 ode k3 k3-h34-probe; do
    build/aimsweep query "$dir/$db.db" --csv "SELECT task_id, decomposition, activation, info_exponent, d, lr,
        init_scale, width, teacher, order_m, closure, tau_end, seed, solver, status, tau_wr, samples_wr,
        final_overlap, final_loss, max_gap_to_sgd, diverged_at_samples, wall_s FROM results" \
        > "analysis/data/results/$db-results.csv"
done
for db in fig1 fig1-200 fig2; do
    build/aimsweep query "$dir/$db.db" --csv "SELECT decomposition, activation, d, lr, order_m, closure, solver, k,
        tau, seeds, abs_m_mean, abs_m_sd, abs_m_min, abs_m_max, omega12_mean, omega12_sd, loss_mean, loss_sd
        FROM curves" > "analysis/data/results/$db-curves.csv"
done
claims "$dir" "$tmp"
echo "figures in analysis/figs, numbers in analysis/data/results"
