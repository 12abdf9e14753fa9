"""ldpgraph as a library: :func:`run` (one experiment, the CLI's settings), :func:`release`
(a mechanism on the caller's own graph), :func:`train` (a GNN on a graph or a release) and
:func:`load_dataset`. ``import ldpgraph`` re-exports them lazily.

A five-line use::

    import ldpgraph
    data = ldpgraph.load_dataset("cora")                      # a PyG Data
    private = ldpgraph.release(data, protocol="hogs", epsilon=8)
    print(private.privacy.headline)                           # what the release spends
    print(ldpgraph.train(private, labels=data.y)["test_acc"])
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.types import Release

from .config import RunConfig
from .convert import to_data, to_graph


@dataclass
class RunResult:
    """One run's result: ``record`` is the CLI's ``--json`` output as a dict."""

    record: dict[str, Any]
    config: RunConfig | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record, exactly as ``ldpgraph run --json`` prints it (JSON-safe values)."""
        from ldpgraph.server.record import to_json

        return json.loads(to_json(self.record))

    @property
    def accuracy(self) -> float | None:
        """Test accuracy when the run measured it."""
        return (self.record.get("accuracy") or {}).get("test")

    @property
    def privacy(self) -> dict[str, Any]:
        """The release's privacy report (headline ε, unit, δ, the paper's figure)."""
        return self.record.get("privacy", {})

    @property
    def fingerprint(self) -> str:
        return str(self.record.get("fingerprint", ""))


def _config(config: RunConfig | Mapping[str, Any] | None, settings: Mapping[str, Any]) -> RunConfig:
    if isinstance(config, RunConfig):
        base = config.to_dict()
    else:
        base = dict(config or {})
    return RunConfig.from_mapping({**base, **settings})


def run(
    config: RunConfig | Mapping[str, Any] | None = None,
    *,
    store: str | os.PathLike[str] | None = None,
    **settings: Any,
) -> RunResult:
    """Run one experiment with the settings of ``ldpgraph run`` (underscore or hyphen names:
    ``dataset="cora", protocol="hogs", epsilon=8, backend="local"``); returns its result.
    ``store``: also record it in that results store (opened first: a bad store fails before
    any work), as ``--store`` does."""
    from .datasets.locations import use_recorded_data_root
    from .results.store import ResultsStore

    use_recorded_data_root()
    given = {**(config.to_dict() if isinstance(config, RunConfig) else dict(config or {}))}
    if "seeded" not in settings and not isinstance(config, RunConfig) and "seeded" not in given:
        # As on the command line: a central release is replayable only when a seed was given.
        settings = {**settings, "seeded": "seed" in settings or "seed" in given}
    cfg = _config(config, settings).validate()
    if store is None:
        return RunResult(run_record(cfg), cfg)
    with ResultsStore(store) as opened:
        result = RunResult(run_record(cfg), cfg)
        opened.finish(cfg, result.record)
    return result


def run_record(
    config: RunConfig, stage: Any = None, show_progress: bool = False, protocol: Any = None
) -> dict[str, Any]:
    """The record of one run of a checked ``config`` by its backend, as ``ldpgraph run`` makes
    it: ``flower`` through ``flwr run`` (Flower's supported runtime, on a private local
    SuperLink, joining the Ray cluster of ``ray_address`` or ``RAY_ADDRESS`` if one is given:
    :func:`~ldpgraph.simulation.backends.flwr_run.run_with_flwr`); ``local`` in this process.
    Flower's deprecated in-process engine stays reachable as
    :func:`ldpgraph.simulation.pipeline.run` (the named fallback). ``protocol``: the run's
    protocol already built from ``config`` (the local path uses it instead of building
    another; the ``flwr run`` ServerApp builds its own in its process)."""
    if config.backend == "flower":
        from .backends.flwr_run import run_with_flwr

        return run_with_flwr(config, stage)
    from .pipeline import run as run_pipeline

    return run_pipeline(config, stage, show_progress, protocol=protocol)


def load_dataset(name: str, data_root: str | None = None, **params: Any) -> Any:
    """A dataset of ``ldpgraph datasets`` (or a synthetic spec) as a PyG ``Data`` with ``x``,
    ``edge_index`` and ``y``."""
    import torch
    from torch_geometric.data import Data

    from .datasets import load_dataset as load
    from .datasets.locations import use_recorded_data_root

    use_recorded_data_root()
    g = load(name, data_root, **params)
    return Data(
        x=torch.as_tensor(np.asarray(g.x, dtype=np.float32)),
        edge_index=torch.as_tensor(g.edge_index()),
        y=torch.as_tensor(g.y),
        num_nodes=g.num_nodes,
    )


def release(
    graph: Any,
    protocol: str = "hogs",
    epsilon: float = 8.0,
    *,
    seed: int | None = None,
    as_data: bool = True,
    **settings: Any,
) -> Any:
    """Run ``protocol`` on ``graph`` (a PyG ``Data``, a networkx graph or a
    :class:`~ldpgraph.protocols.graph.Graph`) as if each node were a client, and return the
    release as a PyG ``Data`` (``privacy`` attached) or, with ``as_data=False`` or for a model
    or a collection, the :class:`~ldpgraph.protocols.types.Release`.

    ``seed``: None draws the simulated nodes' and the curator's randomness from OS entropy (a
    private release); an integer makes it replayable (for tests and papers, not a private
    release). ``settings``: the protocol's parameters (``feature_share=0.2``) and any other
    run setting. A central strategy runs on the whole graph: whoever calls this holds it.
    """
    from ldpgraph.protocols.registry import protocol_info

    g = to_graph(graph)
    seeded = seed is not None
    settings = dict(settings)
    if getattr(protocol_info(protocol).resolve(), "raw_upload", False):
        settings.setdefault("trust_curator", True)  # the caller is the curator
    cfg = _config(
        None,
        {
            "protocol": protocol,
            "epsilon": epsilon,
            # Unseeded: a 63-bit seed from OS entropy, written nowhere (the nodes' streams
            # derive from it: a short one could be searched).
            "seed": seed if seeded else secrets.randbits(63),
            "seeded": seeded,
            "backend": "local",
            "metrics": "none",
            **settings,
        },
    ).validate()
    out = _release(cfg, g, seeded)
    if as_data and out.kind == "graph":
        return to_data(out, g)
    return out


def _release(cfg: RunConfig, g: Graph, seeded: bool) -> Release:
    from .pipeline import release as release_stage
    from .splits import split_for

    split = None
    if g.y.size and (g.y >= 0).all():  # a central strategy trains on the training labels
        split = split_for(g.num_nodes, cfg.seed, cfg.train_split, cfg.val_split)
    out, _timings = release_stage(cfg, g, split=split)
    out.stats["replayable"] = seeded
    return out


def train(
    graph: Any,
    *,
    labels: Any = None,
    split: Any = None,
    model: str = "gcn",
    epochs: int = 200,
    seed: int = 0,
    device: str | None = None,
    **train_settings: Any,
) -> dict[str, Any]:
    """Train a GNN (gcn, sage, gat, mlp) on ``graph`` (a release or any graph) and score it on
    ``labels`` (default: the graph's ``y``); ``split``: an object with ``train``/``val``/
    ``test`` index arrays (default: a seeded 50/25/25 split). Returns the accuracies."""
    from ldpgraph.server.training import TrainConfig, train_and_evaluate

    from .splits import make_split

    g = to_graph(graph)
    y = g.y if labels is None else to_graph_labels(labels, g.num_nodes)
    if (y < 0).any():
        raise ValueError("train needs a label for every node: pass labels=")
    split = split or make_split(g.num_nodes, seed)
    # As `ldpgraph run` trains: centred features (noisy 1-bit reports are dense).
    train_settings.setdefault("center_features", True)
    config = TrainConfig(model=model, epochs=epochs, **train_settings)
    config.validate()
    return train_and_evaluate(
        g.edges, g.x, y, split, config, seed, device, edge_weight=_edge_weight(graph, g)
    )


def _edge_weight(graph: Any, g: Graph) -> np.ndarray | None:
    """A release's edge weights, one per edge of ``g``: :func:`to_data` writes the edges
    once each in ``g``'s order, then reversed, with the weights repeated."""
    weight = getattr(graph, "edge_weight", None)
    if weight is None or isinstance(graph, Graph):
        return None
    w = np.asarray(weight.detach().cpu().numpy() if hasattr(weight, "detach") else weight)
    half = np.asarray(graph.edge_index.detach().cpu().numpy())[:, : g.num_edges].T
    if w.shape[0] != 2 * g.num_edges or not np.array_equal(half, g.edges):
        raise ValueError(
            "edge_weight must hold one weight per edge_index column, as to_data writes"
        )
    return w[: g.num_edges].astype(np.float64)


def to_graph_labels(labels: Any, n: int) -> np.ndarray:
    """Labels as an int64 numpy vector of length ``n``."""
    if hasattr(labels, "detach"):
        labels = labels.detach().cpu().numpy()
    y = np.asarray(labels).reshape(-1).astype(np.int64)
    if y.shape[0] != n:
        raise ValueError(f"labels must have one entry per node ({n}), got {y.shape[0]}")
    return y
