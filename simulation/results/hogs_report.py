"""The HoGS paper's Table III from a results store, and our cells beside the published ones.

HoGS (edge LDP only, test accuracy %) against its Table III, and our Facebook BLink cells (the
LastFM substitute) against Blink_GNN's own Blink-hard results. The published numbers are
package data (``paper_numbers.toml``, with their sources), so that a report made from an
installed wheel has them too.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from .report_cells import DATASET_LABELS, method_label

#: The methods of Table III.
TABLE3_METHODS = ("blink-hard", "hogs-edge")


def _paper_numbers() -> tuple[dict, dict]:
    """The published reference numbers of ``paper_numbers.toml``, keyed as the tables below
    look them up."""
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
        for method in TABLE3_METHODS:
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


def _reproduction_text(
    agg: dict[tuple, dict], substitutes: dict[str, str] | None
) -> tuple[str, dict[str, int]]:
    """``reproduction.md``: the Table III comparison, then the Facebook one where there is
    one; and the Table III counts."""
    md, counts = reproduction_markdown(agg, substitutes)
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
    return text, counts


def write_hogs_report(
    agg: dict[tuple, dict], out_dir: Path, substitutes: dict[str, str] | None = None
) -> tuple[list[Path], list[str]]:
    """``table3.md`` and ``reproduction.md`` when the cells have HoGS or BLink (hard) runs;
    returns the written paths and the index lines."""
    if not any(k[1] in TABLE3_METHODS for k in agg):
        return [], []
    datasets = sorted({k[0] for k in agg})
    eps = sorted({k[3] for k in agg if k[1] in TABLE3_METHODS})
    t3 = out_dir / "table3.md"
    t3.write_text(table3_markdown(agg, datasets, eps) + "\n")
    rep = out_dir / "reproduction.md"
    text, counts = _reproduction_text(agg, substitutes)
    rep.write_text(text)
    index = [
        "",
        "## Table III (edge LDP only)",
        "",
        t3.read_text(),
        "",
        f"Reproduction: [{rep.name}]({rep.name}) — {counts['within']} of "
        f"{counts['compared']} cells within 3 points (GCN and GraphSAGE: "
        f"{counts['within_gcn_sage']} of {counts['compared_gcn_sage']}).",
    ]
    return [t3, rep], index
