"""One run as four stages, the same for ``ldpgraph run``, ``ldpgraph sweep`` and the ServerApp.

* :func:`prepare`: the dataset (or, in a deployment, the curator file: all the server may know)
  and the run's split, refused before anything is collected if a part of it is empty; the
  chosen metrics set aside what they hide from every node (link-prediction edges) here, once;
* :func:`release`: collect every node's reports through the configured backend and let the
  protocol turn them into a :class:`Release` (the rounds are driven by
  :func:`ldpgraph.server.rounds.run_rounds` in every backend);
* :func:`evaluate`: every chosen metric of :mod:`ldpgraph.server.evaluation` on the release
  (``accuracy``: train the configured model on it and measure it on the true labels);
* :func:`record`: the result record (:mod:`ldpgraph.server.record`).

:func:`run` chains them with progress output, building the run's protocol once
(:func:`build_protocol`) for every stage; a sweep calls the stages itself, to reuse one
collection of reports for many reconstructions (:func:`replay_for`) and one release for many
trainings. The checks made before collecting are in :mod:`.checks`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ldpgraph.protocols import progress
from ldpgraph.protocols.base import CuratorView, LdpProtocol, training_labels
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.registry import make_protocol, uses_public_features
from ldpgraph.protocols.types import Release
from ldpgraph.server import evaluation
from ldpgraph.server.record import build_record

from .backends.local import LocalCollector, ReplayCollector
from .checks import check_collection, check_labels, check_split, no_hiding_in_deployment
from .config import RunConfig
from .curator_ray import curator_blocks
from .datasets import load_dataset
from .splits import split_for

Stage = Callable[[str], None]


@dataclass
class Prepared:
    """What :func:`prepare` gives the later stages. ``config`` names the dataset the curator
    file was made from in a deployment; ``graph`` is what the nodes hold (a loaded Graph, less
    anything a metric hid, or the curator file); ``original`` the graph the metrics compare
    with, and ``held_out`` what each metric set aside (by metric name)."""

    config: RunConfig
    graph: Any
    split: Any
    seconds: float
    original: Any = None
    held_out: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.original is None:
            self.original = self.graph


def prepare(config: RunConfig, say: Stage | None = None, graph: Graph | None = None) -> Prepared:
    """Load the dataset (or the curator file) and make the run's split. ``graph``: the
    configured dataset, already loaded (a sweep's worker keeps one per process)."""
    say = say or (lambda _msg: None)
    t0 = time.perf_counter()
    if config.curator:  # deployment: what the server may know, from the curator file only
        from .partition import load_curator

        say(f"loading the curator file {config.curator}")
        graph = load_curator(config.curator)
        config = replace(config, dataset=graph.dataset)
        if config.split_mode == "seeded":
            split = graph.split_for(config.seed, config.train_split, config.val_split)
        else:
            split = _split(graph, config)
        no_hiding_in_deployment(config)
    else:
        check_collection(config)
        if graph is None:
            say(f"loading {config.dataset}")
            graph = load_dataset(config.dataset, config.data_root or None)
        split = _split(graph, config)
    seconds = time.perf_counter() - t0
    check_split(split, graph.num_nodes, config)
    check_labels(graph, config)
    if config.curator:
        return Prepared(config, graph, split, seconds)
    if not config.metric_names():
        return Prepared(config, graph, split, seconds)
    held = evaluation.prepare(config.metric_names(), graph, config.seed)
    return Prepared(config, held.graph, split, seconds, graph, held.held_out)


def _split(graph: Any, config: RunConfig) -> Any:
    return split_for(
        graph.num_nodes,
        config.seed,
        config.train_split,
        config.val_split,
        config.split_mode,
        getattr(graph, "edges", None),
    )


def curator_view(
    graph: Any,
    public_features: bool,
    split: Any = None,
    device: str = "cpu",
    replayable: bool = False,
) -> CuratorView:
    """What the server knows of ``graph`` (a Graph, or a Curator in a deployment): with the
    run's ``split`` and a graph that has labels, the labels of the training and validation
    nodes (never a test label). ``replayable``: the run is explicitly seeded (a central
    release then derives its noise from the run seed)."""
    x = None
    if public_features:
        x = getattr(graph, "public_features", None) if not isinstance(graph, Graph) else graph.x
        if x is None:
            raise ValueError(
                "this protocol's server needs the true features, but the curator file has none: "
                "partition with --public-features"
            )
    y = getattr(graph, "y", None)
    ptr = (getattr(graph, "meta", None) or {}).get("graph_ptr")
    known: dict[str, Any] = {}
    if split is not None and y is not None:
        known = dict(
            labels=training_labels(y, split.train, split.val),
            train_nodes=split.train,
            val_nodes=split.val,
            num_classes=int(graph.num_classes),
        )
    return CuratorView(
        graph.num_nodes,
        graph.num_features,
        graph.feature_domain,
        x,
        device=device,
        graph_ptr=ptr,
        replayable=replayable,
        **known,
    )


def public_consent(graph: Any, listed: int = 1000) -> dict[str, Any]:
    """Which nodes' true features the server used: in a deployment those that consented when
    the graph was partitioned (the rows of the others were never written), in simulation all
    of them (the harness plays every node). The ids that did not consent are listed (up to
    ``listed`` of them)."""
    consent = getattr(graph, "public_consent", None)
    n = int(graph.num_nodes)
    if consent is None:
        return {"consented": n, "of": n, "declined": [], "source": "simulation: every node"}
    declined = np.flatnonzero(~np.asarray(consent, dtype=bool))
    return {
        "consented": n - int(declined.size),
        "of": n,
        "declined": declined[:listed].tolist(),
        "declined_listed": int(min(declined.size, listed)),
        "source": "curator file: each node's consent given to the partitioner",
    }


def build_protocol(config: RunConfig) -> LdpProtocol:
    """The protocol ``config`` runs, from its parameters: built once per run and passed on to
    every stage that needs it (``protocol=`` of :func:`run`, :func:`release`,
    :func:`replay_for`); the one :meth:`RunConfig.validate` built when it checked ``config``."""
    built = config.built_protocol()
    return (
        built if built is not None else make_protocol(config.protocol, **config.protocol_params())
    )


def replay_for(
    config: RunConfig, graph: Graph, protocol: LdpProtocol | None = None
) -> ReplayCollector | None:
    """A collector that collects ``config``'s reports once and hands them to every
    :func:`release` of configurations that differ only in server-side post-processing (τ, l),
    when that is sound: a one-round protocol on the local backend. None otherwise.
    ``protocol``: ``config``'s, if already built."""
    if config.backend != "local":
        return None
    if (protocol or build_protocol(config)).rounds != 1:
        return None
    return ReplayCollector(LocalCollector(graph, config.seed, config.node_settings()))


def release(
    config: RunConfig,
    graph: Any,
    progress: Callable[[int], None] | None = None,
    grid: Any = None,
    replay: ReplayCollector | None = None,
    split: Any = None,
    protocol: LdpProtocol | None = None,
) -> tuple[Release, dict[str, float]]:
    """Collect the reports with the configured backend and turn them into a release; returns
    it with the seconds each step took. With ``grid`` (inside a ServerApp) the rounds go over
    that Grid; ``graph`` a curator file: a deployment, whose SuperNodes hold the node files.
    ``replay`` (from :func:`replay_for`): reuse the reports it collected first. ``split``: the
    run's split, whose training labels the curator knows (a central strategy trains on them).
    ``protocol``: ``config``'s, if already built (:func:`build_protocol`)."""
    protocol = protocol or build_protocol(config)
    # --curator-on ray: the curator's row blocks run as Ray tasks (Ray starts on the first).
    with curator_blocks(config) as on_ray:
        released, timings = _release(config, graph, progress, grid, replay, split, protocol)
    if on_ray is not None:
        released.stats["curator"] = {"on": "ray", **on_ray.summary()}
    return released, timings


def _release(
    config: RunConfig,
    graph: Any,
    progress: Callable[[int], None] | None,
    grid: Any,
    replay: ReplayCollector | None,
    split: Any,
    protocol: LdpProtocol,
) -> tuple[Release, dict[str, float]]:
    curator = curator_view(
        graph, uses_public_features(config.protocol), split, config.device, config.seeded
    )
    if grid is not None:
        from .backends.flower import release_over_grid, run_directory

        deployed = not isinstance(graph, Graph)
        with run_directory(config) as workdir:
            return release_over_grid(
                grid,
                protocol,
                None if deployed else graph,
                curator,
                config,
                workdir,
                progress,
                supernodes=len(graph.blocks) if deployed else None,
                partition=graph.partition if deployed else "",
                manifest=graph.manifest if deployed else None,
            )
    if config.backend == "deploy":
        raise ValueError("the deploy backend runs inside a ServerApp on a SuperLink")
    if config.backend == "local":
        from .backends.local import run_protocol

        settings = config.node_settings()
        return run_protocol(protocol, graph, curator, config.seed, progress, settings, replay)
    from .backends.flower import run_protocol as run_flower

    return run_flower(protocol, graph, curator, config, progress)


def evaluate(
    config: RunConfig,
    graph: Any,
    split: Any,
    release: Release,
    num_threads: int | None = None,
    progress: Callable[[int, float], None] | None = None,
    held_out: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], float]:
    """Every chosen metric on ``release`` against ``graph`` (the original, with its true
    labels; ``accuracy`` trains ``config.model`` on a graph release); returns the record
    sections the metrics filled and the seconds it took."""
    from ldpgraph.server.training import TrainConfig

    t0 = time.perf_counter()
    ctx = evaluation.EvaluationContext(
        graph=graph,
        split=split,
        release=release,
        train_config=TrainConfig.from_mapping(config.to_dict()),
        seed=config.seed,
        device=None if config.device == "auto" else config.device,
        num_threads=num_threads,
        progress=progress,
        config=config.to_dict(),
    )
    names = config.metric_names()
    sections = evaluation.evaluate(names, ctx, held_out) if names else {}
    return sections, time.perf_counter() - t0


def record(
    config: RunConfig,
    graph: Any,
    release: Release,
    sections: dict[str, Any],
    timings: dict[str, float],
) -> dict[str, Any]:
    """The result record; ``timings`` gains the total of its stages."""
    times = {**timings, "total": sum(timings.values())}
    return build_record(config.to_dict(), graph, release, sections, times)


def train_release(
    config: RunConfig,
    graph: Any,
    split: Any,
    release: Release,
    timings: dict[str, float] | None = None,
    num_threads: int | None = None,
    progress: Callable[[int, float], None] | None = None,
    held_out: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate ``release`` and return the run's record (``timings``: the seconds spent so far
    on this release: loading, collection, reconstruction; the evaluation's go under
    ``train``)."""
    sections, seconds = evaluate(config, graph, split, release, num_threads, progress, held_out)
    return record(config, graph, release, sections, {**(timings or {}), "train": seconds})


def run(
    config: RunConfig,
    stage: Stage | None = None,
    show_progress: bool = False,
    grid: Any = None,
    protocol: LdpProtocol | None = None,
) -> dict[str, Any]:
    """Run one experiment and return its result record (JSON-serialisable). ``protocol``:
    the run's protocol, built by :func:`build_protocol` from ``config`` after the caller
    validated it (``RunConfig.from_mapping`` or ``validate``, as ``ldpgraph run`` does); without
    it the configuration is validated here and the protocol built once, for every stage."""
    if protocol is None:
        config.validate()
        protocol = build_protocol(config)
    say = stage or (lambda _msg: None)
    # Long phases inside a protocol or a metric (APPR, DP-SGD epochs, GAN lanes) say their
    # stage lines through ldpgraph.protocols.progress to the same printer.
    with progress.listening(stage):
        return _run(config, protocol, say, show_progress, grid)


def _run(
    config: RunConfig,
    protocol: LdpProtocol,
    say: Stage,
    show_progress: bool,
    grid: Any,
) -> dict[str, Any]:
    prepared = prepare(config, say)
    config = prepared.config
    released, timings = _collect(config, prepared, protocol, say, show_progress, grid)
    metrics = config.metric_names()
    trains = released.kind == "graph" and "accuracy" in metrics
    if not metrics:
        say(f"released a {released.kind}; no metrics (--metrics none)")
    elif trains:
        say(f"training {config.model} on {released.num_nodes} nodes / {released.num_edges} edges")
        if "torch_geometric" not in sys.modules:  # seconds on a loaded machine: say why
            say("loading PyTorch and PyG for the model")
        cost = training_notice(config, released, prepared.original.num_classes)
        if cost:
            say(cost)
    else:  # a model is scored as released; a set of graphs is evaluated by its metrics
        say(f"evaluating the released {released.kind}")
    ebar = _bar(config.epochs, "epochs", show_progress and trains)
    result = train_release(
        config,
        prepared.original,
        prepared.split,
        released,
        {"load": prepared.seconds, **timings},
        progress=(lambda _e, _v: ebar.update(1)) if ebar else None,
        held_out=prepared.held_out,
    )
    if ebar:
        ebar.close()
    return result


def _collect(
    config: RunConfig,
    prepared: Prepared,
    protocol: LdpProtocol,
    say: Stage,
    show_progress: bool,
    grid: Any,
) -> tuple[Release, dict[str, float]]:
    """:func:`release` with its progress output, and the public-feature consent noted."""
    graph = prepared.graph
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
    released, timings = release(
        config,
        graph,
        bar.update if bar else None,
        grid,
        split=prepared.split,
        protocol=protocol,
    )
    if bar:
        bar.close()
    if uses_public_features(config.protocol):
        released.stats["public_features"] = public_consent(graph)
    return released, timings


def training_notice(config: RunConfig, release: Release, num_classes: int) -> str | None:
    """What training ``release`` will cost, for a large release (None otherwise): on the CPU
    the estimated memory and time, on a GPU a warning only if it may not fit (see
    :mod:`ldpgraph.server.training_cost`)."""
    from ldpgraph.protocols.torch_env import resolve_device
    from ldpgraph.server.training import TrainConfig
    from ldpgraph.server.training_cost import notice

    device = resolve_device(None if config.device == "auto" else config.device)
    train = TrainConfig.from_mapping(config.to_dict())
    return notice(release.num_nodes, release.num_edges, release.x, train, num_classes, device)


def _bar(total: int, unit: str, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(
        total=total, unit=unit, leave=False, file=sys.stderr, mininterval=0.5, dynamic_ncols=True
    )
