"""The early refusals (simulation/checks_early.py) say what the full checks say, with the same
words and figures, for every built-in protocol the generated table gives figures for; and they
leave every other run to the full checks."""

from __future__ import annotations

import pytest

from ldpgraph.simulation import checks, checks_early, schema_table
from ldpgraph.simulation.config import ConfigError, RunConfig

EARLY = [name for name, (charges, _adj) in schema_table.EARLY.items() if charges]


def _full(values: dict) -> str:
    """The full checks' error for ``values`` (configuration, then memory), or ""."""
    try:
        cfg = RunConfig(**values).validate()
        checks.check_memory(cfg, cfg.built_protocol())
    except (ConfigError, ValueError) as exc:
        return str(exc)
    return ""


def _early(values: dict) -> str:
    try:
        checks_early.refuse_early(values)
    except (ConfigError, ValueError) as exc:
        return str(exc)
    return ""


def test_the_table_covers_the_ldp_protocols():
    assert {"hogs", "hogs-edge", "rr", "ldpgen", "blink-hard"} <= set(EARLY)
    assert schema_table.EARLY["hogs-arr"][1] is None  # samples its reports: no early figure
    assert schema_table.EARLY["none"] == (None, None)  # a raw upload is not charged


def test_the_table_s_minimum_charge_is_the_clients():
    from ldpgraph.client.refusals import MIN_CHARGE

    assert schema_table.EARLY_MIN_CHARGE == MIN_CHARGE


@pytest.mark.parametrize("protocol", EARLY)
def test_an_epsilon_refusal_is_the_full_checks(protocol):
    """Where the full checks refuse the charge, the early check says the same; where it
    refuses, the full checks refuse too (a protocol's own check may speak first: Blink's ε_d
    floor), and it refuses exactly when the smallest round charge is under the floor."""
    least = min(schema_table.EARLY[protocol][0])
    for eps in (1e-9, 4e-7, 9e-7, 1.5e-6, 3e-6, 9e-6, 2e-5, 1.0):
        values = {"protocol": protocol, "epsilon": eps, "dataset": "synthetic:n=50"}
        early, full = _early(values), _full(values)
        if "would charge each node" in full:
            assert early == full, (protocol, eps)
        assert bool(early) == (eps * least < schema_table.EARLY_MIN_CHARGE), (protocol, eps)
        assert not early or full, (protocol, eps)


@pytest.mark.parametrize("protocol", EARLY)
def test_a_memory_refusal_is_the_full_checks(protocol, monkeypatch):
    monkeypatch.setattr(checks, "total_memory", lambda: 24 * 2**30)
    refused = 0
    for n, eps in ((10**5, 1.0), (10**6, 8.0), (10**6, 2.0), (10**7, 8.0), (10**7, 30.0)):
        values = {"protocol": protocol, "epsilon": eps, "dataset": f"synthetic:n={n},d=4"}
        early = _early(values)
        if early:  # the full check would generate nothing before refusing: compare its words
            assert early == _full(values), (protocol, n, eps)
            refused += 1
        else:
            assert _full(values) == "" or "GiB" not in _full(values), (protocol, n, eps)
    adjacency = schema_table.EARLY[protocol][1]
    assert (refused > 0) == bool(adjacency), protocol


def test_a_protocol_flag_or_an_unknown_protocol_leaves_it_to_the_full_checks():
    assert _early({"protocol": "hogs", "epsilon": 1e-9}).startswith("epsilon 1e-09 is too small")
    assert _early({"protocol": "hogs", "epsilon": 1e-9, "feature_share": 0.5}) == ""
    assert _early({"protocol": "no-such", "epsilon": 1e-9}) == ""
    assert _early({"protocol": "hogs", "epsilon": 1e-9, "node_unit": "per-vector"}) == ""
    big = {"protocol": "hogs", "dataset": "synthetic:n=1e7"}  # not the registry's integer
    assert _early(big) == ""
    # What the configuration or the dataset registry refuses first stays theirs to say.
    assert _early({"protocol": "hogs", "epsilon": 1e300}) == ""
    assert _early({"protocol": "hogs", "dataset": "synthetic:n=20000000"}) == ""
