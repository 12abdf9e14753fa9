"""PPGSL's privacy–utility frontier (Figs. 2–5 shape, spec shared/specs/004-ppgsl.md §6.2–6.3)
from a results store.

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
from pathlib import Path
from typing import Any

from .tables import save_figure

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


def _mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _family_order(family: str) -> tuple:
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
        (mx, sx), (my, sy) = _mean_std(xs), _mean_std(ys)
        series[family].append(
            {"param": param, "x": mx, "xerr": sx, "y": my, "yerr": sy, "runs": cell["runs"]}
        )
    for points in series.values():
        points.sort(key=lambda p: -math.inf if p["param"] is None else p["param"])
    return dict(sorted(series.items(), key=lambda kv: _family_order(kv[0])))


def _fmt(values: Sequence[float] | None, runs: int) -> str:
    if not values:
        return "—"
    mean, std = _mean_std(values)
    text = f"{mean:.3f}" + ("" if std is None else f" ± {std:.3f}")
    return text + ("" if len(values) == runs else f" (n={len(values)})")


def _attack_label(name: str) -> str:
    return ATTACKS.get(name) or name.replace("_", " ").capitalize()


def _param_text(family: str, param: float | None) -> str:
    return "—" if param is None else f"{family_parameter(family)} = {param:g}"


def frontier_markdown(cells: dict[tuple, dict[str, Any]], dataset: str) -> str:
    """One line per (method, parameter) on ``dataset``: LP AUC, NC accuracy, each attack's AUC
    and ``max_graph`` on the method's targets, and ``max_graph`` on the hidden links; the
    paper's stated point last where it has one."""
    keys = sorted(
        (k for k in cells if k[0] == dataset),
        key=lambda k: (_family_order(k[1]), -math.inf if k[2] is None else k[2]),
    )
    head = ["method", "parameter", "attack targets", "runs", "LP AUC", "NC acc",
            *ATTACKS.values(), "max_graph (attack)", "max_graph, hidden links"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        cell = cells[key]
        values, runs = cell["values"], cell["runs"]
        best = ", ".join(_attack_label(name) for name, _ in cell["best"].most_common())
        strongest = _fmt(values.get("max_graph"), runs)
        if best and strongest != "—":
            strongest += f" ({best})"
        row = [
            key[1],
            _param_text(key[1], key[2]),
            cell["targets"],
            str(runs),
            _fmt(values.get("lp"), runs),
            _fmt(values.get("nc"), runs),
            *(_fmt(values.get(a), runs) for a in ATTACKS),
            strongest,
            _fmt(values.get("hidden_max_graph"), runs),
        ]
        lines.append("| " + " | ".join(row) + " |")
    stated = stated_points().get(dataset)
    if stated:
        row = ["paper (stated, PPGSL k=1)", "—", "sensitive", "—", f"{stated['lp_auc']:.2f}",
               f"{stated['nc_f1']:.2f} (F1)", "—", "—", "—", f"≈ {stated['attack_auc']:.2f}",
               "—", "—", "—", "—", "—", "— (most of the 8 ≈ 0.50)", "—"]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def plot_frontier(cells: dict[tuple, dict[str, Any]], dataset: str, view: str, out: Path) -> Path:
    """Two panels, attack AUC (``view``: ``max_graph`` or an attack key) against LP AUC and
    against NC accuracy: one line per method family joined in parameter order and annotated
    with it, the original graph as one marker, the paper's stated point as a star, and the
    chance line at 0.5."""
    import matplotlib.pyplot as plt

    stated = stated_points().get(dataset)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (x, xlabel, paper_x) in zip(
        axes,
        (("lp", "link prediction AUC", "lp_auc"), ("nc", "node classification accuracy", "nc_f1")),
        strict=True,
    ):
        series = frontier_series(cells, dataset, x, view)
        for i, (family, points) in enumerate(series.items()):
            colour = "k" if family == ORIGINAL else colours[i % len(colours)]
            if family == ORIGINAL:
                style = {"marker": "s", "markersize": 8, "linestyle": "none"}
            else:
                style = {"marker": "o", "linestyle": "-" if family.startswith("PPGSL") else "--"}
            targets = "protected links" if family.startswith("PPGSL") else "hidden links"
            ax.errorbar(
                [p["x"] for p in points],
                [p["y"] for p in points],
                xerr=[p["xerr"] or 0.0 for p in points],
                yerr=[p["yerr"] or 0.0 for p in points],
                color=colour,
                capsize=2,
                label=f"{family} ({targets})",
                **style,
            )
            if family != ORIGINAL:
                symbol = family_parameter(family)
                for p in points:
                    ax.annotate(
                        f"{symbol}={p['param']:g}",
                        (p["x"], p["y"]),
                        xytext=(3, 3),
                        textcoords="offset points",
                        fontsize=6,
                        color=colour,
                    )
        if stated:
            ax.plot(
                [stated[paper_x]],
                [stated["attack_auc"]],
                marker="*",
                markersize=14,
                color="gold",
                markeredgecolor="k",
                linestyle="none",
                label=f"paper's stated point (attack ≈ {stated['attack_auc']:.2f} at LP AUC "
                f"{stated['lp_auc']:.2f}, NC F1 {stated['nc_f1']:.2f})",
            )
        ax.axhline(0.5, color="0.5", linestyle=":", linewidth=1, label="chance (0.5)")
        ax.set_xlabel(xlabel)
        ax.margins(x=0.12, y=0.08)  # room for the star and the annotations at the edges
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(
        f"attack AUC: {VIEWS.get(view, ATTACKS.get(view, view))}\n"
        "PPGSL: on its protected links; others: on hidden links"
    )
    # one legend for both panels, below them, so that it hides no point
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, fontsize=7)
    fig.suptitle(
        f"PPGSL privacy–utility frontier, {DATASET_LABELS.get(dataset, dataset)}: "
        f"{VIEWS.get(view, view)} (lower is more private)",
        fontsize=10,
    )
    rows = math.ceil(len(handles) / 4)
    return save_figure(fig, out, dpi=110, rect=(0, 0.04 + 0.035 * rows, 1, 1))


NOTE = (
    "Per cell: mean over the final runs (± sample std where several; n where fewer runs have "
    "the value). AUCs are fractions. **Attack targets**: PPGSL's attacks are on the sensitive "
    "links its curator knew and kept out of the release (`attack.protected`, the paper's "
    "quantity); every other method's on the links hidden before collection (`attack`), which "
    "no method saw: for the baselines exactly the paper's situation. The last column is every "
    "method on the hidden links, the same targets for all. **max_graph** is the strongest "
    "attack that reads the released graph (all but feature cosine, which a structural defence "
    "cannot move), named; GAE-cos (GAE+sim) is the paper's Figs. 2-3 attack. NC accuracy is "
    "the paper's NC F1 (micro-F1 of a single-label task). PPGSL, Random and the original have "
    "no ε."
)


def write_ppgsl_report(rows: list[dict[str, Any]], out_dir: Path) -> tuple[list[Path], list[str]]:
    """``ppgsl-frontier.md`` and, per data set with PPGSL runs, the frontier in both attack
    views (``ppgsl-frontier-<dataset>.png``: max_graph; ``ppgsl-frontier-gae-<dataset>.png``:
    GAE+sim); returns the written paths and the index lines."""
    cells = frontier_cells(rows)
    datasets = ppgsl_datasets(cells)
    if not datasets:
        return [], []
    parts = ["# PPGSL: privacy–utility frontier (the paper's Figs. 2–5 shape)", "", NOTE, ""]
    written: list[Path] = []
    figures: list[str] = []
    for ds in datasets:
        label = DATASET_LABELS.get(ds, ds)
        parts += [f"## {label}", "", frontier_markdown(cells, ds), ""]
        for view, name in (("max_graph", f"ppgsl-frontier-{ds}.png"),
                           (SHARED_ATTACK, f"ppgsl-frontier-gae-{ds}.png")):  # fmt: skip
            path = plot_frontier(cells, ds, view, out_dir / name)
            written.append(path)
            parts += [f"![{label}: {VIEWS[view]}]({path.name})", ""]
            figures += ["", f"![PPGSL {label}: {VIEWS[view]}]({path.name})"]
    table = out_dir / "ppgsl-frontier.md"
    table.write_text("\n".join(parts))
    index = [
        "",
        "## PPGSL: privacy–utility frontier",
        "",
        f"Every cell and attack: [{table.name}]({table.name}). Attack AUC on PPGSL's protected "
        "links, on the hidden links for the baselines and the original graph.",
        *figures,
    ]
    return [table, *written], index
