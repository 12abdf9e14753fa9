"""A request that names no graph, another graph or another partition is refused like any
malformed request: one bare refusal per hosted node, no exception (an error reply would carry
the node file's path), and nothing charged. Also for the hello round."""

from __future__ import annotations

import pytest

from ldpgraph.client import app as client_app

from .test_guardian import (  # noqa: F401 (fixtures)
    PARTITION,
    assert_bare_refusals,
    context,
    graph,
    node_file,
    request,
)


@pytest.mark.parametrize(
    "change",
    [
        {"num-nodes": None},  # missing
        {"num-nodes": 199},  # another graph
        {"num-nodes": "200"},
        {"num-nodes": 200.0},
        {"num-nodes": True},
        {"partition": "0123456789abcdef"},  # another partition
        {"partition": 7},
    ],
)
@pytest.mark.parametrize("op", ["report", "hello"])
def test_requests_for_another_graph_are_bare_refusals(node_file, change, op):  # noqa: F811
    msg = request() if op == "report" else {"op": "hello", "num-nodes": 200, "partition": PARTITION}
    msg = {k: v for k, v in {**msg, **change}.items() if v is not None}
    assert_bare_refusals(client_app.answer(msg, context(node_file, budget=4.0)))
    # Nothing was charged: the node's whole budget still buys one round at ε = 4.
    answered = client_app.answer(request(), context(node_file, budget=4.0))
    assert all("refused" not in dict(rec) for rec in answered.values())
