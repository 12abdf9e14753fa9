"""The ``flower`` backend's server side over a Flower Grid (:func:`release_over_grid`, which the
ServerApp of ``flwr run`` uses), and its in-process fallback on Flower's simulation engine on
Ray (:func:`run_protocol`; ``ldpgraph run`` goes through :mod:`.flwr_run`), one virtual
SuperNode per ``nodes_per_client`` logical node-clients.

The server side runs as a real Flower ServerApp: it waits for the SuperNodes, learns which nodes
each hosts (hello round), then runs the protocol's rounds through the one round loop
(:mod:`ldpgraph.server.rounds`) with a Grid collector (:mod:`ldpgraph.server.collector`), which
validates every reply. The ClientApp is :mod:`ldpgraph.client.app`. Node data is written once
into the run directory as a memory-mapped node store; each client reads only its own rows.
Flower's and Ray's state and temp files go under the run directory, which is removed at the end
unless the user named it; Ray is shut down on success, error and Ctrl-C alike.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ldpgraph.client.app import SIMULATED_SETTINGS
from ldpgraph.client.budget import NodeSettings
from ldpgraph.client.nodedata import write_store
from ldpgraph.protocols.base import CuratorView, LdpProtocol
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.types import Release
from ldpgraph.server.rounds import run_rounds

from ..config import ConfigError, RunConfig
from .engine import run_in_simulation_engine

log = logging.getLogger("ldpgraph.simulation")

#: Set by the `ldpgraph` command: on Ctrl-C/SIGTERM, stop our processes and exit with 130 at
#: once (Flower's worker threads would otherwise touch the stopped Ray and end the process
#: with another code, or hang the interpreter's exit). Library callers get KeyboardInterrupt.
EXIT_ON_INTERRUPT = False


def write_node_store(graph: Graph, directory: Path, settings: NodeSettings) -> Path:
    """All nodes' rows in one store (the simulation's shared file; clients read their rows),
    with the settings the harness gives every simulated node (budget, consent, seed): the
    nodes' own configuration, never part of a round message."""
    adj = graph.adjacency()
    return write_store(
        directory,
        adj.indptr,
        adj.indices,
        graph.x,
        first=0,
        num_nodes=graph.num_nodes,
        feature_domain=graph.feature_domain,
        extra={SIMULATED_SETTINGS: settings.to_mapping()},
    )


def release_over_grid(
    grid: Any,
    protocol: LdpProtocol,
    graph: Graph | None,
    curator: CuratorView,
    config: RunConfig,
    workdir: Path,
    progress: Callable[[int], None] | None = None,
    abort: threading.Event | None = None,
    supernodes: int | None = None,
    partition: str = "",
    manifest: Any = None,
) -> tuple[Release, dict[str, float]]:
    """Run every round of ``protocol`` over a Flower Grid and return the release.

    ``supernodes``: how many SuperNodes the federation has, when the caller started it;
    ``None`` (``flwr run``) counts those that connect and spreads the nodes over them.
    ``graph`` None: a deployment, where each SuperNode reads its own node file (of
    ``partition``) and ``supernodes`` is the number of node files; ``manifest`` (its curator
    file's, :class:`~ldpgraph.server.binding.Manifest`) binds each node to its SuperNode's key,
    and a deployment without one is refused."""
    from ldpgraph.server.collector import GridCollector

    if graph is None and manifest is None:
        raise ConfigError(
            "the curator file binds no node file to a SuperNode key, so any SuperNode could "
            "claim any node: partition again with --supernode-keys"
        )

    (workdir / "server-started").touch()
    n = curator.num_nodes
    expected, k = _layout(grid, n, deployed=graph is None, config=config, supernodes=supernodes)
    store = workdir / "nodes"
    if graph is not None:
        _fresh_store(graph, store, config)
    collector = GridCollector(
        grid,
        n,
        expected,
        wait_timeout=config.wait_timeout,
        round_timeout=config.round_timeout,
        progress=None,
        abort=abort,
        manifest=manifest,
    )
    t0 = time.perf_counter()
    where = {
        "data": str(store.resolve()) if graph is not None else "",
        "nodes-per-client": k,
        "num-nodes": n,
        "partition": partition,
    }
    collector.discover(where)
    hello = time.perf_counter() - t0
    collector.progress = progress
    # Nothing about a node's budget, consent or randomness travels in a round message.
    done = run_rounds(protocol, collector, curator, config.seed)
    done.release.stats["collection"] = _collection(
        config, collector, done, n, k, deployed=graph is None
    )
    return done.release, {"hello": hello, **done.timings}


def _fresh_store(graph: Graph, store: Path, config: RunConfig) -> None:
    """The simulated nodes' store, always written afresh: a store left in a named run
    directory by a killed run would carry that run's node settings and ledgers."""
    shutil.rmtree(store, ignore_errors=True)
    write_node_store(graph, store, config.node_settings())


def _layout(
    grid: Any, n: int, *, deployed: bool, config: RunConfig, supernodes: int | None
) -> tuple[int, int]:
    """How many SuperNodes answer and how many nodes each hosts: a deployment's node files
    fix the count; a simulation spreads the nodes over the SuperNodes given, or over those
    that connect when the caller started none (``flwr run``)."""
    from ldpgraph.server.collector import settled_node_count

    if deployed:
        expected = int(supernodes or 1)
        return expected, -(-n // expected)
    if supernodes is None and config.nodes_per_client == 0:
        k = -(-n // settled_node_count(grid, config.wait_timeout))
    else:
        k = config.resolved_nodes_per_client(n)
    return -(-n // k), k


def _collection(
    config: RunConfig, collector: Any, done: Any, n: int, k: int, *, deployed: bool
) -> dict[str, Any]:
    """The release's ``collection`` stats: who answered, how and in how many rounds."""
    return {
        "node_units": ({config.node_settings().unit: n} if not deployed else dict(collector.units)),
        # How the nodes drew their rows, as their hellos state it (a deployed node: in
        # constant work; a simulated one: sparse, no one times its reply).
        "node_sampling": dict(collector.sampling),
        "nodes_per_client": k,
        "supernodes": len(collector.hosts),
        "hello": collector.hello_stats.to_dict(),
        "rounds": done.rounds,
        "node_randomness": (
            "node-owned: each SuperNode's own configuration (OS entropy unless its "
            "operator pinned a seed)"
            if deployed
            else f"{config.node_settings().randomness} (simulation: the harness "
            "set every node's settings)"
        ),
    }


@contextlib.contextmanager
def run_directory(config: RunConfig) -> Iterator[Path]:
    """The run's directory (FLWR_HOME and Ray's temp dir live inside); removed if we made it.

    A short path under /tmp by default: Ray's Unix sockets must fit in ~107 characters.
    """
    if config.run_dir:
        path = Path(config.run_dir)
        path.mkdir(parents=True, exist_ok=True)
        try:
            yield path
        finally:
            discard_run_data(path, ours=False)
        return
    path = Path(tempfile.mkdtemp(prefix="ldpg-"))
    try:
        yield path
    finally:
        discard_run_data(path, ours=True)


def discard_run_data(rundir: Path, ours: bool) -> None:
    """Remove the copy of every node's rows the simulation wrote (a directory the user named
    keeps its logs and Flower state, never the raw graph), or the whole directory we made.
    Also called on Ctrl-C/SIGTERM before the hard exit, which skips ``finally`` blocks."""
    shutil.rmtree(rundir if ours else rundir / "nodes", ignore_errors=True)


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def cluster_address(config: RunConfig) -> str:
    """The Ray cluster to join: ``--ray-address``, else ``RAY_ADDRESS`` (as Ray's own tools and
    ``ray job submit`` set it), else none (a private one-machine Ray)."""
    return config.ray_address or os.environ.get("RAY_ADDRESS", "").strip()


def ray_init_args(config: RunConfig) -> dict[str, Any]:
    """Arguments of our own ``ray.init``: the cluster's address (no resources: a cluster has
    its own), or the CPUs of a private Ray (its temp dir comes from ``RAY_TMPDIR``, see
    :func:`ray_session`)."""
    quiet = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": False}
    address = cluster_address(config)
    if address:
        return {"address": address, **quiet}
    actors = config.ray_actors or (os.cpu_count() or 1)
    return {"num_cpus": actors * config.ray_cpus_per_actor, **quiet}


def backend_config(config: RunConfig) -> dict[str, Any]:
    """Flower's backend config. Ray is initialised by us (see :func:`ray_session`), so Flower
    skips its own ``ray.init``; we keep the handle and stop what we started."""
    return {
        "client_resources": {"num_cpus": config.ray_cpus_per_actor, "num_gpus": 0.0},
        "init_args": {},
    }


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def ray_session(config: RunConfig, rundir: Path, abort: threading.Event) -> Iterator[None]:
    """Start (or join) Ray for one simulation and stop everything we started, on success,
    error, Ctrl-C and SIGTERM alike."""
    # Ray's Unix socket paths must fit in ~107 bytes: a short private dir under /tmp, named in
    # the run directory so that a user (or a test) can find what this run started.
    ray_tmp = Path(tempfile.mkdtemp(prefix="ldpg-ray-", dir="/tmp"))
    (rundir / "ray-temp-dir").write_text(str(ray_tmp))
    old_term = signal.getsignal(signal.SIGTERM)
    on_main = threading.current_thread() is threading.main_thread()
    address = cluster_address(config)
    try:
        init_args = ray_init_args(config)
        if address:
            from ..raycluster import alive_nodes, connect

            connect(init_args.pop("address"), **init_args)
            if not config.run_dir and alive_nodes() > 1:
                # The ClientApps read the node store from the run directory.
                raise ConfigError(
                    "on a Ray cluster of several machines, give --run-dir a directory that "
                    "every machine mounts at the same path (the clients read their data there)"
                )
        else:
            from ..raycluster import start_local

            # RAY_TMPDIR: Ray's documented temp-dir variable, read by ray.init.
            with _environment({"RAY_TMPDIR": str(ray_tmp)}):
                start_local(**init_args)
        if on_main:  # ray.init installs a handler that aborts without cleanup
            signal.signal(signal.SIGTERM, _raise_interrupt)
        yield
    except (KeyboardInterrupt, SystemExit) as exc:
        # Ctrl-C, our SIGTERM handler, or Flower's own SIGTERM handler (SystemExit): stop our
        # processes before anything else can touch the stopped Ray.
        abort.set()
        if not address:
            from ..processes import kill_under

            kill_under(str(ray_tmp))
        shutil.rmtree(ray_tmp, ignore_errors=True)
        if EXIT_ON_INTERRUPT and isinstance(exc, KeyboardInterrupt):
            discard_run_data(rundir, ours=not config.run_dir)
            print("ldpgraph: interrupted", file=sys.stderr, flush=True)
            os._exit(130)
        raise
    finally:
        abort.set()
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            ray.shutdown()
        if not address:
            from ..processes import kill_under

            kill_under(str(ray_tmp))
        shutil.rmtree(ray_tmp, ignore_errors=True)
        if on_main:
            signal.signal(signal.SIGTERM, old_term)


def run_protocol(
    protocol: LdpProtocol,
    graph: Graph,
    curator: CuratorView,
    config: RunConfig,
    progress: Callable[[int], None] | None = None,
    client_app: Any = None,
) -> tuple[Release, dict[str, float]]:
    """Collect through Flower's simulation engine and return the release and timings.

    ``client_app`` replaces the real ClientApp (fault-injection tests use it)."""
    env = {
        "FLWR_TELEMETRY_ENABLED": "0",
        "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
        "RAY_DEDUP_LOGS": "0",
    }
    with _environment(env):
        from flwr.app import Context
        from flwr.serverapp import Grid, ServerApp

    if client_app is None:
        from ldpgraph.client.app import app as client_app

    n = graph.num_nodes
    k = config.resolved_nodes_per_client(n)
    holder: dict[str, Any] = {}
    abort = threading.Event()
    logging.getLogger("flwr").setLevel(logging.ERROR)
    # The engine runs the ServerApp in a thread of its own, which starts with an empty context:
    # the stage lines of the server step (ldpgraph.protocols.progress) go to this caller's
    # listener only when it runs in a copy of this context.
    caller = contextvars.copy_context()
    with run_directory(config) as rundir:
        server_app = ServerApp()

        @server_app.main()
        def main(grid: Grid, context: Context) -> None:
            holder["started"] = time.perf_counter()
            try:
                holder["result"] = caller.run(
                    release_over_grid,
                    grid, protocol, graph, curator, config, rundir, progress, abort, -(-n // k),
                )  # fmt: skip
            except BaseException as exc:  # surfaced in the caller's thread below
                holder["error"] = exc
            holder["finished"] = time.perf_counter()

        t0 = time.perf_counter()
        with (
            _environment({**env, "FLWR_HOME": str(rundir / "flwr")}),
            contextlib.redirect_stdout(sys.stderr),
            ray_session(config, rundir, abort),
        ):
            run_in_simulation_engine(server_app, client_app, -(-n // k), backend_config(config))
        t_end = time.perf_counter()
    if "error" in holder:
        raise holder["error"]
    if "result" not in holder:
        raise RuntimeError("the Flower simulation ended without running the ServerApp")
    release, timings = holder["result"]
    timings["engine_start"] = holder["started"] - t0
    timings["engine_stop"] = t_end - holder["finished"]
    release.stats.setdefault("collection", {})["backend"] = "flower"
    return release, timings
