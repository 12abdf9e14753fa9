"""The node's own unit and caps: a per-vector node is charged the composition over its whole
row and feature vector, a request beyond a cap is refused uncharged, and the simulated and
deployed guards decide alike in either unit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from flwr.app import Context, RecordDict

from ldpgraph.client import app as client_app
from ldpgraph.client.budget import ArrayBook, Book, NodeSettings, Refusal
from ldpgraph.client.ledger import verified
from ldpgraph.client.nodedata import open_store
from ldpgraph.client.units import Charge, cap_reason, round_charge
from ldpgraph.protocols.registry import make_protocol, protocol_info, protocol_names
from ldpgraph.protocols.reports import node_record_name
from ldpgraph.server.rounds import NoReportsError
from ldpgraph.simulation.backends.local import run_protocol
from ldpgraph.simulation.pipeline import curator_view

from .conftest import NODES, D, N


def ask(node_file, epsilon=8.0, feature_share=0.1, **node_config) -> list[int]:
    meta = json.loads((node_file / "meta.json").read_text())
    cfg = {"data-file": str(node_file), "budget": 8.0, **node_config}
    ctx = Context(run_id=1, node_id=7, node_config=cfg, state=RecordDict(), run_config={})
    proto = make_protocol("hogs", epsilon=epsilon, feature_share=feature_share)
    msg = {"op": "report", "round": 0, "num-nodes": N, "partition": meta["partition"],
           **proto.config()}  # fmt: skip
    records = client_app.answer(msg, ctx)
    return [n for n in NODES if "refused" not in dict(records[node_record_name(n)])]


def charged(node_file) -> list[dict]:
    store = open_store(str(node_file))
    fps = [store.fingerprint(n) for n in NODES]
    ledger, witness = client_app.default_ledger(), client_app.default_witness()
    return [verified(ledger, witness, fp).spent for fp in fps]


# -- what a round costs in each unit ------------------------------------------------------------


def ldp_protocols():
    for name in protocol_names():
        proto = make_protocol(name)
        if not proto.raw_upload:
            yield name, proto


@pytest.mark.parametrize("name", [n for n, _ in ldp_protocols()])
def test_every_ldp_protocol_states_its_parts(name):
    """Per bit, a round costs its ε, the sum of its two parts; per vector, the composition over
    the n − 1 row bits and the d features."""
    proto = make_protocol(name, **({"feature_share": 0.3} if "feature_share" in
                                   protocol_info(name).param_names else {}))  # fmt: skip
    for r in range(proto.rounds):
        parts = proto.epsilon_parts(r)
        assert parts is not None
        assert parts.adjacency_bit + parts.feature_bit == pytest.approx(proto.round_epsilon(r))
        charge = round_charge(proto, r, 100, 20)
        assert charge.per_bit == proto.round_epsilon(r)
        assert charge.per_vector == pytest.approx(99 * parts.adjacency_bit + 20 * parts.feature_bit)


def test_hogs_per_vector_charge_is_the_closed_form():
    proto = make_protocol("hogs", epsilon=8.0, feature_share=0.99)
    charge = round_charge(proto, 0, 2708, 1433)
    assert charge.per_vector == pytest.approx(2707 * 0.08 + 1433 * 7.92)
    assert charge.per_bit == pytest.approx(8.0)


def test_an_unstated_protocol_is_unknown_per_vector():
    class Opaque:
        def round_epsilon(self, round_):
            return 1.0

        def epsilon_parts(self, round_):
            return None

    charge = round_charge(Opaque(), 0, 10, 3)
    assert charge.per_bit == 1.0 and math.isinf(charge.per_vector)
    settings = NodeSettings(budget=1e9, max_feature_share=0.5)
    assert "does not state" in cap_reason(charge, settings)


# -- a deployed node: per vector by default, caps refuse uncharged ----------------------------


def test_the_feature_share_attack_is_refused_by_a_default_node(node_file):
    """The re-audit's --feature-share 0.99 at ε = 8 against a node budget of 8: a deployed
    node counts per vector by default, and refuses, charging nothing."""
    assert ask(node_file, feature_share=0.99) == []
    assert not list(client_app.default_ledger().glob("*/*.log"))


def test_a_per_vector_node_is_charged_its_whole_data(node_file):
    proto = make_protocol("hogs", epsilon=1.0, feature_share=0.5)
    expected = (N - 1) * 0.5 + D * 0.5
    assert ask(node_file, epsilon=1.0, feature_share=0.5, budget=expected) == list(NODES)
    for spent in charged(node_file):
        assert spent == {"per-bit": proto.round_epsilon(0), "per-vector": expected}
    assert ask(node_file, epsilon=1.0, feature_share=0.5, budget=expected) == []
    # Counted per bit, the same ledger holds 1.0 spent (of the same rounds, in that unit).
    assert ask(node_file, epsilon=1.0, feature_share=0.5, budget=1.5, unit="per-bit") == []
    assert ask(node_file, epsilon=0.5, feature_share=0.5, budget=1.5, unit="per-bit") == list(NODES)


@pytest.mark.parametrize(
    "caps,share,epsilon,ok",
    [
        ({"max-feature-share": 0.5}, 0.99, 8.0, False),
        ({"max-feature-share": 0.5}, 0.1, 8.0, True),
        ({"max-epsilon-features": 0.5}, 0.1, 8.0, False),
        ({"max-epsilon-features": 0.5}, 0.1, 4.0, True),
        ({"max-epsilon-adjacency": 3.0}, 0.1, 4.0, False),
        ({"max-epsilon-adjacency": 3.0}, 0.5, 4.0, True),
    ],
)
def test_caps_refuse_uncharged(node_file, caps, share, epsilon, ok):
    got = ask(node_file, epsilon=epsilon, feature_share=share, unit="per-bit", **caps)
    assert got == (list(NODES) if ok else [])
    assert bool(list(client_app.default_ledger().glob("*/*.log"))) == ok


# -- the simulated and deployed guards decide alike ----------------------------------------------


@pytest.mark.parametrize("unit", ["per-bit", "per-vector"])
def test_array_book_and_book_decide_alike_in_either_unit(unit):
    rng = np.random.default_rng(5)
    settings = NodeSettings(budget=20.0, unit=unit, max_feature_share=0.6)
    book, array = Book(), ArrayBook()
    for round_ in range(30):
        a, f = rng.uniform(0, 1, size=2)
        charge = Charge(a + f, 9 * a + 3 * f, a, f)
        nodes = rng.choice(50, size=20, replace=False)
        admission = array.admit_many(nodes, charge, round_, settings, False)
        ok = []
        for node in nodes.tolist():
            try:
                book.admit(node, charge, round_, settings, False)
                ok.append(node)
            except Refusal:
                pass
        assert admission.admitted.tolist() == ok
    assert all(array.spent_of(n) == book.spent_of(n) for n in range(50))


def test_the_simulation_counts_per_bit_unless_told_and_records_it(graph):
    proto = make_protocol("hogs", epsilon=2.0)
    curator = curator_view(graph, False)
    release, _ = run_protocol(proto, graph, curator, 0, settings=NodeSettings(budget=2.0, seed=0))
    assert release.stats["collection"]["node_units"] == {"per-bit": N}
    vector = NodeSettings(budget=2.0, seed=0, unit="per-vector")
    with pytest.raises(NoReportsError):
        run_protocol(proto, graph, curator, 0, settings=vector)
    need = round_charge(proto, 0, N, D).per_vector
    vector = NodeSettings(budget=need, seed=0, unit="per-vector")
    release, _ = run_protocol(proto, graph, curator, 0, settings=vector)
    assert release.stats["collection"]["node_units"] == {"per-vector": N}
    assert release.stats["collection"]["rounds"][0]["replied"] == N
