"""``ldpgraph run``: user errors are one line with a non-zero exit, runs are deterministic by
fingerprint, the record and summary say what was released. The other commands' tests are in
tests/simulation/cli/."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldpgraph.protocols.graph import Graph
from ldpgraph.simulation import pipeline
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.pipeline import run

from ..conftest import needs_mirror
from .cli import SMALL, garbage_mirror, one_line_error, run_cli


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--dataset", "nope"], "unknown dataset 'nope'"),
        (["--protocol", "magic"], "unknown protocol 'magic'"),
        (["--epsilon", "0"], "epsilon must be a finite number > 0"),
        (["--epsilon", "-2"], "epsilon must be a finite number > 0"),
        (["--epsilon", "nan"], "epsilon must be a finite number > 0"),
        (["--epsilon", "inf"], "epsilon must be a finite number > 0"),
        (["--split", "1.2,0.1"], "train-split must be in [0, 1]"),
        (["--split", "0.7,0.5"], "must not exceed 1"),
        (["--tau", "0"], "tau must be in (0, 1]"),
        (["--tau", "1.5"], "tau must be in (0, 1]"),
        (["--feature-share", "1"], "feature-share must be in (0, 1)"),
        (["--protocol", "none"], "add --trust-curator"),
        (["--nodes-per-client", "-1"], "nodes-per-client must be >= 1"),
        (["--graph-exact-limit", "-1"], "graph-exact-limit must be >= 0, got -1"),
        (["--graph-sample-sources", "-5"], "graph-sample-sources must be >= 0, got -5"),
        # bad values caught before any data is loaded
        (["--device", "gpu"], "unknown device 'gpu'; choose auto"),
        (["--device", "cuda:x"], "unknown device 'cuda:x'"),
        (["--epsilon", "1420"], "epsilon must be at most 100"),
        (["--epsilon", "1e300"], "epsilon must be at most 100"),
        (["--hidden", str(10**9)], "hidden must be at most 16384"),
        (["--epochs", str(10**12)], "epochs must be at most 100000"),
        (
            ["--protocol", "rr", "--combine", "xor"],
            "unknown combine 'xor'; choose one of: or, and, lower",
        ),
        (
            ["--protocol", "ldpgen", "--generator", "magic"],
            "unknown generator 'magic'; choose one of: blinkgnn",
        ),
        (["--protocol", "blink-soft", "--min-weight", "0"], "min-weight must be in (0, 1)"),
        (["--protocol", "blink-soft", "--min-weight", "1.5"], "min-weight must be in (0, 1)"),
        (["--split", "0.5,0.5"], "leaves none"),
        (["--split", "0.75,0.25"], "leaves none"),
        (["--split", "0,0.5"], "train-split and val-split must be > 0"),
        (["--split", "0.5,0"], "train-split and val-split must be > 0"),
        (["--dataset", "synthetic:n=1000000000"], "synthetic: n must be at most"),
        (["--dataset", "synthetic:n=1000000,d=5000"], "feature entries is more than"),
        # a split that leaves a part empty on a tiny graph: refused before any collection
        (["--dataset", "synthetic:n=3,classes=2,d=4,homophily=0.5,avg_degree=0.5"], "no val"),
        (
            ["--dataset", "synthetic:n=6,classes=2,d=4,homophily=0.5,avg_degree=1"]
            + ["--split", "0.5,0.45"],
            "leaves no test nodes (3/3/0)",
        ),
    ],
)
def test_user_errors_are_one_line(capsys, argv, needle):
    code, out, err = run_cli(capsys, "run", "--quiet", "--dataset", SMALL, *argv)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_data_root_without_files_names_them(capsys, tmp_path):
    code, _, err = run_cli(
        capsys, "run", "--quiet", "--dataset", "cora", "--data-root", str(tmp_path)
    )
    assert code == 2
    assert "ind.cora.x" in err and str(tmp_path) in err
    assert "Traceback" not in err


def test_features_outside_domain(capsys, monkeypatch):
    def bad_graph(*_a, **_k):
        x = np.full((20, 4), 2.0, dtype=np.float32)
        return Graph("bad", np.array([[0, 1]]), x, np.arange(20) % 2)

    monkeypatch.setattr(pipeline, "load_dataset", bad_graph)
    code, _, err = run_cli(
        capsys, "run", "--quiet", "--dataset", "cora", "--epochs", "2", "--backend", "local"
    )
    assert code == 2
    assert "features outside the declared domain [0.0, 1.0]" in err


def test_same_seed_same_fingerprint_different_seed_different():
    # On the CPU, where a seed gives the same training bits (see tests/server/test_training.py).
    base = dict(
        dataset=SMALL, epochs=3, protocol="hogs", epsilon=6.0, backend="local", device="cpu"
    )
    a = run(RunConfig(seed=3, **base))
    b = run(RunConfig(seed=3, **base))
    c = run(RunConfig(seed=4, **base))
    assert a["fingerprint"] == b["fingerprint"]
    assert a["accuracy"] == b["accuracy"]
    assert a["fingerprint"] != c["fingerprint"]


def test_run_json_record(capsys):
    code, out, _ = run_cli(
        capsys,
        "run",
        "--quiet",
        "--json",
        "--dataset",
        SMALL,
        "--epochs",
        "5",
        "--protocol",
        "hogs-edge",
        "--epsilon",
        "5",
        "--backend",
        "local",
    )
    assert code == 0
    res = json.loads(out)
    assert res["config"]["protocol"] == "hogs-edge"
    assert 0.0 <= res["accuracy"]["test"] <= 1.0 and 0.0 <= res["accuracy"]["val"] <= 1.0
    assert res["privacy"]["epsilon"] == pytest.approx(5.0, abs=1e-3)
    assert res["graph"]["original"]["nodes"] == 300 == res["graph"]["synthetic"]["nodes"]
    assert {"load", "collect", "reconstruct", "train", "total"} <= set(res["timings"])
    assert len(res["fingerprint"]) == 64


@pytest.mark.parametrize("protocol", ["none", "features-only"])
def test_reference_protocols(protocol):
    res = run(
        RunConfig(
            dataset=SMALL,
            epochs=3,
            protocol=protocol,
            model="mlp",
            backend="local",
            trust_curator=True,
        )
    )
    if protocol == "none":
        assert res["graph"]["synthetic"]["edges"] == res["graph"]["original"]["edges"]
    else:
        assert res["graph"]["synthetic"]["edges"] == 0


def test_flwr_app_config_matches_run_defaults():
    import tomllib
    from pathlib import Path

    from ldpgraph.simulation.flower_app import APP_ONLY_KEYS

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    app_cfg = pyproject["tool"]["flwr"]["app"]["config"]
    ours = {k: v for k, v in app_cfg.items() if k not in APP_ONLY_KEYS}
    assert ours == RunConfig().to_flwr()
    comps = pyproject["tool"]["flwr"]["app"]["components"]
    assert comps["clientapp"] == "ldpgraph.client.app:app"


def test_run_records_into_a_store(capsys, tmp_path):
    db = tmp_path / "r.db"
    code, _, _ = run_cli(
        capsys,
        "run",
        "--quiet",
        "--dataset",
        SMALL,
        "--epochs",
        "3",
        "--backend",
        "local",
        "--store",
        str(db),
    )
    assert code == 0
    code, out, _ = run_cli(capsys, "results", "--store", str(db), "--json")
    rows = json.loads(out)
    assert len(rows) == 1 and rows[0]["status"] == "done" and rows[0]["dataset"] == SMALL


def test_the_trust_curator_hint_is_a_command_that_works(capsys):
    base = ["run", "--quiet", "--dataset", SMALL, "--protocol", "none", "--model", "mlp"]
    base += ["--epochs", "2", "--backend", "local"]
    code, _, err = run_cli(capsys, *base)
    assert code == 2 and err.strip().endswith("add --trust-curator")
    code, out, _ = run_cli(capsys, *base, "--trust-curator")
    assert code == 0 and "ldpgraph run: none" in out


def test_a_central_release_is_replayable_only_when_the_seed_is_given(capsys):
    """No --seed: the release noise is drawn from OS entropy (two runs, two releases); the same
    --seed twice: one release, and the record and summary say it is replayable."""
    base = ["run", "--quiet", "--dataset", SMALL, "--protocol", "edgerand", "--epsilon", "1"]
    base += ["--trust-curator", "--backend", "local", "--metrics", "none"]

    def record(*extra: str) -> dict:
        code, out, _ = run_cli(capsys, *base, "--json", *extra)
        assert code == 0
        return json.loads(out)

    a, b = record(), record()
    assert a["fingerprint"] != b["fingerprint"]
    assert a["config"]["seeded"] is False and a["release"]["replayable"] is False
    c, d = record("--seed", "3"), record("--seed", "3")
    assert c["fingerprint"] == d["fingerprint"] != a["fingerprint"]
    assert c["config"]["seeded"] is True and c["release"]["replayable"] is True
    assert record("--seed", "3", "--no-seeded")["release"]["replayable"] is False
    assert record("--seeded")["config"]["seed"] == 0  # seeded at the default seed
    code, out, _ = run_cli(capsys, *base, "--seed", "3")
    lines = out.splitlines()
    assert lines[0].startswith(f"ldpgraph run: edgerand on {SMALL}: ε = 1 per edge, δ = 0")
    assert "  release noise seeded: replayable, not a private release" in lines


# --- bad input refused up front: one line, exit 2 --------------------------------------------


def test_a_gpu_that_is_not_there_is_refused_up_front(capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(pipeline, "load_dataset", lambda *_a, **_k: pytest.fail("loaded"))
    err = one_line_error(capsys, ["run", "--dataset", SMALL, "--device", "cuda"])
    assert "PyTorch sees no CUDA GPU" in err and "--device auto" in err


def test_missing_data_says_how_to_point_at_it(capsys, tmp_path, monkeypatch):
    """Without a data root (no --data-root, no LDPGRAPH_DATA, nothing recorded by make) and
    without the internet, the error says how to point ldpgraph at the mirror."""
    import sys as _sys
    import urllib.error

    from ldpgraph.simulation.datasets import download

    def offline(*_a, **_k):
        raise urllib.error.URLError("no network")

    monkeypatch.delenv("LDPGRAPH_DATA", raising=False)
    monkeypatch.setattr(_sys, "prefix", str(tmp_path))
    monkeypatch.setenv("LDPGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(download, "download_file", offline)
    err = one_line_error(capsys, ["run", "--dataset", "cora", "--backend", "local"])
    assert "--data-root PATH or LDPGRAPH_DATA=PATH" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    err = one_line_error(capsys, ["run", "--dataset", "cora", "--data-root", str(empty)])
    assert "--data-root PATH or LDPGRAPH_DATA=PATH" in err and str(empty) in err


def test_the_data_root_recorded_by_make_is_used(capsys, tmp_path, monkeypatch):
    """`make` writes its DATA to <venv>/ldpgraph-data-root; the venv's ldpgraph falls back to
    it when neither --data-root nor LDPGRAPH_DATA is given."""
    import os
    import sys as _sys

    from ldpgraph.simulation.datasets import DATA_ROOT_FILE

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (tmp_path / DATA_ROOT_FILE).write_text(f"{mirror}\n")
    monkeypatch.setattr(_sys, "prefix", str(tmp_path))
    monkeypatch.delenv("LDPGRAPH_DATA", raising=False)
    monkeypatch.setenv("LDPGRAPH_CACHE", str(tmp_path / "cache"))
    err = one_line_error(capsys, ["run", "--dataset", "cora", "--backend", "local"])
    assert f"data root {mirror} lacks" in err
    assert os.environ["LDPGRAPH_DATA"] == str(mirror)  # exported for worker processes too
    monkeypatch.setenv("LDPGRAPH_DATA", str(tmp_path))  # the environment wins
    err = one_line_error(capsys, ["run", "--dataset", "cora", "--backend", "local"])
    assert f"data root {tmp_path} lacks" in err


def test_a_damaged_dataset_file_is_named_in_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("LDPGRAPH_CACHE", str(tmp_path / "cache"))
    garbage_mirror(tmp_path / "data", "cora", "amazon-photo")
    for name, damaged in (
        ("amazon-photo", "Amazon/Photo/raw/amazon_electronics_photo.npz"),
        ("cora", "Planetoid/Cora/raw/ind.cora.x"),
    ):
        argv = ["run", "--dataset", name, "--data-root", str(tmp_path / "data")]
        err = one_line_error(capsys, [*argv, "--backend", "local"])
        assert f"cannot read {tmp_path / 'data' / damaged}" in err


# --- the summary ------------------------------------------------------------------------------


def test_summary_states_the_unit_and_json_is_strict(capsys):
    argv = ["run", "--quiet", "--dataset", SMALL, "--epochs", "3", "--backend", "local"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    assert "per node" not in out  # the guarantee is per bit, not per node
    assert "per adjacency bit" in out and "per feature bit" in out
    code, out, _ = run_cli(capsys, *argv, "--json")
    record = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
    assert record["config"]["feature_share"] == 0.1 and record["config"]["center_features"]
    assert record["training"]["collapsed"] in (True, False)


@needs_mirror
def test_cora_hogs_fingerprint_under_the_former_defaults():
    """The synthetic graph of Cora, seed 0, HoGS ε = 8 with the settings `make run` used before
    the defaults changed (δ = 0.5; centring only changes training): pinned, so the reports and
    the reconstruction stay bit-identical. On the CPU: the numpy curator's features (a GPU's
    agree to one float32 rounding, tests/protocols/test_hogs_torch.py). Re-pinned when RR's
    flipped zeros came to be drawn by :func:`distinct_ranks` (same law, other draws; it was
    8d6d63b1 with numpy's ``Generator.choice``)."""
    config = RunConfig(
        dataset="cora", protocol="hogs", epsilon=8.0, seed=0, backend="local", feature_share=0.5,
        device="cpu",
    )  # fmt: skip
    release, _ = pipeline.release(config, pipeline.prepare(config).graph)
    assert release.fingerprint().startswith("f7e0276c")


def test_the_graph_metric_end_to_end_with_its_settings_and_its_error(capsys):
    """``--metrics graph`` puts the graph statistics in the record and the summary; its
    settings reach the metric (a limit below the graph's size samples); with sampling off the
    run stops with one line."""
    argv = ["run", "--quiet", "--dataset", SMALL, "--backend", "local", "--metrics", "graph"]
    sampled = ["--graph-exact-limit", "50", "--graph-sample-sources", "100"]
    code, out, _ = run_cli(capsys, *argv, "--json", *sampled)
    assert code == 0
    record = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
    section = record["graph_stats"]
    for which in ("original", "release"):
        assert section["paths"][which]["method"] == "sampled"
        assert section["paths"][which]["sources"] == 100
    assert section["edges"]["original"] == record["graph"]["original"]["edges"]
    assert "accuracy" not in record and record["config"]["graph_exact_limit"] == 50
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0 and "graph stats   original → release (RE); paths exact" in out
    code, _, err = run_cli(
        capsys, *argv, "--graph-exact-limit", "50", "--graph-sample-sources", "0"
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "above graph-exact-limit 50, and sampling is off" in err
