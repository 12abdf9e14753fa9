"""The node audit: the rows that run each node's own code (the scalar sampler, the batched
client step's degrees, LDPGen's round-1 vector, flip rates of perturb_row, of the 1-bit
mechanism and of the batched RR rows) pass on the honest code, and each fails on a planted
flaw it exists to catch: the scalar sampler sending the true value half the time (which the
batched discrete-laplace row cannot see), the batched sampler doing the same (LDPGen's
vector), and RR over-spending 2 % at ε = 8."""

from __future__ import annotations

import numpy as np
import pytest

import ldpgraph.simulation.audit_rows  # noqa: F401  (registers the node audit's rows)
from ldpgraph.protocols import laplace, mechanisms
from ldpgraph.simulation import audit_planted
from ldpgraph.simulation.audit import AUDITS, run_audit

NODE_ROWS = ["degree-node", "degree-batch", "ldpgen-vector"]
RATE_ROWS = ["rr-rate", "arr-rate", "onebit-rate", "rr-batch-rate"]


def test_the_node_rows_are_registered_with_their_scales():
    for name in NODE_ROWS + RATE_ROWS + ["timing", "timing-rr"]:
        assert name in AUDITS
    assert AUDITS["degree-node"].draws(1_000_000) == 100_000
    assert AUDITS["rr-rate"].draws(1_000_000) == 100_000_000
    assert AUDITS["timing"].draws(1_000_000) == 150_000


def test_honest_node_rows_pass():
    rows = run_audit(NODE_ROWS + RATE_ROWS, epsilons=(1.0, 8.0), draws=40_000, seed=0)
    for r in rows:
        assert r.passed, r
        assert r.epsilon_lower_bound <= r.claimed_epsilon
    # The rate rows come within a few % of the claim (they have power).
    for r in rows:
        if r.mechanism in RATE_ROWS:
            assert r.epsilon_lower_bound > 0.97 * r.epsilon, r


def test_a_scalar_sampler_sending_the_true_value_fails_the_node_rows(monkeypatch):
    """Issue 29, point 4: with the scalar sampler broken, every row used to pass. Now the rows
    that call it fail; the batched discrete-laplace row still passes (it cannot see it)."""
    monkeypatch.setattr(laplace, "noise_array", audit_planted.half_true_noise(laplace.noise_array))
    rows = run_audit(
        ["degree-node", "degree-batch", "discrete-laplace"], epsilons=(1.0, 2.0), draws=100_000
    )
    for r in rows:
        if r.mechanism == "discrete-laplace":
            assert r.passed, r
        else:
            assert not r.passed and r.epsilon_lower_bound > r.claimed_epsilon + 0.3, r


def test_a_batched_sampler_sending_the_true_value_fails_ldpgen_and_the_counts(monkeypatch):
    monkeypatch.setattr(
        laplace, "sample_noises", audit_planted.half_true_noises(laplace.sample_noises)
    )
    rows = run_audit(["ldpgen-vector", "discrete-laplace"], epsilons=(1.0, 2.0), draws=100_000)
    for r in rows:
        assert not r.passed and r.epsilon_lower_bound > r.claimed_epsilon + 0.3, r


@pytest.mark.parametrize("planted", [False, True])
def test_a_two_percent_overspend_at_epsilon_8_fails_the_rate_row(monkeypatch, planted):
    """RR flipping at 8.16 while claiming 8: the rate row (4·10^7 bits per input) fails, the
    honest one passes on the same draws."""
    if planted:
        monkeypatch.setattr(
            mechanisms, "flip_probability", audit_planted.overspent_flip_probability
        )
    (row,) = run_audit(["rr-rate"], epsilons=(8.0,), draws=400_000, seed=0)
    assert row.passed is not planted, row
    if planted:
        assert row.epsilon_lower_bound > 8.1, row
    else:
        assert 7.9 < row.epsilon_lower_bound <= 8.0, row


def test_the_planted_leaky_sampler_has_the_exact_law():
    """The old sampler is kept only as a planted variant: its output law is right (only its
    time is wrong), so only the timing row can tell it from the node's sampler."""
    mech = audit_planted.LeakyDiscreteLaplace(1.0)
    rng = np.random.default_rng(0)
    out = np.array([mech.perturb(0, rng) for _ in range(40_000)])
    pmf = laplace.DiscreteLaplace(1.0).pmf(np.arange(-2, 3))
    got = np.array([(out == k).mean() for k in range(-2, 3)])
    assert np.all(np.abs(got - pmf) <= 5 * np.sqrt(pmf * (1 - pmf) / out.size))
