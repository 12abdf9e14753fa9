"""The result record's summary for a person: what ran, the proven guarantee first, accuracy,
each metric section in a few lines, the graph's sizes, each round's counts and the timings.

A metric section gets its own lines from :data:`SECTION_LINES` (by section name), any other
its first numeric values on one line.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from .evaluation.collection import summary_lines as collection_summary_lines
from .evaluation.gin import summary_lines as gin_summary_lines
from .record_build import metric_sections
from .record_json import NON_FINITE


def summary(record: dict[str, Any]) -> str:
    """A few lines for a person: what ran, accuracy, privacy with its units, graph sizes,
    each round's counts, timings and the fingerprint."""
    kind = record.get("release_kind", "graph")
    lines = [
        *_run_lines(record, kind),
        *_outcome_lines(record, kind),
        *_privacy_lines(record["privacy"]),
        *_graph_lines(record, kind),
    ]
    return "\n".join(lines)


def _run_lines(record: dict[str, Any], kind: str) -> list[str]:
    """What ran under which guarantee, on which seed and backend, and whose noise."""
    c, pr = record["config"], record["privacy"]
    # A model release is scored as released: no GNN of the configuration is trained on it.
    trains = "accuracy" in str(c.get("metrics", "accuracy")).split(",")
    if kind != "graph":
        trained = f" ({kind} release)"
    else:
        trained = f" with {c['model']}" if trains else " (graph release)"
    first = f"ldpgraph run: {c['protocol']} on {c['dataset']}: {guarantee_line(pr, c)}"
    head, _, beside = first.rpartition(" [")
    lines = [
        # the ε asked for and the paper's stay whole: on the next line if they do not fit
        *(
            [first]
            if len(first) <= 100
            else textwrap.wrap(head, 100, subsequent_indent=" " * 16) + [" " * 16 + "[" + beside]
        ),
        f"  run           {trained.strip(' ()') or 'graph release'}, seed {c['seed']}, "
        f"backend {c['backend']}",
    ]
    if "replayable" in record.get("release", {}):
        noise = (
            "seeded: replayable, not a private release"
            if record["release"]["replayable"]
            else ("OS entropy (not replayable from this record)")
        )
        lines.append(f"  release noise {noise}")
    return lines


def _outcome_lines(record: dict[str, Any], kind: str) -> list[str]:
    """Accuracy, the metrics skipped or stood in for, and every other metric section."""
    lines = []
    acc, training = record.get("accuracy"), record.get("training") or {}
    if acc:
        how = (
            f"(best epoch {training['best_epoch']})"
            if "best_epoch" in training
            else f"({kind} release)"
        )
        lines.append(
            f"  accuracy      test {100 * acc['test']:.1f}%   val {100 * acc['val']:.1f}%   "
            + how
            + ("   COLLAPSED onto one class" if training.get("collapsed") else "")
        )
    for name, why in (record.get("skipped_metrics") or {}).items():
        lines.append(f"  {name:<13} skipped: {why}")
    for name, other in (record.get("metric_stand_ins") or {}).items():
        lines.append(f"  {name:<13} on a {kind} release: scored by {other} (below)")
    for name, section in metric_sections(record).items():
        if name not in ("accuracy", "training", "skipped_metrics", "metric_stand_ins"):
            lines += SECTION_LINES.get(name, _section_lines)(name, section)
    return lines


def _privacy_lines(pr: dict[str, Any]) -> list[str]:
    """The privacy report's headline, its ε per report with the unit and accountant, and its
    parts."""
    lines = []
    if pr.get("headline"):
        lines += textwrap.wrap(
            pr["headline"],
            100,
            initial_indent="  privacy       ",
            subsequent_indent=" " * 16,
            break_on_hyphens=False,
        )
    # ε of one report: the unit says what it protects (a bit, an edge), not a whole node.
    lines += textwrap.wrap(
        f"report ε = {pr['epsilon']:.4g} ({pr['unit']}); accountant {pr['accountant']}",
        100,
        initial_indent=f"{'  privacy' if not pr.get('headline') else '':<16}",
        subsequent_indent=" " * 16,
        break_on_hyphens=False,
    )
    for part in pr["parts"]:
        lines.append(
            f"                {part['part']}: ε = {part['epsilon']:.4g} per {part['unit']}"
        )
    return lines


def _graph_lines(record: dict[str, Any], kind: str) -> list[str]:
    """The graph's sizes, each collection round's counts, the timings and the fingerprint."""
    g = record["graph"]
    released = (
        f"synthetic {g['synthetic']['nodes']} / {g['synthetic']['edges']}"
        if kind == "graph"
        else f"released: a {kind}"
    )
    return [
        f"  graph         original {g['original']['nodes']} nodes / "
        f"{g['original']['edges'] if g['original']['edges'] is not None else '?'} "
        f"edges; {released}",
        *_collection_lines(record["release"].get("collection")),
        "  timings (s)   " + "  ".join(f"{k} {v:.2f}" for k, v in record["timings"].items()),
        f"  fingerprint   {record['fingerprint']}",
    ]


def _eps(value: Any) -> str:
    return "∞" if isinstance(value, float) and math.isinf(value) else f"{value:.4g}"


def guarantee_line(privacy: dict[str, Any], config: dict[str, Any]) -> str:
    """The proven guarantee first: the headline ε with its unit and δ, then the ε asked for and
    the paper's figure where it differs (``paper_epsilon``, never the headline)."""
    unit = str(privacy.get("unit", ""))
    eps = privacy.get("epsilon")
    if not isinstance(eps, int | float):
        eps = NON_FINITE.get(str(eps), math.nan)
    # A unit such as "none (raw …)" or "empirical (…)" is no neighbouring relation: say it.
    per = f"per {unit}" if unit and not unit.startswith(("none", "empirical")) else f"({unit})"
    head = f"ε = {_eps(float(eps))} {per}, δ = {privacy.get('delta', 0):.3g}"
    if math.isinf(float(eps)) and not unit.startswith(("none", "empirical")):
        head += ", no proof (see privacy)"
    asked = [f"asked ε = {config['epsilon']:g}"]
    paper = privacy.get("paper_epsilon")
    if isinstance(paper, int | float) and paper != eps:
        asked.append(f"paper's ε = {_eps(float(paper))}")
    return f"{head} [{', '.join(asked)}]"


def _collection_lines(col: dict[str, Any] | None) -> list[str]:
    if not col or not col.get("rounds"):
        return []
    lines = []
    if col.get("supernodes") is not None:
        lines.append(
            f"  nodes         {col.get('supernodes')} SuperNodes x {col.get('nodes_per_client')} "
            "node-clients"
        )
    if col.get("node_randomness"):
        lines.append(f"  node noise    {col['node_randomness']}")
    for i, r in enumerate(col["rounds"]):
        lines.append(
            f"  round {i}       asked {r['asked']}  replied {r['replied']}  rejected "
            f"{r.get('rejected', 0)}  refused {r['refused']}  missing {r['missing']}"
        )
    return lines


def _num(value: Any) -> str:
    """A value for a summary: integers whole, other numbers to 4 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def _leaves(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _leaves(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        out[prefix] = value


def _section_lines(name: str, section: dict[str, Any], most: int = 8) -> list[str]:
    """A metric section without a summary of its own: its first numeric values, one line."""
    values: dict[str, Any] = {}
    _leaves("", section, values)
    if not values:
        return []
    shown = [f"{k} {_num(v)}" for k, v in list(values.items())[:most]]
    more = f"  (+{len(values) - most} more, see --json)" if len(values) > most else ""
    return textwrap.wrap(
        "   ".join(shown) + more,
        100,
        initial_indent=f"  {name:<13} ",
        subsequent_indent=" " * 16,
        break_on_hyphens=False,
    )


def _graph_stats_lines(name: str, section: dict[str, Any]) -> list[str]:
    """The graph metric: original → release (RE) of each statistic, the degree KS and how the
    path statistics were computed."""
    cells = []
    for stat, v in section.items():
        if isinstance(v, dict) and "re" in v:
            re = "" if v["re"] is None else f" ({v['re']:.3g})"
            cells.append(f"{stat} {_num(v['original'])} → {_num(v['release'])}{re}")
    if section.get("degree_ks") is not None:
        cells.append(f"degree KS {section['degree_ks']:.3g}")
    paths = [p for p in (section.get("paths") or {}).values() if isinstance(p, dict)]
    how = " / ".join(p["method"] for p in paths)
    sources = " / ".join(str(p["sources"]) for p in paths)
    took = f"; {section['seconds']:.1f} s" if isinstance(section.get("seconds"), float) else ""
    lines = [f"  graph stats   original → release (RE); paths {how} ({sources} sources)" + took]
    row: list[str] = []
    for cell in cells:
        if row and len("   ".join([*row, cell])) > 84:
            lines.append(" " * 16 + "   ".join(row))
            row = []
        row.append(cell)
    if row:
        lines.append(" " * 16 + "   ".join(row))
    if section.get("weights", "").startswith("weighted"):
        lines.append(" " * 16 + section["weights"])
    return lines


def _attack_lines(name: str, section: dict[str, Any]) -> list[str]:
    """The attack metric: every attack's AUC and the strongest (with its name), then the same
    for the protected pairs, where the release declares some (with the strongest of the
    attacks that read the graph)."""

    def cells(part: dict[str, Any]) -> list[str]:
        out = [
            f"{k} {_num(v)}"
            for k, v in part.items()
            if isinstance(v, float) and k not in ("max", "max_graph")
        ]
        out.append(f"max {_num(part.get('max'))} ({part.get('best')})")
        if "max_graph" in part:
            out.append(f"max_graph {_num(part['max_graph'])} ({part.get('best_graph')})")
        return out

    def wrap(title: str, row: list[str]) -> list[str]:
        lines, line, filled = [], f"  {title:<13} ", False
        for cell in row:  # a cell is never split across lines
            if filled and len(line) + len(cell) > 100:
                lines.append(line.rstrip())
                line = " " * 16
            line, filled = line + cell + "   ", True
        return [*lines, line.rstrip()]

    lines = wrap(name, cells(section))
    protected = section.get("protected")
    if isinstance(protected, dict):
        lines += wrap("  protected", [f"count {protected.get('count')}", *cells(protected)])
    return lines


#: Summary lines of a metric section, by section name; any other section gets one generic line.
SECTION_LINES = {
    "attack": _attack_lines,
    "graph_stats": _graph_stats_lines,
    "collection_stats": collection_summary_lines,
    "gin": gin_summary_lines,
}
