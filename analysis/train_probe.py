"""Small attention-only models trained with PyTorch (Debian's python3-torch, CPU), saved as
safetensors checkpoints for `aimsweep probe` (docs/probe.md).

  teacher  aimsweep's own attention-indexed teacher-student model (docs/model.md §1-4): one head,
           tokens x_a ~ N(0, I_d), scores x_a^T S x_b / sqrt(d) with S = W_Q^T W_K / sqrt(d_head),
           y = sigma(h(S*)) on the off-diagonal pairs, online SGD with one fresh sample a step at
           aimsweep's normalisation: W_Q = U^T d^(-1/4), W_K = V^T d^(-1/4) (r = d_head), so
           that a plain gradient step of rate eta sqrt(d_head) / d on W_Q, W_K is aimsweep's
           U <- U - (eta/d) g V, V <- V - (eta/d) g^T U (tied: W_Q = W_K, W <- W - (eta/d)(g + g^T)W)
           and the initial entries N(0, s0^2 / sqrt(d)) are aimsweep's U_ij ~ N(0, s0^2). The
           teacher is drawn as aimsweep draws it (wishart(rho): W* W*^T, rescaled to
           Tr S*^2 / d = 1) from NumPy, saved as teacher.npy beside the checkpoints.
  markov   next-token prediction on a Markov-chain language (V states, a random sparse
           transition matrix): embeddings, L layers of H causal softmax heads with residual
           connections, no MLP, an unembedding; Adam. Tied (W_Q = W_K per layer) or untied.
           With --in-context 1 every sequence has its own transition matrix (rows Dirichlet(1)),
           so that predicting the next token needs the context's bigram counts (an induction
           head, as in in-context learning of Markov chains); without it one fixed chain,
           which the current token alone predicts.

usage:
  train_probe.py teacher OUT --decomposition tied|untied --d 48 --lr 0.2 --tau-end 1
                 --records 10 --seed 1 [--init-scale 0.7] [--rho 0.5] [--tokens 2]
  train_probe.py markov OUT --tied 0|1 [--in-context 0|1 --layers 2 --heads 4 --width 128
                 --steps 3000 --every 250 --vocab 32 --seq 64 --batch 32 --seed 1]
Each checkpoint is OUT/step_NNNNNNN.safetensors with the metadata step and heads.
Run under `nice -n 10`; torch is limited to one thread.
"""
import argparse
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402  (first: it names the package of a missing module)

aimdb.require("numpy", "python3-numpy")
aimdb.require("torch", "python3-torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


def save_safetensors(path, tensors, metadata):
    """tensors: {name: float32 numpy array}. The format written byte by byte (the safetensors
    package is not in Debian)."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(tmp, path)


def he(k, x):
    """Probabilists' Hermite polynomial He_k."""
    a, b = torch.ones_like(x), x
    if k == 0:
        return a
    for n in range(1, k):
        a, b = b, x * b - n * a
    return b


def run_teacher(a):
    d, T = a.d, a.tokens
    rng = np.random.default_rng(a.seed)
    r_star = max(1, round(a.rho * d))
    W = rng.standard_normal((d, r_star))
    S_star = W @ W.T / math.sqrt(r_star * d)
    S_star /= math.sqrt(np.sum(S_star * S_star) / d)
    np.save(os.path.join(a.out, "teacher.npy"), S_star)
    dh = max(1, round(a.width * d))
    g = torch.Generator().manual_seed(a.seed)
    scale = a.init_scale / d ** 0.25
    wq = (torch.randn(dh, d, generator=g, dtype=torch.float64) * scale).requires_grad_()
    wk = wq if a.decomposition == "tied" else \
        (torch.randn(dh, d, generator=g, dtype=torch.float64) * scale).requires_grad_()
    params = [wq] if a.decomposition == "tied" else [wq, wk]
    St = torch.tensor(S_star)
    lr = a.lr * math.sqrt(dh) / d
    n_end = round(a.tau_end * d * d / a.lr)
    marks = {round(i * n_end / a.records) for i in range(a.records + 1)}
    off = ~torch.eye(T, dtype=torch.bool)

    def save(n):
        save_safetensors(os.path.join(a.out, f"step_{n:07d}.safetensors"),
                         {"layers.0.attn.q_proj.weight": wq.detach().numpy(),
                          "layers.0.attn.k_proj.weight": wk.detach().numpy()},
                         {"step": n, "heads": 1, "tau": n * a.lr / d / d})

    for n in range(n_end + 1):
        if n in marks:
            save(n)
        if n == n_end:
            break
        x = torch.randn(T, d, generator=g, dtype=torch.float64)
        y = he(a.k, (x @ St @ x.T / math.sqrt(d))[off])
        s = (x @ wq.T) @ (x @ wk.T).T / math.sqrt(dh)  # x_a^T S x_b
        loss = 0.5 * torch.sum((he(a.k, s[off] / math.sqrt(d)) - y) ** 2)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p -= lr * gr


class AttnOnly(torch.nn.Module):
    """Embeddings (token + position), L layers of H causal softmax heads with residuals and a
    pre-norm, no MLP, an unembedding."""

    def __init__(self, vocab, seq, width, layers, heads, tied):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, width)
        self.pos = torch.nn.Parameter(torch.randn(seq, width) * 0.02)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            m = torch.nn.Module()
            m.norm = torch.nn.LayerNorm(width)
            m.q_proj = torch.nn.Linear(width, width, bias=False)
            m.k_proj = m.q_proj if tied else torch.nn.Linear(width, width, bias=False)
            m.v_proj = torch.nn.Linear(width, width, bias=False)
            m.o_proj = torch.nn.Linear(width, width, bias=False)
            self.layers.append(m)
        self.out = torch.nn.Linear(width, vocab)
        self.heads, self.width = heads, width

    def forward(self, t):
        B, N = t.shape
        H, dh = self.heads, self.width // self.heads
        x = self.emb(t) + self.pos[:N]
        mask = torch.triu(torch.ones(N, N, dtype=torch.bool), 1)
        for m in self.layers:
            z = m.norm(x)
            q = m.q_proj(z).view(B, N, H, dh).transpose(1, 2)
            k = m.k_proj(z).view(B, N, H, dh).transpose(1, 2)
            v = m.v_proj(z).view(B, N, H, dh).transpose(1, 2)
            att = (q @ k.transpose(-1, -2) / math.sqrt(dh)).masked_fill(mask, float("-inf"))
            x = x + m.o_proj((att.softmax(-1) @ v).transpose(1, 2).reshape(B, N, self.width))
        return self.out(x)


def run_markov(a):
    rng = np.random.default_rng(a.seed)
    V = a.vocab
    # Each state moves to 4 of the V states with random probabilities.
    P = np.zeros((V, V))
    for i in range(V):
        nxt = rng.choice(V, min(4, V), replace=False)
        P[i, nxt] = rng.dirichlet(np.ones(min(4, V)))
    entropy = -np.sum(P * np.log(np.where(P > 0, P, 1)), axis=1).mean()
    torch.manual_seed(a.seed)
    model = AttnOnly(V, a.seq, a.width, a.layers, a.heads, bool(a.tied))
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    Pt = torch.tensor(P, dtype=torch.float32)
    if a.in_context:
        # The loss of a predictor that knows each sequence's matrix: E over Dirichlet(1) rows of
        # their entropy, H_V - 1 (H_V the harmonic number), the floor for an in-context learner.
        entropy = sum(1.0 / j for j in range(2, V + 1))
    log = []

    def save(step, loss):
        t = {}
        for i, m in enumerate(model.layers):
            t[f"layers.{i}.attn.q_proj.weight"] = m.q_proj.weight.detach().numpy()
            t[f"layers.{i}.attn.k_proj.weight"] = m.k_proj.weight.detach().numpy()
        save_safetensors(os.path.join(a.out, f"step_{step:07d}.safetensors"), t,
                         {"step": step, "heads": a.heads, "loss": loss})
        log.append({"step": step, "loss": loss})

    nparams = sum(p.numel() for p in model.parameters())
    for step in range(a.steps + 1):
        s = torch.multinomial(torch.ones(V), a.batch, replacement=True)
        seqs = [s]
        if a.in_context:
            Pb = torch.distributions.Dirichlet(torch.ones(V)).sample((a.batch, V))
            rows = torch.arange(a.batch)
        for _ in range(a.seq):
            probs = Pb[rows, s] if a.in_context else Pt[s]
            s = torch.multinomial(probs, 1).squeeze(1)
            seqs.append(s)
        seq = torch.stack(seqs, 1)
        logits = model(seq[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), seq[:, 1:].reshape(-1))
        if step % a.every == 0:
            save(step, float(loss))
        if step == a.steps:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    with open(os.path.join(a.out, "train.json"), "w") as f:
        json.dump({"params": nparams, "entropy_rate": entropy, "log": log, "args": vars(a)}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="task", required=True)
    t = sub.add_parser("teacher")
    t.add_argument("out")
    t.add_argument("--decomposition", choices=["tied", "untied"], default="untied")
    for name, typ, default in [("d", int, 48), ("width", float, 1.0), ("lr", float, 0.2),
                               ("tau-end", float, 1.0), ("records", int, 10),
                               ("init-scale", float, 0.7), ("rho", float, 0.5),
                               ("tokens", int, 2), ("k", int, 1), ("seed", int, 1)]:
        t.add_argument("--" + name, type=typ, default=default)
    m = sub.add_parser("markov")
    m.add_argument("out")
    for name, typ, default in [("tied", int, 0), ("layers", int, 2), ("heads", int, 4),
                               ("width", int, 128), ("steps", int, 3000), ("every", int, 250),
                               ("vocab", int, 32), ("seq", int, 64), ("batch", int, 32),
                               ("lr", float, 3e-3), ("in-context", int, 0), ("seed", int, 1)]:
        m.add_argument("--" + name, type=typ, default=default)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    (run_teacher if a.task == "teacher" else run_markov)(a)


if __name__ == "__main__":
    main()
