"""Report building: aggregation of final runs, Table III and the reproduction table, figures."""

from __future__ import annotations

import pytest

from ldpgraph.simulation.results import report


def row(ds, proto, model, eps, acc, phase="final", **cfg):
    return {
        "status": "done",
        "dataset": ds,
        "protocol": proto,
        "model": model,
        "epsilon": eps,
        "test_acc": acc,
        "extra": {"phase": phase},
        "config": cfg,
    }


def test_paper_table_is_complete():
    assert len(report.PAPER_TABLE3) == 3 * 2 * 3 * 3
    assert report.PAPER_TABLE3[("gcn", "hogs-edge", "cora", 5)] == (84.7, 0.4)
    assert report.PAPER_TABLE3[("gat", "blink-hard", "lastfm", 4)] == (70.8, 0.9)


def test_final_rows_and_aggregate():
    rows = [row("cora", "hogs-edge", "gcn", 5, a) for a in (0.84, 0.86)]
    rows.append(row("cora", "hogs-edge", "gcn", 5, 0.10, phase="search"))
    rows.append({**row("cora", "hogs-edge", "gcn", 5, 0.0), "status": "failed"})
    agg = report.aggregate(report.final_rows(rows))
    cell = agg[("cora", "hogs-edge", "gcn", 5.0)]
    assert cell["n"] == 2 and cell["mean"] == pytest.approx(85.0)
    assert cell["std"] == pytest.approx(1.41421, abs=1e-4)


def test_reproduction_counts_and_substitutes():
    rows = [
        row("cora", "hogs-edge", "gcn", 5, 0.847),
        row("cora", "hogs-edge", "gcn", 5, 0.847),
        row("cora", "blink-hard", "gcn", 3, 0.60),
        row("facebook", "hogs-edge", "gcn", 5, 0.90),
    ]
    agg = report.aggregate(report.final_rows(rows))
    md, counts = report.reproduction_markdown(agg, substitutes={"lastfm": "facebook"})
    assert counts == {
        "compared": 2,
        "within": 1,
        "compared_gcn_sage": 2,
        "within_gcn_sage": 1,
    }
    assert "substitute, not counted" in md and "+0.0" in md and "-11.0" in md
    t3 = report.table3_markdown(agg, ["cora", "facebook"])
    assert "84.7 ± 0.0" in t3 and "Facebook (LastFM substitute)" in t3


def test_facebook_blink_is_compared_with_blink_gnn_results():
    """The Facebook BLink cells (LastFM substitute) are set beside Blink_GNN's own numbers
    (paper_numbers.toml: GCN ε = 5 is 83.91, SAGE ε = 3 is 77.43)."""
    rows = [
        row("facebook", "blink-hard", "gcn", 5, 0.80),
        row("facebook", "blink-hard", "sage", 3, 0.77),
        row("facebook", "hogs-edge", "gcn", 5, 0.90),
        row("cora", "blink-hard", "gcn", 5, 0.84),
    ]
    agg = report.aggregate(report.final_rows(rows))
    md, counts = report.blink_facebook_markdown(agg)
    assert counts == {"compared": 2, "within": 1}
    assert "| GCN | 5 | 80.0 ± 0.0 | 83.9 ± 0.3 | -3.9 | no |" in md
    assert "| SAGE | 3 | 77.0 ± 0.0 | 77.4 ± 0.3 | -0.4 | yes |" in md
    assert report.blink_facebook_markdown(report.aggregate([]))[0] == ""


def test_plot_writes_png(tmp_path):
    rows = [
        row("cora", p, "gcn", e, 0.5 + 0.03 * e + (0.05 if p == "hogs" else 0))
        for p in ("hogs", "fp-blink")
        for e in (3, 4, 5)
        for _ in range(2)
    ]
    rows += [row("cora", "none", "gcn", e, 0.88) for e in (3, 5)]
    rows += [row("cora", "features-only", "mlp", e, 0.6) for e in (3, 5)]
    out = report.plot_vs(report.aggregate(rows), "cora", "gcn", tmp_path / "f.png")
    assert out.stat().st_size > 5000
    out2 = report.plot_bars(report.aggregate(rows), "cora", "gcn", 3, tmp_path / "g.png")
    assert out2.stat().st_size > 5000


def test_variants_are_their_own_methods():
    """Sweep variants (one δ per entry) are separate lines, labelled readably."""
    rows = [
        {**row("cora", "hogs", "gcn", 4, acc), "extra": {"phase": "final", "entry": entry}}
        for entry, acc in (("hogs-d0.1", 0.7), ("hogs-d0.5", 0.3))
    ]
    agg = report.aggregate(report.final_rows(rows))
    assert agg[("cora", "hogs-d0.1", "gcn", 4.0)]["mean"] == pytest.approx(70.0)
    assert agg[("cora", "hogs-d0.5", "gcn", 4.0)]["mean"] == pytest.approx(30.0)
    assert report.method_label("hogs-d0.1") == "HoGS δ=0.1"
    assert report.method_label("hogs-kprop-k2") == "TR + KProp K=2"
    assert report.method_label("blink-hard") == "BLink"


def test_report_command_end_to_end(tmp_path, capsys):
    from ldpgraph.simulation import cli
    from ldpgraph.simulation.config import RunConfig
    from ldpgraph.simulation.pipeline import run
    from ldpgraph.simulation.results.store import ResultsStore

    db = tmp_path / "s.db"
    with ResultsStore(db) as store:
        for eps in (3.0, 5.0):
            for seed in (0, 1):
                cfg = RunConfig(
                    dataset="synthetic:n=150,classes=3,d=20",
                    protocol="hogs-edge",
                    epsilon=eps,
                    seed=seed,
                    epochs=3,
                    backend="local",
                )
                store.finish(cfg, run(cfg))
    out = tmp_path / "rep"
    assert cli.main(["report", "--store", str(db), "--out", str(out), "--title", "Two words"]) == 0
    # the index names the command, quoted so that it can be pasted back into a shell
    made_with = f"ldpgraph report --store {db} --out {out} --title 'Two words'"
    assert made_with in (out / "README.md").read_text()
    names = {p.name for p in (tmp_path / "rep").iterdir()}
    assert {"README.md", "table3.md", "reproduction.md", "summary.md"} <= names
    assert any(n.startswith("acc-vs-eps-") and n.endswith(".png") for n in names)
    assert cli.main(["report", "--store", str(tmp_path / "none.db"), "--out", "x"]) == 2
    assert "no results store" in capsys.readouterr().err


def test_swept_variants_plot_against_their_value(tmp_path):
    rows = [
        {
            **row("cora", "hogs", "gcn", e, 0.5 + d / 2),
            "extra": {"phase": "final", "entry": f"hogs-d{d}"},
        }
        for d in (0.1, 0.5, 0.9)
        for e in (3, 8)
    ]
    rows += [row("cora", "none", "gcn", e, 0.88) for e in (3, 8)]
    rows += [row("cora", "features-only", "mlp", e, 0.5 + e / 100) for e in (3, 8)]
    written = report.write_report(rows, tmp_path)
    names = {p.name for p in written}
    assert "acc-vs-d-cora-gcn.png" in names and "acc-vs-eps-cora-gcn.png" in names
    assert (tmp_path / "acc-vs-d-cora-gcn.png").stat().st_size > 5000


def measured_row(proto, eps, tri_re, ks, auc=None, seed=0, phase="final", **extra_sections):
    """A final run of the graph metric (and link prediction) without accuracy."""
    graph_stats = {
        "triangles": {"original": 100, "release": 100 * (1 - tri_re), "re": tri_re},
        "cpl": {"original": 6.3, "release": None, "re": None},
        "degree_ks": ks,
        "paths": {"original": {"method": "exact", "sources": 2708}},
        "seconds": 1.5,
    }
    metrics = {"accuracy": {}, "training": {}, "graph_stats": graph_stats, **extra_sections}
    if auc is not None:
        metrics["lp"] = {"auc": auc}
    return {**row("cora", proto, "gcn", eps, None, phase), "metrics": metrics, "seed": seed}


def test_metric_sections_aggregate_per_cell_graph_as_mre_and_ks():
    rows = [
        measured_row("hogs", 4, 0.2, 0.1, auc=0.7),
        measured_row("hogs", 4, 0.4, 0.3, auc=0.9, seed=1),
        measured_row("rr", 4, 0.9, 0.5),
        measured_row("rr", 4, 0.5, 0.5, phase="search"),
    ]
    kept = report.final_rows(rows)
    assert len(kept) == 3  # runs without accuracy count; the search run does not
    assert report.aggregate(kept) == {}  # no accuracy to tabulate
    agg = report.aggregate_metrics(kept)
    assert set(agg) == {"graph_stats", "lp"}
    hogs = agg["graph_stats"][("cora", "hogs", "gcn", 4.0)]
    assert set(hogs) == {"triangles MRE", "degree KS"}  # cpl's RE is undefined in every run
    assert hogs["triangles MRE"]["mean"] == pytest.approx(0.3)
    assert hogs["triangles MRE"]["std"] == pytest.approx(0.141421, rel=1e-5)
    assert hogs["degree KS"]["mean"] == pytest.approx(0.2) and hogs["degree KS"]["n"] == 2
    assert agg["graph_stats"][("cora", "rr", "gcn", 4.0)]["triangles MRE"]["std"] is None
    assert agg["lp"][("cora", "hogs", "gcn", 4.0)]["auc"]["mean"] == pytest.approx(0.8)
    md = report.metrics_markdown(agg)
    assert "## graph_stats" in md and "## lp" in md
    assert "| dataset | method | model | ε | runs | triangles MRE | degree KS |" in md
    assert "| cora | HoGS | gcn | 4 | 2 | 0.3 ± 0.14 | 0.2 ± 0.14 |" in md
    assert f"| cora | {report.method_label('rr')} | gcn | 4 | 1 | 0.9 | 0.5 |" in md
    assert "| cora | HoGS | gcn | 4 | 2 | 0.8 ± 0.14 |" in md


def test_a_value_some_runs_lack_says_its_n():
    rows = [
        measured_row("hogs", 4, 0.2, 0.1, auc=0.7),
        measured_row("hogs", 4, 0.4, 0.3, seed=1, attack={"cn": 0.6, "max": 0.6}),
    ]
    md = report.metrics_markdown(report.aggregate_metrics(rows))
    assert "| cora | HoGS | gcn | 4 | 1 | 0.7 |" in md  # lp: one run has it
    assert "## attack" in md and "| cn | max |" in md


def test_the_report_writes_the_metrics_of_graph_only_runs(tmp_path):
    rows = [measured_row("hogs", e, 0.2 * e, 0.1, seed=s) for e in (1, 2) for s in (0, 1)]
    written = report.write_report(rows, tmp_path)
    names = {p.name for p in written}
    assert "metrics.md" in names and "summary.md" in names
    text = (tmp_path / "metrics.md").read_text()
    assert "| cora | HoGS | gcn | 2 | 2 | 0.4 ± 0 | 0.1 ± 0 |" in text
    assert "[metrics.md](metrics.md) (graph_stats)" in (tmp_path / "README.md").read_text()
