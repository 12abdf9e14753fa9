"""The metric registry and the two moments a metric acts: before collection and after release."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ldpgraph.protocols import progress
from ldpgraph.protocols.catalog import load_plugins
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.params import Param, did_you_mean
from ldpgraph.protocols.types import Release

_HERE = "ldpgraph.server.evaluation."
#: The built-in metrics, ``name -> "module:Class"``, in the order a run's ``metrics`` value
#: lists them (part of its identity: keep the order). Held equal to what the modules of this
#: package register by tests/server/test_evaluation.py (:mod:`ldpgraph.protocols.catalog`).
BUILTIN: dict[str, str] = {
    "accuracy": _HERE + "accuracy:Accuracy",
    "attack": _HERE + "attack:LinkAttack",
    "collection": _HERE + "collection:CollectionStats",
    "gin": _HERE + "gin:GinAccuracy",
    "graph": _HERE + "graph:GraphStats",
    "lp": _HERE + "lp:LinkPrediction",
}

#: Metric names → classes: the built-in ones (:data:`BUILTIN`, imported on the first lookup,
#: :func:`_discover`), then those registered elsewhere (a plug-in named in
#: ``LDPGRAPH_PLUGINS``, a test) in registration order. Keep heavy imports (torch, networkx)
#: inside a metric's methods: choosing metrics must stay cheap.
METRICS: dict[str, type[Metric]] = {}

#: What a run evaluates unless told otherwise.
DEFAULT_METRICS: tuple[str, ...] = ("accuracy",)


class UnknownMetricError(ValueError):
    pass


@dataclass
class Prepared:
    """The graph the nodes hold after every chosen metric's :meth:`Metric.prepare` (e.g. with
    link-prediction edges removed), and what each metric set aside, by metric name."""

    graph: Graph
    held_out: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvaluationContext:
    """Everything a metric may use after the release: the original graph with its true
    labels (what the nodes held before :func:`prepare` took anything out), the split, the
    release, the training settings, the seed, the device and what its ``prepare`` set aside;
    ``config``: the run's whole configuration as a mapping (a metric reads its own keys there,
    e.g. ``graph_exact_limit``; None outside a run: every metric then uses its defaults)."""

    graph: Graph
    split: Any
    release: Release
    train_config: Any
    seed: int
    device: str | None = None
    held_out: Any = None
    num_threads: int | None = None
    #: Every metric's set-aside by metric name (``graph`` compares against the graph the nodes
    #: held, the original minus the links ``lp``/``attack`` hid).
    held_out_all: Mapping[str, Any] = field(default_factory=dict)
    progress: Callable[[int, float], None] | None = None
    #: What one metric computed on this release that another may reuse within the same
    #: :func:`evaluate` (``lp`` and ``attack`` train one GAE on the release, not two).
    cache: dict[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] | None = None


class Metric(ABC):
    """One metric family. ``kinds`` lists the release kinds it can score."""

    name: str = ""
    kinds: tuple[str, ...] = ("graph",)
    #: Metrics with the same non-empty key prepare once: the first chosen runs its
    #: :meth:`prepare`, the others get what it kept (``lp`` and ``attack`` score the same hidden
    #: edges, hidden once).
    shared_prepare: str = ""
    #: Release kinds this metric leaves to another metric that scores the same thing there
    #: (``graph`` on a ``graphs`` release: the collection's statistics, ``collection``).
    stand_ins: dict[str, str] = {}
    #: The metric's settings, declared once here: each is a run-configuration key (section
    #: ``metrics``) the metric reads from :attr:`EvaluationContext.config`.
    settings: tuple[Param, ...] = ()

    def prepare(self, graph: Graph, seed: int) -> tuple[Graph, Any]:
        """Act on the graph before any node reports (default: nothing). Return the graph the
        nodes hold and what this metric keeps for :meth:`evaluate`."""
        return graph, None

    @abstractmethod
    def evaluate(self, ctx: EvaluationContext) -> dict[str, Any]:
        """The record sections this metric fills (JSON-serialisable)."""


def register_metric(cls: type[Metric]) -> type[Metric]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    METRICS[cls.name] = cls
    _GENERATION[0] += 1
    return cls


#: Bumped at every registration: what is derived from the registry is recomputed then.
_GENERATION = [0]


def generation() -> tuple[int, tuple[str, ...]]:
    """A value that changes whenever a metric registers or leaves (a cache key)."""
    return _GENERATION[0], tuple(METRICS)


def _discover() -> None:
    """Import the modules of :data:`BUILTIN` once (each registers its metrics) and the
    plug-ins; the built-in metrics come first, in table order, whichever was imported first."""
    global _DISCOVERED
    if not _DISCOVERED:
        _DISCOVERED = True
        for path in BUILTIN.values():
            importlib.import_module(path.partition(":")[0])
        missing = [name for name in BUILTIN if name not in METRICS]
        if missing:
            raise RuntimeError(f"the modules of BUILTIN do not register metrics {missing}")
    load_plugins()
    rank = {name: i for i, name in enumerate(BUILTIN)}
    ordered = sorted(METRICS.items(), key=lambda kv: rank.get(kv[0], len(rank)))
    if list(METRICS) != [name for name, _ in ordered]:
        METRICS.clear()
        METRICS.update(ordered)


_DISCOVERED = False


def metric_names() -> tuple[str, ...]:
    _discover()
    return tuple(METRICS)


def metric_settings() -> dict[str, Param]:
    """Every metric's settings by name, in registry order; two metrics declaring one name
    is an error (a setting has one meaning)."""
    _discover()
    out: dict[str, Param] = {}
    for name, cls in METRICS.items():
        for param in cls.settings:
            if param.name in out:
                raise ValueError(f"metric {name!r} declares setting {param.name!r} again")
            out[param.name] = param
    return out


def resolve_metrics(names: str | Sequence[str]) -> tuple[str, ...]:
    """Parse a ``--metrics`` value (comma-separated names, or ``all``) into known names in
    registry order; an unknown name is an error with the nearest known one."""
    _discover()
    if isinstance(names, str):
        names = [part.strip() for part in names.split(",") if part.strip()]
    if not names:
        raise UnknownMetricError("no metric chosen; choose from: " + ", ".join(METRICS))
    if "all" in names:
        return tuple(METRICS)
    for name in names:
        if name not in METRICS:
            raise UnknownMetricError(
                f"unknown metric {name!r}{did_you_mean(name, METRICS)}; choose from: "
                f"{', '.join(METRICS)}, all"
            )
    return tuple(m for m in METRICS if m in names)


def get_metric(name: str) -> Metric:
    """A fresh instance of metric ``name`` (an unknown name is an error with a suggestion)."""
    resolve_metrics([name])
    return METRICS[name]()


def prepare(names: Sequence[str], graph: Graph, seed: int) -> Prepared:
    """Apply each chosen metric's :meth:`Metric.prepare` in order, once, before collection
    (once per :attr:`Metric.shared_prepare` key: the later metrics of a key share the first's
    set-aside)."""
    held: dict[str, Any] = {}
    shared: dict[str, Any] = {}
    for name in resolve_metrics(names):
        metric = get_metric(name)
        key = metric.shared_prepare
        if key and key in shared:
            kept = shared[key]
        else:
            graph, kept = metric.prepare(graph, seed)
            if key:
                shared[key] = kept
        if kept is not None:
            held[name] = kept
    return Prepared(graph, held)


def evaluate(
    names: Sequence[str], ctx: EvaluationContext, held_out: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The record sections of every chosen metric that fits the release's kind; a metric that
    does not fit says so under ``skipped`` instead of failing the run, and one with a stand-in
    for the release's kind (:attr:`Metric.stand_ins`) is scored by it, noted under
    ``metric_stand_ins``."""
    out: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    stood_in: dict[str, str] = {}
    chosen: list[str] = []
    for name in resolve_metrics(names):
        stand_in = get_metric(name).stand_ins.get(ctx.release.kind)
        if stand_in:
            stood_in[name] = stand_in
            name = stand_in
        if name not in chosen:
            chosen.append(name)
    scored = [n for n in chosen if ctx.release.kind in get_metric(n).kinds]
    for name in chosen:
        metric = get_metric(name)
        if ctx.release.kind not in metric.kinds:
            skipped[name] = f"does not score a {ctx.release.kind} release"
            continue
        # A metric can take minutes (attacks, path statistics): say which one runs.
        progress.stage(
            f"metric {name} ({scored.index(name) + 1}/{len(scored)}) on {_size(ctx.release)}"
        )
        ctx.held_out = (held_out or {}).get(name)
        ctx.held_out_all = held_out or {}
        sections = metric.evaluate(ctx)
        clash = set(sections) & set(out)
        if clash:
            raise RuntimeError(f"metric {name} overwrites record sections {sorted(clash)}")
        out.update(sections)
    if skipped:
        out["skipped_metrics"] = skipped
    if stood_in:
        out["metric_stand_ins"] = stood_in
    return out


def _size(release: Release) -> str:
    """What a stage line says of the release being scored: its counts only."""
    if release.kind == "graphs":
        return f"{len(release.graphs)} generated graphs"
    if release.kind == "model":
        return f"a model of {release.num_nodes} nodes"
    return f"a graph of {release.num_nodes} nodes, {len(release.edges)} edges"
