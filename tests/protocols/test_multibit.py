"""LPGNN's multi-bit mechanism: output distribution (99.9% intervals over >= 10^6 draws),
unbiasedness of the rectifier, a wrong probability rejected, privacy report, one stream per node."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.multibit import (
    MultiBit,
    multibit_privacy_part,
    sample_count,
)
from ldpgraph.protocols.reports import decode_features, encode_features
from ldpgraph.protocols.rng import FEATURES, node_rng

Z999 = 3.2905  # two-sided 99.9% normal quantile

# Coordinates of one row are sampled without replacement (exactly m per row), which makes the
# counts over a row negatively correlated: the binomial interval below is conservative.


def inside(successes: int, trials: int, p: float) -> bool:
    half = Z999 * math.sqrt(p * (1 - p) / trials)
    return abs(successes / trials - p) <= half


def one_bit_prob(eps_bit: float, x: float, lo: float, hi: float) -> float:
    e = math.exp(eps_bit)
    return 1 / (e + 1) + (x - lo) / (hi - lo) * (e - 1) / (e + 1)


def test_sample_count_rule():
    assert sample_count(1.0, 100) == 1  # floor(1/2.18) = 0 -> at least 1
    assert sample_count(2.18, 100) == 1
    assert sample_count(7.0, 100) == 3
    assert sample_count(8.0, 2) == 2  # capped at d
    assert MultiBit(1.0, m=5).sampled(5) == 5  # the "1-bit" variant: m = d
    with pytest.raises(ValueError, match="exceeds"):
        MultiBit(1.0, m=6).sampled(5)


CASES = [
    # eps, x, domain, m (None = LPGNN's rule)
    (7.0, 0.3, (0.0, 1.0), None),  # m = 3, eps/m = 7/3
    (2.0, 0.8, (0.0, 1.0), None),  # m = 1
    (5.0, 0.0, (-1.0, 2.0), None),  # m = 2, alpha != 0
    (3.0, 1.0, (0.0, 1.0), 10),  # the 1-bit variant, m = d
]


@pytest.mark.parametrize("eps,x,domain,m", CASES)
def test_output_distribution(eps, x, domain, m):
    d, rows = 10, 100_000
    mech = MultiBit(eps, domain, m)
    k = mech.sampled(d)
    out = mech.perturb_many(np.full((rows, d), x), np.random.default_rng(int(eps * 10 + x * 7)))
    draws = rows * d
    assert draws >= 10**6
    assert set(np.unique(out).tolist()) <= {-1.0, 0.0, 1.0}
    # Exactly m coordinates are sampled in every row.
    assert ((out != 0).sum(axis=1) == k).all()
    lo, hi = domain
    p = one_bit_prob(eps / k, x, lo, hi)
    plus, minus = int((out == 1).sum()), int((out == -1).sum())
    assert inside(plus, draws, k / d * p)
    assert inside(minus, draws, k / d * (1 - p))
    assert int((out == 0).sum()) == draws - rows * k  # Pr[0] = 1 − m/d exactly
    # A deliberately wrong probability fails: the whole ε (not ε/m) per coordinate when m > 1,
    # else a probability 3% off.
    wrong = one_bit_prob(eps, x, lo, hi) if k > 1 else min(1.0, p * 1.03)
    assert not inside(plus, draws, k / d * wrong)


def test_coordinates_sampled_uniformly_with_their_own_probability():
    d, rows = 5, 200_000
    mech = MultiBit(4.4)  # m = 2, eps/m = 2.2
    x = np.linspace(0.0, 1.0, d)
    out = mech.perturb_many(np.tile(x, (rows, 1)), np.random.default_rng(9))
    for k in range(d):
        p = one_bit_prob(2.2, float(x[k]), 0.0, 1.0)
        assert inside(int((out[:, k] == 1).sum()), rows, 2 / d * p)
        assert inside(int((out[:, k] != 0).sum()), rows, 2 / d)
    assert int((out != 0).sum()) == 2 * rows


@pytest.mark.parametrize("eps,x,domain,m", CASES)
def test_rectified_estimate_is_unbiased(eps, x, domain, m):
    d, rows = 10, 100_000
    mech = MultiBit(eps, domain, m)
    xs = np.full((rows, d), x)
    out = mech.perturb_many(xs, np.random.default_rng(int(eps * 13 + x * 3 + 1)))
    est = mech.rectify(out)
    var = float(mech.variance(np.full(d, x))[0])
    assert var > 0
    n = est.size
    assert abs(est.mean() - x) <= Z999 * math.sqrt(var / n)
    # The empirical variance matches the closed form (loosely: 5%).
    assert abs(est.var() / var - 1) < 0.05
    # A rectifier without the (e^{ε/m}+1)/(e^{ε/m}−1) factor is biased and fails the test.
    lo, hi = domain
    e = math.exp(eps / mech.sampled(d))
    bad = (est - (lo + hi) / 2) * (e - 1) / (e + 1) + (lo + hi) / 2
    if abs(x - (lo + hi) / 2) > 0.1:
        assert abs(bad.mean() - x) > Z999 * math.sqrt(var / n)


def test_rectifier_closed_form():
    mech = MultiBit(7.0, (0.0, 1.0))
    d = 10
    e = math.exp(7.0 / 3)
    c = d / (2 * 3) * (e + 1) / (e - 1)
    np.testing.assert_allclose(
        mech.rectify(np.array([1.0, 0.0, -1.0] + [0.0] * 7))[:3], [c + 0.5, 0.5, -c + 0.5]
    )


def test_privacy_part_is_vector_level_epsilon():
    for eps, d, m in ((1.0, 50, None), (7.0, 50, None), (3.0, 8, 8)):
        mech = MultiBit(eps, m=m)
        part = multibit_privacy_part(mech, d)
        k = mech.sampled(d)
        assert part["sampled_coordinates"] == k
        assert part["epsilon_closed_form"] == eps
        # The PLD accountant is pessimistic by at most its discretisation per event.
        assert eps - 1e-9 <= part["epsilon"] <= eps + k * 2e-4
    big = multibit_privacy_part(MultiBit(2.0, m=100), 100)
    assert big["epsilon"] == 2.0 and "closed form" in big["note"]


def test_each_node_draws_from_its_own_stream_and_wire_roundtrip():
    mech = MultiBit(5.0, (0.0, 1.0))
    x = np.random.default_rng(0).random((6, 20))
    for i in range(6):
        single = mech.perturb(x[i], node_rng(3, i, 0, FEATURES))
        np.testing.assert_array_equal(single, mech.perturb(x[i], node_rng(3, i, 0, FEATURES)))
        fmt, payload = encode_features(single)
        assert fmt == "f32"
        np.testing.assert_array_equal(decode_features(fmt, payload, 20), single)
    assert not np.array_equal(
        mech.perturb(x[0], node_rng(3, 0, 0, FEATURES)),
        mech.perturb(x[0], node_rng(4, 0, 0, FEATURES)),
    )


def test_validation():
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="epsilon"):
            MultiBit(bad)
    with pytest.raises(ValueError, match="domain"):
        MultiBit(1.0, (1.0, 1.0))
    with pytest.raises(ValueError, match="m must"):
        MultiBit(1.0, m=0)
    with pytest.raises(ValueError, match="outside"):
        MultiBit(1.0).perturb(np.array([0.0, 1.5]), np.random.default_rng(0))
