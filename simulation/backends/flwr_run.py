"""The ``flower`` backend on Flower's supported runtime: ``flwr run <app> local``.

Flower 1.41 deprecates the in-process ``run_simulation`` (kept as a named fallback in
:mod:`.engine`) in favour of ``flwr run`` against a SuperLink in simulation mode. This module
does what ``deploy/flwr-local-run.sh`` does by hand, for an installed package too:

* a private temp dir holds everything: a generated Flower app (a ``pyproject.toml`` naming
  our installed ServerApp and ClientApp and the run-config table, :func:`app_config_table`),
  ``FLWR_HOME`` with the ``local`` federation, Ray's temp dir (``RAY_TMPDIR``), the result;
* ``flwr run`` starts the local SuperLink (on two free loopback ports, so that it never joins
  another user's) and streams the run's log: the ServerApp's stage lines go to ``stage``;
* the ServerApp (:mod:`ldpgraph.simulation.flower_app`) runs the whole pipeline and writes the
  record to ``result-path``, which is what we return;
* the SuperLink that ``flwr run`` leaves behind, and everything it started (SuperExec, the
  simulation, Ray), is stopped by pid: the processes whose command line or open files name the
  private dir, and their descendants (:mod:`ldpgraph.simulation.processes`), on success,
  error and Ctrl-C alike. Never ``ray stop``, never a name alone.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..config import RunConfig

#: The federation of the generated FLWR_HOME: Flower's lazily started local SuperLink.
FEDERATION = "local"
#: Lines of the stream kept for the error message when the run produced no result.
TAIL = 60

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

Stage = Callable[[str], None]


def app_config_table() -> dict[str, Any]:
    """``[tool.flwr.app.config]``: every run-configuration key's default (hyphenated) and the
    app's own keys, from the installed package's declarations (never a repository file)."""
    from ..flwr_table import table

    return table()


def write_app(directory: Path) -> Path:
    """A Flower app directory whose components are the installed ldpgraph apps."""
    import tomli_w

    from ldpgraph import __version__

    directory.mkdir(parents=True, exist_ok=True)
    project = {
        "project": {
            "name": "ldpgraph-run",
            "version": _plain_version(__version__),
            "description": "ldpgraph run --backend flower (generated)",
            "license": "Apache-2.0",
        },
        "tool": {
            "flwr": {
                "app": {
                    "publisher": "ldpgraph",
                    "components": {
                        "serverapp": "ldpgraph.simulation.flower_app:app",
                        "clientapp": "ldpgraph.client.app:app",
                    },
                    "config": app_config_table(),
                }
            }
        },
    }
    (directory / "pyproject.toml").write_text(tomli_w.dumps(project))
    return directory


def _plain_version(version: str) -> str:
    """``X.Y.Z`` of a package version (Flower's app versions are plain), ``0.0.0`` if none."""
    parts = re.findall(r"\d+", version.split("+")[0])[:3]
    return ".".join((parts + ["0", "0", "0"])[:3])


def write_flwr_home(home: Path) -> Path:
    """A private FLWR_HOME whose ``local`` connection is Flower's local SuperLink."""
    home.mkdir(parents=True, exist_ok=True)
    import tomli_w

    table = {"superlink": {"default": FEDERATION, FEDERATION: {"address": ":local:"}}}
    (home / "config.toml").write_text(tomli_w.dumps(table))
    return home


def free_port() -> int:
    """A port free on loopback now (the SuperLink binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(root: Path, address: str = "") -> dict[str, str]:
    """The environment of ``flwr run`` and all it starts: private FLWR_HOME and Ray temp dir,
    free ports, no telemetry, no runtime dependency installation, Ray on loopback; with a
    cluster ``address``, ``RAY_ADDRESS`` (the simulation's ``ray.init`` joins it)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    bindir = str(Path(sys.executable).parent)
    env.update(
        PATH=bindir + os.pathsep + env.get("PATH", ""),
        FLWR_HOME=str(root / "flwr"),
        FLWR_TELEMETRY_ENABLED="0",
        FLWR_DISABLE_UPDATE_CHECK="1",
        FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION="1",
        FLWR_LOCAL_SUPERLINK_HTTP_API_PORT=str(free_port()),
        FLWR_LOCAL_CONTROL_API_PORT=str(free_port()),
        RAY_TMPDIR=str(root / "r"),
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",  # Ray's single-machine mode: loopback only
        RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO="0",
        RAY_DEDUP_LOGS="0",
        RAY_USAGE_STATS_ENABLED="0",
    )
    if address:
        from ..raycluster import SINGLE_MACHINE_ENV, is_loopback, split_address

        env["RAY_ADDRESS"] = address
        if address != "auto" and not is_loopback(split_address(address)[0]):
            env.pop(SINGLE_MACHINE_ENV)  # a driver on a cluster machine: Ray's own address
    return env


def num_supernodes(config: RunConfig) -> int:
    """As many SuperNodes as the in-process engine starts: ceil(n / nodes-per-client). The
    graph is loaded here anyway, so a split with an empty part or ``accuracy`` on an unlabelled
    graph is refused now, in one line, not by the ServerApp after Ray and the SuperLink are up
    (20-50 s). A metis split is left to the ServerApp (it partitions the whole graph)."""
    from ..checks import check_labels, check_split
    from ..datasets import load_dataset
    from ..splits import split_for

    graph = load_dataset(config.dataset, config.data_root or None)
    n = graph.num_nodes
    if config.split_mode != "metis" and not config.curator:
        split = split_for(n, config.seed, config.train_split, config.val_split, config.split_mode)
        check_split(split, n, config)
    check_labels(graph, config)
    return -(-n // config.resolved_nodes_per_client(n))


def flwr_command(config: RunConfig, root: Path, supernodes: int, address: str = "") -> list[str]:
    """``flwr run <app> local --stream`` with the federation's size and the run's settings;
    on a cluster (``address``) no CPU count for ``ray.init`` (Ray refuses one there)."""
    import tomli_w

    from ..flwr_table import RESULT_PATH

    values = {**config.to_flwr(), RESULT_PATH: str(root / "result.json")}
    (root / "run-config.toml").write_text(tomli_w.dumps(values))
    actors = config.ray_actors or (os.cpu_count() or 1)
    per_actor = config.ray_cpus_per_actor
    per_actor = int(per_actor) if float(per_actor).is_integer() else per_actor
    federation = (
        f"num-supernodes={supernodes} client-resources-num-cpus={per_actor} "
        "client-resources-num-gpus=0.0"
    )
    if not address:  # Ray wants whole CPUs in ray.init, any share per actor
        federation += f" init-args-num-cpus={math.ceil(actors * per_actor)}"
    exe = Path(sys.executable).parent / "flwr"
    return [
        str(exe) if exe.exists() else (shutil.which("flwr") or "flwr"),
        "run",
        str(write_app(root / "app")),
        FEDERATION,
        "--stream",
        "--federation-config",
        federation,
        "--run-config",
        str(root / "run-config.toml"),
    ]


def run_with_flwr(config: RunConfig, stage: Stage | None = None) -> dict[str, Any]:
    """Run one experiment through ``flwr run`` on a local simulated federation; returns the
    result record (the same shape as :func:`ldpgraph.simulation.pipeline.run`'s)."""
    from ..config import ConfigError
    from ..raycluster import check_reachable
    from .flower import cluster_address

    config.validate()
    say = stage or (lambda _msg: None)
    address = cluster_address(config)
    if address and address != "auto":
        check_reachable(address)  # one line in seconds, not Ray's minutes of retries
    supernodes = num_supernodes(config)
    say(f"starting Flower's local SuperLink (simulation, {supernodes} SuperNodes) by flwr run")
    with _private_dir(config.run_dir) as root:
        write_flwr_home(root / "flwr")
        cmd = flwr_command(config, root, supernodes, address)
        tail = _stream(cmd, child_env(root, address), root, say)
        result = root / "result.json"
        if not result.is_file() or not result.stat().st_size:
            kept = _keep_output(tail, config.run_dir)
            raise ConfigError(
                f"flwr run produced no result: {_last_error(tail)} (the end of its output: {kept})"
            )
        record = json.loads(result.read_text())
    record.pop("flwr_run_id", None)
    return record


def _stream(cmd: list[str], env: dict[str, str], root: Path, say: Stage) -> deque[str]:
    """Run ``cmd``, passing the ServerApp's stage lines to ``say``; returns the last lines."""
    from ..flower_app import STAGE_MARK

    tail: deque[str] = deque(maxlen=TAIL)
    with subprocess.Popen(
        cmd,
        env=env,
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        # Its own session: a terminal's Ctrl-C reaches ldpgraph alone, which prints one line
        # and stops everything the run started by pid (_private_dir), instead of every Flower
        # and Ray process printing its own traceback.
        start_new_session=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = _ANSI.sub("", raw).rstrip()
                tail.append(line)
                if STAGE_MARK in line:
                    say(line.split(STAGE_MARK, 1)[1].strip())
        finally:
            if proc.poll() is None:
                proc.terminate()
            proc.wait()
    return tail


def _keep_output(tail: deque[str], run_dir: str = "") -> str:
    """The last lines of a failed ``flwr run``'s output in a file that outlives the run (the
    run dir's ``flwr-run.log``, else a temp file); returns its path. The one-line error names
    the last exception; Flower's own lines before it say where it came from."""
    text = "\n".join(tail) + "\n"
    if run_dir:
        path = Path(run_dir) / "flwr-run.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)
    fd, name = tempfile.mkstemp(prefix="ldpgraph-flwr-run-", suffix=".log")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return name


def _last_error(tail: deque[str]) -> str:
    """The most telling line of the stream: the last exception line, else its last line."""
    # Flower's CLI boxes its errors: keep the text inside the box.
    lines = [line.strip(" │╭╮╰╯─") for line in tail]
    lines = [line for line in lines if line and not line.startswith("Error")]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_.]*(Error|Exception|Interrupt)\b:?", line):
            return line
    return lines[-1] if lines else "flwr run printed nothing"


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def _private_dir(run_dir: str = "") -> Iterator[Path]:
    """A short private dir under /tmp (Ray's Unix socket paths must fit ~107 bytes); on exit,
    success, error, Ctrl-C or SIGTERM alike, every process tied to it is stopped and it is
    removed, and so is the copy of the nodes' rows the ServerApp wrote into ``run_dir`` (a
    killed ServerApp cannot remove it). ``run_dir`` (``--run-dir``) also gets the private
    dir's path in ``ray-temp-dir``, as the in-process engine writes it: what this run
    started can be found by that path."""
    from ..processes import kill_under
    from .flower import discard_run_data

    root = Path(tempfile.mkdtemp(prefix="ldpg-fr-", dir="/tmp"))
    if run_dir:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        (Path(run_dir) / "ray-temp-dir").write_text(str(root))
    on_main = threading.current_thread() is threading.main_thread()
    old_term = signal.getsignal(signal.SIGTERM)
    if on_main:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield root
    finally:
        kill_under(str(root))
        shutil.rmtree(root, ignore_errors=True)
        if run_dir:
            discard_run_data(Path(run_dir), ours=False)
        if on_main:
            signal.signal(signal.SIGTERM, old_term)
