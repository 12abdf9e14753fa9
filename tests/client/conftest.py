"""Every client test keeps a deployed node's default ledger places in its own temporary
directory: none writes into the user's state or configuration home."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def node_state_homes(tmp_path_factory, monkeypatch):
    root = tmp_path_factory.mktemp("node-homes")
    monkeypatch.setenv("XDG_STATE_HOME", str(root / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    return root


#: The small partitioned graph most node tests use (a module defining its own ``graph`` or
#: ``node_file`` fixture overrides these): 40 synthetic nodes, the first node file of a
#: 10-file partition hosting nodes 0..9.
N, D = 40, 8
NODES = range(10)


@pytest.fixture(scope="module")
def graph():
    from ldpgraph.simulation.datasets import load_dataset

    return load_dataset(f"synthetic:n={N},classes=2,d={D},seed=1")


@pytest.fixture
def node_file(graph, tmp_path):
    from ldpgraph.client.nodedata import open_store
    from ldpgraph.simulation.partition import write_partition

    write_partition(graph, tmp_path / "part", 10, dataset="synthetic")
    open_store.cache_clear()
    yield tmp_path / "part" / "nodes-00000"
    open_store.cache_clear()
