"""The library: ``ldpgraph.run`` / ``release`` / ``train`` / ``load_dataset``, graphs in and
out (PyG, networkx, Graph), the transforms' laws, the results store as a table, the examples."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch
from scipy import stats
from torch_geometric.data import Data

import ldpgraph
from ldpgraph.protocols.graph import Graph
from ldpgraph.simulation.convert import from_networkx, from_pyg, to_graph
from ldpgraph.transforms import OneBitFeatures, RandomizedResponse

ROOT = Path(__file__).resolve().parents[2]
SMALL = "synthetic:n=120,classes=3,d=8,homophily=0.9"


def _edges(data: Data) -> set[tuple[int, int]]:
    e = data.edge_index.numpy()
    return {(int(u), int(v)) for u, v in e.T if u < v}


def test_import_is_light_and_versioned():
    code = "import sys, ldpgraph; print(ldpgraph.__version__, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    version, torch_loaded = out.stdout.split()
    assert version == ldpgraph.__version__ != "0+unknown"
    assert torch_loaded == "False"
    with pytest.raises(AttributeError):
        ldpgraph.no_such_thing  # noqa: B018


def test_graphs_in_from_pyg_networkx_and_graph_agree():
    data = ldpgraph.load_dataset(SMALL)
    g = from_pyg(data)
    assert g.num_nodes == 120 and g.num_features == 8 and g.y.shape == (120,)
    nxg = nx.Graph()
    nxg.add_nodes_from((v, {"x": data.x[v].numpy(), "y": int(data.y[v])}) for v in range(120))
    nxg.add_edges_from(map(tuple, g.edges))
    h = from_networkx(nxg)
    assert np.array_equal(h.edges, g.edges) and np.array_equal(h.y, g.y)
    assert np.array_equal(h.x, g.x)
    assert to_graph(g) is g
    # Self-loops and both directions collapse to one undirected edge.
    loops = Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 1, 0]]), num_nodes=3)
    assert from_pyg(loops).edges.tolist() == [[0, 1], [0, 2]]
    with pytest.raises(TypeError, match="torch_geometric Data, a networkx graph"):
        to_graph([1, 2, 3])
    with pytest.raises(ValueError, match="out of range"):
        from_pyg(Data(edge_index=torch.tensor([[0], [5]]), num_nodes=3))


def test_release_on_a_pyg_graph_returns_a_data_with_its_privacy():
    data = ldpgraph.load_dataset(SMALL)
    a = ldpgraph.release(data, protocol="hogs", epsilon=8, seed=3)
    b = ldpgraph.release(data, protocol="hogs", epsilon=8, seed=3)
    assert isinstance(a, Data) and a.num_nodes == 120 and a.x.shape == (120, 8)
    assert _edges(a) == _edges(b)  # seeded: replayable
    assert a.privacy.protocol == "hogs" and math.isclose(a.privacy.epsilon, 8.0, abs_tol=1e-3)
    assert torch.equal(a.y, data.y)
    result = ldpgraph.train(a, labels=data.y, epochs=30)
    assert 0.0 <= result["test_acc"] <= 1.0
    raw = ldpgraph.release(data, protocol="hogs", epsilon=8, as_data=False)
    assert raw.kind == "graph" and raw.stats["replayable"] is False


def test_unseeded_releases_differ():
    data = ldpgraph.load_dataset(SMALL)
    a = ldpgraph.release(data, protocol="rr", epsilon=1)
    b = ldpgraph.release(data, protocol="rr", epsilon=1)
    assert _edges(a) != _edges(b)


def test_release_runs_a_central_strategy_on_a_networkx_graph():
    out = ldpgraph.release(nx.karate_club_graph(), protocol="edgerand", epsilon=2.0, seed=1)
    assert out.num_nodes == 34 and out.privacy.unit == "edge"


def test_run_result_dict_is_the_cli_json(tmp_path):
    settings = ["--dataset", SMALL, "--protocol", "hogs", "--epsilon", "4", "--backend",
                "local", "--epochs", "10", "--seed", "2"]  # fmt: skip
    cli = subprocess.run(
        [sys.executable, "-m", "ldpgraph.simulation.cli", "run", *settings, "--json", "--quiet"],
        capture_output=True, text=True, check=True, env={**os.environ},
    )  # fmt: skip
    record = json.loads(cli.stdout[cli.stdout.index("{") :])
    result = ldpgraph.run(
        dataset=SMALL, protocol="hogs", epsilon=4, backend="local", epochs=10, seed=2
    )
    mine = result.to_dict()
    assert mine["fingerprint"] == record["fingerprint"]
    assert mine["accuracy"] == record["accuracy"]
    assert mine["privacy"] == record["privacy"]
    assert mine["config"] == record["config"]


def test_results_load_reads_a_store_without_changing_it(tmp_path):
    pd = pytest.importorskip("pandas")
    store = tmp_path / "runs.db"
    ldpgraph.run(dataset=SMALL, protocol="hogs", epsilon=4, backend="local", epochs=5,
                 seed=0, store=store)  # fmt: skip
    before = store.read_bytes()
    table = ldpgraph.results.load(store)
    assert isinstance(table, pd.DataFrame) and len(table) == 1
    assert {"protocol", "epsilon", "accuracy.test", "privacy.epsilon"} <= set(table.columns)
    assert table["protocol"].tolist() == ["hogs"]
    assert store.read_bytes() == before  # read-only: SQLite may add its -shm/-wal side files
    rows = ldpgraph.results.load(store, as_frame=False, protocol="rr")
    assert rows == []


def _pairs_reported(data: Data, n: int) -> np.ndarray:
    return np.array([[u, v] for u, v in _edges(data)]).reshape(-1, 2)


@pytest.mark.parametrize(("combine", "complete"), [("or", False), ("and", True)])
def test_randomized_response_transform_rates(combine, complete):
    """Each bit of each row flips with p = 1/(e^ε+1): an absent pair appears (OR) with
    1 − (1−p)², a present pair survives (AND) with (1−p)²; 99.9 % binomial intervals."""
    n, eps = 160, 1.5
    pairs = np.array([(u, v) for u in range(n) for v in range(u + 1, n)])
    edges = pairs if complete else np.zeros((0, 2), dtype=np.int64)
    g = Graph("t", edges, np.ones((n, 1), dtype=np.uint8), np.zeros(n, dtype=np.int64))
    data = Data(edge_index=torch.as_tensor(g.edge_index()), x=torch.ones(n, 1), num_nodes=n)
    out = RandomizedResponse(eps, combine=combine)(data)
    p = 1.0 / (math.exp(eps) + 1.0)
    rate = 1 - (1 - p) ** 2 if combine == "or" else (1 - p) ** 2
    k, total = len(_edges(out)), len(pairs)
    lo, hi = stats.binom.interval(0.999, total, rate)
    assert lo <= k <= hi, (k, total * rate)
    assert out.privacy[-1]["epsilon"] == pytest.approx(eps, abs=1e-3)


def test_one_bit_transform_rates_and_debias():
    n, d, eps = 400, 50, 1.0
    x = torch.zeros(n, d)
    x[:, : d // 2] = 1.0
    out = OneBitFeatures(eps, seed=5)(Data(x=x, num_nodes=n))
    p = 1.0 / (math.exp(eps) + 1.0)
    ones_from_zero = int(out.x[:, d // 2 :].sum())
    ones_from_one = int(out.x[:, : d // 2].sum())
    m = n * (d // 2)
    for k, rate in ((ones_from_zero, p), (ones_from_one, 1 - p)):
        lo, hi = stats.binom.interval(0.999, m, rate)
        assert lo <= k <= hi
    debiased = OneBitFeatures(eps, debias=True)(Data(x=x, num_nodes=n)).x
    assert abs(float(debiased[:, : d // 2].mean()) - 1.0) < 0.1
    assert abs(float(debiased[:, d // 2 :].mean())) < 0.1
    again = OneBitFeatures(eps, seed=5)(Data(x=x, num_nodes=n))
    assert torch.equal(again.x, out.x)
    with pytest.raises(ValueError, match="outside the declared domain"):
        OneBitFeatures(eps)(Data(x=x * 3, num_nodes=n))


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "examples").glob("*.py")))
def test_examples_run(script):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)],
        capture_output=True, text=True, timeout=600, cwd=ROOT / "examples",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ε" in out.stdout
