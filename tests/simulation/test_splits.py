"""Tests of the seeded node splits."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.simulation.splits import Split, make_split


def split_sizes(split: Split) -> tuple[int, int, int]:
    return split.train.size, split.val.size, split.test.size


@pytest.mark.parametrize(
    ("n", "train", "val", "sizes"),
    [
        (1000, 0.5, 0.25, (500, 250, 250)),
        (2708, 0.1, 0.1, (271, 271, 2166)),
        (7, 0.5, 0.5, (4, 3, 0)),
        (5, 0.5, 0.25, (3, 1, 1)),
        (10, 0.7, 0.3, (7, 3, 0)),
    ],
)
def test_sizes_disjoint_sorted(
    n: int, train: float, val: float, sizes: tuple[int, int, int]
) -> None:
    s = make_split(n, seed=0, train=train, val=val)
    assert split_sizes(s) == sizes
    parts = (s.train, s.val, s.test)
    for idx in parts:
        assert idx.dtype == np.int64 and (np.diff(idx) > 0).all()
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(n))  # disjoint and complete


def test_defaults() -> None:
    assert split_sizes(make_split(100, seed=1)) == (50, 25, 25)


def test_determinism() -> None:
    a, b, c = make_split(500, 3), make_split(500, 3), make_split(500, 4)
    assert all(
        np.array_equal(x, y)
        for x, y in zip((a.train, a.val, a.test), (b.train, b.val, b.test), strict=True)
    )
    assert not np.array_equal(a.train, c.train)


def test_edge_cases() -> None:
    assert split_sizes(make_split(0, 0)) == (0, 0, 0)
    assert split_sizes(make_split(10, 0, train=1.0, val=0.0)) == (10, 0, 0)
    assert split_sizes(make_split(10, 0, train=0.0, val=0.0)) == (0, 0, 10)
    assert isinstance(make_split(3, 0), Split)


@pytest.mark.parametrize(
    ("train", "val", "match"),
    [
        (-0.1, 0.2, "train fraction"),
        (0.5, 1.5, "val fraction"),
        (0.7, 0.4, "train \\+ val"),
        (float("nan"), 0.1, "train fraction"),
    ],
)
def test_bad_fractions(train: float, val: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_split(100, 0, train=train, val=val)


def test_bad_num_nodes() -> None:
    with pytest.raises(ValueError, match="num_nodes"):
        make_split(-1, 0)


def test_blinkgnn_split_is_sklearns_train_test_split_with_random_state_42():
    """Blink_GNN's fixed split. The expected sets were produced by scikit-learn 1.9:
    ``train_test_split(arange(20), test_size=0.5, random_state=42)`` and the same call on the
    rest; Cora and CiteSeer sizes as in Blink_GNN."""
    from ldpgraph.simulation.splits import blinkgnn_split, split_for

    s = blinkgnn_split(20)
    assert s.train.tolist() == [2, 4, 6, 7, 9, 10, 12, 13, 14, 19]
    assert s.val.tolist() == [1, 8, 11, 15, 16]
    assert s.test.tolist() == [0, 3, 5, 17, 18]
    assert split_sizes(blinkgnn_split(2708)) == (1354, 677, 677)
    assert split_sizes(blinkgnn_split(3327)) == (1663, 832, 832)
    # One split for every run: the seed plays no part.
    a, b = split_for(500, 1, mode="blinkgnn"), split_for(500, 2, mode="blinkgnn")
    assert a.train.tolist() == b.train.tolist() and a.test.tolist() == b.test.tolist()
    with pytest.raises(ValueError, match="unknown split mode"):
        split_for(10, 0, mode="fixed")


def test_blinkgnn_split_edges_of_the_validation_share():
    """No validation share or all the rest: no second draw (scikit-learn refuses test_size 0
    and 1); the training set is the first draw's either way. A graph too small for a set is a
    one-line error."""
    from ldpgraph.simulation.splits import blinkgnn_split

    none, rest = blinkgnn_split(40, 0.5, 0.0), blinkgnn_split(40, 0.5, 0.5)
    assert none.train.tolist() == rest.train.tolist() == blinkgnn_split(40).train.tolist()
    assert none.val.size == 0 and none.test.tolist() == rest.val.tolist()
    assert rest.test.size == 0 and split_sizes(rest) == (20, 20, 0)
    with pytest.raises(ValueError, match="4 nodes are too few, the validation set"):
        blinkgnn_split(4, 0.8, 0.1)
    with pytest.raises(ValueError, match="4 nodes are too few, the training set"):
        blinkgnn_split(4, 0.1, 0.1)


def _four_communities(seed: int = 0) -> tuple[int, np.ndarray]:
    """Five dense blocks of 40 nodes with a few edges between neighbouring blocks."""
    rng = np.random.default_rng(seed)
    n, size = 200, 40
    block = np.arange(n) // size
    u, v = np.triu_indices(n, 1)
    same = block[u] == block[v]
    p = np.where(same, 0.3, np.where(np.abs(block[u] - block[v]) == 1, 0.005, 0.0))
    keep = rng.random(u.size) < p
    return n, np.stack([u[keep], v[keep]], 1).astype(np.int64)


def test_metis_split_holds_out_one_cohesive_part_fixed_for_every_seed() -> None:
    from ldpgraph.simulation.splits import metis_split, split_for

    n, edges = _four_communities()
    a = split_for(n, 0, 0.8, 0.1, "metis", edges)
    b = metis_split(n, edges, 1, 0.8, 0.1)
    held_a = np.union1d(a.val, a.test)
    # Disjoint, covering, sorted.
    assert np.array_equal(np.sort(np.concatenate([a.train, held_a])), np.arange(n))
    assert np.intersect1d(a.train, held_a).size == 0 and np.intersect1d(a.val, a.test).size == 0
    # The held-out part is one of the five blocks (METIS finds them) and the same for every
    # seed; the seed only moves nodes between validation and test, half and half here.
    assert held_a.size == 40 and len(set(held_a // 40)) == 1
    assert np.array_equal(held_a, np.union1d(b.val, b.test))
    assert not np.array_equal(a.val, b.val)
    assert a.val.size == 20 and a.test.size == 20


def test_metis_split_errors() -> None:
    from ldpgraph.simulation.config import ConfigError, RunConfig
    from ldpgraph.simulation.splits import metis_parts, split_for

    assert metis_parts(0.8) == 5 and metis_parts(0.5) == 2 and metis_parts(0.75) == 4
    with pytest.raises(ValueError, match="whole number"):
        metis_parts(0.7)
    with pytest.raises(ValueError, match="curator file has none"):
        split_for(10, 0, 0.8, 0.1, "metis", None)
    with pytest.raises(ValueError, match="val-split must be in"):
        split_for(10, 0, 0.8, 0.2, "metis", np.array([[0, 1]]))
    with pytest.raises(ConfigError, match="whole number") as err:
        RunConfig.from_mapping({"split_mode": "metis", "train_split": 0.7, "val_split": 0.1})
    assert "\n" not in str(err.value)
