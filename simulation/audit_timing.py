"""The timing rows of ``ldpgraph audit``: does the time a node takes to answer tell its input?

A server sees each node's reply and the time it took. The mechanism claims ε for the reply; the
pair (reply, time) must not say more. The row measures it the way the timing attack on the old
discrete Laplace sampler did (Jin, McMurtry, Rubinstein & Ohrimenko, IEEE S&P 2022, §IV): the
wall-clock time of one call of the node's own code (``perf_counter_ns`` around it) on two
neighbouring inputs (degree 4 vs 5), many times each, and a Clopper–Pearson lower bound on ε
over events of the joint (output statistic, time). Built to be robust on a shared machine:

* the two inputs are measured interleaved, in pairs, in a random order within each pair, so a
  load change on the machine hits both alike (drift cannot separate them);
* the garbage collector is paused while measuring, and a warm-up precedes the draws;
* the events are {s = k}, {s ≤ k}, {s ≥ k} for output values k, each alone and intersected
  with {T ≤ τ} and {T > τ} for time thresholds τ at fixed quantiles of the pooled times of the
  first half; the event is chosen on the first half of the pairs and its bound estimated on the
  second half (as every audit row: a valid (1 − α) lower bound whatever was chosen). No
  threshold is tuned on the estimation draws, so noise on the machine can only make the bound
  looser, never a false FAIL beyond α.

A row passes when ε_lb ≤ claim + :data:`TIMING_TOLERANCE`: the time may add no more than that
to what the output alone gives (the sampler's own timing δ, ≤ 2^−63·(1 + e^ε) per draw, is far
below what any number of draws can see).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The time may add this much to the claim (in ε) before the row fails.
TIMING_TOLERANCE = 0.1
#: Time thresholds: these quantiles of the pooled times of the selection half.
QUANTILES = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)
#: Output values considered: the most frequent ones in the selection half.
MAX_VALUES = 9
#: Calls made and thrown away before measuring.
WARMUP = 2000
#: The run's --draws is scaled by this for a timing row (10^6 → 1.5·10^5 per input).
TIMING_SCALE = 0.15


@dataclass(frozen=True)
class TimedTrial:
    """``call(which, rng)`` runs the node's code once on input ``which`` ∈ {0, 1} and returns
    its output; ``stat`` maps an output to an integer the events look at."""

    call: Callable[[int, np.random.Generator], Any]
    stat: Callable[[Any], int]
    claimed_epsilon: float
    inputs: tuple[str, str]
    unit: str


def measure(
    trial: TimedTrial,
    pairs: int,
    rng: np.random.Generator,
    tick: Callable[[int], None],
    clock: Callable[[], int] = time.perf_counter_ns,
) -> tuple[np.ndarray, np.ndarray]:
    """(stats [pairs, 2], times in ns [pairs, 2]), column = input, interleaved in pairs.
    ``clock`` is the wall clock; the audit's own tests pass a clock of counted work instead
    (see :class:`CountingGenerator`), which no load on the machine can blur."""
    call, stat = trial.call, trial.stat
    order = rng.integers(0, 2, size=pairs)
    stats = np.empty((pairs, 2), dtype=np.int64)
    times = np.empty((pairs, 2), dtype=np.int64)
    for i in range(WARMUP):
        call(i & 1, rng)
    enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(pairs):
            first = int(order[i])
            for which in (first, 1 - first):
                t0 = clock()
                out = call(which, rng)
                t1 = clock()
                times[i, which] = t1 - t0
                stats[i, which] = stat(out)
            if i % 4096 == 4095:
                tick(2 * 4096)
                if enabled:
                    gc.collect(0)
    finally:
        if enabled:
            gc.enable()
    return stats, times


def _events(stats: np.ndarray, times: np.ndarray) -> tuple[list[str], list[Callable]]:
    """The event family, fixed from the selection half: output sets × time sides."""
    values, counts = np.unique(stats, return_counts=True)
    top = np.sort(values[np.argsort(-counts, kind="stable")[:MAX_VALUES]])
    taus = np.unique(np.quantile(times.ravel(), QUANTILES).astype(np.int64))
    outs: list[tuple[str, Callable]] = [("any s", lambda s: np.ones(s.shape, dtype=bool))]
    for k in top.tolist():
        outs += [
            (f"s = {k}", lambda s, k=k: s == k),
            (f"s ≤ {k}", lambda s, k=k: s <= k),
            (f"s ≥ {k}", lambda s, k=k: s >= k),
        ]
    sides: list[tuple[str, Callable]] = [("", lambda t: np.ones(t.shape, dtype=bool))]
    for tau in taus.tolist():
        sides += [
            (f", T ≤ {tau / 1000:.2f} µs", lambda t, tau=tau: t <= tau),
            (f", T > {tau / 1000:.2f} µs", lambda t, tau=tau: t > tau),
        ]
    labels, tests = [], []
    for name, f in outs:
        for side, g in sides:
            if name == "any s" and not side:
                continue
            labels.append(name + side)
            tests.append(lambda s, t, f=f, g=g: f(s) & g(t))
    return labels, tests


def audit_timed(
    trial: TimedTrial,
    pairs: int,
    rng,
    alpha: float,
    tick,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> dict[str, Any]:
    """Measure ``pairs`` interleaved pairs; choose the event on the first half, bound ε on
    the second. Returns the row's fields (see :class:`~ldpgraph.simulation.audit.AuditRow`)."""
    from .audit_stats import epsilon_lower_bound, point_estimate

    if pairs < 200:
        raise ValueError(f"a timing row needs >= 200 draws per input, got {pairs}")
    stats, times = measure(trial, pairs, rng, tick, clock)
    half = pairs // 2
    sel_s, sel_t, est_s, est_t = stats[:half], times[:half], stats[half:], times[half:]
    labels, tests = _events(sel_s, sel_t)
    n_sel, n_est = half, pairs - half
    best = (-math.inf, 0, 0)
    for i, test in enumerate(tests):
        hits = test(sel_s, sel_t).sum(axis=0)
        for d in (0, 1):
            bound = epsilon_lower_bound(int(hits[d]), n_sel, int(hits[1 - d]), n_sel, alpha)
            if bound > best[0]:
                best = (bound, i, d)
    _, i, d = best
    hits = tests[i](est_s, est_t).sum(axis=0)
    k0, k1 = int(hits[d]), int(hits[1 - d])
    lb = max(0.0, epsilon_lower_bound(k0, n_est, k1, n_est, alpha))
    return {
        "epsilon_lower_bound": lb,
        "epsilon_estimate": point_estimate(k0, n_est, k1, n_est),
        "event": f"{labels[i]}: {trial.inputs[d]} over {trial.inputs[1 - d]}",
        "passed": bool(lb <= trial.claimed_epsilon + TIMING_TOLERANCE),
        "counts": {
            "selected_on": n_sel,
            "estimated_on": n_est,
            "hits_num": k0,
            "hits_den": k1,
            "median_time_ns": int(np.median(times)),
        },
    }


class CountingGenerator:
    """A ``numpy.random.Generator`` that counts the calls made on it; :meth:`clock` reads
    the count as a time (one call = 1 µs). A timing row measured on that clock sees a
    mechanism's work exactly, with none of the machine's noise: how the audit's own tests
    show, deterministically, that the row catches work that grows with the noise."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._rng, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return attr(*args, **kwargs)

        return counted

    def clock(self) -> int:
        """The calls so far, in "ns" (1000 per call)."""
        return 1000 * self.calls


# --------------------------------------------------------------------------- the node's code


#: The neighbouring degrees timed (as the attack did).
TIMED_DEGREES = (4, 5)


def degree_trial(eps: float, mech: Any = None) -> TimedTrial:
    """One node's noisy degree, as Blink's ``client_step`` and ``noisy_degree`` draw it:
    ``DiscreteLaplace(ε).perturb(degree, rng)``; ``mech`` swaps in a planted variant."""
    from ldpgraph.protocols.laplace import DiscreteLaplace, discrete_laplace_part

    mech = DiscreteLaplace(eps) if mech is None else mech
    degrees = TIMED_DEGREES

    def call(which: int, rng: np.random.Generator) -> int:
        return mech.perturb(degrees[which], rng)

    return TimedTrial(
        call,
        int,
        discrete_laplace_part("degree", "one adjacency bit", eps)["epsilon"],
        (f"degree {degrees[0]}", f"degree {degrees[1]}"),
        "adjacency bit (degree), output and time",
    )


#: The timed adjacency row: its length and its 1-bits in the two neighbouring rows (a node of
#: a 256-node graph with 8 or 9 neighbours; column 0 is the node itself).
TIMED_ROW_LENGTH = 256
TIMED_ROWS = (tuple(range(10, 90, 10)), tuple(range(10, 100, 10)))


def rr_trial(eps: float, deployed: bool = True) -> TimedTrial:
    """One node's RR row, as ``noisy_row`` draws it: ``RandomizedResponse.perturb_row``, inside
    :func:`~ldpgraph.protocols.mechanisms.constant_work` as a deployed node's client step runs
    it; the statistic is the differing bit and the number of reported 1s (both public).
    ``deployed=False`` times the simulation's sparse path instead (below DENSE_FLIP its work
    grows with the degree and with the flips): the planted variant the row must fail at
    ε = 8."""
    from ldpgraph.protocols.accounting import bit_part
    from ldpgraph.protocols.mechanisms import RandomizedResponse, constant_work

    mech = RandomizedResponse(eps)
    rows = tuple(np.asarray(r, dtype=np.int64) for r in TIMED_ROWS)
    extra = TIMED_ROWS[1][-1]

    def call(which: int, rng: np.random.Generator) -> np.ndarray:
        with constant_work(deployed):
            return mech.perturb_row(rows[which], TIMED_ROW_LENGTH, rng, exclude=0)

    def stat(out: np.ndarray) -> int:
        return 2 * min(int(out.shape[0]), 40) + int(np.any(out == extra))

    return TimedTrial(
        call,
        stat,
        bit_part("adjacency", "one adjacency bit", eps)["epsilon"],
        (f"{len(TIMED_ROWS[0])} neighbours", f"{len(TIMED_ROWS[1])} neighbours"),
        "adjacency bit (RR row), output and time",
    )


def register_all() -> None:
    """Add the timing rows to the audit's registry (:mod:`.audit_rows` calls it once)."""
    from .audit_registry import Auditable, register

    register(
        Auditable(
            "timing",
            "output and wall-clock time of a node's noisy degree (DiscreteLaplace.perturb)",
            degree_trial,
            run=audit_timed,
            scale=TIMING_SCALE,
        )
    )
    register(
        Auditable(
            "timing-rr",
            "output and wall-clock time of a deployed node's RR row (perturb_row, constant work)",
            rr_trial,
            run=audit_timed,
            scale=TIMING_SCALE,
        )
    )
