"""Synthetic homophilous graphs: a stochastic block model with class-correlated binary
features, generated from the run seed (no files)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.rng import stage_rng
from ldpgraph.protocols.sorting import union_ints

from .info import DatasetError, DatasetInfo, coerce_param

SYNTHETIC_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "n": 1000,
        "classes": 5,
        "avg_degree": 8.0,
        "homophily": 0.8,
        "d": 500,
        "feature_density": 0.05,
        "feature_signal": 0.7,
        "seed": 0,
    }
)

#: Largest fraction of the possible intra- or inter-class pairs the sparse sampler will fill.
_MAX_FILL = 0.5
_FEATURE_CHUNK = 8192


def _sample_unique_keys(
    draw: Callable[[int], np.ndarray], target: int, rng: np.random.Generator
) -> np.ndarray:
    """Draw edge keys until ``target`` distinct ones exist, then keep a uniform subset."""
    keys = np.zeros(0, dtype=np.int64)
    while keys.size < target:
        need = target - keys.size
        keys = union_ints(keys, draw(need + need // 8 + 16))
    if keys.size > target:
        keys = np.sort(rng.choice(keys, size=target, replace=False))
    return keys


def synthetic_graph(
    n: int = 1000,
    classes: int = 5,
    avg_degree: float = 8.0,
    homophily: float = 0.8,
    d: int = 500,
    feature_density: float = 0.05,
    feature_signal: float = 0.7,
    seed: int = 0,
) -> Graph:
    """A homophilous stochastic block model with class-correlated binary features.

    Sparse and near-linear (no n x n matrix): the number of intra-class edges is
    Binomial(round(n * avg_degree / 2), homophily), endpoints are uniform within a class (intra)
    or over pairs from different classes (inter), so the fraction of intra-class edges is exactly
    the drawn one. A node's expected number of 1-features is ``feature_density * d``; a fraction
    ``feature_signal`` of them fall in its class's block of columns and the rest uniformly.
    """
    params = validate_synthetic(
        {
            "n": n,
            "classes": classes,
            "avg_degree": avg_degree,
            "homophily": homophily,
            "d": d,
            "feature_density": feature_density,
            "feature_signal": feature_signal,
            "seed": seed,
        }
    )
    n, classes, d, seed = params["n"], params["classes"], params["d"], params["seed"]
    rho, sig = params["feature_density"], params["feature_signal"]
    rng = stage_rng(seed, "synthetic")

    y = rng.permutation(np.arange(n, dtype=np.int64) % classes)
    order = np.argsort(y, kind="stable")  # nodes grouped by class
    sizes = np.bincount(y, minlength=classes).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    intra_pairs = sizes * (sizes - 1) // 2
    inter_w = sizes * (n - sizes)  # ordered (u in c, v not in c) pairs

    total = int(round(n * params["avg_degree"] / 2))
    m_in = int(rng.binomial(total, params["homophily"])) if total else 0
    m_in = min(m_in, int(_MAX_FILL * intra_pairs.sum()))
    m_out = min(total - m_in, int(_MAX_FILL * inter_w.sum() // 2))

    def keys(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.minimum(u, v) * n + np.maximum(u, v)

    def draw_intra(k: int) -> np.ndarray:
        c = rng.choice(classes, size=k, p=intra_pairs / intra_pairs.sum())
        s = sizes[c]
        a = rng.integers(0, s)
        b = rng.integers(0, s - 1)
        b += b >= a
        return keys(order[offsets[c] + a], order[offsets[c] + b])

    def draw_inter(k: int) -> np.ndarray:
        c = rng.choice(classes, size=k, p=inter_w / inter_w.sum())
        u = order[offsets[c] + rng.integers(0, sizes[c])]
        r = rng.integers(0, n - sizes[c])
        v = order[r + sizes[c] * (r >= offsets[c])]
        return keys(u, v)

    parts = []
    if m_in:
        parts.append(_sample_unique_keys(draw_intra, m_in, rng))
    if m_out:
        parts.append(_sample_unique_keys(draw_inter, m_out, rng))
    key = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    edges = np.stack([key // n, key % n], axis=1).astype(np.int64)

    x = _class_features(rng, y, classes, d, rho, sig)
    name = "synthetic"
    meta = {"params": dict(params), "feature_domain_public": True}
    return Graph(name=name, edges=edges, x=x, y=y, feature_domain=(0.0, 1.0), meta=meta)


def _class_features(
    rng: np.random.Generator, y: np.ndarray, classes: int, d: int, rho: float, sig: float
) -> np.ndarray:
    """Binary features: per-class Bernoulli rates, p_out everywhere plus extra mass on the
    class's own block of columns, so the expected density is ``rho`` and a fraction ``sig`` of
    the 1s come from the block. Drawn in row chunks (bounded float32 scratch)."""
    n = y.shape[0]
    blocks = np.array_split(np.arange(d), classes)
    prob = np.full((classes, d), rho * (1.0 - sig), dtype=np.float32)
    for c, cols in enumerate(blocks):
        prob[c, cols] = rho * (sig * d / cols.size + 1.0 - sig)
    x = np.empty((n, d), dtype=np.uint8)
    for start in range(0, n, _FEATURE_CHUNK):
        stop = min(start + _FEATURE_CHUNK, n)
        u = rng.random((stop - start, d), dtype=np.float32)
        np.less(u, prob[y[start:stop]], out=x[start:stop], casting="unsafe")
    return x


#: Size bounds of synthetic graphs (10^5 nodes at d = 500 already take 3.7 GB here).
SYNTHETIC_MAX_NODES = 10_000_000
SYNTHETIC_MAX_ENTRIES = 1_000_000_000


def validate_synthetic(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters typed and checked against the generator's limits (size, density)."""
    p = {k: coerce_param("synthetic", k, v, SYNTHETIC_DEFAULTS[k]) for k, v in params.items()}
    checks = [
        (p["n"] >= 2, "n must be >= 2"),
        (2 <= p["classes"] <= p["n"], "classes must be between 2 and n"),
        (p["avg_degree"] >= 0, "avg_degree must be >= 0"),
        (0.0 <= p["homophily"] <= 1.0, "homophily must be in [0, 1]"),
        (p["d"] >= p["classes"], "d must be >= classes (each class needs a block of columns)"),
        (0.0 <= p["feature_density"] <= 1.0, "feature_density must be in [0, 1]"),
        (0.0 <= p["feature_signal"] <= 1.0, "feature_signal must be in [0, 1]"),
        (p["seed"] >= 0, "seed must be >= 0"),
    ]
    for ok, msg in checks:
        if not ok:
            raise DatasetError(f"synthetic: {msg}")
    if p["n"] > SYNTHETIC_MAX_NODES:
        raise DatasetError(f"synthetic: n must be at most {SYNTHETIC_MAX_NODES:.0e}, got {p['n']}")
    if p["n"] * p["d"] > SYNTHETIC_MAX_ENTRIES:
        raise DatasetError(
            f"synthetic: n·d = {p['n'] * p['d']:.3g} feature entries is more than "
            f"{SYNTHETIC_MAX_ENTRIES:.0e} (the feature matrix and the nodes' reports would need "
            "tens of GB); lower n or d"
        )
    if p["n"] * p["avg_degree"] / 2 > SYNTHETIC_MAX_ENTRIES:
        raise DatasetError(
            f"synthetic: n·avg_degree/2 = {p['n'] * p['avg_degree'] / 2:.3g} edges is more than "
            f"{SYNTHETIC_MAX_ENTRIES:.0e}; lower n or avg_degree"
        )
    smallest_block = p["d"] // p["classes"]
    peak = p["feature_density"] * (
        p["feature_signal"] * p["d"] / smallest_block + 1.0 - p["feature_signal"]
    )
    if peak > 1.0:
        raise DatasetError(
            "synthetic: feature_density * (feature_signal * d / block + 1 - feature_signal) must "
            f"be <= 1 (the in-block 1-rate), got {peak:.3g}; lower feature_density or the signal"
        )
    n, k = p["n"], p["classes"]
    sizes = np.full(k, n // k, dtype=np.int64)  # the class sizes of arange(n) % k, in O(k)
    sizes[: n % k] += 1
    total = n * p["avg_degree"] / 2
    intra_cap = _MAX_FILL * float((sizes * (sizes - 1) // 2).sum())
    inter_cap = _MAX_FILL * float((sizes * (n - sizes)).sum()) / 2
    if total * p["homophily"] > intra_cap or total * (1 - p["homophily"]) > inter_cap:
        raise DatasetError(
            f"synthetic: avg_degree={p['avg_degree']} is too dense for n={n}, classes={k}, "
            f"homophily={p['homophily']} (the sparse sampler fills at most half the possible pairs)"
        )
    return p


#: This family's registry entry.
ENTRIES = (
    DatasetInfo(
        name="synthetic",
        description="homophilous stochastic block model with class-correlated binary "
        "features (no files)",
        expected=None,
        raw_files=(),
        loader=None,
        params=SYNTHETIC_DEFAULTS,
    ),
)
