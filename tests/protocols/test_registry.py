"""The protocol registry: every protocol declares its parameters once and registers itself; the
registry imports a protocol's module only when that protocol is used, refuses parameters a
protocol does not declare and values outside their range, and everything the harness used to
list by hand (protocol names, public-feature set, server-side keys, defaults, labels) is derived
from it. A test registers a protocol at runtime and runs it through the whole harness."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields

import numpy as np
import pytest

from ldpgraph.protocols import registry
from ldpgraph.protocols.base import EPSILON, FEATURE_SHARE
from ldpgraph.protocols.registry import (
    ProtocolParameterError,
    UnknownProtocolError,
    make_protocol,
    protocol_from_config,
    protocol_info,
    protocol_names,
)
from ldpgraph.simulation import cli
from ldpgraph.simulation.config import ConfigError, RunConfig, key_names

from ..support.toy_central import ToyDegreeGraph, registered

SMALL = "synthetic:n=120,classes=3,d=16,avg_degree=5,seed=1"

#: What the hand-kept lists held before the registry (protocols/registry.py, simulation/sweep.py
#: and simulation/report.py at ce3d72a): history the derived sets must still agree with. New
#: protocols need no line here: the contract tests below run over the registry.
OLD_PROTOCOLS = {
    "hogs", "hogs-edge", "none", "features-only", "rr", "rr-edge", "blink-hard", "blink-soft",
    "blink-hybrid", "fp-blink", "blink-fr", "ldpgen", "fp-ldpgen", "hogs-kprop", "solitude",
}  # fmt: skip
OLD_PUBLIC_FEATURES = {"hogs-edge", "rr-edge", "blink-hard", "blink-soft", "blink-hybrid", "ldpgen"}
OLD_SERVER_KEYS = {"tau", "steps"}
OLD_LABELS = {
    "hogs": "HoGS", "hogs-edge": "HoGS", "blink-hard": "BLink", "blink-soft": "BLink (soft)",
    "blink-hybrid": "BLink (hybrid)", "fp-blink": "FP-BLink", "ldpgen": "LDPGen",
    "fp-ldpgen": "FP-LDPGen", "solitude": "Solitude", "rr": "RR", "blink-fr": "BLink + FR",
    "hogs-kprop": "TR + KProp", "none": "non-private", "features-only": "MLP floor",
}  # fmt: skip
#: The built-in LDP protocols (node-side code), read from the registry's table.
LDP_PROTOCOLS = sorted(
    name for name, path in registry.BUILTIN.items() if path.startswith("ldpgraph.protocols.ldp.")
)


@pytest.mark.parametrize("name", LDP_PROTOCOLS)
def test_every_protocol_builds_from_its_defaults_and_round_trips(name):
    proto = make_protocol(name)
    assert proto.name == name
    message = {**proto.config(), "op": "report", "round": 0}  # a round message's extra keys
    again = protocol_from_config(message)
    assert again.config() == proto.config()
    assert again.round_epsilon(0) == proto.round_epsilon(0)


def test_the_table_is_exactly_what_the_modules_register():
    """registry.BUILTIN against the modules: every module of the protocol packages imported,
    the protocols they register (by decorator, whatever the decorator is called there) equal
    the table, class paths included; a mismatch names the table line to fix."""
    import importlib
    import pkgutil

    from ldpgraph.protocols.catalog import table_mismatches

    for package in registry.PACKAGES:
        pkg = importlib.import_module(package)
        for mod in pkgutil.walk_packages(pkg.__path__, package + "."):
            importlib.import_module(mod.name)
    registered = {
        name: registry._path(info.target)
        for name, info in registry._INFOS.items()
        if not info.runtime
    }
    assert table_mismatches(registry.BUILTIN, registered) == []
    for name, path in registry.BUILTIN.items():
        info = protocol_info(name)
        assert f"{info.resolve().__module__}:{info.resolve().__qualname__}" == path
        assert info.summary and info.label and not info.runtime
    assert set(OLD_PROTOCOLS) <= set(registry.BUILTIN)


def test_a_table_line_whose_module_registers_nothing_fails_loudly(monkeypatch):
    monkeypatch.setitem(registry.BUILTIN, "ghost", "ldpgraph.protocols.ldp.rr:RRProtocol")
    with pytest.raises(RuntimeError, match="does not register protocol 'ghost'"):
        protocol_info("ghost")


def test_unknown_parameter_names_protocol_key_accepted_keys_and_close_match():
    with pytest.raises(ProtocolParameterError) as exc:
        make_protocol("hogs", epsilon=2.0, tua=0.7)
    msg = str(exc.value)
    assert "'hogs'" in msg and "'tua'" in msg and "did you mean 'tau'" in msg
    assert "epsilon, feature_share, tau, steps" in msg
    # A parameter another protocol uses is still unknown to this one (it was silently ignored).
    with pytest.raises(ProtocolParameterError, match="'hogs-edge' has no parameter 'steps'"):
        make_protocol("hogs-edge", steps=2)
    with pytest.raises(ProtocolParameterError, match="it accepts: none"):
        make_protocol("none", epsilon=1.0)
    with pytest.raises(UnknownProtocolError, match="did you mean 'hogs'"):
        make_protocol("hgos")


@pytest.mark.parametrize(
    "name,params,needle",
    [
        ("hogs", {"tau": 1.5}, "tau must be in (0, 1] for protocol 'hogs', got 1.5"),
        ("hogs", {"feature_share": 1.0}, "feature_share must be in (0, 1)"),
        ("features-only", {"feature_share": 1.5}, "feature_share must be in (0, 1]"),
        ("hogs", {"epsilon": 500.0}, "epsilon must be in (0, 100]"),
        ("hogs", {"steps": -1}, "steps must be in >= 0"),
        ("hogs", {"steps": 1.5}, "steps must be of type int"),
        ("hogs", {"epsilon": float("nan")}, "epsilon must be in (0, 100]"),
        ("rr", {"combine": "xor"}, "unknown combine 'xor'; choose one of: or, and, lower"),
        ("blink-soft", {"min_weight": 0.0}, "min_weight must be in (0, 1)"),
        ("ldpgen", {"k0": 0}, "k0 must be in [1, 4096]"),
        ("fp-blink", {"share1": 2.0}, "share1 must be in [0, 1]"),
    ],
)
def test_out_of_range_values_are_refused_with_the_allowed_range(name, params, needle):
    with pytest.raises(ProtocolParameterError) as exc:
        make_protocol(name, **params)
    assert needle in str(exc.value)


def test_features_only_accepts_the_whole_budget_but_hogs_does_not():
    assert make_protocol("features-only", feature_share=1.0).eps_features == 8.0
    with pytest.raises(ProtocolParameterError):
        make_protocol("hogs", feature_share=1.0)


def test_derived_sets_equal_the_former_hand_lists():
    from ldpgraph.simulation.results.report import method_label
    from ldpgraph.simulation.sweep.run import SERVER_KEYS

    assert set(protocol_names()) == set(registry.BUILTIN)
    assert registry.public_feature_protocols() & OLD_PROTOCOLS == OLD_PUBLIC_FEATURES
    assert {name: method_label(name) for name in OLD_LABELS} == OLD_LABELS
    # Deliberate: every parameter the server alone applies is now a server key, so a sweep
    # reuses one collection for rr's combine, Blink's min_weight, KProp's K, Solitude's lx/ly
    # and LDPGen's generator too (test_server_side_parameters_do_not_change_reports).
    # HoGS's Sybil screening (consistency_alpha) is server-side too: it filters the reports.
    added = {"combine", "min_weight", "kprop_k", "lx", "ly", "generator", "consistency_alpha"}
    assert set(SERVER_KEYS) >= OLD_SERVER_KEYS | added
    server_side = {n for n, (p, _) in registry.parameters().items() if p.server_side}
    assert set(SERVER_KEYS) == server_side & set(key_names())


def test_run_config_has_one_field_per_parameter_at_its_declared_default():
    """The CLI flags stay: every declared parameter is a configuration key (derived from the
    declaration, no field of its own) with the declared default, except the library-only ones
    (no flag, they keep their default in runs)."""
    defaults = RunConfig()
    keys = set(key_names())
    own_fields = {f.name for f in fields(RunConfig)} - {"protocol"}
    assert not own_fields & set(registry.parameters())
    library_only = set()
    for name, (param, _users) in registry.parameters().items():
        if name == "delta":  # per protocol: 0 in the configuration stands for its own default
            assert defaults.delta == 0.0
        elif name == "epsilon_convention":  # per protocol too: "" stands for its own default
            assert defaults.epsilon_convention == ""
        elif name in keys:
            assert getattr(defaults, name) == param.default, name
        else:
            library_only.add(name)
    assert library_only == {"variant", "kprop_norm", "kprop_isolated"}
    assert defaults.feature_share == FEATURE_SHARE.default == 0.1


def test_delta_defaults_to_the_chosen_protocols_own_value():
    """DPAR's paper uses δ = 2e-3 on Cora-ML, PrivDPR's 1e-5: one shared key, each protocol's
    own default when the user gives none; an explicit δ is kept."""
    assert RunConfig(protocol="dpar-gm", trust_curator=True).validate().delta == 2e-3
    assert RunConfig(protocol="privdpr", trust_curator=True).validate().delta == 1e-5
    assert RunConfig(protocol="privdpr", trust_curator=True, delta=1e-6).validate().delta == 1e-6


def test_run_config_passes_and_checks_only_the_chosen_protocols_parameters():
    cfg = RunConfig(protocol="hogs", combine="xor", generator="magic").validate()
    assert cfg.protocol_params() == {
        "epsilon": 8.0,
        "feature_share": 0.1,
        "tau": 0.5,
        "steps": 1,
        "consistency_alpha": 0.0,
        "join": "auto",
        "lsh_ring": 2,
    }
    assert RunConfig(protocol="none", trust_curator=True).protocol_params() == {}
    with pytest.raises(ConfigError, match="unknown combine 'xor'"):
        RunConfig(protocol="rr", combine="xor").validate()
    with pytest.raises(ConfigError, match="feature-share must be in \\(0, 1\\)"):
        RunConfig(protocol="hogs", feature_share=1.0).validate()
    RunConfig(protocol="features-only", feature_share=1.0).validate()
    RunConfig(protocol="hogs-edge", feature_share=1.0).validate()  # public features: unused
    # A budget split the protocol cannot serve is a configuration error, not a crash later.
    with pytest.raises(ConfigError, match="ε_d"):
        RunConfig(protocol="blink-hard", epsilon=0.005, degree_share=0.1).validate()


def _alternatives(param):
    if param.choices is not None:
        return [c for c in param.choices if c != param.default]
    if param.type is int:
        return [param.default + 1, param.default + 2]
    high = param.high if param.high is not None else 2 * param.default + 1
    return [(param.default + high) / 2]


def _round0(proto, graph, seed=5):
    from ldpgraph.simulation.backends.local import collect_round

    message = {**proto.config(), **proto.public_message(0, seed)}
    res = collect_round(proto, graph, 0, message, seed)
    return {
        node: (
            None if r.adjacency is None else np.asarray(r.adjacency).tolist(),
            None if r.features is None else np.asarray(r.features).tolist(),
            r.extras,
        )
        for node, r in res.reports.items()
    }


def test_server_side_parameters_do_not_change_reports():
    """What makes a parameter server-side: nodes report the same whatever its value, so one
    collection serves every value (the sweep's reuse relies on it)."""
    from ldpgraph.simulation.datasets import load_dataset

    graph = load_dataset(SMALL)
    checked = 0
    for name in sorted(set(LDP_PROTOCOLS) - {"none"}):
        info = protocol_info(name)
        base = make_protocol(name, epsilon=3.0)
        reports = _round0(base, graph)
        for param in info.params:
            if not param.server_side:
                continue
            for value in _alternatives(param):
                try:
                    other = make_protocol(name, epsilon=3.0, **{param.name: value})
                except ValueError:  # e.g. Solitude's ly > 0: not implemented
                    continue
                assert _round0(other, graph) == reports, (name, param.name, value)
                checked += 1
    assert checked >= 15


def test_client_path_imports_only_the_protocols_it_runs():
    """A node rebuilds hogs and rr from their round messages and runs a client step: no torch,
    no central strategy, no other protocol module on its import path."""
    code = """
import sys
import numpy as np
import ldpgraph.client.app
from ldpgraph.protocols.registry import protocol_from_config
from ldpgraph.protocols.types import NodeView
view = NodeView(0, np.array([1, 2]), np.array([1.0, 0.0, 1.0]), 5, (0.0, 1.0))
for msg in ({"protocol": "hogs", "epsilon": 4.0, "feature_share": 0.1, "tau": 0.5, "steps": 1},
            {"protocol": "rr", "epsilon": 4.0, "combine": "or", "feature_share": 0.1}):
    proto = protocol_from_config({**msg, "op": "report", "round": 0})
    report = proto.client_step(0, view, msg, 7)
    assert report.adjacency is not None and report.features is not None
loaded = sorted(m for m in sys.modules if m.startswith("ldpgraph.protocols.ldp."))
print(loaded)
bad = [m for m in sys.modules if m == "torch" or m.startswith(("torch.", "torch_geometric"))]
bad += [m for m in sys.modules if m.startswith("ldpgraph.protocols.central")]
assert not bad, bad
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    loaded = {m.rsplit(".", 1)[1] for m in eval(out.stdout)}
    # hogs's server-side helpers (numpy and scipy only) come with it.
    helpers = {"assemble", "node_reports", "posterior", "similarity", "reported_pairs"}
    helpers.add("consistency")  # HoGS's Sybil screening (numpy and scipy)
    helpers |= {"split_budget", "rr_batch"}  # the family's client step, its batched RR rows
    helpers |= {"hogs_topology", "hogs_features"}  # hogs's server steps, by job
    helpers |= {"blocks", "similarity_lsh"}  # where the curator's blocks run; the LSH join
    helpers |= {"hogs_scorer", "hogs_fused", "packed_keys"}  # the pair scorer, fused sums, keys
    helpers.add("hogs_merge")  # the kept pairs merged part by part
    assert loaded == {"hogs", "rr"} | helpers, loaded


@pytest.fixture
def toys():
    with registered():
        yield


def test_runtime_registration_and_unregister(toys):
    assert {"toy-degree", "toy-majority"} <= set(protocol_names())
    proto = make_protocol("toy-degree", epsilon=2.0)
    assert type(proto).__name__ == ToyDegreeGraph.__name__ and proto.epsilon == 2.0
    assert protocol_info("toy-majority").label == "Majority"
    with pytest.raises(ProtocolParameterError, match="'toy-degree' has no parameter 'tau'"):
        make_protocol("toy-degree", tau=0.5)
    # The round message is the plain upload: a node rebuilds `none`, never the strategy.
    assert protocol_from_config(proto.config()).name == "none"
    with pytest.raises(ValueError, match="already registered"):
        registry.register("toy-degree", "tests.support.toy_central:ToyMajority")
    with pytest.raises(ValueError, match="built in"):
        registry.register("hogs", ToyDegreeGraph, params=(EPSILON,))
    with pytest.raises(KeyError):
        registry.unregister("hogs")  # built-in protocols stay
    # A central strategy uploads raw data: the consent check covers it like `none`.
    with pytest.raises(ConfigError, match="protocol 'toy-degree' uploads raw data"):
        RunConfig(protocol="toy-degree").validate()
    RunConfig(protocol="toy-degree", trust_curator=True).validate()
    described = registry.describe("toy-degree")
    assert described["privacy_model"] == "central" and described["privacy_unit"] == "edge"
    assert described["raw_upload"] and [p["name"] for p in described["params"]] == ["epsilon"]


def test_unregister_removes_a_runtime_protocol():
    registry.register("toy-degree", ToyDegreeGraph, params=(EPSILON,))
    registry.unregister("toy-degree")
    assert "toy-degree" not in protocol_names()
    with pytest.raises(UnknownProtocolError):
        make_protocol("toy-degree")
    with pytest.raises(ConfigError, match="unknown protocol 'toy-degree'"):
        RunConfig(protocol="toy-degree", trust_curator=True).validate()


def test_ldpgraph_run_and_protocols_with_a_runtime_protocol(toys, capsys):
    argv = ["run", "--protocol", "toy-degree", "--epsilon", "4", "--trust-curator"]
    argv += ["--backend", "local", "--dataset", SMALL, "--epochs", "5", "--json", "--quiet"]
    assert cli.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["protocol"] == "toy-degree"
    assert result["privacy"]["unit"] == "edge" and result["privacy"]["epsilon"] == 4.0
    assert cli.main(["protocols", "--json"]) == 0
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert set(listed) == set(registry.BUILTIN) | {"toy-degree", "toy-majority"}
    assert listed["toy-majority"]["privacy_model"] == "central"
    assert listed["hogs"]["privacy_model"] == "ldp" and listed["none"]["privacy_model"] == "none"
    assert cli.main(["protocols"]) == 0
    text = capsys.readouterr().out
    assert "toy-degree (central): toy: discrete-Laplace degrees" in text
    assert "--feature-share" in text and "[server-side]" in text


def test_run_help_lists_the_protocols_and_their_parameters(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "10000")  # one line per option: no wrapping at hyphens
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    text = capsys.readouterr().out
    for name in LDP_PROTOCOLS:
        assert f"{name}: {protocol_info(name).summary}" in text
    # feature-share's help: its declaration, its range and the protocols that use it
    assert "(0, 1); used by fp-blink, blink-fr, features-only, hogs, hogs-arr, hogs-kprop" in text
