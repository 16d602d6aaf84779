#!/usr/bin/python3
"""The SGD step of aimsweep written with NumPy (on OpenBLAS), for the side-by-side benchmark.

Same model as `aimsweep bench`: T = 2 tokens, r = d, activation h1, a wishart(0.5) teacher held
as its factor F (S* = F F^T), MSE loss on the off-diagonal entries, online SGD (docs/model.md §4).
Prints CSV: decomposition,d,steps_per_s.
"""

from timing import main, steps_per_second

import numpy as np


def make(decomp, d, rng, s0=0.7):
    k = d // 2
    F = rng.standard_normal((d, k))
    P = F @ F.T
    c = 1.0 / np.sqrt(np.sum(P * P) / d)
    F *= np.sqrt(c)
    trP = c * np.trace(P)
    r = d
    if decomp == "direct":
        A = rng.standard_normal((d, d))
        params = [s0 * (A + A.T) / np.sqrt(2 * d)]
    elif decomp == "tied":
        params = [s0 * rng.standard_normal((d, r))]
    else:
        params = [s0 * rng.standard_normal((d, r)), s0 * rng.standard_normal((d, r))]
    return F, trP, params


def run(decomp, d, seconds, lr=0.01, T=2):
    rng = np.random.default_rng(1)
    F, trP, params = make(decomp, d, rng)
    kappa = 1.0 if decomp == "direct" else np.sqrt(d * d)
    mu, sqd = lr / d, np.sqrt(d)
    off = 1.0 - np.eye(T)

    def step():
        x = rng.standard_normal((T, d))
        z = x @ F
        hs = (z @ z.T - np.eye(T) * trP) / sqd
        if decomp == "direct":
            S = params[0]
            h = (x @ S @ x.T - np.eye(T) * np.trace(S)) / sqd
        elif decomp == "tied":
            W = params[0]
            a = x @ W
            h = (a @ a.T / kappa - np.eye(T) * np.sum(W * W) / kappa) / sqd
        else:
            U, V = params
            p, q = x @ U, x @ V
            h = (p @ q.T / kappa - np.eye(T) * np.sum(U * V) / kappa) / sqd
        D = (h - hs) * off  # h1: dl/dh on the off-diagonal entries
        if decomp == "direct":
            g = (x.T @ D @ x - np.trace(D) * np.eye(d)) / sqd
            params[0] = S - mu * g
        elif decomp == "tied":
            c = (D + D.T) @ a / sqd
            params[0] = W - mu * (x.T @ c - 2 * np.trace(D) / sqd * W)
        else:
            gV = (x.T @ (D @ q) - np.trace(D) * V) / sqd
            gU = (x.T @ (D.T @ p) - np.trace(D) * U) / sqd
            params[0], params[1] = U - mu * gV, V - mu * gU

    return steps_per_second(step, seconds)


if __name__ == "__main__":
    main(run)
