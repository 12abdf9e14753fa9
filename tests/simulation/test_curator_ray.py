"""The curator on Ray (``--curator-on ray``): same edges and features as one process, on a local
cluster of two nodes started by the test, and one-line errors without a cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ldpgraph.protocols.ldp import blocks
from ldpgraph.simulation.config import ConfigError, RunConfig
from ldpgraph.simulation.curator_ray import RayBlocks, curator_blocks, node_rounds
from tests.support.ray_nodes import free_ports, local_cluster

ROOT = Path(__file__).resolve().parents[2]


def _double(x: int) -> int:
    return 2 * x


def test_threads_by_default_install_nothing():
    config = RunConfig()
    assert config.curator_on == "threads"
    with curator_blocks(config) as on_ray:
        assert on_ray is None
        assert list(blocks.map_blocks(_double, [1, 2, 3])) == [2, 4, 6]


def test_unknown_place_is_refused():
    with pytest.raises(ConfigError, match="curator-on"):
        RunConfig(curator_on="gpu", backend="local").validate()


def test_unreachable_cluster_fails_in_one_line_before_any_work():
    port = free_ports(1)[0]
    config = RunConfig(curator_on="ray", ray_address=f"127.0.0.1:{port}", backend="local")
    with pytest.raises(ConfigError, match=f"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        with curator_blocks(config):
            raise AssertionError("entered without a cluster")
    assert list(blocks.map_blocks(_double, [4])) == [8]  # threads, as before


def test_ray_blocks_connect_once_on_the_first_map():
    calls = []

    def connect() -> None:
        calls.append(1)
        raise ConfigError("no cluster here")

    executor = RayBlocks(connect)
    with blocks.using(executor), pytest.raises(ConfigError, match="no cluster here"):
        list(blocks.map_blocks(_double, [1, 2]))
    assert calls == [1]
    assert list(executor.map(_double, [])) == []  # nothing to run: Ray is not needed


@pytest.mark.slow
@pytest.mark.engine
def test_two_node_cluster_gives_the_same_release():
    """HoGS on a small synthetic graph, curator on threads and on a two-node local Ray cluster
    (head + one `ray start --address` node, one CPU each): identical edges, weights and
    features, with blocks run on both nodes. Ray's start alone takes 20-60 s on a loaded
    2-core machine."""
    with local_cluster(nodes=2, cpus_per_node=1) as cluster:
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.curator_ray_driver", cluster.address],
            cwd=ROOT,
            env=cluster.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
        out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["edges"] > 100, out
    assert out["same_edges"] and out["same_weights"] and out["same_features"], out
    curator = out["curator"]
    assert curator["cluster_nodes"] == 2, f"a node of the cluster was gone: {curator}"
    assert len(curator["blocks_per_node"]) == 2, f"the blocks ran on one node: {curator}"
    assert out["curator"]["maps"] >= 2, out  # the posterior and the feature reconstruction


def test_blocks_go_round_the_nodes_by_their_cpus():
    assert node_rounds({"b": 1, "a": 1}) == ["a", "b"]
    assert node_rounds({"a": 2, "b": 1, "c": 3}) == ["a", "b", "c", "a", "c", "c"]
    assert node_rounds({"head": 0, "w": 2}) == ["w", "w"]  # a node without CPUs gets none
    assert node_rounds({"a": 0, "b": 0}) == ["a", "b"]  # ... unless no node has any
    assert node_rounds({}) == []
