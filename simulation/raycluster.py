"""Joining an existing Ray cluster: ``--ray-address`` of ``ldpgraph run`` and ``ldpgraph sweep``.

Three things go wrong when one simply calls ``ray.init(address=...)``, and this module fixes them:

* An address nobody listens on makes Ray retry for minutes. We first open a TCP connection to
  the head's GCS port with a short timeout and fail with one clear line instead.
* Ray replaces a loopback head address (127.0.0.1, localhost) by the machine's own address
  before connecting, so a head started with ``--node-ip-address 127.0.0.1`` (which listens on
  loopback only) is never reached, and the driver's own servers would bind the outside address.
  For a loopback address we keep Ray on loopback (its documented single-machine switch,
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, for the duration of the connect) and pin the
  driver's node address to it.
* The driver must run on a machine of the cluster (Ray needs a local raylet); that is Ray's
  rule, and its error says so.

We never stop a cluster we joined: :func:`ldpgraph.simulation.backends.flower.ray_session`
only disconnects, which ends the actors and tasks this driver started and nothing else.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

from .config import ConfigError

#: Seconds to wait for the head's TCP port before giving up.
CONNECT_TIMEOUT = 5.0
#: Ray's switch for single-machine clusters: node addresses stay on loopback.
SINGLE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) of a Ray head's GCS; a one-line ConfigError else."""
    if address.startswith("ray://"):
        raise ConfigError(
            f"--ray-address {address}: Ray Client addresses (ray://) are not supported; give "
            "the head's GCS address HOST:PORT and run ldpgraph on a machine of the cluster"
        )
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--ray-address must be HOST:PORT (e.g. 127.0.0.1:6379), got {address!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> tuple[str, int]:
    """Fail fast (one line) when nothing listens at ``address``; returns (host, port)."""
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"cannot reach the Ray cluster at {address} ({reason}); start its head with "
            "`ray start --head` (or `ray up`) and give its address"
        ) from None
    return host, port


@contextlib.contextmanager
def _single_machine() -> Iterator[None]:
    """Ray's single-machine mode while connecting: it then leaves a loopback address alone.

    Ray reads the switch into a module constant at import time, and ``ray`` may already be
    imported (Flower imports it), so the constant is set too; both are restored afterwards (the
    connected driver keeps its node address, and Ray asks the constant nothing more)."""
    from ray._private import ray_constants

    old_env = os.environ.get(SINGLE_MACHINE_ENV)
    old_const = ray_constants.ENABLE_RAY_CLUSTER
    os.environ[SINGLE_MACHINE_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = old_const
        if old_env is None:
            os.environ.pop(SINGLE_MACHINE_ENV, None)
        else:
            os.environ[SINGLE_MACHINE_ENV] = old_env


def connect(address: str, **init_args: Any) -> None:
    """``ray.init`` on the existing cluster at ``address`` (``auto``: Ray's own discovery)."""
    import ray

    if address == "auto":
        target, pinned = "auto", None
    else:
        host, port = check_reachable(address)
        target, pinned = _join(host, port), None
        if is_loopback(host):
            pinned = "127.0.0.1" if host == "localhost" else host
            target = _join(pinned, port)
    with _quiet():
        if pinned is None:
            ray.init(address=target, **init_args)
        else:
            with _single_machine():
                ray.init(address=target, _node_ip_address=pinned, **init_args)


def start_local(**init_args: Any) -> None:
    """``ray.init`` of a private one-machine Ray that listens on loopback only.

    Left to itself Ray binds its GCS and raylet on every interface and its agents on the
    machine's outside address, although nothing outside ever talks to a one-machine Ray."""
    import ray

    with _quiet(), _single_machine():
        ray.init(_node_ip_address="127.0.0.1", **init_args)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """We use no accelerators through Ray: silence Ray's tip about its future default."""
    name = "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"
    had = name in os.environ
    os.environ.setdefault(name, "0")
    try:
        yield
    finally:
        if not had:
            os.environ.pop(name, None)


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def alive_nodes() -> int:
    """Nodes of the connected cluster that are up."""
    import ray

    return sum(1 for node in ray.nodes() if node.get("Alive"))
