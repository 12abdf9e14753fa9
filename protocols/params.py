"""The one declaration of a knob: a protocol parameter, a metric setting or a run key (name,
type, default, allowed values, help, whether the server applies it to reports it already has,
and the value a key added after stores were in use was added with). Everything else (the run
configuration's keys, CLI flags, the Flower run-config table, the run identity's added-later
keys) is derived from these declarations. Standard library only (the client imports it
through every protocol module)."""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` to a misspelt ``word``, or ""."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def declarations_by_name(
    declarers: Iterable[tuple[str, Iterable[Param]]],
) -> dict[str, tuple[Param, list[str]]]:
    """Every parameter name the ``(protocol name, its params)`` pairs declare: its most common
    declaration (a protocol may narrow the range or help of a shared one) and the protocols
    that declare it, in order. One aggregation for the live registry and the static table."""
    seen: dict[str, list[tuple[Param, str]]] = {}
    for protocol, params in declarers:
        for p in params:
            seen.setdefault(p.name, []).append((p, protocol))
    return {
        name: (Counter(p for p, _ in uses).most_common(1)[0][0], [n for _, n in uses])
        for name, uses in seen.items()
    }


class ProtocolParameterError(ValueError):
    """A parameter the protocol does not declare, or a value outside its declared range."""


@dataclass(frozen=True)
class Param:
    """One knob: its name (the run-configuration key, underscore form), type, default, allowed
    range (``low``/``high``, open ends with ``low_open``/``high_open``) or ``choices``, and
    help. ``server_side``: the server applies it to reports it already has (post-processing):
    every value reuses the same reports and spends no budget. ``run_key``: whether it is a key
    of the run configuration (a flag of ``ldpgraph run``, a line of the Flower table); off for
    library-only parameters. ``added_with``: for a key added after results stores were in use,
    the value it was added with (runs stored before it keep their identity at that value;
    ``None``: there from the start)."""

    name: str
    type: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[Any, ...] | None = None
    server_side: bool = False
    run_key: bool = True
    added_with: Any = None

    def but(self, **changes: Any) -> Param:
        """This parameter with some attributes changed (a protocol's own range or help)."""
        return replace(self, **changes)

    @property
    def allowed(self) -> str:
        """The allowed values in words: ``(0, 1]``, ``>= 0``, ``one of: or, and``."""
        if self.choices is not None:
            return "one of: " + ", ".join(map(str, self.choices))
        if self.low is not None and self.high is not None and self.low == self.high:
            return f"{self.low:g}"
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"{left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {self.high:g}"
        return "any " + self.type.__name__

    def check(self, protocol: str, value: Any, key: str | None = None) -> Any:
        """``value`` as this parameter's type, or :class:`ProtocolParameterError`; ``key``:
        the name as the caller spells it (``feature-share`` on the command line); ``protocol``
        empty: a run key or metric setting, named by itself."""
        key = key or self.name
        value = self._coerce(key, protocol, value)
        whose = f" (protocol {protocol!r})" if protocol else ""
        if self.choices is not None and value not in self.choices:
            raise ProtocolParameterError(f"unknown {key} {value!r}; choose {self.allowed}{whose}")
        if self.type in (int, float):
            ok = math.isfinite(value)
            if self.low is not None:
                ok = ok and (value > self.low if self.low_open else value >= self.low)
            if self.high is not None:
                ok = ok and (value < self.high if self.high_open else value <= self.high)
            if not ok and not protocol:
                within = "in " if self.allowed[0] in "[(" else ""
                raise ProtocolParameterError(f"{key} must be {within}{self.allowed}, got {value!r}")
            if not ok:
                raise ProtocolParameterError(
                    f"{key} must be in {self.allowed} for protocol {protocol!r}, got {value!r}"
                )
        return value

    def _coerce(self, key: str, protocol: str, value: Any) -> Any:
        if self.type is bool:
            if isinstance(value, bool):
                return value
        elif self.type is str:
            if isinstance(value, str):
                return value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if self.type is float:
                return float(value)
            if self.type is int and float(value).is_integer():
                return int(value)
        whose = f" for protocol {protocol!r}" if protocol else ""
        raise ProtocolParameterError(
            f"{key} must be of type {self.type.__name__}{whose}, got {value!r}"
        )


class Params(Mapping[str, Any]):
    """A protocol's checked parameters, read by attribute (``p.epsilon``): what a protocol holds
    instead of a dict it looks keys up in, so a misspelt name fails at the line that reads it
    (``AttributeError`` naming the declared ones) rather than as a ``KeyError`` deep in a
    release. Read-only; :meth:`replace` gives a changed copy. Still a ``Mapping`` (``**p``,
    ``dict(p)``, ``p["epsilon"]``) for code that passes parameters on."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None, **more: Any) -> None:
        object.__setattr__(self, "_values", {**(values or {}), **more})

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        try:
            return values[name]
        except KeyError:
            raise AttributeError(
                f"no parameter {name!r}{did_you_mean(name, values)}; declared: "
                + (", ".join(values) or "none")
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("parameters are read-only; use .replace(name=value)")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Params({self._values!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Params, (self._values,))

    def replace(self, **changes: Any) -> Params:
        """A copy with ``changes`` applied; a name not declared here is an error."""
        for name in changes:
            if name not in self._values:
                raise AttributeError(f"no parameter {name!r}{did_you_mean(name, self._values)}")
        return Params({**self._values, **changes})
