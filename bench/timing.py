"""Shared by the Python peers of `aimsweep bench` (sgd_numpy.py, sgd_torch.py): the timing loop
and the command line, so that both sides are measured the same way."""
import sys
import time


CHUNK_S = 2e-3  # as BENCH_CHUNK_S in src/cli/cli_bench.c


def steps_per_second(step, seconds):
    """Runs step() 10 times to warm up, sizes a batch to about CHUNK_S, then times batches for
    `seconds` and returns the best batch's steps per second: on a shared machine a short batch
    often runs uninterrupted, as `aimsweep bench` measures its own step."""
    for _ in range(10):
        step()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        t = time.perf_counter() - t0
        if t >= CHUNK_S:
            break
        n = int(n * min(8.0, 1.2 * CHUNK_S / max(t, 1e-9))) + 1
    best, end = t, time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, time.perf_counter() - t0)
    return n / best


def main(run):
    """usage: PROG [D_LIST] [DECOMPOSITIONS] [SECONDS]; prints decomposition,d,steps_per_s, where
    run(decomposition, d, seconds) measures one case."""
    ds = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "100,400,800").split(",")]
    decomps = (sys.argv[2] if len(sys.argv) > 2 else "direct,tied,untied").split(",")
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    print("decomposition,d,steps_per_s")
    for dec in decomps:
        for d in ds:
            print(f"{dec},{d},{run(dec, d, seconds):.1f}", flush=True)
