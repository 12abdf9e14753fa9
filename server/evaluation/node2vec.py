"""node2vec (Grover & Leskovec 2016) on a release: the embedding of the ``attack`` metric's
N2V+sim and N2V+ML attacks (PPGSL's Table III, Wu et al. 2025; not a metric itself).

PyG's ``Node2Vec`` needs torch-cluster (or pyg-lib) for its walks, neither installable here, so
the walks are numpy's and the skip-gram torch's, both small and seeded:

* **Walks** (:func:`random_walks`): :data:`WALKS_PER_NODE` walks of :data:`WALK_LENGTH` steps
  from every node with a neighbour, all walkers advanced together. With return parameter ``p``
  and in-out parameter ``q`` a step from ``v`` (reached from ``t``) goes to a neighbour ``x`` of
  ``v`` with probability ∝ 1/p if x = t, 1 if x is a neighbour of t, 1/q otherwise (the paper's
  second-order walk), drawn exactly by rejection: propose a uniform neighbour, accept it with
  probability weight / max weight. p = q = 1 (the default) is the uniform walk.
  An isolated node starts no walk (it has no context to learn from).
* **Skip-gram** with negative sampling, one embedding table as PyG's: every pair (w_i, w_j) of
  a walk with 0 < j - i ≤ :data:`WINDOW` is a positive, pushed up by -log σ(z_u·z_v), and each
  positive has one negative, u against a uniform random node, pushed down by -log σ(-z_u·z_n).
  :data:`EPOCHS` pass(es) over fresh walks, shuffled minibatches of :data:`BATCH` pairs, Adam.

PyG's settings would be (dim 128, walk length 20, context size 10, 10 walks per node,
p = q = 1, one negative, SparseAdam lr 0.01, 100 epochs). All are kept but the last two: one
epoch (10 walks per node, ~3.9 M pairs on Cora) of dense Adam (lr 0.01, faster than SparseAdam
here). Measured on Cora with 20 % of the edges hidden, cosine AUC on the hidden links: 0.828
after one epoch, 0.824 after two, 0.818 after four (more passes fit the walks, not the links);
one epoch is a few seconds on one CPU thread. Above :data:`MAX_PAIRS` pairs an epoch takes a
random subset of the walks (large graphs). The table starts at N(0, 1/dim) (PyG's at N(0, 1)): the
first scores z_u·z_v are then near 0, not of order √dim.

Randomness: the walks and negatives from ``stage_rng(seed, "node2vec-*")``, the initial table
from ``stage_seed(seed, "node2vec")`` inside ``fork_rng``: the same seed gives the same
embedding (CPU, one thread unless told).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ldpgraph.protocols.graph import edges_to_csr
from ldpgraph.protocols.rng import stage_rng, stage_seed

from .base import EvaluationContext

DIM = 128
WALK_LENGTH = 20
WALKS_PER_NODE = 10
#: Forward context of a walk position (PyG's context_size 10 pairs a node with the next 9).
WINDOW = 9
EPOCHS = 1
BATCH = 1 << 14
LR = 0.01
#: Positive pairs per epoch at most: above it, a random subset of the walks is taken.
MAX_PAIRS = 1 << 22


def random_walks(
    adj: sp.csr_matrix,
    starts: np.ndarray,
    length: int,
    rng: np.random.Generator,
    p: float = 1.0,
    q: float = 1.0,
) -> np.ndarray:
    """``[len(starts), length + 1]`` node2vec walks on the symmetric adjacency ``adj``, one
    from each start (which must have a neighbour). See the module docstring for ``p``, ``q``.

    Args:
        adj: symmetric 0/1 CSR adjacency (sorted indices, no self-loops).
        starts: the start node of each walk.
        length: steps per walk.
        rng: the source of every choice.
        p: return parameter (weight 1/p of stepping back to the previous node).
        q: in-out parameter (weight 1/q of stepping to a node not adjacent to the previous one).
    """
    if p <= 0 or q <= 0:
        raise ValueError(f"node2vec needs p > 0 and q > 0, got p={p}, q={q}")
    adj = sp.csr_matrix(adj)
    adj.sort_indices()
    indptr, indices = adj.indptr.astype(np.int64), adj.indices.astype(np.int64)
    degree = np.diff(indptr)
    n = adj.shape[0]
    starts = np.asarray(starts, dtype=np.int64)
    if len(starts) and (degree[starts] == 0).any():
        raise ValueError("a node2vec walk cannot start at an isolated node")
    walks = np.empty((len(starts), length + 1), dtype=np.int64)
    walks[:, 0] = starts
    # Directed edge keys u·n + v, sorted (CSR rows are sorted): "x is a neighbour of t".
    keys = np.repeat(np.arange(n, dtype=np.int64), degree) * n + indices
    weights = np.array([1.0 / p, 1.0, 1.0 / q])
    top = weights.max()
    uniform = p == 1.0 and q == 1.0

    def propose(cur: np.ndarray) -> np.ndarray:
        return indices[indptr[cur] + (rng.random(len(cur)) * degree[cur]).astype(np.int64)]

    for t in range(1, length + 1):
        cur = walks[:, t - 1]
        if t == 1 or uniform:
            walks[:, t] = propose(cur)
            continue
        prev = walks[:, t - 2]
        nxt = np.empty(len(cur), dtype=np.int64)
        pending = np.arange(len(cur))
        while len(pending):
            cand = propose(cur[pending])
            back = prev[pending]
            edge = back * n + cand
            at = np.minimum(np.searchsorted(keys, edge), len(keys) - 1)
            kind = np.where(cand == back, 0, np.where(keys[at] == edge, 1, 2))
            accept = rng.random(len(pending)) * top < weights[kind]
            nxt[pending[accept]] = cand[accept]
            pending = pending[~accept]
        walks[:, t] = nxt
    return walks


def walk_pairs(walks: np.ndarray, window: int) -> np.ndarray:
    """Every ``(w_i, w_j)`` of each walk with ``0 < j - i <= window``, as ``[k, 2]``."""
    steps = walks.shape[1]
    parts = [
        np.stack([walks[:, : steps - j].ravel(), walks[:, j:].ravel()], axis=1)
        for j in range(1, min(window, steps - 1) + 1)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)


def node2vec_embedding(
    edges: np.ndarray,
    num_nodes: int,
    seed: int,
    *,
    p: float = 1.0,
    q: float = 1.0,
    dim: int = DIM,
    epochs: int = EPOCHS,
    num_threads: int | None = None,
) -> np.ndarray:
    """The ``[num_nodes, dim]`` float32 node2vec embedding of the graph ``edges`` (canonical
    ``[m, 2]``); all zeros without edges. CPU, one thread unless told.

    Args:
        edges: the release's undirected edges.
        num_nodes: node count (isolated nodes keep their initial vector, moved only as
            negatives).
        seed: run seed (walks, negatives, initial table).
        p: node2vec return parameter.
        q: node2vec in-out parameter.
        dim: embedding width.
        epochs: passes over fresh walks.
        num_threads: torch CPU threads (None: one).
    """
    # Long on purpose: one training loop whose walk, negative and torch draws must run in
    # this order (the seeded tests hold the embedding); helpers would only pass its state.
    import torch
    import torch.nn.functional as F

    from ldpgraph.protocols.torch_env import cpu_threads

    n = int(num_nodes)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) == 0:
        return np.zeros((n, dim), dtype=np.float32)
    adj = edges_to_csr(edges, n)
    starts = np.tile(np.flatnonzero(np.diff(adj.indptr) > 0), WALKS_PER_NODE)
    walk_rng = stage_rng(seed, "node2vec-walks")
    per_walk = len(walk_pairs(np.zeros((1, WALK_LENGTH + 1), dtype=np.int64), WINDOW))
    walks_per_epoch = min(len(starts), max(1, MAX_PAIRS // per_walk))
    neg_rng = stage_rng(seed, "node2vec-negatives")
    with cpu_threads(num_threads or 1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(stage_seed(seed, "node2vec"))
        table = torch.nn.Embedding(n, dim)
        torch.nn.init.normal_(table.weight, std=1.0 / np.sqrt(dim))
        optimizer = torch.optim.Adam(table.parameters(), lr=LR)
        for _ in range(epochs):
            chosen = walk_rng.permutation(starts)[:walks_per_epoch]
            walks = random_walks(adj, chosen, WALK_LENGTH, walk_rng, p, q)
            pairs = walk_pairs(walks, WINDOW)
            pairs = pairs[walk_rng.permutation(len(pairs))]
            negatives = neg_rng.integers(0, n, size=len(pairs))
            pairs_t = torch.from_numpy(pairs)
            neg_t = torch.from_numpy(negatives)
            for start in range(0, len(pairs), BATCH):
                batch = pairs_t[start : start + BATCH]
                u = table(batch[:, 0])
                pos = (u * table(batch[:, 1])).sum(dim=1)
                neg = (u * table(neg_t[start : start + BATCH])).sum(dim=1)
                loss = F.softplus(-pos).mean() + F.softplus(neg).mean()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        return table.weight.detach().numpy().astype(np.float32).copy()


def release_node2vec(ctx: EvaluationContext) -> np.ndarray:
    """The node2vec embedding of ``ctx.release``, trained once per evaluation (kept in
    ``ctx.cache``: both target sets and both N2V attacks use it)."""
    if "node2vec" not in ctx.cache:
        release = ctx.release
        ctx.cache["node2vec"] = node2vec_embedding(
            release.edges, release.num_nodes, ctx.seed, num_threads=ctx.num_threads
        )
    return ctx.cache["node2vec"]
