"""The empirical privacy audit: every registered mechanism passes at small size, planted leaky
mechanisms (a float Laplace, a miscalibrated RR, a leaky sparse RR row sampler) fail at the
command's default settings, the float-reachability model is numpy's Laplace sampler bit for
bit, the RR audit runs the node's perturb_row, and the statistics are right."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom

import ldpgraph.simulation.audit_rows  # noqa: F401  (registers the node audit's rows)
from ldpgraph.protocols.mechanisms import RandomizedResponse, flip_probability
from ldpgraph.protocols.multibit import MultiBit
from ldpgraph.simulation import audit, cli
from ldpgraph.simulation.audit import (
    AUDITS,
    Auditable,
    Trial,
    cp_lower,
    cp_upper,
    degree_events,
    epsilon_lower_bound,
    multibit_draw,
    numeric_events,
    numpy_laplace_output,
    row_events,
    rr_row_draw,
    run_audit,
    unreachable,
    unreachable_laplace,
)

DRAWS = 200_000


def test_cp_bounds_known_numbers():
    n, a = 1000, 0.05
    assert cp_upper(0, n, a) == pytest.approx(1 - a ** (1 / n), rel=1e-9)
    assert cp_lower(n, n, a) == pytest.approx(a ** (1 / n), rel=1e-9)
    assert cp_lower(0, n, a) == 0.0 and cp_upper(n, n, a) == 1.0
    # The defining binomial tails: P[Bin(n, lower) ≥ k] = a and P[Bin(n, upper) ≤ k] = a.
    for k in (1, 50, 999):
        assert binom.sf(k - 1, n, cp_lower(k, n, a)) == pytest.approx(a, rel=1e-6)
        assert binom.cdf(k, n, cp_upper(k, n, a)) == pytest.approx(a, rel=1e-6)
    assert cp_lower(50, 100, 0.05) == pytest.approx(0.41362, abs=1e-5)
    assert cp_upper(50, 100, 0.05) == pytest.approx(0.58638, abs=1e-5)
    # α is split over the two bounds.
    k0, k1 = 600, 300
    expect = math.log(cp_lower(k0, n, a / 2) / cp_upper(k1, n, a / 2))
    assert epsilon_lower_bound(k0, n, k1, n, a) == pytest.approx(expect)
    assert epsilon_lower_bound(0, n, k1, n, a) == -math.inf


def test_unreachable_float_grid():
    """Float Laplace on 4 vs 5: a share of the outputs of 4 cannot come from 5; no output of 5
    is flagged as unreachable from 5; integers are always reachable."""
    rng = np.random.default_rng(3)
    y4 = 4.0 + rng.laplace(0.0, 1 / 0.8, 1_000_000)
    y5 = 5.0 + rng.laplace(0.0, 1 / 0.8, 1_000_000)
    assert unreachable(y4, 5.0).mean() > 0.005
    assert not unreachable(y5, 5.0).any() and not unreachable(y4, 4.0).any()
    ints = rng.integers(-50, 60, 100_000).astype(np.float64)
    assert not unreachable(ints, 4.0).any() and not unreachable(ints, 5.0).any()


def test_laplace_model_is_numpys_sampler_bit_for_bit():
    """numpy_laplace_output on the generator's own 53-bit uniforms reproduces
    Generator.laplace exactly (both the loc form and base + laplace(0, scale))."""
    n, scale = 200_000, 0.8
    raw = np.random.default_rng(5).bit_generator.random_raw(n + 100)
    j = (raw >> np.uint64(11)).astype(np.int64)
    j = j[j > 0][:n]  # numpy redraws U = 0
    np.testing.assert_array_equal(
        numpy_laplace_output(j, 0.0, scale), np.random.default_rng(5).laplace(0.0, scale, n)
    )
    np.testing.assert_array_equal(
        numpy_laplace_output(j, 4.0, scale), 4.0 + np.random.default_rng(5).laplace(0.0, scale, n)
    )
    np.testing.assert_array_equal(
        numpy_laplace_output(j, 4.0, scale), np.random.default_rng(5).laplace(4.0, scale, n)
    )
    # The output is non-decreasing in j (what the binary search relies on).
    probe = np.sort(np.random.default_rng(1).integers(1, 2**53, 100_000))
    probe = np.concatenate([[1, 2, 2**52 - 1, 2**52, 2**52 + 1], probe, [2**53 - 1]])
    probe.sort()
    assert (np.diff(numpy_laplace_output(probe, 4.0, scale)) >= 0).all()


@pytest.mark.parametrize("eps", [0.8, 1.0, 4.0, 8.0])
def test_unreachable_laplace(eps):
    """numpy's float Laplace on 4 vs 5: no output is flagged unreachable from its own base,
    and many outputs of each base are unreachable from the other (the sampler-agnostic check
    finds next to none at ε ≥ 4)."""
    scale, n = 1.0 / eps, 100_000
    rng = np.random.default_rng(int(eps * 10))
    y4 = 4.0 + rng.laplace(0.0, scale, n)
    y5 = rng.laplace(5.0, scale, n)
    assert not unreachable_laplace(y4, 4.0, scale).any()
    assert not unreachable_laplace(y5, 5.0, scale).any()
    share = {1.0: 0.25, 4.0: 0.5, 8.0: 0.9}.get(eps, 0.2)
    assert unreachable_laplace(y4, 5.0, scale).mean() > share
    assert unreachable_laplace(y5, 4.0, scale).mean() > share
    if eps >= 4:
        assert unreachable(y4, 5.0).mean() < 0.001
    # The exact search agrees with a brute-force scan of the j around each output's own j.
    j = rng.integers(1, 2**53, 200)
    for base in (4.0, 5.0):
        y = numpy_laplace_output(j, 4.0, scale)
        found = np.array(
            [
                (numpy_laplace_output(np.arange(max(k - 300, 1), k + 300), base, scale) == v).any()
                for k, v in zip(j, y, strict=True)
            ]
        )
        flagged = unreachable_laplace(y, base, scale)
        assert not (found & flagged).any()  # anything found nearby is reachable
        if base == 4.0:
            assert not flagged.any()


def test_unreachable_laplace_edge_values():
    scale = 0.25
    y = np.array([4.0, np.nan, np.inf, -np.inf, 4.0 + 100.0, 4.0 - 100.0, 1e300])
    got = unreachable_laplace(y, 4.0, scale)
    assert got.tolist() == [False, True, True, True, True, True, True]
    # The extremes the sampler reaches: j = 1 and j = 2^53 − 1.
    ends = numpy_laplace_output(np.array([1, 2**53 - 1]), 4.0, scale)
    assert not unreachable_laplace(ends, 4.0, scale).any()


def test_numeric_events_counts():
    fam = numeric_events(0, 2, reachable_from=(5.0,))
    counts = fam.count(np.array([0, 1, 1, 2, 3, -1]))
    got = dict(zip(fam.labels, counts.tolist(), strict=True))
    assert got["y = 1"] == 2 and got["y ≤ 1"] == 4 and got["y ≥ 2"] == 2 and got["y ≥ 0"] == 5
    assert got["y not reachable from 5 (float grid)"] == 0
    fam = numeric_events(0, 2, reachable_from=(5.0,), laplace_scale=1.0)
    y = 4.0 + np.random.default_rng(0).laplace(0.0, 1.0, 1000)
    y = np.concatenate([y, y[:100], y[:10]])  # a repeated output counts every time
    got = dict(zip(fam.labels, fam.count(y).tolist(), strict=True))
    hits = int(unreachable_laplace(y, 5.0, 1.0).sum())
    assert got["y not reachable from 5 (numpy Laplace, scale 1)"] == hits > 100


def test_rr_audit_runs_the_nodes_row_sampler():
    """rr_row_draw's blocks are reports of the 8-bit row by perturb_row: their law is the
    exact product law of independent flips, and equals one perturb_row call per row."""
    from scipy.stats import chi2_contingency, chisquare

    eps = 1.0
    mech = RandomizedResponse(eps)
    p = flip_probability(eps)
    for which in (0, 1):
        codes = rr_row_draw(mech, which, 200_000, np.random.default_rng(which))
        truth = np.zeros(audit.RR_ROW_LENGTH, dtype=bool)
        truth[list(audit.RR_ROWS[which])] = True
        bits = (np.arange(256)[:, None] >> np.arange(8)) & 1
        law = np.prod(np.where(bits == truth, 1 - p, p), axis=1)
        observed = np.bincount(codes, minlength=256)
        keep = law * codes.shape[0] > 5
        expected = law[keep] / law[keep].sum() * observed[keep].sum()
        assert chisquare(observed[keep], expected).pvalue > 1e-4
        # One perturb_row call per row (a node of a 9-node graph, its own id 0 excluded).
        rng = np.random.default_rng(10 + which)
        ones = 1 + np.asarray(audit.RR_ROWS[which])
        single = np.zeros(5000, dtype=np.int64)
        for i in range(single.shape[0]):
            out = mech.perturb_row(ones, 9, rng, exclude=0).astype(np.int64)
            single[i] = int((np.left_shift(1, out - 1)).sum())
        table = np.stack([np.bincount(single, minlength=256), observed])[:, keep]
        assert chi2_contingency(table).pvalue > 1e-4
    fam = row_events(audit.RR_ROW_LENGTH)
    got = dict(zip(fam.labels, fam.count(np.array([0b10010, 0b10])).tolist(), strict=True))
    assert got["bit 4 reported"] == 1 and got["bit 1 reported"] == 2
    assert got["bit 4 not reported"] == 1 and got["reported row = 01001000"] == 1


def test_multibit_twin_is_bit_identical():
    """The audit's vectorised draw equals the node's own MultiBit.perturb_many."""
    mech = MultiBit(8.0)
    x = np.random.default_rng(1).random((3000, 4))
    a = multibit_draw(mech, x, np.random.default_rng(9))
    b = mech.perturb_many(x, np.random.default_rng(9))
    assert np.array_equal(a, b)


def test_every_registered_mechanism_passes():
    names = ["rr", "arr", "onebit", "multibit", "multibit-vector", "discrete-laplace"]
    assert set(names) <= set(AUDITS)
    rows = run_audit(names, epsilons=(1.0, 4.0), draws=DRAWS, seed=0)
    assert len(rows) == 2 * len(names)
    for r in rows:
        assert r.passed, r
        assert r.epsilon_lower_bound <= r.claimed_epsilon
    # The tight mechanisms come close to their claim (the audit has power).
    tight = [r for r in rows if r.mechanism in ("rr", "arr", "onebit", "discrete-laplace")]
    assert all(r.epsilon_lower_bound > 0.8 * r.epsilon for r in tight)
    # The integer degree never trips the float-grid event.
    for r in rows:
        if r.mechanism == "discrete-laplace":
            assert "reachable" not in r.event


def _planted_float_laplace(eps: float) -> Trial:
    """A float Laplace on the degree, audited with the discrete-Laplace row's own events."""

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        value = (4.0, 5.0)[which]
        return value + rng.laplace(0.0, 1.0 / eps, n)

    return Trial(
        draw,
        degree_events(eps),
        eps,
        ("degree 4", "degree 5"),
        "adjacency bit (degree)",
    )


def _planted_rr(eps: float) -> Trial:
    p = flip_probability(3.0 * eps)  # spends 3ε, claims ε

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return (which ^ (rng.random(n) < p)).astype(np.uint8)

    return Trial(draw, numeric_events(0, 1), eps, ("bit 0", "bit 1"), "adjacency bit")


@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setitem(
        AUDITS, "float-laplace", Auditable("float-laplace", "planted", _planted_float_laplace)
    )
    monkeypatch.setitem(AUDITS, "bad-rr", Auditable("bad-rr", "planted", _planted_rr))


def test_planted_leaks_fail(planted):
    (lap,) = run_audit(["float-laplace"], epsilons=(0.8,), draws=DRAWS, seed=0)
    assert not lap.passed
    assert lap.epsilon_lower_bound > 3.0  # far above the claimed 0.8
    assert "reachable" in lap.event
    (rr,) = run_audit(["bad-rr"], epsilons=(1.0,), draws=DRAWS, seed=0)
    assert not rr.passed and rr.epsilon_lower_bound > 2.5


def test_planted_float_laplace_fails_at_the_default_settings(planted):
    """At the command's default ε (1, 4, 8) and the α share a row gets in ``audit --all``
    (with the planted mechanism counted in), the float Laplace fails at every ε, through
    outputs numpy's sampler cannot produce from the other degree."""
    rows_in_all = len(AUDITS) * len(audit.DEFAULT_EPSILONS)
    alpha = audit.DEFAULT_ALPHA * len(audit.DEFAULT_EPSILONS) / rows_in_all
    rows = run_audit(
        ["float-laplace"], epsilons=audit.DEFAULT_EPSILONS, draws=DRAWS, seed=0, alpha=alpha
    )
    assert [r.epsilon for r in rows] == list(audit.DEFAULT_EPSILONS)
    for r in rows:
        assert not r.passed, r
        assert r.epsilon_lower_bound > r.claimed_epsilon + 1.0, r
        assert "numpy Laplace" in r.event, r


def test_a_leaky_row_sampler_fails_the_rr_audit(monkeypatch):
    """The rr row audits RandomizedResponse.perturb_row itself: a sampler that always keeps
    the true 1-bits (perturb_bits untouched) fails at the default ε."""
    honest = RandomizedResponse.perturb_row

    def leaky(self, ones, length, rng, exclude=None):
        out = honest(self, ones, length, rng, exclude)
        return np.union1d(out, np.asarray(ones, dtype=np.int64)).astype(np.int32)

    monkeypatch.setattr(RandomizedResponse, "perturb_row", leaky)
    rows = run_audit(["rr"], epsilons=audit.DEFAULT_EPSILONS, draws=100_000, seed=0)
    for r in rows:
        assert not r.passed, r
        assert "bit 4" in r.event and r.epsilon_lower_bound > r.claimed_epsilon + 1.0, r


def test_a_data_dependent_sampling_fails_the_arr_audit(monkeypatch):
    """The arr row audits AsymmetricRR.perturb_row itself: sampling that spares the true 1s
    (not post-processing: it looks at the data) fails at the default ε."""
    from ldpgraph.protocols.mechanisms import AsymmetricRR

    def leaky(self, ones, length, rng, exclude=None, keep_rng=None):
        out = RandomizedResponse(self.epsilon).perturb_row(ones, length, rng, exclude)
        true = np.isin(out, np.asarray(ones, dtype=np.int64))
        return out[true | (rng.random(out.shape[0]) < self.mu)]

    assert run_audit(["arr"], epsilons=(4.0,), draws=100_000, seed=0)[0].passed
    monkeypatch.setattr(AsymmetricRR, "perturb_row", leaky)
    rows = run_audit(["arr"], epsilons=audit.DEFAULT_EPSILONS, draws=100_000, seed=0)
    for r in rows:
        assert not r.passed, r
        # The leak is ln(1/μ) = 1.39; at ε = 8 the draws bound how much of it shows.
        assert r.epsilon_lower_bound > r.claimed_epsilon + (0.5 if r.epsilon < 8 else 0.1), r
        assert "bit 4" in r.event or "row = 00001000" in r.event, r  # the true 1 that was spared


def test_same_seed_same_rows():
    a = run_audit(["rr"], epsilons=(2.0,), draws=20_000, seed=5)
    b = run_audit(["rr"], epsilons=(2.0,), draws=20_000, seed=5)
    assert a[0].as_dict() == b[0].as_dict()


def test_cli_exit_codes_and_json(planted, capsys):
    assert cli.main(["audit", "--mechanism", "rr", "--draws", "20000", "--epsilon", "1"]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "rr" in out
    code = cli.main(
        [
            "audit",
            "--mechanism",
            "rr",
            "--mechanism",
            "bad-rr",
            "--draws",
            "20000",
            "--epsilon",
            "1",
            "--json",
        ]
    )
    assert code == 1
    rows = json.loads(capsys.readouterr().out)
    assert [r["mechanism"] for r in rows] == ["rr", "bad-rr"]
    assert [r["passed"] for r in rows] == [True, False]
    assert cli.main(["audit", "--mechanism", "nope"]) == 2
    assert audit.DEFAULT_DRAWS >= 1_000_000
