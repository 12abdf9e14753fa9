"""The training graph built straight from the edge list (server/adjacency.py) against PyG's
route: the same CSR matrix entry for entry, the same GCN normalisation bit for bit, and the
same training results to the bit (the change is memory only). Chunks are shrunk so every loop
crosses several chunk boundaries on these small graphs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_torch_csr_tensor

from ldpgraph.server import adjacency, tensors, training
from ldpgraph.server.training import TrainConfig, train_and_evaluate

from .test_training import make_graph

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(adjacency, "CHUNK", 97)
    monkeypatch.setattr(tensors, "CHUNK", 97)


def pyg_csr(edges: np.ndarray, n: int, weight: np.ndarray | None) -> torch.Tensor:
    """The former route: both directions as int64 ``edge_index``, then PyG's CSR."""
    both = torch.tensor(np.concatenate([edges, edges[:, ::-1]]).T.copy()).reshape(2, -1)
    w = None
    if weight is not None:
        w = torch.tensor(np.concatenate([weight, weight]), dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_torch_csr_tensor(both, w, size=(n, n))


def same_csr(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (
        torch.equal(a.crow_indices().long(), b.crow_indices().long())
        and torch.equal(a.col_indices().long(), b.col_indices().long())
        and torch.equal(a.values().view(torch.int32), b.values().view(torch.int32))
    )


def random_edges(n: int, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pairs = np.sort(rng.integers(0, n, (m, 2)), axis=1)
    keys = np.unique(pairs[:, 0] * n + pairs[:, 1])
    edges = np.stack([keys // n, keys % n], axis=1)
    return edges[edges[:, 0] < edges[:, 1]]


CASES = [(300, 2000, False), (300, 2000, True), (1000, 400, True), (40, 0, False)]


@pytest.mark.parametrize(("n", "m", "weighted"), CASES)
@pytest.mark.parametrize("shuffled", [False, True])
def test_the_csr_and_its_gcn_normalisation_are_pygs_bit_for_bit(n, m, weighted, shuffled):
    edges = random_edges(n, m, seed=n + m)
    rng = np.random.default_rng(1)
    weight = rng.random(len(edges)) * 3 if weighted else None
    ref = pyg_csr(edges, n, weight)
    ref_norm, _ = gcn_norm(ref, None, n, False, True, "source_to_target", torch.float32)
    if shuffled:  # an unsorted (still canonical) edge list is sorted first
        perm = rng.permutation(len(edges))
        edges, weight = edges[perm], None if weight is None else weight[perm]
    mine = adjacency.csr_adjacency(edges, n, CPU, weight)
    assert mine.col_indices().dtype == torch.int32  # half of int64's bytes
    assert same_csr(mine, ref)
    assert same_csr(adjacency.gcn_adjacency(edges, n, CPU, weight), ref_norm)


def test_sorted_unique_scan():
    edges = random_edges(200, 900, seed=3)
    assert adjacency.is_sorted_unique(edges, 200)
    assert not adjacency.is_sorted_unique(edges[::-1], 200)
    dup = np.concatenate([edges[:150], edges[149:]])  # a duplicate at a chunk's edge
    assert not adjacency.is_sorted_unique(dup, 200)
    with pytest.raises(ValueError, match="duplicate"):
        tensors.validate_inputs(dup[::-1], np.ones((200, 2)), np.arange(200) % 2, None, None)


def pyg_graph(model, edges, weight, n, dev):
    """``training._graph`` as it was: PyG's CSR, normalised by each GCN layer itself."""
    if not model.uses_edges:
        return None, None
    if not model.sparse_adjacency:
        return tensors.graph_tensors(edges, weight, n, dev, sparse=False)
    return pyg_csr(edges, n, weight).to(dev), None


@pytest.mark.parametrize("model", ["gcn", "sage", "mlp"])
@pytest.mark.parametrize("weighted", [False, True])
def test_training_gives_the_former_results_to_the_bit(monkeypatch, model, weighted):
    edges, x, y, split = make_graph(n=240)
    weight = np.random.default_rng(2).random(len(edges)) + 0.5 if weighted else None
    cfg = TrainConfig(model=model, epochs=12)

    def run() -> dict:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = train_and_evaluate(edges, x, y, split, cfg, 5, CPU, edge_weight=weight)
        return {k: v for k, v in out.items() if k != "train_seconds"}

    now = run()
    monkeypatch.setattr(training, "_graph", pyg_graph)
    assert now == run()


def test_the_model_sees_the_same_logits(monkeypatch):
    """One GCN, two ways of giving it the graph: the logits agree to the bit."""
    from ldpgraph.server.models import build_model

    edges, x, _, _ = make_graph(n=240)
    x_t = torch.from_numpy(x)
    torch.manual_seed(0)
    a = build_model("gcn", x.shape[1], 3).eval()
    b = build_model("gcn", x.shape[1], 3).eval()
    b.load_state_dict(a.state_dict())
    adj = adjacency.gcn_adjacency(edges, 240, CPU)
    a.use_normalized(adj)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.equal(a(x_t, adj), b(x_t, pyg_csr(edges, 240, None)))
        # A layer reset empties GCNConv's cache: the model must not normalise adj again.
        before = a(x_t, adj)
        a.conv1.reset_parameters()
        a.conv1.load_state_dict(b.conv1.state_dict())
        assert torch.equal(a(x_t, adj), before)


@pytest.mark.parametrize(
    "x",
    [
        np.random.default_rng(0).integers(0, 2, (700, 9), dtype=np.uint8),
        np.random.default_rng(1).random((700, 9)) < 0.3,
        np.random.default_rng(2).random((700, 9)),
        np.random.default_rng(3).random((700, 9)).astype(np.float32),
    ],
    ids=["uint8", "bool", "float64", "float32"],
)
def test_centred_columns_in_blocks_are_the_whole_arrays(x):
    whole = np.asarray(x, dtype=np.float32)
    whole = whole - tensors.column_means(whole)[None, :]
    blocks = tensors.center_columns(x)
    assert blocks.dtype == np.float32
    assert np.array_equal(blocks.view(np.uint32), whole.view(np.uint32))


def test_float32_features_are_shared_not_copied():
    x = np.random.default_rng(0).random((50, 4)).astype(np.float32)
    assert tensors.feature_tensor(x, CPU, sparse=False).data_ptr() == x.ctypes.data
    frozen = x.copy()
    frozen.flags.writeable = False  # torch would warn and alias a read-only array: copy it
    assert tensors.feature_tensor(frozen, CPU, sparse=False).data_ptr() != frozen.ctypes.data
    with pytest.raises(ValueError, match="NaN"):
        bad = x.copy()
        bad[37, 2] = np.nan  # in a later block than the first
        tensors.validate_inputs(np.zeros((0, 2), int), bad, np.arange(50) % 2, None, None)


@pytest.mark.parametrize(
    "edges", [[[2, 1], [0, 3]], [[0, 3], [1, 2], [0, 3]], [[1, 1]]], ids=["u>v", "repeat", "loop"]
)
def test_a_non_canonical_edge_list_is_refused(edges):
    with pytest.raises(ValueError, match="symmetric_csr"):
        adjacency.symmetric_csr(np.array(edges, dtype=np.int64), 5)
