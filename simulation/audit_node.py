"""The node audit: ``ldpgraph audit`` rows that run the exact code each node runs.

The rows of :mod:`ldpgraph.simulation.audit` check each mechanism's law; these check the code
paths a node (or the batched client step that stands for many nodes) actually calls, so that a
bug in one of them cannot hide behind a correct twin:

* ``degree-node``: the scalar sampler, one ``DiscreteLaplace.perturb`` call per draw, as Blink's
  ``client_step`` and ``noisy_degree`` call it (the ``discrete-laplace`` row runs the batched
  ``perturb_many``);
* ``degree-batch``: the noisy degrees of the batched client step
  (``node_reports.rr_onebit_batch``, every node its own stream);
* ``ldpgen-vector``: LDPGen's round-1 ``client_step``, the whole per-group degree vector;
* ``rr-rate``, ``arr-rate``, ``onebit-rate``, ``rr-batch-rate``: flip rates measured over many
  bits per call, enough to catch a 2 % over-spend at ε = 8 (see :func:`audit_rates`), on
  ``perturb_row``, ``AsymmetricRR.perturb_row``, ``OneBit.perturb`` and the batched RR rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: --draws is scaled by this for the rows that make one node call per draw (10^6 → 10^5).
NODE_SCALE = 0.1
#: --draws is scaled by this for the rate rows: Bernoulli trials per input (10^6 → 10^8).
RATE_SCALE = 100.0
#: The batched RR rows' rate row: 10^6 → 2·10^7 bits (each call is 1024 nodes' streams; the
#: 2 % power at ε = 8 is rr-rate's, this row checks the batched path's law).
BATCH_RATE_SCALE = 20.0
#: Bits per call of a rate row (memory).
RATE_CHUNK = 1 << 22


# --------------------------------------------------------------------------- rate rows


@dataclass(frozen=True)
class RateTrial:
    """``bits(which, n, rng)`` runs the node's code on n true bits equal to ``which`` and
    returns how many were reported as 1 (n may be exceeded: it returns (ones, trials))."""

    bits: Callable[[int, int, np.random.Generator], tuple[int, int]]
    claimed_epsilon: float
    inputs: tuple[str, str]
    unit: str


def audit_rates(trial: RateTrial, n: int, rng, alpha: float, tick) -> dict[str, Any]:
    """Flip rates from ``n`` trials per true bit value: with r₁ = P[report 1 | bit 1] and
    r₀ = P[report 1 | bit 0], ε_lb = max(ln(r₁_lower/r₀_upper), ln((1−r₀)_lower/(1−r₁)_upper))
    with Clopper–Pearson bounds at α/4 each (two directions, two bounds).

    Every trial is a report of one bit under one of two neighbouring values, so each direction
    is the event ratio of the other rows with the per-bit independence the mechanism claims
    (the event rows check the joint law of a row; this one has the power: at ε = 8, 10^8 zero
    bits give ~33 000 flips, r₀ to ±1.8 %, so a 2 % over-spend (ε 8.16) bounds above 8)."""
    from .audit_stats import epsilon_lower_bound, point_estimate

    ones, trials = [0, 0], [0, 0]
    for which in (0, 1):
        while trials[which] < n:
            k, m = trial.bits(which, min(RATE_CHUNK, n - trials[which]), rng)
            ones[which] += int(k)
            trials[which] += int(m)
            tick(m)
    report1 = epsilon_lower_bound(ones[1], trials[1], ones[0], trials[0], alpha / 2)
    report0 = epsilon_lower_bound(
        trials[0] - ones[0], trials[0], trials[1] - ones[1], trials[1], alpha / 2
    )
    if report1 >= report0:
        lb, event, k0, k1 = report1, "bit reported 1", ones[1], ones[0]
        first, second = trial.inputs[1], trial.inputs[0]
    else:
        lb, event, k0, k1 = report0, "bit reported 0", trials[0] - ones[0], trials[1] - ones[1]
        first, second = trial.inputs[0], trial.inputs[1]
    return {
        "epsilon_lower_bound": max(0.0, lb),
        "epsilon_estimate": point_estimate(k0, trials[0], k1, trials[1]),
        "event": f"{event} (rate over {trials[0]:,} bits each): {first} over {second}",
        "passed": bool(lb <= trial.claimed_epsilon + 1e-9),
        "counts": {"trials": trials[0], "hits_num": k0, "hits_den": k1},
    }


def _row_bits(mech: Any) -> Callable[[int, int, np.random.Generator], tuple[int, int]]:
    """A node's row of n + 1 columns (column 0 its own, excluded) whose n other bits all equal
    ``which``, through ``mech.perturb_row`` as ``noisy_row`` calls it."""

    def bits(which: int, n: int, rng: np.random.Generator) -> tuple[int, int]:
        ones = np.arange(1, n + 1, dtype=np.int64) if which else np.zeros(0, dtype=np.int64)
        out = mech.perturb_row(ones, n + 1, rng, exclude=0)
        if out.size and out[0] == 0:
            raise RuntimeError("perturb_row reported the node's own (excluded) column")
        return int(out.shape[0]), n

    return bits


def _bit_claim(eps: float) -> float:
    from ldpgraph.protocols.accounting import bit_part

    return bit_part("adjacency", "one adjacency bit", eps)["epsilon"]


def _rr_rate(eps: float) -> RateTrial:
    from ldpgraph.protocols.mechanisms import RandomizedResponse

    return RateTrial(
        _row_bits(RandomizedResponse(eps)), _bit_claim(eps), ("bit 0", "bit 1"), "adjacency bit"
    )


def _arr_rate(eps: float) -> RateTrial:
    from ldpgraph.protocols.mechanisms import AsymmetricRR

    from .audit_client import ARR_AUDIT_MU

    return RateTrial(
        _row_bits(AsymmetricRR(eps, ARR_AUDIT_MU)),
        _bit_claim(eps),
        ("bit 0", "bit 1"),
        f"adjacency bit, kept with μ = {ARR_AUDIT_MU:g}",
    )


def _onebit_rate(eps: float) -> RateTrial:
    from ldpgraph.protocols.mechanisms import OneBit

    mech = OneBit(eps, domain=(0.0, 1.0))

    def bits(which: int, n: int, rng: np.random.Generator) -> tuple[int, int]:
        return int(mech.perturb(np.full(n, float(which)), rng).sum()), n

    return RateTrial(bits, _bit_claim(eps), ("x = 0", "x = 1"), "feature bit")


#: The batched RR rows: BATCH nodes 0..BATCH−1 of a 2·BATCH-node graph, every one with the
#: neighbours BATCH..2·BATCH−1: BATCH² one-bits and BATCH·(BATCH − 1) zero-bits per call.
BATCH = 1024


def _rr_batch_rate(eps: float) -> RateTrial:
    from ldpgraph.protocols.batch import NodeBatch
    from ldpgraph.protocols.ldp.node_reports import rr_onebit_batch

    b = BATCH
    nodes = np.arange(b, dtype=np.int64)
    batch = NodeBatch(
        nodes,
        np.arange(b + 1, dtype=np.int64) * b,
        np.tile(np.arange(b, 2 * b, dtype=np.int64), b),
        np.zeros((b, 1), dtype=np.float32),
        2 * b,
    )

    # One call reports both kinds of bits; what one side does not use waits for the other
    # (the two Clopper–Pearson bounds hold jointly by the union bound, dependent or not).
    pending: dict[int, list[tuple[int, int]]] = {0: [], 1: []}

    def bits(which: int, n: int, rng: np.random.Generator) -> tuple[int, int]:
        if not pending[which]:
            seeds = rng.integers(0, 2**62, size=b).tolist()
            rep = rr_onebit_batch(batch, 0, seeds, eps, None)
            cols = np.asarray(rep.indices, dtype=np.int64)
            upper = int((cols >= b).sum())
            pending[1].append((upper, b * b))
            pending[0].append((cols.shape[0] - upper, b * (b - 1)))
        return pending[which].pop()

    return RateTrial(
        bits, _bit_claim(eps), ("bit 0", "bit 1"), f"adjacency bit (batched rows, {b} nodes)"
    )


# --------------------------------------------------------------------------- node-call rows


def _degree_trial(draw: Any, eps: float, how: str):
    """The degree row's trial (a node of degree 4 or 5 reporting its noisy degree) for a
    ``draw`` of ``how`` (scalar or batched nodes)."""
    from ldpgraph.protocols.laplace import discrete_laplace_part

    from .audit_client import DEGREES, degree_events
    from .audit_registry import Trial

    return Trial(
        draw,
        degree_events(eps),
        discrete_laplace_part("degree", "one adjacency bit", eps)["epsilon"],
        (f"degree {DEGREES[0]}", f"degree {DEGREES[1]}"),
        f"adjacency bit (degree, {how})",
    )


def _degree_node(eps: float):
    from ldpgraph.protocols.laplace import DiscreteLaplace

    from .audit_client import DEGREES

    mech = DiscreteLaplace(eps)

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        d = DEGREES[which]
        return np.array([mech.perturb(d, rng) for _ in range(n)], dtype=np.int64)

    return _degree_trial(draw, eps, "scalar")


def _degree_batch(eps: float):
    from ldpgraph.protocols.batch import NodeBatch
    from ldpgraph.protocols.ldp.node_reports import rr_onebit_batch

    from .audit_client import DEGREES

    def batch_of(size: int, degree: int) -> NodeBatch:
        hub = np.arange(size, size + degree, dtype=np.int64)
        return NodeBatch(
            np.arange(size, dtype=np.int64),
            np.arange(size + 1, dtype=np.int64) * degree,
            np.tile(hub, size),
            np.zeros((size, 1), dtype=np.float32),
            size + max(DEGREES),
        )

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        seeds = rng.integers(0, 2**62, size=n).tolist()
        rep = rr_onebit_batch(batch_of(n, DEGREES[which]), 0, seeds, None, None, ("d", eps))
        values, _ = rep.extras["d"]
        return np.asarray(values).astype(np.int64)

    return _degree_trial(draw, eps, "batched nodes")


#: LDPGen's audited node: node 0 of a 12-node graph in k = 3 groups (ids 1–6 in group 0);
#: neighbours 1–4 or 1–5, so its group-0 count is 4 or 5 and the other groups' 0.
LDPGEN_N, LDPGEN_K = 12, 3


def _ldpgen_vector(eps: float):
    from ldpgraph.protocols.laplace import discrete_laplace_part
    from ldpgraph.protocols.ldp.ldpgen import MSG_GROUPS, MSG_K, encode_groups
    from ldpgraph.protocols.registry import make_protocol
    from ldpgraph.protocols.types import NodeView

    from .audit_client import DEGREES
    from .audit_events import numeric_events
    from .audit_registry import Trial

    # ε2 = (1 − phase share)·ε: the audited ε is the round-1 vector's.
    proto = make_protocol("ldpgen", epsilon=2.0 * eps, phase_share=0.5)
    groups = np.array([0] * 7 + [1] * 3 + [2] * 2, dtype=np.int64)
    msg = {MSG_K: LDPGEN_K, MSG_GROUPS: encode_groups(groups)}
    views = [
        NodeView(0, np.arange(1, 1 + d, dtype=np.int64), np.zeros(1), LDPGEN_N) for d in DEGREES
    ]
    a, b = DEGREES
    span = max(5, math.ceil(12.0 / eps))

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        seeds = rng.integers(0, 2**62, size=n).tolist()
        out = np.empty((n, LDPGEN_K), dtype=np.int64)
        for i, seed in enumerate(seeds):
            out[i] = proto.client_step(1, views[which], msg, seed).features
        return out[:, 0]

    return Trial(
        draw,
        numeric_events(a - span, b + span, name="δ₀"),
        discrete_laplace_part("degree-vector-1", "one adjacency bit", eps)["epsilon"],
        (f"{a} neighbours in group 0", f"{b} neighbours in group 0"),
        f"adjacency bit (LDPGen round-1 vector, k = {LDPGEN_K})",
    )


def register_all() -> None:
    """Add the node rows to the audit's registry (:mod:`.audit_rows` calls it once)."""
    from .audit_registry import Auditable, register

    rows = [
        ("degree-node", "the scalar sampler a node calls (DiscreteLaplace.perturb)", _degree_node,
         None, NODE_SCALE),
        ("degree-batch", "noisy degrees of the batched client step (rr_onebit_batch)",
         _degree_batch, None, NODE_SCALE),
        ("ldpgen-vector", "LDPGen's round-1 client_step: the noisy group-degree vector",
         _ldpgen_vector, None, NODE_SCALE),
        ("rr-rate", "RR flip rates over many bits of perturb_row (power at ε = 8)", _rr_rate,
         audit_rates, RATE_SCALE),
        ("arr-rate", "asymmetric RR rates over many bits of perturb_row", _arr_rate,
         audit_rates, RATE_SCALE),
        ("onebit-rate", "1-bit feature rates over many bits of OneBit.perturb", _onebit_rate,
         audit_rates, RATE_SCALE),
        ("rr-batch-rate", "RR rates of the batched client step's rows (rr_onebit_batch)",
         _rr_batch_rate, audit_rates, BATCH_RATE_SCALE),
    ]  # fmt: skip
    for name, description, build, run, scale in rows:
        register(Auditable(name, description, build, run=run, scale=scale))
