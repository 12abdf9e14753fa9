"""The cross-protocol table: one row per (method, ε) with the four families, "–" where a
release cannot serve a family, written only where two methods have graph-family metrics."""

from __future__ import annotations

import math

from ldpgraph.simulation.results import compare_table as ct


def _row(protocol, eps, *, acc=None, lp=None, attack=None, re=None, formal=1.0, seed=0):
    metrics = {}
    if re is not None:
        metrics["graph_stats"] = {k: {"re": re} for k in ct.MRE_STATS} | {"degree_ks": 0.2}
        metrics["graph_stats"]["edges"] = {"original": 10, "release": 5, "re": 0.5}
    if lp is not None:
        metrics["lp"] = {"auc": lp}
    if attack is not None:
        metrics["attack"] = {"max": attack, "best": "aa"}
    return {
        "status": "done", "dataset": "cora", "protocol": protocol, "epsilon": eps,
        "seed": seed, "test_acc": acc, "metrics": metrics, "extra": {"phase": "final"},
        "privacy": {"epsilon": formal},
    }  # fmt: skip


def test_rows_per_method_and_epsilon_with_dashes_where_a_release_cannot_serve(tmp_path):
    rows = [
        _row("hogs", 8, acc=0.8, lp=0.8, attack=0.79, re=0.2, formal=8.0),
        _row("hogs", 8, acc=0.7, lp=0.9, attack=0.81, re=0.4, formal=8.0, seed=1),
        _row("privdpr", 8, acc=0.3, lp=0.5, attack=0.51, re=0.6, formal=0.01),
        _row("dpar-gm", 8, acc=0.5, formal=51.0),
    ]
    md = ct.comparison_markdown(rows)
    hogs = next(line for line in md.splitlines() if line.startswith("| HoGS"))
    assert "| ldp | 8 | 8.000 | – | 2 | 75.0 ± 7.1 | – | – | – | 0.50 ± 0.00 |" in hogs
    assert "| 0.50 ± 0.00 | 0.300 ± 0.141 |" in hogs
    assert "| 0.850 ± 0.071 | 0.800 ± 0.014 | aa |" in hogs
    dpar = next(line for line in md.splitlines() if "DPAR" in line)
    assert "| central | 8 | 51.000 | – | 1 | 50.0 | – | – | – | – | – | – | – | – | – |" in dpar
    written, index = ct.write_comparison_report(rows, tmp_path)
    assert {p.name for p in written} == {"comparison.md", "comparison-cora.png"} and index


def test_one_method_or_accuracy_only_writes_nothing(tmp_path):
    assert ct.write_comparison_report([_row("hogs", 8, lp=0.8)], tmp_path) == ([], [])
    only_acc = [_row("hogs", 8, acc=0.8), _row("rr", 8, acc=0.6)]
    assert ct.comparison_markdown(only_acc) == ""
    # local DP only, or central only: no comparison; with both, the non-private row too
    assert ct.comparison_markdown([_row("hogs", 8, lp=0.8), _row("rr", 8, lp=0.7)]) == ""
    central = [_row("privdpr", 8, lp=0.5), _row("dpr-nodp", 8, lp=0.5)]
    assert ct.comparison_markdown(central) == ""
    nodp = _row("none", 8, acc=0.9, lp=0.9, formal=math.inf)
    md = ct.comparison_markdown([nodp, _row("hogs", 8, lp=0.8), _row("privdpr", 8, lp=0.5)])
    assert "| ∞ |" in md


def test_an_unproven_headline_shows_infinity_and_the_papers_figure_beside_it():
    """DPGGAN as the paper trains it: proven ε ∞, the paper's 8 beside it; a cell where only
    some runs have a proof is never averaged into a finite figure."""
    unproven = _row("privdpr", 8, lp=0.5, formal=math.inf)
    unproven["privacy"]["paper_epsilon"] = 8.0
    md = ct.comparison_markdown([unproven, _row("hogs", 8, lp=0.8)])
    line = next(line for line in md.splitlines() if line.startswith("| PrivDPR"))
    assert "| central | 8 | ∞ | 8.000 | 1 |" in line
    mixed = [_row("privdpr", 8, lp=0.5, formal=math.inf), _row("privdpr", 8, lp=0.5, seed=1)]
    md = ct.comparison_markdown([*mixed, _row("hogs", 8, lp=0.8)])
    assert "| ∞ (some runs) |" in md


def test_every_row_carries_the_floor_and_the_bound_and_a_verdict_names_the_winner():
    """Local rows against ``features-only`` at their ε, central rows against ``dpar-features``
    where it was run; the bound is the non-private run at any ε; the verdict per ε names the
    family with the best accuracy, and says where no floor was run."""
    rows = [
        _row("hogs", 4, acc=0.50, lp=0.7, attack=0.7, re=0.3, formal=4.0),
        _row("hogs", 8, acc=0.80, lp=0.8, attack=0.8, re=0.2, formal=8.0),
        _row("privdpr", 4, acc=0.30, lp=0.5, attack=0.5, re=0.6, formal=0.01),
        _row("privdpr", 8, acc=0.30, lp=0.5, attack=0.5, re=0.6, formal=0.02),
        _row("dpar-gm", 4, acc=0.45, formal=99.0),
        _row("features-only", 4, acc=0.60),
        _row("features-only", 8, acc=0.70),
        _row("dpar-features", 4, acc=0.40),
        _row("none", 4, acc=0.90, formal=math.inf),
    ]
    md = ct.comparison_markdown(rows)
    line = {
        (cells[1].strip(), cells[3].strip()): cells
        for cells in (row.split("|") for row in md.splitlines() if row.startswith("| "))
        if len(cells) > 10
    }
    hogs4 = line[("HoGS", "4")]
    assert hogs4[8].strip() == "60.0 (features-only)" and hogs4[9].strip() == "no (−10.0)"
    assert hogs4[10].strip() == "90.0"
    assert line[("HoGS", "8")][9].strip() == "yes (+10.0)"
    dpar4 = next(v for k, v in line.items() if k[1] == "4" and "DPAR" in k[0])
    assert dpar4[8].strip() == "40.0 (dpar-features)" and dpar4[9].strip() == "yes (+5.0)"
    privdpr8 = next(v for k, v in line.items() if k[1] == "8" and "PrivDPR" in k[0])
    assert privdpr8[8].strip() == "70.0 (features-only)"  # no central floor at 8
    assert "- ε = 4: **features only** wins" in md
    assert "- ε = 8: **LDP graph** wins (HoGS 80.0 %, then features only" in md
