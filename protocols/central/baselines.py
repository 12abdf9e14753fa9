"""The cheap graph-publishing baselines of PPGSL's comparison: the curator
perturbs the uploaded graph's edges and releases the result with the features unchanged.

One module for the family: the four share everything but the edge perturbation (the upload,
the consenting subgraph, the release with unchanged features, the stats), which is a dozen
lines each.

* ``edge-delete`` (no DP): delete round(r·|E|) uniformly chosen edges.
* ``edge-add`` (no DP): add round(r·|E|) uniformly chosen non-edges.
* ``edge-random`` (no DP; the paper's "Random", Yu et al.): both, the same count each.
* ``edgerand`` (edge-level ε-DP; LinkTeller's EdgeRand [E]): with s = 2/(e^ε+1), every
  unordered pair is replaced by a fair coin with probability s, else kept; so every pair flips
  with probability q = s/2 = 1/(e^ε+1) — randomized response on each adjacency entry, ε per
  edge. Drawn sparsely and exactly: each edge is dropped with probability q, and the number
  of non-edges turned into edges is Binomial(#non-edges, q), then that many distinct non-edges
  are drawn uniformly (the same law as one coin per pair).
* ``lapgraph`` (edge-level ε-DP; LinkTeller's LapGraph [E]): ε₁ = 0.01ε estimates the edge
  count T = |E| + K, K discrete Laplace of parameter ε₁ (LinkTeller's ⌊Lap(1/ε₁)⌋ made exact:
  a float Laplace rounded to an integer is not DP as implemented, see :mod:`..laplace`; the
  released graph's edge count is T), ε₂ = 0.99ε adds Lap(1/ε₂) to every upper-triangular entry
  of A,
  and the T largest noisy entries are the edges. Drawn sparsely and exactly: the m edge
  entries are drawn one by one; the non-edge entries are iid Laplace, so their top values are
  drawn from the top down in bands (t_{k+1}, t_k]: the count in a band given none above it is
  binomial, the values within it iid truncated Laplace, the pairs uniform distinct non-edges;
  bands are added until at least T entries lie above the last threshold.

Deletion and addition promise nothing: their reports say so (ε = ∞, no guarantee). EdgeRand's
and LapGraph's ε are dp-accounting's (randomized response; a discrete and a continuous Laplace
mechanism of sensitivity 1 composed), with the closed forms ε and ε₁ + ε₂ = ε beside them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import EPSILON, CuratorView
from ..graph import canonical_edges
from ..graph import sample_free_pairs as graph_sample_free_pairs
from ..laplace import MIN_EPSILON, DiscreteLaplace
from ..params import Param, Params, ProtocolParameterError
from ..registry import register
from ..rng import stage_rng
from ..types import PrivacyReport, Release
from .base import CentralStrategy, UploadedGraph

EDGE_RATIO = Param(
    "edge_ratio", float, 0.1,
    "r: edges deleted and/or non-edges added, as a share of the uploaded |E| "
    "(edge-delete: at most 1)",
    low=0.0,
)  # fmt: skip
EDGE_EPSILON = EPSILON.but(help="edge-level ε of the whole release (one edge added or removed)")
#: LapGraph's split of ε (LinkTeller's code): the edge count, then the entries.
LAPGRAPH_COUNT_SHARE = 0.01

#: Registered name → (label, whether it is DP).
VARIANTS = {
    "edge-delete": ("Random deletion", False),
    "edge-add": ("Random addition", False),
    "edge-random": ("Random", False),
    "edgerand": ("EdgeRand", True),
    "lapgraph": ("LapGraph", True),
}


def pair_keys(pairs: np.ndarray, n: int) -> np.ndarray:
    """One int64 key per canonical pair u < v: u·n + v."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0] * n + pairs[:, 1]


def sample_free_pairs(
    n: int, count: int, taken: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """:func:`ldpgraph.protocols.graph.sample_free_pairs` (shared with the evaluation's
    hidden non-edges), its shortage as a one-line parameter error."""
    try:
        return graph_sample_free_pairs(n, count, taken, rng)
    except ValueError as exc:
        raise ProtocolParameterError(str(exc)) from None


def uploaded_edges(graph: UploadedGraph, name: str) -> np.ndarray:
    """The canonical edges among the nodes that uploaded (a refusing node's links are not
    used), or a one-line error when nobody uploaded."""
    if not graph.uploaded.any():
        raise ValueError(
            f"{name}: no node uploaded its graph (a node uploads only if it trusts the curator: "
            "--trust-curator)"
        )
    edges = np.asarray(graph.edges, dtype=np.int64).reshape(-1, 2)
    edges = edges[graph.uploaded[edges[:, 0]] & graph.uploaded[edges[:, 1]]]
    return canonical_edges(edges, graph.num_nodes)


# --- the mechanisms (pure functions of the edges, n and a generator) --------------------------


def delete_edges(edges: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    keep = np.ones(len(edges), dtype=bool)
    keep[rng.choice(len(edges), size=min(count, len(edges)), replace=False)] = False
    return edges[keep]


def add_edges(edges: np.ndarray, n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    taken = np.sort(pair_keys(edges, n))
    new = sample_free_pairs(n, count, taken, rng)
    return canonical_edges(np.concatenate([edges, new]), n)


def flip_probability(epsilon: float) -> float:
    """EdgeRand's per-pair flip probability: s/2 with s = 2/(e^ε+1)."""
    return 1.0 / (math.exp(epsilon) + 1.0)


def edgerand(edges: np.ndarray, n: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Every unordered pair flipped independently with probability 1/(e^ε+1) (sparse, exact)."""
    q = flip_probability(epsilon)
    kept = edges[rng.random(len(edges)) >= q]
    non_edges = n * (n - 1) // 2 - len(edges)
    added = sample_free_pairs(n, int(rng.binomial(non_edges, q)), np.sort(pair_keys(edges, n)), rng)
    return canonical_edges(np.concatenate([kept, added]), n)


def _laplace_isf(p: np.ndarray, b: float) -> np.ndarray:
    """The x with P(L > x) = p (p in (0, 1))."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(p <= 0.5, -b * np.log(2.0 * np.minimum(p, 0.5)),
                        b * np.log(2.0 * (1.0 - np.maximum(p, 0.5))))  # fmt: skip


def lapgraph(edges: np.ndarray, n: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """LapGraph (sparse, exact): the T = |E| + ⌊Lap(1/ε₁)⌋ largest of A_ij + Lap(1/ε₂) over
    all pairs i < j (T clipped to [0, n(n−1)/2])."""
    eps1 = LAPGRAPH_COUNT_SHARE * epsilon
    total = n * (n - 1) // 2
    target = int(np.clip(DiscreteLaplace(eps1).perturb(len(edges), rng), 0, total))
    return noisy_top(edges, n, 1.0 / (epsilon - eps1), target, rng)


def noisy_top(
    edges: np.ndarray, n: int, b: float, target: int, rng: np.random.Generator
) -> np.ndarray:
    """The ``target`` pairs i < j with the largest A_ij + Lap(b), A the 0/1 adjacency of
    ``edges``, without drawing n² values (see the module docstring)."""
    total = n * (n - 1) // 2
    m = len(edges)
    if target <= 0:
        return np.zeros((0, 2), dtype=np.int64)
    edge_values = 1.0 + rng.laplace(0.0, b, size=m)
    free = total - m
    values = np.zeros(0)
    sf_hi = 0.0  # P(L > the last threshold): 0 above the first band
    want = float(target + 16)
    while True:
        sf_lo = min(1.0, max(2.0 * sf_hi, want / max(free, 1)))
        lo = -math.inf if sf_lo >= 1.0 else float(_laplace_isf(np.array(sf_lo), b))
        left = free - len(values)
        p_band = (sf_lo - sf_hi) / (1.0 - sf_hi) if sf_hi < 1.0 else 0.0
        count = int(rng.binomial(left, min(max(p_band, 0.0), 1.0))) if left > 0 else 0
        # iid within the band given below the last threshold: P(L > x) uniform on (sf_hi, sf_lo]
        band = _laplace_isf(sf_hi + (sf_lo - sf_hi) * (1.0 - rng.random(count)), b)
        values = np.concatenate([values, band])
        if len(values) + int((edge_values > lo).sum()) >= target or sf_lo >= 1.0:
            break
        sf_hi = sf_lo
        want *= 2.0
    pairs = sample_free_pairs(n, len(values), np.sort(pair_keys(edges, n)), rng)
    all_values = np.concatenate([edge_values, values])
    all_pairs = np.concatenate([edges, pairs])
    top = np.argsort(-all_values, kind="stable")[:target]
    return canonical_edges(all_pairs[top], n)


#: dp-accounting's Laplace PLD truncates its tails, so its ε at δ = 0 is ∞: LapGraph's report
#: states the closed form ε₁ + ε₂ and the accountant's ε at this δ beside it (a test holds them
#: within 1e-6).
LAPGRAPH_CHECK_DELTA = 1e-12


def lapgraph_epsilon(epsilon: float, delta: float = LAPGRAPH_CHECK_DELTA) -> float:
    """dp-accounting's ε at ``delta`` of LapGraph: the discrete Laplace of parameter ε₁ on |E|
    and Laplace(1/ε₂) on every entry, each of sensitivity 1 under one edge added or removed,
    composed (the closed form is ε₁ + ε₂ = ε at δ = 0)."""
    from dp_accounting import NeighboringRelation, dp_event, pld

    from ..accounting import PLD_DISCRETIZATION

    eps1 = LAPGRAPH_COUNT_SHARE * epsilon
    acc = pld.PLDAccountant(
        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=PLD_DISCRETIZATION,
    )
    acc.compose(dp_event.ComposedDpEvent([
        dp_event.DiscreteLaplaceDpEvent(eps1, 1),
        dp_event.LaplaceDpEvent(1.0 / (epsilon - eps1)),
    ]))  # fmt: skip
    return float(acc.get_epsilon(delta))


def edgerand_epsilon(epsilon: float) -> float:
    """dp-accounting's ε of EdgeRand: randomized response on the one pair an edge changes."""
    from ..accounting import pure_epsilon, rr_event

    return pure_epsilon([rr_event(epsilon)])


@register(
    "edge-delete", label="Random deletion", params=(EDGE_RATIO,),
    summary="Random edge deletion (central, no DP): drop r·|E| uniform edges",
)  # fmt: skip
@register(
    "edge-add", label="Random addition", params=(EDGE_RATIO,),
    summary="Random edge addition (central, no DP): add r·|E| uniform non-edges",
)  # fmt: skip
@register(
    "edge-random", label="Random", params=(EDGE_RATIO,),
    summary="Random (central, no DP): delete r·|E| edges and add as many non-edges",
)  # fmt: skip
@register(
    "edgerand", label="EdgeRand", params=(EDGE_EPSILON,),
    summary="EdgeRand (central, edge DP): randomized response on every adjacency entry",
)  # fmt: skip
@register(
    "lapgraph", label="LapGraph", params=(EDGE_EPSILON,),
    summary="LapGraph (central, edge DP): Laplace on every entry, top-T with a noisy T",
)  # fmt: skip
class EdgePerturbation(CentralStrategy):
    """The baselines (one class; the registered name chooses the perturbation)."""

    kind = "graph"

    def __init__(self, name: str = "edgerand", **params: Any) -> None:
        if name not in VARIANTS:
            raise ValueError(f"unknown edge perturbation {name!r}; one of {list(VARIANTS)}")
        self.name = name
        self.label, self.private = VARIANTS[name]
        self.privacy_model = self.privacy_model_of(name)
        defaults = {param.name: param.default for param in (EDGE_EPSILON, EDGE_RATIO)}
        self.p = Params({**defaults, **params})
        eps1 = LAPGRAPH_COUNT_SHARE * float(self.p.epsilon)
        if name == "lapgraph" and eps1 < MIN_EPSILON:
            raise ProtocolParameterError(
                f"lapgraph: the edge count's ε₁ = {eps1:.3g} (1 % of ε) is below the discrete "
                f"Laplace mechanism's minimum {MIN_EPSILON:g}: raise epsilon"
            )
        if name == "edge-delete" and self.p.edge_ratio > 1.0:
            raise ProtocolParameterError(
                f"edge-delete: edge_ratio must be in [0, 1] (a share of the edges), got "
                f"{self.p.edge_ratio!r}"
            )

    @classmethod
    def privacy_model_of(cls, name: str) -> str:
        # random deletion/addition: a defence without a guarantee, like PPGSL's
        return "central" if VARIANTS.get(name, ("", True))[1] else "empirical"

    @classmethod
    def from_params(cls, name: str, **params: Any) -> EdgePerturbation:
        return cls(name, **params)

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        if not self.private:
            return PrivacyReport.no_privacy(
                self.name,
                "raw graph to a trusted curator; random edge changes",
                f"no privacy guarantee: {self.label} perturbs edges at random (ε = ∞ per edge)",
                ("edge",),
                f"{self.label}: a heuristic baseline of PPGSL's comparison (Wu et al. 2025); "
                "no DP guarantee, only the empirical attack AUC measures its protection.",
            )
        eps = float(self.p.epsilon)
        if self.name == "edgerand":
            acc = edgerand_epsilon(eps)
            q = flip_probability(eps)
            mech = f"randomized response on every pair, flip probability {q:.4g}"
            part = {"part": "adjacency", "unit": "edge", "mechanism": mech, "epsilon": acc,
                    "epsilon_closed_form": eps, "delta": 0.0}  # fmt: skip
        else:
            acc = eps  # the closed form ε₁ + ε₂ (pure); the accountant's figure beside it
            eps1 = LAPGRAPH_COUNT_SHARE * eps
            mech = (f"discrete Laplace (parameter ε₁ = {eps1:.4g}) on |E|, Laplace(1/ε₂) on "
                    f"every entry (ε₂ = {eps - eps1:.4g}), top-T selection "
                    "(post-processing)")  # fmt: skip
            part = {"part": "adjacency", "unit": "edge", "mechanism": mech, "epsilon": acc,
                    "epsilon_closed_form": eps, "epsilon_count": eps1,
                    "epsilon_entries": eps - eps1, "delta": 0.0,
                    "epsilon_pld": lapgraph_epsilon(eps),
                    "epsilon_pld_delta": LAPGRAPH_CHECK_DELTA}  # fmt: skip
        return PrivacyReport(
            protocol=self.name, unit="edge", epsilon=acc, delta=0.0,
            accountant=("dp_accounting PLD (pure ε)" if self.name == "edgerand" else
                        "closed form ε₁ + ε₂ (dp_accounting PLD beside it)"),
            parts=[part],
            notes=[f"{self.label}: edge-level ε = {acc:.4g} (closed form {eps:g}); "
                   "central DP, the curator sees the raw uploaded graph."],
            headline=f"edge-level ε = {acc:.4g} (δ = 0, central: trusted curator)",
            unit_epsilons={"edge": acc},
        )  # fmt: skip

    def perturb(self, edges: np.ndarray, n: int, seed: int) -> np.ndarray:
        """The perturbed canonical edges of ``edges`` (canonical) on ``n`` nodes."""
        rng = stage_rng(seed, f"baseline/{self.name}")
        ratio = float(self.p.edge_ratio)
        count = int(round(ratio * len(edges)))
        eps = float(self.p.epsilon)
        if self.name == "edge-delete":
            return delete_edges(edges, count, rng)
        if self.name == "edge-add":
            return add_edges(edges, n, count, rng)
        if self.name == "edge-random":
            added = add_edges(edges, n, count, rng)
            new = np.setdiff1d(pair_keys(added, n), pair_keys(edges, n))
            kept = delete_edges(edges, count, rng)
            both = np.concatenate([kept, np.stack([new // n, new % n], axis=1)])
            return canonical_edges(both, n)
        if self.name == "edgerand":
            return edgerand(edges, n, eps, rng)
        return lapgraph(edges, n, eps, rng)

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        n = graph.num_nodes
        edges = uploaded_edges(graph, self.name)
        out = self.perturb(edges, n, seed)
        before, after = pair_keys(edges, n), pair_keys(out, n)
        kept = int(np.isin(after, before, assume_unique=True).sum())
        stats = {
            "uploaded_edges": len(edges),
            "released_edges": len(out),
            "kept_edges": kept,
            "deleted_edges": len(edges) - kept,
            "added_edges": len(out) - kept,
        }
        x = np.asarray(graph.x)
        return Release(edges=out, x=x, privacy=self.privacy_report(), stats=stats)
