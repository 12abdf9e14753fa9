"""``ldpgraph datasets``: the mirror's statistics, and one damaged dataset named, not fatal."""

from __future__ import annotations

import json

from ...conftest import needs_mirror
from . import garbage_mirror, run_cli


@needs_mirror
def test_datasets_json(capsys):
    code, out, _ = run_cli(capsys, "datasets", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    cora = rows["cora"]["measured"]
    assert (cora["nodes"], cora["edges"], cora["features"], cora["classes"]) == (
        2708,
        5278,
        1433,
        7,
    )
    cs = rows["citeseer"]["measured"]
    assert (cs["nodes"], cs["edges"], cs["features"], cs["classes"]) == (3327, 4552, 3703, 6)
    fb = rows["facebook"]["measured"]
    assert (fb["nodes"], fb["edges"], fb["features"], fb["classes"]) == (22470, 170823, 4714, 4)
    assert rows["pubmed"]["offline"] is False and rows["synthetic"]["offline"] is True


def test_one_damaged_dataset_does_not_break_the_list(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("LDPGRAPH_CACHE", str(tmp_path / "cache"))
    garbage_mirror(tmp_path / "data", "amazon-photo")
    code, out, err = run_cli(capsys, "datasets", "--data-root", str(tmp_path / "data"))
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert " ERROR " in lines["amazon-photo"] and " yes " in lines["synthetic"]
    assert "amazon_electronics_photo.npz" in err
    code, out, _ = run_cli(capsys, "datasets", "--json", "--data-root", str(tmp_path / "data"))
    rows = {r["name"]: r for r in json.loads(out)}
    assert "cannot read" in rows["amazon-photo"]["error"] and rows["synthetic"]["measured"]


def test_measuring_says_so_on_stderr_unless_quiet(capsys, monkeypatch):
    from ldpgraph.simulation import datasets

    monkeypatch.setattr(datasets, "dataset_catalog", lambda *_a, **_k: [])
    code, _out, err = run_cli(capsys, "datasets")
    assert code == 0 and "measuring the datasets" in err and "--no-measure" in err
    for quiet in (["--no-measure"], ["--quiet"]):
        code, _out, err = run_cli(capsys, "datasets", *quiet)
        assert code == 0 and err == ""


@needs_mirror
def test_a_dataset_loaded_to_be_measured_says_so_once(capsys, tmp_path, monkeypatch):
    """Measuring loads a dataset the first time (seconds each, a minute for the list): a
    stage line names it as it starts; from the cache the list is quick and says nothing."""
    from ldpgraph.simulation.datasets import load

    monkeypatch.setenv("LDPGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(load, "DATASETS", {k: load.DATASETS[k] for k in ("cora", "synthetic")})
    code, out, err = run_cli(capsys, "datasets")
    assert code == 0 and "cora" in out
    assert "loading cora to measure it (1/2)" in err
    code, out, err = run_cli(capsys, "datasets")
    assert code == 0 and "cora" in out and "loading" not in err
    code, out, err = run_cli(capsys, "datasets", "--quiet")
    assert code == 0 and err == ""
