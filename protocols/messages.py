"""The message a server sends a node, typed: what it asks, of which protocol and round, with
which parameters and public values, and where the nodes' data lies.

It travels as one flat Flower ConfigRecord (``CONFIG_RECORD`` in
:mod:`ldpgraph.protocols.reports`) whose keys and values are exactly those of the untyped dict
that came before it, so SuperNodes of earlier versions and the simulation fingerprints are
unaffected::

    hello:  {"op": "hello", **where}
    report: {"op": "report", "round": r, **where, "protocol": name, **params, **public}

:meth:`RoundMessage.from_record` is the node's parser and trusts nothing: an unknown op, a
round that is not a non-negative integer, a missing or unknown protocol name, or a value a
ConfigRecord cannot hold raises :class:`MessageError` with a one-line reason (the node refuses).
Nothing in a message sets a node's budget, consent, seed or randomness: there is no field for
them, and a value a server adds under such a name is only another public value the node's
guard never reads.

Standard library only (and the registry, which is too): the client imports this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .registry import UnknownProtocolError, protocol_info

#: What a server can ask: a SuperNode's hosted node ids, or one round's reports.
HELLO, REPORT = "hello", "report"
OPS = (HELLO, REPORT)

#: Where the nodes' data lies (a collector adds them to every message after the hello): the
#: simulation node store, the logical nodes per SuperNode, the graph's size and the partition
#: a deployed node file must belong to.
WHERE_KEYS = ("data", "nodes-per-client", "num-nodes", "partition")
_WHERE_TYPES: dict[str, type] = {
    "data": str,
    "nodes-per-client": int,
    "num-nodes": int,
    "partition": str,
}

#: Keys no protocol value may use: on the flat wire they would be read as something else.
RESERVED_KEYS = frozenset(("op", "round", "protocol", *WHERE_KEYS))

_SCALARS = (bool, int, float, str, bytes)


class MessageError(ValueError):
    """A server message a node cannot rely on; the message says why, in one line."""


def _check_value(key: str, value: Any) -> None:
    """A value a Flower ConfigRecord can hold: a scalar, or a list of scalars of one type."""
    if isinstance(value, list):
        if value and (
            not isinstance(value[0], _SCALARS) or not all(type(v) is type(value[0]) for v in value)
        ):
            raise MessageError(f"value of {key!r} is not a list of scalars of one type")
        return
    if not isinstance(value, _SCALARS):
        raise MessageError(f"value of {key!r} has type {type(value).__name__}")


def _frozen(values: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    """A read-only copy without the absent (None) values, every key and value checked."""
    if not isinstance(values, Mapping):
        raise MessageError(f"{what} is not a mapping ({type(values).__name__})")
    out: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise MessageError(f"{what} key {key!r} is not a string")
        if value is None:  # a ConfigRecord cannot carry None: an absent value is not sent
            continue
        _check_value(key, value)
        out[key] = value
    return MappingProxyType(out)


def _round(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MessageError(f"round {value!r} is not an integer")
    if value < 0:
        raise MessageError(f"round {value} is negative")
    return value


def declared_params(protocol: str) -> tuple[str, ...] | None:
    """The parameters the registry declares for ``protocol`` (what a node rebuilds it from),
    or None for a protocol the registry does not know."""
    try:
        return protocol_info(protocol).param_names
    except UnknownProtocolError:
        return None


@dataclass(frozen=True)
class RoundMessage:
    """One server message. ``op``: :data:`HELLO` (which nodes a SuperNode hosts) or
    :data:`REPORT` (one round's reports). A report names its ``protocol`` and ``round``;
    ``params``: the protocol's parameters the registry declares (what a node rebuilds the
    protocol from); ``public``: every other public value of the round (the server's feedback on
    the previous round, the round's public values such as LDPGen's partition seed, and any
    informative value a protocol's config states beyond its parameters); ``where``: where the
    nodes' data lies (:data:`WHERE_KEYS`). A hello carries ``where`` only. Absent (None) values
    are dropped; every other value must fit a ConfigRecord."""

    op: str
    protocol: str | None = None
    round: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    public: Mapping[str, Any] = field(default_factory=dict)
    where: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise MessageError(f"unknown operation {self.op!r}")
        for name in ("params", "public", "where"):
            object.__setattr__(self, name, _frozen(getattr(self, name), name))
        for key, value in self.where.items():
            kind = _WHERE_TYPES.get(key)
            if kind is None:
                raise MessageError(f"{key!r} is not a where-value (one of {WHERE_KEYS})")
            if isinstance(value, bool) or not isinstance(value, kind):
                raise MessageError(f"{key!r} must be a {kind.__name__}, got {value!r}")
            if kind is int and value < 0:
                raise MessageError(f"{key!r} is negative ({value})")
        if self.op == HELLO:
            if self.protocol is not None or self.round is not None or self.params or self.public:
                raise MessageError("a hello message carries where-values only")
            return
        if not isinstance(self.protocol, str) or not self.protocol:
            raise MessageError(f"protocol name {self.protocol!r} is not a non-empty string")
        _round(self.round)
        for key in (*self.params, *self.public):
            if key in RESERVED_KEYS:
                raise MessageError(f"protocol value {key!r} uses a reserved key")
        both = set(self.params) & set(self.public)
        if both:
            raise MessageError(f"{sorted(both)} are both a parameter and a public value")

    # -- building (server) ------------------------------------------------------------------
    @classmethod
    def hello(cls, where: Mapping[str, Any]) -> RoundMessage:
        """The first message: which of the graph's nodes does a SuperNode host?"""
        return cls(HELLO, where=where)

    @classmethod
    def report(
        cls,
        round_: int,
        config: Mapping[str, Any],
        public: Mapping[str, Any] | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> RoundMessage:
        """Round ``round_``'s request of the protocol ``config`` describes (its ``protocol``
        name and parameters: ``LdpProtocol.config()``), with the round's public values.
        A config value the registry does not declare as a parameter travels as a public value,
        as a node reads it; a protocol the registry does not know (a test's own) keeps all of
        its config as parameters."""
        config = dict(config)
        name = config.pop("protocol", None)
        declared = declared_params(name) if isinstance(name, str) else None
        keep = set(config) if declared is None else set(declared)
        params = {k: v for k, v in config.items() if k in keep}
        extra = {k: v for k, v in config.items() if k not in keep}
        return cls(REPORT, name, round_, params, {**extra, **(public or {})}, where or {})

    def with_where(self, where: Mapping[str, Any]) -> RoundMessage:
        """This message, telling where the nodes' data lies."""
        return replace(self, where=where)

    # -- reading ----------------------------------------------------------------------------
    def protocol_values(self) -> dict[str, Any]:
        """What a protocol's client step and ``num_features`` read: its name, parameters and
        the round's public values, as one plain dict (the same on every backend)."""
        if self.op != REPORT:
            raise MessageError("a hello message has no protocol values")
        return {"protocol": self.protocol, **self.params, **self.public}

    # -- the wire ---------------------------------------------------------------------------
    def to_record(self) -> dict[str, Any]:
        """The flat dict a ConfigRecord carries (exactly the keys and values of the untyped
        message of earlier versions)."""
        if self.op == HELLO:
            return {"op": HELLO, **self.where}
        return {"op": REPORT, "round": self.round, **self.where, **self.protocol_values()}

    @classmethod
    def from_record(cls, values: Mapping[str, Any]) -> RoundMessage:
        """Parse a received message; :class:`MessageError` says what is wrong with it."""
        if not isinstance(values, Mapping):
            raise MessageError(f"a message is a mapping, not {type(values).__name__}")
        op = values.get("op")
        if op not in OPS:
            raise MessageError(f"unknown operation {op!r}")
        for key, value in values.items():
            if not isinstance(key, str):
                raise MessageError(f"key {key!r} is not a string")
            if value is None:
                raise MessageError(f"value of {key!r} is None")
            _check_value(key, value)
        where = {k: v for k, v in values.items() if k in _WHERE_TYPES}
        rest = {k: v for k, v in values.items() if k not in _WHERE_TYPES and k != "op"}
        if op == HELLO:
            if rest:
                raise MessageError(f"a hello message carries {sorted(rest)[0]!r}")
            return cls(HELLO, where=where)
        if "round" not in rest:
            raise MessageError("a report request names no round")
        round_ = _round(rest.pop("round"))
        name = rest.pop("protocol", None)
        if not isinstance(name, str):
            raise MessageError(f"protocol name {name!r} is not a string")
        declared = declared_params(name)
        if declared is None:
            raise MessageError(f"unknown protocol {name!r}")
        params = {k: v for k, v in rest.items() if k in declared}
        public = {k: v for k, v in rest.items() if k not in declared}
        return cls(REPORT, name, round_, params, public, where)


__all__ = [
    "HELLO",
    "OPS",
    "REPORT",
    "RESERVED_KEYS",
    "WHERE_KEYS",
    "MessageError",
    "RoundMessage",
    "declared_params",
]
