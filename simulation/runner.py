"""One run end to end: dataset → split → collect → reconstruct → train → evaluate → record."""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from importlib import metadata
from typing import Any

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.registry import make_protocol, uses_public_features
from ldpgraph.protocols.types import Release
from ldpgraph.server.rounds import require_reports

from .config import RunConfig
from .datasets import load_dataset
from .splits import split_for

Stage = Callable[[str], None]


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in (
        "ldpgraph",
        "numpy",
        "scipy",
        "torch",
        "torch-geometric",
        "flwr",
        "ray",
        "dp-accounting",
    ):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def curator_view(graph: Any, public_features: bool) -> CuratorView:
    """What the server knows of ``graph`` (a Graph, or a Curator in a deployment)."""
    x = None
    if public_features:
        x = getattr(graph, "public_features", None) if not isinstance(graph, Graph) else graph.x
        if x is None:
            raise ValueError(
                "this protocol's server needs the true features, but the curator file has none: "
                "partition with --public-features"
            )
    return CuratorView(graph.num_nodes, graph.num_features, graph.feature_domain, x)


def collect_and_release(
    config: RunConfig,
    graph: Graph,
    progress: Callable[[int], None] | None = None,
    grid: Any = None,
) -> tuple[Release, dict[str, float]]:
    """Collect the reports with the configured backend and turn them into a release.

    With ``grid`` (inside a ServerApp started by ``flwr run``) the rounds go over that Grid."""
    protocol = make_protocol(config.protocol, **config.protocol_params())
    curator = curator_view(graph, uses_public_features(config.protocol))
    if grid is not None:
        from .backends.flower import release_over_grid, run_directory

        with run_directory(config) as workdir:
            if not isinstance(graph, Graph):  # deployment: the SuperNodes hold the node files
                return release_over_grid(
                    grid,
                    protocol,
                    None,
                    curator,
                    config,
                    workdir,
                    progress,
                    supernodes=len(graph.blocks),
                    partition=graph.partition,
                )
            return release_over_grid(grid, protocol, graph, curator, config, workdir, progress)
    if config.backend == "deploy":
        raise ValueError("the deploy backend runs inside a ServerApp on a SuperLink")
    if config.backend == "local":
        from .backends.local import run_protocol

        return run_protocol(protocol, graph, curator, config.seed, progress, config.node_settings())
    from .backends.flower import run_protocol as run_flower

    return run_flower(protocol, graph, curator, config, progress)


def run(
    config: RunConfig, stage: Stage | None = None, show_progress: bool = False, grid: Any = None
) -> dict[str, Any]:
    """Run one experiment and return its result record (JSON-serialisable)."""
    config.validate()
    say = stage or (lambda _msg: None)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    if config.curator:  # deployment: what the server may know, from the curator file only
        from .partition import load_curator

        say(f"loading the curator file {config.curator}")
        graph: Any = load_curator(config.curator)
        config = replace(config, dataset=graph.dataset)
        if config.split_mode == "seeded":
            split = graph.split_for(config.seed, config.train_split, config.val_split)
        else:
            split = _split(graph.num_nodes, config)
    else:
        say(f"loading {config.dataset}")
        graph = load_dataset(config.dataset, config.data_root or None)
        split = _split(graph.num_nodes, config)
    timings["load"] = time.perf_counter() - t0
    check_split(split, graph.num_nodes, config)

    where = config.backend
    if config.backend == "flower" and grid is None:
        k = config.resolved_nodes_per_client(graph.num_nodes)
        auto = " (automatic)" if config.nodes_per_client == 0 else ""
        where = f"flower: {-(-graph.num_nodes // k)} SuperNodes x {k} node-clients{auto}"
    say(f"collecting {graph.num_nodes} node reports ({config.protocol}, {where})")
    if config.backend == "flower" and grid is None:
        # The bar stays at 0 until the engine is up: say why, so nobody takes it for a hang.
        say(
            "starting Ray and Flower's simulation engine, then a hello round to every SuperNode "
            "(typically 10-50 s before the first report)"
        )
    bar = _bar(graph.num_nodes, "nodes", show_progress)
    release, t = collect_and_release(config, graph, bar.update if bar else None, grid)
    if bar:
        bar.close()
    timings.update(t)

    say(f"training {config.model} on {release.num_nodes} nodes / {release.num_edges} edges")
    ebar = _bar(config.epochs, "epochs", show_progress)
    record = train_release(
        config,
        graph,
        split,
        release,
        timings,
        progress=(lambda _e, _v: ebar.update(1)) if ebar else None,
    )
    if ebar:
        ebar.close()
    return record


def _bar(total: int, unit: str, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(
        total=total, unit=unit, leave=False, file=sys.stderr, mininterval=0.5, dynamic_ncols=True
    )


# --- reusable stages (used by ``ldpgraph sweep``: one collection, many reconstructions and
# trainings) ------------------------------------------------------------------------------------


def prepare(config: RunConfig) -> tuple[Graph, Any]:
    """Load the configured dataset and make the run's split."""
    graph = load_dataset(config.dataset, config.data_root or None)
    return graph, _split(graph.num_nodes, config)


def check_split(split: Any, num_nodes: int, config: RunConfig) -> None:
    """Refuse, before collecting anything, a split with an empty part (a tiny graph rounds a
    fraction to no nodes): training needs training and validation nodes, and a test accuracy
    of no test nodes is undefined (NaN, which is not even valid JSON)."""
    sizes = {"train": len(split.train), "val": len(split.val), "test": len(split.test)}
    empty = [name for name, size in sizes.items() if size == 0]
    if empty:
        raise ValueError(
            f"the split of {num_nodes} nodes by train-split {config.train_split} and val-split "
            f"{config.val_split} leaves no {' and no '.join(empty)} nodes "
            f"({sizes['train']}/{sizes['val']}/{sizes['test']}); change --split or use a "
            "larger graph"
        )


def _split(num_nodes: int, config: RunConfig) -> Any:
    return split_for(
        num_nodes, config.seed, config.train_split, config.val_split, config.split_mode
    )


def collect_reports(config: RunConfig, graph: Graph) -> tuple[Any, Any, CuratorView, float]:
    """Collect the reports of a one-round protocol with the local backend, without
    reconstructing: ``(protocol, round_result, curator_view, seconds)``. Returns None for
    ``round_result`` when the protocol has several rounds (then use :func:`make_release`)."""
    from .backends.local import collect_round

    protocol = make_protocol(config.protocol, **config.protocol_params())
    curator = curator_view(graph, uses_public_features(config.protocol))
    if protocol.rounds != 1:
        return protocol, None, curator, 0.0
    t0 = time.perf_counter()
    msg = {**protocol.config(), **protocol.public_message(0, config.seed)}
    result = collect_round(protocol, graph, 0, msg, config.seed, settings=config.node_settings())
    require_reports(protocol.name, 0, len(result.reports), graph.num_nodes, result.missing.size)
    return protocol, result, curator, time.perf_counter() - t0


def release_from_reports(
    config: RunConfig, result: Any, curator: CuratorView
) -> tuple[Release, dict[str, float]]:
    """The server step of ``config``'s one-round protocol on reports collected earlier
    (post-processing: reconstruction parameters such as τ and l spend no budget)."""
    protocol = make_protocol(config.protocol, **config.protocol_params())
    t0 = time.perf_counter()
    out = protocol.server_step(0, result, curator, config.seed)
    if not isinstance(out, Release):
        raise RuntimeError(f"protocol {config.protocol} did not release after one round")
    return out, {"reconstruct": time.perf_counter() - t0}


def make_release(config: RunConfig, graph: Graph) -> tuple[Release, dict[str, float]]:
    """Collect and reconstruct in one go with the configured backend."""
    if config.backend == "local":
        from .backends.local import run_protocol

        protocol = make_protocol(config.protocol, **config.protocol_params())
        curator = curator_view(graph, uses_public_features(config.protocol))
        return run_protocol(protocol, graph, curator, config.seed, None, config.node_settings())
    return collect_and_release(config, graph)


def train_release(
    config: RunConfig,
    graph: Graph,
    split: Any,
    release: Release,
    timings: dict[str, float] | None = None,
    num_threads: int | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> dict[str, Any]:
    """Train ``config.model`` on ``release`` and return the result record of :func:`run`
    (``timings`` holds the collection/reconstruction seconds spent for this release)."""
    from ldpgraph.server.training import TrainConfig, train_and_evaluate

    tcfg = TrainConfig(
        model=config.model,
        lr=config.lr,
        weight_decay=config.weight_decay,
        dropout=config.dropout,
        epochs=config.epochs,
        hidden=config.hidden,
        selection=config.selection,
        normalize_features=config.normalize_features,
        center_features=config.center_features,
    )
    t1 = time.perf_counter()
    metrics = train_and_evaluate(
        release.edges,
        release.x,
        graph.y,
        split,
        tcfg,
        config.seed,
        device=None if config.device == "auto" else config.device,
        edge_weight=release.edge_weight,
        num_classes=graph.num_classes,
        num_threads=num_threads,
        progress=progress,
    )
    times = dict(timings or {})
    times["train"] = time.perf_counter() - t1
    times["total"] = sum(times.values())
    return _record(config, graph, release, metrics, times)


def _record(
    config: RunConfig,
    graph: Graph,
    release: Release,
    metrics: dict[str, Any],
    timings: dict[str, float],
) -> dict[str, Any]:
    return {
        "config": config.to_dict(),
        "accuracy": {
            "val": metrics["val_acc"],
            "test": metrics["test_acc"],
            "train": metrics["train_acc"],
        },
        "training": {
            k: metrics[k]
            for k in (
                "best_epoch",
                "epochs_run",
                "device",
                "val_loss",
                "selection",
                "collapsed",
                "top_class_share",
                "majority_rate",
            )
            if k in metrics
        },
        "privacy": release.privacy.to_dict(),
        "graph": {
            "original": {
                "nodes": graph.num_nodes,
                "edges": graph.num_edges,
                "features": graph.num_features,
                "classes": graph.num_classes,
            },
            "synthetic": {
                "nodes": release.num_nodes,
                "edges": release.num_edges,
                "features": int(release.x.shape[1]),
            },
        },
        "release": release.stats,
        "fingerprint": release.fingerprint(),
        "timings": {k: round(v, 4) for k, v in timings.items()},
        "versions": versions(),
        "command": " ".join(sys.argv),
    }
