"""Train/validation/test node splits.

``seeded`` (the default): the split depends only on (number of nodes, seed, fractions): it is
drawn from the ``"split"`` stage stream, so every backend and every protocol sees the same nodes
in the same split for a given run seed, and changing any other random stage never moves a node
between sets.

``blinkgnn``: Blink_GNN's one fixed split for every run (https://github.com/zhxchd/Blink_GNN,
the official code of Blink, Zhu, Tan and Xiao, ACM CCS 2023), which made the BLink numbers
HoGS's Table III quotes: scikit-learn's ``train_test_split`` with
``random_state=42``, once for train against the rest and once more on the rest for validation
against test. Reproduced here with NumPy (the same ``RandomState(42).permutation``), so
scikit-learn is not needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldpgraph.protocols.rng import stage_rng


@dataclass(frozen=True)
class Split:
    """Disjoint, sorted int64 node-index arrays."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


#: ``RunConfig.split_mode`` values.
SPLIT_MODES = ("seeded", "blinkgnn")


def _sklearn_train_test_split(ids: np.ndarray, test_size: float) -> tuple[np.ndarray, np.ndarray]:
    """``sklearn.model_selection.train_test_split(ids, test_size=..., random_state=42)``:
    ShuffleSplit takes n_test = ceil(test_size · n), permutes with RandomState(42), and returns
    (ids[perm[n_test:]], ids[perm[:n_test]])."""
    n = ids.shape[0]
    n_test = int(np.ceil(test_size * n))
    perm = np.random.RandomState(42).permutation(n)
    return ids[perm[n_test:]], ids[perm[:n_test]]


def blinkgnn_split(num_nodes: int, train: float = 0.5, val: float = 0.25) -> Split:
    """Blink_GNN's fixed split (independent of the run seed); see the module docstring."""
    if not (0.0 < train < 1.0 and 0.0 <= val and train + val <= 1.0):
        raise ValueError(
            f"blinkgnn split needs 0 < train < 1 and train + val <= 1, got {train}, {val}"
        )
    ids = np.arange(int(num_nodes), dtype=np.int64)
    tr, rest = _sklearn_train_test_split(ids, 1.0 - train)
    rest_test = (1.0 - train - val) / (1.0 - train)
    va, te = _sklearn_train_test_split(rest, rest_test) if rest.size else (rest, rest)
    return Split(train=np.sort(tr), val=np.sort(va), test=np.sort(te))


def split_for(
    num_nodes: int, seed: int, train: float = 0.5, val: float = 0.25, mode: str = "seeded"
) -> Split:
    """The split a run uses: :func:`make_split` or :func:`blinkgnn_split` by ``mode``."""
    if mode == "blinkgnn":
        return blinkgnn_split(num_nodes, train, val)
    if mode != "seeded":
        raise ValueError(f"unknown split mode {mode!r}; choose one of: {', '.join(SPLIT_MODES)}")
    return make_split(num_nodes, seed, train, val)


def make_split(num_nodes: int, seed: int, train: float = 0.5, val: float = 0.25) -> Split:
    """A random split of ``range(num_nodes)`` into train / val / test.

    Sizes: ``round(train * n)`` training nodes, ``round((train + val) * n) - n_train``
    validation nodes (halves rounded up), the rest test. Raises ValueError for fractions outside
    [0, 1] or summing above 1.
    """
    if isinstance(num_nodes, bool) or int(num_nodes) != num_nodes or num_nodes < 0:
        raise ValueError(f"num_nodes must be a non-negative integer, got {num_nodes!r}")
    for label, frac in (("train", train), ("val", val)):
        if not 0.0 <= float(frac) <= 1.0:
            raise ValueError(f"{label} fraction must be in [0, 1], got {frac!r}")
    if float(train) + float(val) > 1.0 + 1e-12:
        raise ValueError(f"train + val fractions must be <= 1, got {train} + {val}")
    n = int(num_nodes)
    # Round the cumulative boundaries half-up, so train + val = 1 leaves exactly no test nodes.
    n_train = min(int(np.floor(train * n + 0.5)), n)
    n_val = min(int(np.floor((train + val) * n + 0.5)), n) - n_train
    perm = stage_rng(seed, "split").permutation(n).astype(np.int64)
    return Split(
        train=np.sort(perm[:n_train]),
        val=np.sort(perm[n_train : n_train + n_val]),
        test=np.sort(perm[n_train + n_val :]),
    )
