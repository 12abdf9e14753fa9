"""``ldpgraph sweep``: experiment files, counts, release reuse, resumption after a kill."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ldpgraph.simulation.cli import main
from ldpgraph.simulation.results.store import ResultsStore
from ldpgraph.simulation.sweep import run as sw
from ldpgraph.simulation.sweep.experiment import (
    ExperimentError,
    load_experiment,
    parse_experiment,
)

ROOT = Path(__file__).resolve().parents[2]
SYN = "synthetic:n=150,classes=3,d=20"

TINY = f"""
name = "tiny"
datasets = ["{SYN}"]
protocols = ["hogs", "rr"]
models = ["gcn"]
epsilons = [4]
runs_per_config = 2
final_runs = 2
seed = 7

[fixed]
epochs = 5

[grid.small]
lr = [0.01, 0.05]

[grid.paper]
dropout = [0.5, 0.0]
lr = [0.01, 0.05]
[grid.paper.hogs]
feature_share = [0.3, 0.5]
tau = [0.5, 0.9]
steps = [0, 1]
"""


def _write(tmp_path: Path, text: str, name: str = "tiny.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _parse(text: str):
    import tomllib

    return parse_experiment(tomllib.loads(text), "x.toml")


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        (("seed = 7", "seed = 7\nbogus = 1"), "bogus"),
        (('models = ["gcn"]', 'models = ["gcnn"]'), "unknown model 'gcnn'"),
        (('datasets = ["', 'datasets = ["nosuchdata", "'), "nosuchdata"),
        (("lr = [0.01, 0.05]\n\n", "lr = []\n\n"), "grid.small.lr: must be a non-empty list"),
        (("epochs = 5", "epochs = 5\nmodel = 'gat'"), "fixed.model"),
        (("epochs = 5", "epochs = 5\nwidth = 3"), "fixed.width: unknown key"),
        (("tau = [0.5, 0.9]", "tau = [0.5, 1.5]"), "tau must be in (0, 1]"),
        (("lr = [0.01, 0.05]\n\n", "lr = ['fast']\n\n"), "must be of type float"),
        (("runs_per_config = 2", "runs_per_config = 0"), "runs_per_config"),
        (("[grid.paper.hogs]", "[grid.paper.hogz]"), "grid.paper.hogz"),
        (("epsilons = [4]", "epsilons = [0]"), "epsilons"),
        (("lr = [0.01, 0.05]\n\n", "lr = [true]\n\n"), "must be of type float"),
        (("epochs = 5", "epochs = 5\ncenter_features = 1"), "must be of type bool"),
    ],
)
def test_schema_errors(patch: tuple[str, str], needle: str) -> None:
    text = TINY.replace(*patch, 1)
    assert text != TINY
    with pytest.raises(ExperimentError) as err:
        _parse(text)
    msg = str(err.value)
    assert "x.toml" in msg and needle in msg and "\n" not in msg


def test_boolean_training_switches_are_searched_on_one_release(tmp_path: Path) -> None:
    """``center_features`` only changes the training: both values train on the same
    release."""
    exp = _parse(TINY.replace("lr = [0.01, 0.05]\n\n", "center_features = [false, true]\n\n", 1))
    db = tmp_path / "unused.db"
    res = sw.run_sweep(exp, "small", store_path=str(db), dry_run=True)
    assert not db.exists()
    s = res.phases["search"]
    assert (s.releases, s.trainings) == (4, 8)  # 2 protocols × 2 seeds, × 2 values
    cell = next(iter(exp.cells()))
    assert [c["center_features"] for c in exp.configurations(exp.grid("small"), cell)] == [
        False,
        True,
    ]


def test_unregistered_protocol_is_an_error_at_run_time(tmp_path: Path) -> None:
    text = TINY.replace('["hogs", "rr"]', '["hogs", "not-yet"]')
    exp = _parse(text)  # readable and countable
    with pytest.raises(ExperimentError, match="not-yet.*not registered"):
        exp.check_protocols()
    path = _write(tmp_path, text)
    assert main(["sweep", str(path), "--store", str(tmp_path / "s.db"), "--workers", "0"]) == 2
    # the dry run validates as the real run does
    assert main(["sweep", str(path), "--dry-run", "--store", str(tmp_path / "s.db")]) == 2


def test_a_sweep_whose_metrics_score_nothing_is_refused_dry_or_not(tmp_path: Path, capsys) -> None:
    text = TINY.replace('["hogs", "rr"]', '["hogs"]')
    text = text.replace("[grid.small]", 'metrics = "collection"\n\n[grid.small]', 1)
    assert text.count('metrics = "collection"') == 1
    path = _write(tmp_path, text)
    for dry in ([], ["--dry-run"]):
        argv = ["sweep", str(path), "--store", str(tmp_path / "s.db"), "--workers", "0", *dry]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "measure nothing" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("path", sorted((ROOT / "experiments").glob("*.toml")), ids=str)
def test_experiment_files_load(path: Path) -> None:
    exp = load_experiment(path, check_protocols=False)
    assert exp.description and {"paper", "fast"} <= set(exp.grids)
    for cell in exp.cells():
        assert exp.configurations(exp.grid("paper"), cell)
    res = sw.run_sweep(exp, "fast", store_path=str(path) + ".none.db", dry_run=True)
    assert res.phases["search"].trainings + res.phases["final"].trainings > 0
    assert not Path(str(path) + ".none.db").exists()


def test_paper_grid_counts() -> None:
    exp = load_experiment(ROOT / "experiments" / "hogs-table3.toml", check_protocols=False)
    cells = exp.cells()
    # 3 datasets × 3 ε × (HoGS and BLink × 3 models + the MLP floor)
    assert len(cells) == 3 * 3 * (2 * 3 + 1)
    hogs = next(c for c in cells if c.entry.label == "hogs-edge")
    assert len(exp.configurations(exp.grid("paper"), hogs)) == 3 * 4 * 3 * 4
    blink = next(c for c in cells if c.entry.label == "blink-hard")
    assert blink.entry.fixed["selection"] == "val_loss"
    # Blink_GNN's grid for its Table III results: δ 5 × dropout 3 × lr 2 × weight decay 2
    assert len(exp.configurations(exp.grid("paper"), blink)) == 5 * 3 * 2 * 2


def test_dry_run_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = _parse(TINY)
    res = sw.run_sweep(exp, "paper", store_path=str(tmp_path / "no.db"), dry_run=True)
    s, f = res.phases["search"], res.phases["final"]
    # hogs: 2 δ × 2 seeds collections, each 2 τ × 2 l releases, each 2×2 trainings;
    # rr: 2 seeds, 1 release each, 4 trainings each.
    assert (s.units, s.releases, s.trainings) == (4 + 2, 16 + 2, 64 + 8)
    assert f.upper_bound and f.trainings == 2 * 2
    assert not (tmp_path / "no.db").exists()
    path = _write(tmp_path, TINY)
    assert main(["sweep", str(path), "--dry-run", "--store", str(tmp_path / "no.db")]) == 0
    out = capsys.readouterr().out
    assert "trainings 72" in out and "upper bound" in out


def _reports(protocol, tau, steps, graph):
    from ldpgraph.protocols.registry import make_protocol, protocol_info
    from ldpgraph.simulation.backends.local import collect_round

    params = {"epsilon": 4.0, "feature_share": 0.5, "tau": tau, "steps": steps}
    declared = protocol_info(protocol).param_names
    p = make_protocol(protocol, **{k: v for k, v in params.items() if k in declared})
    res = collect_round(p, graph, 0, p.config(), 3)
    return {
        k: (np.asarray(r.adjacency).tolist(), None if r.features is None else r.features.tolist())
        for k, r in res.reports.items()
    }


@pytest.mark.parametrize("protocol", ["hogs", "hogs-edge"])
def test_reports_ignore_server_keys(protocol: str) -> None:
    from ldpgraph.simulation.datasets import load_dataset

    g = load_dataset(SYN)
    assert _reports(protocol, 0.5, 0, g) == _reports(protocol, 0.9, 2, g)


def test_tiny_sweep_reuse_and_rerun(tmp_path: Path) -> None:
    exp = _parse(TINY)
    db = str(tmp_path / "s.db")
    res = sw.run_sweep(exp, "paper", store_path=db, workers=0)
    s, f = res.phases["search"], res.phases["final"]
    # one collection per (protocol, δ, seed), one reconstruction per (δ, τ, l, seed)
    assert (s.collections, s.reconstructions, s.trained, s.failed) == (6, 18, 72, 0)
    assert (f.trained, f.failed) == (4, 0)
    assert f.collections <= 4
    with ResultsStore(db) as st:
        rows = st.rows(sweep="tiny", status="done")
    assert len(rows) == 76
    phases = [r["extra"]["phase"] for r in rows]
    assert phases.count("search") == 72 and phases.count("final") == 4
    finals = [r for r in rows if r["extra"]["phase"] == "final"]
    assert sorted(r["seed"] for r in finals) == [1007, 1007, 1008, 1008]
    # the final configuration is the search's best mean validation accuracy
    for row in res.summary:
        assert row["best"] is not None and row["final_n"] == 2
        assert row["test_mean"] is not None
    assert "val" in res.format()
    # rerun: nothing collected, reconstructed or trained; no new rows
    again = sw.run_sweep(exp, "paper", store_path=db, workers=0)
    for st_ in again.phases.values():
        assert (st_.collections, st_.reconstructions, st_.trained) == (0, 0, 0)
        assert st_.pending == 0
    with ResultsStore(db) as st:
        assert len(st.rows()) == 76
        assert [r["finished_at"] for r in st.rows()] == [r["finished_at"] for r in rows]
    assert again.summary == res.summary


def test_growing_the_grid_sets_aside_finals_of_the_old_winner(tmp_path: Path) -> None:
    """Rerunning with a larger grid reuses the finished search runs; when a new point wins,
    the old winner's final runs are marked ``superseded`` and reports leave them out."""
    from ldpgraph.simulation.results.identity import config_hash
    from ldpgraph.simulation.results.report import final_rows

    one = TINY.replace('protocols = ["hogs", "rr"]', 'protocols = ["rr"]').split("[grid.paper]")[0]
    db = str(tmp_path / "g.db")
    # Two points (a single point would not be searched at all).
    first = _parse(one.replace("lr = [0.01, 0.05]", "lr = [1e-9, 2e-9]"))
    sw.run_sweep(first, "small", store_path=db, workers=0)
    bigger = _parse(one.replace("lr = [0.01, 0.05]", "lr = [1e-9, 2e-9, 0.05]"))
    grown = sw.run_sweep(bigger, "small", store_path=db, workers=0)
    assert grown.phases["search"].trained == 2  # only the new point's runs
    assert [r["best"]["lr"] for r in grown.summary] == [0.05]
    with ResultsStore(db) as st:
        rows = st.rows(sweep="tiny", status="done")
    phase = [r["extra"]["phase"] for r in rows]
    assert phase.count("superseded") == 2 and phase.count("final") == 2
    kept = final_rows(rows)
    assert {r["config"]["lr"] for r in kept} == {0.05} and len(kept) == 2
    assert {r["config_hash"] for r in kept} == {config_hash(kept[0]["config"])}


@pytest.mark.slow
def test_cli_sweep_with_process_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, TINY)
    db = tmp_path / "p.db"
    args = ["sweep", str(path), "--grid", "small", "--store", str(db), "--workers", "2"]
    assert main([*args, "--quiet", "--only-final"]) == 0  # no search yet: nothing to finalise
    assert "search incomplete" in capsys.readouterr().out
    assert main([*args, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "test" in out and "lr=" in out
    with ResultsStore(db) as st:
        assert len(st.rows(status="done")) == 8 + 2 * 2


INTERRUPT = f"""
name = "kill"
datasets = ["{SYN}"]
protocols = ["hogs"]
models = ["gcn"]
epsilons = [4]
runs_per_config = 3
final_runs = 2

[fixed]
epochs = 150

[grid.paper]
lr = [0.01, 0.04]
dropout = [0.5, 0.1]
[grid.paper.hogs]
tau = [0.5, 0.9]
"""


def _status(db: Path) -> dict[str, int]:
    if not db.exists():
        return {}
    try:
        con = sqlite3.connect(db, timeout=5)
        rows = con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall()
        con.close()
    except sqlite3.OperationalError:
        return {}
    return dict(rows)


@pytest.mark.slow
def test_interrupted_sweep_resumes(tmp_path: Path) -> None:
    path = _write(tmp_path, INTERRUPT)
    db = tmp_path / "k.db"
    cmd = [sys.executable, "-m", "ldpgraph.simulation.cli", "sweep", str(path)]
    cmd += ["--store", str(db), "--workers", "1", "--quiet"]
    proc = subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            st = _status(db)
            if st.get("done", 0) >= 4 and st.get("running", 0) >= 1:
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.02)
        else:
            pytest.fail(f"sweep did not get going: {_status(db)}")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker process
        proc.wait()
    # SIGKILL reaches the worker asynchronously: wait until the owners of 'running' rows are gone
    from ldpgraph.simulation.results.store import _pid_alive

    for _ in range(500):
        with ResultsStore(db) as st:
            owners = [r["pid"] for r in st.rows(status="running")]
        if not any(_pid_alive(int(p)) for p in owners if p is not None):
            break
        time.sleep(0.02)
    with ResultsStore(db) as st:
        before = {r["run_key"]: r for r in st.rows()}
    done_before = {k: r for k, r in before.items() if r["status"] == "done"}
    running_before = {k for k, r in before.items() if r["status"] == "running"}
    assert done_before and running_before
    exp = load_experiment(path)
    res = sw.run_sweep(exp, "paper", store_path=str(db), workers=0)
    total = 2 * 2 * 2 * 3  # tau x lr x dropout x runs_per_config
    assert res.phases["search"].trained == total - len(done_before)
    with ResultsStore(db) as st:
        after = {r["run_key"]: r for r in st.rows()}
    assert len(after) == total + 2
    assert all(r["status"] == "done" for r in after.values())
    for k, r in done_before.items():  # finished runs untouched
        assert after[k]["finished_at"] == r["finished_at"] and after[k]["id"] == r["id"]
    for k in running_before:  # killed runs redone
        assert after[k]["attempts"] >= 2


class _FakeStore:
    """``store.get(cfg)`` for best_point: a finished row per config, scored by its lr."""

    def __init__(self, acc: dict[float, float], loss: dict[float, float]) -> None:
        self.acc, self.loss = acc, loss

    def get(self, cfg):
        lr = cfg["lr"]
        return {
            "status": "done",
            "val_acc": self.acc[lr],
            "metrics": {"training": {"val_loss": self.loss[lr]}},
        }


@pytest.mark.parametrize(("selection", "winner"), [("val_acc", 0.05), ("val_loss", 0.01)])
def test_best_point_follows_the_selection_rule(selection, winner):
    """HoGS picks the highest mean validation accuracy, Blink_GNN the lowest validation loss."""
    exp = _parse(TINY.replace("epochs = 5", f'epochs = 5\nselection = "{selection}"'))
    grid = exp.grid("small")
    cell = exp.cells()[0]
    store = _FakeStore(acc={0.01: 0.6, 0.05: 0.7}, loss={0.01: 0.9, 0.05: 1.2})
    best, score, note = sw.best_point(store, exp, grid, cell)
    assert note == ""
    assert best == {"lr": winner}
    assert score == pytest.approx(0.7 if selection == "val_acc" else 0.9)


def test_cell_filters_pick_cells_and_reject_unknown_values():
    exp = _parse(TINY.replace("epsilons = [4]", "epsilons = [4, 6]"))
    cells = sw.select_cells(exp.cells(), {"protocols": ["rr"], "epsilons": ["6.0"]})
    assert [c.label for c in cells] == [f"{SYN}/rr/gcn/ε=6"]
    assert len(sw.select_cells(exp.cells(), {"models": ["gcn"]})) == 4
    with pytest.raises(ValueError, match="--datasets cora: not in the experiment"):
        sw.select_cells(exp.cells(), {"datasets": ["cora"]})


def test_sweep_cli_filters_in_dry_run(tmp_path, capsys):
    path = _write(tmp_path, TINY)
    assert (
        main(
            [
                "sweep",
                str(path),
                "--grid",
                "small",
                "--dry-run",
                "--protocols",
                "rr",
                "--store",
                str(tmp_path / "s.db"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "1 cells" in out
    assert main(["sweep", str(path), "--grid", "small", "--dry-run", "--models", "gin"]) == 2
    assert "--models gin: not in the experiment" in capsys.readouterr().err


def test_sweep_runs_equal_single_runs_with_blinkgnn_split_and_val_loss(tmp_path: Path) -> None:
    """Each sweep row is what ``ldpgraph run`` gives for its configuration, also with
    Blink_GNN's fixed split, loss selection and normalised features (no path drops a key)."""
    from ldpgraph.simulation.config import RunConfig
    from ldpgraph.simulation.pipeline import run

    text = TINY.replace(
        "epochs = 5",
        'epochs = 5\nsplit_mode = "blinkgnn"\nselection = "val_loss"\nnormalize_features = true',
    )
    exp = _parse(text)
    db = str(tmp_path / "b.db")
    sw.run_sweep(exp, "small", store_path=db, workers=0, only={"protocols": ["rr"]})
    with ResultsStore(db) as st:
        rows = st.rows(status="done")
    assert rows
    for r in rows[:3]:
        single = run(RunConfig.from_mapping(r["config"]))
        assert r["test_acc"] == pytest.approx(single["accuracy"]["test"])
        assert r["val_acc"] == pytest.approx(single["accuracy"]["val"])


def test_node_spending_counts_collections_not_post_processing():
    """Tuning τ, l or training reuses a collection (free); tuning the split or the seed asks
    every node again, and a node's ε adds up over those collections."""
    from ldpgraph.simulation.config import RunConfig
    from ldpgraph.simulation.sweep.run import node_spending

    cfgs = [
        RunConfig(epsilon=4.0, feature_share=share, seed=seed, tau=tau, lr=lr).to_dict()
        for share in (0.1, 0.5)
        for seed in (0, 1)
        for tau in (0.3, 0.6)
        for lr in (0.01, 0.001)
    ]
    assert node_spending(cfgs) == (4, 16.0)
    assert node_spending(cfgs[:4]) == (1, 4.0)  # one split, one seed: τ and lr are free
    assert node_spending([RunConfig(epsilon=2.0).to_dict(), RunConfig(epsilon=3.0).to_dict()]) == (
        2,
        5.0,
    )


def test_per_dataset_keys_and_entry_epsilons_shape_the_cells():
    text = TINY.replace(f'datasets = ["{SYN}"]', f'datasets = ["{SYN}", "synthetic:n=90"]')
    text = text.replace(
        "[grid.small]",
        '[per_dataset."synthetic:n=90"]\nepochs = 3\n\n'
        '[variants.rr]\nprotocol = "rr"\nepsilons = [6]\n\n[grid.small]',
    )
    text = text.replace("epsilons = [4]", "epsilons = [4, 6]")
    exp = _parse(text)
    cells = exp.cells()
    # hogs at both ε on both data sets, rr at ε = 6 only.
    assert sorted((c.dataset, c.entry.label, c.epsilon) for c in cells) == sorted(
        [(d, "hogs", e) for d in (SYN, "synthetic:n=90") for e in (4.0, 6.0)]
        + [(d, "rr", 6.0) for d in (SYN, "synthetic:n=90")]
    )
    by_ds = {c.dataset: exp.base_config(c)["epochs"] for c in cells}
    assert by_ds == {SYN: 5, "synthetic:n=90": 3}
    with pytest.raises(ExperimentError, match="per_dataset.cora: is not listed in datasets"):
        _parse(TINY.replace("[grid.small]", "[per_dataset.cora]\nepochs = 3\n\n[grid.small]"))
    with pytest.raises(ExperimentError, match="variants.rr.epsilons"):
        _parse(text.replace("epsilons = [6]", "epsilons = [-1]"))
    # an entry's own data sets: rr on the second only; one not listed is an error
    only = _parse(text.replace("epsilons = [6]", 'epsilons = [6]\ndatasets = ["synthetic:n=90"]'))
    assert sorted((c.dataset, c.entry.label) for c in only.cells() if c.epsilon == 6.0) == sorted(
        [(SYN, "hogs"), ("synthetic:n=90", "hogs"), ("synthetic:n=90", "rr")]
    )
    with pytest.raises(ExperimentError, match="variants.rr.datasets: 'cora' is not listed"):
        _parse(text.replace("epsilons = [6]", 'epsilons = [6]\ndatasets = ["cora"]'))


def test_a_single_configuration_is_not_searched(tmp_path: Path) -> None:
    """A grid with one point has nothing to choose: no search runs, its final runs at once."""
    exp = _parse(TINY.replace("lr = [0.01, 0.05]\n\n", "lr = [0.01]\n\n", 1))
    grid, cell = exp.grid("small"), exp.cells()[0]
    assert sw.search_runs(exp, grid, cell) == [[]]
    best, score, note = sw.best_point(_FakeStore(acc={}, loss={}), exp, grid, cell)
    assert best == {"lr": 0.01} and score is None and "nothing to search" in note
    res = sw.run_sweep(exp, "small", store_path=str(tmp_path / "no.db"), dry_run=True)
    assert res.phases["search"].trainings == 0
    assert not res.phases["final"].upper_bound and res.phases["final"].trainings == 2 * 2


def test_an_experiments_runs_are_seeded_unless_the_file_says_otherwise():
    """An experiment file holds its seeds: its central releases are replayable (seeded), as
    the record then says; `seeded = false` in [fixed] draws their noise from OS entropy."""
    exp = _parse(TINY)
    cell = exp.cells()[0]
    assert exp.base_config(cell)["seeded"] is True
    off = _parse(TINY.replace("epochs = 5", "epochs = 5\nseeded = false"))
    assert off.base_config(off.cells()[0])["seeded"] is False


def test_an_interrupted_sweep_marks_its_running_runs_at_once_and_a_resume_redoes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ldpgraph.simulation import pipeline

    exp = _parse(TINY.replace('["hogs", "rr"]', '["hogs"]'))
    db = tmp_path / "s.db"
    real = pipeline.train_release
    calls = []

    def ctrl_c_on_the_second(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(pipeline, "train_release", ctrl_c_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        sw.run_sweep(exp, "small", store_path=str(db), workers=0, phases=("search",))
    with ResultsStore(db) as store:
        rows = store.rows(sweep=exp.name)
    assert sorted(r["status"] for r in rows) == ["done", "failed"]  # none left 'running'
    assert "interrupted" in next(r["error"] for r in rows if r["status"] == "failed")
    monkeypatch.setattr(pipeline, "train_release", real)
    sw.run_sweep(exp, "small", store_path=str(db), workers=0, phases=("search",))
    with ResultsStore(db) as store:
        rows = store.rows(sweep=exp.name)
    assert {r["status"] for r in rows} == {"done"} and len(rows) == 4


def test_the_summary_says_what_each_privacy_model_asks_of_the_nodes():
    """Only an LDP entry asks nodes for ε (summed over its collections); a non-private entry
    (`none`, `dpar-nodp`: the class is central, the variant is not) or a central strategy asks
    none: its nodes upload raw data."""
    from ldpgraph.simulation.config import RunConfig
    from ldpgraph.simulation.sweep.report import format_summary
    from ldpgraph.simulation.sweep.run import _privacy_model

    models = {
        p: _privacy_model(RunConfig(protocol=p, epsilon=8.0, trust_curator=True).to_dict())
        for p in ("hogs", "none", "dpar-nodp", "lapgraph")
    }
    assert models == {"hogs": "ldp", "none": "none", "dpar-nodp": "none", "lapgraph": "central"}
    base = {"best": {"lr": 0.01}, "search_val": None, "score": "val_acc", "note": ""}
    rows = [
        {**base, "cell": p, "privacy_model": m, "collections": 3, "node_epsilon_spent": 24.0}
        for p, m in models.items()
    ]
    lines = format_summary(rows).splitlines()
    assert "ε asked of each node: 24 summed over 3 collections" in lines[0]
    for line in lines[1:4]:
        assert "ε asked of each node" not in line and "24" not in line
        assert "no ε asked of nodes" in line and "3 raw uploads" in line
    assert "non-private" in lines[1] and "non-private" in lines[2]
    assert "central DP" in lines[3]
