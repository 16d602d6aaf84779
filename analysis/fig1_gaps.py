#!/usr/bin/python3
"""Figure 1's numbers: how far the order-M moment ODE and SGD are from the population flow.

  /usr/bin/python3 analysis/fig1_gaps.py DB

For every setting of the database whose moment ODE ran at two or more orders M next to a flow
run (sweeps/fig1-*.yaml), the largest gap over the common records of |m| and of the loss (each
the mean over seeds, as the `curves` view gives them) between each (closure, M) and the flow, and
the same for SGD, beside the largest seed-to-seed spread (sample sd) of SGD's |m|. A setting is a
task's canonical text without order_m, closure, solvers, records and precision (SGD's precision
does not change the ODE). Prints a markdown table per setting; exit 0 whenever the database
could be read (saying what it could not compare), 2 on bad input.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402

NOT_SETTING = ("order_m", "closure", "solvers", "records", "precision")


def gap(a, b, field):
    """Largest |a - b| of field over the records both have (matched by tau to 1e-9)."""
    bt = {round(r["tau"], 9): r[field + "_mean"] for r in b if r[field + "_mean"] is not None}
    g = [abs(r[field + "_mean"] - bt[round(r["tau"], 9)]) for r in a
         if r[field + "_mean"] is not None and round(r["tau"], 9) in bt]
    return max(g) if g else None


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        aimdb.usage_error("usage: fig1_gaps.py DB")
    con = aimdb.open_or_exit(sys.argv[1])
    recs = {(r["point"], r["solver"]): r for r in aimdb.recovery(con)}
    curves = aimdb.curves(con)
    fams = {}
    for (point, solver), r in recs.items():
        fams.setdefault(aimdb.without(r["params"], NOT_SETTING), []).append((point, solver, r))
    shown = 0
    for key, members in sorted(fams.items()):
        flow = [curves[(p, s)] for p, s, _ in members if s == "flow" and (p, s) in curves]
        odes = {(r["closure"], r["order_m"]): curves[(p, s)] for p, s, r in members
                if s == "ode" and (p, s) in curves}
        if not flow or len({m for _, m in odes}) < 2:
            continue
        flow = flow[0]
        shown += 1
        print(f"\n{key}\n")
        print(f"seeds: flow {max(r['seeds'] for r in flow)}; largest gap to the flow over the records")
        sgd = [curves[(p, s)] for p, s, _ in members if s == "sgd" and (p, s) in curves]
        if sgd:
            spread = max((r["abs_m_sd"] or 0) for r in sgd[0])
            print(f"SGD: |m| {gap(sgd[0], flow, 'abs_m'):.2g}, loss {gap(sgd[0], flow, 'loss'):.2g} "
                  f"(largest sd of |m| over seeds {spread:.2g})\n")
        ms = sorted({m for _, m in odes})
        print("| closure | field | " + " | ".join(f"M = {m}" for m in ms) + " |")
        print("|---|---|" + "---|" * len(ms))
        for cl in sorted({c for c, _ in odes}):
            for field, name in (("abs_m", "\\|m\\|"), ("loss", "loss")):
                cells = []
                for m in ms:
                    g = gap(odes[(cl, m)], flow, field) if (cl, m) in odes else None
                    cells.append("–" if g is None else f"{g:.2g}")
                print(f"| {cl} | {name} | " + " | ".join(cells) + " |")
    if not shown:
        print("no setting has the moment ODE at two or more orders next to a flow run: nothing compared")
    return 0


if __name__ == "__main__":
    sys.exit(main())
