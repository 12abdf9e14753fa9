"""`flwr run .` on a local simulated federation completes a run, gives the local backend's
fingerprint, and leaves no SuperLink behind."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.pipeline import run

ROOT = Path(__file__).resolve().parents[2]
DATASET = "synthetic:n=90,classes=3,d=20,seed=5"


def flower_processes(flwr_home: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"FLWR_HOME={flwr_home}".encode() in env:
            pids.append(int(entry))
    return pids


@pytest.mark.slow
def test_flwr_run_dot(tmp_path):
    home = str(tmp_path / "flwr")
    result = tmp_path / "result.json"
    env = {
        **os.environ,
        "FLWR_HOME": home,
        "VENV": str(Path(os.sys.executable).parents[1]),
        "FLWR_LOCAL_SUPERLINK_HTTP_API_PORT": "39391",
        "FLWR_LOCAL_CONTROL_API_PORT": "39393",
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
