"""The discrete Laplace mechanism: its sampler against the exact pmf (a wrong scale must fail),
integer in / integer out, and its accounting against the closed form and RR composition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols import accounting
from ldpgraph.protocols.laplace import (
    MECHANISM,
    PLD_DISCRETIZATION,
    DiscreteLaplace,
    composed_epsilon,
    discrete_laplace_event,
    discrete_laplace_part,
    discrete_laplace_pld,
)

SIGMAS = 5.0
DRAWS = 1_000_000
KS = np.arange(-3, 4)


def exact_pmf(k: np.ndarray, eps: float) -> np.ndarray:
    """(1 − a)/(1 + a)·a^|k|, a = e^{−ε}: written out here, not taken from the mechanism."""
    a = math.exp(-eps)
    return (1 - a) / (1 + a) * a ** np.abs(k)


def pmf_inside(noise: np.ndarray, pmf: np.ndarray) -> np.ndarray:
    """Per k in KS: whether the empirical P[K = k] lies within SIGMAS binomial standard
    deviations of ``pmf``."""
    n = noise.shape[0]
    counts = np.array([(noise == k).sum() for k in KS])
    half = SIGMAS * np.sqrt(pmf * (1 - pmf) / n)
    return np.abs(counts / n - pmf) <= half


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_sampler_matches_the_exact_pmf(eps):
    mech = DiscreteLaplace(eps)
    rng = np.random.default_rng(int(eps * 1000))
    out = mech.perturb_many(np.full(DRAWS, 7, dtype=np.int64), rng)
    assert out.dtype == np.int64
    noise = out - 7
    assert pmf_inside(noise, exact_pmf(KS, eps)).all()
    np.testing.assert_allclose(mech.pmf(KS), exact_pmf(KS, eps), rtol=1e-12)
    # The mean is the input: within SIGMAS standard errors, Var K = 2a/(1 − a)².
    a = math.exp(-eps)
    var = 2 * a / (1 - a) ** 2
    assert mech.variance == pytest.approx(var)
    assert abs(out.mean() - 7) <= SIGMAS * math.sqrt(var / DRAWS)
    assert abs(noise.var() - var) <= 0.02 * var
    # A deliberately wrong mechanism (scale 2/ε, i.e. ε/2) falls outside.
    assert not pmf_inside(noise, exact_pmf(KS, eps / 2)).all()
    wrong = DiscreteLaplace(eps / 2).perturb_many(np.zeros(DRAWS, dtype=np.int64), rng)
    assert not pmf_inside(wrong, exact_pmf(KS, eps)).all()


def test_integer_in_integer_out():
    mech = DiscreteLaplace(0.8)
    rng = np.random.default_rng(0)
    for value in (0, 5, np.int64(5), np.int32(-3)):
        out = mech.perturb(value, rng)
        assert type(out) is int
    assert mech.perturb_many(np.arange(5, dtype=np.int32), rng).dtype == np.int64
    for bad in (5.0, 4.5, np.float64(5.0), True, "5"):
        with pytest.raises(TypeError):
            mech.perturb(bad, rng)
    for bad in (np.array([1.0, 2.0]), np.array([True, False])):
        with pytest.raises(TypeError):
            mech.perturb_many(bad, rng)


def test_batch_equals_one_by_one_and_only_the_given_generator():
    mech = DiscreteLaplace(1.3)
    values = np.array([[3, 0, 9], [1, 2, 4]], dtype=np.int64)
    batch = mech.perturb_many(values, np.random.default_rng(11))
    rng = np.random.default_rng(11)
    single = [mech.perturb(int(v), rng) for v in values.ravel()]
    np.testing.assert_array_equal(batch.ravel(), single)
    # The global numpy state is neither used nor touched.
    np.random.seed(0)
    before = np.random.get_state()[1].copy()
    again = mech.perturb_many(values, np.random.default_rng(11))
    np.testing.assert_array_equal(again, batch)
    np.testing.assert_array_equal(np.random.get_state()[1], before)


def test_sensitivity_scales_the_noise():
    """Δ = 2 at ε is the law of Δ = 1 at ε/2."""
    two = DiscreteLaplace(2.0, sensitivity=2)
    assert two.decay == pytest.approx(math.exp(-1.0))
    noise = two.perturb_many(np.zeros(DRAWS, dtype=np.int64), np.random.default_rng(5))
    assert pmf_inside(noise, exact_pmf(KS, 1.0)).all()


def test_extreme_budgets_stay_integers():
    rng = np.random.default_rng(1)
    assert DiscreteLaplace(50.0).perturb(3, rng) == 3  # P[K ≠ 0] ≈ 2e^{−50}
    tiny = DiscreteLaplace(1e-6).perturb_many(np.zeros(1000, dtype=np.int64), rng)
    assert tiny.dtype == np.int64 and np.abs(tiny).max() > 1000


def test_rejects_bad_parameters():
    for bad in (0.0, -1.0, math.inf, math.nan, True, "1"):
        with pytest.raises(ValueError, match="epsilon"):
            DiscreteLaplace(bad)
    for bad in (0, -1, 1.0, 1.5, True):
        with pytest.raises(ValueError, match="sensitivity"):
            DiscreteLaplace(1.0, sensitivity=bad)


def test_module_imports_no_accounting_or_torch():
    """The client imports the mechanism: dp-accounting and torch only load when accounting."""
    import subprocess
    import sys

    code = (
        "import sys; import ldpgraph.protocols.laplace as m; "
        "bad = [k for k in sys.modules if k.split('.')[0] in ('dp_accounting', 'torch')]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# ------------------------------------------------------------------ accounting


@pytest.mark.parametrize("eps", [0.05, 0.3, 0.8, 1.0, 2.5, 4.0, 8.0])
def test_accountant_matches_closed_form(eps):
    assert PLD_DISCRETIZATION == accounting.PLD_DISCRETIZATION
    own = discrete_laplace_pld(eps).get_epsilon_for_delta(0.0)
    assert eps - 1e-9 <= own <= eps + PLD_DISCRETIZATION + 1e-9
    assert composed_epsilon([], [eps]) == pytest.approx(own, abs=1e-12)
    # dp-accounting's own DiscreteLaplaceDpEvent (ADD_OR_REMOVE_ONE: the law at μ against
    # μ ± 1) gives the same ε.
    from dp_accounting import NeighboringRelation, pld

    acc = pld.PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE, PLD_DISCRETIZATION)
    acc.compose(discrete_laplace_event(eps))
    assert acc.get_epsilon(0.0) == pytest.approx(own, abs=1e-9)
    # The exact likelihood ratio of neighbouring counts: P[k]/P[k+1] ≤ e^ε, with equality.
    pmf = DiscreteLaplace(eps).pmf(np.arange(-5, 6))
    ratios = np.log(pmf[:-1] / pmf[1:])
    assert np.abs(ratios).max() == pytest.approx(eps, rel=1e-9)


def test_accountant_with_sensitivity():
    own = discrete_laplace_pld(3.0, sensitivity=3).get_epsilon_for_delta(0.0)
    assert 3.0 - 1e-9 <= own <= 3.0 + PLD_DISCRETIZATION + 1e-9


@pytest.mark.parametrize(
    "rr,counts", [([1.0], [0.5]), ([3.6], [0.4]), ([0.7, 1.1], [2.0, 0.25]), ([], [1.5, 2.5])]
)
def test_composition_with_rr_adds_up(rr, counts):
    total = sum(rr) + sum(counts)
    got = composed_epsilon(rr, counts)
    assert total - 1e-9 <= got <= total + (len(rr) + len(counts)) * PLD_DISCRETIZATION + 1e-9


def test_part_line():
    part = discrete_laplace_part("degree", "the degree", 0.8)
    assert part["mechanism"] == MECHANISM == "discrete-laplace"
    assert part["epsilon_closed_form"] == 0.8 and part["sensitivity"] == 1
    assert 0.8 - 1e-9 <= part["epsilon"] <= 0.8 + PLD_DISCRETIZATION
    assert part["noise_decay"] == pytest.approx(math.exp(-0.8))
