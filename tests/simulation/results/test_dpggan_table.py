"""DPGGAN / DPGVAE's Tables 1-2 report: cells are means over the final runs beside the
paper's, the two operating rules stay apart, GIN shows only when a run measured it, and a run
without the collection section shows "—"."""

from __future__ import annotations

import math

from ldpgraph.simulation.results import dpggan_table as dt
from ldpgraph.simulation.results.report import write_report

DBLP_ORIGINAL = {"lcc": 107.54, "tc": 59.9, "cpl": 3.6943, "gini": 0.3248, "rede": 0.9385}


def _row(protocol="dpggan", *, entry=None, eps=1.0, dataset="dblp-collection", tc=70.0,
         degree=0.6, motif=0.4, skipped=0, gin=None, seed=0, phase="final",
         release_eps=math.inf, section=True):  # fmt: skip
    entry = entry or f"paper-{protocol}"
    table1 = {
        k: {"original": v, "generated": v, "abs_diff": tc if k == "tc" else 0.01,
            "pairs": 69, "undefined": 0}
        for k, v in DBLP_ORIGINAL.items()
    }  # fmt: skip
    metrics: dict = {}
    if section:
        metrics["collection_stats"] = {
            "graphs": 69, "table1": table1,
            "table2": {"degree_cosine": degree, "motif_cosine": motif, "motif_pairs": 69 - skipped,
                       "motif_pairs_skipped": skipped, "motif_limit": 300000},
        }  # fmt: skip
    if gin is not None:
        metrics["gin"] = gin
    return {
        "status": "done", "protocol": protocol, "dataset": dataset, "model": "gcn",
        "epsilon": eps, "seed": seed, "test_acc": None, "metrics": metrics, "config": {},
        "privacy": {"epsilon": release_eps}, "extra": {"phase": phase, "entry": entry},
    }  # fmt: skip


def _lines(md: str) -> list[dict[str, str]]:
    """The table's body lines as column → cell."""
    rows = md.splitlines()
    head = [c.strip() for c in rows[0].split("|")[1:-1]]
    return [dict(zip(head, [c.strip() for c in r.split("|")[1:-1]], strict=True)) for r in rows[2:]]


def test_the_paper_tables_are_in_the_paper_numbers():
    t1, t2 = dt.paper_tables()
    assert t1["dblp-collection"]["original"]["tc"] == 59.90
    assert t1["imdb-collection"]["dpgvae@0.1"] == {
        "lcc": 0.0320, "tc": 44.12, "cpl": 0.0392, "gini": 0.0042, "rede": 0.0032
    }  # fmt: skip
    assert t2["imdb-collection"]["dpggan@1"] == {"degree": 0.5486, "motif": 0.4150, "gin": 0.4725}
    assert set(t2["dblp-collection"]) == {"gvae", "netgan", "graphrnn", "dpgvae@1", "dpggan@1"}


def test_rules_come_from_the_variant_label():
    assert dt.rule_of(_row(entry="paper-dpgvae")) == "paper"
    assert dt.rule_of(_row(entry="dp-dpggan")) == "dp"
    assert dt.rule_of(_row(entry="t2-dpgvae")) == "t2"  # the strict release with GIN, apart
    assert dt.rule_of(_row(entry="dpggan")) == "dp"  # no variant: the default edge selection
    bare = {**_row(entry="dpggan"), "config": {"dpg_edge_selection": "topk_true"}}
    assert dt.rule_of(bare) == "paper"
    assert dt.rule_of(_row(entry="dpggan-encoder")) == "dpggan-encoder"


def test_table1_cells_are_means_beside_the_paper_and_the_rules_stay_apart():
    rows = [
        _row(tc=70.0), _row(tc=72.0, seed=1),
        _row(tc=500.0, phase="search"),  # not a final run
        _row(entry="dp-dpggan", tc=90.0, release_eps=1.02),
        _row("dpgvae", eps=10.0, tc=180.0),
    ]  # fmt: skip
    lines = _lines(dt.table1_markdown(dt.table_cells(rows), "dblp-collection"))
    original = lines[0]
    assert original["model"] == "Original (measured)" and original["runs"] == "4"
    assert original["LCC"] == "107.5 (107.5)" and original["TC"] == "59.9 (59.9)"
    ours = [(r["model"], r["rule"], r["ε (target)"]) for r in lines[1:4]]
    assert ours == [("DPGVAE", dt.RULES["paper"], "10"), ("DPGGAN", dt.RULES["paper"], "1"),
                    ("DPGGAN", dt.RULES["dp"], "1")]  # fmt: skip
    assert lines[1]["TC"] == "180 (175.29)"
    assert lines[2]["TC"] == "71 ± 1.4 (70.97)" and lines[2]["runs"] == "2"
    assert lines[2]["proven ε"] == "∞"
    # a run stored with the paper's claim as its ε (1.02): no proof, so its proven ε is ∞
    assert lines[3]["TC"] == "90 (70.97)" and lines[3]["proven ε"] == "∞"
    assert [r["model"] for r in lines[4:]] == [
        "GVAE (no DP), paper only", "NetGAN (no DP), paper only", "GraphRNN (no DP), paper only"
    ]  # fmt: skip
    assert lines[4]["TC"] == "— (66.93)"


def test_table2_shows_gin_only_when_measured_and_the_paper_at_epsilon_1():
    rows = [_row(degree=0.5, motif=0.3, skipped=4), _row("dpgvae", eps=0.1)]
    lines = _lines(dt.table2_markdown(dt.table_cells(rows), "dblp-collection"))
    gan = next(r for r in lines if r["model"] == "DPGGAN")
    assert gan["degree dist. (cosine)"] == "0.5 (0.6092)"
    assert gan["motif ct. (cosine)"] == "0.3 (0.415)"
    assert gan["GIN acc."] == "— (0.3261)" and gan["motif pairs skipped"] == "4"
    vae = next(r for r in lines if r["model"] == "DPGVAE")
    assert vae["degree dist. (cosine)"] == "0.6"  # the paper has no ε = 0.1 column
    # the gin metric's section: final-epoch fold means (the best epoch is not the table's)
    gin = {"generated": {"final": 0.33, "best": 0.5}, "original": {"final": 0.4, "best": 0.6}}
    lines = _lines(dt.table2_markdown(dt.table_cells([_row(gin=gin)]), "dblp-collection"))
    assert lines[0]["model"] == "Original (measured)" and lines[0]["GIN acc."] == "0.4"
    assert lines[1]["GIN acc."] == "0.33 (0.3261)"
    assert dt.gin_accuracy(_row(gin={"generated": {"final": 0.25}})) == (0.25, None)


def test_a_run_without_the_collection_section_shows_dashes(tmp_path):
    rows = [_row(section=False), _row("dpgvae", dataset="imdb-collection", section=False)]
    cells = dt.table_cells(rows)
    lines = _lines(dt.table1_markdown(cells, "dblp-collection"))
    assert lines[0]["TC"] == "— (59.9)" and lines[1]["TC"] == "— (70.97)"
    assert lines[1]["runs"] == "1" and lines[1]["proven ε"] == "∞"
    lines = _lines(dt.table2_markdown(cells, "imdb-collection"))
    assert lines[0]["degree dist. (cosine)"] == "— (0.5081)"
    written, _ = dt.write_dpggan_report(rows, tmp_path)
    assert [p.name for p in written] == ["dpggan-tables.md"]  # no TC to plot


def test_the_report_writes_tables_and_the_tc_figure(tmp_path):
    rows = [_row(eps=e, tc=100 / e, seed=s) for e in (0.1, 1.0, 10.0) for s in (0, 1)]
    rows += [_row(entry="dp-dpggan", eps=1.0, release_eps=1.0), _row("dpgvae", eps=1.0)]
    written, index = dt.write_dpggan_report(rows, tmp_path)
    assert [p.name for p in written] == ["dpggan-tables.md", "dpggan-tc-vs-eps-dblp-collection.png"]
    assert written[1].read_bytes()[:4] == b"\x89PNG"
    text = written[0].read_text()
    assert "## Table 1, DBLP" in text and "## Table 2, DBLP" in text
    line = f"| DPGGAN | {dt.RULES['paper']} | 10 | ∞ | 2 | 0.01 ± 0 (10.61) | 10 ± 0 (64.75) |"
    assert line in text
    assert dt.write_dpggan_report([{**rows[0], "protocol": "hogs"}], tmp_path / "x") == ([], [])
    out = tmp_path / "rep"
    write_report(rows, out)
    readme = (out / "README.md").read_text()
    assert "[dpggan-tables.md](dpggan-tables.md)" in readme
    assert "(dpggan-tc-vs-eps-dblp-collection.png)" in readme
