"""A run's identity: which configuration keys decide its result, and their hash.

``run_key`` is the SHA-256 of the canonical JSON of the configuration keys that determine a
run's result, seed included; ``config_hash`` is the same without the seed, so the repeats of one
configuration group together. Keys that only say where or how a run executes (data root, run
directory, device, collection backend, Ray settings, timeouts) are left out: the backends give
the same reports for the same seed. So are the parameters of other protocols (identity version
2): a HoGS run's result does not depend on Blink's degree share, and a protocol added with new
parameters leaves every stored run's identity alone. ε stays in every identity (the store files
runs by it, even those of ``none``, which ignores it). Stores keyed by version 1 (every
protocol's parameters) are re-keyed once when opened (:mod:`.store`). Stored runs keep their
identity across releases: a key added later is left out of the hash at the value it was added
with (:data:`ADDED_KEY_DEFAULTS`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

#: Keys that are no configuration key but may sit in a stored configuration and do not change
#: a run's result (fnmatch patterns, underscore form). The configuration's own such keys are
#: marked in its schema (``result=False``: :func:`non_result_keys`).
EXTRA_NON_RESULT_KEYS: tuple[str, ...] = ("result_path", "ray_*")


def non_result_keys() -> tuple[str, ...]:
    """The keys left out of every identity: the schema's where-and-how keys (data root, run
    directory, device, backend, Ray settings, timeouts) and :data:`EXTRA_NON_RESULT_KEYS`."""
    from .. import config

    return (*config.non_result_keys(), *EXTRA_NON_RESULT_KEYS)


#: Run keys and protocol parameters added to the configuration after stores were in use, with
#: the default they were added with: at that default they are left out of the hash, so a run
#: recorded before the key existed keeps its identity (and a sweep does not redo it). A knob
#: declares it (``added_with=`` of its ``Param`` or of :func:`~ldpgraph.simulation.schema.key`),
#: and :data:`ADDED_KEY_DEFAULTS` reads the declarations.


class _AddedKeys(Mapping[str, Any]):
    """The added-later keys: every declaration's ``added_with`` (read when first used, so
    importing this module loads no protocol or metric)."""

    _cache: tuple[Any, dict[str, Any]] = (None, {})

    def _all(self) -> dict[str, Any]:
        from .. import config

        derived = config.derived_keys()  # the same object until a component registers
        if self._cache[0] is derived:
            return self._cache[1]
        declared = {
            name: param.added_with
            for name in config.key_names()
            if (param := config.key_param(name)).added_with is not None
        }
        self._cache = (derived, declared)
        return self._cache[1]

    def __getitem__(self, name: str) -> Any:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


ADDED_KEY_DEFAULTS: Mapping[str, Any] = _AddedKeys()
#: Run-configuration defaults that changed after stores were in use: key -> former default.
#: A stored run keeps its identity because its configuration is stored whole (a key missing
#: from a stored configuration is one added later: :data:`ADDED_KEY_DEFAULTS`); an experiment
#: file that relied on a former default must state it, or ``ldpgraph sweep`` refuses to resume
#: a store holding runs made with it.
CHANGED_DEFAULTS: dict[str, Any] = {
    "feature_share": 0.5,
    "center_features": False,
}


def canonical_config(config: Any) -> dict[str, Any]:
    """The full configuration as a plain dict: keys in underscore form, the missing keys of
    :class:`~ldpgraph.simulation.config.RunConfig` filled with their defaults, except a key of
    :data:`ADDED_KEY_DEFAULTS`: a configuration without it was recorded before the key existed,
    so it takes the value the key was added with (not today's default, which may differ).
    Accepts a RunConfig or a mapping (keys such as ``feature-share`` are accepted too)."""
    from .. import config as schema

    if hasattr(config, "to_dict"):
        config = config.to_dict()
    out = {**schema.RunConfig().to_dict(), **ADDED_KEY_DEFAULTS}
    out.update({str(k).replace("-", "_"): v for k, v in dict(config).items()})
    standing_in = {k: v for k, v in schema.per_protocol_keys().items() if out.get(k) == v}
    if standing_in:  # δ's 0 and the convention's "": the protocol's own (RunConfig.validate)
        from ldpgraph.protocols import registry

        try:
            declared = {p.name: p for p in registry.protocol_info(str(out["protocol"])).params}
        except registry.UnknownProtocolError:
            declared = {}
        for name in standing_in:
            if name in declared:
                out[name] = declared[name].default
    return out


def _is_central(protocol: Any) -> bool:
    """Whether ``protocol`` names a central strategy (whose release noise ``seeded`` decides);
    an unknown protocol counts as one, so its identity cannot shrink by accident."""
    from ldpgraph.protocols import registry
    from ldpgraph.protocols.central.base import CentralStrategy

    try:
        cls = registry.protocol_info(str(protocol)).resolve()
    except registry.UnknownProtocolError:
        return True
    return not isinstance(cls, type) or issubclass(cls, CentralStrategy)


def _canon(value: Any) -> Any:
    """Numbers normalised so that 8 and 8.0 hash alike; containers recursively."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canon(v) for v in value]
    if hasattr(value, "item") and not hasattr(value, "__len__"):  # numpy scalar
        value = value.item()
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return repr(value) if not math.isfinite(value) else value
    return str(value)


#: Which keys a hash covers: 1 = every protocol's parameters (stores before the registry),
#: 2 = the chosen protocol's only.
IDENTITY_VERSION = 2


def other_protocols_keys(config: dict[str, Any]) -> set[str]:
    """The protocol parameters of ``config`` that its protocol does not declare (ε excepted).
    For a protocol this ldpgraph does not know (a plug-in not registered now) nothing is left
    out, so its identity cannot shrink by accident."""
    from ldpgraph.protocols import registry

    try:
        declared = set(registry.protocol_info(str(config.get("protocol"))).param_names)
    except registry.UnknownProtocolError:
        return set()
    return set(registry.parameters()) - declared - {"epsilon"}


def config_hash(
    config: Any,
    exclude: Iterable[str] | None = None,
    version: int = IDENTITY_VERSION,
) -> str:
    """SHA-256 of the canonical JSON of ``config`` without the keys matching ``exclude``
    (fnmatch patterns) and, from identity ``version`` 2 on, without the parameters of other
    protocols. By default the seed is left out too: repeats of one configuration share this
    hash."""
    patterns = (*non_result_keys(), "seed") if exclude is None else tuple(exclude)
    cfg = canonical_config(config)
    added = dict(ADDED_KEY_DEFAULTS)
    others = other_protocols_keys(cfg) if version >= 2 else set()
    if not _is_central(cfg.get("protocol")):
        # Only a central release's noise depends on it; every other run is the same either way.
        others.add("seeded")
    kept = {
        k: _canon(v)
        for k, v in cfg.items()
        if not any(fnmatch.fnmatchcase(k, p) for p in patterns)
        and not (k in added and v == added[k])
        and k not in others
    }
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def run_key(config: Any, version: int = IDENTITY_VERSION) -> str:
    """The identity of one run: :func:`config_hash` with the seed included."""
    return config_hash(config, exclude=non_result_keys(), version=version)
