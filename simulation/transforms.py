"""The local mechanisms as PyG transforms, for users who simulate without the harness::

    import torch_geometric.transforms as T
    from ldpgraph.transforms import OneBitFeatures, RandomizedResponse
    private = T.Compose([RandomizedResponse(4.0), OneBitFeatures(4.0)])(data)

Each node perturbs only its own row, with its own random stream, exactly as a client of the
harness does: :class:`RandomizedResponse` flips every bit of each node's adjacency row with
probability 1/(e^ε+1) (Warner's randomized response) and the curator combines the two
endpoints' reports of a pair; :class:`OneBitFeatures` reports each feature through the 1-bit
mechanism (Ding, Kulkarni, Yekhanin, NeurIPS 2017). :class:`LocalRelease` runs a whole
protocol (HoGS and its baselines) through :func:`ldpgraph.release`.

``seed=None`` draws from OS entropy (a private release); an integer makes the transform
replayable (tests, papers), which a private release must not be. The privacy each spends is
attached as ``data.privacy`` (a list, one entry per transform applied).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
from torch_geometric.transforms import BaseTransform

from ldpgraph.protocols.accounting import pure_epsilon, rr_event
from ldpgraph.protocols.mechanisms import OneBit
from ldpgraph.protocols.mechanisms import RandomizedResponse as Warner
from ldpgraph.protocols.rng import node_rng

from .convert import to_graph

#: Purpose codes of the transforms' node streams (apart from the protocols' own).
_RR_STREAM, _FEATURE_STREAM = 101, 102


def _streams(seed: int | None, n: int, purpose: int) -> list[np.random.Generator]:
    if seed is None:
        return [np.random.default_rng(s) for s in np.random.SeedSequence().spawn(n)]
    return [node_rng(seed, v, 0, purpose) for v in range(n)]


def _note(data: Any, entry: dict[str, Any]) -> None:
    data.privacy = [*list(getattr(data, "privacy", None) or []), entry]


class RandomizedResponse(BaseTransform):
    """Randomized response on every node's adjacency row.

    Args:
        epsilon: ε per adjacency bit (each bit flips with probability 1/(e^ε+1)).
        combine: how the curator turns the two reports of a pair into an edge: ``or`` (either
            endpoint reports it) or ``and`` (both do).
        seed: None for OS entropy; an integer for a replayable (not private) run.
    """

    def __init__(self, epsilon: float, combine: str = "or", seed: int | None = None) -> None:
        if combine not in ("or", "and"):
            raise ValueError(f"combine must be 'or' or 'and', got {combine!r}")
        self.mechanism = Warner(float(epsilon))
        self.combine = combine
        self.seed = seed

    def forward(self, data: Any) -> Any:
        import torch

        g = to_graph(data)
        n = g.num_nodes
        adj = g.adjacency()
        pairs = []
        for v, rng in enumerate(_streams(self.seed, n, _RR_STREAM)):
            row = self.mechanism.perturb_row(
                adj.indices[adj.indptr[v] : adj.indptr[v + 1]], n, rng, v
            )
            pairs.append(np.stack([np.full(row.shape[0], v), row.astype(np.int64)], axis=1))
        reported = np.concatenate(pairs) if pairs else np.zeros((0, 2), dtype=np.int64)
        lo, hi = reported.min(axis=1), reported.max(axis=1)
        keys, counts = np.unique(lo * n + hi, return_counts=True)
        keys = keys[counts >= (2 if self.combine == "and" else 1)]
        edges = np.stack([keys // n, keys % n], axis=1)
        both = np.concatenate([edges, edges[:, ::-1]]).T if len(edges) else np.zeros((2, 0))
        data.edge_index = torch.as_tensor(both.astype(np.int64))
        if getattr(data, "edge_weight", None) is not None:
            data.edge_weight = None
        eps = self.mechanism.epsilon
        _note(data, {
            "mechanism": "randomized-response", "unit": "adjacency bit",
            "epsilon": pure_epsilon([rr_event(eps)]), "edge_epsilon": 2 * eps,
            "replayable": self.seed is not None,
        })  # fmt: skip
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.mechanism.epsilon}, combine={self.combine!r})"


class OneBitFeatures(BaseTransform):
    """The 1-bit mechanism on every node's features (each in the public ``domain``).

    Args:
        epsilon: ε per feature (one feature vector of d entries costs d·ε).
        domain: the public range [α, β] of every feature; None: [0, 1].
        debias: replace each bit by its unbiased estimate of the feature (post-processing).
        seed: None for OS entropy; an integer for a replayable (not private) run.
    """

    def __init__(
        self,
        epsilon: float,
        domain: tuple[float, float] | None = None,
        debias: bool = False,
        seed: int | None = None,
    ) -> None:
        self.mechanism = OneBit(float(epsilon), tuple(domain or (0.0, 1.0)))
        self.debias = debias
        self.seed = seed

    def forward(self, data: Any) -> Any:
        import torch

        x = data.x.detach().cpu().numpy().astype(np.float64)
        bits = np.empty(x.shape, dtype=np.uint8)
        for v, rng in enumerate(_streams(self.seed, x.shape[0], _FEATURE_STREAM)):
            bits[v] = self.mechanism.perturb(x[v], rng)
        out = bits.astype(np.float32)
        if self.debias:
            e = math.exp(self.mechanism.epsilon)
            lo, hi = self.mechanism.domain
            out = ((out - 1.0 / (e + 1.0)) * (e + 1.0) / (e - 1.0) * (hi - lo) + lo).astype(
                np.float32
            )
        data.x = torch.as_tensor(out)
        eps = self.mechanism.epsilon
        _note(data, {
            "mechanism": "1-bit", "unit": "feature", "epsilon": pure_epsilon([rr_event(eps)]),
            "vector_epsilon": x.shape[1] * eps, "replayable": self.seed is not None,
        })  # fmt: skip
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.mechanism.epsilon})"


class LocalRelease(BaseTransform):
    """A whole local protocol (``hogs``, ``rr``, ``blink-hard``, …) as a transform: the nodes
    report, the curator reconstructs, the release replaces the graph (labels are kept).

    Args:
        protocol: a protocol of ``ldpgraph protocols``.
        epsilon: the run's ε (the protocol splits it as it declares).
        seed: None for OS entropy; an integer for a replayable (not private) run.
        **settings: the protocol's parameters (``feature_share=0.2``).
    """

    def __init__(
        self, protocol: str = "hogs", epsilon: float = 8.0, seed: int | None = None, **settings: Any
    ) -> None:
        self.protocol, self.epsilon, self.seed, self.settings = protocol, epsilon, seed, settings

    def forward(self, data: Any) -> Any:
        from .api import release

        out = release(data, self.protocol, self.epsilon, seed=self.seed, **self.settings)
        y = getattr(data, "y", None)
        result = copy.copy(out)
        if y is not None:
            result.y = y
        return result

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.protocol!r}, epsilon={self.epsilon})"
