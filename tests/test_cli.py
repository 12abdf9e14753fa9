"""The `ldpgraph` command: user errors are one line with a non-zero exit, runs are
deterministic by fingerprint, `datasets --json` reports the mirror's statistics."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from ldpgraph.protocols.graph import Graph
from ldpgraph.simulation import cli, runner
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.runner import run

from .conftest import needs_mirror

SMALL = "synthetic:n=300,classes=3,d=60,avg_degree=6,seed=1"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


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
    ],
)
def test_user_errors_are_one_line(capsys, argv, needle):
    code, out, err = run_cli(capsys, "run", "--quiet", "--dataset", SMALL, *argv)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_model_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--model", "transformer"])
    assert exc.value.code == 2
    assert "invalid choice: 'transformer'" in capsys.readouterr().err


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

    monkeypatch.setattr(runner, "load_dataset", bad_graph)
    code, _, err = run_cli(
        capsys, "run", "--quiet", "--dataset", "cora", "--epochs", "2", "--backend", "local"
    )
    assert code == 2
    assert "features outside the declared domain [0.0, 1.0]" in err


def test_same_seed_same_fingerprint_different_seed_different():
    base = dict(dataset=SMALL, epochs=3, protocol="hogs", epsilon=6.0, backend="local")
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


def test_console_script_help():
    out = subprocess.run(
        [sys.executable, "-m", "ldpgraph.simulation.cli", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--feature-share" in out and "--backend" in out


def test_flwr_app_config_matches_run_defaults():
    import tomllib
    from pathlib import Path

    from ldpgraph.simulation.flower_app import APP_ONLY_KEYS

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
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
