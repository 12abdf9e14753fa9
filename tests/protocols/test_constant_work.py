"""Constant-work RR rows (what a deployed node draws): the definition draw for draw (one
uniform per column, the same as ``perturb_bits``), flip rates inside a binomial confidence
interval narrow enough that a 2 % over-spend at ε = 8 falls outside it, asymmetric RR's
(1−p)·μ and p·μ, and the switch scoped to its context (the simulation's sparse rows and their
draws are untouched)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols import mechanisms
from ldpgraph.protocols.mechanisms import (
    DENSE_FLIP,
    AsymmetricRR,
    RandomizedResponse,
    constant_work,
    constant_work_enabled,
    flip_probability,
)

#: Normal quantile of the two-sided intervals (a correct sampler falls outside ~7e-6 of runs).
Z = 4.5


def interval(hits: int, trials: int) -> tuple[float, float]:
    """Wilson interval for a binomial rate at :data:`Z`."""
    phat = hits / trials
    den = 1 + Z * Z / trials
    mid = (phat + Z * Z / (2 * trials)) / den
    half = Z * math.sqrt(phat * (1 - phat) / trials + Z * Z / (4 * trials * trials)) / den
    return mid - half, mid + half


def row(length: int, step: int) -> np.ndarray:
    """Every ``step``-th column is a 1 (column 0, the node itself, too: it is excluded)."""
    return np.arange(0, length, step, dtype=np.int64)


@pytest.mark.parametrize("eps", [1.0, 4.0, 8.0])
def test_constant_work_is_the_definition_draw_for_draw(eps):
    """One uniform per column, a 1 kept when u >= p and a 0 flipped when u < p: exactly
    ``perturb_bits`` on the dense row with the same generator (the excluded column unsent)."""
    n = 5000
    ones = row(n, 7)
    bits = np.zeros(n, dtype=np.uint8)
    bits[ones] = 1
    want = RandomizedResponse(eps).perturb_bits(bits, np.random.default_rng(3))
    want[0] = 0
    with constant_work():
        got = RandomizedResponse(eps).perturb_row(ones, n, np.random.default_rng(3), exclude=0)
    assert got.dtype == np.int32
    assert got.tolist() == np.flatnonzero(want).tolist()


def test_the_dense_regime_is_unchanged_by_the_switch():
    """From DENSE_FLIP on, the simulation already drew the dense row: the same bytes."""
    mech = RandomizedResponse(1.0)
    assert mech.p >= DENSE_FLIP
    ones = row(3000, 5)
    plain = mech.perturb_row(ones, 3000, np.random.default_rng(9), exclude=0)
    with constant_work():
        cw = mech.perturb_row(ones, 3000, np.random.default_rng(9), exclude=0)
    assert plain.tobytes() == cw.tobytes()


def test_constant_work_flip_rates_catch_a_two_percent_overspend():
    """ε = 8 (p ≈ 3.4e-4, the sparse regime of the simulation): 6·10^6 zeros and 2·10^6 ones.
    Both rates lie in their intervals, and the zeros' interval excludes the flip probability
    of a 2 % over-spend (ε = 8.16)."""
    eps, n, step, calls = 8.0, 1_000_001, 4, 8
    mech = RandomizedResponse(eps)
    p = mech.p
    ones = row(n, step)[1:]  # column 0 excluded, never a 1 here
    truth = np.zeros(n, dtype=bool)
    truth[ones] = True
    rng = np.random.default_rng(11)
    flipped = kept = 0
    with constant_work():
        for _ in range(calls):
            out = mech.perturb_row(ones, n, rng, exclude=0)
            assert 0 not in out
            hit = truth[out]
            kept += int(hit.sum())
            flipped += int((~hit).sum())
    zeros = calls * (n - 1 - ones.shape[0])
    lo, hi = interval(flipped, zeros)
    assert lo <= p <= hi, (flipped, zeros, p)
    assert not lo <= flip_probability(eps * 1.02) <= hi
    lo, hi = interval(kept, calls * ones.shape[0])
    assert lo <= 1 - p <= hi


def test_constant_work_asymmetric_rr_rates():
    """(1−p)·μ for a true 1 and p·μ for a 0, one keep uniform per column on keep_rng."""
    eps, mu, n = 4.0, 0.3, 400_001
    mech = AsymmetricRR(eps, mu)
    ones = row(n, 3)[1:]
    truth = np.zeros(n, dtype=bool)
    truth[ones] = True
    rng, keep_rng = np.random.default_rng(5), np.random.default_rng(6)
    one = zero = 0
    calls = 6
    with constant_work():
        for _ in range(calls):
            out = mech.perturb_row(ones, n, rng, exclude=0, keep_rng=keep_rng)
            hit = truth[out]
            one += int(hit.sum())
            zero += int((~hit).sum())
    lo, hi = interval(one, calls * ones.shape[0])
    assert lo <= mech.p_one_given_one <= hi
    lo, hi = interval(zero, calls * (n - 1 - ones.shape[0]))
    assert lo <= mech.p_one_given_zero <= hi
    assert not lo <= flip_probability(eps * 1.05) * mu <= hi


def test_constant_work_asymmetric_rr_draws_one_keep_uniform_per_column():
    """Its keep stream advances by the row's length, however many bits RR reported."""
    n = 1000
    for ones in (row(n, 500), row(n, 2)):
        keep_rng = np.random.default_rng(1)
        with constant_work():
            AsymmetricRR(8.0, 0.5).perturb_row(ones, n, np.random.default_rng(0), 0, keep_rng)
        ref = np.random.default_rng(1)
        ref.random(n)
        assert keep_rng.random() == ref.random()


def test_the_switch_is_scoped_and_the_simulation_keeps_its_sparse_rows(monkeypatch):
    """Outside the context every ε > ln 9 row is the sparse one (the simulation's draws);
    inside, the sparse sampler is never called; the switch is off again after it."""
    calls = []
    sparse = mechanisms._sparse_row
    monkeypatch.setattr(
        mechanisms, "_sparse_row", lambda *a, **k: calls.append(1) or sparse(*a, **k)
    )
    ones = row(2000, 50)
    assert not constant_work_enabled()
    RandomizedResponse(8.0).perturb_row(ones, 2000, np.random.default_rng(0), exclude=0)
    AsymmetricRR(8.0, 0.5).perturb_row(ones, 2000, np.random.default_rng(0), exclude=0)
    assert len(calls) == 2
    with constant_work():
        assert constant_work_enabled()
        RandomizedResponse(8.0).perturb_row(ones, 2000, np.random.default_rng(0), exclude=0)
        AsymmetricRR(8.0, 0.5).perturb_row(ones, 2000, np.random.default_rng(0), exclude=0)
        with constant_work(False):
            assert not constant_work_enabled()
        assert constant_work_enabled()
    assert len(calls) == 2 and not constant_work_enabled()
