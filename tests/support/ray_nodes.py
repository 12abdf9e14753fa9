"""A Ray cluster of several nodes on this machine, on loopback, for tests and benchmarks.

``ray start --head`` plus one ``ray start --address`` per further node, each with its own
free ports (a shared machine may run other Rays), all under one private short temp dir, so
that :func:`ldpgraph.simulation.processes.kill_under` ends exactly these processes, by pid
(never ``ray stop``, which matches other people's Ray by name).
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ldpgraph.simulation.processes import kill_under, pids_under

BIN = Path(sys.executable).parent
#: Ports one node needs (GCS or none, node manager, object manager, agents, metrics, ...).
PORTS_PER_NODE = 8
#: Worker ports per node (Ray's worker range must be contiguous).
WORKER_PORTS = 23


@dataclass
class LocalCluster:
    address: str
    temp: Path
    env: dict[str, str]
    nodes: int


def _port_free(port: int) -> bool:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def free_ports(n: int) -> list[int]:
    """``n`` consecutive free ports."""
    for _ in range(200):
        base = random.randrange(20000, 40000 - n)
        if all(_port_free(p) for p in range(base, base + n)):
            return list(range(base, base + n))
    raise RuntimeError("no free port range")


def _node_ports(ports: list[int]) -> list[str]:
    nm, om, agent, agent_grpc, metrics, renv, client = ports[1:8]
    workers = ports[PORTS_PER_NODE : PORTS_PER_NODE + WORKER_PORTS]
    return [
        f"--node-manager-port={nm}",
        f"--object-manager-port={om}",
        f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}",
        f"--runtime-env-agent-port={renv}",
        f"--ray-client-server-port={client}",
        f"--min-worker-port={workers[0]}",
        f"--max-worker-port={workers[-1]}",
    ]


@contextmanager
def local_cluster(
    nodes: int, cpus_per_node: int = 1, timeout: float = 120.0
) -> Iterator[LocalCluster]:
    """A head and ``nodes - 1`` more nodes, ``cpus_per_node`` CPUs each, on 127.0.0.1; every
    process ended by pid at the end (also on failure). Tried twice: Ray gives a node 30 s to
    register, which a loaded shared machine can miss."""
    temp = Path(tempfile.mkdtemp(prefix="ldpg-rn-", dir="/tmp"))  # Ray's socket paths: short
    (temp / "tmp").mkdir()
    # Not Ray's one-machine switch (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0), which keeps a head on
    # loopback but makes `ray start --address` refuse a second node: the nodes' own addresses
    # are 127.0.0.1, but a worker reaches the head's GCS through this machine's address.
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    env.update(
        RAY_USAGE_STATS_ENABLED="0",
        RAY_memory_monitor_refresh_ms="0",  # a loaded shared machine: no Ray OOM kills
        TMPDIR=str(temp / "tmp"),
    )
    try:
        for attempt in (1, 2):
            try:
                gcs = _bring_up(nodes, cpus_per_node, env, temp, timeout)
                break
            except RuntimeError:
                kill_under(str(temp))
                if attempt == 2:
                    raise
        yield LocalCluster(f"127.0.0.1:{gcs}", temp, env, nodes)
    finally:
        kill_under(str(temp))
        left = pids_under(str(temp))
        shutil.rmtree(temp, ignore_errors=True)
        if left:
            raise RuntimeError(f"Ray processes left: {left}")


def _bring_up(nodes: int, cpus: int, env: dict[str, str], temp: Path, timeout: float) -> int:
    """Start the head and the other nodes; returns the head's GCS port."""
    per = PORTS_PER_NODE + WORKER_PORTS + 1  # and the dashboard
    ports = free_ports(per * nodes)
    gcs = ports[0]
    common = ["--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", "--disable-usage-stats"]
    head = [
        str(BIN / "ray"), "start", "--head", f"--port={gcs}", f"--temp-dir={temp}",
        "--include-dashboard=false", f"--dashboard-port={ports[per - 1]}", *common,
        *_node_ports(ports[:per]),
    ]  # fmt: skip
    _start(head, env, temp, timeout)
    for k in range(1, nodes):
        mine = ports[k * per : (k + 1) * per]
        worker = [
            str(BIN / "ray"), "start", f"--address=127.0.0.1:{gcs}", *common, *_node_ports(mine),
        ]  # fmt: skip
        _start(worker, env, temp, timeout)
    return gcs


def _start(cmd: list[str], env: dict[str, str], temp: Path, timeout: float) -> None:
    t0 = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=temp)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[1:3])} failed after {time.monotonic() - t0:.0f} s:\n"
            + (done.stdout + done.stderr)[-3000:]
        )
