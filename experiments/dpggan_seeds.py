"""DPGGAN paper (Yang et al., IJCAI 2021), Tables 1 and 2 over seeds: mean ± sd of the runs of
each cell beside the paper's number, and which cells the reproduction rule counts.

The sweep's results store of the earlier rounds is not kept; its seed-0 cells are in the page's
report (``docs/reproduction/dpggan/tables``). This script keeps one compact JSON line per run
(``runs-seeds.jsonl``): the seed-0 lines transcribed from that report, the others extracted
from ``ldpgraph run --json`` outputs.

    python experiments/dpggan_seeds.py extract RUN.json ... \
        >> docs/reproduction/dpggan/runs-seeds.jsonl
    python experiments/dpggan_seeds.py table docs/reproduction/dpggan/runs-seeds.jsonl

The rule (the page's): a Table 1 cell is reproduced when the mean of ours is within 3 (LCC,
TC: counts) or 0.03 (CPL, GINI, REDE) of the paper's, or below it (a smaller error than the
paper's); a Table 2 cell when within ±0.03.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from ldpgraph.simulation.results.dpggan_table import paper_tables

TABLE1 = ("lcc", "tc", "cpl", "gini", "rede")
#: Table 2's columns here and in the paper's Table 2 (paper_numbers.toml).
TABLE2 = {"degree_cos": "degree", "motif_cos": "motif", "gin_generated": "gin"}
#: The rule's tolerance a Table 1 column (counts: absolute 3; the ratios: 0.03).
TOLERANCE = {"lcc": 3.0, "tc": 3.0, "cpl": 0.03, "gini": 0.03, "rede": 0.03}
TABLE2_TOLERANCE = 0.03
NAMES = {"dpggan": "DPGGAN", "dpgvae": "DPGVAE"}


def extract(run: dict) -> dict:
    """The compact line of one ``ldpgraph run --json`` result: its cell (rule, data set,
    model, ε, seed), Table 1's mean |Δ| per graph, Table 2's cosines and GIN (when run)."""
    config = run["config"]
    selection = config.get("dpg_edge_selection", "topk_dp")
    entry = {"topk_dp": "dp", "topk_true": "paper"}.get(selection)
    if entry is None or config.get("dpg_training", "paper") != "paper":
        raise ValueError(f"not a run of the page's dp-* or paper-* entries: {selection}")
    section = run.get("collection_stats")
    if not section:
        raise ValueError("the run has no collection metric (--metrics collection)")
    t1, t2 = section["table1"], section["table2"]
    row = {"entry": entry, "dataset": config["dataset"], "model": config["protocol"],
           "epsilon": float(config["epsilon"]), "seed": int(config["seed"]),
           "source": "ldpgraph run --json, issue 34",
           "fingerprint": str(run.get("fingerprint", ""))[:8],
           "total_s": round(float((run.get("timings") or {}).get("total", 0.0)), 1)}  # fmt: skip
    row.update({k: t1[k]["abs_diff"] for k in TABLE1})
    row.update(degree_cos=t2["degree_cosine"], motif_cos=t2["motif_cosine"])
    gin = run.get("gin")
    if gin:
        row.update(gin_generated=gin["generated"]["final"], gin_original=gin["original"]["final"])
    return row


def load(paths: list[Path]) -> list[dict]:
    """The lines of the files; a later line of the same run (cell and seed) replaces it."""
    rows: dict[tuple, dict] = {}
    for path in paths:
        for line in Path(path).read_text("utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                rows[(r["entry"], r["dataset"], r["model"], r["epsilon"], r["seed"])] = r
    return list(rows.values())


def within(column: str, ours: float, paper: float) -> bool:
    """The page's rule for one cell (Table 1: within the tolerance or below the paper's error;
    Table 2: within ±0.03)."""
    if column in TOLERANCE:
        return ours <= paper + TOLERANCE[column]
    return abs(ours - paper) <= TABLE2_TOLERANCE


def summarise(rows: list[dict]) -> list[dict]:
    """One cell per (rule, data set, model, ε): the seeds, and per column its values' mean, sd
    (over the seeds that have it), the paper's number and whether the rule counts it."""
    t1_paper, t2_paper = paper_tables()
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        cells[(r["entry"], r["dataset"], r["model"], r["epsilon"])].append(r)
    out = []
    for (entry, dataset, model, eps), rs in sorted(cells.items(), key=_order):
        key = f"{model}@{eps:g}"
        t2 = t2_paper.get(dataset, {}).get(key, {})
        paper = {**t1_paper.get(dataset, {}).get(key, {}),
                 **{c: t2.get(p) for c, p in TABLE2.items()}}  # fmt: skip
        cell = {"entry": entry, "dataset": dataset, "model": model, "epsilon": eps,
                "seeds": sorted(r["seed"] for r in rs), "columns": {}}  # fmt: skip
        for col in (*TABLE1, *TABLE2, "gin_original"):
            values = [float(r[col]) for r in rs if r.get(col) is not None]
            if not values:
                continue
            mean = statistics.fmean(values)
            ref = paper.get(col)
            cell["columns"][col] = {
                "n": len(values), "mean": mean,
                "sd": statistics.stdev(values) if len(values) > 1 else None,
                "paper": ref, "within": None if ref is None else within(col, mean, ref),
            }  # fmt: skip
        out.append(cell)
    return out


def _order(item: tuple) -> tuple:
    (entry, dataset, model, eps), _ = item
    return (dataset, entry != "dp", model, -eps)


def count(summary: list[dict]) -> dict[str, tuple[int, int]]:
    """Cells within the rule / cells with a paper number, for the strict release's (``dp``)
    Table 1 and Table 2, and for the paper's operating rule (``paper``)."""
    out: dict[str, list[int]] = {"dp table1": [0, 0], "dp table2": [0, 0], "paper table1": [0, 0]}
    for c in summary:
        for col, v in c["columns"].items():
            if v["within"] is None:
                continue
            table = "table1" if col in TABLE1 else "table2"
            key = f"{c['entry']} {table}"
            if key in out:
                out[key][0] += int(v["within"])
                out[key][1] += 1
    return {k: (a, b) for k, (a, b) in out.items()}


def _fmt(v: dict | None) -> str:
    if v is None:
        return "–"
    text = f"{v['mean']:.0f}" if abs(v["mean"]) >= 100 else f"{v['mean']:#.3g}"
    if v["sd"] is not None:
        text += f" ± {v['sd']:.0f}" if v["sd"] >= 10 else f" ± {v['sd']:.2g}"
    if v["paper"] is not None:
        text = (f"**{text}**" if v["within"] else text) + f" ({v['paper']:g})"
    return text


def table(summary: list[dict]) -> str:
    """The page's Markdown table: bold where the rule counts the cell."""
    head = ("| data set | model | rule | ε (paper's convention) | seeds | LCC | TC | CPL | GINI "
            "| REDE | degree cos | motif cos | GIN generated | GIN original |")  # fmt: skip
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for c in summary:
        cols = c["columns"]
        seeds = ", ".join(str(s) for s in c["seeds"])
        lines.append(
            f"| {c['dataset'].removesuffix('-collection').upper()} | {NAMES[c['model']]} "
            f"| {c['entry']}-* | {c['epsilon']:g} | {seeds} | "
            + " | ".join(_fmt(cols.get(k)) for k in (*TABLE1, *TABLE2, "gin_original"))
            + " |"
        )
    counts = count(summary)
    lines.append("")
    lines.append("Within the rule (mean over the seeds): " + "; ".join(
        f"{k} {a} of {b}" for k, (a, b) in counts.items()))  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["extract", "table"])
    ap.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args(argv)
    if args.command == "extract":
        for path in args.files:
            print(json.dumps(extract(json.loads(Path(path).read_text("utf-8"))),
                             ensure_ascii=False))  # fmt: skip
        return 0
    summary = summarise(load(args.files))
    if not summary:
        ap.error("no runs in the given files")
    print(table(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
