"""dp-accounting 0.6.0's PLD accountant ignores the count of a composed randomized-response
event: ``compose(rr_event, 3)`` reports the ε of one. ldpgraph always composes an explicit
``ComposedDpEvent`` instead (protocols/accounting.py). These tests pin both: the upstream
behaviour (so an upgrade that fixes it is noticed, and the note can go) and the workaround."""

from __future__ import annotations

import math

import pytest
from dp_accounting import NeighboringRelation, dp_event, pld

from ldpgraph.protocols.accounting import pure_epsilon, rr_event


def _accountant() -> pld.PLDAccountant:
    return pld.PLDAccountant(
        neighboring_relation=NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=1e-4,
    )


def test_upstream_compose_count_is_ignored_for_rr_events():
    """If this fails, dp-accounting fixed the bug: drop the note in protocols/accounting.py
    and in docs/privacy/README.md (the explicit composition stays correct either way)."""
    one, three = _accountant(), _accountant()
    one.compose(rr_event(1.0))
    three.compose(rr_event(1.0), 3)
    assert three.get_epsilon(0.0) == pytest.approx(one.get_epsilon(0.0), abs=1e-3)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("count", [2, 3, 7])
def test_workaround_composes_explicitly(epsilon: float, count: int):
    """The explicit composition gives count·ε (pure ε-DP composes linearly at δ = 0), up to
    the accountant's pessimistic discretisation."""
    got = pure_epsilon([rr_event(epsilon)] * count)
    assert count * epsilon - 1e-9 <= got <= count * epsilon + count * 1e-3
    composed = _accountant()
    composed.compose(dp_event.ComposedDpEvent([rr_event(epsilon)] * count))
    assert math.isclose(composed.get_epsilon(0.0), got, rel_tol=1e-9)
