"""GAP: aggregation perturbation, edge level (central DP; Sajadmanesh, Shamsabadi, Bellet,
Gatica-Perez, "GAP: Differentially Private Graph Neural Networks with Aggregation
Perturbation", USENIX Security 2023).

The curator runs the three modules of the paper (§4) on the uploaded graph and releases a
model. Parameters: :mod:`.gap_params`; accounting: :mod:`.gap_privacy`; the proof
docs/privacy/gap.md.

1. **Encoder** (§4.1): an MLP d → hidden → embed → classes trained on the training nodes'
   features and labels alone (no edge is read: free at edge level). Its embedding layer's
   output, each row scaled to unit L2 norm, is H₀.
2. **Aggregation perturbation** (§4.2): K hops H_k = normalise(A·H_{k−1} + N(0, σ²I)), A the
   0/1 adjacency of the edges between uploaded nodes (sum aggregation, no self-loop). The only
   step that reads an edge; σ from the requested ε (:func:`.gap_privacy.calibrate_sigma`).
3. **Classification** (§4.3): an MLP on [H₀ ‖ H₁ ‖ … ‖ H_K] trained on the training labels:
   post-processing of the released aggregates and public data.

The release is the classes of the non-training nodes (a training node gets −1, as DPAR's
release: its raw features and label are never echoed as a prediction). torch is imported
inside functions (the registry lists this module without importing torch).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import progress
from ..base import CuratorView
from ..params import Params
from ..registry import register
from ..rng import stage_rng, stage_seed
from ..torch_env import auto_device, one_cpu_thread
from ..types import PrivacyReport, Release
from . import gap_privacy
from .base import CentralStrategy, UploadedGraph
from .gap_params import EDGE_PARAMS


class GapModel:
    """The released predictor: the classifier's weights and the class of every non-training
    node (−1 at training nodes)."""

    def __init__(self, weights: dict[str, np.ndarray], labels: np.ndarray) -> None:
        self.weights = weights
        self.labels = np.asarray(labels, dtype=np.int64)

    def predict(self, nodes: np.ndarray) -> np.ndarray:
        return self.labels[np.asarray(nodes, dtype=np.int64)]


def normalise_rows(h: np.ndarray) -> np.ndarray:
    """Each row scaled to unit L2 norm (a zero row stays zero)."""
    norms = np.linalg.norm(h, axis=1, keepdims=True)
    return h / np.where(norms > 0, norms, 1.0)


def noisy_sum(adj: sp.spmatrix, h: np.ndarray, sigma: float, rng: np.random.Generator):
    """One hop's released statistic A·H + N(0, σ²I) (before normalisation)."""
    return adj @ h + rng.normal(0.0, sigma, size=h.shape)


def perturbed_hops(
    adj: sp.spmatrix, h0: np.ndarray, hops: int, sigma: float, rng: np.random.Generator
) -> list[np.ndarray]:
    """[H₀, H₁, …, H_K]: each hop aggregates the previous *released* hop (§4.2)."""
    out = [normalise_rows(h0)]
    for _ in progress.steps(range(hops), "aggregation hop", total=hops):
        out.append(normalise_rows(noisy_sum(adj, out[-1], sigma, rng)))
    return out


def adjacency(edges: np.ndarray, n: int, uploaded: np.ndarray) -> sp.csr_matrix:
    """Symmetric 0/1 adjacency of the canonical edges whose endpoints both uploaded."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    e = e[uploaded[e[:, 0]] & uploaded[e[:, 1]] & (e[:, 0] != e[:, 1])]
    a = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.float64)
    return sp.csr_matrix(a)


def _mlp(dims: list[int], gen: Any, device: str) -> list[Any]:
    """Weights and biases of an MLP, uniform ±1/√fan_in (torch's default), from ``gen``."""
    import torch

    params = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:], strict=True):
        bound = fan_in**-0.5
        for shape in ((fan_in, fan_out), (fan_out,)):
            t = (torch.rand(shape, generator=gen, device=device) * 2 - 1) * bound
            params.append(t.requires_grad_())
    return params


def _forward(params: list[Any], x: Any, upto: int | None = None) -> Any:
    """The MLP's output (ReLU between layers); ``upto``: the first layers only, the last of
    them without its ReLU (an embedding of signed entries: a ReLU'd one can be all zero, and
    a zero row has no direction to normalise)."""
    import torch

    stop = len(params) // 2 if upto is None else upto
    for i in range(stop):
        x = x @ params[2 * i] + params[2 * i + 1]
        if i < stop - 1:
            x = torch.relu(x)
    return x


def _fit(
    params: list[Any], x: Any, y: Any, train: Any, epochs: int, lr: float, label: str = "epoch"
) -> None:
    """Full-batch Adam on the cross-entropy of the training rows (progress: ``label i/n``)."""
    import torch

    opt = torch.optim.Adam(params, lr=lr)
    for _ in progress.steps(range(epochs), label, total=epochs):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(_forward(params, x[train]), y[train])
        loss.backward()
        opt.step()


class GapRelease(CentralStrategy):
    """Both GAP strategies' ``release``: on the curator's device, with one CPU thread (small
    dense kernels: extra threads only spin-wait on a busy machine, torch_env); the strategy's
    ``_release`` does the work."""

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        device = auto_device(curator.device)
        with one_cpu_thread(device):
            return self._release(graph, curator, seed, device)

    def _release(
        self, graph: UploadedGraph, curator: CuratorView, seed: int, device: str
    ) -> Release:
        raise NotImplementedError


@register(
    "gap-edge",
    label="GAP-EDP",
    params=EDGE_PARAMS,
    summary="GAP (central, edge DP): MLP encoder, K Gaussian-perturbed aggregations, MLP "
    "classifier",
)
class GapEdge(GapRelease):
    """GAP at edge level (module docstring)."""

    name = "gap-edge"
    kind = "model"

    def __init__(self, **params: Any) -> None:
        p = {param.name: param.default for param in EDGE_PARAMS}
        p.update(params)
        self.p = Params(p)

    def sigma(self) -> float:
        """σ of every hop, calibrated from the request (:mod:`.gap_privacy`)."""
        return float(self.privacy_report().parts[0]["sigma"])

    def _release(
        self, graph: UploadedGraph, curator: CuratorView, seed: int, device: str
    ) -> Release:
        """The three modules (module docstring) on ``device``."""
        import torch

        p = self.p
        labels, train = curator.labels, curator.train_nodes
        if labels is None or train is None or len(train) == 0:
            raise ValueError(f"{self.name} trains on the curator's training labels; it has none")
        labels = np.asarray(labels, dtype=np.int64)
        train = np.unique(np.asarray(train, dtype=np.int64))
        train = train[labels[train] >= 0]
        if train.size == 0:
            raise ValueError(f"{self.name}: no training node carries a label")
        n = graph.num_nodes
        classes = int(labels.max()) + 1
        gen = torch.Generator(device=device)
        gen.manual_seed(stage_seed(seed, f"{self.name}/mlp"))
        x = torch.as_tensor(np.asarray(graph.x, dtype=np.float32), device=device)
        y = torch.as_tensor(np.where(labels >= 0, labels, 0), device=device)
        tr = torch.as_tensor(train, device=device)
        dims = [graph.num_features, p.gap_hidden, p.gap_embed, classes]
        encoder = _mlp(dims, gen, device)
        _fit(encoder, x, y, tr, p.gap_encoder_epochs, p.gap_lr, "encoder epoch")
        with torch.no_grad():
            h0 = _forward(encoder, x, upto=2).cpu().numpy().astype(np.float64)
        report = self.privacy_report()
        sigma = float(report.parts[0]["sigma"])
        adj = adjacency(graph.edges, n, np.asarray(graph.uploaded, dtype=bool))
        hops = perturbed_hops(adj, h0, p.gap_hops, sigma, stage_rng(seed, f"{self.name}/agg"))
        z = torch.as_tensor(np.concatenate(hops, axis=1), dtype=torch.float32, device=device)
        dims = [z.shape[1], p.gap_hidden, classes]
        classifier = _mlp(dims, gen, device)
        _fit(classifier, z, y, tr, p.gap_epochs, p.gap_lr, "classifier epoch")
        with torch.no_grad():
            pred = _forward(classifier, z).argmax(1).cpu().numpy()
        is_train = np.zeros(n, dtype=bool)
        is_train[np.asarray(curator.train_nodes, dtype=np.int64)] = True
        weights = {f"w{i}": t.detach().cpu().numpy() for i, t in enumerate(classifier)}
        model = GapModel(weights, np.where(is_train, -1, pred))
        stats = {
            "training_nodes": int(train.size),
            "aggregated_edges": int(adj.nnz // 2),
            "hops": int(p.gap_hops),
            "sigma": sigma,
        }
        return Release.of_model(model, n, report, stats)

    def privacy_report(self, num_features: int | None = None, **_: Any) -> PrivacyReport:
        """Edge-level (ε, δ) under add/remove of one undirected edge (docs/privacy/gap.md)."""
        return gap_privacy.privacy_report(self.name, self.p)
