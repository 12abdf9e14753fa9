"""The cross-protocol table: local and central releases of one graph side by side on the four
metric families (accuracy, graph statistics, link prediction, link-inference attacks), with the
proven ε each run's privacy report states (its headline ``privacy.epsilon``: ∞ without a proof)
beside the ε it was asked for and the paper's own figure (``paper_epsilon``) where the report
gives one. The figures' x axis is the ε asked for, labelled so.

Written for every data set whose final runs hold at least two methods with a graph-family
metric (``graph``, ``lp`` or ``attack``), local and central DP among them; a cell a method's
release cannot serve (a model release has no graph) shows "–".

Every row carries the features-only floor at its ε and the non-private bound, where the store
has them: a release whose accuracy does not beat an MLP on the same ε's features alone gains
nothing from its graph. The floor of a local row is ``features-only`` (the 1-bit features with
all of ε); of a central row ``dpar-features`` (DP-SGD on the features alone, node-level), else
``features-only``. Below the table a verdict per ε names the family with the best accuracy:
LDP graph, central, or features only.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .tables import save_figure

#: The graph statistics averaged into the table's "graph MRE" column (PrivDPR's, §6).
MRE_STATS = ("triangles", "wedges", "claws", "rede", "cpl", "diameter", "lcc")
FAMILIES = ("graph_stats", "lp", "attack")
#: The feature-only floors (no edges): local (1-bit features, all of ε) and central (DP-SGD).
LOCAL_FLOOR, CENTRAL_FLOOR = "features-only", "dpar-features"
#: The non-private bound (the true graph and features).
BOUND = "none"


def _method(row: dict[str, Any]) -> str:
    return (row.get("extra") or {}).get("entry") or row["protocol"]


def _final(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    done = [r for r in rows if r.get("status") == "done"]
    final = [r for r in done if (r.get("extra") or {}).get("phase") == "final"]
    return final or done


def _values(row: dict[str, Any]) -> dict[str, float]:
    """The run's numbers of the table's columns (only those it has)."""
    m = row.get("metrics") or {}
    out: dict[str, float] = {}
    if row.get("test_acc") is not None:
        out["accuracy"] = 100.0 * float(row["test_acc"])
    stats = m.get("graph_stats") or {}
    res = [
        float(stats[k]["re"])
        for k in MRE_STATS
        if isinstance(stats.get(k), dict)
        and isinstance(stats[k].get("re"), int | float)
        and math.isfinite(stats[k]["re"])
    ]
    if res:
        # the median: one exploding statistic (triangles of a dense release) would swamp a mean
        out["graph_mre"] = statistics.median(res)
    edges = stats.get("edges")
    if isinstance(edges, dict) and edges.get("original"):
        out["edges_ratio"] = float(edges["release"]) / float(edges["original"])
    if isinstance(stats.get("degree_ks"), int | float):
        out["degree_ks"] = float(stats["degree_ks"])
    if isinstance((m.get("lp") or {}).get("auc"), int | float):
        out["lp_auc"] = float(m["lp"]["auc"])
    if isinstance((m.get("attack") or {}).get("max"), int | float):
        out["attack_max"] = float(m["attack"]["max"])
        best = m["attack"].get("best")
        if isinstance(best, str):
            out["attack_best:" + best] = 1.0
    privacy = row.get("privacy") or {}
    if isinstance(privacy.get("epsilon"), int | float):
        out["formal_epsilon"] = float(privacy["epsilon"])
    if isinstance(privacy.get("paper_epsilon"), int | float):
        out["paper_epsilon"] = float(privacy["paper_epsilon"])
    return out


def _eps_cell(values: list[float] | None) -> str:
    """A run's ε: ∞ where any run of the cell has no proven bound (never averaged away)."""
    if values and any(math.isinf(v) for v in values):
        return "∞" if all(math.isinf(v) for v in values) else "∞ (some runs)"
    return _fmt([max(values)], 3) if values else _fmt(values, 3)  # the worst run's bound


def comparison_cells(rows: Iterable[dict[str, Any]]) -> dict[str, dict[tuple, dict]]:
    """dataset → (method, ε) → column → list of the runs' values; the data sets whose runs
    hold at least two methods with a graph-family metric."""
    cells: dict[str, dict[tuple, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    families: dict[str, set[str]] = defaultdict(set)
    for r in _final(rows):
        sections = set(r.get("metrics") or {})
        if sections & set(FAMILIES):
            families[r["dataset"]].add(_method(r))
        for column, value in _values(r).items():
            cells[r["dataset"]][(_method(r), float(r["epsilon"]), r["protocol"])][column].append(
                value
            )
    return {
        ds: dict(c)
        for ds, c in cells.items()
        if len(families[ds]) >= 2 and {"ldp", "central"} <= {_privacy_kind(k[2]) for k in c}
    }


def _fmt(values: list[float] | None, digits: int) -> str:
    if not values:
        return "–"
    mean = statistics.fmean(values)
    text = f"{mean:.{digits}f}"
    if len(values) > 1:
        text += f" ± {statistics.stdev(values):.{digits}f}"
    return text


def _privacy_kind(protocol: str) -> str:
    from ldpgraph.protocols.registry import UnknownProtocolError, make_protocol

    try:
        return str(make_protocol(protocol).privacy_model)
    except (UnknownProtocolError, ValueError):  # not registered here
        return "?"


def method_label(method: str) -> str:
    """The protocol's label (the paper's name) for a registered protocol, else the entry's own
    name (results.report imports this module: no import back)."""
    from ldpgraph.protocols.registry import protocol_info, protocol_names

    return protocol_info(method).label if method in protocol_names() else method


def _accuracy(cells: dict[tuple, dict], method: str, eps: float | None) -> list[float]:
    """The accuracies of ``method``'s runs at ``eps`` (any ε where ``None``: the bound)."""
    return [
        v
        for (m, e, _p), cols in cells.items()
        if m == method and (eps is None or e == eps)
        for v in cols.get("accuracy", [])
    ]


def floor_of(cells: dict[tuple, dict], protocol: str, eps: float) -> tuple[str, list[float]]:
    """The features-only floor a row at ``eps`` is judged against: its name and accuracies."""
    if _privacy_kind(protocol) == "central" and _accuracy(cells, CENTRAL_FLOOR, eps):
        return CENTRAL_FLOOR, _accuracy(cells, CENTRAL_FLOOR, eps)
    return LOCAL_FLOOR, _accuracy(cells, LOCAL_FLOOR, eps)


def beats_floor(accuracy: list[float] | None, floor: list[float]) -> str:
    """ "yes (+d)" / "no (−d)" on the means, "–" where the floor or the accuracy was not run."""
    if not accuracy or not floor:
        return "–"
    gap = statistics.fmean(accuracy) - statistics.fmean(floor)
    return f"yes (+{gap:.1f})" if gap > 0 else f"no ({gap:+.1f})".replace("-", "−")


def family(protocol: str) -> str:
    """The verdict's family of a method: features only, LDP graph, central or the bound."""
    if protocol in (LOCAL_FLOOR, CENTRAL_FLOOR):
        return "features only"
    if protocol == BOUND:
        return "non-private"
    return {"ldp": "LDP graph", "central": "central"}.get(_privacy_kind(protocol), "other")


def verdict_lines(cells: dict[tuple, dict]) -> list[str]:
    """Per ε, the family with the best mean accuracy and by how much over the next family."""
    lines = []
    for eps in sorted({k[1] for k in cells}):
        best: dict[str, tuple[float, str]] = {}
        for method, e, protocol in cells:
            accs = _accuracy(cells, method, eps) if e == eps else []
            fam = family(protocol)
            if accs and fam in ("features only", "LDP graph", "central"):
                mean = statistics.fmean(accs)
                if fam not in best or mean > best[fam][0]:
                    best[fam] = (mean, method_label(method))
        if len(best) < 2:
            continue
        ranked = sorted(best.items(), key=lambda kv: -kv[1][0])
        (win, (acc, who)), (second, (acc2, who2)) = ranked[0], ranked[1]
        lines.append(
            f"- ε = {eps:g}: **{win}** wins ({who} {acc:.1f} %, then {second}: {who2} "
            f"{acc2:.1f} %)" + ("" if "features only" in best else "; the floor was not run")
        )
    return lines


def comparison_markdown(rows: Iterable[dict[str, Any]]) -> str:
    """One table per data set: a row per (method, ε), the four families' headline numbers
    (mean ± sample std over the final runs), the formal ε the reports state, the
    features-only floor at that ε and the non-private bound, then a verdict per ε."""
    parts = []
    for ds, cells in sorted(comparison_cells(rows).items()):
        bound = _accuracy(cells, BOUND, None)
        lines = [
            f"### {ds}",
            "",
            "| method | DP | ε asked | proven ε (headline) | paper's ε | runs | accuracy (%) | "
            "features-only floor (%) | beats the floor | non-private (%) | "
            "edges / original | median RE (7 stats) | degree KS | LP AUC | max attack AUC | "
            "strongest attack |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for (method, eps, protocol), cols in sorted(
            cells.items(), key=lambda kv: (kv[0][1], kv[0][0])
        ):
            counts = [len(v) for k, v in cols.items() if not k.startswith("attack_best")]
            runs = max(counts, default=0)
            best = sorted(
                (k.split(":", 1)[1] for k in cols if k.startswith("attack_best:")),
                key=lambda name: -len(cols["attack_best:" + name]),
            )
            paper = cols.get("paper_epsilon")
            floor_name, floor = floor_of(cells, protocol, eps)
            own = protocol in (LOCAL_FLOOR, CENTRAL_FLOOR, BOUND)
            floor_cell = f"{_fmt(floor, 1)} ({floor_name})" if floor and not own else "–"
            lines.append(
                f"| {method_label(method)} | {_privacy_kind(protocol)} | {eps:g} | "
                f"{_eps_cell(cols.get('formal_epsilon'))} | {_eps_cell(paper)} | {runs} | "
                f"{_fmt(cols.get('accuracy'), 1)} | {floor_cell} | "
                f"{'–' if own else beats_floor(cols.get('accuracy'), floor)} | "
                f"{_fmt(bound, 1)} | {_fmt(cols.get('edges_ratio'), 2)} | "
                f"{_fmt(cols.get('graph_mre'), 3)} | "
                f"{_fmt(cols.get('degree_ks'), 3)} | {_fmt(cols.get('lp_auc'), 3)} | "
                f"{_fmt(cols.get('attack_max'), 3)} | {', '.join(best) or '–'} |"
            )
        verdict = verdict_lines(cells)
        if verdict:
            lines += ["", "Which family wins (best mean accuracy at each ε):", "", *verdict]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def plot_comparison(rows: Iterable[dict[str, Any]], dataset: str, out: Path) -> Path:
    """Four panels against ε, one line per method: accuracy, graph MRE, LP AUC, max attack
    AUC (chance 0.5 dashed)."""
    import matplotlib.pyplot as plt

    cells = comparison_cells(rows).get(dataset, {})
    panels = (
        ("accuracy", "test accuracy (%)"),
        ("graph_mre", "median relative error (7 statistics)"),
        ("lp_auc", "LP AUC"),
        ("attack_max", "max attack AUC"),
    )
    fig, axes = plt.subplots(1, 4, figsize=(17, 4))
    methods = sorted({k[0] for k in cells})
    for ax, (column, label) in zip(axes, panels, strict=True):
        for i, method in enumerate(methods):
            keys = sorted((k for k in cells if k[0] == method and cells[k].get(column)),
                          key=lambda k: k[1])  # fmt: skip
            if not keys:
                continue
            xs = [k[1] for k in keys]
            ys = [statistics.fmean(cells[k][column]) for k in keys]
            ax.plot(xs, ys, marker="o", color=f"C{i}", label=method_label(method))
        if column in ("lp_auc", "attack_max"):
            ax.axhline(0.5, color="0.5", ls="--", lw=1)
        ax.set_xlabel("ε asked (not the proven ε: see the table)")
        ax.set_title(label)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{dataset}: local and central DP releases side by side")
    return save_figure(fig, out, dpi=110)


def write_comparison_report(
    rows: list[dict[str, Any]], out_dir: Path
) -> tuple[list[Path], list[str]]:
    """``comparison.md`` and one figure per data set, when some data set qualifies."""
    md = comparison_markdown(rows)
    if not md:
        return [], []
    path = out_dir / "comparison.md"
    written = [path]
    figures = []
    for ds in sorted(comparison_cells(rows)):
        fig = plot_comparison(rows, ds, out_dir / f"comparison-{ds}.png")
        written.append(fig)
        figures.append(f"![{ds}]({fig.name})")
    path.write_text(
        "# Local and central DP releases side by side\n\n"
        "Mean ± sample std over the final runs. Median RE: the median over triangles, wedges, "
        "claws, REDE, CPL, diameter and LCC of each statistic's relative error against the "
        "original graph (a median: a dense release's triangle count is off by 10^3-10^5 and "
        "would swamp a mean; metrics.md has each statistic's MRE). LP AUC: hidden links "
        "against hidden non-links, ranked by a scorer "
        "trained on the release. Max attack AUC: the strongest attack each run recorded on "
        "the same hidden pairs (0.5: the attacker learns nothing): CN, AA, RA, Jaccard, feature "
        "cosine and embedding cosine, and in runs made since they exist GAE+SVM, node2vec "
        "cosine and SVM and SEAL-lite (metrics.md lists each). Proven ε: the headline the "
        "run's privacy report states, proven for the mechanism as run (∞ where there is no "
        "proof; docs/privacy/); paper's ε: the paper's own figure where the report gives one. "
        "A run stored before a proof was corrected keeps the ε it stated then. Local and "
        "central ε are different guarantees.\n\n" + md + "\n\n" + "\n\n".join(figures) + "\n"
    )
    return written, ["", f"Side by side: [{path.name}]({path.name})."]
