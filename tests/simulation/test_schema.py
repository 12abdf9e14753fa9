"""The sectioned configuration schema: every key has a section and help, sections can group the
keys wherever configuration is read, and the identity's left-out keys come from the schema."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import fields

import pytest

from ldpgraph.protocols import registry
from ldpgraph.server.training import TrainConfig
from ldpgraph.simulation import cli
from ldpgraph.simulation.config import (
    SECTIONS,
    ConfigError,
    RunConfig,
    derived_keys,
    flatten_sections,
    key_default,
    key_help,
    key_names,
    key_param,
    keys_in,
    non_result_keys,
    section_of,
)
from ldpgraph.simulation.results.identity import run_key
from ldpgraph.simulation.sweep.experiment import ExperimentError, parse_experiment

SYN = "synthetic:n=150,classes=3,d=20"

#: The identity's left-out keys as they were listed by hand before the schema (identity.py at
#: eea046a): the schema must leave out exactly these, or stored runs would change identity.
FORMER_NON_RESULT_KEYS = {
    "data_root", "run_dir", "device", "backend", "nodes_per_client", "ray_actors",
    "ray_cpus_per_actor", "ray_address", "wait_timeout", "round_timeout",
    # Added since, each left out from the start (so no stored run's identity moves):
    "curator_on",
}  # fmt: skip


def test_every_key_has_a_section_and_help():
    params = set(registry.parameters()) | {"protocol"}
    for name in key_names():
        assert section_of(name) in SECTIONS, name
        if name in params:
            assert section_of(name) == "protocol", name
        else:
            assert key_help(name), f"{name} has no help"
    # every protocol parameter that is a run key lives in the protocol section
    assert set(keys_in("protocol")) <= params
    # the train section is what the trainer takes (no field copied by hand)
    trainer = {f.name for f in fields(TrainConfig)}
    assert set(keys_in("train")) <= trainer


def test_identity_leaves_out_the_schemas_where_and_how_keys():
    assert set(non_result_keys()) == FORMER_NON_RESULT_KEYS
    base = RunConfig(dataset=SYN, epochs=3).to_dict()
    key = run_key(base)
    for name in non_result_keys():
        value = base[name]
        other = (
            (not value)
            if isinstance(value, bool)
            else (value or 1) * 2
            if not isinstance(value, str)
            else value + "x"
        )
        assert run_key({**base, name: other}) == key, name
    for section in ("data", "train", "nodes", "metrics"):
        for name in keys_in(section):
            if name in non_result_keys():
                continue
            value = base[name]
            other = (
                (not value)
                if isinstance(value, bool)
                else (value + "x" if isinstance(value, str) else value * 0.5 + 0.3)
            )
            assert run_key({**base, name: other}) != key, name


def test_sections_group_keys_and_read_back():
    cfg = RunConfig(dataset=SYN, protocol="rr", epsilon=3, lr=0.05, node_budget=9.0)
    grouped = cfg.sections()
    assert list(grouped) == list(SECTIONS)
    # only the chosen protocol's parameters appear in its section
    assert set(grouped["protocol"]) == {"protocol", "epsilon", "feature-share", "combine"}
    assert grouped["train"]["lr"] == 0.05 and grouped["nodes"]["node-budget"] == 9.0
    assert RunConfig.from_mapping(grouped) == cfg.validate()


def test_section_tables_and_dotted_keys_mean_the_flat_keys():
    flat = RunConfig.from_mapping({"dataset": SYN, "lr": 0.05, "tau": 0.7, "epochs": 4})
    nested = RunConfig.from_mapping(
        {"data": {"dataset": SYN}, "train": {"lr": 0.05, "epochs": 4}, "protocol.tau": 0.7}
    )
    assert nested == flat
    assert flatten_sections({"train.weight-decay": 0.0, "seed": 1}) == {
        "weight-decay": 0.0,
        "seed": 1,
    }


@pytest.mark.parametrize(
    "values, needle",
    [
        ({"train": {"tau": 0.5}}, "tau belongs in section 'protocol'"),
        ({"trian.lr": 0.1}, "did you mean 'train'"),
        ({"lr": 0.1, "train.lr": 0.2}, "given twice"),
        ({"train": {"lrr": 0.1}}, "did you mean 'lr'"),
        ({"featre-share": 0.1}, "did you mean 'feature-share'"),
    ],
)
def test_misplaced_or_unknown_keys_are_one_line_errors(values, needle):
    with pytest.raises(ConfigError, match=needle):
        RunConfig.from_mapping(values)


def test_run_help_shows_one_group_per_section(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    at = {title: out.index(title + ":") for title in SECTIONS.values()}
    assert sorted(at.values()) == list(at.values()), "sections out of order"
    starts = sorted(at.values())
    shown = {"protocol", "epsilon", *registry.protocol_info(RunConfig().protocol).param_names}
    for name in key_names():
        if section_of(name) == "protocol" and name not in shown:
            continue  # another protocol's parameter: `run --protocol X --help` shows X's
        flag = "--" + name.replace("_", "-")
        pos = re.search(rf"^  {flag}(?=[ \n])", out, re.MULTILINE).start()
        title = SECTIONS[section_of(name)]
        later = [s for s in starts if s > at[title]]
        assert at[title] < pos < (later[0] if later else len(out)), name


def _experiment(fixed: str, grid: str):
    text = f"""
name = "sections"
datasets = ["{SYN}"]
protocols = ["hogs", "nodes"]
epsilons = [4]
{fixed}
[variants.nodes]
protocol = "rr"
[variants.nodes.train]
hidden = 8
{grid}
"""
    return parse_experiment(tomllib.loads(text), "x.toml")


def test_experiment_files_take_section_tables():
    flat = _experiment("[fixed]\nepochs = 5\nlr = 0.05", "[grid.g]\ndropout = [0.5, 0.0]")
    nested = _experiment(
        "[fixed.train]\nepochs = 5\nlr = 0.05", "[grid.g.train]\ndropout = [0.5, 0.0]"
    )
    assert nested.fixed == flat.fixed == {"epochs": 5, "lr": 0.05}
    assert nested.grids["g"].shared == flat.grids["g"].shared == {"dropout": [0.5, 0.0]}
    assert nested.entries[1].fixed == {"hidden": 8}
    with pytest.raises(ExperimentError, match="x.toml: fixed: .*belongs in section 'protocol'"):
        _experiment("[fixed.train]\ntau = 0.5", "[grid.g]\nlr = [0.1]")


def test_importing_the_configuration_loads_no_protocol_and_no_accountant():
    """The schema derives the protocols' keys from the registry when first asked, never at
    import: ``import ldpgraph.simulation.config`` stays cheap (no protocol module, no
    dp-accounting)."""
    code = (
        "import json, sys; import ldpgraph.simulation.config; print(json.dumps(sorted("
        "m for m in sys.modules if m.startswith(('ldpgraph.protocols.ldp', "
        "'ldpgraph.protocols.central', 'dp_accounting')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_protocol_parameters_and_metric_settings_are_derived_keys():
    """Every run-key parameter a protocol declares and every metric setting is a key, with
    its declaration's default, and with nothing declared in the configuration itself; a key
    several protocols declare with different defaults defaults to its type's empty value,
    which stands for the chosen protocol's own."""
    from ldpgraph.server.evaluation import metric_settings

    derived = derived_keys()
    for info in registry.all_protocols():
        for p in info.params:
            if not p.run_key or p.name in {"kprop_norm", "kprop_isolated", "variant"}:
                assert p.name not in key_names()
                continue
            assert section_of(p.name) == "protocol"
            if not derived[p.name].per_protocol:
                assert key_default(p.name) == p.default, p.name
            else:
                assert key_default(p.name) == p.type(), p.name
    for name, p in metric_settings().items():
        assert section_of(name) == "metrics" and key_param(name) == p
    assert {n for n, d in derived.items() if d.per_protocol} == {"delta", "epsilon_convention"}
    own = {f.name for f in fields(RunConfig)}
    assert not own & set(derived), "a derived key is declared again as a field"
    cfg = RunConfig(tau=0.7, gin_layers=3)
    assert cfg.tau == 0.7 and cfg.gin_layers == 3 and cfg.steps == key_default("steps")
    cfg.tau = 0.6
    assert cfg.to_dict()["tau"] == 0.6 and list(cfg.to_dict()) == list(key_names())
    with pytest.raises(TypeError, match="did you mean 'tau'"):
        RunConfig(tua=0.5)


def test_the_flower_table_is_generated_from_the_declarations(tmp_path):
    """pyproject.toml's [tool.flwr.app.config] is what flwr_table renders (a new parameter
    shows up as a stale table here, fixed by ``--write``), and --write rewrites only it."""
    from pathlib import Path

    from ldpgraph.simulation import flwr_table

    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    assert flwr_table.main(["--check", "--pyproject", str(pyproject)]) == 0
    pytest.importorskip("flwr")
    from ldpgraph.simulation.flower_app import APP_ONLY_KEYS

    assert tuple(flwr_table.APP_ONLY) == APP_ONLY_KEYS
    stale = tmp_path / "pyproject.toml"
    stale.write_text('[a]\nx = 1\n\n[tool.flwr.app.config]\nprotocol = "rr"\n\n[b]\ny = 2\n')
    assert flwr_table.main(["--check", "--pyproject", str(stale)]) == 1
    assert flwr_table.main(["--write", "--pyproject", str(stale)]) == 0
    table = tomllib.loads(stale.read_text())
    assert table["a"] == {"x": 1} and table["b"] == {"y": 2}
    assert table["tool"]["flwr"]["app"]["config"]["protocol"] == RunConfig().protocol
    assert flwr_table.main(["--check", "--pyproject", str(stale)]) == 0


def test_a_runtime_protocol_adds_its_keys_but_moves_no_built_in_default():
    from ldpgraph.protocols.base import EPSILON
    from ldpgraph.protocols.params import Param

    extra = Param("toy_knob", int, 3, "toy: a new knob", low=0)
    registry.register(
        "toy-knobs",
        "ldpgraph.protocols.ldp.rr:RRProtocol",
        params=(EPSILON.but(default=2.0), extra),
    )
    try:
        assert key_default("epsilon") == EPSILON.default and key_default("toy_knob") == 3
        assert section_of("toy_knob") == "protocol" and RunConfig(toy_knob=5).toy_knob == 5
    finally:
        registry.unregister("toy-knobs")
    assert "toy_knob" not in key_names()
