"""PrivDPR's report: Tables 2-3 columns come from each run's s and d, MRE is averaged over
the final runs, LP/NC cells sit beside the paper's numbers, and the diagnostics table says
whether V moved with the graph."""

from __future__ import annotations

from ldpgraph.simulation.results import privdpr_table as pt


def _row(dataset="privdpr-cora", protocol="privdpr", eps=3.2, s=8.0, d=64, tri=0.99, seed=0,
         lp=None, acc=None, model="gcn", diag=None):  # fmt: skip
    metrics = {
        "graph_stats": {
            "triangles": {"original": 10, "release": 0, "re": tri},
            "rede": {"re": 0.03},
            "cpl": {"re": 0.2},
            "degree_ks": 0.4,
        }
    }
    if lp is not None:
        metrics = {"lp": {"auc": lp, "auc_dot": lp - 0.01}}
    if acc is not None:
        metrics = {"accuracy": {"test": acc}}
    return {
        "status": "done", "dataset": dataset, "protocol": protocol, "epsilon": eps,
        "model": model, "seed": seed, "test_acc": acc, "metrics": metrics,
        "config": {"wn_scale": s, "dpr_hidden": d}, "extra": {"phase": "final"},
        "privacy": {"epsilon": 0.008}, "release": {"diagnostics": diag} if diag else {},
    }  # fmt: skip


def test_paper_numbers_hold_every_table():
    paper = pt.paper_numbers()
    assert paper["privdpr_table2"]["privdpr-cora"]["triangles"]["8"] == 0.9893
    assert paper["privdpr_table3"]["privdpr-chicago"]["degree_ks"]["512"] == 0.2854
    assert paper["privdpr_table5"]["privdpr"]["privdpr-p2p"] == [0.5986, 0.0052]
    assert paper["privdpr_table6"]["privdpr"]["citeseer@3.2"] == [0.2266, 0.0099]
    assert paper["privdpr_figures"]["privdpr-cora"]["dpr-nodp"]["cpl"]["0.1"] == 0.116


def test_table2_columns_come_from_the_runs_scale_and_mre_is_a_mean_over_runs():
    rows = [_row(s=2.0, tri=0.9), _row(s=2.0, tri=0.7, seed=1), _row(s=8.0, tri=0.5)]
    rows.append(_row(s=4.0, d=128, tri=0.1))  # another d: not in Table 2
    md = pt.sweep_table_markdown(rows, "s")
    tc = next(line for line in md.splitlines() if "| TC |" in line)
    cells = [c.strip() for c in tc.split("|")[1:-1]]
    assert cells[2] == "0.8000 (0.9926)" and cells[3] == "– (0.9914)"
    assert cells[5] == "0.5000 (0.9893)"
    assert cells[6] == "2.12e-01"  # the sample SD of the row's 0.8 and 0.5
    # s = 4 with d = 128 is in neither table; s = 8 with d = 128 is Table 3's d = 128 column
    assert "0.1000" not in pt.sweep_table_markdown(rows, "d")
    assert "0.3000 (0.9920)" in pt.sweep_table_markdown([*rows, _row(d=128, tri=0.3)], "d")


def test_lp_and_nc_tables_sit_beside_the_paper():
    rows = [_row(eps=0.1, lp=0.52), _row(eps=0.1, lp=0.50, seed=1)]
    md = pt.lp_markdown(rows)
    assert "| Cora | 0.1 | 0.5100 ± 0.0141 (2) | 0.5000 ± 0.0141 (2) | 0.5066 ± 0.0070 |" in md
    nc = pt.nc_markdown([_row(dataset="cora", acc=0.30, model="mlp", eps=3.2)])
    assert "| Cora | 3.2 | mlp | 0.3000 (1) | 0.3188 ± 0.0170 |" in nc
    assert pt.lp_markdown([_row()]) == "" and pt.nc_markdown([_row()]) == ""


def test_diagnostics_table_and_the_whole_report(tmp_path):
    diag = {"v_graph_effect": 1e-18, "signal_to_noise": 2e-20, "f_spread": 0.0,
            "edge_score_z": -1.2}  # fmt: skip
    rows = [_row(eps=e, diag=diag) for e in (0.1, 3.2)] + [_row(protocol="dpr-nodp", diag=diag)]
    md = pt.diagnostics_markdown(rows)
    assert "| Cora (privdpr-cora) | privdpr | 0.1 | 0.008 | 1 | 1e-18 | 2e-20 | 0 | 1.2 |" in md
    assert "| dpr-nodp | – | ∞ |" in md
    written, index = pt.write_privdpr_report(rows, tmp_path)
    names = {p.name for p in written}
    assert names == {"privdpr-tables.md", "privdpr-stats-vs-eps-privdpr-cora.png"}
    text = (tmp_path / "privdpr-tables.md").read_text()
    assert "Table 2" in text and "Did V learn" in text and index
    assert pt.write_privdpr_report([{**rows[0], "protocol": "hogs"}], tmp_path) == ([], [])
