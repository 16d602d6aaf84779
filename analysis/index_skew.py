#!/usr/bin/python3
"""The third cumulant of the attention index at finite d (analysis/general_index.md, section 8).

For a symmetric S and tokens with E x_a x_b^T = C_ab I, C = (1 - c) I + c 11^T, the index
h_ab = (x_a^T S x_b - C_ab Tr S)/sqrt(d) is a Gaussian quadratic form. Its third cumulant is
8 Tr((M Sigma)^3) for h = y^T M y, Cov y = Sigma; with y = (x_a, x_b), M = (1/2) [[0, S], [S, 0]]
(a != b) or y = x_a, M = S (a = b) this gives, with tr = Tr/d,
    kappa3(h_aa) = 8 tr(S^3)/sqrt(d),   kappa3(h_ab) = (6c + 2c^3) tr(S^3)/sqrt(d),
so the skewness is O(1/sqrt(d)) unless c = 0 and a != b. This script checks both by Monte Carlo
for a tied-like S = W W^T/d (S >= 0, tr S^3 of order one)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402  (first: it names the package of a missing module)

aimdb.require("numpy", "python3-numpy")

import numpy as np

rng = np.random.default_rng(1)
N, B = 40000, 2000
print("d   c    skew h01 (MC)  predicted   skew h00 (MC)  predicted   (se of a skewness ~ %.3f)"
      % np.sqrt(6 / N))
for d in [50, 100, 200, 400]:
    W = rng.standard_normal((d, d)) * 0.7
    S = W @ W.T / d
    ev = np.linalg.eigvalsh(S)
    t2, t3 = np.sum(ev**2) / d, np.sum(ev**3) / d
    for c in [0.0, 0.3]:
        L = np.linalg.cholesky(np.array([[1, c], [c, 1]]))
        h01, h00 = [], []
        for _ in range(N // B):
            X = np.einsum('ab,nbi->nai', L, rng.standard_normal((B, 2, d)))
            SX = X @ S
            h01.append((np.einsum('ni,ni->n', SX[:, 0], X[:, 1]) - c * ev.sum()) / np.sqrt(d))
            h00.append((np.einsum('ni,ni->n', SX[:, 0], X[:, 0]) - ev.sum()) / np.sqrt(d))
        h01, h00 = np.concatenate(h01), np.concatenate(h00)
        sk = lambda h: ((h - h.mean())**3).mean() / h.var()**1.5
        p01 = (6 * c + 2 * c**3) * t3 / np.sqrt(d) / ((1 + c * c) * t2)**1.5
        p00 = 8 * t3 / np.sqrt(d) / (2 * t2)**1.5
        print("%-3d %.1f  %+.3f         %+.3f      %+.3f         %+.3f" % (d, c, sk(h01), p01,
                                                                         sk(h00), p00))
