"""``--backend flower`` through ``flwr run`` (Flower's supported runtime): the generated app,
the installed flwr exposing what we use (a canary for a new flwr), the local backend's
fingerprint, and no SuperLink, Ray or temp dir left behind; the hand-run
``deploy/flwr-local-run.sh`` too."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path

import pytest

from ldpgraph.simulation.backends import flwr_run
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.pipeline import run

from ..support.spawned import Spawned

ROOT = Path(__file__).resolve().parents[2]
DATASET = "synthetic:n=90,classes=3,d=20,seed=5"


def test_generated_app_is_a_valid_flower_app(tmp_path):
    """The app directory needs no repository: its pyproject names the installed apps and the
    run-config table of the installed package's declarations, and Flower accepts it."""
    import tomllib

    from flwr.common.config import validate_config

    app = flwr_run.write_app(tmp_path / "app")
    assert [p.name for p in app.iterdir()] == ["pyproject.toml"]
    pyproject = tomllib.loads((app / "pyproject.toml").read_text())
    valid, errors, _ = validate_config(pyproject, check_module=True, project_dir=app)
    assert valid, errors
    table = pyproject["tool"]["flwr"]["app"]["config"]
    assert table == {**RunConfig().to_flwr(), "result-path": ""}
    home = flwr_run.write_flwr_home(tmp_path / "home")
    conf = tomllib.loads((home / "config.toml").read_text())
    assert conf["superlink"]["local"]["address"] == ":local:"


def test_installed_flwr_exposes_what_we_use():
    """Canary for a new flwr release: the CLI options, the local SuperLink's magic address and
    port variables, and the app API that flwr_run and the apps rely on."""
    import inspect

    import flwr
    from flwr.cli import constant, local_superlink

    where = f"flwr {flwr.__version__}"
    assert constant.LOCAL_SUPERLINK_ADDRESS_MAGIC_VALUE == ":local:", (
        f"{where}: the local SuperLink's address is no longer ':local:' (write_flwr_home)"
    )
    source = inspect.getsource(constant) + inspect.getsource(local_superlink)
    for name in ("FLWR_LOCAL_SUPERLINK_HTTP_API_PORT", "FLWR_LOCAL_CONTROL_API_PORT"):
        assert name in source, f"{where} no longer reads {name}: flwr_run.child_env pins it"
    assert "--log-file" in inspect.getsource(local_superlink), (
        f"{where}: the local SuperLink's command line no longer names FLWR_HOME "
        "(flwr_run finds it to stop it by that path)"
    )
    out = subprocess.run(
        [str(Path(sys.executable).parent / "flwr"), "run", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=True,
    ).stdout
    for option in ("--stream", "--federation-config", "--run-config"):
        assert option in out, f"{where}: `flwr run` has no {option} (flwr_run.flwr_command)"
    from flwr.app import Context  # noqa: F401
    from flwr.serverapp import Grid, ServerApp  # noqa: F401


def test_the_last_error_line_is_the_message():
    tail = deque(["Starting", "Traceback (most recent call last):", "  File x", "ValueError: bad"])
    assert flwr_run._last_error(tail) == "ValueError: bad"
    boxed = deque(["╭─ Error ─╮", "│ 'float' object cannot be interpreted │", "╰───╯"])
    assert flwr_run._last_error(boxed) == "'float' object cannot be interpreted"


@pytest.mark.parametrize(
    ("dataset", "split", "needle"),
    [
        ("synthetic:n=3,classes=2,d=4,homophily=0.5,avg_degree=0.5", (0.5, 0.25), "no val"),
        ("synthetic:n=6,classes=2,d=4,avg_degree=1", (0.5, 0.45), "no test nodes (3/3/0)"),
    ],
)
def test_an_empty_split_is_refused_before_flwr_starts(monkeypatch, dataset, split, needle):
    """The graph is loaded to count the SuperNodes anyway: a split with an empty part is
    refused then, not by the ServerApp after Ray and the SuperLink are up."""

    def started(*_a, **_k):
        raise AssertionError("flwr run was started")

    monkeypatch.setattr(flwr_run, "flwr_command", started)
    cfg = RunConfig(dataset=dataset, train_split=split[0], val_split=split[1], backend="flower")
    with pytest.raises(ValueError, match=re.escape(needle)):
        flwr_run.run_with_flwr(cfg)


@pytest.mark.slow
@pytest.mark.engine
def test_api_flower_backend_runs_flwr_run_with_the_local_fingerprint(monkeypatch):
    """``ldpgraph.run(backend="flower")`` goes through ``flwr run``, never ``run_simulation``,
    gives the local backend's fingerprint and leaves no process or temp dir behind."""
    import flwr.simulation

    import ldpgraph
    from ldpgraph.simulation.backends import engine
    from ldpgraph.simulation.processes import pids_under

    def forbidden(*args, **kwargs):
        raise AssertionError("run_simulation was called")

    monkeypatch.setattr(flwr.simulation, "run_simulation", forbidden)
    monkeypatch.setattr(engine, "run_in_simulation_engine", forbidden)
    made: list[str] = []
    real = tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(flwr_run.tempfile, "mkdtemp", mkdtemp)
    settings = {"dataset": DATASET, "epochs": 10, "seed": 2, "nodes_per_client": 30}
    result = ldpgraph.run(backend="flower", **settings)
    local = ldpgraph.run(backend="local", **settings)
    assert result.record["config"]["backend"] == "flower"
    assert result.record["release"]["collection"]["supernodes"] == 3
    assert result.record["release"]["collection"]["rounds"][0]["replied"] == 90
    assert result.fingerprint == local.fingerprint
    assert result.accuracy == local.accuracy
    assert len(made) == 1 and not os.path.exists(made[0]) and pids_under(made[0]) == []


def flower_processes(flwr_home: str) -> list[int]:
    """Processes started with this FLWR_HOME (psutil: any OS it supports)."""
    import psutil

    pids = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("FLWR_HOME") == flwr_home:
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return pids


FAKE_FLWR = """#!/usr/bin/env bash
echo "data=${LDPGRAPH_DATA:-unset}"
for a; do case $a in *result-path=*)
  echo '{}' >"$(sed -E "s/.*result-path='([^']*)'.*/\\1/" <<<"$a")";; esac; done
"""


@pytest.mark.parametrize("given", [None, "env"])
def test_flwr_local_run_reads_the_data_root_make_recorded(tmp_path, given):
    """The script passes the data root `make run` recorded in the venv to the app (as
    `ldpgraph` reads it), unless $LDPGRAPH_DATA is set; `flwr` here is a stand-in that prints
    what it got."""
    from ldpgraph.simulation.datasets.locations import DATA_ROOT_FILE

    venv, recorded, own = tmp_path / "venv", tmp_path / "mirror", tmp_path / "own"
    (venv / "bin").mkdir(parents=True)
    recorded.mkdir()
    own.mkdir()
    flwr = venv / "bin" / "flwr"
    flwr.write_text(FAKE_FLWR)
    flwr.chmod(0o755)
    (venv / DATA_ROOT_FILE).write_text(f"{recorded}\n")
    env = {k: v for k, v in os.environ.items() if k != "LDPGRAPH_DATA"}
    env |= {"VENV": str(venv), "FLWR_HOME": str(tmp_path / "flwr")}
    if given:
        env["LDPGRAPH_DATA"] = str(own)
    cfg = f"result-path='{tmp_path / 'r.json'}'"
    proc = subprocess.run(
        [str(ROOT / "deploy" / "flwr-local-run.sh"), "2", cfg],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"data={own if given else recorded}" in proc.stdout


@pytest.mark.slow
@pytest.mark.engine
def test_flwr_run_dot(tmp_path):
    home = str(tmp_path / "flwr")
    result = tmp_path / "result.json"
    env = {
        **os.environ,
        "FLWR_HOME": home,
        "VENV": str(Path(sys.executable).parents[1]),
        "FLWR_LOCAL_SUPERLINK_HTTP_API_PORT": str(flwr_run.free_port()),
        "FLWR_LOCAL_CONTROL_API_PORT": str(flwr_run.free_port()),
    }
    cfg = f"dataset='{DATASET}' epochs=10 seed=2 result-path='{result}'"
    proc = subprocess.run(
        [str(ROOT / "deploy" / "flwr-local-run.sh"), "6", cfg],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    record = json.loads(result.read_text())
    assert record["config"]["backend"] == "flower"
    assert record["release"]["collection"]["supernodes"] == 6
    assert record["release"]["collection"]["rounds"][0]["replied"] == 90
    local = run(RunConfig(dataset=DATASET, epochs=10, seed=2, backend="local"))
    assert record["fingerprint"] == local["fingerprint"]
    assert flower_processes(home) == []


@pytest.mark.slow
@pytest.mark.engine
def test_ctrl_c_stops_the_superlink_and_everything_it_started(tmp_path):
    """Ctrl-C during ``run_with_flwr``: the detached SuperLink, SuperExec, the simulation and
    Ray are stopped by pid, the private dir and the nodes' rows are gone."""
    import signal

    from ldpgraph.simulation.processes import pids_under

    rundir = tmp_path / "r"
    script = (
        "import sys\n"
        "from ldpgraph.simulation.backends.flwr_run import run_with_flwr\n"
        "from ldpgraph.simulation.config import RunConfig\n"
        "cfg = RunConfig(dataset='synthetic:n=1500,classes=3,d=20', nodes_per_client=5,\n"
        f"                backend='flower', ray_actors=2, run_dir={str(rundir)!r})\n"
        "try:\n"
        "    run_with_flwr(cfg)\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    marker = rundir / "ray-temp-dir"

    def ray_is_up() -> bool:
        # Wait for the simulation's Ray: then the SuperLink has started everything.
        root = marker.read_text() if marker.is_file() else ""
        return bool(root) and any("raylet" in _cmd(p) for p in pids_under(root))

    failed = ""
    for attempt in range(2):
        with Spawned([sys.executable, "-c", script], tmp_path / f"out{attempt}.log") as child:
            try:
                child.wait_for(ray_is_up, "the simulation's Ray")
            except pytest.fail.Exception:
                # The simulation can end in an error before the signal is sent (seen in CI:
                # Flower's "An error was encountered"): not this test's subject, so once more,
                # with that run's output (flwr run's own lines in r/flwr-run.log) kept below.
                log = rundir / "flwr-run.log"
                failed += f"--- attempt {attempt + 1} ---\n" + child.tail()
                failed += log.read_text()[-3000:] if log.is_file() else ""
                if attempt or "flwr run produced no result" not in child.tail():
                    raise AssertionError(failed) from None
                shutil.rmtree(rundir, ignore_errors=True)
                continue
            root = marker.read_text()
            child.proc.send_signal(signal.SIGINT)
            assert child.wait(120) == 130, child.tail() + failed
            break
    assert pids_under(root) == [] and not os.path.exists(root)
    assert not (rundir / "nodes").exists()


def _cmd(pid: int) -> str:
    import psutil

    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


def test_a_failed_flwr_run_keeps_the_end_of_its_output(tmp_path):
    """The one-line error names a file with the last lines of Flower's output (the run dir's
    ``flwr-run.log``, else a temp file), so a failure far from the terminal can be read."""
    tail = deque(["INFO : starting", "Traceback (most recent call last):", "RuntimeError: boom"])
    kept = flwr_run._keep_output(tail, str(tmp_path / "r"))
    assert kept == str(tmp_path / "r" / "flwr-run.log")
    assert Path(kept).read_text().splitlines() == list(tail)
    other = Path(flwr_run._keep_output(tail))
    try:
        assert other.name.startswith("ldpgraph-flwr-run-") and "boom" in other.read_text()
    finally:
        other.unlink()
    assert flwr_run._last_error(tail) == "RuntimeError: boom"
