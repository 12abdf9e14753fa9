"""The ``deploy`` backend: submit a run to a running SuperLink and wait for its result.

``ldpgraph run --backend deploy --superlink HOST:PORT --curator PATH …`` writes a minimal Flower
app (a ``pyproject.toml`` naming the installed ServerApp and ClientApp and the run configuration
keys), a private ``FLWR_HOME`` whose ``config.toml`` names the SuperLink (with its CA
certificate for TLS), and runs ``flwr run APP CONNECTION --stream``. The ServerApp runs on the
SuperLink's machine from the curator file and logs the result record as one marked line
(:data:`RESULT_MARKER`); the stream carries it back to this machine, so it works across
machines. ``flwr run --stream`` exits 0 even when the run failed: the marked line is the proof.
Every machine needs the same ldpgraph installed (runtime dependency installation is off).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ldpgraph.server.record import RESULT_MARKER, from_json

from ..config import RunConfig

CONNECTION = "ldpgraph-deploy"
_RUN_ID = re.compile(r"\brun(?: ID)?[: ]+(\d{3,})", re.IGNORECASE)


class DeployError(RuntimeError):
    """The SuperLink could not be reached, refused the run, or the run gave no result."""


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))  # a TOML basic string is a JSON string


def write_app(directory: Path, config: RunConfig) -> Path:
    """A minimal Flower app: the installed ldpgraph apps, the run configuration as defaults."""
    from .. import flower_app

    directory.mkdir(parents=True, exist_ok=True)
    keys = {**config.to_flwr(), **dict.fromkeys(flower_app.APP_ONLY_KEYS, "")}
    lines = [
        "[build-system]",
        'requires = ["setuptools>=68"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        'name = "ldpgraph-deploy"',
        'version = "1.0.0"',
        'description = "ldpgraph run submitted by ldpgraph run --backend deploy"',
        'license = "Apache-2.0"',
        "dependencies = []",
        "",
        "[tool.flwr.app]",
        'publisher = "ldpgraph"',
        "",
        "[tool.flwr.app.components]",
        'serverapp = "ldpgraph.simulation.flower_app:app"',
        'clientapp = "ldpgraph.client.app:app"',
        "",
        "[tool.flwr.app.config]",
        *(f"{k} = {_toml(v)}" for k, v in keys.items()),
    ]
    (directory / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return directory


def write_connection(
    home: Path, superlink: str, root_certificates: str | None, insecure: bool
) -> None:
    """``$FLWR_HOME/config.toml`` naming the SuperLink (TLS unless ``insecure``)."""
    home.mkdir(parents=True, exist_ok=True)
    lines = [
        "[superlink]",
        f"default = {_toml(CONNECTION)}",
        "",
        f"[superlink.{CONNECTION}]",
        f"address = {_toml(superlink)}",
    ]
    if insecure:
        lines.append("insecure = true")
    elif root_certificates:
        lines.append(f"root-certificates = {_toml(str(Path(root_certificates).resolve()))}")
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def check_address(superlink: str) -> None:
    host, sep, port = superlink.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--superlink must be HOST:PORT, got {superlink!r}")


def flwr_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "FLWR_HOME": str(home),
        "FLWR_TELEMETRY_ENABLED": "0",
        "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
        "NO_COLOR": "1",
    }


def _flwr() -> str:
    exe = Path(sys.executable).with_name("flwr")
    return str(exe) if exe.exists() else "flwr"


def submit(
    config: RunConfig,
    superlink: str,
    root_certificates: str | None = None,
    insecure: bool = False,
    timeout: float | None = None,
    echo: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run ``config`` on the SuperLink at ``superlink`` and return the result record."""
    check_address(superlink)
    if not insecure:
        if not root_certificates:
            raise ValueError(
                "--backend deploy talks TLS: give the SuperLink's CA certificate with "
                "--root-certificates (or --insecure for a SuperLink started with --insecure)"
            )
        if not Path(root_certificates).is_file():
            raise FileNotFoundError(f"no CA certificate at {root_certificates}")
    config.validate()
    if Path(config.curator).exists():  # submitted on the SuperLink's machine: an absolute path
        config = replace(config, curator=str(Path(config.curator).resolve()))
    work = Path(tempfile.mkdtemp(prefix="ldpg-deploy-"))
    try:
        home = work / "flwr"
        write_connection(home, superlink, root_certificates, insecure)
        app = write_app(work / "app", config)
        cmd = [_flwr(), "run", str(app), CONNECTION, "--stream"]
        return _stream(cmd, flwr_env(home), timeout, echo, superlink)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _stream(
    cmd: list[str],
    env: dict[str, str],
    timeout: float | None,
    echo: Callable[[str], None] | None,
    superlink: str,
) -> dict[str, Any]:
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = None if timeout is None else time.monotonic() + timeout
    tail: list[str] = []
    result: dict[str, Any] | None = None
    run_id = None
    try:
        assert proc.stdout is not None
        for line in _lines(proc, deadline):
            text = line.rstrip("\n")
            pos = text.find(RESULT_MARKER)
            if pos >= 0:
                result = from_json(text[pos + len(RESULT_MARKER) :])
                continue
            if run_id is None and (m := _RUN_ID.search(text)):
                run_id = m.group(1)
            tail = (tail + [text])[-20:]
            if echo is not None:
                echo(text)
        proc.wait(timeout=30)
    except BaseException as exc:
        # Timed out or interrupted (Ctrl-C): the run would go on on the SuperLink without
        # anyone waiting for it, so ask the SuperLink to stop it.
        if run_id is None or result is not None:
            raise
        stopped = stop_run(run_id, env)
        if isinstance(exc, DeployError):
            what = "stopped it there" if stopped else "could not stop it there"
            raise DeployError(f"{exc} (run {run_id} on {superlink}: {what})") from None
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    if result is None:
        last = "\n  ".join(t for t in tail if t.strip())
        which = f" (run {run_id}; see `flwr log {run_id}`)" if run_id else ""
        raise DeployError(f"the run on {superlink} gave no result{which}; last output:\n  {last}")
    return result


def stop_run(run_id: str, env: dict[str, str]) -> bool:
    """``flwr stop RUN_ID`` on our connection (bounded); True if the SuperLink accepted it."""
    try:
        done = subprocess.run(
            [_flwr(), "stop", str(run_id), CONNECTION],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _lines(proc: subprocess.Popen, deadline: float | None):
    """The lines of ``proc``'s output, until it ends or the deadline passes."""
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while True:
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            raise DeployError("the deployment run did not finish within --deploy-timeout")
        if not sel.select(timeout=wait if wait is None else min(wait, 1.0)):
            continue
        line = proc.stdout.readline()
        if not line:
            return
        yield line
