"""Train/validation/test node splits.

``seeded`` (the default): the split depends only on (number of nodes, seed, fractions): it is
drawn from the ``"split"`` stage stream, so every backend and every protocol sees the same nodes
in the same split for a given run seed, and changing any other random stage never moves a node
between sets.

``blinkgnn``: Blink_GNN's one fixed split for every run (https://github.com/zhxchd/Blink_GNN,
the official code of Blink, Zhu, Tan and Xiao, ACM CCS 2023), which made the BLink numbers
HoGS's Table III quotes: scikit-learn's ``train_test_split`` with
``random_state=42``, once for train against the rest and once more on the rest for validation
against test; called here as Blink_GNN calls it.

``metis``: DPAR's reference split (its authors' code): METIS cuts the whole graph into
k = 1/(1 − train) parts (5 for the paper's 80 %) with METIS seed 0, and the last part (index
k − 1: the reference's part 4 of 5) is held out; the rest is training. The held-out part is a
cohesive cluster, so an inductive method's test graph keeps its internal edges (a random 20 %
keeps about 4 % of them). The partition is fixed for every run seed, as in the reference;
the seed only divides the held-out part into validation and test, in proportion ``val`` :
``1 − train − val``. The partition is a function of the whole graph's edges, computed without
privacy: it is a reproduction aid, not part of any mechanism's guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported in the functions: the run's schema reads SPLIT_MODES, no NumPy
    import numpy as np


@dataclass(frozen=True)
class Split:
    """Disjoint, sorted int64 node-index arrays."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


#: ``RunConfig.split_mode`` values.
SPLIT_MODES = ("seeded", "blinkgnn", "metis")
#: ``random_state`` of both ``train_test_split`` calls of the ``blinkgnn`` split (Blink_GNN's).
BLINKGNN_SEED = 42
#: The METIS seed of the ``metis`` split (the reference code's).
METIS_SEED = 0


def _train_test_split(
    ids: np.ndarray, test_size: float, kept: str, num_nodes: int
) -> tuple[np.ndarray, np.ndarray]:
    """``train_test_split(ids, test_size=..., random_state=42)``; a one-line error where a
    graph this small leaves the ``kept`` set empty (scikit-learn refuses it)."""
    from sklearn.model_selection import train_test_split

    try:
        return tuple(train_test_split(ids, test_size=test_size, random_state=BLINKGNN_SEED))
    except ValueError:
        raise ValueError(
            f"blinkgnn split: {num_nodes} nodes are too few, the {kept} set would be empty"
        ) from None


def blinkgnn_split(num_nodes: int, train: float = 0.5, val: float = 0.25) -> Split:
    """Blink_GNN's fixed split (independent of the run seed); see the module docstring. A
    validation share of 0 or of all the rest needs no second draw (scikit-learn refuses a
    ``test_size`` of 0 or 1)."""
    import numpy as np

    if not (0.0 < train < 1.0 and 0.0 <= val and train + val <= 1.0):
        raise ValueError(
            f"blinkgnn split needs 0 < train < 1 and train + val <= 1, got {train}, {val}"
        )
    ids = np.arange(int(num_nodes), dtype=np.int64)
    tr, rest = _train_test_split(ids, 1.0 - train, "training", num_nodes)
    rest_test = (1.0 - train - val) / (1.0 - train)
    if rest_test <= 0.0:
        va, te = rest, rest[:0]
    elif rest_test >= 1.0:
        va, te = rest[:0], rest
    else:
        va, te = _train_test_split(rest, rest_test, "validation", num_nodes)
    return Split(train=np.sort(tr), val=np.sort(va), test=np.sort(te))


def split_for(
    num_nodes: int,
    seed: int,
    train: float = 0.5,
    val: float = 0.25,
    mode: str = "seeded",
    edges: np.ndarray | None = None,
) -> Split:
    """The split a run uses: :func:`make_split`, :func:`blinkgnn_split` or :func:`metis_split`
    by ``mode`` (``metis`` needs the graph's ``edges``)."""
    if mode == "blinkgnn":
        return blinkgnn_split(num_nodes, train, val)
    if mode == "metis":
        if edges is None:
            raise ValueError(
                "split-mode metis partitions the graph's edges, which this server does not "
                "hold (a deployment's curator file has none); use split-mode seeded"
            )
        return metis_split(num_nodes, edges, seed, train, val)
    if mode != "seeded":
        raise ValueError(f"unknown split mode {mode!r}; choose one of: {', '.join(SPLIT_MODES)}")
    return make_split(num_nodes, seed, train, val)


def make_split(num_nodes: int, seed: int, train: float = 0.5, val: float = 0.25) -> Split:
    """A random split of ``range(num_nodes)`` into train / val / test.

    Sizes: ``round(train * n)`` training nodes, ``round((train + val) * n) - n_train``
    validation nodes (halves rounded up), the rest test. Raises ValueError for fractions outside
    [0, 1] or summing above 1.
    """
    import numpy as np

    from ldpgraph.protocols.rng import stage_rng

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


def metis_parts(train: float) -> int:
    """The number of METIS parts of a ``metis`` split: 1/(1 − train), which must be a whole
    number (0.8 → 5, the reference's; 0.5 → 2)."""
    if not 0.0 < train < 1.0:
        raise ValueError(f"split-mode metis needs 0 < train-split < 1, got {train}")
    parts = round(1.0 / (1.0 - train))
    if parts < 2 or abs(parts * (1.0 - train) - 1.0) > 1e-6:
        raise ValueError(
            f"split-mode metis holds out one of 1/(1 − train-split) METIS parts, so "
            f"1/(1 − {train}) must be a whole number (e.g. train-split 0.8 → 5 parts)"
        )
    return parts


def metis_partition(num_nodes: int, edges: np.ndarray, parts: int) -> np.ndarray:
    """The part of every node under METIS k-way (pymetis, METIS seed :data:`METIS_SEED`)."""
    import numpy as np

    try:
        import pymetis
    except ImportError:  # pragma: no cover - a declared dependency
        raise ValueError("split-mode metis needs pymetis (pip install pymetis)") from None
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edges = edges[edges[:, 0] != edges[:, 1]]
    both = np.concatenate([edges, edges[:, ::-1]])
    both = np.unique(both, axis=0)
    xadj = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(both[:, 0], minlength=num_nodes), out=xadj[1:])
    opts = pymetis.Options(seed=METIS_SEED)
    adjacency = pymetis.CSRAdjacency(xadj.tolist(), both[:, 1].tolist())
    _cuts, membership = pymetis.part_graph(parts, adjacency, options=opts)
    return np.asarray(membership, dtype=np.int64)


def metis_split(
    num_nodes: int, edges: np.ndarray, seed: int, train: float = 0.8, val: float = 0.1
) -> Split:
    """DPAR's reference split (module docstring): the last of 1/(1 − train) METIS parts held
    out, divided at random by ``seed`` into validation and test."""
    import numpy as np

    from ldpgraph.protocols.rng import stage_rng

    parts = metis_parts(train)
    if not 0.0 <= val < 1.0 - train:
        raise ValueError(
            f"split-mode metis divides the held-out part into validation and test: val-split "
            f"must be in [0, {1.0 - train:g}), got {val}"
        )
    membership = metis_partition(num_nodes, edges, parts)
    held = np.flatnonzero(membership == parts - 1)
    perm = stage_rng(seed, "split").permutation(held.size)
    n_val = int(np.floor(val / (1.0 - train) * held.size + 0.5))
    return Split(
        train=np.flatnonzero(membership != parts - 1).astype(np.int64),
        val=np.sort(held[perm[:n_val]]).astype(np.int64),
        test=np.sort(held[perm[n_val:]]).astype(np.int64),
    )
