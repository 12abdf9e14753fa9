"""The audit's registry: what a row of ``ldpgraph audit`` is and the table of them.

A :class:`Trial` is one mechanism at one ε, ready to draw; an :class:`Auditable` builds one at
any ε. :data:`AUDITS` holds them in the order the audit runs them: the client mechanisms
(:mod:`.audit_client`), then the node paths and reply times (:mod:`.audit_rows`); a test may
add a planted one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .audit_events import EventFamily


@dataclass(frozen=True)
class Trial:
    """One mechanism at one ε, ready to audit: ``draw(which, n, rng)`` returns n outputs
    (one statistic per run of the mechanism) on input ``which`` ∈ {0, 1}."""

    draw: Callable[[int, int, np.random.Generator], np.ndarray]
    events: EventFamily
    claimed_epsilon: float
    inputs: tuple[str, str]
    unit: str


@dataclass(frozen=True)
class Auditable:
    """A mechanism that can be audited at any ε: ``build(ε)`` sets up its :class:`Trial`.

    A row with its own statistic (the timing and rate rows) sets ``run(trial, n, rng, α,
    tick)``, which returns the row's result fields; ``scale`` turns the run's draws per input
    into the row's (its draws, calls or bits)."""

    name: str
    description: str
    build: Callable[[float], Any]
    run: Callable[..., dict[str, Any]] | None = None
    scale: float = 1.0

    def draws(self, draws: int) -> int:
        """This row's draws per input for a run of ``draws``."""
        return draws if self.scale == 1.0 else max(400, round(draws * self.scale))


AUDITS: dict[str, Auditable] = {}


def register(audit: Auditable) -> Auditable:
    """Add a mechanism to :data:`AUDITS` (a test may add a planted one)."""
    if audit.name in AUDITS:
        raise ValueError(f"audit {audit.name!r} is already registered")
    AUDITS[audit.name] = audit
    return audit
