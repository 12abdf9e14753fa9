"""Issue 17 diagnostics: why PPGSL on Cora does not reach the paper's point (README.md here).

Cora as the harness's nodes hold it (20 % of the edges hidden, seed 0), its 10 % sensitive
links E_s and as many true non-links, then one of:

    python docs/reproduction/ppgsl/diagnose.py grad              # |∂L_priv/∂θ| at θ = A
    python docs/reproduction/ppgsl/diagnose.py learn --alpha 0.005 [--n1 100] [--project]
    python docs/reproduction/ppgsl/diagnose.py floors            # what any structure leaves
    python docs/reproduction/ppgsl/diagnose.py floor50 --alpha 0.01 --n1 500   # issue 34

``grad``: one surrogate trained N₁ epochs on the public graph; the per-entry privacy gradient
(mean and sum over E_s) against the utility pull 2α at |A − A′| = 0.5. ``learn``: the real
learner (``ppgsl.learn``) with, at each retrain, a fresh surrogate's AUC on E_s and the θ
entries still inside [0, 1]; then the Bernoulli release's protected GAE-cosine and CN AUC and
a link-prediction proxy (GAE cosine on the hidden links). ``floors``: the same attacks on the
public graph, on it less every edge at a sensitive endpoint, and on a uniform random graph,
against uniform and degree-matched non-links. ``floor50`` (issue 34): the real learner at the
paper's settings, then GAE+sim on the protected links of the release and of the public graph
with the true features (the ``attack`` metric's GAE), without features (structure only: the
GAE's random input) and with the features shuffled between nodes. Single-threaded; about a
minute each here (``floor50`` at N₁ = 500: a few minutes).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ldpgraph.protocols.central import ppgsl as pg
from ldpgraph.protocols.graph import canonical_edges, edges_to_csr
from ldpgraph.server.evaluation.attack import pair_cosine, structural_scores
from ldpgraph.server.evaluation.embedding import gae_embedding
from ldpgraph.server.evaluation.holdout import hide_edges, pair_keys, roc_auc, sample_non_edges
from ldpgraph.simulation.datasets.load import load_dataset


class Cora:
    """The graph the nodes hold, E = public, E_s, non-links, the hidden links."""

    def __init__(self, seed: int = 0) -> None:
        full = load_dataset("cora")
        held_graph, self.held = hide_edges(full, seed, metric="attack")
        self.n = full.num_nodes
        self.x = np.asarray(full.x)
        self.all_edges = full.edges
        self.public, self.sens = pg.split_sensitive(held_graph.edges, 0.1, seed)
        taken = np.union1d(pair_keys(full.edges, self.n), pair_keys(self.held.non_edges, self.n))
        rng = np.random.default_rng(123)
        self.non = sample_non_edges(full.edges, self.n, len(self.sens), rng, taken)
        self.targets = np.concatenate([self.sens, self.non])
        self.labels = np.r_[np.ones(len(self.sens)), np.zeros(len(self.non))]


def surrogate_auc(c: Cora, model: Any, xw1: Any, prop: Any, w: Any) -> float:
    """AUC of a trained surrogate's σ(cos) on E_s against the non-links."""
    with torch.no_grad():
        z = pg.encode(model, xw1, prop, w)
        return roc_auc(c.labels, pg.link_prob(z, torch.as_tensor(c.targets)).numpy())


def train_surrogate(c: Cora, pairs: np.ndarray, w: Any, epochs: int, seed: int = 0) -> tuple:
    """A fresh surrogate trained as ``learn`` trains it, on weights ``w`` over ``pairs``."""
    pt = torch.as_tensor(pairs)
    prop = pg.Propagation(pt, c.n)
    xt = pg.feature_matrix(c.x, "cpu")
    model = pg.Surrogate(xt.shape[1], torch.Generator().manual_seed(seed), "cpu")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    support = w > 0
    pos, target = pt[support], w[support]
    taken = np.sort(pair_keys(pairs[support.numpy()], c.n))
    rng = np.random.default_rng(seed + 1)
    for _ in range(epochs):
        neg = torch.as_tensor(pg.sample_free_pairs(c.n, len(pos), taken, rng))
        z = pg.encode(model, pg._mm(xt, model.weights[0]), prop, w)
        prob = pg.link_prob(z, torch.cat([pos, neg])).clamp(1e-7, 1 - 1e-7)
        h = len(pos)
        loss = F.binary_cross_entropy(prob[:h], target) + F.binary_cross_entropy(
            prob[h:], torch.zeros(h)
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.freeze()
    return model, pg._mm(xt, model.weights[0]).detach(), prop


def attacks(c: Cora, edges: np.ndarray, negatives: np.ndarray | None = None) -> dict:
    """Protected-link AUCs on a binary graph: GAE-cos, a fresh surrogate, CN, preferential
    attachment, feature cosine; and the LP proxy."""
    neg = c.non if negatives is None else negatives
    targets = np.concatenate([c.sens, neg])
    labels = np.r_[np.ones(len(c.sens)), np.zeros(len(neg))]
    adj = edges_to_csr(edges, c.n)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    emb = gae_embedding(edges, c.x, 0)
    hidden, hidden_labels = c.held.pairs()
    model, xw1, prop = train_surrogate(c, edges, torch.ones(len(edges)), 100, seed=7)
    with torch.no_grad():
        z = pg.encode(model, xw1, prop, torch.ones(len(edges)))
        sur = pg.link_prob(z, torch.as_tensor(targets)).numpy()
    out = {
        "gae_cos": roc_auc(labels, pair_cosine(emb, targets)),
        "surrogate": roc_auc(labels, sur),
        "cn": roc_auc(labels, structural_scores(adj, targets)["cn"]),
        "pref_attach": roc_auc(labels, deg[targets[:, 0]] * deg[targets[:, 1]]),
        "feature_cos": roc_auc(labels, pair_cosine(c.x, targets)),
        "lp_proxy": roc_auc(hidden_labels, pair_cosine(emb, hidden)),
    }
    return {k: round(float(v), 3) for k, v in out.items()}


def cmd_grad(c: Cora, args: argparse.Namespace) -> None:
    pairs, original = pg.parameterised_pairs(c.public, c.sens, c.n, 1, False, 0)
    w = torch.as_tensor(original)
    model, xw1, prop = train_surrogate(c, pairs, w, args.n1)
    auc = surrogate_auc(c, model, xw1, prop, w)
    print(f"surrogate after {args.n1} epochs: AUC on E_s {auc:.3f}")
    theta = torch.nn.Parameter(w.clone())
    z = pg.encode(model, xw1, prop, theta.clamp(0.0, 1.0))
    ce = -torch.log1p(-pg.link_prob(z, torch.as_tensor(c.sens)))
    ce.mean().backward()
    g = theta.grad.abs().numpy()
    nz = g[g > 0]
    print(f"|E_s| = {len(c.sens)}; entries with a privacy gradient: {len(nz)} of {len(g)}")
    for name, scale in (("mean (Eq. 7 literally)", 1.0), ("sum (default)", float(len(c.sens)))):
        q = np.quantile(nz * scale, [0.5, 0.9, 0.99, 1.0])
        print(f"  {name}: |∂L_priv/∂θ| median {q[0]:.2e}, 90% {q[1]:.2e}, 99% {q[2]:.2e}, "
              f"max {q[3]:.2e}")  # fmt: skip
        for alpha in (1e-5, 1e-4, 1e-3, 5e-3, 1e-2):
            print(f"    α = {alpha:g}: entries with |g| > 2α (stay past 0.5): "
                  f"{int((g * scale > 2 * alpha).sum())}")  # fmt: skip


def cmd_learn(c: Cora, args: argparse.Namespace) -> None:
    p = {q.name: q.default for q in pg.PARAMS}
    p.update(ppgsl_alpha=args.alpha, ppgsl_attack_epochs=args.n1)
    p.update(ppgsl_priv_reduction=args.reduction, ppgsl_mu=args.mu, ppgsl_epochs=args.n2)
    start = time.time()

    def on_retrain(step: int, model: Any, xw1: Any, prop: Any, w_fix: Any) -> None:
        auc = surrogate_auc(c, model, xw1, prop, w_fix)
        print(f"  retrain at step {step}: fresh surrogate AUC on E_s {auc:.3f} "
              f"({time.time() - start:.0f} s)", flush=True)  # fmt: skip

    learned = pg.learn(
        c.public, c.sens, c.x, c.n, pg.Params(p), 0, project=args.project, on_retrain=on_retrain
    )
    print("  entries inside [0, 1] at each retrain:", learned.log["movable"])
    draw = np.random.default_rng(5).random(len(learned.weights))
    released = canonical_edges(learned.pairs[draw < learned.weights], c.n)
    m = len(c.public)
    kept = int((draw[:m] < learned.weights[:m]).sum())
    added = int((draw[m:] < learned.weights[m:]).sum())
    print(f"released {len(released)} edges ({m - kept} deleted, {added} added):",
          attacks(c, released), f"{time.time() - start:.0f} s")  # fmt: skip


def cmd_floors(c: Cora, _args: argparse.Namespace) -> None:
    adj = edges_to_csr(c.public, c.n)
    deg = np.asarray(adj.sum(axis=1)).ravel().astype(float)
    rng = np.random.default_rng(4)
    known = set(pair_keys(c.all_edges, c.n).tolist())
    matched: list[tuple[int, int]] = []
    while len(matched) < len(c.sens):  # non-links with endpoints drawn ∝ degree
        u, v = rng.choice(c.n, 2, p=deg / deg.sum())
        if u != v and min(u, v) * c.n + max(u, v) not in known:
            matched.append((min(u, v), max(u, v)))
    ends = np.unique(c.sens)
    touch = np.isin(c.public[:, 0], ends) | np.isin(c.public[:, 1], ends)
    taken = np.sort(pair_keys(c.all_edges, c.n))
    random = canonical_edges(pg.sample_free_pairs(c.n, len(c.public), taken, rng), c.n)
    print("public graph:", attacks(c, c.public))
    print("public graph, degree-matched non-links:", attacks(c, c.public, np.array(matched)))
    print("public less every edge at a sensitive endpoint:", attacks(c, c.public[~touch]))
    print("uniform random graph, |E| edges:", attacks(c, random))


def gae_variants(c: Cora, edges: np.ndarray) -> dict:
    """GAE+sim's protected-link AUC on ``edges`` with three inputs, and the LP proxy (GAE
    cosine with the true features on the hidden links)."""
    perm = np.random.default_rng(11).permutation(c.n)
    inputs = {
        "true features": c.x,
        "no features": np.zeros((c.n, 0), dtype=np.float32),
        "shuffled features": c.x[perm],
    }
    out = {}
    for name, x in inputs.items():
        emb = gae_embedding(edges, x, 0)
        out[name] = roc_auc(c.labels, pair_cosine(emb, c.targets))
        if name == "true features":
            hidden, hidden_labels = c.held.pairs()
            out["lp proxy"] = roc_auc(hidden_labels, pair_cosine(emb, hidden))
    out["feature cosine"] = roc_auc(c.labels, pair_cosine(c.x, c.targets))
    out["cn"] = roc_auc(c.labels, structural_scores(edges_to_csr(edges, c.n), c.targets)["cn"])
    return {k: round(float(v), 3) for k, v in out.items()}


def cmd_floor50(c: Cora, args: argparse.Namespace) -> None:
    p = {q.name: q.default for q in pg.PARAMS}
    p.update(ppgsl_alpha=args.alpha, ppgsl_attack_epochs=args.n1, ppgsl_epochs=args.n2)
    start = time.time()
    learned = pg.learn(c.public, c.sens, c.x, c.n, pg.Params(p), 0)
    draw = np.random.default_rng(5).random(len(learned.weights))
    released = canonical_edges(learned.pairs[draw < learned.weights], c.n)
    print(f"alpha {args.alpha:g}, N1 {args.n1}: learned in {time.time() - start:.0f} s, "
          f"{len(released)} edges released", flush=True)  # fmt: skip
    print("  public graph (no defence):", gae_variants(c, c.public), flush=True)
    print("  PPGSL release:", gae_variants(c, released), f"{time.time() - start:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("grad", "learn", "floors", "floor50"))
    parser.add_argument("--alpha", type=float, default=0.005)
    parser.add_argument("--reduction", choices=("sum", "mean"), default="sum")
    parser.add_argument("--n1", type=int, default=100, help="surrogate epochs (paper: 500)")
    parser.add_argument("--n2", type=int, default=500)
    parser.add_argument("--mu", type=int, default=50)
    parser.add_argument("--project", action="store_true", help="clamp θ into [0, 1] each step")
    args = parser.parse_args()
    torch.set_num_threads(1)
    commands = {"grad": cmd_grad, "learn": cmd_learn, "floors": cmd_floors, "floor50": cmd_floor50}
    commands[args.command](Cora(), args)


if __name__ == "__main__":
    main()
