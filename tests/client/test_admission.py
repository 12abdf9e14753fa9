"""Admitting many nodes at once (the ``local`` backend's :func:`admit_many`) decides exactly what
:meth:`Book.admit` decides node by node: the same admissions, refusals, reasons and spends,
round after round; and the JSON ledger file of deployment is unchanged."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ldpgraph.client import books
from ldpgraph.client.budget import (
    BAD_COST,
    MIN_CHARGE,
    NO_BUDGET,
    NO_TRUST,
    OVER_BUDGET,
    REPLAY,
    TOLERANCE,
    ArrayBook,
    Book,
    Ledger,
    NodeSettings,
    Refusal,
    admit_many,
    admit_nodes,
)
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.backends.local import LocalCollector
from ldpgraph.simulation.datasets.synthetic import synthetic_graph


def by_node(book: Book, nodes, cost, round_, settings, raw_upload):
    """The reference: :meth:`Book.admit` one node after the other."""
    admitted, refused = [], {}
    for node in nodes:
        try:
            book.admit(int(node), cost, round_, settings, raw_upload)
            admitted.append(int(node))
        except Refusal as exc:
            refused[int(node)] = str(exc)
    return admitted, refused


def assert_same_books(book: Book, ledger: Ledger, n: int) -> None:
    for node in range(n):
        assert ledger.spent(node) == book.spent_of(node)  # exactly: the same float64 sums
    arrays = ledger._memory
    rounds = {
        str(node): [r for r, mask in sorted(arrays.seeded_rounds.items()) if mask[node]]
        for node in range(arrays.spent.size)
    }
    assert {k: sorted(v) for k, v in book.seeded_rounds.items()} == {
        k: v for k, v in rounds.items() if v
    }


def step(book, ledger, nodes, cost, round_, settings, raw_upload):
    want = by_node(book, nodes, cost, round_, settings, raw_upload)
    got = admit_many(ledger, np.asarray(nodes, dtype=np.int64), cost, round_, settings, raw_upload)
    assert got.admitted.tolist() == want[0]
    assert got.reasons() == want[1]
    assert got.refused.tolist() == list(want[1])  # in the order asked
    assert sum(got.counts().values()) == len(want[1])
    return got


# Costs that land on and around the budgets below: 0.1 + 0.2 against 0.3 (the tolerance),
# sums that overshoot by less and by more than it, and costs a node must refuse outright.
COSTS = [0.1, 0.2, 0.3, 0.25, 1.0, 1.5, 0.7, 1e-3, MIN_CHARGE, 0.3 + 2 * TOLERANCE]
BAD = [float("nan"), float("inf"), -1.0, 0.0, MIN_CHARGE / 2]


@pytest.mark.parametrize("block", [7, None])
@pytest.mark.parametrize("seed", range(4))
def test_admit_many_decides_as_book_admit_node_by_node(seed, block, monkeypatch):
    if block is not None:  # many blocks, a partial one last
        monkeypatch.setattr(books, "_BLOCK", block)
    rng = np.random.default_rng(seed)
    n = 400
    book, ledger = Book(), Ledger(None, "g")
    node_budget = float(rng.choice([0.3, 1.0, 2.0, 3.3]))
    for _ in range(40):
        kind = rng.random()
        settings = NodeSettings(
            budget=None if kind < 0.05 else node_budget,
            trust_curator=bool(rng.random() < 0.5),
            seed=int(rng.integers(1 << 30)) if rng.random() < 0.5 else None,
        )
        raw = bool(rng.random() < 0.1)
        cost = float(rng.choice(BAD)) if rng.random() < 0.1 else float(rng.choice(COSTS))
        # Some rounds come again (a pinned seed must not answer twice); subsets in any order.
        r = int(rng.integers(0, 6))
        nodes = rng.permutation(n)[: int(rng.integers(0, n + 1))]
        step(book, ledger, nodes, cost, r, settings, raw)
    assert_same_books(book, ledger, n)
    assert any(book.spent.values())


def test_a_second_run_is_refused_for_its_budget_and_a_seeded_round_for_replay():
    settings = NodeSettings(budget=1.0, seed=3)
    book, ledger = Book(), Ledger(None, "local")
    nodes = np.arange(50)
    # Half the nodes spent 0.7 earlier; a round of 0.3 fits all (0.7 + 0.3 within TOLERANCE).
    step(book, ledger, nodes[::2], 0.7, 0, settings, False)
    got = step(book, ledger, nodes, 0.3, 1, settings, False)
    assert got.admitted.size == 50
    assert ledger.spent(0) == 0.7 + 0.3 and ledger.spent(1) == 0.3
    # The same round again: refused for replay (before the budget is even looked at).
    got = step(book, ledger, nodes, 0.1, 1, settings, False)
    assert got.admitted.size == 0 and got.counts() == {REPLAY: 50}
    # A second run's first round: the even nodes are over budget, the odd ones admitted.
    got = step(book, ledger, nodes, 0.7, 2, settings, False)
    assert got.refused.tolist() == nodes[::2].tolist()
    assert got.counts() == {OVER_BUDGET: 25}
    assert "exceeds its budget 1" in got.reason(0)
    assert ledger.spent(0) == 0.7 + 0.3 and ledger.spent(1) == 0.3 + 0.7
    assert_same_books(book, ledger, 50)


def test_refusals_that_do_not_depend_on_the_ledger():
    nodes = np.arange(5)
    ledger = Ledger(None, "g")
    for settings, cost, raw, code in [
        (NodeSettings(budget=None), 1.0, False, NO_BUDGET),
        (NodeSettings(budget=9.0), float("nan"), False, BAD_COST),
        (NodeSettings(budget=9.0), MIN_CHARGE / 2, False, BAD_COST),
        (NodeSettings(budget=9.0, trust_curator=False), math.inf, True, NO_TRUST),
    ]:
        got = admit_many(ledger, nodes, cost, 0, settings, raw)
        assert got.admitted.size == 0 and got.counts() == {code: 5}
    got = admit_many(
        ledger, nodes, math.inf, 0, NodeSettings(budget=None, trust_curator=True), True
    )
    assert got.admitted.tolist() == nodes.tolist()  # trusted raw upload: outside the budget
    assert all(ledger.spent(int(v)) == 0.0 for v in nodes)


def test_a_node_asked_twice_or_a_negative_id_raises_and_charges_nothing():
    ledger = Ledger(None, "g")
    settings = NodeSettings(budget=1.0)
    with pytest.raises(ValueError, match="twice"):
        admit_many(ledger, np.array([3, 1, 3]), 0.5, 0, settings, False)
    with pytest.raises(ValueError, match=">= 0"):
        admit_many(ledger, np.array([-1, 2]), 0.5, 0, settings, False)
    with pytest.raises(ValueError, match="integer"):
        admit_many(ledger, np.array([1.0, 2.0]), 0.5, 0, settings, False)
    assert ledger._memory.spent.sum() == 0
    # admit_nodes still takes a repeated node one by one, as Book.admit does.
    book = Book()
    want = by_node(book, [3, 1, 3, 3], 0.4, 0, settings, False)
    assert admit_nodes(ledger, [3, 1, 3, 3], 0.4, 0, settings, False) == want
    assert ledger.spent(3) == book.spent_of(3) == 0.8


def test_the_in_memory_ledger_costs_an_array():
    ledger = Ledger(None, "g")
    nodes = np.arange(100_000)
    got = admit_many(ledger, nodes, 0.5, 0, NodeSettings(budget=1.0, seed=1), False)
    assert got.admitted.size == nodes.size
    book = ledger._memory
    assert isinstance(book, ArrayBook)
    assert book.spent.nbytes + sum(m.nbytes for m in book.seeded_rounds.values()) == 9 * 100_000
    assert ledger.spent(99_999) == 0.5 and ledger.spent(100_000) == 0.0


FILE_OPS = [  # (nodes, cost, round, settings, raw)
    ([0, 1, 2], 0.1, 0, NodeSettings(budget=0.3, seed=2), False),
    ([2, 0, 5], 0.2, 1, NodeSettings(budget=0.3, seed=2), False),
    ([0, 1], 0.2, 1, NodeSettings(budget=0.3, seed=2), False),  # 0: replay; 1: 0.1 + 0.2
    ([1, 5], 0.25, 2, NodeSettings(budget=0.3, seed=2), False),  # both over budget
    ([7], 0.3, 0, NodeSettings(budget=0.3), False),
]
# What the ledger file held after FILE_OPS before admit_many existed (byte for byte).
FILE_BYTES = (
    '{"format": "ldpgraph-ledger", "graphs": {"g": {"seeded_rounds": {"0": [0, 1], '
    '"1": [0, 1], "2": [0, 1], "5": [1]}, "spent": {"0": 0.30000000000000004, '
    '"1": 0.30000000000000004, "2": 0.30000000000000004, "5": 0.2, "7": 0.3}}}, "version": 1}'
)


def test_the_ledger_file_is_unchanged_and_re_read(tmp_path):
    path = tmp_path / "ledger.json"
    book = Book()
    for nodes, cost, round_, settings, raw in FILE_OPS:
        want = by_node(book, nodes, cost, round_, settings, raw)
        got = admit_many(Ledger(path, "g"), np.asarray(nodes), cost, round_, settings, raw)
        assert (got.admitted.tolist(), got.reasons()) == want
    assert path.read_text() == FILE_BYTES
    assert json.loads(path.read_text())["graphs"]["g"]["spent"] == book.spent
    # A fresh reader (a restarted node) sees the spends and refuses what no longer fits.
    again = Ledger(path, "g")
    assert again.spent(0) == book.spent_of(0) and again.spent(9) == 0.0
    got = admit_many(again, np.array([0, 9]), 0.3, 3, NodeSettings(budget=0.3), False)
    assert got.admitted.tolist() == [9] and "exceeds its budget" in got.reason(0)


def test_the_local_backend_keeps_each_nodes_spend_across_runs():
    graph = synthetic_graph(n=300, avg_degree=6.0, d=8, seed=1)
    proto = make_protocol("hogs", epsilon=2.0)
    collector = LocalCollector(graph, 0, NodeSettings(budget=3.0, seed=0), workers=1)
    message = RoundMessage.report(0, proto.config())
    assert collector.collect(proto, message, None).stats.replied == 300
    assert all(collector.ledger.spent(v) == 2.0 for v in range(300))
    again = collector.collect(proto, message, None).stats
    assert again.replied == 0 and again.refused == 300  # the seeded round, and over budget
