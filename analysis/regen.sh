#!/usr/bin/env bash
# Regenerates the measurements of analysis/README.md: runs the small sweeps (those sized for a
# 2-core machine; about 1.5 hours on two shared cores) into databases under DIR, draws the
# figures into analysis/figs/ and exports the numbers to analysis/data/results/.
# usage: analysis/regen.sh [DIR]     (default runs/; rerunning resumes, only what is missing runs)
#        analysis/regen.sh DIR --figures-only
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-runs}
mkdir -p "$dir" analysis/figs analysis/data/results
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { # SWEEP DB
    nice mpirun -n 3 --oversubscribe build/aimsweep run "sweeps/$1.yaml" --db "$dir/$2.db"
}
if [ "${2:-}" != "--figures-only" ]; then
    run phase phase
    run phase-sgd phase
    for s in scaling-small scaling-small-d240 scaling-small-d320 scaling-lnd-d120 scaling-lnd-d80 \
             scaling-lnd-d60 scaling-lnd-d40 scaling-h1-small scaling-du-small scaling-h3-small; do
        run "$s" scaling
    done
    run fig1-small fig1
    run fig1-ode-small fig1
    run fig2-small fig2
    run fig2-small-untied fig2
    run fig3-small fig3
    run quick quick
fi
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for db in fig1 fig2 fig3; do
    $py analysis/figures.py "$dir/$db.db" --out "$tmp/$db" --no-pdf
done
cp "$tmp/fig1/orders-01-"*.png analysis/figs/fig1-orders.png
cp "$tmp/fig2/curves-01-"*.png analysis/figs/fig2-curves.png
cp "$tmp/fig3/nwr-01-"*.png analysis/figs/fig3-nwr.png
$py analysis/figures.py "$dir/quick.db" --out "$tmp/quick" --no-pdf
cp "$tmp/quick/curves-04-"*.png analysis/figs/fig2-wishart.png
$py analysis/scaling.py "$dir/scaling.db" --out "$tmp/scaling" --csv analysis/data/results/scaling-per-d.csv \
    > analysis/data/results/scaling-fits.txt
cp "$tmp/scaling/scaling-nwr.png" analysis/figs/scaling-nwr.png
$py analysis/phase.py "$dir/phase.db" --x init_scale --y lr --out "$tmp/phase" > analysis/data/results/phase.txt
for f in fraction diverged tauwr; do cp "$tmp/phase/phase-$f.png" "analysis/figs/phase-$f.png"; done
for db in fig1 fig2 fig3 scaling phase; do
    build/aimsweep query "$dir/$db.db" --csv "SELECT * FROM recovery" > "analysis/data/results/$db-recovery.csv"
done
for db in fig1 fig2 fig3 scaling; do
    build/aimsweep query "$dir/$db.db" --csv "SELECT task_id, decomposition, activation, info_exponent, d, lr,
        init_scale, width, teacher, order_m, closure, tau_end, seed, solver, status, tau_wr, samples_wr,
        final_overlap, final_loss, max_gap_to_sgd, diverged_at_samples, wall_s FROM results" \
        > "analysis/data/results/$db-results.csv"
done
for db in fig1 fig2; do
    build/aimsweep query "$dir/$db.db" --csv "SELECT decomposition, activation, d, lr, order_m, closure, solver, k,
        tau, seeds, abs_m_mean, abs_m_sd, abs_m_min, abs_m_max, omega12_mean, omega12_sd, loss_mean, loss_sd
        FROM curves" > "analysis/data/results/$db-curves.csv"
done
echo "figures in analysis/figs, numbers in analysis/data/results"
