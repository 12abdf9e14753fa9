"""Statistical tests of the local randomizers: empirical rates inside a 99.9% interval of the
exact probability over >= 10^6 draws, and a deliberately wrong probability is rejected."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.mechanisms import (
    DENSE_FLIP,
    OneBit,
    RandomizedResponse,
    distinct_ranks,
    flip_probability,
    ranks_from_uniforms,
)
from ldpgraph.protocols.rng import ADJACENCY, node_rng

Z999 = 3.2905  # two-sided 99.9% normal quantile


def inside(successes: int, trials: int, p: float) -> bool:
    """Whether successes/trials lies in the 99.9% interval of Binomial(trials, p)."""
    half = Z999 * math.sqrt(p * (1 - p) / trials)
    return abs(successes / trials - p) <= half


@pytest.mark.parametrize("eps", [0.5, 2.0, 5.0])
def test_rr_dense_flip_rate(eps):
    rr = RandomizedResponse(eps)
    rng = np.random.default_rng(1)
    n = 1_000_000
    bits = (np.arange(n) % 2).astype(np.uint8)
    out = rr.perturb_bits(bits, rng)
    flips = int((out != bits).sum())
    assert inside(flips, n, 1 / (math.exp(eps) + 1))
    assert not inside(flips, n, 1.1 / (math.exp(eps) + 1))  # a wrong probability fails


@pytest.mark.parametrize("eps", [1.0, 2.5, 3.0])  # 1.0: dense rows (p >= DENSE_FLIP)
def test_rr_sparse_rates_and_uniform_positions(eps):
    """perturb_row must equal per-bit flipping: zeros flip with p, ones survive with 1−p,
    flipped positions uniform over the zeros, the excluded diagonal never reported."""
    rr = RandomizedResponse(eps)
    p = rr.p
    length, me = 1001, 500
    ones = np.arange(0, length, 10)
    ones = ones[ones != me]
    reps = 1300
    counts = np.zeros(length, dtype=np.int64)
    for k in range(reps):
        out = rr.perturb_row(ones, length, node_rng(7, k, 0, ADJACENCY), exclude=me)
        assert np.all(np.diff(out) > 0) and out.dtype == np.int32
        counts[out] += 1
    is_one = np.zeros(length, bool)
    is_one[ones] = True
    zeros = ~is_one
    zeros[me] = False
    assert counts[me] == 0
    zero_trials = int(zeros.sum()) * reps
    one_trials = int(is_one.sum()) * reps
    assert zero_trials >= 10**6
    assert inside(int(counts[zeros].sum()), zero_trials, p)
    assert inside(int(counts[is_one].sum()), one_trials, 1 - p)
    assert not inside(int(counts[zeros].sum()), zero_trials, p * 1.05)
    # Uniform positions: chi-square over zero positions (df = #zeros − 1) at the 99.9% level.
    obs = counts[zeros]
    exp = obs.mean()
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    df = obs.size - 1
    assert chi2 < df + Z999 * math.sqrt(2 * df) * 1.2
    # No position is systematically missed (e.g. the last one, or the one after a neighbour).
    assert counts[length - 1] > 0 and counts[1] > 0 and counts[me + 1] > 0


def test_rr_sparse_matches_dense_distribution_of_counts():
    # The number of reported ones has mean deg(1−p) + (n−1−deg)p.
    rr = RandomizedResponse(2.0)
    p = rr.p
    ones = np.array([3, 9, 27])
    sizes = [
        rr.perturb_row(ones, 300, node_rng(1, k, 0, ADJACENCY), exclude=0).size for k in range(4000)
    ]
    mean = 3 * (1 - p) + 296 * p
    var = 3 * p * (1 - p) + 296 * p * (1 - p)
    assert abs(np.mean(sizes) - mean) < Z999 * math.sqrt(var / 4000)


@pytest.mark.parametrize("eps", [0.5, 3.0])
@pytest.mark.parametrize(
    "x,domain", [(0.0, (0.0, 1.0)), (1.0, (0.0, 1.0)), (0.3, (0.0, 1.0)), (0.5, (-1.0, 2.0))]
)
def test_one_bit_rate(eps, x, domain):
    mech = OneBit(eps, domain)
    lo, hi = domain
    e = math.exp(eps)
    exact = 1 / (e + 1) + (x - lo) / (hi - lo) * (e - 1) / (e + 1)
    n = 1_000_000
    out = mech.perturb(np.full(n, x), np.random.default_rng(int(eps * 100 + x * 10)))
    assert inside(int(out.sum()), n, exact)
    if lo != 0:
        paper_typo = 1 / (e + 1) + x / (hi - lo) * (e - 1) / (e + 1)
        assert not inside(int(out.sum()), n, paper_typo)


def test_one_bit_rejects_out_of_domain():
    with pytest.raises(ValueError, match="outside the declared domain"):
        OneBit(1.0).perturb(np.array([0.0, 1.5]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="domain"):
        OneBit(1.0, (1.0, 1.0))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        RandomizedResponse(bad)
    with pytest.raises(ValueError, match="epsilon"):
        flip_probability(bad)


def test_dense_threshold_splits_the_test_cases():
    assert RandomizedResponse(1.0).p >= DENSE_FLIP > RandomizedResponse(2.5).p


@pytest.mark.parametrize("size", [1, 3, 7, 99_989, 2**31 - 1])
def test_ranks_from_uniforms_are_the_53_bit_integers_mod_size(size):
    """Exact: the float path equals integer arithmetic on the uniform's 53 bits, the edges of
    [0, 1) included, and the rejection keeps exactly v < the largest multiple of size."""
    u = np.random.default_rng(3).random(200_000)
    u[:4] = [0.0, 1 - 2**-53, 2**-53, 0.5]
    ranks, kept = ranks_from_uniforms(u, size)
    v = (u * 2.0**53).astype(np.int64)
    assert np.array_equal(ranks, v % size)
    assert np.array_equal(kept, v < (2**53 // size) * size)


def test_distinct_ranks_uniform_subsets():
    """count distinct sorted ranks in range; over many draws every rank is equally likely
    (chi-square, 99.9%), also when most of the range is taken (many later rounds)."""
    for count, size, reps in ((5, 40, 40_000), (36, 40, 10_000)):
        hits = np.zeros(size, dtype=np.int64)
        for k in range(reps):
            r = distinct_ranks(node_rng(2, k, 0, ADJACENCY), count, size)
            assert r.size == count and np.all(np.diff(r) > 0) and 0 <= r[0] and r[-1] < size
            hits[r] += 1
        exp = reps * count / size
        chi2 = float(((hits - exp) ** 2 / exp).sum())
        df = size - 1
        assert chi2 < df + Z999 * math.sqrt(2 * df) * 1.2
    with pytest.raises(ValueError, match="distinct"):
        distinct_ranks(np.random.default_rng(0), 5, 4)
