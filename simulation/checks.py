"""The checks of a run that need more than its configuration (the protocol's class, the loaded
graph, the split), made before anything is collected so that a run which cannot succeed fails
in one line before any node spends budget."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import RunConfig


def _evaluation() -> Any:
    """The metric registry, imported when a check needs it (it imports NumPy: the memory
    check, made before any data is loaded, does not)."""
    from ldpgraph.server import evaluation

    return evaluation


def check_collection(config: RunConfig) -> None:
    """Refuse, before loading, a collection dataset (a list of graphs) for a protocol that
    releases one graph or model, and a single-graph dataset for one that releases a generated
    collection (``graphs``: DPGGAN, DPGVAE)."""
    from .datasets.graph_collections import NotACollectionError, is_collection_name

    wants = release_kind(config.protocol) == "graphs"
    have = is_collection_name(config.dataset)
    if have and not wants:
        raise NotACollectionError(
            f"dataset {config.dataset!r} is a collection of graphs; protocol "
            f"{config.protocol!r} works on one graph's nodes: give it a node-level dataset, or "
            "a collection to a graph-generation protocol (dpggan, dpgvae)"
        )
    if wants and not have:
        raise NotACollectionError(
            f"protocol {config.protocol!r} learns from a collection of graphs; dataset "
            f"{config.dataset!r} is one graph: use a collection (dblp-collection, "
            "imdb-collection, dblp-new-collection, imdb-new-collection)"
        )
    # Before loading too: metrics that cannot score the release would make a run of no use.
    check_metrics_fit(config)


def release_kind(protocol: str) -> str:
    """What ``protocol`` releases: a ``graph``, a ``model`` or a collection of ``graphs``."""
    from ldpgraph.protocols.registry import protocol_info

    return getattr(protocol_info(protocol).resolve(), "kind", "graph")


def scores(metric: str, kind: str) -> bool:
    """Whether ``metric`` measures a ``kind`` release (itself, or through its stand-in)."""
    m = _evaluation().get_metric(metric)
    return kind in m.kinds or bool(m.stand_ins.get(kind))


def check_metrics_fit(config: RunConfig) -> None:
    """Refuse, before loading, metrics none of which scores what the protocol releases: the run
    would collect, release and then measure nothing (every metric "skipped"), and exit as if it
    had. ``--metrics none`` asks for the release alone and is kept."""
    names = config.metric_names()
    kind = release_kind(config.protocol)
    if not names or any(scores(n, kind) for n in names):
        return
    usable = [n for n in _evaluation().metric_names() if scores(n, kind)]
    raise ValueError(
        f"--metrics {','.join(names)}: none of them scores the {kind} release of "
        f"{config.protocol!r}, so the run would measure nothing; choose from "
        f"{', '.join(usable)} (or --metrics none: the release and its privacy report only)"
    )


def check_labels(graph: Any, config: RunConfig) -> None:
    """Refuse, before collecting anything, ``accuracy`` on a graph without labels (a
    structure-only dataset such as privdpr-cora): there is nothing to score it against. The
    advice names the metrics that score this protocol's release."""
    kind = release_kind(config.protocol)
    if (
        "accuracy" in config.metric_names()
        and scores("accuracy", kind)
        and getattr(graph, "num_classes", 1) == 0
    ):
        names = _evaluation().metric_names()
        others = [n for n in names if n != "accuracy" and scores(n, kind)]
        raise ValueError(
            f"dataset {config.dataset!r} is structure-only (no labels, no features): the "
            f"accuracy metric cannot score it; choose other --metrics, e.g. --metrics "
            f"{','.join(others)} (none: the release and its privacy report only)"
        )


def no_hiding_in_deployment(config: RunConfig) -> None:
    """A deployed node reports its own file: a metric that hides edges from the nodes would
    need them left out when the node files are written, which ``ldpgraph partition`` does not
    do yet. Refuse rather than measure on edges the nodes reported."""
    evaluation = _evaluation()
    hiding = [
        name
        for name in config.metric_names()
        if type(evaluation.get_metric(name)).prepare is not evaluation.Metric.prepare
    ]
    if hiding:
        raise ValueError(
            f"metric(s) {', '.join(hiding)} hide edges from the nodes before collection; a "
            "deployment cannot do that yet (the node files hold every edge): choose other "
            "--metrics for --backend deploy"
        )


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


def total_memory() -> int | None:
    """This machine's physical memory in bytes; None where the OS does not say."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def collection_bytes(n: int, avg_degree: float, protocol: Any) -> int:
    """A lower bound on the memory the server needs to hold one round of reports of ``n``
    nodes: randomized response on an adjacency row (Warner 1965; HoGS, Zhu et al. 2023 §4)
    reports each of the row's n - 1 absent bits as a 1 with probability 1 / (1 + e^ε_a), so the
    reports hold about n (n - 1) / (1 + e^ε_a) indices (4 bytes each) besides the true edges,
    times the keep probability of a protocol that samples its reports. 0 for a round whose
    report carries no adjacency row or whose ε per bit is not stated."""
    from ldpgraph.protocols.mechanisms import flip_probability

    parts = protocol.epsilon_parts(0)
    if not protocol.schema(0).adjacency or parts is None or not parts.adjacency_bit > 0:
        return 0
    keep = getattr(protocol, "keep_probability", None)
    mu = float(keep(n)) if callable(keep) else 1.0
    flipped = n * (n - 1) * flip_probability(parts.adjacency_bit) * mu
    return int(4 * (flipped + n * avg_degree))


def check_memory(config: RunConfig, protocol: Any) -> None:
    """Refuse, before the graph is generated, a synthetic graph whose nodes' reports surely
    cannot fit in this machine's memory (the estimate of :func:`collection_bytes` above its
    total memory): such a run would crash with a MemoryError minutes in. Conservative: only
    the reports are counted, never the graph, the reconstruction or the model."""
    from .datasets import parse_dataset_spec
    from .datasets.synthetic import SYNTHETIC_DEFAULTS

    name, params = parse_dataset_spec(config.dataset)
    have = total_memory()
    if name != "synthetic" or have is None:
        return
    p = dict(SYNTHETIC_DEFAULTS) | params
    n, degree = int(p["n"]), float(p["avg_degree"])
    need = collection_bytes(n, degree, protocol)
    if need > have:
        gib = 2**30
        raise ValueError(
            f"dataset {config.dataset!r} with protocol {config.protocol!r} at ε "
            f"{config.epsilon:g}: "
            f"the nodes' randomized-response reports alone need about {need / gib:,.0f} GiB "
            f"(n(n-1) bits flipped at rate 1/(1+e^ε_a)), and this machine has "
            f"{have / gib:,.0f} GiB: lower n in the dataset spec or raise --epsilon"
        )
