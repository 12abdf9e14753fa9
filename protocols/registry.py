"""Protocol names → classes, each protocol's declared parameters, and rebuilding a protocol from
the flat config a node receives in its round message.

A protocol module declares itself once, on its class::

    @register("hogs", params=(EPSILON, FEATURE_SHARE, TAU, STEPS), summary="HoGS: …")
    class HogsProtocol(LdpProtocol): ...

and the built-in ones are listed in :data:`BUILTIN` (``name -> "module:Class"``; a test holds
it equal to what the modules register, :mod:`.catalog`). Nothing here imports a protocol
module until that protocol is used, so a node that runs ``hogs`` imports ``ldp.hogs`` and
nothing else — never torch, never a central strategy. Tests and plug-ins register at runtime
with ``register(name, cls_or_path, params=…)`` (removed again with :func:`unregister`), and a
plug-in module named in ``LDPGRAPH_PLUGINS`` is imported before the first lookup.

Standard library only: the client imports this.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .catalog import load_plugins, path_of, resolve
from .params import Param, ProtocolParameterError, declarations_by_name, did_you_mean

if TYPE_CHECKING:
    from .base import LdpProtocol

#: The packages whose modules register the built-in protocols.
PACKAGES = ("ldpgraph.protocols.ldp", "ldpgraph.protocols.central")

_LDP = "ldpgraph.protocols.ldp."
_CENTRAL = "ldpgraph.protocols.central."
#: The built-in protocols, ``name -> "module:Class"``, in the order listings show them (held
#: equal to what the modules of :data:`PACKAGES` register by tests/protocols/test_registry.py).
BUILTIN: dict[str, str] = {
    "blink-hard": _LDP + "blink:BlinkProtocol",
    "blink-soft": _LDP + "blink:BlinkProtocol",
    "blink-hybrid": _LDP + "blink:BlinkProtocol",
    "fp-blink": _LDP + "blink:BlinkProtocol",
    "blink-fr": _LDP + "blink:BlinkProtocol",
    "none": _LDP + "floors:NonPrivate",
    "features-only": _LDP + "floors:FeaturesOnly",
    "hogs": _LDP + "hogs:HogsProtocol",
    "hogs-edge": _LDP + "hogs:HogsProtocol",
    "hogs-arr": _LDP + "hogs_arr:HogsArrProtocol",
    "hogs-kprop": _LDP + "hogs_kprop:HogsKpropProtocol",
    "ldpgen": _LDP + "ldpgen:LdpGenProtocol",
    "fp-ldpgen": _LDP + "ldpgen:LdpGenProtocol",
    "rr": _LDP + "rr:RRProtocol",
    "rr-edge": _LDP + "rr:RRProtocol",
    "solitude": _LDP + "solitude:SolitudeProtocol",
    "edge-delete": _CENTRAL + "baselines:EdgePerturbation",
    "edge-add": _CENTRAL + "baselines:EdgePerturbation",
    "edge-random": _CENTRAL + "baselines:EdgePerturbation",
    "edgerand": _CENTRAL + "baselines:EdgePerturbation",
    "lapgraph": _CENTRAL + "baselines:EdgePerturbation",
    "dpar-em0": _CENTRAL + "dpar:Dpar",
    "dpar-em1": _CENTRAL + "dpar:Dpar",
    "dpar-gm": _CENTRAL + "dpar:Dpar",
    "dpar-nodp": _CENTRAL + "dpar:Dpar",
    "dpar-features": _CENTRAL + "dpar:Dpar",
    "dpar-bounded": _CENTRAL + "dpar_bounded:DparBounded",
    "gap-edge": _CENTRAL + "gap:GapEdge",
    "gap-node": _CENTRAL + "gap_node:GapNode",
    "dp-sage": _CENTRAL + "dp_sage:DpSage",
    "dpggan": _CENTRAL + "dpggan:DpgGan",
    "dpgvae": _CENTRAL + "dpggan:DpgGan",
    "ppgsl": _CENTRAL + "ppgsl:Ppgsl",
    "privdpr": _CENTRAL + "privdpr:PrivDpr",
    "dpr-nodp": _CENTRAL + "privdpr:PrivDpr",
}


class UnknownProtocolError(ValueError):
    pass


@dataclass(frozen=True)
class ProtocolInfo:
    """What the registry knows of one protocol: its class (or ``"module:Class"`` until first
    use), its parameters, a one-line summary, the name reports and figures give it (the
    paper's), and whether its server trains on the true features (edge LDP only: the curator
    view then carries the feature matrix)."""

    name: str
    target: type | str
    params: tuple[Param, ...]
    summary: str = ""
    label: str = ""
    public_features: bool = False
    runtime: bool = field(default=False, compare=False)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def resolve(self) -> type[LdpProtocol]:
        """The protocol class (imported now if registered by path)."""
        return resolve(self.target) if isinstance(self.target, str) else self.target

    def check(self, params: dict[str, Any]) -> dict[str, Any]:
        """Every declared parameter, checked: the given value or the default. An undeclared
        key is an error that names the accepted keys and the closest one."""
        known = self.param_names
        for key in params:
            if key not in known:
                raise ProtocolParameterError(
                    f"protocol {self.name!r} has no parameter {key!r}{did_you_mean(key, known)}; "
                    "it accepts: " + (", ".join(known) or "none")
                )
        return {p.name: p.check(self.name, params.get(p.name, p.default)) for p in self.params}


_INFOS: dict[str, ProtocolInfo] = {}
#: Bumped at every (un)registration: what is derived from the registry is recomputed then.
_GENERATION = [0]


def generation() -> int:
    """A number that changes whenever a protocol registers or is removed (a cache key)."""
    return _GENERATION[0]


def is_loaded(name: str) -> bool:
    """Whether protocol ``name`` is registered already (its module imported): asking for its
    entry then imports nothing (:mod:`ldpgraph.simulation.schema_static` reads the rest from
    a table)."""
    return name in _INFOS


def register(
    name: str,
    target: type | str | None = None,
    *,
    params: Iterable[Param] = (),
    summary: str = "",
    label: str = "",
    public_features: bool = False,
) -> Any:
    """Register protocol ``name``. As a class decorator (``target`` omitted) in a module of
    :data:`PACKAGES` (listed in :data:`BUILTIN`) or of a plug-in, or at runtime with the class
    or its ``"module:Class"`` path (a test's or a plug-in's protocol; :func:`unregister`
    removes it). The class (an
    :class:`~ldpgraph.protocols.base.LdpProtocol`) is built with
    ``cls.from_params(name, **checked_params)``."""
    params = tuple(params)
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"protocol {name!r} declares a parameter twice: {names}")

    def add(cls: type | str, runtime: bool) -> None:
        old = _INFOS.get(name)
        if old is not None and _path(old.target) != _path(cls):
            raise ValueError(f"protocol {name!r} is already registered by {_path(old.target)}")
        info = ProtocolInfo(name, cls, params, summary, label or name, public_features, runtime)
        _INFOS[name] = info
        _GENERATION[0] += 1

    if target is None:

        def decorate(cls: type) -> type:
            # A class outside the package is a plug-in's: removable like a runtime one.
            runtime = not cls.__module__.startswith(PACKAGES)
            if runtime and name in BUILTIN:
                raise ValueError(f"protocol {name!r} is built in ({BUILTIN[name]})")
            add(cls, runtime)
            return cls

        return decorate
    if name in builtin_paths():
        raise ValueError(f"protocol {name!r} is built in ({builtin_paths()[name]})")
    add(target, runtime=True)
    return target


def unregister(name: str) -> None:
    """Remove a protocol registered at runtime (test cleanup)."""
    info = _INFOS.get(name)
    if info is None or not info.runtime:
        raise KeyError(f"{name!r} is not a protocol registered at runtime")
    del _INFOS[name]
    _GENERATION[0] += 1


_path = path_of


def builtin_paths() -> dict[str, str]:
    """``name -> "module:Class"`` of every built-in protocol (:data:`BUILTIN`)."""
    return BUILTIN


def protocol_names() -> list[str]:
    """Every protocol's name: the built-in ones (in table order), then those registered at
    runtime or by a plug-in."""
    load_plugins()
    return list(dict.fromkeys([*BUILTIN, *_INFOS]))


def protocol_info(name: str) -> ProtocolInfo:
    """The registry entry of ``name``, importing its module on first use."""
    info = _INFOS.get(name)
    if info is None and name in BUILTIN:
        module = BUILTIN[name].partition(":")[0]
        importlib.import_module(module)
        info = _INFOS.get(name)
        if info is None:
            raise RuntimeError(f"{module} does not register protocol {name!r} (registry.BUILTIN)")
    if info is None:
        load_plugins()
        info = _INFOS.get(name)
    if info is None:
        names = protocol_names()
        raise UnknownProtocolError(
            f"unknown protocol {name!r}{did_you_mean(name, names)}; choose one of: "
            + ", ".join(names)
        )
    return info


def all_protocols() -> list[ProtocolInfo]:
    """Every protocol's entry (imports every protocol module: for listings and help)."""
    return [protocol_info(name) for name in protocol_names()]


def uses_public_features(name: str) -> bool:
    """Whether the server of protocol ``name`` needs the true features (``CuratorView``)."""
    return protocol_info(name).public_features


def public_feature_protocols() -> frozenset[str]:
    """The protocols whose server trains on the true features."""
    return frozenset(info.name for info in all_protocols() if info.public_features)


def parameters() -> dict[str, tuple[Param, list[str]]]:
    """Every parameter name some protocol declares: its most common declaration (a protocol
    may narrow the range or help of a shared one) and the protocols that declare it."""
    return declarations_by_name((info.name, info.params) for info in all_protocols())


def server_side_keys() -> tuple[str, ...]:
    """The parameters that some protocol applies on the server only (post-processing of
    reports it already has), sorted: a sweep reuses one collection for all their values."""
    return tuple(sorted(name for name, (p, _) in parameters().items() if p.server_side))


def describe(name: str) -> dict[str, Any]:
    """Protocol ``name`` as plain data (``ldpgraph protocols``): its privacy model (ldp,
    central or none), the unit its privacy report states at the defaults, its rounds, and each
    parameter with its type, default, allowed values and help."""
    info = protocol_info(name)
    protocol = make_protocol(name)
    return {
        "name": name,
        "label": info.label,
        "summary": info.summary,
        "privacy_model": protocol.privacy_model,
        "privacy_unit": protocol.privacy_report().unit,
        "rounds": protocol.rounds,
        "public_features": info.public_features,
        "raw_upload": protocol.raw_upload,
        "class": _path(info.target),
        "params": [
            {
                "name": p.name,
                "type": p.type.__name__,
                "default": p.default,
                "allowed": p.allowed,
                "server_side": p.server_side,
                "help": p.help,
            }
            for p in info.params
        ],
    }


def make_protocol(name: str, **params: Any) -> LdpProtocol:
    """Build protocol ``name`` from its parameters: each must be one the protocol declares
    (:class:`ProtocolParameterError` otherwise), within its range; the rest take their
    declared defaults."""
    info = protocol_info(name)
    values = info.check(params)
    return info.resolve().from_params(name, **values)


def protocol_from_config(cfg: dict[str, Any]) -> LdpProtocol:
    """Rebuild the protocol a server described in a round message: its declared parameters
    are taken from the message, the message's other keys (op, round, server feedback) are
    not parameters."""
    name = cfg.get("protocol")
    if not isinstance(name, str):
        raise UnknownProtocolError("round message has no protocol name")
    declared = protocol_info(name).param_names
    return make_protocol(name, **{k: v for k, v in cfg.items() if k in declared})
