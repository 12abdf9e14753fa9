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
    runs: Sequence[tuple[LdpProtocol, CuratorView]], graph: Graph, config: RunConfig
) -> list[Release]:
    """The release of ``graph`` by each protocol of ``runs`` (with its curator's view),
    collected in turn by one ServerApp in one run of the simulation engine (``config``: seed,
    nodes per client, Ray actors, timeouts)."""
    from flwr.serverapp import ServerApp

    from ldpgraph.client.app import app as client_app

    n = graph.num_nodes
    supernodes = -(-n // config.resolved_nodes_per_client(n))
    out: dict[str, Any] = {}
    abort = threading.Event()
    with flower.run_directory(config) as rundir:
        server = ServerApp()

        @server.main()
        def main(grid: Any, context: Any) -> None:
            try:
                out["releases"] = []
                for i, (protocol, curator) in enumerate(runs):
                    workdir = rundir / f"protocol-{i}"
                    workdir.mkdir()
                    release, _ = flower.release_over_grid(
                        grid, protocol, graph, curator, config, workdir, None, abort, supernodes
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
