"""The central audit (simulation/audit_central.py, audit_central_stats.py): its bound is valid
and has power on samples of a known ratio; the real strategies' honest rows pass (or say they
cannot tell) and their planted under-statements fail; ∞ and no-ε claims are never passed;
the CLI hook.

Every release draws a fresh OS-entropy seed, so these tests are random by design: each α is set
so that an honest row fails with probability at most α (≤ 1 %), and each planted row's expected
bound sits far above its claim."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from ldpgraph.simulation import audit_central as ac
from ldpgraph.simulation import audit_central_stats as st
from ldpgraph.simulation.audit_central_cases import CASES

#: The α of the fast tests: an honest row fails with probability ≤ 1e-4.
ALPHA = 1e-4


def test_bound_subtracts_delta_and_ceiling_is_a_perfect_separation():
    lb = st.delta_epsilon_lower_bound(3650, 5000, 1350, 5000, 0.05, 0.0)
    assert 0.85 < lb < math.log(0.73 / 0.27)  # ratio e: a lower bound just below 1
    assert st.delta_epsilon_lower_bound(3650, 5000, 1350, 5000, 0.05, 0.05) < lb
    assert st.delta_epsilon_lower_bound(5, 100, 0, 100, 0.05, 0.2) == -math.inf
    assert st.ceiling(100, 0.05, 0.0) == st.delta_epsilon_lower_bound(100, 100, 0, 100, 0.05, 0)
    assert st.ceiling(100, 0.05, 0.0) < st.ceiling(1000, 0.05, 0.0) < math.log(1000)


@pytest.mark.parametrize("kind", ["binary", "real"])
def test_best_bound_covers_the_true_epsilon_and_has_power(kind):
    """Samples whose best event has likelihood ratio exactly e (ε = 1): over 40 repetitions
    at α = 0.05 the bound exceeds 1 at most a few times (its coverage) and averages well
    above 0 (its power). ε = 0.5 would be exceeded far more often."""
    rng = np.random.default_rng(5)
    n, over, total = 600, 0, 0.0
    for _ in range(40):
        if kind == "binary":
            p = math.e / (1 + math.e)
            s0, s1 = rng.random(n) < 1 - p, rng.random(n) < p
        else:  # Laplace(0, 1) vs Laplace(1, 1): every tail event {s ≥ t ≥ 1} has ratio e
            s0, s1 = rng.laplace(0.0, 1.0, n), rng.laplace(1.0, 1.0, n)
        bound = st.best_bound(s0.astype(float), s1.astype(float), 0.05, 0.0)
        over += bound.epsilon_lower_bound > 1.0
        total += bound.epsilon_lower_bound
    assert over <= 8  # Binomial(40, ≤ 0.05) exceeds 8 with probability < 1e-3
    assert total / 40 > (0.6 if kind == "binary" else 0.3)


@pytest.mark.parametrize(("name", "draws"), [("edgerand", 400), ("lapgraph", 150)])
def test_edge_level_honest_row_passes_and_planted_row_fails(name, draws):
    honest = ac.audit_case(CASES[name], ALPHA, draws)
    assert honest.verdict == ac.PASS, honest.reason
    assert honest.epsilon_lower_bound <= honest.claimed_epsilon
    assert honest.planted_verdict == ac.FAIL  # the power check on the same draws
    planted = ac.audit_case(ac.planted_row(CASES[name]), ALPHA, draws)  # fresh draws
    assert planted.claimed_epsilon == pytest.approx(honest.claimed_epsilon)
    assert planted.verdict == ac.FAIL, planted.reason
    assert planted.epsilon_lower_bound > planted.claimed_epsilon


def test_a_row_without_power_is_inconclusive_never_a_pass():
    case = CASES["edgerand"]
    # the "planted" variant is the honest mechanism: nothing under-stated, nothing to catch
    blind = replace(case, planted=dict(case.params))
    row = ac.audit_case(blind, ALPHA, 200)
    assert row.verdict == ac.INCONCLUSIVE and "too little power" in row.reason
    # a claim above what any test at 20 draws can certify
    loose = replace(case, params={"epsilon": 8.0}, planted={"epsilon": 30.0})
    row = ac.audit_case(loose, ALPHA, 20)
    assert row.ceiling < 8.0 and row.verdict == ac.INCONCLUSIVE
    assert f"no test at 20 draws can certify more than {row.ceiling:.3f}" in row.reason


def test_infinite_and_missing_claims_are_not_passed():
    no_claim = replace(CASES["edgerand"], name="edge-delete", protocol="edge-delete", params={})
    row = ac.audit_case(no_claim, ALPHA, 10)
    assert row.verdict == ac.NO_CLAIM and math.isinf(row.claimed_epsilon)
    row = ac.audit_case(CASES["ppgsl"], ALPHA)
    assert row.verdict == ac.NOT_APPLICABLE and "empirical" in row.reason
    with pytest.raises(ValueError, match="not audited"):
        ac.planted_row(CASES["ppgsl"])


def test_dpggan_claim_is_read_from_its_release_and_never_passed():
    row = ac.audit_case(CASES["dpggan-paper"], ALPHA)  # the bounded default: its own test
    assert row.verdict in (ac.NO_CLAIM, ac.INCONCLUSIVE), row.reason
    assert math.isinf(row.claimed_epsilon) == (row.verdict == ac.NO_CLAIM)


def test_cli_central_rows_and_a_planted_failure(capsys):
    from ldpgraph.simulation.cli import main

    code = main(["audit", "--central", "edgerand", "ppgsl", "--central-draws", "300",
                 "--alpha", "1e-3", "--quiet"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "edgerand: PASS" in out and "ppgsl: N/A" in out
    code = main(["audit", "--central", "edgerand-planted", "--central-draws", "300", "--quiet"])
    assert code == 1 and "edgerand-planted: FAIL" in capsys.readouterr().out
    assert main(["audit", "--central", "nope", "--quiet"]) == 2


def test_shared_batches_serve_the_planted_row_and_never_make_it_pass():
    """A row and its planted row with ``shared``: two batches, not four; the planted row's
    honest draws are the honest row's planted batch, so its bound is that figure. A planted
    variant that is the honest mechanism reads the same batch for both sides of its power
    check, so it stays INCONCLUSIVE (sharing never manufactures a PASS)."""
    case = CASES["edgerand"]
    shared: ac.Batches = {}
    honest = ac.audit_case(case, ALPHA, 300, shared=shared)
    planted = ac.audit_case(ac.planted_row(case), ALPHA, 300, shared=shared)
    assert len(shared) == 2 and honest.verdict == ac.PASS and planted.verdict == ac.FAIL
    assert planted.epsilon_lower_bound == honest.planted_lower_bound
    assert planted.counts["honest_hits"] == honest.counts["planted_hits"]
    blind = replace(case, planted=dict(case.params))
    row = ac.audit_case(blind, ALPHA, 300, shared=shared)
    assert row.verdict == ac.INCONCLUSIVE and len(shared) == 2  # the honest batch, read twice
    assert row.planted_lower_bound == row.epsilon_lower_bound


@pytest.mark.slow
def test_dpar_gm_honest_row_passes_and_planted_row_fails():
    shared: ac.Batches = {}  # the planted row reads the honest row's planted batch
    honest = ac.audit_case(CASES["dpar-gm"], 1e-2, 100, shared=shared)
    assert honest.verdict == ac.PASS, honest.reason
    assert honest.planted_verdict == ac.FAIL
    planted = ac.audit_case(ac.planted_row(CASES["dpar-gm"]), 1e-2, 100, shared=shared)
    assert planted.verdict == ac.FAIL, planted.reason
    assert planted.epsilon_lower_bound == honest.planted_lower_bound


@pytest.mark.slow
def test_privdpr_is_honestly_inconclusive():
    """PrivDPR's release is a function of V, whose gradient the weight normalisation shrinks
    by s^-K: even without noise (dpr-nodp, the planted variant) V does not move enough at
    this size for any test to see the graph. The row must say so, not pass; the planted
    rows of EdgeRand, LapGraph and DPAR-GM above show the same test failing where it has
    power."""
    row = ac.audit_case(CASES["privdpr"], 1e-2, 40)
    assert row.verdict != ac.FAIL, row.reason
    assert row.verdict == ac.INCONCLUSIVE or row.planted_verdict == ac.FAIL
