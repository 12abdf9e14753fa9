"""A hostile server against the real ClientApp handler: the node is the guardian of its privacy.

Every attack of the client-side audit is played with crafted round messages: a server-chosen
seed, budget and consent; a new run after the budget is spent; a SuperNode restart; two
requests in one round; malformed values. Each is refused, or its answer is useless to the
server (fresh node entropy), and a refusal says no more than "refused".
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from flwr.app import Context, RecordDict

from ldpgraph.client import app as client_app
from ldpgraph.client.app import default_ledger, default_witness
from ldpgraph.client.budget import (
    REFUSED,
    Ledger,
    NodeConfigError,
    NodeSettings,
    admit_nodes,
    parse_budget,
)
from ldpgraph.client.ledger import verified
from ldpgraph.client.nodedata import NodeDataError, open_store, write_store
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.mechanisms import RandomizedResponse
from ldpgraph.protocols.registry import make_protocol, protocol_info
from ldpgraph.protocols.reports import decode_report, node_record_name
from ldpgraph.protocols.rng import ADJACENCY, node_rng
from ldpgraph.server.rounds import NoReportsError
from ldpgraph.simulation.backends.local import collect_round, node_view, run_protocol
from ldpgraph.simulation.datasets import load_dataset

N = 200  # nodes: a row of 199 bits makes equal noise across two draws (practically) impossible
PARTITION = "feedc0ffee000001"


@pytest.fixture(scope="module")
def graph() -> Graph:
    return load_dataset(f"synthetic:n={N},classes=2,d=24,avg_degree=6,seed=3")


@pytest.fixture
def node_file(graph, tmp_path):
    """A deployment node file with nodes 10..14, as `ldpgraph partition` tags it."""
    adj = graph.adjacency()
    first, count = 10, 5
    path = write_store(
        tmp_path / "part" / "nodes-00000",
        adj.indptr[first : first + count + 1],
        adj.indices[adj.indptr[first] : adj.indptr[first + count]],
        graph.x[first : first + count],
        first=first,
        num_nodes=N,
        feature_domain=graph.feature_domain,
        partition=PARTITION,
        checksums=True,
    )
    open_store.cache_clear()
    yield path
    open_store.cache_clear()


def context(node_file, **node_config) -> Context:
    """A fresh Context: a new run or a restarted SuperNode has no state of its own. Its ledger
    is the operator's default (the test's state home); it counts per bit unless told."""
    cfg = {"data-file": str(node_file), "unit": "per-bit", **node_config}
    return Context(run_id=1, node_id=7, node_config=cfg, state=RecordDict(), run_config={})


def request(protocol: str = "hogs", round_: int = 0, **params) -> dict:
    base = {"epsilon": 4.0} if "epsilon" in protocol_info(protocol).param_names else {}
    try:
        proto = make_protocol(protocol, **(base | params))
    except ValueError:  # a hostile value: the message carries it all the same
        proto = make_protocol(protocol, **base)
    return {
        "op": "report",
        "round": round_,
        "num-nodes": N,
        "partition": PARTITION,
        **proto.config(),
        **params,
    }


def reports(records: dict, protocol: str = "hogs", round_: int = 0, d: int = 24) -> dict:
    proto = make_protocol(protocol, epsilon=4.0)
    schema = proto.schema(round_)
    out = {}
    for node in range(10, 15):
        payload = dict(records[node_record_name(node)])
        if "refused" in payload:
            out[node] = None
            continue
        out[node] = decode_report(
            payload, num_nodes=N, round_=round_, num_features=d, node_id=node, **schema.expected()
        )
    return out


def assert_bare_refusals(records: dict) -> None:
    """Every hosted node refused, and the reply says nothing else."""
    assert set(records) == {node_record_name(n) for n in range(10, 15)}
    for node in range(10, 15):
        assert dict(records[node_record_name(node)]) == {"node": node, "refused": REFUSED}


# -- budget and consent come from the node only ------------------------------------------------


def test_server_sent_budget_and_trust_are_ignored(node_file):
    hostile = {"default-budget": 1e9, "budget": 1e9, "default-trust": True, "trust-curator": True}
    ctx = context(node_file)  # the node configured no budget and no consent
    assert_bare_refusals(client_app.answer({**request(), **hostile}, ctx))
    assert_bare_refusals(client_app.answer({**request("none"), **hostile}, ctx))


@pytest.mark.parametrize("budget", ["nan", "inf", "-inf", "-1", "lots", float("nan"), True])
def test_unusable_node_budget_fails_closed(node_file, budget):
    assert parse_budget(budget) is None
    assert_bare_refusals(client_app.answer(request(), context(node_file, budget=budget)))


def test_raw_upload_needs_the_nodes_own_consent(node_file):
    records = client_app.answer(request("none"), context(node_file, budget=1.0))
    assert_bare_refusals(records)
    records = client_app.answer(
        request("none"), context(node_file, budget=1.0, **{"trust-curator": True})
    )
    assert all("refused" not in dict(r) for r in records.values())


# -- the ledger persists across runs and restarts ---------------------------------------------


def test_new_run_and_restart_after_exhaustion_are_refused(node_file):
    ctx = context(node_file, budget=6.0)
    first = reports(client_app.answer(request(epsilon=4.0), ctx))
    assert all(r is not None for r in first.values())
    # A new run (fresh Context) asking for more than is left: refused.
    assert_bare_refusals(client_app.answer(request(epsilon=4.0), context(node_file, budget=6.0)))
    # A restarted SuperNode (fresh process: no cached store, fresh Context): still refused.
    open_store.cache_clear()
    assert_bare_refusals(client_app.answer(request(epsilon=4.0), context(node_file, budget=6.0)))
    # What is left (2) can still be spent, once.
    ok = reports(client_app.answer(request(epsilon=2.0), context(node_file, budget=6.0)))
    assert all(r is not None for r in ok.values())
    assert_bare_refusals(client_app.answer(request(epsilon=0.5), context(node_file, budget=6.0)))
    store = open_store(str(node_file))
    for n in range(10, 15):
        chain = verified(default_ledger(), default_witness(), store.fingerprint(n))
        assert chain.spent["per-bit"] == 6.0


def test_ledger_is_per_graph_and_refuses_when_unreadable(tmp_path):
    settings = NodeSettings(budget=1.0)
    path = tmp_path / "ledger.json"
    a, b = Ledger(path, "graph-a"), Ledger(path, "graph-b")
    assert admit_nodes(a, [0], 1.0, 0, settings, False) == ([0], {})
    assert admit_nodes(a, [0], 1.0, 0, settings, False)[0] == []
    assert admit_nodes(b, [0], 1.0, 0, settings, False) == ([0], {})
    path.write_text("{not json")
    admitted, refused = admit_nodes(b, [0, 1], 0.1, 0, settings, False)
    assert admitted == [] and set(refused) == {0, 1}


# -- randomness is the node's own -----------------------------------------------------------------


def test_replayed_seed_does_not_reproduce_the_noise(node_file, graph):
    """The server sends seed 0 and recomputes the noise it would give: the reports differ from
    that replay, and from each other."""
    ctx = context(node_file, budget=100.0)
    got = [reports(client_app.answer(request(seed=0), ctx)) for _ in range(2)]
    proto = make_protocol("hogs", epsilon=4.0)
    for node in range(10, 15):
        replay = proto.client_step(0, node_view(graph, node), request(), 0)
        assert not np.array_equal(got[0][node].adjacency, replay.adjacency)
        assert not np.array_equal(got[0][node].adjacency, got[1][node].adjacency)


def test_two_requests_in_one_round_do_not_share_uniforms(node_file, graph):
    """Two accepted requests of the same round used to reuse one stream (the audit recovered
    exact degrees by differencing them). With fresh entropy per request the two RR rows of a
    node differ, where shared uniforms make them identical."""
    ctx = context(node_file, budget=100.0)
    one = reports(client_app.answer(request("hogs-edge", epsilon=1.0), ctx), "hogs-edge")
    two = reports(client_app.answer(request("hogs-edge", epsilon=1.0), ctx), "hogs-edge")
    for node in range(10, 15):
        assert not np.array_equal(one[node].adjacency, two[node].adjacency)
    # The same check catches shared uniforms: one stream, two draws, identical rows.
    row = graph.neighbors(10)
    same = [
        RandomizedResponse(1.0).perturb_row(row, N, node_rng(0, 10, 0, ADJACENCY), exclude=10)
        for _ in range(2)
    ]
    assert np.array_equal(*same)


def test_a_seeded_node_never_answers_a_round_twice(node_file):
    """A seed pinned in the node's own config (tests only) would replay the same uniforms:
    the second request for the same round is refused, another round is not."""
    ctx = context(node_file, budget=100.0, seed=5)
    one = reports(client_app.answer(request(), ctx))
    assert all(r is not None for r in one.values())
    assert_bare_refusals(client_app.answer(request(epsilon=1.0), ctx))
    again = reports(client_app.answer(request(round_=1), ctx), round_=1)
    assert all(r is not None for r in again.values())


def test_bad_seed_in_node_config_is_an_error(node_file):
    with pytest.raises(NodeConfigError):
        client_app.answer(request(), context(node_file, budget=1.0, seed="-3"))


# -- malformed requests are refused, never a crash ------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"epsilon": -1.0},
        {"epsilon": float("nan")},
        {"epsilon": float("inf")},
        {"epsilon": "eight"},
        {"protocol": "no-such-protocol"},
        {"protocol": 3},
        {"round": -1},
        {"round": 1.5},
        {"round": "zero"},
        {"round": None},
        {"feature_share": 7.0},
        {"op": "steal"},
    ],
)
def test_malformed_requests_are_bare_refusals(node_file, change):
    assert_bare_refusals(client_app.answer({**request(), **change}, context(node_file, budget=9)))


def test_ldpgen_round_out_of_range_is_refused(node_file):
    msg = request("ldpgen", round_=7)
    assert_bare_refusals(client_app.answer(msg, context(node_file, budget=9.0)))


# -- the simulation harness: the same guard, settings as the node's own config --------------------


def test_local_backend_applies_the_node_budget(graph):
    proto = make_protocol("hogs", epsilon=8.0)
    from ldpgraph.simulation.pipeline import curator_view

    curator = curator_view(graph, False)
    with pytest.raises(NoReportsError, match="no node reported"):
        run_protocol(proto, graph, curator, 0, settings=NodeSettings(budget=1.0, seed=0))
    release, _ = run_protocol(proto, graph, curator, 0, settings=NodeSettings(budget=8.0, seed=0))
    assert release.stats["collection"]["rounds"][0]["replied"] == N
    assert release.stats["collection"]["node_randomness"] == "seeded"


def test_local_backend_refuses_raw_upload_without_consent(graph):
    proto = make_protocol("none")
    result = collect_round(proto, graph, 0, {}, 0, settings=NodeSettings(budget=1.0))
    assert result.reports == {} and result.missing.size == N
    ok = collect_round(
        proto, graph, 0, {}, 0, settings=NodeSettings(budget=1.0, trust_curator=True)
    )
    assert len(ok.reports) == N


def test_unseeded_local_nodes_draw_entropy(graph):
    proto = make_protocol("hogs-edge", epsilon=2.0)
    settings = NodeSettings(budget=100.0)
    a = collect_round(proto, graph, 0, proto.config(), 0, settings=settings)
    b = collect_round(proto, graph, 0, proto.config(), 0, settings=settings)
    assert any(not np.array_equal(a.reports[i].adjacency, b.reports[i].adjacency) for i in range(N))


def test_run_with_node_budget_below_the_run_stops_with_a_clear_error(capsys):
    from ldpgraph.simulation.cli import main

    code = main(
        [
            "run",
            "--dataset",
            "synthetic:n=60,classes=2,d=8,seed=1",
            "--backend",
            "local",
            "--epsilon",
            "8",
            "--node-budget",
            "1",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "no node reported in round 0 (60 of 60 refused" in err


@pytest.mark.parametrize("budget", [None, "nan", "inf", "-2", "x"])
def test_start_supernode_requires_a_finite_budget(budget):
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "deploy" / "start-supernode.sh"
    args = ["bash", str(script), "--superlink", "h:1", "--ca", "c", "--key", "k", "--data", "d"]
    if budget is not None:
        args += ["--budget", budget]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "--budget" in done.stderr


# -- review findings: vanishing ε, damaged ledgers, the mode switch, the ledger's key ------------


@pytest.mark.parametrize(
    "protocol,params",
    [
        ("ldpgen", {"epsilon": 1e-25}),
        ("blink-hard", {"epsilon": 1.0, "degree_share": 1e-30}),
        ("hogs", {"epsilon": 1e-9}),
    ],
)
def test_vanishing_epsilon_is_refused_before_any_charge(node_file, protocol, params):
    """A server asking for ε → 0 would get exact counts from a degenerate sampler (and a
    charge that vanishes in the sum): refused, and nothing is charged."""
    ctx = context(node_file, budget=5.0)
    assert_bare_refusals(client_app.answer(request(protocol, **params), ctx))
    assert not list(default_ledger().glob("*/*.log"))  # nothing charged


@pytest.mark.parametrize("damage", ["NaN", "-5.0", '"x"'])
def test_a_damaged_ledger_refuses(tmp_path, damage):
    path = tmp_path / "ledger.json"
    path.write_text(
        '{"format": "ldpgraph-ledger", "version": 1, "graphs": {"g": {"spent": {"0": '
        + damage
        + '}, "seeded_rounds": {}}}}'
    )
    admitted, refused = admit_nodes(Ledger(path, "g"), [0], 1.0, 0, NodeSettings(budget=9.0), False)
    assert admitted == [] and 0 in refused
    path.write_text('{"format": "ldpgraph-ledger", "version": 1, "graphs": {"g": {}}}')
    assert admit_nodes(Ledger(path, "g"), [0], 1.0, 0, NodeSettings(budget=9.0), False)[0] == []


def test_a_deployed_node_file_never_serves_the_simulation_path(node_file):
    """Without data-file a node would read the store the server names: only a store the
    simulation harness marked serves that path."""
    ctx = Context(run_id=1, node_id=7, node_config={"partition-id": 0}, state=RecordDict(),
                  run_config={})  # fmt: skip
    msg = {**request(), "data": str(node_file), "nodes-per-client": 5}
    with pytest.raises(NodeDataError, match="not a simulation node store"):
        client_app.answer(msg, ctx)


def test_the_ledger_key_is_the_graph_not_the_partition(tmp_path):
    """Re-partitioning the same graph into other blocks does not start a fresh budget."""
    from ldpgraph.simulation.partition import write_partition

    graph = load_dataset("synthetic:n=40,classes=2,d=8,seed=1")
    metas = []
    for k in (10, 20):
        write_partition(graph, tmp_path / f"p{k}", k, dataset="synthetic")
        metas.append(json.loads((tmp_path / f"p{k}" / "nodes-00000" / "meta.json").read_text()))
    assert metas[0]["partition"] != metas[1]["partition"]
    assert metas[0]["graph"] == metas[1]["graph"]
    open_store.cache_clear()
    for k in (10, 20):
        ctx = Context(run_id=1, node_id=7, state=RecordDict(), run_config={}, node_config={
            "data-file": str(tmp_path / f"p{k}" / "nodes-00000"), "budget": 4.0,
            "unit": "per-bit"})  # fmt: skip
        msg = {**request(epsilon=4.0), "num-nodes": 40, "partition": metas[k == 20]["partition"]}
        records = client_app.answer(msg, ctx)
        refused = ["refused" in dict(records[node_record_name(i)]) for i in range(k)]
        # Nodes 0-9 spent their budget through the 10-node files: refused in the 20-node ones.
        assert refused == ([False] * 10 if k == 10 else [True] * 10 + [False] * 10)
    open_store.cache_clear()
