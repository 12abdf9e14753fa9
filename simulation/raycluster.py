"""Joining an existing Ray cluster: ``--ray-address`` of ``ldpgraph run`` and ``ldpgraph sweep``.

Three things go wrong when one simply calls ``ray.init(address=...)``, and this module fixes them:

* An address nobody listens on makes Ray retry for minutes. We first open a TCP connection to
  the head's GCS port with a short timeout and fail with one clear line instead.
* Ray replaces a loopback head address (127.0.0.1, localhost) by the machine's own address
  before connecting, so a head started with ``--node-ip-address 127.0.0.1`` (which listens on
  loopback only) is never reached, and the driver's own servers would bind the outside address.
  For a loopback address we keep Ray on loopback with its documented single-machine switch,
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (then Ray's node address is the loopback address).
  Ray reads the switch once, when ``ray`` is imported, and has no public way to change it
  afterwards: so the switch is set before our first ``import ray``; if ``ray`` was imported
  earlier without it, joining a loopback head is refused with a line that says what to set.
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


def _import_ray(loopback: bool) -> Any:
    """``import ray``, with Ray's single-machine switch on when ``loopback`` and Ray is not
    imported yet (the switch is read at import). Returns the module and whether Ray stays on
    loopback."""
    import sys

    if loopback and "ray" not in sys.modules:
        os.environ.setdefault(SINGLE_MACHINE_ENV, "0")
    import ray

    return ray


def _on_loopback() -> bool:
    """Whether the imported Ray keeps node addresses on loopback (the switch was set when it
    was imported; we set it only before importing, so the environment tells)."""
    return os.environ.get(SINGLE_MACHINE_ENV, "").strip().lower() in ("0", "false")


def connect(address: str, **init_args: Any) -> None:
    """``ray.init`` on the existing cluster at ``address`` (``auto``: Ray's own discovery)."""
    loopback = False
    target = address
    if address != "auto":
        host, port = check_reachable(address)
        loopback = is_loopback(host)
        target = _join("127.0.0.1" if host == "localhost" else host, port)
    ray = _import_ray(loopback)
    if loopback and not _on_loopback():
        raise ConfigError(
            f"cannot join the loopback Ray head at {address}: Ray was imported before ldpgraph "
            f"could keep it on loopback; set {SINGLE_MACHINE_ENV}=0 in the environment"
        )
    with _quiet():
        ray.init(address=target, **init_args)


def start_local(**init_args: Any) -> None:
    """``ray.init`` of a private one-machine Ray that listens on loopback only (when Ray was
    not imported before without the single-machine switch: then on Ray's default address).

    Left to itself Ray binds its GCS and raylet on every interface and its agents on the
    machine's outside address, although nothing outside ever talks to a one-machine Ray."""
    ray = _import_ray(loopback=True)
    with _quiet():
        ray.init(**init_args)


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
