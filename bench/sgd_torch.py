#!/usr/bin/python3
"""The SGD step of aimsweep written with PyTorch (CPU, one thread), for the side-by-side benchmark.

The same model and step as bench/sgd_numpy.py (T = 2 tokens, r = d, activation h1, a wishart(0.5)
teacher held as its factor F, MSE on the off-diagonal entries, online SGD), written as a user of
PyTorch would: float64 tensors, torch.no_grad(), the parameters updated in place (sub_/add_ with
alpha), the gradient in closed form like the NumPy version (autograd would only add to the time).
Prints CSV: decomposition,d,steps_per_s. Exits 0 with no rows (and a message on stderr) when
PyTorch is not installed (Debian: python3-torch).
"""
import sys

from timing import main, steps_per_second

try:
    import torch
except ImportError:  # the benchmark table then shows nan for PyTorch
    print("sgd_torch.py: PyTorch not installed (apt-get install python3-torch); skipped", file=sys.stderr)
    print("decomposition,d,steps_per_s")
    sys.exit(0)


def make(decomp, d, gen, s0=0.7):
    k = d // 2
    F = torch.randn(d, k, generator=gen, dtype=torch.float64)
    P = F @ F.T
    c = 1.0 / torch.sqrt(torch.sum(P * P) / d)
    F *= torch.sqrt(c)
    trP = float(c * torch.trace(P))
    r = d
    if decomp == "direct":
        A = torch.randn(d, d, generator=gen, dtype=torch.float64)
        params = [s0 * (A + A.T) / (2 * d) ** 0.5]
    elif decomp == "tied":
        params = [s0 * torch.randn(d, r, generator=gen, dtype=torch.float64)]
    else:
        params = [s0 * torch.randn(d, r, generator=gen, dtype=torch.float64) for _ in range(2)]
    return F, trP, params


def run(decomp, d, seconds, lr=0.01, T=2):
    gen = torch.Generator().manual_seed(1)
    F, trP, params = make(decomp, d, gen)
    kappa = 1.0 if decomp == "direct" else float(d)
    mu, sqd = lr / d, d ** 0.5
    eye = torch.eye(T, dtype=torch.float64)
    off = 1.0 - eye

    def step():
        x = torch.randn(T, d, generator=gen, dtype=torch.float64)
        z = x @ F
        hs = (z @ z.T - eye * trP) / sqd
        if decomp == "direct":
            S = params[0]
            h = (x @ S @ x.T - eye * torch.trace(S)) / sqd
        elif decomp == "tied":
            W = params[0]
            a = x @ W
            h = (a @ a.T / kappa - eye * torch.sum(W * W) / kappa) / sqd
        else:
            U, V = params
            p, q = x @ U, x @ V
            h = (p @ q.T / kappa - eye * torch.sum(U * V) / kappa) / sqd
        D = (h - hs) * off  # h1: dl/dh on the off-diagonal entries
        trD = float(torch.trace(D))
        if decomp == "direct":
            # S -= mu (x^T D x - tr D I) / sqrt(d)
            S.sub_(x.T @ D @ x, alpha=mu / sqd)
            S.diagonal().add_(mu * trD / sqd)
        elif decomp == "tied":
            c = (D + D.T) @ a / sqd
            W.mul_(1 + 2 * mu * trD / sqd).sub_(x.T @ c, alpha=mu)
        else:
            gV = x.T @ (D @ q)
            gU = x.T @ (D.T @ p)
            # both from the old U, V: U <- U - mu (gV - trD V)/sqd, V <- V - mu (gU - trD U)/sqd
            U_old = U.clone()
            U.sub_(gV, alpha=mu / sqd).add_(V, alpha=mu * trD / sqd)
            V.sub_(gU, alpha=mu / sqd).add_(U_old, alpha=mu * trD / sqd)

    with torch.no_grad():
        return steps_per_second(step, seconds)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(run)
