"""The generated table of the built-in declarations equals what the modules declare, and the
schema read through it equals the schema read from the live registry."""

from __future__ import annotations

import json
import subprocess
import sys

from ldpgraph.protocols import registry
from ldpgraph.protocols.params import Param
from ldpgraph.simulation import schema_generate, schema_static, schema_table


def test_the_table_is_what_the_modules_declare():
    assert schema_generate.mismatches() == [], (
        "the generated table lags the protocol/metric sources: run "
        "python -m ldpgraph.simulation.flwr_table --write (it rewrites both tables)"
    )
    assert list(schema_table.PROTOCOLS) == list(registry.BUILTIN)


def test_a_changed_declaration_is_a_mismatch(monkeypatch):
    name = next(iter(schema_table.PROTOCOLS))
    params, summary, model = schema_table.PROTOCOLS[name]
    changed = (params[0].but(default=params[0].default * 2), *params[1:])
    live = schema_generate.live_tables

    def stale():
        protocols, names, settings = live()
        return {**protocols, name: (changed, summary, model)}, names, settings

    monkeypatch.setattr(schema_generate, "live_tables", stale)
    assert schema_generate.mismatches() == [f"protocol {name!r}"]
    monkeypatch.setattr(schema_static, "source_hash", lambda: "other sources")
    assert schema_generate.mismatches() == [f"protocol {name!r}", "the sources' hash"]


def test_literals_round_trip():
    p = Param("x", float, float("inf"), "it's", low=0.0, low_open=True, choices=("a",))
    source = schema_generate._param_source(p)
    import math  # noqa: F401  (the source names math.inf)

    assert eval(source, {"P": Param, "math": math, "float": float}) == p


#: A fresh interpreter lists every configuration key through the table, then through the live
#: modules; the two must agree, and the first must not have imported NumPy.
_SCRIPT = r"""
import json, sys
from ldpgraph.simulation import config, schema
light = {n: repr(schema.key_param(n)) for n in schema.key_names()}
numpy_before = "numpy" in sys.modules
from ldpgraph.protocols import registry
from ldpgraph.server.evaluation import base
registry.all_protocols(); base.metric_names()
live = {n: repr(schema.key_param(n)) for n in schema.key_names()}
print(json.dumps({"numpy": numpy_before, "same": light == live, "keys": len(live)}))
"""


def test_keys_through_the_table_equal_the_live_keys_without_numpy():
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["same"] and got["keys"] > 20, got
    assert not got["numpy"], "listing the configuration's keys imported NumPy"


_STALE = r"""
import contextlib, io, sys
from ldpgraph.simulation import schema_table
from ldpgraph.simulation.cli import main
params, summary, model = schema_table.PROTOCOLS["hogs"]
schema_table.PROTOCOLS["hogs"] = (tuple(p for p in params if p.name != "tau"), summary, model)
if sys.argv[2] == "stale":
    schema_table.SOURCE_HASH = "generated from other sources"
err = io.StringIO()
with contextlib.redirect_stderr(err):
    try:
        code = main(["run", "--tau", "3", "--store", sys.argv[1]])
    except SystemExit as exc:  # argparse's refusal
        code = exc.code
print(code, err.getvalue().strip().splitlines()[-1])
"""


def test_a_table_that_lags_the_sources_is_not_used(tmp_path):
    """A table without ``--tau`` for hogs: used while its hash is the sources' (the flag is
    then unknown, which shows the table is what ``run`` reads), ignored once the sources
    differ (a declaration changed, the table not regenerated): the module is asked instead."""
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database\n" * 50)
    said = {}
    for state in ("fresh", "stale"):
        done = subprocess.run(
            [sys.executable, "-c", _STALE, str(corrupt), state],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        said[state] = done.stdout
    assert said["fresh"].startswith("2 ") and "no parameter --tau" in said["fresh"]
    assert said["stale"].startswith("2 ") and "not a usable" in said["stale"], said


def test_the_hash_covers_the_modules_of_the_early_figures():
    """The early checks' figures come from the clients' smallest charge, RunConfig's defaults
    and the synthetic graph's sizes: a change in any of them makes the table stale."""
    import inspect
    from pathlib import Path

    from ldpgraph.client import refusals
    from ldpgraph.simulation import config, schema_static
    from ldpgraph.simulation.datasets import synthetic

    root = Path(schema_static.__file__).resolve().parent.parent
    hashed = {(root / name).resolve() for name in schema_static.SOURCE_FILES}
    assert {Path(inspect.getfile(m)).resolve() for m in (refusals, config, synthetic)} == hashed
