"""End to end through Flower's simulation engine (Ray): same reports as the local backend,
faulty SuperNodes dropped and counted, budgets and raw-upload refusals enforced by the nodes."""

from __future__ import annotations

import threading

import pytest

from ldpgraph.client.budget import NodeSettings
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.registry import make_protocol, uses_public_features
from ldpgraph.server.training import TrainConfig, train_and_evaluate
from ldpgraph.simulation.backends import flower
from ldpgraph.simulation.backends.engine import run_in_simulation_engine
from ldpgraph.simulation.backends.local import run_protocol as run_local
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.pipeline import curator_view
from ldpgraph.simulation.splits import make_split

from ..support.faults import make_faulty_app
from ..support.flower_engine import releases_in_one_engine
from ..support.spawned import Spawned

pytestmark = [pytest.mark.slow, pytest.mark.engine]


def release_with(backend: str, graph, config: RunConfig, client_app=None):
    protocol = make_protocol(config.protocol, **config.protocol_params())
    curator = curator_view(graph, uses_public_features(config.protocol))
    if backend == "local":
        return run_local(protocol, graph, curator, config.seed)[0]
    return flower.run_protocol(protocol, graph, curator, config, client_app=client_app)[0]


@pytest.mark.parametrize(
    "runs",
    # k = 0 (automatic) gives 60 one-node SuperNodes here, as k = 1 does: one engine for both;
    # k = 7 leaves a last SuperNode with 4 nodes.
    [[("hogs", 1), ("hogs-edge", 0)], [("hogs", 7)]],
    ids=["hogs-1+hogs-edge-0", "hogs-7"],
)
def test_flower_reports_equal_local(runs):
    graph = load_dataset("synthetic:n=60,classes=3,d=30,avg_degree=5,seed=2")
    cfgs = [
        RunConfig(protocol=p, epsilon=5.0, seed=11, nodes_per_client=k, ray_actors=2).validate()
        for p, k in runs
    ]
    released = releases_in_one_engine(
        [
            (
                make_protocol(c.protocol, **c.protocol_params()),
                curator_view(graph, uses_public_features(c.protocol)),
                c,
            )
            for c in cfgs
        ],
        graph,
        cfgs[0],
    )
    for cfg, fl in zip(cfgs, released, strict=True):
        local = release_with("local", graph, cfg)
        assert fl.fingerprint() == local.fingerprint(), cfg.protocol
        # Simulated nodes keep the sparse rows (their hellos say so), as the local backend does.
        assert fl.stats["collection"]["node_sampling"] == {"sparse": 60}
        assert local.stats["collection"]["node_sampling"] == {"sparse": 60}
        rounds = fl.stats["collection"]["rounds"]
        assert rounds[0]["replied"] == 60 and rounds[0]["missing"] == 0
        assert fl.stats["collection"]["supernodes"] == -(-60 // cfg.resolved_nodes_per_client(60))


def test_faulty_supernodes_are_dropped_and_counted():
    graph = load_dataset("synthetic:n=200,classes=3,d=60,avg_degree=6,homophily=0.9,seed=4")
    k = 2
    faults = {
        1: "garbage",
        2: "too-long",
        3: "out-of-range",
        4: "unsorted",
        5: "wrong-round",
        6: "impostor",
        7: "raise",
        8: "silent",
    }
    cfg = RunConfig(
        protocol="hogs", epsilon=8.0, seed=3, nodes_per_client=k, ray_actors=2, round_timeout=12.0
    ).validate()
    # The clean reference through the local backend: the same reports as Flower's by
    # fingerprint (test_flower_reports_equal_local), one simulation fewer.
    clean = release_with("local", graph, cfg)
    # The silent node outwaits the round by far; the honest ones must fit in it on a busy machine.
    bad = release_with("flower", graph, cfg, client_app=make_faulty_app(faults, delay=25.0))
    stats = bad.stats["collection"]["rounds"][0]
    assert stats["asked"] == 200
    assert stats["rejected"] == 5 * k  # garbage, too-long, out-of-range, unsorted, wrong-round
    assert stats["missing"] == 2 * k  # raise, silent (timeout)
    assert stats["bad_records"] == 1  # the impostor's record for a node it does not host
    assert stats["replied"] == 200 - 7 * k
    assert stats["refused"] == 0
    reasons = " | ".join(stats["reasons"])
    for needle in (
        "out of range",
        "unsorted",
        "exceeds",
        "round",
        "error reply",
        "no reply",
        "does not host",
    ):
        assert needle in reasons, needle
    split = make_split(200, 3)
    tcfg = TrainConfig(epochs=60)
    acc = [
        train_and_evaluate(r.edges, r.x, graph.y, split, tcfg, 3)["test_acc"] for r in (clean, bad)
    ]
    assert acc[0] > 0.6
    assert abs(acc[0] - acc[1]) <= 0.1, acc


def test_nodes_refuse_over_budget_rounds_and_raw_upload():
    from flwr.serverapp import ServerApp

    from ldpgraph.client.app import app as client_app
    from ldpgraph.server.collector import GridCollector

    graph = load_dataset("synthetic:n=12,classes=2,d=10,avg_degree=3,seed=1")
    hogs = make_protocol("hogs", epsilon=2.0)
    raw = make_protocol("none")
    out: dict = {}
    with flower.run_directory(RunConfig()) as rundir:
        # The harness gives the simulated nodes their own settings: budget 3, no consent.
        settings = NodeSettings(budget=3.0, trust_curator=False, seed=0)
        store = flower.write_node_store(graph, rundir / "nodes", settings)
        server = ServerApp()

        @server.main()
        def main(grid, context):
            col = GridCollector(grid, 12, 4, wait_timeout=60, round_timeout=60)
            where = {"data": str(store), "nodes-per-client": 3, "num-nodes": 12}
            col.discover(where)
            out["units"] = dict(col.units)  # each SuperNode's hello states its nodes' unit
            # A server that claims a huge budget and consent changes nothing.
            hostile = {
                "seed": 0,
                "default-budget": 1e9,
                "budget": 1e9,
                "default-trust": True,
                "trust-curator": True,
            }
            for name, proto, round_ in (("first", hogs, 0), ("second", hogs, 1), ("raw", raw, 0)):
                message = RoundMessage.report(round_, proto.config(), hostile)
                out[name] = col.collect(proto, message, 10).stats

        cfg = RunConfig(ray_actors=2)
        with (
            flower._environment({"FLWR_HOME": str(rundir / "flwr")}),
            flower.ray_session(cfg, rundir, threading.Event()),
        ):
            run_in_simulation_engine(server, client_app, 4, flower.backend_config(cfg))
    assert out["units"] == {"per-bit": 12}
    assert out["first"].replied == 12 and out["first"].refused == 0
    # 2 + 2 > 3: every node refuses the second round, with an error reply, not a crash.
    assert out["second"].refused == 12 and out["second"].replied == 0
    # ... and the refusal tells the server nothing about the budget or the spending.
    assert dict(out["second"].reasons) == {"refused by the node": 12}
    assert out["raw"].refused == 12
    assert dict(out["raw"].reasons) == {"refused by the node": 12}


def test_ctrl_c_stops_every_process(tmp_path):
    sig = "SIGINT"
    import os
    import signal
    import sys
    import time

    from ldpgraph.simulation.processes import pids_under

    rundir = tmp_path / "r"
    cmd = [
        sys.executable,
        "-m",
        "ldpgraph.simulation.cli",
        "run",
        "--quiet",
        "--dataset",
        "synthetic:n=1500,classes=3,d=20",
        "--nodes-per-client",
        "1",
        "--run-dir",
        str(rundir),
        "--ray-actors",
        "2",
    ]
    marker = rundir / "ray-temp-dir"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with Spawned(cmd, tmp_path / "out.log", env=env) as child:
        child.wait_for(lambda: marker.is_file() and bool(pids_under(marker.read_text())), "Ray")
        ray_tmp = marker.read_text()
        # 1500 one-node SuperNodes keep the engine busy for well over this pause: the signal
        # lands while Flower and Ray run (a smaller run could finish first on an idle machine).
        time.sleep(1)
        child.proc.send_signal(getattr(signal, sig))
        assert child.wait(180) == 130, child.tail()
    time.sleep(1)
    assert pids_under(ray_tmp) == [] and pids_under(str(rundir)) == []
    # The nodes' rows (the simulation's copy of the graph) do not outlive the run.
    assert (rundir / "ray-temp-dir").is_file() and not (rundir / "nodes").exists()


def test_error_in_the_server_stops_every_process(tmp_path):
    from ldpgraph.simulation.processes import pids_under

    graph = load_dataset("synthetic:n=30,classes=2,d=10,avg_degree=3,seed=1")
    cfg = RunConfig(protocol="hogs-edge", epsilon=3.0, ray_actors=2, run_dir=str(tmp_path / "r"))
    protocol = make_protocol("hogs-edge", epsilon=3.0)
    curator = curator_view(graph, public_features=False)  # hogs-edge needs them: server fails
    with pytest.raises(ValueError, match="public features"):
        flower.run_protocol(protocol, graph, curator, cfg)
    ray_tmp = (tmp_path / "r" / "ray-temp-dir").read_text()
    assert pids_under(ray_tmp) == [] and pids_under(str(tmp_path)) == []


#: Every baseline with the Flower path of its own rounds (multi-round LDPGen, Blink's, the
#: sampling of HoGS-ARR on the node's own SAMPLING stream) and plain RR, on one graph and
#: configuration.
BASELINES = [
    ("rr", {}),
    ("fp-blink", {}),
    ("blink-hard", {}),
    ("ldpgen", {}),
    ("fp-ldpgen", {}),
    ("solitude", {}),
    ("hogs-kprop", {}),
    ("hogs-arr", {"mu": 0.5}),
]


def test_baselines_through_flower_equal_local():
    """Each baseline's release through Flower equals the local backend's. One engine start
    carries all eight (tests/support/flower_engine.py: the same ServerApp path per protocol, a
    node store and ledgers of its own each) instead of eight starts of Ray."""
    graph = load_dataset("synthetic:n=40,classes=2,d=12,avg_degree=4,seed=6")
    cfgs = [
        RunConfig(
            protocol=name, epsilon=6.0, seed=5, nodes_per_client=4, ray_actors=2, **extra
        ).validate()
        for name, extra in BASELINES
    ]
    runs = [
        (
            make_protocol(c.protocol, **c.protocol_params()),
            curator_view(graph, uses_public_features(c.protocol)),
        )
        for c in cfgs
    ]
    released = releases_in_one_engine(runs, graph, cfgs[0])
    for cfg, fl in zip(cfgs, released, strict=True):
        local = release_with("local", graph, cfg)
        assert fl.fingerprint() == local.fingerprint(), cfg.protocol
        for stats in fl.stats["collection"]["rounds"]:
            assert stats["replied"] == 40, (cfg.protocol, stats)
        if cfg.protocol == "fp-blink":
            assert fl.stats["degree_reports"] == 40 and fl.stats["adjacency_reports"] == 40


def test_only_the_engine_module_calls_the_deprecated_entry():
    """A Flower upgrade that removes ``run_simulation`` is one change: backends/engine.py."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    callers = sorted(
        str(p.relative_to(root))
        for folder in ("client", "server", "simulation", "protocols", "tests", "benchmarks")
        for p in (root / folder).rglob("*.py")
        if "run_simulation(" in p.read_text() and p.name != "test_flower.py"
    )
    assert callers == ["simulation/backends/engine.py"]
