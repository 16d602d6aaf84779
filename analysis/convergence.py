#!/usr/bin/python3
"""Convergence of the order-M moment ODE: regenerates analysis/convergence.md.

For every decomposition x activation it runs `aimsweep single --solvers sgd,flow` once at
d = 400 (the expensive part, cached as CSV under analysis/data/convergence/), then the `ode`
solver for every closure x M (cheap), and tabulates the max error on omega12 and on the
centred overlap m against flow and against SGD, with each solver's wall time.

  /usr/bin/python3 analysis/convergence.py            # run what is missing, write the report
  /usr/bin/python3 analysis/convergence.py --report   # report from the cache only
  options: --bin build/aimsweep --d 400 --tau-end 0.3 --records 15 --redo-ode --redo-errors

One aimsweep process at a time (the machine is shared).
"""
import argparse
import csv
import io
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(HERE, "data", "convergence")

LR = 0.05  # the default learning rate, passed explicitly
DECOMPS = ["direct", "tied", "untied"]
ACTS = ["h1", "h2", "h3", "softmax(1)"]
# closures and orders per decomposition ("-" = M plays no role)
CLOSURES = {
    "direct": [("auto", [4])],
    "tied": [("spectral", [1, 2, 3, 4, 6, 8]), ("spectral_mp", [2, 4, 6]),
             ("free_cumulant", [2, 3, 4, 5, 6]), ("free_residual", [2, 3, 4, 5, 6]),
             ("flat", [3, 5]), ("freeze", [2, 3, 4, 6]), ("zero", [2, 3, 4, 6])],
    "untied": [("free_cumulant", [2, 3, 4]), ("free_residual", [2, 3, 4]), ("flat", [3]),
               ("freeze", [2, 3, 4]), ("zero", [2, 3, 4])],
}


def key(*parts):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", "_".join(str(p) for p in parts))


def run(args, solvers, decomp, act, extra):
    cmd = [args.bin, "single", "--format", "csv", "--solvers", solvers,
           "--decomposition", decomp, "--activation", act, "--d", str(args.d),
           "--tau-end", str(args.tau_end), "--records", str(args.records),
           "--seed", str(args.seed), "--lr", str(LR)] + extra
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    rows, summ = [], {}
    for line in (p.stdout + "\n" + p.stderr).splitlines():
        if line.startswith("#"):
            m = re.match(r"#\s*solver=(\w+)\s+(.*)", line)
            if m:
                kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', m.group(2)))
                summ[m.group(1)] = {k: v.strip('"') for k, v in kv.items()}
            continue
        if line.startswith("solver,") or not line.strip():
            continue
        rows.append(line)
    data = {}
    for r in csv.reader(io.StringIO("\n".join(rows))):
        if len(r) < 9:
            continue
        data.setdefault(r[0], []).append([float(x) for x in r[1:9]])
    return {"cmd": " ".join(cmd), "rows": data, "summary": summ, "wall": time.time() - t0}


COLS = ["tau", "samples", "omega11", "psi11", "omega12", "trace", "overlap", "loss"]


def save(path, res):
    with open(path, "w") as f:
        f.write("# " + res["cmd"] + "\n")
        for s, kv in res["summary"].items():
            f.write("# solver=%s %s\n" % (s, " ".join("%s=%s" % (k, v) for k, v in kv.items())))
        f.write("solver," + ",".join(COLS) + "\n")
        for s, rr in res["rows"].items():
            for r in rr:
                f.write(s + "," + ",".join("%.10g" % x for x in r) + "\n")


def load(path):
    data, summ = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("# solver="):
                m = re.match(r"#\s*solver=(\w+)\s+(.*)", line.strip())
                summ[m.group(1)] = dict(re.findall(r'(\w+)=(\S+)', m.group(2)))
            elif line.startswith("#") or line.startswith("solver,"):
                continue
            else:
                r = line.strip().split(",")
                data.setdefault(r[0], []).append([float(x) for x in r[1:]])
    return {"rows": data, "summary": summ}


def max_err(a, b, col):
    i = COLS.index(col)
    n = min(len(a), len(b))
    if n == 0:
        return None
    e = max(abs(a[k][i] - b[k][i]) for k in range(n))
    if len(a) != len(b):
        return None if n < 2 else e
    return e


def fmt(x):
    if x is None:
        return "–"
    return "%.2e" % x if x < 0.01 else "%.3f" % x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "aimsweep"))
    ap.add_argument("--d", type=int, default=400)
    ap.add_argument("--tau-end", type=float, default=0.3)
    ap.add_argument("--records", type=int, default=15)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--redo-ode", action="store_true")
    ap.add_argument("--redo-errors", action="store_true",
                    help="rerun cached ode runs whose status is error (e.g. built without words)")
    ap.add_argument("--only", default="", help="comma list of decompositions")
    args = ap.parse_args()
    os.makedirs(CACHE, exist_ok=True)
    decomps = args.only.split(",") if args.only else DECOMPS
    tag = "d%d_t%g_r%d_s%d" % (args.d, args.tau_end, args.records, args.seed)

    lines = []
    for dec in decomps:
        for act in ACTS:
            ref_path = os.path.join(CACHE, key("ref", dec, act, tag) + ".csv")
            if not os.path.exists(ref_path) and not args.report:
                print("running sgd,flow", dec, act, file=sys.stderr, flush=True)
                save(ref_path, run(args, "sgd,flow", dec, act, []))
            if not os.path.exists(ref_path):
                continue
            ref = load(ref_path)
            sgd, flow = ref["rows"].get("sgd", []), ref["rows"].get("flow", [])
            ws = ref["summary"].get("sgd", {}).get("wall_s", "?")
            wf = ref["summary"].get("flow", {}).get("wall_s", "?")
            sst = ref["summary"].get("sgd", {}).get("status", "?")
            fst = ref["summary"].get("flow", {}).get("status", "?")
            for cl, Ms in CLOSURES[dec]:
                for M in Ms:
                    p = os.path.join(CACHE, key("ode", dec, act, cl, M, tag) + ".csv")
                    redo = args.redo_ode or not os.path.exists(p)
                    if not redo and args.redo_errors:
                        redo = load(p)["summary"].get("ode", {}).get("status", "error") == "error"
                    if redo and not args.report:
                        save(p, run(args, "ode", dec, act, ["--closure", cl, "--order-m", str(M)]))
                    if not os.path.exists(p):
                        continue
                    o = load(p)
                    ode = o["rows"].get("ode", [])
                    osum = o["summary"].get("ode", {})
                    st = osum.get("status", "?")
                    if st == "ode_diverged" and "stopped_at_samples" in osum:
                        tau = float(osum["stopped_at_samples"]) * LR / args.d ** 2
                        st = "diverged τ=%.2f" % tau
                    lines.append(dict(
                        dec=dec, act=act, cl=cl, M="–" if dec == "direct" else M, st=st,
                        e12f=max_err(ode, flow, "omega12"), emf=max_err(ode, flow, "overlap"),
                        e12s=max_err(ode, sgd, "omega12"), ems=max_err(ode, sgd, "overlap"),
                        fs=max_err(flow, sgd, "omega12"), fms=max_err(flow, sgd, "overlap"),
                        wo=osum.get("wall_s", "?"), ws=ws, wf=wf, sst=sst, fst=fst,
                        err=osum.get("error", "")))
    write_report(args, lines)


def write_report(args, lines):
    out = []
    out.append("| decomposition | activation | closure | M | ode status | max dΩ12 vs flow | "
               "max dm vs flow | max dΩ12 vs SGD | max dm vs SGD | ode s | flow s | SGD s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for L in lines:
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            L["dec"], L["act"], L["cl"], L["M"], L["st"], fmt(L["e12f"]), fmt(L["emf"]),
            fmt(L["e12s"]), fmt(L["ems"]), L["wo"], L["wf"], L["ws"]))
    ref = {}
    for L in lines:
        ref[(L["dec"], L["act"])] = L
    out2 = ["| decomposition | activation | flow vs SGD max dΩ12 | flow vs SGD max dm | "
            "SGD status | flow status | SGD s | flow s |", "|---|---|---|---|---|---|---|---|"]
    for (dec, act), L in ref.items():
        out2.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            dec, act, fmt(L["fs"]), fmt(L["fms"]), L["sst"], L["fst"], L["ws"], L["wf"]))
    # pivot: max dOmega12 vs flow by M (a * marks a run that diverged before tau_end: its error
    # is over the rows before the divergence)
    allM = sorted({L["M"] for L in lines if L["M"] != "–"})
    piv = ["| decomposition | activation | closure | " + " | ".join("M=%d" % m for m in allM) + " |",
           "|---|---|---|" + "---|" * len(allM)]
    seen = []
    for L in lines:
        k = (L["dec"], L["act"], L["cl"])
        if k not in seen:
            seen.append(k)
    for k in seen:
        cells = []
        for m in allM:
            c = [L for L in lines if (L["dec"], L["act"], L["cl"]) == k and L["M"] == m]
            if not c:
                cells.append("")
            else:
                L = c[0]
                cells.append(fmt(L["e12f"]) + ("*" if L["st"].startswith("div") else ""))
        if k[0] == "direct":
            c = [L for L in lines if (L["dec"], L["act"], L["cl"]) == k][0]
            cells = [fmt(c["e12f"]) + " (any M)"] + [""] * (len(allM) - 1)
        piv.append("| %s | %s | %s | %s |" % (k[0], k[1], k[2], " | ".join(cells)))
    tables = os.path.join(HERE, "data", "convergence", "tables_%d.md" % args.d)
    with open(tables, "w") as f:
        f.write("\n".join(out2) + "\n\n" + "\n".join(piv) + "\n\n" + "\n".join(out) + "\n")
    md = os.path.join(HERE, "convergence.md")
    if args.d == 400 and os.path.exists(md):  # the report's tables follow its marker line
        text = open(md).read()
        mark = "<!-- tables: written by analysis/convergence.py -->"
        if mark in text:
            head = text[:text.index(mark) + len(mark)]
            with open(md, "w") as f:
                f.write(head + "\n\n## Flow and SGD (reference runs)\n\n" + "\n".join(out2) +
                        "\n\n## max |dOmega12| against the flow, by closure and M\n\n" +
                        "\n".join(piv) + "\n\n## Full table\n\n" + "\n".join(out) + "\n")
    print("\n".join(piv))
    print()
    print("\n".join(out2))
    print()
    print("\n".join(out))


if __name__ == "__main__":
    main()
