"""The configuration's keys, each declared once: the run's own keys (fields of
:class:`~ldpgraph.simulation.config.RunConfig`, declared with :func:`key`), every registered
protocol's parameters and every metric's settings (:class:`~ldpgraph.protocols.params.Param`
declarations in their modules, derived here: :func:`derived_keys`). Everything that lists or
describes keys (``ldpgraph run``'s flags, sweeps, the Flower run-config table, the run
identity) asks the functions here (:func:`key_names`, :func:`key_default`, :func:`section_of`,
:func:`key_help`, :func:`key_choices`, :func:`key_param`), never the dataclass's fields.
Importing this module loads no protocol or metric module: the derived keys are computed when
first asked for.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ldpgraph.protocols.params import Param, did_you_mean


class ConfigError(ValueError):
    """A bad run configuration; the message is meant for the user, one line."""


#: The configuration's sections, in the order ``ldpgraph run --help`` shows them. ``data``,
#: ``protocol`` (only the chosen protocol's parameters count), ``train``, ``nodes`` (the
#: settings the harness gives every simulated node as its own) and ``metrics`` decide a run's
#: result; ``run`` says where and how it executes (the seed, which it also holds, decides the
#: result too).
SECTIONS: dict[str, str] = {
    "data": "data: the graph and its split",
    "protocol": "protocol: the privacy mechanism and its parameters",
    "train": "train: the model trained on the release (server-side post-processing)",
    "nodes": "nodes: what every simulated node configures for itself (simulation only)",
    "metrics": "metrics: what is measured on the release",
    "run": "run: where and how the run executes",
}


def key(
    default: Any,
    section: str,
    help: str = "",
    *,
    choices: tuple[str, ...] | None = None,
    result: bool = True,
    added_with: Any = None,
) -> Any:
    """A run key of the configuration itself (not a protocol parameter or metric setting):
    its default, section, help, allowed values and whether it decides the run's result (a key
    that only says where or how a run executes is left out of the run's identity,
    :mod:`ldpgraph.simulation.results.identity`). Its declaration is a :class:`Param` like
    every other knob's (:func:`key_param`); ``added_with``: for a key added after results
    stores were in use, the value stored runs had (their identity leaves it out there)."""
    if section not in SECTIONS:
        raise ValueError(f"unknown section {section!r}")
    decl = Param("", type(default), default, help, choices=choices, added_with=added_with)
    meta = {"section": section, "help": help, "choices": choices, "result": result, "decl": decl}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Derived:
    """A key derived from a declaration elsewhere: a protocol parameter (section
    ``protocol``) or a metric setting (``metrics``). ``per_protocol``: the protocols that
    declare it disagree on its default, so the key's default is its type's empty value
    (``0.0``, ``""``), which stands for the chosen protocol's own default (resolved in
    :meth:`RunConfig.validate` and in the run identity)."""

    param: Param
    section: str
    per_protocol: bool = False


_CACHE: list[Any] = [None, {}]


def derived_keys() -> dict[str, Derived]:
    """The protocol parameters of every registered protocol (first declaration order over the
    registry) and the settings of every metric: the keys the configuration holds besides its
    own, flattened. The built-in ones are read from the generated table of
    :mod:`.schema_static` until their modules are imported (so listing keys imports no NumPy);
    recomputed when a protocol or metric registers at runtime."""
    from ldpgraph.protocols import registry

    from . import schema_static

    metrics = sys.modules.get("ldpgraph.server.evaluation.base")
    stamp = (registry.generation(), metrics.generation() if metrics else None)
    if _CACHE[0] == stamp:
        return _CACHE[1]
    seen: dict[str, list[Param]] = {}
    builtin: dict[str, list[Param]] = {}
    for entry in schema_static.protocol_entries():
        for param in entry.params:
            if param.run_key:
                seen.setdefault(param.name, []).append(param)
                if entry.name in registry.BUILTIN:
                    builtin.setdefault(param.name, []).append(param)
    out: dict[str, Derived] = {}
    for name, params in seen.items():
        # A plug-in cannot move the default of a key the built-in protocols declare.
        params = builtin.get(name, params)
        common = Counter(params).most_common(1)[0][0]
        if len({p.default for p in params}) > 1:
            out[name] = Derived(common.but(default=common.type()), "protocol", True)
        else:
            out[name] = Derived(common, "protocol")
    for name, param in schema_static.metric_settings().items():
        if name in out or name in _own_fields():
            raise ValueError(f"metric setting {name!r} is also a protocol parameter or run key")
        out[name] = Derived(param, "metrics")
    clash = set(out) & set(_own_fields())
    if clash:
        raise ValueError(f"protocol parameters {sorted(clash)} are also run keys")
    metrics = sys.modules.get("ldpgraph.server.evaluation.base")
    _CACHE[:] = [(registry.generation(), metrics.generation() if metrics else None), out]
    return out


def key_names() -> tuple[str, ...]:
    """Every configuration key (underscore form), in schema order: ``protocol``, the
    protocols' parameters, the configuration's own keys, the metrics' settings. Callers list
    keys through this (and :func:`key_default`, :func:`section_of`, :func:`key_help`,
    :func:`key_choices`, :func:`key_param`), never through the dataclass's fields: how keys
    are declared is this module's business."""
    derived = derived_keys()
    own = [name for name in _own_fields() if name != "protocol"]
    by = {s: [n for n, d in derived.items() if d.section == s] for s in ("protocol", "metrics")}
    return ("protocol", *by["protocol"], *own, *by["metrics"])


def key_param(name: str) -> Param:
    """The declaration of configuration key ``name`` (either spelling); for a protocol
    parameter several protocols share, the most common one (a protocol may narrow it)."""
    name = name.replace("-", "_")
    if name in _own_decls():
        return _own_decls()[name]
    try:
        return derived_keys()[name].param
    except KeyError:
        raise KeyError(f"unknown configuration key {name!r}") from None


def key_default(name: str) -> Any:
    """The default of configuration key ``name`` (either spelling)."""
    return key_param(name).default


def section_of(name: str) -> str:
    """The section of configuration key ``name`` (either spelling)."""
    name = name.replace("-", "_")
    if name in _own_fields():
        return _own_fields()[name].metadata["section"]
    try:
        return derived_keys()[name].section
    except KeyError:
        raise KeyError(f"unknown configuration key {name!r}") from None


def keys_in(section: str) -> tuple[str, ...]:
    """The configuration keys of ``section`` (underscore form), in schema order."""
    return tuple(name for name in key_names() if section_of(name) == section)


def non_result_keys() -> tuple[str, ...]:
    """The keys that only say where or how a run executes (left out of its identity)."""
    return tuple(name for name, f in _own_fields().items() if not f.metadata["result"])


def per_protocol_keys() -> dict[str, Any]:
    """The keys whose value stands for the chosen protocol's own default (δ, the ε
    convention), with that standing-in value."""
    return {n: d.param.default for n, d in derived_keys().items() if d.per_protocol}


def key_help(name: str) -> str:
    """The help of configuration key ``name`` (a protocol parameter's: its most common
    declaration's; ``ldpgraph run`` shows the chosen protocol's own)."""
    return key_param(name).help


def key_choices(name: str) -> tuple[str, ...] | None:
    """The allowed values of a run key or metric setting; None for a protocol parameter,
    whose values each protocol checks against its own declaration."""
    name = name.replace("-", "_")
    if section_of(name) == "protocol" and name != "protocol":
        return None
    return key_param(name).choices


def coerce(raw: str, value: Any) -> Any:
    """``value`` as the type of key ``raw`` (either spelling; ``"true"``/``"1"`` for a
    boolean, as Flower's run config and environment strings write them), or
    :class:`ConfigError`; the value's range is :meth:`RunConfig.validate`'s to check."""
    name = raw.replace("-", "_")
    if name not in _all_keys():
        known = [k.replace("_", "-") for k in key_names()]
        hint = did_you_mean(raw.replace("_", "-"), known)
        raise ConfigError(f"unknown configuration key {raw!r}{hint}")
    kind = type(key_default(name))
    if kind is bool:
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
            value = value.lower() in ("true", "1")
        if not isinstance(value, bool):
            raise ConfigError(f"{raw} must be true or false, got {value!r}")
        return value
    try:
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{raw} must be of type {kind.__name__}, got {value!r}") from None


def flatten_sections(values: Mapping[str, Any]) -> dict[str, Any]:
    """Flat keys from a mapping that may group them by section: ``{"train": {"lr": 0.1}}``
    and ``{"train.lr": 0.1}`` both give ``{"lr": 0.1}``; plain keys pass through. A key under
    a section it does not belong to, an unknown section or a key given twice is an error."""
    out: dict[str, Any] = {}
    seen: dict[str, str] = {}

    def add(section: str | None, name: str, value: Any, spelled: str) -> None:
        norm = name.replace("-", "_")
        if section is not None:
            if section not in SECTIONS:
                hint = did_you_mean(section, list(SECTIONS))
                raise ConfigError(
                    f"unknown configuration section {section!r} in {spelled!r}{hint}; "
                    f"sections: {', '.join(SECTIONS)}"
                )
            if norm in _all_keys() and section_of(norm) != section:
                raise ConfigError(
                    f"{spelled!r}: {name} belongs in section {section_of(norm)!r}, not {section!r}"
                )
        if norm in seen:
            raise ConfigError(f"configuration key {name!r} given twice ({seen[norm]}, {spelled})")
        seen[norm] = spelled
        out[name] = value

    for raw, value in values.items():
        raw = str(raw)
        if raw in SECTIONS and isinstance(value, Mapping):
            for name, inner in value.items():
                add(raw, str(name), inner, f"{raw}.{name}")
        elif "." in raw:
            section, _, name = raw.partition(".")
            add(section, name, value, raw)
        else:
            add(None, raw, value, raw)
    return out


def _all_keys() -> set[str]:
    return {*_own_fields(), *derived_keys()}


#: RunConfig's own fields and their declarations, handed over by :mod:`.config` when it is
#: imported (this module sits below it: config imports schema, never the reverse).
_OWN: dict[str, dict[str, Any]] = {"fields": {}, "decls": {}}


def register_own_keys(fields_: dict[str, Any], decls: dict[str, Param]) -> None:
    """Called once by :mod:`.config`: the run's own keys (data, train, nodes, run sections)."""
    _OWN["fields"], _OWN["decls"] = fields_, decls


def _own_fields() -> dict[str, Any]:
    if not _OWN["fields"]:
        raise RuntimeError("import ldpgraph.simulation.config before asking the schema for keys")
    return _OWN["fields"]


def _own_decls() -> dict[str, Param]:
    _own_fields()
    return _OWN["decls"]
