"""The discrete Laplace mechanism: its constant-work sampler against the exact pmf (χ² over 10^6
draws; a wrong scale must fail), scalar and vectorised sampler draw for draw, the words each
draw reads (the same count whatever the noise), the rigorous dyadic decay, the overflow path,
the ε floor and the int64 guard, integer in / integer out, and its accounting against the
closed form and RR composition."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from ldpgraph.protocols import accounting, laplace
from ldpgraph.protocols.laplace import (
    MAX_VALUE,
    MECHANISM,
    MIN_EPSILON,
    PLD_DISCRETIZATION,
    TAIL_BITS,
    DiscreteLaplace,
    composed_epsilon,
    decay_numerator,
    discrete_laplace_event,
    discrete_laplace_part,
    discrete_laplace_pld,
    sample_noise,
    sample_noises,
    timing_delta,
    words_per_geometric,
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
    # Any size (a node's k groups, the audit's batches, several chunks): one-by-one draws.
    for eps, size in ((1.3, 5000), (0.05, 20_000)):
        mech = DiscreteLaplace(eps)
        values = np.arange(size, dtype=np.int64)
        batch = mech.perturb_many(values, np.random.default_rng(12))
        rng = np.random.default_rng(12)
        np.testing.assert_array_equal(batch, [mech.perturb(int(v), rng) for v in values])
    # The global numpy state is neither used nor touched.
    np.random.seed(0)
    before = np.random.get_state()[1].copy()
    again = mech.perturb_many(values, np.random.default_rng(12))
    np.testing.assert_array_equal(again, batch)
    np.testing.assert_array_equal(np.random.get_state()[1], before)


def test_large_batches_are_deterministic():
    mech = DiscreteLaplace(0.7)
    values = np.arange(-500, 500, dtype=np.int64).reshape(10, 100)
    one = mech.perturb_many(values, np.random.default_rng(3))
    two = mech.perturb_many(values, np.random.default_rng(3))
    assert one.shape == values.shape and one.dtype == np.int64
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, mech.perturb_many(values, np.random.default_rng(4)))


def _chi2_pvalue(sample: np.ndarray, pmf_of, lo: int = -6, hi: int = 6) -> float:
    """χ² goodness of fit on the bins k ≤ lo, lo+1, …, hi−1, k ≥ hi against ``pmf_of``."""
    from scipy.stats import chisquare

    ks = np.arange(lo + 1, hi)
    inner = pmf_of(ks)
    tail = (1.0 - inner.sum()) / 2.0
    expected = np.concatenate([[tail], inner, [tail]]) * sample.shape[0]
    observed = np.bincount(np.clip(sample, lo, hi) - lo, minlength=hi - lo + 1)
    return float(chisquare(observed, expected).pvalue)


@pytest.mark.parametrize("eps", [0.3, 0.8, 4.0])
def test_chi_square_of_the_scalar_and_batched_samplers(eps):
    """χ² of 10^6 batched draws and of 10^5 scalar draws (what a node calls) against the pmf
    a = e^{−ε} written out here; a sampler at ε/2 fails the same test."""
    lo, hi = (-6, 6) if eps < 3 else (-2, 2)

    def pmf(k: np.ndarray) -> np.ndarray:
        return exact_pmf(k, eps)

    mech = DiscreteLaplace(eps)
    rng = np.random.default_rng(int(eps * 100))
    batch = mech.noise((1_000_000,), rng)
    assert _chi2_pvalue(batch, pmf, lo, hi) > 1e-4
    scalar = np.array([mech.perturb(0, rng) for _ in range(100_000)])
    assert _chi2_pvalue(scalar, pmf, lo, hi) > 1e-4
    wrong = DiscreteLaplace(eps / 2).noise((1_000_000,), rng)
    assert _chi2_pvalue(wrong, pmf, lo, hi) < 1e-12


@pytest.mark.parametrize("eps", [0.05, 1.0, 8.0])
def test_every_draw_reads_the_same_words_whatever_the_noise(eps):
    """Constant work, counted: each draw advances the generator by exactly 2M words (M public,
    from ε), whether K is 0 or far out in the tail; the blocks never overflowed here."""
    mech = DiscreteLaplace(eps)
    m = mech.block
    rng = np.random.default_rng(7)
    shadow = np.random.default_rng(7)
    seen = set()
    for _ in range(3000):
        seen.add(mech.perturb(0, rng))
        shadow.bit_generator.random_raw(2 * m)
        assert rng.bit_generator.state == shadow.bit_generator.state
    assert len(seen) > 2 if eps < 4 else len(seen) >= 1


def test_the_overflow_path_keeps_the_law():
    """With a deliberately short block (m = 1, 2) most draws overflow and continue word by
    word: the law is still the exact pmf, scalar and batched."""
    eps = 0.5
    p = decay_numerator(eps)
    rng = np.random.default_rng(9)
    for m in (1, 2):
        batch = sample_noises(300_000, p, m, rng)
        scalar = np.array([sample_noise(p, m, rng) for _ in range(30_000)])
        for sample in (batch, scalar):
            assert _chi2_pvalue(sample, lambda k: exact_pmf(k, eps)) > 1e-4


@pytest.mark.parametrize(
    "eps,sens", [(0.8, 1), (1.0, 1), (0.05, 1), (MIN_EPSILON, 1), (3.0, 3), (2.0, 3), (8.0, 1)]
)
def test_the_decay_is_a_rigorous_dyadic_upper_bound(eps, sens):
    """2^64·e^{−ε/Δ} ≤ p < 2^64·e^{−ε/Δ} + 2 (checked at 120 digits): never less noise than
    claimed, and no more than 2^−63 of decay more."""
    from decimal import Decimal, localcontext

    p = decay_numerator(eps, sens)
    assert type(p) is int and 1 <= p < 2**64
    with localcontext() as ctx:
        ctx.prec = 120
        r = Decimal(Fraction(eps).numerator) / Decimal(Fraction(eps).denominator * sens)
        target = (-r).exp() * Decimal(2**64)
        assert target <= Decimal(p) < target + 2
    assert DiscreteLaplace(eps, sens).decay_fraction == (p, 2**64)
    assert decay_numerator(Fraction(1, 3)) == decay_numerator(Fraction(2, 6))
    assert decay_numerator(1e300) == 1  # capped: a = 2^−64, more noise, still ε-DP


@pytest.mark.parametrize("eps", [0.1, 0.8, 1.0, 4.0, 8.0, 50.0])
def test_the_block_bounds_the_tail(eps):
    """a^M ≤ 2^−TAIL_BITS exactly (p^M ≤ 2^(64M − TAIL_BITS)) and M is the least such block
    up to one; the timing δ follows from it."""
    p = decay_numerator(eps)
    m = words_per_geometric(p)
    assert p**m <= 2 ** (64 * m - TAIL_BITS)
    assert m == 1 or p ** (m - 2) > 2 ** (64 * (m - 2) - TAIL_BITS)
    assert timing_delta(eps) == pytest.approx((1 + math.exp(eps)) * 2 ** (1 - TAIL_BITS))


def test_sensitivity_scales_the_noise():
    """Δ = 2 at ε is the law of Δ = 1 at ε/2."""
    two = DiscreteLaplace(2.0, sensitivity=2)
    assert two.decay == pytest.approx(math.exp(-1.0))
    noise = two.perturb_many(np.zeros(DRAWS, dtype=np.int64), np.random.default_rng(5))
    assert pmf_inside(noise, exact_pmf(KS, 1.0)).all()


def test_extreme_budgets_stay_integers():
    rng = np.random.default_rng(1)
    big = DiscreteLaplace(50.0)
    assert big.perturb(3, rng) == 3  # P[K ≠ 0] ≈ 2e^{−50}
    out = big.perturb_many(np.full(100_000, 3, dtype=np.int64), rng)
    assert out.dtype == np.int64 and (out == 3).all()
    # The widest accepted noise: finite integers with mean 0 and Var 2a/(1 − a)² ≈ 2·10^6.
    # (2M ≈ 89 000 words a draw at the floor: few draws.)
    tiny = DiscreteLaplace(MIN_EPSILON)
    draws = 3000
    noise = tiny.perturb_many(np.zeros(draws, dtype=np.int64), rng)
    assert noise.dtype == np.int64 and np.abs(noise).max() > 1000
    var = 2 * math.exp(-MIN_EPSILON) / math.expm1(-MIN_EPSILON) ** 2
    assert tiny.variance == pytest.approx(var, rel=1e-6)
    assert abs(noise.mean()) <= SIGMAS * math.sqrt(tiny.variance / draws)
    assert noise.var() == pytest.approx(tiny.variance, rel=0.2)
    # The scalar path too (a Blink node's one degree).
    few = np.array([tiny.perturb(0, rng) for _ in range(1000)])
    assert abs(few.mean()) <= SIGMAS * math.sqrt(tiny.variance / 1000)
    assert few.var() == pytest.approx(tiny.variance, rel=0.3)


@pytest.mark.parametrize("eps,sens", [(1e-25, 1), (1e-20, 1), (1e-18, 1), (1e-4, 1), (1.5e-3, 2)])
def test_tiny_epsilon_is_refused(eps, sens):
    """Regression: numpy's geometric saturated at tiny ε and the true value went out (ε = 1e-20:
    83 % of draws), near 1e-18 value + noise overflowed int64. A server may send any ε."""
    with pytest.raises(ValueError, match="MIN_EPSILON"):
        DiscreteLaplace(eps, sensitivity=sens)
    DiscreteLaplace(MIN_EPSILON)  # the floor itself is accepted


def test_values_that_could_overflow_are_refused():
    mech = DiscreteLaplace(1.0)
    rng = np.random.default_rng(0)
    assert abs(mech.perturb(MAX_VALUE, rng) - MAX_VALUE) < 100
    for bad in (MAX_VALUE + 1, -MAX_VALUE - 1, 2**63 - 1):
        with pytest.raises(ValueError, match="2\\^40"):
            mech.perturb(bad, rng)
        with pytest.raises(ValueError, match="2\\^40"):
            mech.perturb_many(np.array([0, bad], dtype=np.int64), rng)
    with pytest.raises(ValueError, match="2\\^40"):
        mech.perturb_many(np.array([2**64 - 1], dtype=np.uint64), rng)


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
    # The exact likelihood ratio of neighbouring counts of the law sampled (decay a = p/2^64
    # ≥ e^{−ε}): ln(1/a) ≤ ε exactly, and equal to ε up to 2^−64/a.
    p, q = DiscreteLaplace(eps).decay_fraction
    assert Fraction(p, q) >= Fraction(0) and p * 1.0 / q >= math.exp(-eps) * (1 - 1e-15)
    pmf = DiscreteLaplace(eps).pmf(np.arange(-5, 6))
    ratios = np.log(pmf[:-1] / pmf[1:])
    assert np.abs(ratios).max() <= eps + 1e-12
    assert np.abs(ratios).max() == pytest.approx(eps, abs=1e-12)


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
    # The time of a draw may depend on its noise only past a full block: the report says so.
    assert part["timing_delta"] == timing_delta(0.8) < 1e-18
    assert part["sampler"] == laplace.SAMPLER
