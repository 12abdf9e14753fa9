"""SEAL-lite: a subgraph link classifier (after Zhang & Chen 2018) trained on a release, the
``attack`` metric's ``seal`` attack (PPGSL's Table III, Wu et al. 2025; not a metric itself).

What SEAL is in the paper, kept here: for a pair (x, y) take the enclosing subgraph of its
**2-hop** neighbourhoods in the published graph, label every node by Double-Radius Node
Labelling (DRNL: its distances to x without y and to y without x), **no node attributes** (the
labels are the only input), and train a GNN to tell links from non-links on these subgraphs.
The link x–y itself is always left out of its own subgraph (SEAL's rule: a training positive
would otherwise show its answer; a target is scored the same way whether or not the release
has it). The training set is the release's edges against as many of its non-edges, none of them
a pair the attack will score (:func:`~.holdout.release_training_pairs`), at most
:data:`TRAIN_PAIRS` positives.

PPGSL's paper gives no settings for SEAL; PyG's ``seal_link_pred`` example uses DGCNN, 3
layers of 32, sort-pooling k = 0.6, Adam lr 1e-4, ~50 epochs. This is lighter, to keep
Cora within a minute on a loaded CPU:

* at most :data:`MAX_NODES_PER_HOP` nodes per hop (a seeded uniform subset above it; SEAL's
  own ``max_nodes_per_hop`` option), so a hub does not pull in half the graph;
* the GNN is three GCN layers of :data:`HIDDEN` (ReLU) over a learned embedding of the DRNL
  label (labels above :data:`MAX_LABEL` share one bucket); the readout, instead of DGCNN's
  sort-pooling and 1-D convolutions, is the centre nodes' product h_x ⊙ h_y beside the mean
  over the subgraph, of every layer's output concatenated, then a 2-layer MLP;
* :data:`EPOCHS` epochs of Adam at lr :data:`LR` on minibatches of :data:`BATCH` subgraphs.

Measured on Cora with 20 % of the edges hidden (2-core machine, loaded): hidden-link AUC 0.912
to 0.917 for 5 to 15 epochs and 50 or 100 nodes per hop (the settings here: 0.915), 15-25 s,
about half of it extracting the 6000 training subgraphs (~1.2 M adjacency entries).

Randomness: the training pairs and the hop subsets from ``stage_rng(seed, "seal-*")``, the
weights and batch order from ``stage_seed(seed, "seal")`` inside ``fork_rng``. CPU, one thread
unless told (the subgraphs are small; a GPU would mostly wait for the extraction).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ldpgraph.protocols.graph import edges_to_csr
from ldpgraph.protocols.rng import stage_rng, stage_seed

from .holdout import release_training_pairs

HOPS = 2
MAX_NODES_PER_HOP = 100
MAX_LABEL = 40
HIDDEN = 32
LAYERS = 3
EPOCHS = 10
BATCH = 128
LR = 1e-3
#: Training positives at most (as many negatives).
TRAIN_PAIRS = 3000
#: Adjacency entries (self-loops included) of all training subgraphs at most: on a dense
#: release the training set stops there (Cora's 6000 subgraphs hold 1.2 M).
TRAIN_ENTRIES = 4_000_000
#: Target pairs extracted and scored at once.
SCORE_CHUNK = 512


@dataclass
class Subgraphs:
    """A batch-ready union of enclosing subgraphs: per subgraph its node count and, flat,
    its nodes' DRNL labels and its symmetric-normalised adjacency with self-loops (local
    indices); the centres x, y are each subgraph's nodes 0 and 1."""

    sizes: np.ndarray
    labels: np.ndarray
    rows: list[np.ndarray]
    cols: list[np.ndarray]
    vals: list[np.ndarray]


def _gather(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The concatenated CSR rows of ``nodes`` (their neighbours, with repeats)."""
    begin = indptr[nodes]
    counts = indptr[nodes + 1] - begin
    ends = np.cumsum(counts)
    if len(ends) == 0 or ends[-1] == 0:
        return np.zeros(0, dtype=np.int64)
    return indices[np.repeat(begin - (ends - counts), counts) + np.arange(ends[-1])]


def _distances(dense: np.ndarray, source: int, blocked: int) -> np.ndarray:
    """Hop distances from ``source`` in the small graph of boolean adjacency ``dense`` on
    paths that avoid node ``blocked`` (inf where unreachable; ``blocked`` itself inf)."""
    k = dense.shape[0]
    dist = np.full(k, np.inf)
    dist[source] = 0
    seen = np.zeros(k, dtype=bool)
    seen[[source, blocked]] = True
    frontier = seen.copy()
    frontier[blocked] = False
    level = 0
    while True:
        frontier = dense[frontier].any(axis=0) & ~seen
        if not frontier.any():
            return dist
        level += 1
        dist[frontier] = level
        seen |= frontier


def drnl(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """DRNL labels from each node's distance to x (without y) and to y (without x), centres
    being nodes 0 and 1: 1 for the centres, 0 where a node cannot reach both, otherwise
    1 + min(dx, dy) + (d // 2)(d // 2 + d % 2 − 1) with d = dx + dy."""
    d = dx + dy
    with np.errstate(invalid="ignore"):
        half, odd = d // 2, d % 2
        z = 1 + np.minimum(dx, dy) + half * (half + odd - 1)
    z = np.where(np.isfinite(z), z, 0).astype(np.int64)
    z[:2] = 1
    return z


def enclosing_subgraphs(
    adj: sp.csr_matrix,
    pairs: np.ndarray,
    rng: np.random.Generator,
    budget: int | None = None,
) -> Subgraphs:
    """The :data:`HOPS`-hop enclosing subgraph of every pair in the graph ``adj`` (the pair's
    own link removed), DRNL-labelled, at most :data:`MAX_NODES_PER_HOP` new nodes per hop.

    Args:
        adj: the release's symmetric CSR adjacency.
        pairs: ``[k, 2]`` centre pairs.
        rng: draws the hop subsets above the cap.
        budget: stop once the subgraphs hold this many adjacency entries (the first pairs'
            subgraphs are returned; None: every pair's).
    """
    indptr = adj.indptr.astype(np.int64)
    indices = adj.indices.astype(np.int64)
    local = np.full(adj.shape[0], -1, dtype=np.int64)
    sizes = np.zeros(len(pairs), dtype=np.int64)
    labels, rows, cols, vals = [], [], [], []
    entries = 0
    for i, (x, y) in enumerate(np.asarray(pairs, dtype=np.int64)):
        if budget is not None and entries >= budget:
            sizes = sizes[:i]
            break
        nodes = [np.array([x, y])]
        seen = nodes[0]
        frontier = nodes[0]
        for _ in range(HOPS):
            nb = np.setdiff1d(_gather(indptr, indices, frontier), seen)
            if len(nb) > MAX_NODES_PER_HOP:
                nb = np.sort(rng.choice(nb, MAX_NODES_PER_HOP, replace=False))
            if len(nb) == 0:
                break
            nodes.append(nb)
            seen = np.concatenate([seen, nb])
            frontier = nb
        order = np.concatenate(nodes)
        k = len(order)
        local[order] = np.arange(k)
        row = np.repeat(np.arange(k), indptr[order + 1] - indptr[order])
        col = local[_gather(indptr, indices, order)]
        local[order] = -1
        dense = np.zeros((k, k), dtype=bool)
        dense[row[col >= 0], col[col >= 0]] = True
        dense[0, 1] = dense[1, 0] = False  # the target link is never in its own subgraph
        labels.append(drnl(_distances(dense, 0, 1), _distances(dense, 1, 0)))
        dense[np.arange(k), np.arange(k)] = True  # GCN's self-loops
        inv = 1.0 / np.sqrt(dense.sum(axis=1))
        row, col = np.nonzero(dense)  # row-major: a CSR order
        sizes[i] = k
        rows.append(row)
        cols.append(col)
        vals.append((inv[row] * inv[col]).astype(np.float32))
        entries += len(row)
    flat = np.concatenate(labels) if labels else np.zeros(0, dtype=np.int64)
    return Subgraphs(sizes, flat, rows, cols, vals)


def _batches(subs: Subgraphs, members: list[np.ndarray]) -> list[dict[str, Any]]:
    """Torch tensors for each batch of subgraph indices: the block-diagonal normalised
    adjacency (sparse CSR), the clamped labels, each node's subgraph and the centres."""
    import torch

    starts = np.concatenate([[0], np.cumsum(subs.sizes)])
    out = []
    for idx in members:
        offsets = np.concatenate([[0], np.cumsum(subs.sizes[idx])])
        rows = np.concatenate([subs.rows[j] + o for j, o in zip(idx, offsets, strict=False)])
        cols = np.concatenate([subs.cols[j] + o for j, o in zip(idx, offsets, strict=False)])
        vals = np.concatenate([subs.vals[j] for j in idx])
        total = int(offsets[-1])
        crow = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=total))])
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ss]parse.*", category=UserWarning)
            adj = torch.sparse_csr_tensor(
                torch.from_numpy(crow),
                torch.from_numpy(cols),
                torch.from_numpy(vals),
                size=(total, total),
            )
        labels = np.concatenate([subs.labels[starts[j] : starts[j + 1]] for j in idx])
        out.append(
            {
                "adj": adj,
                "labels": torch.from_numpy(np.minimum(labels, MAX_LABEL)),
                "graph": torch.from_numpy(np.repeat(np.arange(len(idx)), subs.sizes[idx])),
                "x": torch.from_numpy(offsets[:-1]),
                "count": len(idx),
            }
        )
    return out


def _model() -> Any:
    import torch
    from torch import nn

    from ldpgraph.server.models import symmetric_spmm

    class SealLite(nn.Module):
        """DRNL-label embedding, GCN layers, centre-product + mean readout, MLP."""

        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(MAX_LABEL + 1, HIDDEN)
            self.layers = nn.ModuleList([nn.Linear(HIDDEN, HIDDEN) for _ in range(LAYERS)])
            width = HIDDEN * LAYERS
            self.head = nn.Sequential(nn.Linear(2 * width, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))

        def forward(self, b: dict[str, Any]) -> torch.Tensor:
            h = self.embed(b["labels"])
            outs = []
            for layer in self.layers:
                h = symmetric_spmm(b["adj"], layer(h)).relu()
                outs.append(h)
            h = torch.cat(outs, dim=1)
            x, y = b["x"], b["x"] + 1
            mean = torch.zeros(b["count"], h.shape[1]).index_add_(0, b["graph"], h)
            mean = mean / torch.bincount(b["graph"], minlength=b["count"])[:, None]
            return self.head(torch.cat([h[x] * h[y], mean], dim=1)).squeeze(1)

    return SealLite()


class SealAttack:
    """SEAL-lite trained once on a release (see the module docstring); :meth:`scores` ranks
    any pairs of it."""

    def __init__(
        self,
        edges: np.ndarray,
        num_nodes: int,
        exclude: np.ndarray,
        seed: int,
        num_threads: int | None = None,
    ) -> None:
        """Train on the release ``edges`` (``num_nodes`` nodes), never on the ``exclude``
        pairs.

        Args:
            edges: the release's canonical edges.
            num_nodes: node count.
            exclude: every pair the caller will score.
            seed: run seed.
            num_threads: torch CPU threads (None: one).
        """
        import torch
        import torch.nn.functional as F

        from ldpgraph.protocols.torch_env import cpu_threads as _cpu_threads

        self.adj = edges_to_csr(np.asarray(edges, dtype=np.int64).reshape(-1, 2), num_nodes)
        self.rng = stage_rng(seed, "seal-subgraphs")
        self.num_threads = num_threads or 1
        self.model: Any = None
        rng = stage_rng(seed, "seal-train")
        train, labels = release_training_pairs(edges, num_nodes, exclude, TRAIN_PAIRS, rng)
        mixed = rng.permutation(len(train))  # a budget cut keeps both classes
        train, labels = train[mixed], labels[mixed]
        subs = enclosing_subgraphs(self.adj, train, self.rng, budget=TRAIN_ENTRIES)
        labels = labels[: len(subs.sizes)]
        self.train_pairs = len(labels)
        if len(np.unique(labels)) < 2:
            return
        with _cpu_threads(self.num_threads), torch.random.fork_rng(devices=[]):
            torch.manual_seed(stage_seed(seed, "seal"))
            order = torch.randperm(len(labels)).numpy()
            members = [order[i : i + BATCH] for i in range(0, len(order), BATCH)]
            batches = _batches(subs, members)
            targets = [torch.as_tensor(labels[m], dtype=torch.float32) for m in members]
            model = _model()
            optimizer = torch.optim.Adam(model.parameters(), lr=LR)
            for _ in range(EPOCHS):
                for i in torch.randperm(len(batches)).tolist():
                    optimizer.zero_grad(set_to_none=True)
                    loss = F.binary_cross_entropy_with_logits(model(batches[i]), targets[i])
                    loss.backward()
                    optimizer.step()
        self.model = model.eval()

    def scores(self, pairs: np.ndarray) -> np.ndarray:
        """The trained model's logit for every pair (all zeros if there was nothing to train
        on), extracted and scored :data:`SCORE_CHUNK` pairs at a time."""
        import torch

        from ldpgraph.protocols.torch_env import cpu_threads as _cpu_threads

        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        if self.model is None:
            return np.zeros(len(pairs))
        out = np.zeros(len(pairs))
        with _cpu_threads(self.num_threads), torch.no_grad():
            for start in range(0, len(pairs), SCORE_CHUNK):
                chunk = pairs[start : start + SCORE_CHUNK]
                subs = enclosing_subgraphs(self.adj, chunk, self.rng)
                (batch,) = _batches(subs, [np.arange(len(chunk))])
                out[start : start + len(chunk)] = self.model(batch).numpy()
        return out
