#!/usr/bin/python3
"""The views recovery and curves (src/harness/store.c) against a direct computation in Python.

  views.py DB AIMSWEEP SWEEP WORKDIR

1. On DB (made by the analysis test fixture): every row of both views equals analysis/aimdb.py's
   computation from the tables (seeds, recovered, quartiles of n_wr and tau_wr, n_wr/(d² ln d),
   fraction diverged; per record the mean, sample sd, min and max of |m|, and Omega12, loss).
2. On a copy with extra seeds planted (random n_wr, some never recovered, one diverged), the
   quartiles equal numpy.percentile of the planted values: a wrong interpolation weight, a
   group that still contains the seed, or recovered counted over all seeds fails here.
3. On a copy turned back into a version-3 database (views dropped, user_version 3), `aimsweep
   run` migrates it: version 5, and the views give the same rows as on DB.
Prints "N passed, M failed"; exit 1 on any failure.
"""
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "analysis"))
import aimdb  # noqa: E402
import numpy as np  # noqa: E402

from checks import check, done  # noqa: E402


def close(a, b, tol=1e-9):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def view_rows(path, view):
    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute(f"SELECT * FROM {view}")]
    con.close()
    return rows


REC_FIELDS = ("seeds", "recovered", "n_wr_q1", "n_wr_median", "n_wr_q3", "tau_wr_q1", "tau_wr_median",
              "tau_wr_q3", "n_wr_per_d2lnd", "frac_diverged")
CURVE_FIELDS = ("tau", "samples", "seeds", "abs_m_mean", "abs_m_sd", "abs_m_min", "abs_m_max",
                "m_mean", "m_sd", "m_min", "m_max", "omega12_mean", "omega12_sd", "loss_mean", "loss_sd")


def compare(path, label):
    con = aimdb.open_db(path)
    mine = {(r["point"], r["solver"]): r for r in aimdb.recovery(con)}
    view = {(r["point"], r["solver"]): r for r in view_rows(path, "recovery")}
    check(len(view) > 0, f"{label}: recovery view is empty")
    check(set(mine) == set(view), f"{label}: recovery points differ ({len(mine)} vs {len(view)})")
    bad = 0
    for k in set(mine) & set(view):
        for f in REC_FIELDS:
            if not close(mine[k][f], view[k][f]):
                bad += 1
                if bad < 5:
                    print(f"  {label}: recovery {k[1]} {f}: view {view[k][f]} python {mine[k][f]}")
    check(bad == 0, f"{label}: {bad} recovery values differ")
    mc = aimdb.curves(con)
    vc = {}
    for r in view_rows(path, "curves"):
        vc.setdefault((r["point"], r["solver"]), {})[r["k"]] = r
    check(set(mc) == set(vc), f"{label}: curves points differ ({len(mc)} vs {len(vc)})")
    bad = n = 0
    for key in set(mc) & set(vc):
        for row in mc[key]:
            v = vc[key].get(row["k"])
            n += 1
            for f in CURVE_FIELDS:
                if v is None or not close(row[f], v[f], 1e-7):
                    bad += 1
                    if bad < 5:
                        print(f"  {label}: curves {key[1]} k={row['k']} {f}: view {v and v[f]} python {row[f]}")
    check(n > 0 and bad == 0, f"{label}: {bad} curves values differ over {n} records")
    return view


def plant(path):
    """Adds seeds 101.. to one SGD point with known n_wr; returns (point, planted n, planted tau).
    The point is an h2 one: its planted runs have no trajectory, and the migration to version 6
    recomputes weak recovery from the trajectory for activations whose sign counts (h1, h3)."""
    con = sqlite3.connect(path)
    tid, params, d, lr = con.execute(
        "SELECT t.task_id, t.params, t.d, t.lr FROM tasks t JOIN summary s USING (task_id)"
        " WHERE s.solver = 'sgd' AND s.status = 'done' AND t.seed = 1 AND t.activation = 'h2'"
        " ORDER BY t.task_id LIMIT 1").fetchone()
    rng = random.Random(7)
    ns, taus = [], []
    key = aimdb.point_key(params)
    existing = [(n, t) for prm, n, t in con.execute(
        "SELECT t.params, s.samples_wr, s.tau_wr FROM tasks t JOIN summary s USING (task_id)"
        " WHERE s.solver = 'sgd' AND s.status IN ('done', 'diverged', 'ode_diverged')")
        if aimdb.point_key(prm) == key]
    for n, t in existing:
        if n is not None:
            ns.append(n)
            taus.append(t)
    for i in range(7):
        seed = 101 + i
        new_id = f"{seed:016x}"
        p = params.replace(";seed=1;", f";seed={seed};")
        con.execute("INSERT INTO tasks(task_id, sweep_id, decomposition, activation, d, lr, init_scale, tokens,"
                    " teacher, width, weight_decay, order_m, closure, tau_end, seed, status, info_exponent,"
                    " records, log_grid, recovery_threshold, ode_noise, solvers, params)"
                    " SELECT ?, sweep_id, decomposition, activation, d, lr, init_scale, tokens, teacher, width,"
                    " weight_decay, order_m, closure, tau_end, ?, 'done', info_exponent, records, log_grid,"
                    " recovery_threshold, ode_noise, solvers, ? FROM tasks WHERE task_id = ?",
                    (new_id, seed, p, tid))
        if i == 5:  # never recovered
            n = t = None
            status = "done"
        elif i == 6:  # diverged after recovering
            t = 0.01 * rng.randint(1, 30)
            n = t * d * d / lr
            status = "diverged"
        else:
            t = 0.01 * rng.randint(1, 30)
            n = t * d * d / lr
            status = "done"
        con.execute("INSERT INTO summary(task_id, solver, tau_wr, samples_wr, status) VALUES (?, 'sgd', ?, ?, ?)",
                    (new_id, t, n, status))
        if n is not None:
            ns.append(n)
            taus.append(t)
    con.commit()
    con.close()
    return aimdb.point_key(params), ns, taus, 7 + len(existing)


def main():
    db, exe, sweep, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    base = compare(db, "fixture")

    planted = os.path.join(work, "planted.db")
    shutil.copy(db, planted)
    point, ns, taus, nseeds = plant(planted)
    compare(planted, "planted")
    row = {(r["point"], r["solver"]): r for r in view_rows(planted, "recovery")}.get((point, "sgd"))
    check(row is not None, "planted point missing from the view")
    if row:
        check(row["seeds"] == nseeds, f"planted seeds {row['seeds']} != {nseeds}")
        check(row["recovered"] == len(ns), f"planted recovered {row['recovered']} != {len(ns)}")
        for q, name in ((25, "q1"), (50, "median"), (75, "q3")):
            check(close(row["n_wr_" + name], float(np.percentile(ns, q))),
                  f"n_wr_{name}: view {row['n_wr_' + name]} numpy {np.percentile(ns, q)}")
            check(close(row["tau_wr_" + name], float(np.percentile(taus, q))),
                  f"tau_wr_{name}: view {row['tau_wr_' + name]} numpy {np.percentile(taus, q)}")
        d = int(aimdb.params_dict(point)["d"])
        check(close(row["n_wr_per_d2lnd"], float(np.median(ns)) / (d * d * math.log(d))), "n_wr_per_d2lnd")
        check(row["frac_diverged"] > 0, "planted diverged seed not counted")

    old = os.path.join(work, "v1.db")
    shutil.copy(db, old)
    con = sqlite3.connect(old)
    # version 3 had neither the two views nor tasks.precision (both came with version 4), nor
    # the sweeps' operations columns (version 5), nor tasks.sign_symmetric (version 6), nor
    # tasks.kernels, sweeps.kernels (version 7), nor tasks.ode_init (version 8)
    con.executescript("DROP VIEW recovery; DROP VIEW curves; ALTER TABLE tasks DROP COLUMN precision;"
                      " ALTER TABLE tasks DROP COLUMN ode_init; ALTER TABLE tasks DROP COLUMN kernels;"
                      " ALTER TABLE sweeps DROP COLUMN kernels;"
                      " DROP VIEW recovery_segments; ALTER TABLE tasks DROP COLUMN sign_symmetric;"
                      " CREATE VIEW recovery_segments AS SELECT task_id, solver, k, lag(tau) OVER w AS"
                      " tau_prev, tau, lag(abs(overlap)) OVER w AS m_prev, abs(overlap) AS m,"
                      " lag(samples) OVER w AS samples_prev, samples, coalesce(max(abs(overlap)) OVER"
                      " (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), -1) AS m_max_before"
                      " FROM trajectory WINDOW w AS (PARTITION BY task_id, solver ORDER BY k);"
                      + "".join(f" ALTER TABLE sweeps DROP COLUMN {c};"
                                for c in ("command", "part", "stop_signal", "stop_sender", "stopped_at"))
                      + " PRAGMA user_version = 3;")
    con.close()
    r = subprocess.run([exe, "run", sweep, "--db", old], capture_output=True, text=True)
    check(r.returncode == 0, f"aimsweep run on a version-3 database: {r.stderr.strip()}")
    con = sqlite3.connect(old)
    check(con.execute("PRAGMA user_version").fetchone()[0] == 8, "version-3 database not migrated to 8")
    con.close()
    mig = {(r["point"], r["solver"]): r for r in view_rows(old, "recovery")}
    check(set(mig) == set(base), "migrated recovery view differs from the fixture's")
    check(all(close(mig[k][f], base[k][f]) for k in set(mig) & set(base) for f in REC_FIELDS),
          "migrated recovery values differ")
    return done()


if __name__ == "__main__":
    sys.exit(main())
