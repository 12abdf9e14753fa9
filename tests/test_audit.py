"""The empirical privacy audit: every registered mechanism passes at small size, planted leaky
mechanisms (a float Laplace, a miscalibrated RR) fail, and the statistics are right."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom

from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.protocols.multibit import MultiBit
from ldpgraph.simulation import audit, cli
from ldpgraph.simulation.audit import (
    AUDITS,
    Auditable,
    Trial,
    cp_lower,
    cp_upper,
    epsilon_lower_bound,
    multibit_draw,
    numeric_events,
    run_audit,
    unreachable,
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


def test_numeric_events_counts():
    fam = numeric_events(0, 2, reachable_from=(5.0,))
    counts = fam.count(np.array([0, 1, 1, 2, 3, -1]))
    got = dict(zip(fam.labels, counts.tolist(), strict=True))
    assert got["y = 1"] == 2 and got["y ≤ 1"] == 4 and got["y ≥ 2"] == 2 and got["y ≥ 0"] == 5
    assert got["y not reachable from 5 (float grid)"] == 0


def test_multibit_twin_is_bit_identical():
    """The audit's vectorised draw equals the node's own MultiBit.perturb_many."""
    mech = MultiBit(8.0)
    x = np.random.default_rng(1).random((3000, 4))
    a = multibit_draw(mech, x, np.random.default_rng(9))
    b = mech.perturb_many(x, np.random.default_rng(9))
    assert np.array_equal(a, b)


def test_every_registered_mechanism_passes():
    names = ["rr", "onebit", "multibit", "multibit-vector", "discrete-laplace"]
    assert set(names) <= set(AUDITS)
    rows = run_audit(names, epsilons=(1.0, 4.0), draws=DRAWS, seed=0)
    assert len(rows) == 2 * len(names)
    for r in rows:
        assert r.passed, r
        assert r.epsilon_lower_bound <= r.claimed_epsilon
    # The tight mechanisms come close to their claim (the audit has power).
    tight = [r for r in rows if r.mechanism in ("rr", "onebit", "discrete-laplace")]
    assert all(r.epsilon_lower_bound > 0.8 * r.epsilon for r in tight)
    # The integer degree never trips the float-grid event.
    for r in rows:
        if r.mechanism == "discrete-laplace":
            assert "reachable" not in r.event


def _planted_float_laplace(eps: float) -> Trial:
    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        value = (4.0, 5.0)[which]
        return value + rng.laplace(0.0, 1.0 / eps, n)

    return Trial(
        draw,
        numeric_events(-20, 30, reachable_from=(4.0, 5.0)),
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
