"""The client mechanisms' audit rows, as a node runs them: RR and asymmetric RR on an adjacency
row, the 1-bit and multi-bit feature mechanisms, the discrete Laplace noisy degree.

Each row draws from the node's own sampler (vectorised where the node's code is, with a checked
twin where it is not) and claims the ε the privacy report states for it. Importing this module
registers the rows in :data:`~.audit_registry.AUDITS`, in the order ``ldpgraph audit`` runs
them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .audit_events import EventFamily, numeric_events, row_events
from .audit_registry import Auditable, Trial, register

#: The audited adjacency row: 8 bits; ``RR_ROWS[0]`` and ``RR_ROWS[1]`` are the positions of
#: its 1-bits in the two neighbouring rows (they differ in bit 4 only). Few 1-bits on purpose:
#: ``perturb_row`` with ``exclude`` pays ~1 µs per 1-bit in ``np.union1d`` (numpy 2.4's hash
#: unique), so a row with one more 1-bit per block makes the rr rows ~3× slower (3 s → 10 s).
RR_ROW_LENGTH = 8
RR_ROWS: tuple[tuple[int, ...], tuple[int, ...]] = ((), (4,))


def rr_row_draw(mech: Any, which: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n independent reports of the 8-bit row ``RR_ROWS[which]`` by the node's own sparse
    sampler :meth:`RandomizedResponse.perturb_row`, as 8-bit codes (bit i: column i reported).

    One call does them all: the row handed to ``perturb_row`` is the node's own (excluded)
    column 0 followed by n blocks of 8 columns, each holding the audited row, as a node of a
    graph with 1 + 8n nodes would send it. ``perturb_row`` claims the law of independent
    flipping of every bit, under which the blocks are n independent reports of the 8-bit row
    (a sampler that broke that claim, e.g. correlated blocks, is a bug the audit may report
    as a FAIL too). One call per report would cost ~30 µs each (minutes for the audit).
    """
    block = np.asarray(RR_ROWS[which], dtype=np.int64)
    ones = (1 + RR_ROW_LENGTH * np.arange(n, dtype=np.int64)[:, None] + block).ravel()
    out = mech.perturb_row(ones, 1 + RR_ROW_LENGTH * n, rng, exclude=0).astype(np.int64)
    if out.size and out[0] == 0:
        raise RuntimeError("perturb_row reported the node's own (excluded) column")
    col = out - 1
    codes = np.bincount(
        col // RR_ROW_LENGTH, weights=np.left_shift(1, col % RR_ROW_LENGTH), minlength=n
    )
    return codes.astype(np.int64)


def _rr(eps: float) -> Trial:
    from ldpgraph.protocols.accounting import bit_part
    from ldpgraph.protocols.mechanisms import RandomizedResponse

    mech = RandomizedResponse(eps)
    unit = "one adjacency bit (edge LDP)"

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return rr_row_draw(mech, which, n, rng)

    def row(which: int) -> str:
        return "".join("1" if i in RR_ROWS[which] else "0" for i in range(RR_ROW_LENGTH))

    return Trial(
        draw,
        row_events(RR_ROW_LENGTH),
        bit_part("adjacency", unit, eps)["epsilon"],
        (f"row {row(0)}", f"row {row(1)}"),
        f"adjacency row ({RR_ROW_LENGTH} bits, one differs)",
    )


#: The keep probability the ``arr`` row is audited at: the claim (ε of RR, whatever μ) must
#: hold at any μ; at 0.25 three reported 1s in four are dropped, and "bit 4 reported" still
#: has the ratio e^ε, so the audit keeps its power.
ARR_AUDIT_MU = 0.25


def _arr(eps: float) -> Trial:
    from ldpgraph.protocols.accounting import bit_part
    from ldpgraph.protocols.mechanisms import AsymmetricRR

    mech = AsymmetricRR(eps, ARR_AUDIT_MU)
    trial = _rr(eps)

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return rr_row_draw(mech, which, n, rng)

    return Trial(
        draw,
        trial.events,
        bit_part("adjacency", "one adjacency bit (edge LDP)", eps)["epsilon"],
        trial.inputs,
        f"{trial.unit}, each reported 1 kept with μ = {ARR_AUDIT_MU:g}",
    )


def _onebit(eps: float) -> Trial:
    from ldpgraph.protocols.accounting import bit_part
    from ldpgraph.protocols.mechanisms import OneBit

    mech = OneBit(eps, domain=(0.0, 1.0))
    unit = "one feature bit"

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return mech.perturb(np.full(n, float(which)), rng)

    return Trial(
        draw,
        numeric_events(0, 1),
        bit_part("features", unit, eps)["epsilon"],
        ("x = 0", "x = 1"),
        "feature bit",
    )


#: Feature dimension of the multi-bit audits (small: the audited coordinate is often sampled).
MULTIBIT_D = 4
#: Rows checked bit for bit against MultiBit.perturb_many in every chunk.
MULTIBIT_CHECK_ROWS = 128


def multibit_draw(mech: Any, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``MultiBit.perturb_many(x, rng)`` vectorised over rows: the same draws in the same order
    (per row d uniforms choose the subset, then m uniforms the bits), so bit-identical output.

    The node's own code loops in Python (~25 µs a row); 10^6 audit rows need this twin. Its
    first rows are checked against the node's code on a copy of the generator every call.
    """
    x = np.asarray(x, dtype=np.float64)
    r, d = x.shape
    m = mech.sampled(d)
    check = min(r, MULTIBIT_CHECK_ROWS)
    twin = np.random.Generator(type(rng.bit_generator)())
    twin.bit_generator.state = rng.bit_generator.state
    expected = mech.perturb_many(x[:check], twin)

    prob = mech.probability(x)
    u = rng.random((r, d + m))
    chosen = np.argsort(u[:, :d], axis=1, kind="stable")[:, :m]
    t = u[:, d:] < np.take_along_axis(prob, chosen, axis=1)
    out = np.zeros((r, d), dtype=np.float32)
    np.put_along_axis(out, chosen, np.where(t, 1.0, -1.0).astype(np.float32), axis=1)
    if not np.array_equal(out[:check], expected):
        raise RuntimeError("the vectorised multi-bit twin no longer matches MultiBit.perturb_many")
    return out


def _multibit_part(eps: float) -> tuple[Any, dict[str, Any]]:
    from ldpgraph.protocols.multibit import MultiBit, multibit_privacy_part

    mech = MultiBit(eps, domain=(0.0, 1.0))
    return mech, multibit_privacy_part(mech, MULTIBIT_D)


def _multibit(eps: float) -> Trial:
    mech, part = _multibit_part(eps)
    d = MULTIBIT_D

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        x = np.zeros((n, d))
        x[:, 0] = which
        return multibit_draw(mech, x, rng)[:, 0]

    return Trial(
        draw,
        numeric_events(-1, 1, name="x*₀"),
        part["epsilon"],
        ("(" + ",".join("0" * d) + ")", "(1" + ",0" * (d - 1) + ")"),
        f"feature vector (m = {mech.sampled(d)})",
    )


def _multibit_vector(eps: float) -> Trial:
    mech, part = _multibit_part(eps)
    d = MULTIBIT_D

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return (multibit_draw(mech, np.full((n, d), float(which)), rng) > 0).sum(axis=1)

    return Trial(
        draw,
        numeric_events(0, d, name="#(+1)"),
        part["epsilon"],
        ("(" + ",".join("0" * d) + ")", "(" + ",".join("1" * d) + ")"),
        f"feature vector (m = {mech.sampled(d)})",
    )


#: The neighbouring degrees of the degree audit (one adjacency bit changes the degree by 1).
DEGREES = (4, 5)


def degree_events(eps: float) -> EventFamily:
    """The degree audit's events at ε: points and thresholds around :data:`DEGREES`, and
    whether the output is reachable from each degree by any float noise and by numpy's
    Laplace sampler at scale 1/ε (what a float Laplace on the degree would use). Under an
    ε-DP mechanism these fixed events, like any, have likelihood ratio ≤ e^ε (on the integer
    outputs of the discrete Laplace they are sets of integers); a float Laplace fails on
    them at every ε."""
    a, b = DEGREES
    span = max(5, math.ceil(12.0 / eps))
    return numeric_events(a - span, b + span, reachable_from=DEGREES, laplace_scale=1.0 / eps)


def _discrete_laplace(eps: float) -> Trial:
    from ldpgraph.protocols.laplace import DiscreteLaplace, discrete_laplace_part

    mech = DiscreteLaplace(eps, sensitivity=1)
    unit = "one adjacency bit (the noisy degree)"
    a, b = DEGREES

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return mech.perturb_many(np.full(n, DEGREES[which], dtype=np.int64), rng)

    return Trial(
        draw,
        degree_events(eps),
        discrete_laplace_part("degree", unit, eps)["epsilon"],
        (f"degree {a}", f"degree {b}"),
        "adjacency bit (degree)",
    )


register(
    Auditable("rr", "randomized response on an adjacency row (perturb_row, as nodes run it)", _rr)
)
register(
    Auditable(
        "arr",
        "asymmetric RR (hogs-arr): RR on an adjacency row, then each reported 1 kept with "
        "probability μ (AsymmetricRR.perturb_row, as nodes run it)",
        _arr,
    )
)
register(Auditable("onebit", "the 1-bit feature mechanism at the domain ends", _onebit))
register(Auditable("multibit", "LPGNN multi-bit: vectors differing in one coordinate", _multibit))
register(
    Auditable(
        "multibit-vector",
        "LPGNN multi-bit: all-0 vs all-1 vector (the m-fold composition)",
        _multibit_vector,
    )
)
register(
    Auditable(
        "discrete-laplace",
        "the noisy degree of Blink and LDPGen (DiscreteLaplace)",
        _discrete_laplace,
    )
)
