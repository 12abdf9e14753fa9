"""Typed parts of a central strategy's :class:`~ldpgraph.protocols.types.PrivacyReport`.

A report's ``parts`` are stored as plain dicts (the record, ``--json`` and the store read
them). A strategy builds each part as a small frozen dataclass instead of a dict literal, so a
misspelt or missing key fails where the part is made; :meth:`ReportPart.as_dict` gives the
stored form, keys in field order, leaving out any field left at :data:`OMIT` (a key that only
some reports of the part carry, e.g. the figures a DP-SGD part has only after the release).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Final


class _Omit:
    """The marker of a field that is not written (its key is absent, not ``None``)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final[Any] = _Omit()


@dataclass(frozen=True, kw_only=True)
class ReportPart:
    """Base of a typed report part: subclasses declare their keys as fields, in the order the
    stored dict lists them."""

    def as_dict(self) -> dict[str, Any]:
        """The stored form: ``{field: value}`` in field order, :data:`OMIT` fields left out."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not OMIT:
                out[f.name] = value
        return out
