#!/usr/bin/python3
"""Deterministic fuzz test of the inputs of aimsweep (issue 13).

Two kinds of cases, drawn from one seeded generator so that every run tries the same inputs:
  sweep files: the sweeps of sweeps/ and tests/ mutated (lines dropped, doubled, re-indented,
               values swapped for extremes or garbage, bytes that are not text, deep nesting,
               truncation), each read by `aimsweep plan`;
  flag sets:   `aimsweep single` with random flags, values drawn from valid small ones,
               boundary and out-of-range numbers, and garbage, with --cost-limit and --force.
Sweep files also get parameters written as long expressions (chains of up to 10^5 terms, deep
parentheses, runs of unary signs).
Every case must end within its time limit with exit 0 or 2, print no sanitizer report, and an
exit-2 message must name the place: FILE:LINE for a sweep file, a flag it was given (or the
parameter's name) for `single`. Valid flag sets are kept small (d <= 16, short tau) so that
the whole test stays under a minute under AddressSanitizer; large but valid values belong to
the refusal checks of robust_cli and sweep_errors, not here.

A planted crash, hang or an exit-2 message without its place fails this test with the case
printed (its flags or the mutated file kept in WORKDIR).

usage: fuzz.py WORKDIR [NCASES [SEED]]   (env AIMSWEEP, SRCDIR)
The default test suite runs 600 cases of seed 13 with the release build; the sanitizer build
(-DAIMSWEEP_SANITIZE=ON) is meant for more, e.g. fuzz.py W 1400 with other seeds.
"""
import concurrent.futures
import glob
import os
import random
import re
import subprocess
import sys
import time

AIMSWEEP = os.environ["AIMSWEEP"]
SRCDIR = os.environ["SRCDIR"]
W = sys.argv[1]
NCASES = int(sys.argv[2]) if len(sys.argv) > 2 else 600
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 13
TIME_LIMIT_S = 30  # per case; a release build needs well under a second for any of them

EXTREME = ["0", "-1", "1e308", "-1e308", "1e-308", "5e-324", "nan", "inf", "-inf", "1e999",
           "9007199254740993", "9223372036854775808", "18446744073709551616", "2147483648",
           "-2147483649", "0x10", "1e3", "1.0000001", "", " ", "abc", "1,2", "(", ")", "[1]",
           "{a: 1}", "'quoted'", "\"dq\"", "~", "null", "1e20", "-0", "12.5"]
GARBAGE_BYTES = [b"\xff", b"\x01", b"\x00", b"\xc3", b"\xe2\x82", b"\t", b"\r", b"\x7f"]

# valid values that keep a run small
SMALL = {
    "decomposition": ["direct", "tied", "untied"],
    "activation": ["h1", "h2", "h3", "relu", "tanh", "erf", "softmax(2)", "hermite(0,1,0.5)",
                   "hermite(0.1,0,1)"],
    "d": ["2", "3", "5", "8", "12", "16"],
    "lr": ["0.01", "0.05", "0.5", "2"],
    "init_scale": ["0", "0.1", "0.7", "3"],
    "tokens": ["2", "3"],
    "teacher": ["wishart(0.5)", "goe", "goe_shift(1)", "wishart(2)", "wishart(16)"],
    "width": ["0.5", "1", "2", "4"],
    "weight_decay": ["0", "0.5", "10"],
    "tau_end": ["0.001", "0.01", "0.05"],
    "records": ["1", "2", "5"],
    "log_grid": ["on", "off"],
    "seed": ["0", "1", "12345", "9007199254740993"],
    "solvers": ["sgd", "flow", "ode", "sgd,flow", "sgd,flow,ode"],
    "recovery_threshold": ["0.5", "1", "0.01"],
    "order_m": ["1", "2", "3", "4"],
    "closure": ["auto", "free_cumulant", "freeze", "zero", "spectral", "spectral_mp",
                "free_residual", "flat"],
    "ode_noise": ["on", "off"],
}
OUT_OF_RANGE = {
    "d": ["1", "100001", "1e9", "60000"], "lr": ["1e-30", "1001"], "init_scale": ["101", "1e300"],
    "tokens": ["1", "17"], "width": ["1e20", "4.5"], "weight_decay": ["1e10", "1001"],
    "tau_end": ["1e-300", "1e7", "0.5e-9"], "records": ["0", "1000001"], "order_m": ["0", "17", "7"],
    "recovery_threshold": ["1.0000001", "0"], "seed": ["-1", "18446744073709551616"],
    "activation": ["softmax(1e300)", "softmax(0)", "hermite(1e300,1)", "hermite(0,1", "h7",
                   "hermite()", "hermite(0,0,0,0,0,0,0,0,0,0,1)"],
    "teacher": ["wishart(1e8)", "wishart(1e308)", "wishart(0.001)", "goe_shift(1e300)", "wishart(-1)"],
}
SANITIZER = re.compile(r"ERROR: (Address|Leak|Memory|Thread)Sanitizer|runtime error:|SUMMARY: .*Sanitizer")


def run(args, timeout=TIME_LIMIT_S):
    t0 = time.monotonic()
    try:
        p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout,
                           cwd=W)
        return p.returncode, p.stderr.decode("utf-8", "replace"), time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return None, "", time.monotonic() - t0


def mutate_sweep(rng, text):
    lines = text.split(b"\n")
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(11)
        i = rng.randrange(len(lines)) if lines else 0
        if kind == 0 and lines:
            del lines[i]
        elif kind == 1 and lines:
            lines.insert(i, lines[i])
        elif kind == 2 and lines:
            lines[i] = b" " * rng.randint(0, 5) + lines[i].lstrip()
        elif kind in (3, 4, 5) and lines:
            # a value (after ':' or inside [..]) replaced by an extreme one
            m = list(re.finditer(rb"(?<=[:\[,] )[^,\]\n#]+", lines[i]))
            if m:
                g = rng.choice(m)
                lines[i] = lines[i][:g.start()] + rng.choice(EXTREME).encode() + lines[i][g.end():]
        elif kind == 6 and lines:
            pos = rng.randint(0, len(lines[i]))
            lines[i] = lines[i][:pos] + rng.choice(GARBAGE_BYTES) + lines[i][pos:]
        elif kind == 7:
            depth = rng.choice([5, 17, 1000, 20000])
            lines.insert(i, b"  x: " + b"[" * depth + b"]" * depth)
        elif kind == 10:
            # a parameter as a long expression: chains of + - * / (up to 10^5 terms), nested
            # parentheses, unary signs (an expression of 10^5 terms crashed plan, issue 37)
            key = rng.choice([b"lr", b"init_scale", b"tau_end", b"d", b"weight_decay"])
            n = rng.choice([10, 1000, 1025, 20000, 100000])
            shape = rng.randrange(4)
            if shape == 0:
                val = rng.choice([b"+", b"*", b"-", b"/"]).join([b"0.01"] * n)
            elif shape == 1:
                val = b"(" * min(n, 5000) + b"0.01" + b")" * min(n, 5000)
            elif shape == 2:
                val = b"-" * n + b"0.01"
            else:
                val = b"+".join([b"(0.01*d^-1.5)"] * n)
            # in place of a value the file has, else as the first key of fixed: or grid:
            at = [j for j, l in enumerate(lines) if re.match(rb"\s+\w+: ", l)]
            heads = [j for j, l in enumerate(lines) if re.match(rb"(fixed|grid):\s*$", l)]
            if at and rng.random() < 0.7:
                j = rng.choice(at)
                lines[j] = lines[j][:lines[j].index(b":") + 2] + val
            elif heads:
                lines.insert(heads[0] + 1, b"  " + key + b": " + val)
            else:
                lines.insert(i, b"  " + key + b": " + val)
        elif kind == 8:
            data = b"\n".join(lines)
            return data[:rng.randint(0, len(data))]
        else:
            key = rng.choice(list(SMALL) + ["seeds", "grid", "fixed", "name", "solvers", "bogus"])
            val = rng.choice(SMALL.get(key, EXTREME) + OUT_OF_RANGE.get(key, []))
            form = rng.choice([b"  %s: %s", b"  %s: [%s]", b"%s: %s", b"  %s: [%s, %s]"])
            lines.insert(i, form.replace(b"%s", key.encode(), 1).replace(b"%s", val.encode()))
    return b"\n".join(lines)


def flag_set(rng):
    args, keys = [], []
    for _ in range(rng.randint(0, 6)):
        key = rng.choice(list(SMALL))
        r = rng.random()
        if r < 0.55:
            val = rng.choice(SMALL[key])
        elif r < 0.8:
            val = rng.choice(OUT_OF_RANGE.get(key, EXTREME))
        else:
            val = rng.choice(EXTREME)
        flag = "--" + (key.replace("_", "-") if rng.random() < 0.5 else key)
        keys.append(key)
        if rng.random() < 0.2:
            args.append(flag + "=" + val)
        else:
            args += [flag, val]
    r = rng.random()
    extra = None
    if r < 0.05:
        extra = (["--colour"], "colour")
    elif r < 0.08:
        extra = (["--d"], "d")  # a flag without its value
    elif r < 0.10:
        extra = (["stray"], "stray")
    elif r < 0.12:
        extra = (["--format", rng.choice(["csv", "table", "xml"])], "format")
    elif r < 0.14:
        extra = (["--cost-limit", rng.choice(["0", "1e-9", "24", "-1", "abc", "1e999"])], "cost-limit")
    elif r < 0.15:
        extra = (["--force"], "force")
    if extra:
        args += extra[0]
        keys.append(extra[1])
    # keep valid runs small: d, tau_end, records and order_m default to small values
    fixed = []
    for key, val in (("d", "8"), ("tau_end", "0.01"), ("records", "2"), ("order_m", "3")):
        if key not in keys:
            fixed += ["--" + key.replace("_", "-"), val]
    return fixed + args, keys


def check_sweep(case):
    path, data = case
    with open(path, "wb") as f:
        f.write(data)
    rc, err, t = run([AIMSWEEP, "plan", path])
    name = os.path.basename(path)
    if rc is None:
        return "%s: no answer within %d s" % (name, TIME_LIMIT_S)
    if SANITIZER.search(err):
        return "%s: sanitizer report: %s" % (name, err[:400])
    if rc not in (0, 2):
        return "%s: exit %d: %s" % (name, rc, err[:300])
    if rc == 2 and not re.search(re.escape(path) + r":\d+: ", err) and "larger than 16 MiB" not in err:
        return "%s: exit 2 without FILE:LINE: %s" % (name, err[:300])
    os.unlink(path)
    return None


def check_flags(case):
    args, keys = case
    rc, err, t = run([AIMSWEEP, "single"] + args)
    if rc is None:
        return "single %s: no answer within %d s" % (" ".join(args), TIME_LIMIT_S)
    if SANITIZER.search(err):
        return "single %s: sanitizer report: %s" % (" ".join(args), err[:400])
    if rc not in (0, 2):
        return "single %s: exit %d: %s" % (" ".join(args), rc, err[:300])
    if rc == 2:
        names = set(keys) | {k.replace("_", "-") for k in keys}
        # a refused combination may name a parameter set by default alongside (d, tau_end)
        names |= {"d", "tau_end", "records", "order_m", "tau-end", "order-m"}
        # named as a flag (--d), a quoted word ('d'), or a key with its value (d = 5, d: ..., teacher 'x'),
        # not as any substring ("d" is in almost every message)
        pats = [r"--%s(?![\w-])|'%s'|(?<![\w-])%s(?: =|:| ')" % ((re.escape(n),) * 3) for n in names if n]
        if not any(re.search(p, err) for p in pats):
            return "single %s: exit 2 without the flag: %s" % (" ".join(args), err[:300])
    return None


def main():
    os.makedirs(W, exist_ok=True)
    rng = random.Random(SEED)
    sources = sorted(glob.glob(os.path.join(SRCDIR, "sweeps", "*.yaml")) +
                     glob.glob(os.path.join(SRCDIR, "tests", "*.yaml")))
    texts = [open(p, "rb").read() for p in sources]
    nsweep = NCASES // 2
    sweeps = [(os.path.join(W, "case%04d.yaml" % i), mutate_sweep(rng, rng.choice(texts)))
              for i in range(nsweep)]
    flags = [flag_set(rng) for _ in range(NCASES - nsweep)]
    t0 = time.monotonic()
    failures, counts = [], {"sweep": 0, "flags": 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for kind, fn, cases in (("sweep", check_sweep, sweeps), ("flags", check_flags, flags)):
            for res in ex.map(fn, cases):
                counts[kind] += 1
                if res:
                    failures.append(res)
    for f in failures:
        print("FAIL " + f)
    total = counts["sweep"] + counts["flags"]
    print("fuzz: %d cases (%d sweep files, %d flag sets), seed %d, %.1f s" %
          (total, counts["sweep"], counts["flags"], SEED, time.monotonic() - t0))
    print("%d passed, %d failed" % (total - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
