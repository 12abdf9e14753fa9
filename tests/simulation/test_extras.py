"""An optional dependency that is missing is one line naming the extra, before any work."""

from __future__ import annotations

import importlib.util

import pytest

from ldpgraph.simulation import extras
from ldpgraph.simulation.cli import main
from ldpgraph.simulation.config import ConfigError, RunConfig


@pytest.fixture
def block(monkeypatch):
    """Make ``find_spec`` report the given top-level modules as not installed."""
    blocked: set[str] = set()
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name.split(".")[0] in blocked:
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return blocked


def test_every_extra_module_has_a_hint_naming_a_declared_extra():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for module, extra in extras.EXTRA_OF.items():
        assert extra in declared, extra
        assert f"ldpgraph[{extra}]" in extras.hint_for(module)
    assert extras.hint_for("numpy") is None  # core: never an extra


@pytest.mark.parametrize(
    ("settings", "module", "extra"),
    [
        ({"backend": "flower"}, "flwr", "flower"),
        ({"backend": "local", "ray_address": "127.0.0.1:6379"}, "ray", "ray"),
        ({"backend": "local", "split_mode": "metis"}, "pymetis", "metis"),
    ],
)
def test_a_run_needing_a_missing_extra_is_refused_at_validation(block, settings, module, extra):
    block.add(module)
    with pytest.raises(ConfigError, match=rf"pip install 'ldpgraph\[{extra}\]'"):
        RunConfig(dataset="synthetic:n=50,d=8", **settings).validate()
    block.clear()
    RunConfig(dataset="synthetic:n=50,d=8", **settings).validate()


def test_the_flower_hint_names_the_local_backend(block):
    block.add("flwr")
    with pytest.raises(ConfigError, match="--backend local"):
        RunConfig(backend="flower").validate()
    RunConfig(backend="local").validate()


def test_report_without_matplotlib_is_one_line(block, tmp_path, capsys):
    block.add("matplotlib")
    code = main(["report", "--store", str(tmp_path / "none.db"), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "pip install 'ldpgraph[plots]'" in err
    assert not (tmp_path / "r").exists()


def test_a_missing_extra_found_late_is_one_line_too(monkeypatch, capsys):
    """An import that fails deep inside a command (not caught by a check first) still ends in
    the hint, not a traceback."""
    from ldpgraph.simulation import cli

    def boom(args):
        raise ModuleNotFoundError("No module named 'ray'", name="ray")

    monkeypatch.setitem(cli.__dict__, "cmd_datasets", boom)
    assert main(["datasets"]) == 2
    assert "pip install 'ldpgraph[ray]'" in capsys.readouterr().err
