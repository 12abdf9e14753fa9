"""PPGSL's privacy–utility frontier as data: the cells and series of the paper's Figs. 2–5
(Wu et al. 2025, PPGSL, §V-B1–V-B2), from a results store's rows.

The paper has no tables, only plots of an attack's AUC against a utility (LP AUC, NC F1) with
one point per setting. Here a point is one (data set, method family, parameter) cell of the
final runs: PPGSL over α (per k), Random over its ratio r, EdgeRand and LapGraph over ε, the
original graph as one point; the mean over the cell's runs, ± their sample std.

**Which attack AUC.** PPGSL defends the links its curator knows are sensitive, so its privacy is
the attack on those (``attack.protected``: the paper's quantity). The baselines never saw a
sensitive set; the links hidden before collection (the top-level ``attack``) are exactly the
paper's situation for them. So the y value is ``attack.protected`` for PPGSL and ``attack`` for
everyone else, which the plots and table say. Two attack views:

* **strongest graph attack** (``max_graph``): the best of the attacks that read the released
  graph, everything but feature cosine, which a structural defence cannot move (PPGSL
  publishes the true features). Records keep ``max_graph`` in the protected section only; for
  the hidden links it is computed here over the same attacks.
* **GAE+sim** (``embedding_cosine``): one named attack every row has; the paper's Figs. 2–3
  plot this one.

Data sets are those with PPGSL runs; the baselines' runs on them are drawn beside them.
"""

from __future__ import annotations

import math
import statistics
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

PROTOCOLS = ("ppgsl", "edge-random", "edgerand", "lapgraph", "none")
#: The table's attacks (record key → label): the paper's eight and feature cosine.
ATTACKS = {
    "cn": "CN",
    "aa": "AA",
    "ra": "RA",
    "embedding_cosine": "GAE-cos",
    "embedding_svm": "GAE-SVM",
    "node2vec_cosine": "N2V-cos",
    "node2vec_svm": "N2V-SVM",
    "seal": "SEAL",
    "feature_cosine": "feature cos",
}
#: The attacks that read the released graph (server/evaluation/attack.py's GRAPH_ATTACKS).
GRAPH_ATTACKS = (
    "cn",
    "aa",
    "ra",
    "jaccard",
    "embedding_cosine",
    "embedding_svm",
    "node2vec_cosine",
    "node2vec_svm",
    "seal",
)
#: The one attack all rows share, the paper's GAE+sim.
SHARED_ATTACK = "embedding_cosine"
#: The two attack views: name → (how a cell's y is read, axis label).
VIEWS = {
    "max_graph": "strongest graph attack (max_graph)",
    SHARED_ATTACK: "GAE+sim attack (embedding cosine)",
}
DATASET_LABELS = {"cora": "Cora", "citeseer": "CiteSeer", "polblogs": "PolBlogs"}
#: Each baseline family: protocol → (label, the parameter its points run over).
BASELINES = {
    "edge-random": ("Random", "r"),
    "edgerand": ("EdgeRand", "ε"),
    "lapgraph": ("LapGraph", "ε"),
}
ORIGINAL = "original"


def stated_points() -> dict[str, dict[str, float]]:
    """The paper's stated points (``ppgsl_stated`` of paper_numbers.toml): dataset →
    attack_auc, lp_auc, nc_f1."""
    text = resources.files(__package__).joinpath("paper_numbers.toml").read_text("utf-8")
    return tomllib.loads(text).get("ppgsl_stated", {})


def ppgsl_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finished runs of the frontier's protocols; the final ones when any is marked final."""
    done = [r for r in rows if r.get("protocol") in PROTOCOLS and r.get("status") == "done"]
    final = [r for r in done if (r.get("extra") or {}).get("phase") == "final"]
    return final or done


def _param(row: dict[str, Any], name: str) -> Any:
    """A protocol parameter of the run: its configuration's, else the protocol's default."""
    cfg = row.get("config") or {}
    if cfg.get(name) is not None:
        return cfg[name]
    from ldpgraph.protocols import registry

    try:
        info = registry.protocol_info(str(row["protocol"]))
    except registry.UnknownProtocolError:
        return None
    declared = {p.name: p.default for p in info.params}
    return declared.get(name)


def point_of(row: dict[str, Any]) -> tuple[str, float | None]:
    """The run's (method family, parameter): ("PPGSL k=1", α), ("Random", r), ("EdgeRand", ε),
    ("LapGraph", ε), ("original", None)."""
    protocol = row["protocol"]
    if protocol == "ppgsl":
        return f"PPGSL k={int(_param(row, 'ppgsl_k'))}", float(_param(row, "ppgsl_alpha"))
    if protocol == "edge-random":
        return BASELINES[protocol][0], float(_param(row, "edge_ratio"))
    if protocol in BASELINES:
        return BASELINES[protocol][0], float(row["epsilon"])
    return ORIGINAL, None


def family_parameter(family: str) -> str:
    """The parameter a family's points run over (α, r, ε), for labels."""
    if family.startswith("PPGSL"):
        return "α"
    return next((p for label, p in BASELINES.values() if label == family), "")


def attack_section(row: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The attack section the frontier reads and its targets: PPGSL's protected links
    (``attack.protected``), every other method's hidden links (``attack``)."""
    attack = (row.get("metrics") or {}).get("attack")
    if not isinstance(attack, dict):
        attack = None
    if row["protocol"] == "ppgsl":
        protected = (attack or {}).get("protected")
        return (protected if isinstance(protected, dict) else None), "protected"
    return attack, "hidden"


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def max_graph(section: dict[str, Any] | None) -> tuple[float | None, str | None]:
    """The strongest graph attack's AUC and name: the record's ``max_graph`` where it has one
    (protected sections), else the best of :data:`GRAPH_ATTACKS` the section has."""
    if not section:
        return None, None
    if _num(section.get("max_graph")) is not None:
        return float(section["max_graph"]), section.get("best_graph")
    have = {a: v for a in GRAPH_ATTACKS if (v := _num(section.get(a))) is not None}
    if not have:
        return None, None
    best = max(have, key=have.__getitem__)
    return have[best], best


def row_values(row: dict[str, Any]) -> dict[str, float]:
    """The run's numbers of the table's columns (only those it has): ``lp``, ``nc``, each
    attack of :data:`ATTACKS`, ``max_graph`` (on the targets of :func:`attack_section`) and
    ``hidden_max_graph`` (on the hidden links, the same targets for every method)."""
    out: dict[str, float] = {}
    metrics = row.get("metrics") or {}
    lp = _num((metrics.get("lp") or {}).get("auc"))
    if lp is not None:
        out["lp"] = lp
    nc = _num(row.get("test_acc"))
    if nc is None:
        nc = _num((metrics.get("accuracy") or {}).get("test"))
    if nc is not None:
        out["nc"] = nc
    section, _ = attack_section(row)
    for key in ATTACKS:
        value = _num((section or {}).get(key))
        if value is not None:
            out[key] = value
    value, _ = max_graph(section)
    if value is not None:
        out["max_graph"] = value
    hidden = metrics.get("attack") if isinstance(metrics.get("attack"), dict) else None
    value, _ = max_graph(hidden)
    if value is not None:
        out["hidden_max_graph"] = value
    return out


def frontier_cells(rows: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """(dataset, family, parameter) → {runs, targets, best (the strongest graph attacks'
    names, most frequent first), values: column → the runs' values}, over the final runs."""
    cells: dict[tuple, dict[str, Any]] = {}
    for r in ppgsl_rows(rows):
        family, param = point_of(r)
        cell = cells.setdefault(
            (r["dataset"], family, param),
            {"runs": 0, "targets": attack_section(r)[1], "best": Counter(),
             "values": defaultdict(list)},
        )  # fmt: skip
        cell["runs"] += 1
        for column, value in row_values(r).items():
            cell["values"][column].append(value)
        _, best = max_graph(attack_section(r)[0])
        if best:
            cell["best"][best] += 1
    return cells


def mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def family_order(family: str) -> tuple:
    if family.startswith("PPGSL k="):
        return (0, -int(family.removeprefix("PPGSL k=")), family)
    order = [label for label, _ in BASELINES.values()] + [ORIGINAL]
    return (1, order.index(family) if family in order else len(order), family)


def ppgsl_datasets(cells: Iterable[tuple]) -> list[str]:
    """The data sets with PPGSL cells, in the paper's order, then the rest by name."""
    have = {k[0] for k in cells if k[1].startswith("PPGSL")}
    order = [d for d in DATASET_LABELS if d in have]
    return order + sorted(have - set(order))


def frontier_series(
    cells: dict[tuple, dict[str, Any]], dataset: str, x: str, y: str
) -> dict[str, list[dict[str, Any]]]:
    """family → its points on ``dataset`` in parameter order (α, r, ε ascending): each
    {param, x, xerr, y, yerr, runs}; a cell without both values is left out. ``x`` and ``y``
    are columns of :func:`row_values` (``lp``/``nc``; ``max_graph``/an attack key)."""
    series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (ds, family, param), cell in cells.items():
        xs, ys = cell["values"].get(x), cell["values"].get(y)
        if ds != dataset or not xs or not ys:
            continue
        (mx, sx), (my, sy) = mean_std(xs), mean_std(ys)
        series[family].append(
            {"param": param, "x": mx, "xerr": sx, "y": my, "yerr": sy, "runs": cell["runs"]}
        )
    for points in series.values():
        points.sort(key=lambda p: -math.inf if p["param"] is None else p["param"])
    return dict(sorted(series.items(), key=lambda kv: family_order(kv[0])))
