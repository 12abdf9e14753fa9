"""Writes and checks :mod:`.schema_table`, the generated table :mod:`.schema_static` reads.

Generating the table imports every built-in protocol and metric module and builds each
protocol as ``ldpgraph run`` would (:class:`~.config.RunConfig`), so it lives apart from
:mod:`.schema_static`, which the configuration itself imports::

    python -m ldpgraph.simulation.schema_generate --write   # rewrite simulation/schema_table.py
    python -m ldpgraph.simulation.schema_generate --check   # exit 1 when it is out of date

(``python -m ldpgraph.simulation.flwr_table --write``, the step after adding a key, runs the
first too.)
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from ldpgraph.protocols.params import Param

from . import schema_static
from .schema_static import _live_entry


def _literal(value: Any) -> str:
    """Python source for a declaration's value (types by name, infinities through math)."""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value).replace("inf", "math.inf") if not math.isnan(value) else "math.nan"
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    raise TypeError(f"no literal for {value!r} in a declaration")


def _param_source(p: Param) -> str:
    default = Param(p.name, p.type, p.default, p.help)
    args = [_literal(p.name), _literal(p.type), _literal(p.default), _literal(p.help)]
    for f in fields(Param)[4:]:
        value = getattr(p, f.name)
        if value != getattr(default, f.name):
            args.append(f"{f.name}={_literal(value)}")
    return "P(" + ", ".join(args) + ")"


def live_tables() -> tuple[dict[str, Any], tuple[str, ...], dict[str, Param]]:
    """What the modules declare now (imports every built-in protocol and metric module):
    ``name -> (params, summary, privacy model)``, the metric names, the metric settings."""
    from ldpgraph.protocols import registry
    from ldpgraph.server.evaluation import base

    protocols = {}
    for name in registry.BUILTIN:
        entry = _live_entry(name)
        protocols[name] = (entry.params, entry.summary, entry.privacy_model)
    names = tuple(n for n in base.metric_names() if n in base.BUILTIN)
    settings = {p.name: p for n in names for p in base.METRICS[n].settings}  # built-in metrics only
    return protocols, names, settings


def _shares(per_epsilon: dict[float, list[float]]) -> tuple[float, ...] | None:
    """The figures of ``per_epsilon`` (ε -> figures at that ε) as multiples of ε, when they are
    (the same multiples at every ε, to 1e-12); else None."""
    shares = [tuple(v / e for v in values) for e, values in per_epsilon.items()]
    first = shares[0]
    if any(
        len(other) != len(first) or any(not math.isclose(a, b, rel_tol=1e-12) for a, b in
                                         zip(first, other, strict=True))
        for other in shares[1:]
    ):  # fmt: skip
        return None
    return first


def early_arithmetic() -> dict[str, Any]:
    """What :mod:`.checks_early` needs to refuse a run before importing a protocol module
    (which imports NumPy and SciPy): for each built-in protocol as ``ldpgraph run`` builds it
    with no protocol flag given, its rounds' charges and round 0's randomized-response ε per
    adjacency bit as multiples of ε (``None``: not a fixed multiple, a raw upload, or reports
    sampled at a rate of their own: no early refusal); the smallest charge a node accepts; the
    largest ε a run takes; the synthetic graph's default size and degree, and its largest size."""
    from ldpgraph.client.refusals import MIN_CHARGE
    from ldpgraph.protocols import registry
    from ldpgraph.protocols.base import MAX_EPSILON

    from .config import RunConfig
    from .datasets.synthetic import SYNTHETIC_DEFAULTS, SYNTHETIC_MAX_NODES

    out: dict[str, tuple[tuple[float, ...] | None, float | None]] = {}
    for name in registry.BUILTIN:
        charges: dict[float, list[float]] = {}
        adjacency: dict[float, list[float]] = {}
        for eps in (1.0, 3.0, 8.0):
            cfg = RunConfig(protocol=name, epsilon=eps, trust_curator=True).validate()
            protocol = cfg.built_protocol()
            if protocol.raw_upload:
                break
            charges[eps] = [float(protocol.round_epsilon(r)) for r in range(int(protocol.rounds))]
            parts = protocol.epsilon_parts(0)
            keep = getattr(protocol, "keep_probability", None)
            if callable(keep) and any(float(keep(n)) != 1.0 for n in (2, 10**3, 10**7, 10**9)):
                adjacency = {}  # samples its reports: μ is a function of n
            elif not protocol.schema(0).adjacency or parts is None:
                adjacency[eps] = [0.0]
            else:
                adjacency[eps] = [float(parts.adjacency_bit)]
        share = _shares(adjacency) if adjacency and len(adjacency) == len(charges) else None
        out[name] = (_shares(charges) if charges else None, share[0] if share else None)
    synthetic = {k: SYNTHETIC_DEFAULTS[k] for k in ("n", "avg_degree")}
    synthetic["max_n"] = SYNTHETIC_MAX_NODES
    return {
        "protocols": out,
        "min_charge": float(MIN_CHARGE),
        "max_epsilon": float(MAX_EPSILON),
        "synthetic": synthetic,
    }


def render() -> str:
    """The source of :mod:`.schema_table` from the live declarations: each distinct
    declaration once (``_D``), the protocols and metric settings naming them by index."""
    protocols, names, settings = live_tables()
    decls: dict[Param, int] = {}
    for params, _summary, _model in protocols.values():
        for p in params:
            decls.setdefault(p, len(decls))
    for p in settings.values():
        decls.setdefault(p, len(decls))
    out = [
        '"""Generated by ``python -m ldpgraph.simulation.schema_generate --write`` from the',
        'built-in protocols\' and metrics\' declarations (see that module); do not edit."""',
        "",
        "# ruff: noqa: E501",
        "import math  # noqa: F401  (an infinite default, when one is declared)",
        "",
        "from ldpgraph.protocols.params import Param as P",
        "",
        "#: schema_static.source_hash() of the sources this table was generated from",
        f"SOURCE_HASH = {schema_static.source_hash()!r}",
        "_D = [",
        *(f"    {_param_source(p)}," for p in decls),
        "]",
        "#: name -> (parameters, summary, privacy model)",
        "PROTOCOLS = {",
    ]
    for name, (params, summary, model) in protocols.items():
        refs = "".join(f"_D[{decls[p]}], " for p in params)
        out.append(f"    {name!r}: (({refs}), {summary!r}, {model!r}),")
    out.append("}")
    out.append(f"METRIC_NAMES = {names!r}")
    out.append("METRIC_SETTINGS = {")
    out.extend(f"    {n!r}: _D[{decls[p]}]," for n, p in settings.items())
    out.append("}")
    early = early_arithmetic()
    out.append("#: checks_early: name -> (round charges / ε, round 0's ε per adjacency bit / ε)")
    out.append("EARLY = {")
    out.extend(f"    {n!r}: {v!r}," for n, v in early["protocols"].items())
    out.append("}")
    out.append(f"EARLY_MIN_CHARGE = {early['min_charge']!r}")
    out.append(f"EARLY_MAX_EPSILON = {early['max_epsilon']!r}")
    out.append(f"EARLY_SYNTHETIC = {early['synthetic']!r}")
    return "\n".join(out) + "\n"


def mismatches() -> list[str]:
    """What differs between the table and the live declarations (empty: up to date)."""
    import importlib

    from . import schema_table

    table = importlib.reload(schema_table)
    protocols, names, settings = live_tables()
    out = [
        f"protocol {n!r}"
        for n in {*protocols, *table.PROTOCOLS}
        if protocols.get(n) != table.PROTOCOLS.get(n)
    ]
    if tuple(table.METRIC_NAMES) != names:
        out.append("metric names")
    if getattr(table, "SOURCE_HASH", None) != schema_static.source_hash():
        out.append("the sources' hash")
    early = early_arithmetic()
    if (
        getattr(table, "EARLY", None) != early["protocols"]
        or getattr(table, "EARLY_MIN_CHARGE", None) != early["min_charge"]
        or getattr(table, "EARLY_MAX_EPSILON", None) != early["max_epsilon"]
        or getattr(table, "EARLY_SYNTHETIC", None) != early["synthetic"]
    ):
        out.append("the early refusals' arithmetic")
    out += [
        f"metric setting {n!r}"
        for n in {*settings, *table.METRIC_SETTINGS}
        if settings.get(n) != table.METRIC_SETTINGS.get(n)
    ]
    return sorted(out)


def table_path() -> Path:
    return Path(__file__).with_name("schema_table.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ldpgraph.simulation.schema_generate")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="rewrite simulation/schema_table.py")
    group.add_argument("--check", action="store_true", help="exit 1 when it is out of date")
    args = parser.parse_args(argv)
    path = table_path()
    if args.write:
        path.write_text(render())
        print(f"wrote {path}")
        return 0
    stale = mismatches()
    if stale:
        print(
            f"{path} is out of date ({'; '.join(stale)}): "
            "python -m ldpgraph.simulation.schema_generate --write"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
