"""PPGSL's frontier report: PPGSL's points read its protected-link attacks and the baselines'
their hidden-link ones, the series run in α order, cells are means over the final runs, the
paper's stated Cora point is there, and a run without a section shows "—"."""

from __future__ import annotations

from ldpgraph.simulation.results import ppgsl_figs as pf
from ldpgraph.simulation.results.report import write_report

ALL = ("cn", "aa", "ra", "jaccard", "feature_cosine", "embedding_cosine", "embedding_svm",
       "node2vec_cosine", "node2vec_svm", "seal")  # fmt: skip


def _attack(base: float, **over: float) -> dict:
    out = {a: base for a in ALL} | over
    best = max(ALL, key=out.__getitem__)
    return {**out, "max": out[best], "best": best}


def _protected(base: float, **over: float) -> dict:
    out = _attack(base, **over)
    graph = max(pf.GRAPH_ATTACKS, key=out.__getitem__)
    return {**out, "max_graph": out[graph], "best_graph": graph, "count": 422}


def _row(protocol: str, *, dataset="cora", eps=8.0, cfg=None, entry=None, lp=0.8, acc=0.75,
         hidden=None, protected=None, phase="final", seed=0, metrics=None):  # fmt: skip
    if metrics is None:
        attack = dict(hidden or _attack(0.8))
        if protected is not None:
            attack["protected"] = protected
        metrics = {"attack": attack, "lp": {"auc": lp}, "accuracy": {"test": acc}}
    return {
        "status": "done", "protocol": protocol, "dataset": dataset, "model": "gcn",
        "epsilon": eps, "seed": seed, "test_acc": (metrics.get("accuracy") or {}).get("test"),
        "config": cfg or {}, "metrics": metrics,
        "extra": {"phase": phase, "entry": entry or protocol},
    }  # fmt: skip


def _ppgsl(alpha: float, k: int = 1, **kw) -> dict:
    kw.setdefault("protected", _protected(0.5 + alpha))
    kw.setdefault("lp", 0.7 + alpha)
    return _row("ppgsl", cfg={"ppgsl_k": k, "ppgsl_alpha": alpha},
                entry=f"ppgsl-k{k}-a{alpha:g}", **kw)  # fmt: skip


def test_the_stated_cora_point_is_in_the_paper_numbers():
    assert pf.stated_points()["cora"] == {"attack_auc": 0.50, "lp_auc": 0.81, "nc_f1": 0.73}


def test_the_ppgsl_series_runs_in_alpha_order_and_each_family_over_its_parameter():
    rows = [_ppgsl(a) for a in (0.1, 0.0, 0.03, 0.005, 0.01)]
    rows += [_ppgsl(a, k=0) for a in (0.03, 0.0)]
    rows += [_row("edgerand", eps=e, hidden=_attack(0.6 + e / 100), lp=0.5 + e / 20)
             for e in (8.0, 1.0, 4.0)]  # fmt: skip
    rows += [_row("edge-random", cfg={"edge_ratio": r}, entry=f"random-{r:g}") for r in (0.5, 0.1)]
    rows.append(_row("none", entry="original", hidden=_attack(0.9)))
    cells = pf.frontier_cells(rows)
    series = pf.frontier_series(cells, "cora", "lp", "max_graph")
    assert list(series) == ["PPGSL k=1", "PPGSL k=0", "Random", "EdgeRand", "original"]
    k1 = series["PPGSL k=1"]
    assert [p["param"] for p in k1] == [0.0, 0.005, 0.01, 0.03, 0.1]
    # each point is its own run's
    assert [round(p["x"], 6) for p in k1] == [0.7, 0.705, 0.71, 0.73, 0.8]
    assert [round(p["y"], 6) for p in k1] == [0.5, 0.505, 0.51, 0.53, 0.6]
    assert [p["param"] for p in series["PPGSL k=0"]] == [0.0, 0.03]
    assert [p["param"] for p in series["EdgeRand"]] == [1.0, 4.0, 8.0]
    assert [p["param"] for p in series["Random"]] == [0.1, 0.5]
    assert [p["param"] for p in series["original"]] == [None]
    # the table lists them in the same order
    md = pf.frontier_markdown(cells, "cora")
    params = [line.split("|")[2].strip() for line in md.splitlines() if "| PPGSL k=1 |" in line]
    assert params == ["α = 0", "α = 0.005", "α = 0.01", "α = 0.03", "α = 0.1"]


def test_cells_read_protected_links_for_ppgsl_and_hidden_links_for_the_rest():
    hidden = _attack(0.9, embedding_cosine=0.95)
    rows = [
        _ppgsl(0.01, hidden=hidden, lp=0.82, acc=0.80,
               protected=_protected(0.5, embedding_cosine=0.70, seal=0.66)),
        _ppgsl(0.01, hidden=hidden, lp=0.84, acc=0.78, seed=1,
               protected=_protected(0.5, embedding_cosine=0.72, seal=0.60)),
        # a search run is no final run: left out
        _ppgsl(0.01, phase="search", lp=0.1, protected=_protected(0.1)),
        # feature cosine is the strongest attack on EdgeRand, but not a graph attack
        _row("edgerand", eps=2.0, hidden=_attack(0.55, feature_cosine=0.82, cn=0.61)),
    ]  # fmt: skip
    cells = pf.frontier_cells(rows)
    ppgsl = cells[("cora", "PPGSL k=1", 0.01)]
    assert ppgsl["runs"] == 2 and ppgsl["targets"] == "protected"
    md = pf.frontier_markdown(cells, "cora")
    line = next(ln for ln in md.splitlines() if "| PPGSL k=1 |" in ln)
    cols = [c.strip() for c in line.split("|")[1:-1]]
    head = [c.strip() for c in md.splitlines()[0].split("|")[1:-1]]
    row = dict(zip(head, cols, strict=True))
    assert row["attack targets"] == "protected" and row["runs"] == "2"
    assert row["LP AUC"] == "0.830 ± 0.014" and row["NC acc"] == "0.790 ± 0.014"
    assert row["GAE-cos"] == "0.710 ± 0.014"  # the protected links', not the hidden 0.95
    assert row["SEAL"] == "0.630 ± 0.042"
    assert row["max_graph (attack)"] == "0.710 ± 0.014 (GAE-cos)"
    assert row["max_graph, hidden links"] == "0.950 ± 0.000"
    line = next(ln for ln in md.splitlines() if "| EdgeRand |" in ln)
    row = dict(zip(head, [c.strip() for c in line.split("|")[1:-1]], strict=True))
    assert row["parameter"] == "ε = 2" and row["attack targets"] == "hidden"
    assert row["feature cos"] == "0.820"
    assert row["max_graph (attack)"] == "0.610 (CN)"  # not feature cosine's 0.82
    assert row["max_graph, hidden links"] == "0.610"


def test_the_paper_point_is_listed_on_cora_only():
    rows = [_ppgsl(0.01), _ppgsl(0.01, dataset="citeseer")]
    cells = pf.frontier_cells(rows)
    cora = pf.frontier_markdown(cells, "cora")
    stated = next(ln for ln in cora.splitlines() if ln.startswith("| paper (stated"))
    assert "| 0.81 | 0.73 (F1) |" in stated and "≈ 0.50" in stated
    assert "paper (stated" not in pf.frontier_markdown(cells, "citeseer")


def test_missing_sections_show_a_dash_and_do_not_stop_the_report(tmp_path):
    rows = [
        _ppgsl(0.005),
        _ppgsl(0.01, protected=None),  # a PPGSL release without protected pairs
        _row("lapgraph", eps=4.0, metrics={"lp": {"auc": 0.6}}),  # no attack, no accuracy
        _row("none", entry="original", metrics={}),
    ]
    rows[1]["metrics"]["attack"].pop("protected", None)
    written, index = pf.write_ppgsl_report(rows, tmp_path)
    md = (tmp_path / "ppgsl-frontier.md").read_text()
    lap = next(ln for ln in md.splitlines() if "| LapGraph |" in ln)
    cols = [c.strip() for c in lap.split("|")[1:-1]]
    assert cols[4] == "0.600" and cols[5:] == ["—"] * (len(cols) - 5)
    no_protected = next(ln for ln in md.splitlines() if "| α = 0.01 |" in ln)
    cols = [c.strip() for c in no_protected.split("|")[1:-1]]
    assert cols[6:-1] == ["—"] * (len(cols) - 7)  # no protected attacks
    assert cols[-1] == "0.800"  # its hidden-link attacks are still there
    assert "| original | — | hidden | 1 | — | — |" in md
    # the original has no point to draw, α = 0.01 none on the attack axes
    series = pf.frontier_series(pf.frontier_cells(rows), "cora", "lp", "max_graph")
    assert list(series) == ["PPGSL k=1"] and len(series["PPGSL k=1"]) == 1


def test_the_report_writes_both_views_per_dataset_with_ppgsl_runs(tmp_path):
    rows = [_ppgsl(a) for a in (0.0, 0.01)] + [_row("edgerand", eps=1.0)]
    rows.append(_row("edgerand", dataset="citeseer", eps=1.0))  # no PPGSL on CiteSeer
    written, index = pf.write_ppgsl_report(rows, tmp_path)
    assert [p.name for p in written] == [
        "ppgsl-frontier.md", "ppgsl-frontier-cora.png", "ppgsl-frontier-gae-cora.png"
    ]  # fmt: skip
    assert all(p.stat().st_size > 0 for p in written)
    assert written[1].read_bytes()[:4] == b"\x89PNG"
    assert any("ppgsl-frontier-cora.png" in line for line in index)
    assert pf.write_ppgsl_report([_row("edgerand", eps=1.0)], tmp_path / "x") == ([], [])
    # write_report calls it and links it in the index
    out = tmp_path / "rep"
    paths = write_report(rows, out)
    readme = (out / "README.md").read_text()
    assert "[ppgsl-frontier.md](ppgsl-frontier.md)" in readme
    assert "(ppgsl-frontier-gae-cora.png)" in readme
    assert out / "ppgsl-frontier-cora.png" in paths
