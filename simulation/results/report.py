"""Tables and figures of the HoGS paper, built from a results store.

Every number comes from finished runs in the store: a cell (dataset, protocol, model, ε and
the swept parameter) is the mean ± sample std of the test accuracy of its final runs (rows a
sweep marked ``phase = "final"``; a store without phases uses every finished run). Figures
carry the non-private bound (``none``) and the feature-only floor (``features-only``) as
dashed lines whenever the store has them.

Every other metric section of the runs (``graph_stats``, ``lp``, ``attack``, …) goes into
``metrics.md``: per section, a table of the cells with the mean ± std of each of its numeric
values over the cell's final runs (:func:`aggregate_metrics`). A section may be summarised by
some of its values only (:data:`SECTION_SUMMARY`): the graph statistics by the relative error
of each statistic, whose mean is the paper's MRE, and the degree KS.
"""

from __future__ import annotations

import fnmatch
import statistics
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .tables import save_figure


def _paper_numbers() -> tuple[dict, dict]:
    """The published reference numbers of ``paper_numbers.toml`` (package data, so a report
    made from an installed wheel has them too), keyed as the tables below look them up."""
    text = resources.files(__package__).joinpath("paper_numbers.toml").read_text("utf-8")
    numbers = tomllib.loads(text)
    table3 = {
        (model, method, dataset, int(eps)): (mean, std)
        for model, methods in numbers["hogs_table3"].items()
        for method, datasets in methods.items()
        for dataset, cells in datasets.items()
        for eps, (mean, std) in cells.items()
    }
    facebook = {
        (model, int(eps)): (mean, std)
        for model, cells in numbers["blink_gnn_facebook"].items()
        for eps, (mean, std) in cells.items()
    }
    return table3, facebook


#: HoGS paper, Table III (edge LDP only, test accuracy %): (model, method, dataset, ε) →
#: (mean, std); and Blink_GNN's own Blink-hard results on Facebook page-page, which our
#: Facebook BLink cells (the LastFM substitute) compare with: (model, ε) → (mean, std).
#: Sources in paper_numbers.toml.
PAPER_TABLE3, BLINK_GNN_FACEBOOK = _paper_numbers()

DATASET_LABELS = {
    "cora": "Cora",
    "citeseer": "CiteSeer",
    "lastfm": "LastFM",
    "facebook": "Facebook (LastFM substitute)",
}
REFERENCE_LINES = ("none", "features-only")


def final_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finished rows of the final phase (all finished rows if no row carries a phase); a run
    without accuracy (``--metrics graph``) is one too."""
    done = [r for r in rows if r.get("status") == "done"]
    phased = [r for r in done if (r.get("extra") or {}).get("phase") == "final"]
    return phased if phased else done


def method_of(row: dict[str, Any]) -> str:
    """The row's method: the experiment entry it ran under (a variant label such as
    ``hogs-d0.3``), else its protocol."""
    return (row.get("extra") or {}).get("entry") or row["protocol"]


def method_label(method: str) -> str:
    """A legend label: the protocol's (the paper's name), or a readable one for sweep
    variants."""
    from ldpgraph.protocols.registry import protocol_info, protocol_names

    if method in protocol_names():
        return protocol_info(method).label
    prefixes = (("hogs-d", "HoGS δ="), ("hogs-t", "HoGS τ="), ("hogs-kprop-k", "TR + KProp K="))
    for prefix, name in prefixes:
        if method.startswith(prefix):
            return name + method[len(prefix) :]
    return method


def cell_key(row: dict[str, Any], by: Sequence[str] = ()) -> tuple:
    cfg = row.get("config") or {}
    return (
        row["dataset"],
        method_of(row),
        row["model"],
        float(row["epsilon"]),
        *(cfg.get(k) for k in by),
    )


def aggregate(rows: Iterable[dict[str, Any]], by: Sequence[str] = ()) -> dict[tuple, dict]:
    """Cell → {mean, std, n} of test accuracy in %, over the given rows that have one."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        if r.get("test_acc") is not None:
            groups[cell_key(r, by)].append(100.0 * float(r["test_acc"]))
    return {
        k: {
            "mean": statistics.fmean(v),
            "std": statistics.stdev(v) if len(v) > 1 else 0.0,
            "n": len(v),
        }
        for k, v in groups.items()
    }


#: Which values of a metric section a report shows (fnmatch patterns over its dotted keys) and
#: how it labels them; a section not named here shows every numeric value under its own key.
#: ``accuracy`` is the tables and figures above; ``training`` and ``skipped_metrics`` are no
#: measurement of the release.
SECTION_SUMMARY: dict[str, tuple[tuple[str, str], ...]] = {
    "graph_stats": (("*.re", "{} MRE"), ("degree_ks", "degree KS")),
}
NOT_REPORTED = ("accuracy", "training", "skipped_metrics", "metric_stand_ins")


def _summarised(section: str, column: str) -> str | None:
    """The label of ``column`` (a dotted key inside ``section``) in a report, or None when the
    report leaves it out."""
    rules = SECTION_SUMMARY.get(section)
    if rules is None:
        return column
    for pattern, label in rules:
        if fnmatch.fnmatchcase(column, pattern):
            return label.format(column.rsplit(".", 1)[0])
    return None


def aggregate_metrics(
    rows: Iterable[dict[str, Any]], by: Sequence[str] = ()
) -> dict[str, dict[tuple, dict[str, dict]]]:
    """Section → cell → label → {mean, std, n} of every reported numeric value of the metric
    sections (:data:`SECTION_SUMMARY`, less :data:`NOT_REPORTED`), over the given rows. A value
    a run does not have (an RE undefined for it) is left out of that value's n only."""
    from .tables import mean_std, metric_columns

    values: dict[str, dict[tuple, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for r in rows:
        key = cell_key(r, by)
        for column, value in metric_columns(r).items():
            section, _, rest = column.partition(".")
            if section in NOT_REPORTED:
                continue
            label = _summarised(section, rest)
            if label is not None:
                values[section][key][label].append(value)
    return {
        section: {
            key: {label: mean_std(v) for label, v in labels.items()}
            for key, labels in cells.items()
        }
        for section, cells in values.items()
    }


def metrics_markdown(agg: dict[str, dict[tuple, dict[str, dict]]]) -> str:
    """One table per metric section: a row per cell, a column per reported value, each cell
    mean ± std over its final runs (with n where fewer runs have the value)."""

    def fmt(cell: dict | None, runs: int) -> str:
        if not cell or cell["mean"] is None:
            return "–"
        text = f"{cell['mean']:.4g}" + (f" ± {cell['std']:.2g}" if cell["std"] is not None else "")
        return text + (f" (n={cell['n']})" if cell["n"] != runs else "")

    parts = []
    for section, cells in agg.items():
        labels: dict[str, None] = {}
        for per_cell in cells.values():
            labels.update(dict.fromkeys(per_cell))
        head = ["dataset", "method", "model", "ε", "runs", *labels]
        lines = [
            f"## {section}",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
        ]
        for key in sorted(cells, key=lambda k: tuple(str(x) for x in k)):
            per_cell = cells[key]
            runs = max(c["n"] for c in per_cell.values())
            row = [str(key[0]), method_label(str(key[1])), str(key[2]), f"{key[3]:g}", str(runs)]
            row += [fmt(per_cell.get(label), runs) for label in labels]
            lines.append("| " + " | ".join(row) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _fmt(cell: dict | None) -> str:
    return "–" if cell is None else f"{cell['mean']:.1f} ± {cell['std']:.1f}"


def table3_markdown(
    agg: dict[tuple, dict], datasets: Sequence[str], epsilons: Sequence[float] = (3, 4, 5)
) -> str:
    """Table III layout: a row per (model, method), a column per (dataset, ε)."""
    head = (
        "| model | method | "
        + " | ".join(f"{DATASET_LABELS.get(d, d)} ε={e:g}" for d in datasets for e in epsilons)
        + " |"
    )
    lines = [head, "|" + "---|" * (2 + len(datasets) * len(epsilons))]
    for model in ("gcn", "sage", "gat"):
        for method in ("blink-hard", "hogs-edge"):
            cells = [
                _fmt(agg.get((d, method, model, float(e)))) for d in datasets for e in epsilons
            ]
            if all(c == "–" for c in cells):
                continue
            lines.append(
                f"| {model.upper()} | {method_label(method)} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def reproduction_markdown(
    agg: dict[tuple, dict], substitutes: dict[str, str] | None = None, tolerance: float = 3.0
) -> tuple[str, dict[str, int]]:
    """Each of our Table III cells beside the paper's, with the difference; counts of cells
    within ``tolerance`` points. ``substitutes`` maps a paper dataset to ours (lastfm →
    facebook): those rows are labelled and not counted."""
    substitutes = substitutes or {}
    lines = [
        f"| model | method | dataset | ε | ours | paper | ours − paper | within {tolerance:g} |",
        "|---|---|---|---|---|---|---|---|",
    ]
    # The criterion counts the GCN and GraphSAGE cells; GAT is reported beside them.
    counts = {"compared": 0, "within": 0, "compared_gcn_sage": 0, "within_gcn_sage": 0}
    for (model, method, ds, eps), (pm, ps) in sorted(PAPER_TABLE3.items()):
        ours_ds = substitutes.get(ds, ds)
        cell = agg.get((ours_ds, method, model, float(eps)))
        if cell is None:
            continue
        diff = cell["mean"] - pm
        sub = ours_ds != ds
        ok = abs(diff) <= tolerance
        if not sub:
            counts["compared"] += 1
            counts["within"] += int(ok)
            if model in ("gcn", "sage"):
                counts["compared_gcn_sage"] += 1
                counts["within_gcn_sage"] += int(ok)
        label = f"{DATASET_LABELS.get(ours_ds, ours_ds)}" + (
            " (substitute, not counted)" if sub else ""
        )
        lines.append(
            f"| {model.upper()} | {method_label(method)} | {label} | {eps} | "
            f"{_fmt(cell)} | {pm:.1f} ± {ps:.1f} | {diff:+.1f} | "
            f"{'–' if sub else ('yes' if ok else 'no')} |"
        )
    return "\n".join(lines), counts


def blink_facebook_markdown(
    agg: dict[tuple, dict], tolerance: float = 3.0
) -> tuple[str, dict[str, int]]:
    """Our Facebook BLink (hard) cells beside Blink_GNN's own results (its
    ``scripts/output/results.json``, see paper_numbers.toml), with the difference; empty text
    when the store has none."""
    lines = [
        f"| model | ε | ours | Blink_GNN | ours − Blink_GNN | within {tolerance:g} |",
        "|---|---|---|---|---|---|",
    ]
    counts = {"compared": 0, "within": 0}
    for (model, eps), (rm, rs) in sorted(BLINK_GNN_FACEBOOK.items()):
        cell = agg.get(("facebook", "blink-hard", model, float(eps)))
        if cell is None:
            continue
        diff = cell["mean"] - rm
        ok = abs(diff) <= tolerance
        counts["compared"] += 1
        counts["within"] += int(ok)
        lines.append(
            f"| {model.upper()} | {eps} | {_fmt(cell)} | {rm:.1f} ± {rs:.1f} | {diff:+.1f} | "
            f"{'yes' if ok else 'no'} |"
        )
    return ("\n".join(lines) if counts["compared"] else ""), counts


def plot_vs(
    agg: dict[tuple, dict],
    dataset: str,
    model: str,
    out: Path,
    *,
    x_index: int = 3,
    xlabel: str = "ε asked (the paper's ε under its convention; proven ε: see the tables)",
    title: str | None = None,
    methods: Sequence[str] | None = None,
) -> Path:
    """Test accuracy against ε (or a swept parameter at ``x_index`` of the cell key), one line
    with error bars per method, the non-private bound and the MLP floor dashed."""
    import matplotlib.pyplot as plt

    series: dict[str, list[tuple[float, dict]]] = defaultdict(list)
    for key, cell in agg.items():
        if key[0] == dataset and key[2] in (model, "mlp"):
            method = key[1]
            if methods is not None and method not in methods and method not in REFERENCE_LINES:
                continue
            if key[2] == "mlp" and method != "features-only":
                continue
            series[method].append((float(key[x_index]), cell))
    fig, ax = plt.subplots(figsize=(4.2, 3.2), dpi=110)
    for method, pts in sorted(series.items(), key=lambda kv: kv[0] in REFERENCE_LINES):
        pts.sort(key=lambda p: p[0])
        xs = [p[0] for p in pts]
        ys = [p[1]["mean"] for p in pts]
        es = [p[1]["std"] for p in pts]
        style = dict(linestyle="--", marker=None) if method in REFERENCE_LINES else dict(marker="o")
        ax.errorbar(xs, ys, yerr=es, capsize=3, label=method_label(method), **style)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title or f"{DATASET_LABELS.get(dataset, dataset)} — {model.upper()}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, out)


def plot_bars(agg: dict[tuple, dict], dataset: str, model: str, epsilon: float, out: Path) -> Path:
    """One bar per method at a single ε (the ablation figure), with error bars; the
    non-private bound and the MLP floor as dashed horizontal lines."""
    import matplotlib.pyplot as plt

    bars, lines = [], []
    for key, cell in sorted(agg.items(), key=lambda kv: str(kv[0])):
        if key[0] != dataset or float(key[3]) != float(epsilon):
            continue
        if key[1] == "features-only" and key[2] == "mlp":
            lines.append((key[1], cell))
        elif key[2] == model:
            (lines if key[1] in REFERENCE_LINES else bars).append((key[1], cell))
    fig, ax = plt.subplots(figsize=(4.2, 3.2), dpi=110)
    xs = range(len(bars))
    ax.bar(
        xs,
        [c["mean"] for _, c in bars],
        yerr=[c["std"] for _, c in bars],
        capsize=3,
        color="tab:blue",
    )
    ax.set_xticks(list(xs), [method_label(m) for m, _ in bars], rotation=20, fontsize=7)
    for (method, cell), color in zip(lines, ("tab:green", "tab:red"), strict=False):
        ax.axhline(cell["mean"], linestyle="--", color=color, label=method_label(method))
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(
        f"{DATASET_LABELS.get(dataset, dataset)} — {model.upper()}, ε = {epsilon:g}", fontsize=9
    )
    ax.grid(alpha=0.3, axis="y")
    if lines:
        ax.legend(fontsize=7)
    return save_figure(fig, out)


#: Sweep variants named ``<prefix><value>`` (experiments/hogs-fig8.toml, hogs-fig9.toml): the
#: paper plots accuracy against the value, one line per ε.
SWEPT_PREFIXES = {"hogs-d": "privacy split δ", "hogs-t": "edge threshold τ"}


def plot_swept(
    agg: dict[tuple, dict], dataset: str, model: str, prefix: str, xlabel: str, out: Path
) -> Path:
    """Accuracy against a swept parameter (variants ``prefix<value>``), one line per ε, the
    non-private bound dashed and the MLP floor as a band over the ε values."""
    import matplotlib.pyplot as plt

    lines: dict[float, list[tuple[float, dict]]] = defaultdict(list)
    bound, floor = [], []
    for key, cell in agg.items():
        if key[0] != dataset:
            continue
        if key[1].startswith(prefix) and key[2] == model:
            lines[float(key[3])].append((float(key[1][len(prefix) :]), cell))
        elif key[1] == "none" and key[2] == model:
            bound.append(cell["mean"])
        elif key[1] == "features-only" and key[2] == "mlp":
            floor.append(cell["mean"])
    fig, ax = plt.subplots(figsize=(4.2, 3.2), dpi=110)
    for eps, pts in sorted(lines.items()):
        pts.sort(key=lambda p: p[0])
        ax.errorbar(
            [p[0] for p in pts],
            [p[1]["mean"] for p in pts],
            yerr=[p[1]["std"] for p in pts],
            capsize=3,
            marker="o",
            label=f"ε = {eps:g}",
        )
    if bound:
        ax.axhline(statistics.fmean(bound), linestyle="--", color="k", label="non-private")
    if floor:
        ax.axhspan(min(floor), max(floor), color="grey", alpha=0.25, label="MLP floor (over ε)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"{DATASET_LABELS.get(dataset, dataset)} — {model.upper()}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, out)


def summary_rows(agg: dict[tuple, dict]) -> list[dict[str, Any]]:
    return [
        {
            "dataset": k[0],
            "protocol": k[1],
            "model": k[2],
            "epsilon": k[3],
            **({"param": k[4]} if len(k) > 4 else {}),
            **v,
        }
        for k, v in sorted(agg.items(), key=lambda kv: tuple(str(x) for x in kv[0]))
    ]


def write_report(
    rows: list[dict[str, Any]],
    out_dir: Path,
    *,
    title: str = "ldpgraph results",
    substitutes: dict[str, str] | None = None,
    command: str = "",
) -> list[Path]:
    """Write the figures (PNG) and tables (Markdown) the rows support into ``out_dir``, and an
    index ``README.md`` naming the command that made them. Returns the written paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    all_rows = [r for r in rows if r.get("status") == "done"]
    rows = final_rows(rows)
    written: list[Path] = []
    index = [f"# {title}", ""]
    if command:
        index += ["Made with:", "", "```", command, "```", ""]
    index.append(f"{len(rows)} finished final runs.")
    agg = aggregate(rows)
    datasets = sorted({k[0] for k in agg})
    if any(k[1] in ("hogs-edge", "blink-hard") for k in agg):
        eps = sorted({k[3] for k in agg if k[1] in ("hogs-edge", "blink-hard")})
        t3 = out_dir / "table3.md"
        t3.write_text(table3_markdown(agg, datasets, eps) + "\n")
        md, counts = reproduction_markdown(agg, substitutes)
        rep = out_dir / "reproduction.md"
        text = (
            md + f"\n\n{counts['within']} of {counts['compared']} compared cells are within 3 "
            f"points of the paper; GCN and GraphSAGE: {counts['within_gcn_sage']} of "
            f"{counts['compared_gcn_sage']}.\n"
        )
        fb_md, fb_counts = blink_facebook_markdown(agg)
        if fb_md:
            text += (
                "\n## Facebook page-page (LastFM substitute): BLink against Blink_GNN's own "
                "results\n\nThe HoGS paper has no Facebook column; Blink_GNN's `results.json` "
                "(https://github.com/zhxchd/Blink_GNN, `scripts/output/results.json`, 30 runs) "
                "does.\n\n"
                + fb_md
                + f"\n\n{fb_counts['within']} of {fb_counts['compared']} Facebook BLink cells "
                "are within 3 points of Blink_GNN's.\n"
            )
        rep.write_text(text)
        written += [t3, rep]
        index += [
            "",
            "## Table III (edge LDP only)",
            "",
            t3.read_text(),
            "",
            f"Reproduction: [{rep.name}]({rep.name}) — {counts['within']} of "
            f"{counts['compared']} cells within 3 points (GCN and GraphSAGE: "
            f"{counts['within_gcn_sage']} of {counts['compared_gcn_sage']}).",
        ]
    # Each paper's own report (its files and its lines of the index), in this order.
    from . import compare_table, dpar_table, dpggan_table, ppgsl_figs, privdpr_table

    for write in (
        dpar_table.write_dpar_report,
        privdpr_table.write_privdpr_report,
        ppgsl_figs.write_ppgsl_report,
        dpggan_table.write_dpggan_report,
        compare_table.write_comparison_report,
    ):
        more_written, more_index = write(all_rows, out_dir)
        written += more_written
        index += more_index
    for dataset in datasets:
        for model in sorted({k[2] for k in agg if k[0] == dataset and k[2] != "mlp"}):
            eps_values = sorted({k[3] for k in agg if k[0] == dataset and k[2] == model})
            if len(eps_values) > 1:
                path = plot_vs(agg, dataset, model, out_dir / f"acc-vs-eps-{dataset}-{model}.png")
            else:
                path = plot_bars(
                    agg,
                    dataset,
                    model,
                    eps_values[0],
                    out_dir / f"acc-at-eps{eps_values[0]:g}-{dataset}-{model}.png",
                )
            written.append(path)
            index += ["", f"![{dataset} {model}]({path.name})"]
            for prefix, label in SWEPT_PREFIXES.items():
                if any(k[0] == dataset and k[1].startswith(prefix) for k in agg):
                    name = f"acc-vs-{prefix.removeprefix('hogs-')}-{dataset}-{model}.png"
                    path = plot_swept(agg, dataset, model, prefix, label, out_dir / name)
                    written.append(path)
                    index += ["", f"![{dataset} {model} vs {label}]({path.name})"]
    magg = aggregate_metrics(rows)
    if magg:
        mpath = out_dir / "metrics.md"
        mpath.write_text(
            "# Metrics of the final runs\n\nPer cell, mean ± sample std over its final runs "
            "(n where fewer runs have a value). Graph statistics: the mean relative error of "
            "each statistic (MRE) and the mean degree KS; accuracy: summary.md.\n\n"
            + metrics_markdown(magg)
            + "\n"
        )
        written.append(mpath)
        index += ["", f"Other metrics: [{mpath.name}]({mpath.name}) ({', '.join(magg)})."]
    summary = out_dir / "summary.md"
    lines = [
        "| dataset | protocol | model | ε | test accuracy (%) | runs |",
        "|---|---|---|---|---|---|",
    ]
    for r in summary_rows(agg):
        lines.append(
            f"| {r['dataset']} | {r['protocol']} | {r['model']} | {r['epsilon']:g} | "
            f"{r['mean']:.1f} ± {r['std']:.1f} | {r['n']} |"
        )
    summary.write_text("\n".join(lines) + "\n")
    written.append(summary)
    readme = out_dir / "README.md"
    readme.write_text("\n".join(index) + "\n")
    return [readme, *written]
