"""DPGGAN / DPGVAE's Tables 1 and 2 from a results store, each cell beside the paper's (its
§4; the paper's numbers in paper_numbers.toml).

A cell is one (collection data set, model, operating rule, ε) over the final runs of the
``collection`` metric (record section ``collection_stats``): Table 1 the mean over graphs of
|stat(generated) − stat(original)| for LCC, TC, CPL, GINI and REDE, with the measured
"Original" row (the mean of each statistic over the originals, which the paper's row should
match exactly); Table 2 the degree-histogram and motif-count cosine similarities and GIN
accuracy, when a run has a ``gin`` section (:func:`gin_accuracy`).

The two operating rules are kept apart by the sweep's variant label: ``paper-*`` is the
paper's (σ fixed, T from the budget, top-M with the TRUE edge count, so the release's own
privacy report says ε = ∞ and ε is only the generator's training target) and ``dp-*`` the
strict one (σ calibrated to ε, a Laplace-noised edge count). ε in the tables is the target ε
of the run under the paper's accounting; the "proven ε" column is what its privacy report
states as its proven headline: ∞ for both rules, since the paper's training has no proven
edge-level bound (docs/privacy/dpggan.md; stored runs made before said the paper's figure).
"""

from __future__ import annotations

import math
import statistics
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .tables import save_figure

PROTOCOLS = ("dpgvae", "dpggan")
MODEL_LABELS = {"dpgvae": "DPGVAE", "dpggan": "DPGGAN"}
DATASET_LABELS = {"dblp-collection": "DBLP", "imdb-collection": "IMDB"}
#: Table 1's statistics in the paper's order (collection_stats.table1 key → label).
TABLE1 = {"lcc": "LCC", "tc": "TC", "cpl": "CPL", "gini": "GINI", "rede": "REDE"}
#: Table 2's columns (our value's key → label); ``gin`` is read by :func:`gin_accuracy`.
TABLE2 = {"degree": "degree dist. (cosine)", "motif": "motif ct. (cosine)", "gin": "GIN acc."}
RULES = {
    "paper": "paper's (true edge count)",
    "dp": "calibrated, noised count",
    # experiments/dpggan-tables.toml's t2-* entries: the strict release again at ε = 1 with the
    # gin metric (the same seed as dp-*, so kept apart rather than counted as a second run)
    "t2": "calibrated, noised count, with GIN",
}
#: The paper's no-DP baselines (rows of its tables we do not run), in its order.
BASELINES = {"gvae": "GVAE (no DP)", "netgan": "NetGAN (no DP)", "graphrnn": "GraphRNN (no DP)"}


def paper_tables() -> tuple[dict, dict]:
    """Tables 1 and 2 of paper_numbers.toml: dataset → row ("original", a baseline, or
    "<model>@<ε>") → column → value."""
    text = resources.files(__package__).joinpath("paper_numbers.toml").read_text("utf-8")
    numbers = tomllib.loads(text)
    return numbers.get("dpggan_table1", {}), numbers.get("dpggan_table2", {})


def dpggan_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finished DPGGAN / DPGVAE runs; the final ones when any is marked final."""
    done = [r for r in rows if r.get("protocol") in PROTOCOLS and r.get("status") == "done"]
    final = [r for r in done if (r.get("extra") or {}).get("phase") == "final"]
    return final or done


def rule_of(row: dict[str, Any]) -> str:
    """``paper`` or ``dp`` from the variant label (``paper-*``, ``dp-*``); a run without one
    by its edge selection (``topk_true``: paper, unset or ``topk_dp``: dp); any other variant
    is its own rule, named by its label."""
    entry = (row.get("extra") or {}).get("entry") or ""
    for rule in RULES:
        if entry.startswith(rule + "-"):
            return rule
    if entry and entry not in PROTOCOLS:
        return entry
    selection = (row.get("config") or {}).get("dpg_edge_selection") or "topk_dp"
    return {"topk_true": "paper", "topk_dp": "dp"}.get(selection, f"edge selection {selection}")


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def gin_accuracy(row: dict[str, Any]) -> tuple[float | None, float | None]:
    """(GIN accuracy on the generated graphs, on the originals) from the run's ``gin`` section
    (server/evaluation/gin.py): the final-epoch fold means ``gin.generated.final`` and
    ``gin.original.final`` (the optimistic best epoch is not the table's)."""
    gin = (row.get("metrics") or {}).get("gin")
    if not isinstance(gin, dict):
        return None, None
    generated, original = gin.get("generated"), gin.get("original")
    return (
        _num(generated.get("final") if isinstance(generated, dict) else None),
        _num(original.get("final") if isinstance(original, dict) else None),
    )


def row_values(row: dict[str, Any]) -> dict[str, float]:
    """The run's numbers (only those it has): ``<stat>`` (Table 1's mean |Δ|), ``original:<stat>``
    (the originals' mean), ``degree``, ``motif``, ``motif_skipped``, ``gin``, ``original:gin``
    and ``release_epsilon`` (the proven headline: ∞ for every run of the paper's training,
    stored before that was said or after)."""
    section = (row.get("metrics") or {}).get("collection_stats") or {}
    t1, t2 = section.get("table1") or {}, section.get("table2") or {}
    out: dict[str, float] = {}
    for key in TABLE1:
        stat = t1.get(key) if isinstance(t1.get(key), dict) else {}
        for name, value in ((key, stat.get("abs_diff")), (f"original:{key}", stat.get("original"))):
            if _num(value) is not None:
                out[name] = float(value)
    for name, key in (("degree", "degree_cosine"), ("motif", "motif_cosine"),
                      ("motif_skipped", "motif_pairs_skipped")):  # fmt: skip
        if _num(t2.get(key)) is not None:
            out[name] = float(t2[key])
    generated, original = gin_accuracy(row)
    if generated is not None:
        out["gin"] = generated
    if original is not None:
        out["original:gin"] = original
    # No configuration of the paper's training has a proven bound (docs/privacy/dpggan.md):
    # runs stored before that was said carry the paper's claim as their ε; the headline of
    # every DPGGAN/DPGVAE release is ∞ (the target ε, the paper's figure, is the cell's key).
    if (row.get("privacy") or {}).get("epsilon") is not None:
        out["release_epsilon"] = math.inf
    return out


def table_cells(rows: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """(dataset, model, rule, ε) → {runs, values: column → the runs' values}."""
    cells: dict[tuple, dict[str, Any]] = {}
    for r in dpggan_rows(rows):
        key = (r["dataset"], r["protocol"], rule_of(r), float(r["epsilon"]))
        cell = cells.setdefault(key, {"runs": 0, "values": defaultdict(list)})
        cell["runs"] += 1
        for column, value in row_values(r).items():
            cell["values"][column].append(value)
    return cells


def _datasets(cells: Iterable[tuple]) -> list[str]:
    have = {k[0] for k in cells}
    return [d for d in DATASET_LABELS if d in have] + sorted(have - set(DATASET_LABELS))


def _mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _cell(values: Sequence[float] | None, paper: float | None, runs: int) -> str:
    """``ours ± std (paper)``; ours "—" without a value, the paper's part left out without
    one; (n=k) where fewer runs than the cell's have the value."""
    if values:
        mean, std = _mean_std(values)
        ours = f"{mean:.4g}" + ("" if std is None else f" ± {std:.2g}")
        ours += "" if len(values) == runs else f" (n={len(values)})"
    else:
        ours = "—"
    return ours + ("" if paper is None else f" ({paper:g})")


def _epsilon_text(values: Sequence[float] | None) -> str:
    if not values:
        return "—"
    if any(math.isinf(v) for v in values):
        return "∞" if all(math.isinf(v) for v in values) else "∞ (some runs)"
    return f"{statistics.fmean(values):.3g}"


def _model_keys(cells: dict[tuple, dict[str, Any]], dataset: str) -> list[tuple]:
    """The data set's cells by model (the paper's order), rule (paper's first), ε descending
    (the paper's row order)."""
    rules = list(RULES)
    return sorted(
        (k for k in cells if k[0] == dataset),
        key=lambda k: (
            PROTOCOLS.index(k[1]),
            rules.index(k[2]) if k[2] in rules else len(rules),
            k[2],
            -k[3],
        ),
    )


def _rule_label(rule: str) -> str:
    return RULES.get(rule, rule)


def table1_markdown(cells: dict[tuple, dict[str, Any]], dataset: str) -> str:
    """Table 1 on ``dataset``: the measured Original row, then per (model, rule, ε) our mean
    |Δ| per graph ± std over runs, the paper's value in parentheses; the paper's no-DP
    baselines last (its values only)."""
    paper = paper_tables()[0].get(dataset, {})
    head = ["model", "rule", "ε (target)", "proven ε", "runs", *TABLE1.values()]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = _model_keys(cells, dataset)
    original: dict[str, list[float]] = defaultdict(list)
    runs = 0
    for k in keys:
        runs += cells[k]["runs"]
        for stat in TABLE1:
            original[stat] += cells[k]["values"].get(f"original:{stat}", [])
    theirs = paper.get("original", {})
    # the same graphs in every run: the mean, without a spread
    measured = {s: [statistics.fmean(v)] for s, v in original.items() if v}
    lines.append(
        "| Original (measured) | — | — | — | " + f"{runs} | "
        + " | ".join(_cell(measured.get(stat), theirs.get(stat), 1) for stat in TABLE1)
        + " |"
    )  # fmt: skip
    for k in keys:
        cell = cells[k]
        values, n = cell["values"], cell["runs"]
        theirs = paper.get(f"{k[1]}@{k[3]:g}", {})
        lines.append(
            f"| {MODEL_LABELS.get(k[1], k[1])} | {_rule_label(k[2])} | {k[3]:g} | "
            f"{_epsilon_text(values.get('release_epsilon'))} | {n} | "
            + " | ".join(_cell(values.get(stat), theirs.get(stat), n) for stat in TABLE1)
            + " |"
        )
    for key, label in BASELINES.items():
        if key in paper:
            lines.append(
                f"| {label}, paper only | — | — | — | — | "
                + " | ".join(_cell(None, paper[key].get(stat), 0) for stat in TABLE1)
                + " |"
            )
    return "\n".join(lines)


def table2_markdown(cells: dict[tuple, dict[str, Any]], dataset: str) -> str:
    """Table 2 on ``dataset``: per (model, rule, ε) the degree and motif cosine and GIN
    accuracy, the paper's value in parentheses (it has ε = 1 only), the motif pairs left out
    over the limit; GIN on the originals first where a run measured it."""
    paper = paper_tables()[1].get(dataset, {})
    head = ["model", "rule", "ε (target)", "runs", *TABLE2.values(), "motif pairs skipped"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = _model_keys(cells, dataset)
    original_gin = [v for k in keys for v in cells[k]["values"].get("original:gin", [])]
    if original_gin:
        lines.append(
            f"| Original (measured) | — | — | {len(original_gin)} | — | — | "
            f"{_cell(original_gin, None, len(original_gin))} | — |"
        )
    for k in keys:
        cell = cells[k]
        values, n = cell["values"], cell["runs"]
        theirs = paper.get(f"{k[1]}@{k[3]:g}", {})
        skipped = values.get("motif_skipped")
        lines.append(
            f"| {MODEL_LABELS.get(k[1], k[1])} | {_rule_label(k[2])} | {k[3]:g} | {n} | "
            + " | ".join(_cell(values.get(c), theirs.get(c), n) for c in TABLE2)
            + f" | {'—' if not skipped else f'{statistics.fmean(skipped):g}'} |"
        )
    for key, label in BASELINES.items():
        if key in paper:
            lines.append(
                f"| {label}, paper only | — | — | — | "
                + " | ".join(_cell(None, paper[key].get(c), 0) for c in TABLE2)
                + " | — |"
            )
    return "\n".join(lines)


def plot_tc_vs_epsilon(cells: dict[tuple, dict[str, Any]], dataset: str, out: Path) -> Path:
    """TC error (mean |Δ| triangles per graph) against the target ε: ours one line per (model,
    rule) with the runs' std, the paper's Table 1 per model dashed with crosses."""
    import matplotlib.pyplot as plt

    paper = paper_tables()[0].get(dataset, {})
    colours = dict(zip(PROTOCOLS, ("tab:blue", "tab:red"), strict=True))
    styles = {"paper": "-", "dp": ":"}
    fig, ax = plt.subplots(figsize=(5.6, 4.0), dpi=110)
    lines: dict[tuple[str, str], list[tuple[float, float, float]]] = defaultdict(list)
    for (ds, model, rule, eps), cell in cells.items():
        values = cell["values"].get("tc")
        if ds == dataset and values:
            mean, std = _mean_std(values)
            lines[(model, rule)].append((eps, mean, std or 0.0))
    for (model, rule), pts in sorted(lines.items()):
        pts.sort()
        ax.errorbar(
            [p[0] for p in pts],
            [p[1] for p in pts],
            yerr=[p[2] for p in pts],
            color=colours.get(model),
            linestyle=styles.get(rule, "-."),
            marker="o",
            capsize=3,
            label=f"{MODEL_LABELS.get(model, model)}, {_rule_label(rule)} (ours)",
        )
    for model in PROTOCOLS:
        theirs = sorted(
            (float(row.partition("@")[2]), v["tc"])
            for row, v in paper.items()
            if row.startswith(model + "@") and "tc" in v
        )
        if theirs:
            ax.plot([p[0] for p in theirs], [p[1] for p in theirs], color=colours[model],
                    linestyle="--", marker="x", alpha=0.7,
                    label=f"{MODEL_LABELS[model]} (paper)")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("target ε under the paper's accounting (proven ε of every release: ∞)")
    ax.set_ylabel("TC: mean |Δ triangles| per graph")
    ax.set_title(f"DPGGAN / DPGVAE, {DATASET_LABELS.get(dataset, dataset)}: Table 1 TC", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, out)


NOTE = (
    "Ours: mean over the final runs ± sample std (n where fewer runs have the value); the "
    "paper's number in parentheses (it publishes no std). Table 1: mean over graphs of "
    "|stat(generated) − stat(original)| (smaller is better); the Original row is the mean "
    "statistic of the original graphs, which should match the paper's exactly. Table 2: mean "
    "cosine similarity per graph pair (larger is better); the paper has ε = 1 only. Rules: "
    "*paper's rule* (`paper-*` entries) selects each graph's top-M edges with the TRUE edge "
    "count; *calibrated* (`dp-*`: σ to the paper's accounting) spends part of ε on a noised "
    "edge count. Under both rules ε is "
    "the target of the paper's accounting (its convention): the paper's training has no proven "
    "edge-level bound, so the proven ε (the headline of every run's privacy report) is ∞ "
    "(docs/privacy/dpggan.md). GIN accuracy: '—' where the runs have no `gin` section."
)


def write_dpggan_report(rows: list[dict[str, Any]], out_dir: Path) -> tuple[list[Path], list[str]]:
    """``dpggan-tables.md`` and one TC-against-ε figure per data set, when the rows hold DPGGAN
    or DPGVAE runs; returns the written paths and the index lines."""
    cells = table_cells(rows)
    if not cells:
        return [], []
    parts = ["# DPGGAN / DPGVAE: Tables 1 and 2 beside the paper", "", NOTE, ""]
    written: list[Path] = []
    figures: list[str] = []
    for ds in _datasets(cells):
        label = DATASET_LABELS.get(ds, ds)
        parts += [f"## Table 1, {label} ({ds})", "", table1_markdown(cells, ds), ""]
        parts += [f"## Table 2, {label} ({ds})", "", table2_markdown(cells, ds), ""]
        if any(k[0] == ds and c["values"].get("tc") for k, c in cells.items()):
            path = plot_tc_vs_epsilon(cells, ds, out_dir / f"dpggan-tc-vs-eps-{ds}.png")
            written.append(path)
            parts += [f"![{label}: TC error against ε]({path.name})", ""]
            figures += ["", f"![DPGGAN {label}: TC error against ε]({path.name})"]
    table = out_dir / "dpggan-tables.md"
    table.write_text("\n".join(parts))
    index = [
        "",
        "## DPGGAN / DPGVAE, Tables 1-2",
        "",
        f"Both tables beside the paper's, by operating rule: [{table.name}]({table.name}).",
        *figures,
    ]
    return [table, *written], index
