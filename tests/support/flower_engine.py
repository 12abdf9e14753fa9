"""Several protocols' collections through one start of Flower's simulation engine.

``flower.run_protocol`` starts Ray and the engine for one protocol (about 10 s on a loaded CI
machine, most of it Ray and the ClientApp actors starting). A test that holds many protocols'
Flower releases to their local ones needs the same Flower path for each (the ServerApp's
``release_over_grid``: hello round, the one round loop, reply validation), not a fresh Ray for
each: here one ServerApp runs every protocol's rounds in turn over the same SuperNodes. Each
protocol gets its own node store and ledgers (a directory of its own), as a run of its own does.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ldpgraph.protocols.base import CuratorView, LdpProtocol
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.types import Release
from ldpgraph.simulation.backends import flower
from ldpgraph.simulation.backends.engine import run_in_simulation_engine
from ldpgraph.simulation.config import RunConfig


def releases_in_one_engine(
    runs: Sequence[tuple[LdpProtocol, CuratorView] | tuple[LdpProtocol, CuratorView, RunConfig]],
    graph: Graph,
    config: RunConfig,
) -> list[Release]:
    """The release of ``graph`` by each protocol of ``runs`` (with its curator's view and,
    optionally, a configuration of its own: seed, nodes per client, timeouts), collected in
    turn by one ServerApp in one run of the simulation engine (``config``: the engine's Ray
    actors; every run's nodes per client must give the same number of SuperNodes)."""
    from flwr.serverapp import ServerApp

    from ldpgraph.client.app import app as client_app

    n = graph.num_nodes
    supernodes = -(-n // config.resolved_nodes_per_client(n))
    configs = [run[2] if len(run) > 2 else config for run in runs]
    counts = {-(-n // c.resolved_nodes_per_client(n)) for c in configs}
    assert counts == {supernodes}, f"one engine has one set of SuperNodes, not {counts}"
    out: dict[str, Any] = {}
    abort = threading.Event()
    with flower.run_directory(config) as rundir:
        server = ServerApp()

        @server.main()
        def main(grid: Any, context: Any) -> None:
            try:
                out["releases"] = []
                for i, (run, cfg) in enumerate(zip(runs, configs, strict=True)):
                    workdir = rundir / f"protocol-{i}"
                    workdir.mkdir()
                    protocol, curator = run[0], run[1]
                    release, _ = flower.release_over_grid(
                        grid, protocol, graph, curator, cfg, workdir, None, abort, supernodes
                    )
                    out["releases"].append(release)
            except BaseException as exc:  # surfaced in the caller's thread below
                out["error"] = exc

        with (
            flower._environment({"FLWR_HOME": str(rundir / "flwr")}),
            flower.ray_session(config, rundir, abort),
        ):
            run_in_simulation_engine(server, client_app, supernodes, flower.backend_config(config))
    if "error" in out:
        raise out["error"]
    assert len(out.get("releases", [])) == len(runs), "the ServerApp did not finish"
    return out["releases"]
