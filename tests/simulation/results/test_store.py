"""The results store: claim/finish/fail semantics (finished cells are never
recomputed, interrupted ones are redone), concurrent writers, filters, CSV, schema versioning
and `ldpgraph results`."""

from __future__ import annotations

import csv
import json
import multiprocessing as mp
import os
import socket
import sqlite3
import subprocess
import sys

import pytest

from ldpgraph.simulation import cli
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.results import store, tables
from ldpgraph.simulation.results.identity import canonical_config, config_hash, run_key
from ldpgraph.simulation.results.store import (
    ResultsStore,
    StoreError,
    record_run,
)

from .test_identity import DATA, cfg


def fake_record(config: dict, test: float = 0.5, val: float = 0.4) -> dict:
    """Shaped like pipeline.run's record."""
    return {
        "config": config,
        "accuracy": {"val": val, "test": test, "train": 0.9},
        "training": {"best_epoch": 2, "epochs_run": 3, "device": "cpu"},
        "privacy": {
            "protocol": config["protocol"],
            "unit": "one adjacency bit",
            "epsilon": config["epsilon"],
            "delta": 0.0,
            "accountant": "closed form",
            "parts": [{"part": "adjacency", "epsilon": config["epsilon"] / 2}],
            "paper_epsilon": None,
            "notes": ["a note"],
        },
        "graph": {"original": {"nodes": 50, "edges": 100}, "synthetic": {"nodes": 50, "edges": 90}},
        "release": {"kept_pairs": 90},
        "fingerprint": f"fp-{config['seed']}",
        "timings": {"load": 0.1, "collect": 0.2, "train": 0.3, "total": 0.6},
        "versions": {"python": "3.11", "ldpgraph": "0.1.0"},
        "command": "ldpgraph run",
    }


def record_from_row(row: dict) -> dict:
    """The result record rebuilt from its stored row: equal to the record that was stored when
    the store keeps all of it (its columns, the rest in ``extra``)."""
    record = {"config": row["config"], **(row.get("metrics") or {})}
    for column in ("privacy", "timings", "graph", "release", "versions", "fingerprint", "command"):
        record[column] = row.get(column)
    record.update(row.get("extra") or {})
    return record


@pytest.fixture
def db(tmp_path):
    with ResultsStore(tmp_path / "r.db") as s:
        yield s


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- claim / finish / fail ------------------------------------------------------------------


def test_claim_finish_and_never_recompute(db):
    c = cfg(seed=1)
    assert not db.is_done(c)
    assert db.claim(c, sweep="s1")
    assert not db.claim(c)  # this live process runs it
    row = db.get(c)
    assert row["status"] == "running" and row["sweep"] == "s1" and row["attempts"] == 1
    rec = fake_record(c, test=0.61)
    rid = db.finish(c, rec)
    assert rid == row["id"]
    assert db.is_done(c)
    assert not db.claim(c, sweep="s1")
    (row,) = db.rows()
    assert row["status"] == "done" and row["test_acc"] == pytest.approx(0.61)
    assert row["sweep"] == "s1" and row["host"] == socket.gethostname()
    assert row["started_at"] <= row["finished_at"]
    assert record_from_row(row) == rec  # nothing of the record is lost


def test_extra_record_keys_are_kept(db):
    c = cfg()
    rec = {**fake_record(c), "attack": {"auc": 0.7}, "phase": "final", "release_kind": "graph"}
    db.finish(c, rec)
    assert record_from_row(db.get(c)) == rec


def test_every_metric_section_goes_to_the_metrics_column(db):
    """accuracy and training as before, and every other metric's section beside them (the
    graph statistics, link prediction, attacks, skipped metrics); plain values stay extra."""
    c = cfg()
    graph_stats = {"triangles": {"original": 10, "release": 4, "re": 0.6}, "degree_ks": 0.2}
    rec = {
        **fake_record(c),
        "graph_stats": graph_stats,
        "lp": {"auc": 0.8},
        "skipped_metrics": {"attack": "does not score a model release"},
        "entry": "hogs",
    }
    db.finish(c, rec)
    raw = db._con.execute("SELECT metrics, extra FROM runs").fetchone()
    assert list(json.loads(raw[0])) == [
        "accuracy",
        "training",
        "graph_stats",
        "lp",
        "skipped_metrics",
    ]
    assert json.loads(raw[1]) == {"entry": "hogs"}
    row = db.get(c)
    assert row["metrics"]["graph_stats"] == graph_stats and row["metrics"]["lp"] == {"auc": 0.8}
    assert record_from_row(row) == rec


def test_a_store_that_kept_sections_in_extra_reads_them_as_metrics(db):
    """Before every section went to ``metrics``, the store kept all but accuracy and training
    in ``extra``: such a row reads with them under ``metrics``."""
    c = cfg()
    db.finish(c, fake_record(c))
    old_extra = {"attack": {"max": 0.6}, "skipped_metrics": {"lp": "no"}, "phase": "final"}
    db._con.execute("UPDATE runs SET extra = ?", (json.dumps(old_extra),))
    row = db.get(c)
    assert row["metrics"]["attack"] == {"max": 0.6} and row["metrics"]["skipped_metrics"]
    assert row["metrics"]["accuracy"]["test"] == 0.5
    assert row["extra"] == {"phase": "final"}
    assert tables.metric_columns(row)["attack.max"] == 0.6


def test_interrupted_run_of_dead_pid_is_redone(db):
    c = cfg(seed=2)
    assert db.claim(c)
    db._con.execute("UPDATE runs SET pid = ?", (_dead_pid(),))
    assert db.claim(c)
    row = db.get(c)
    assert row["status"] == "running" and row["attempts"] == 2
    assert row["pid"] == os.getpid()


def test_running_row_of_another_host_waits_for_stale_timeout(tmp_path):
    c = cfg(seed=4)
    with ResultsStore(tmp_path / "r.db") as s:
        assert s.claim(c)
        s._con.execute("UPDATE runs SET host = 'elsewhere', pid = 1")
        assert not s.claim(c)  # alive as far as we can tell
    with ResultsStore(tmp_path / "r.db", stale_after=0) as s:
        s._con.execute("UPDATE runs SET heartbeat_at = '2000-01-01T00:00:00+00:00'")
        assert s.claim(c)
        assert s.get(c)["host"] == socket.gethostname()


def test_running_row_from_before_a_reboot_is_redone(db):
    c = cfg(seed=5)
    assert db.claim(c)
    db._con.execute("UPDATE runs SET owner = 'another-boot-id/pid:[1]'")
    assert db.claim(c)


def test_failed_run_is_retried_and_done_is_not_downgraded(db):
    c = cfg(seed=6)
    assert db.claim(c)
    db.fail(c, "out of memory")
    row = db.get(c)
    assert row["status"] == "failed" and row["error"] == "out of memory"
    assert not db.claim(c, retry_failed=False)
    assert db.claim(c)
    assert db.get(c)["error"] is None and db.get(c)["attempts"] == 2
    db.finish(c, fake_record(c))
    db.fail(c, "late failure of a duplicate")
    assert db.get(c)["status"] == "done" and db.get(c)["error"] is None
    db.fail(cfg(seed=7), "failed before any claim")
    assert db.rows(status="failed")[0]["seed"] == 7


def _worker(path: str, configs: list[dict], own: list[dict]) -> None:
    with ResultsStore(path) as s:
        for c in configs:
            if s.claim(c, sweep="conc"):
                s.finish(c, fake_record(c))
        for c in own:
            s.finish(c, fake_record(c), sweep="own")


def test_two_processes_writing_concurrently_lose_nothing(tmp_path):
    path = str(tmp_path / "r.db")  # created by the two processes at once
    shared = [cfg(seed=s) for s in range(20)]
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    own = [[cfg(seed=seed, epochs=e) for e in (4, 5, 6)] for seed in (100, 200)]
    procs = [
        ctx.Process(target=_worker, args=(path, shared, own[0])),
        ctx.Process(target=_worker, args=(path, shared[::-1], own[1])),
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    with ResultsStore(path) as s:
        conc = s.rows(sweep="conc")
        assert len(conc) == 20 and {r["seed"] for r in conc} == set(range(20))
        assert all(r["status"] == "done" and r["attempts"] == 1 for r in conc)  # claimed once
        assert {r["pid"] for r in conc} <= {p.pid for p in procs}
        mine = s.rows(sweep="own")
        assert sorted((r["seed"], r["config"]["epochs"]) for r in mine) == sorted(
            (c["seed"], c["epochs"]) for c in own[0] + own[1]
        )
        assert len(s.rows()) == 26


# --- reading ------------------------------------------------------------------------------


@pytest.fixture
def filled(db):
    specs = [
        ("hogs", DATA, "gcn", 1.0, 0, "a", 0.50),
        ("hogs", DATA, "gcn", 1.0, 1, "a", 0.60),
        ("hogs", DATA, "gcn", 4.0, 0, "a", 0.70),
        ("hogs", DATA, "mlp", 4.0, 0, "b", 0.30),
        ("features-only", DATA, "gcn", 4.0, 0, "b", 0.40),
    ]
    for protocol, dataset, model, eps, seed, sweep, test in specs:
        c = cfg(protocol=protocol, dataset=dataset, model=model, epsilon=eps, seed=seed)
        db.claim(c, sweep=sweep)
        db.finish(c, fake_record(c, test=test))
    c = cfg(epsilon=2.0)
    db.claim(c, sweep="b")
    db.fail(c, "boom")
    return db


def test_filters(filled):
    db = filled
    assert len(db.rows()) == 6
    assert len(db.rows(protocol="hogs")) == 5
    assert len(db.rows(model="mlp")) == 1
    assert len(db.rows(epsilon=4)) == 3
    assert len(db.rows(epsilon=1.0, model="gcn")) == 2
    assert len(db.rows(sweep="b")) == 3
    assert len(db.rows(status="failed")) == 1
    assert db.rows(status="failed")[0]["error"] == "boom"
    assert db.rows(dataset="cora") == []
    row = db.rows(model="mlp")[0]
    assert row["config"]["model"] == "mlp" and row["privacy"]["epsilon"] == 4.0
    assert row["metrics"]["accuracy"]["test"] == pytest.approx(0.3)


def test_group_rows(filled):
    groups = tables.group_rows(filled.rows())
    assert len(groups) == 4  # the failed run does not count
    g = next(g for g in groups if g["n"] == 2)
    assert g["epsilon"] == 1.0 and g["seeds"] == [0, 1]
    assert g["test_mean"] == pytest.approx(0.55)
    assert g["test_std"] == pytest.approx(0.0707107, rel=1e-5)
    assert "seed" not in g["config"]


def test_csv_export_round_trip(filled, tmp_path):
    out = tmp_path / "runs.csv"
    assert tables.write_csv(out, [tables.flatten_row(r) for r in filled.rows()]) == 6
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    for col in (
        "id",
        "run_key",
        "config_hash",
        "status",
        "config.protocol",
        "config.epsilon",
        "config.seed",
        "accuracy.test",
        "accuracy.val",
        "privacy.epsilon",
        "timings.total",
        "versions.python",
        "fingerprint",
        "error",
    ):
        assert col in rows[0], col
    done = [r for r in rows if r["status"] == "done"]
    assert [float(r["accuracy.test"]) for r in done] == [0.5, 0.6, 0.7, 0.3, 0.4]
    assert float(done[2]["privacy.epsilon"]) == 4.0 and float(done[2]["timings.total"]) == 0.6
    assert json.loads(done[0]["privacy.parts"])[0]["part"] == "adjacency"
    assert rows[-1]["status"] == "failed" and rows[-1]["error"] == "boom"


# --- the file ------------------------------------------------------------------------------


def test_wal_and_schema_version(tmp_path):
    path = tmp_path / "r.db"
    with ResultsStore(path) as s:
        assert s._con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.schema_version == store.SCHEMA_VERSION
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="schema version 99, newer"):
        ResultsStore(path)


def _as_version_1(path) -> None:
    """Turn a store back into what ldpgraph wrote before identity version 2: every row keyed
    by all protocols' parameters, schema version 1."""
    con = sqlite3.connect(path)
    for row_id, config in con.execute("SELECT id, config FROM runs").fetchall():
        c = json.loads(config)
        con.execute(
            "UPDATE runs SET run_key = ?, config_hash = ? WHERE id = ?",
            (run_key(c, version=1), config_hash(c, version=1), row_id),
        )
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.commit()
    con.close()


def test_a_version_1_store_is_rekeyed_once_and_keeps_every_row(tmp_path):
    """Two stored HoGS runs that differed only in Blink's degree share are one run under
    identity 2: the first finished one stays, the other moves to superseded_runs; a sweep
    then finds every stored run done (it resumes, recomputing nothing)."""
    path = tmp_path / "r.db"
    hogs = cfg(protocol="hogs", seed=1)
    twin = {**hogs, "degree_share": 0.3}  # a key HoGS never reads
    blink = cfg(protocol="blink-hard", seed=1)
    failed = cfg(protocol="hogs", seed=2)
    with ResultsStore(path) as s:
        for c in (hogs, blink):
            assert s.claim(c)
            s.finish(c, fake_record(c))
        assert s.claim(failed)
        s.fail(failed, "boom")
        # written before identity 2, the twin was a run of its own
    _as_version_1(path)
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO runs (run_key, config_hash, status, config, test_acc) "
        "VALUES (?, ?, 'done', ?, 0.7)",
        (run_key(twin, version=1), config_hash(twin, version=1), json.dumps(twin)),
    )
    con.commit()
    con.close()
    with ResultsStore(path) as s:
        assert s.schema_version == store.SCHEMA_VERSION == 2
        assert s.is_done(hogs) and s.is_done(twin) and s.is_done(blink)
        assert s.get(hogs)["test_acc"] == 0.5  # the first finished run stayed
        assert not s.is_done(failed) and s.claim(failed)  # a failed run is still redone
        assert len(s.rows()) == 3
        moved = s._con.execute("SELECT config, test_acc FROM superseded_runs").fetchall()
        assert [(json.loads(c)["degree_share"], acc) for c, acc in moved] == [(0.3, 0.7)]
        note = s._con.execute("SELECT value FROM meta WHERE key = 'rekeyed_from_1'").fetchone()
        assert "1 duplicate run(s) moved" in note[0]
    with ResultsStore(path) as s:  # once only
        assert len(s._con.execute("SELECT * FROM superseded_runs").fetchall()) == 1


def test_not_a_store(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_text("not sqlite at all, definitely not" * 10)
    with pytest.raises(StoreError, match="not a usable ldpgraph results store"):
        ResultsStore(junk)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not an ldpgraph results store"):
        ResultsStore(other)
    with pytest.raises(FileNotFoundError, match="no results store"):
        ResultsStore(tmp_path / "missing.db", create=False)


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.delenv(store.STORE_ENV, raising=False)
    assert store.default_store_path() == store.DEFAULT_STORE
    monkeypatch.setenv(store.STORE_ENV, str(tmp_path / "env.db"))
    assert store.default_store_path() == tmp_path / "env.db"
    assert store.default_store_path(tmp_path / "x.db") == tmp_path / "x.db"


def test_real_run_is_stored_and_read_back(tmp_path):
    from ldpgraph.simulation.pipeline import run

    config = RunConfig(dataset="synthetic:n=200,classes=3,d=30", epochs=3, backend="local")
    result = run(config)
    path = tmp_path / "real.db"
    rid = record_run(path, config, result, sweep="real")
    with ResultsStore(path) as s:
        row = s.get(config)
        assert row["id"] == rid and row["status"] == "done" and s.is_done(config.to_dict())
        assert row["test_acc"] == result["accuracy"]["test"]
        assert row["privacy"]["epsilon"] == result["privacy"]["epsilon"]
        assert row["config"] == canonical_config(config)
        commit, _ = store.git_state()
        assert row["git_commit"] == commit
        assert record_from_row(row) == json.loads(json.dumps(result))
        assert not s.claim(config)


# --- ldpgraph results -------------------------------------------------------------------------


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_table_and_filters(filled, capsys):
    code, out, _ = run_cli(capsys, "results", "--store", str(filled.path))
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].split() == [
        "id",
        "sweep",
        "protocol",
        "dataset",
        "model",
        "ε_asked",
        "ε_proven",
        "seed",
        "val%",
        "test%",
        "status",
        "finished",
    ]
    assert len(lines) == 7 and "failed" in lines[-1] and "70.0" in lines[3]
    code, out, _ = run_cli(
        capsys, "results", "--store", str(filled.path), "--model", "mlp", "--epsilon", "4"
    )
    assert len(out.strip().splitlines()) == 2 and "mlp" in out
    code, out, err = run_cli(capsys, "results", "--store", str(filled.path), "--dataset", "cora")
    assert code == 0 and out == "" and "no runs" in err


def test_cli_json_and_env_default(filled, capsys, monkeypatch):
    monkeypatch.setenv(store.STORE_ENV, str(filled.path))
    code, out, _ = run_cli(capsys, "results", "--json", "--status", "done", "--sweep", "a")
    assert code == 0
    rows = json.loads(out)
    assert [r["test_acc"] for r in rows] == [0.5, 0.6, 0.7]
    assert rows[0]["config"]["protocol"] == "hogs" and rows[0]["privacy"]["unit"]


def test_cli_csv(filled, capsys, tmp_path):
    out_csv = tmp_path / "out" / "runs.csv"
    code, out, err = run_cli(
        capsys, "results", "--store", str(filled.path), "--protocol", "hogs", "--csv", str(out_csv)
    )
    assert code == 0 and "wrote 5 runs" in err
    with out_csv.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 5 and {r["config.protocol"] for r in rows} == {"hogs"}


def test_cli_group(filled, capsys, tmp_path):
    code, out, _ = run_cli(capsys, "results", "--store", str(filled.path), "--group")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].split()[:7] == [
        "config", "protocol", "dataset", "model", "ε_asked", "ε_proven", "n"
    ]  # fmt: skip
    assert len(lines) == 5
    assert any("55.0 ± 7.1" in line for line in lines)
    code, out, _ = run_cli(capsys, "results", "--store", str(filled.path), "--group", "--json")
    groups = json.loads(out)
    assert sorted(g["n"] for g in groups) == [1, 1, 1, 2]
    gcsv = tmp_path / "groups.csv"
    run_cli(capsys, "results", "--store", str(filled.path), "--group", "--csv", str(gcsv))
    with gcsv.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {"config_hash", "n", "test_mean", "test_std", "config.epsilon"} <= set(rows[0])


def test_cli_missing_store_is_one_line(capsys, tmp_path):
    missing = tmp_path / "nope.db"
    code, out, err = run_cli(capsys, "results", "--store", str(missing))
    assert code == 2
    assert f"no results store at {missing}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not missing.exists()


def test_sweep_will_not_resume_runs_made_under_a_former_default(tmp_path):
    """A sweep file that leaves a changed default (identity.CHANGED_DEFAULTS) to the default, over
    a store whose runs of that entry were made with the former value, stops with what to
    state: resuming would start over with the new value beside the old runs."""
    import tomllib

    from ldpgraph.simulation.config import ConfigError
    from ldpgraph.simulation.sweep.experiment import parse_experiment
    from ldpgraph.simulation.sweep.run import run_sweep

    text = f"""
name = "old"
datasets = ["{DATA}"]
protocols = ["hogs"]
epsilons = [4]
runs_per_config = 1
final_runs = 1
backend = "local"
[fixed]
epochs = 2
[grid.g]
lr = [0.01]
"""
    db = str(tmp_path / "old.db")
    old = cfg(protocol="hogs", epsilon=4.0, epochs=2, feature_share=0.5, center_features=False)
    with ResultsStore(db) as s:
        s.finish(old, {**fake_record(old), "entry": "hogs", "phase": "search"}, sweep="old")
    exp = parse_experiment(tomllib.loads(text), str(tmp_path / "old.toml"))
    with pytest.raises(ConfigError, match=r"feature_share = 0\.5.* in \[fixed\]"):
        run_sweep(exp, "g", store_path=db, workers=0)
    said: list[str] = []
    run_sweep(exp, "g", store_path=db, workers=0, dry_run=True, say=said.append)
    assert any("center_features = false" in m for m in said)
    stated = text.replace("epochs = 2", "epochs = 2\nfeature_share = 0.5\ncenter_features = false")
    exp = parse_experiment(tomllib.loads(stated), str(tmp_path / "old.toml"))
    said.clear()
    result = run_sweep(exp, "g", store_path=db, workers=0, dry_run=True, say=said.append)
    assert not said and result.phases["search"].pending == 0  # the stored run is found


# --- metric columns ---------------------------------------------------------------------------


@pytest.fixture
def measured(db):
    """Two seeds of a HoGS configuration with graph statistics and a link-prediction AUC, and
    one graph-only run (no accuracy)."""
    for seed, (tri, auc) in enumerate(((0.5, 0.8), (0.7, 0.9))):
        c = cfg(seed=seed)
        rec = {
            **fake_record(c),
            "graph_stats": {
                "triangles": {"original": 10, "release": 10 * (1 - tri), "re": tri},
                "cpl": {"original": 4.0, "release": None, "re": None},
                "degree_ks": 0.1 * (seed + 1),
                "paths": {"original": {"method": "exact", "sources": 50}},
                "weights": "unweighted",
            },
            "lp": {"auc": auc},
        }
        db.finish(c, rec)
    c = cfg(protocol="rr", seed=0)
    rec = {k: v for k, v in fake_record(c).items() if k not in ("accuracy", "training")}
    db.finish(c, {**rec, "graph_stats": {"triangles": {"original": 10, "release": 0, "re": 1.0}}})
    return db


def test_metric_columns_are_the_numeric_values_of_the_measured_sections(measured):
    row = measured.rows()[0]
    cols = tables.metric_columns(row)
    assert cols["graph_stats.triangles.re"] == 0.5 and cols["lp.auc"] == 0.8
    assert cols["accuracy.test"] == 0.5 and cols["graph_stats.paths.original.sources"] == 50
    assert "graph_stats.cpl.re" not in cols and "graph_stats.weights" not in cols
    assert not any(c.startswith("training.") for c in cols)
    flat = tables.flatten_row(row)  # the CSV has them all, text too
    assert flat["graph_stats.weights"] == "unweighted" and flat["lp.auc"] == 0.8
    assert tables.resolve_columns(["lp.auc", "graph_stats.*.re"], measured.rows()) == [
        "lp.auc",
        "graph_stats.triangles.re",
        "graph_stats.cpl.re",
    ]
    with pytest.raises(tables.ColumnError, match=r"did you mean 'lp.auc'.*graph_stats, lp"):
        tables.resolve_columns(["lp.acu"], measured.rows())


def test_group_averages_every_metric_column(measured):
    groups = tables.group_rows(measured.rows(), ["timings.total"])
    g = next(g for g in groups if g["n"] == 2)
    assert g["metrics"]["graph_stats.triangles.re"]["mean"] == pytest.approx(0.6)
    assert g["metrics"]["graph_stats.triangles.re"]["std"] == pytest.approx(0.141421, rel=1e-5)
    assert g["metrics"]["lp.auc"]["n"] == 2 and g["metrics"]["timings.total"]["mean"] == 0.6
    only_graph = next(g for g in groups if g["protocol"] == "rr")
    assert only_graph["test_mean"] is None and only_graph["metrics"]["graph_stats.triangles.re"]
    text = tables.format_groups(groups, ["graph_stats.triangles.re", "lp.auc"])
    assert "0.6 ± 0.14" in text and "0.85 ± 0.071" in text


def test_cli_columns_and_list_columns(measured, capsys):
    path = str(measured.path)
    code, out, _ = run_cli(capsys, "results", "--store", path, "--list-columns")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "accuracy: val (2), test (2), train (2)"
    assert lines[1].startswith("graph_stats: triangles.original (3)") and lines[2] == "lp: auc (2)"
    code, out, _ = run_cli(
        capsys, "results", "--store", path, "--columns", "graph_stats.triangles.re,lp.auc"
    )
    head, *body = out.strip().splitlines()
    assert head.split()[8:12] == ["val%", "test%", "graph_stats.triangles.re", "lp.auc"]
    assert body[0].split()[10:12] == ["0.5", "0.8"] and body[2].split()[10:12] == ["1", "-"]
    code, out, _ = run_cli(capsys, "results", "--store", path, "--group", "--columns", "lp.auc")
    assert "0.85 ± 0.071" in out
    code, _, err = run_cli(capsys, "results", "--store", path, "--columns", "graph.triangles")
    assert code == 2 and "no run has a column 'graph.triangles'" in err
    assert len(err.strip().splitlines()) == 1


def test_another_programs_sqlite_file_is_refused_untouched(tmp_path):
    """A foreign SQLite database given as a store is refused before anything is written to it:
    its journal mode (which the store's WAL switch would rewrite) and its bytes stay as they
    were."""
    import sqlite3

    path = tmp_path / "theirs.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (t TEXT)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not an ldpgraph results store"):
        ResultsStore(path)
    assert path.read_bytes() == before
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    con.close()
