"""Empirical privacy audits of the client mechanisms: Clopper–Pearson lower bounds on ε.

A mechanism M claims ε-LDP: for neighbouring inputs x₀, x₁ and every output event E,
P[M(x₀) ∈ E] ≤ e^ε · P[M(x₁) ∈ E]. The audit runs M many times on x₀ and on x₁, counts how
often each event of a fixed family fires, and turns the counts into a one-sided confidence
bound ε_lb = ln(p₀_lower / p₁_upper) (Clopper–Pearson, α/2 for each of the two bounds). The
event is chosen on the first half of the draws and estimated on the second half, so the bound
is a valid (1 − α) lower bound on the mechanism's true ε whatever event was chosen. A lower
bound can never prove that a mechanism is private; it can only catch one that spends more than
it claims (a wrong flip probability, a floating-point Laplace that leaks through the float
grid: outputs that numpy's Laplace sampler can produce from x₀ but not from x₁). One row per
(mechanism, ε); the α of a run is split evenly over its rows (Bonferroni), so the whole table
holds at confidence 1 − α and a FAIL is a finding, not a coin toss.

The registry :data:`AUDITS` names the auditable mechanisms as a node runs them; a test may add
a planted one. Every draw comes from a generator derived from (seed, mechanism, ε), so a row
does not depend on which other rows are run.

This module runs the rows and prints the table; the parts live beside it: the bounds in
:mod:`.audit_stats`, the event families in :mod:`.audit_events`, the registry in
:mod:`.audit_registry`, the client mechanisms' rows in :mod:`.audit_client` (and the node's
code paths and reply times in :mod:`.audit_rows`). Their public names are importable from here.
"""

from __future__ import annotations

import math
import sys
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .audit_client import (
    ARR_AUDIT_MU,
    DEGREES,
    MULTIBIT_CHECK_ROWS,
    MULTIBIT_D,
    RR_ROW_LENGTH,
    RR_ROWS,
    degree_events,
    multibit_draw,
    rr_row_draw,
)
from .audit_events import (
    LAPLACE_BRACKET,
    EventFamily,
    numeric_events,
    numpy_laplace_output,
    row_events,
    unreachable,
    unreachable_laplace,
)
from .audit_registry import AUDITS, Auditable, Trial, register
from .audit_stats import cp_lower, cp_upper, epsilon_lower_bound, point_estimate

#: The ε values a claim is checked at unless the caller names others (the HoGS paper's range).
DEFAULT_EPSILONS: tuple[float, ...] = (1.0, 4.0, 8.0)
#: Draws per input (half select the event, half estimate it).
DEFAULT_DRAWS = 1_000_000
DEFAULT_ALPHA = 0.05
#: ε_lb may exceed the claim by this much and still pass (floating-point noise in ln).
TOLERANCE = 1e-9
#: Draws are made and counted in chunks of this size (memory, progress).
CHUNK = 1 << 18


@dataclass
class AuditRow:
    """One (mechanism, ε) result."""

    mechanism: str
    epsilon: float
    inputs: str
    unit: str
    claimed_epsilon: float
    epsilon_lower_bound: float
    epsilon_estimate: float
    event: str
    draws: int
    alpha_row: float  # this row's share of the run's α (Bonferroni over the rows)
    passed: bool
    counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("epsilon_lower_bound", "epsilon_estimate"):
            if math.isinf(d[key]):
                d[key] = "inf" if d[key] > 0 else "-inf"
        return d


def _rng(seed: int, name: str, eps: float) -> np.random.Generator:
    key = [zlib.crc32(name.encode()), zlib.crc32(repr(float(eps)).encode())]
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=key))


def _count_half(
    trial: Trial, which: int, n: int, rng: np.random.Generator, tick: Callable[[int], None]
) -> np.ndarray:
    total = np.zeros(len(trial.events.labels), dtype=np.int64)
    done = 0
    while done < n:
        size = min(CHUNK, n - done)
        total += trial.events.count(trial.draw(which, size, rng))
        done += size
        tick(size)
    return total


def _choose_event(trial: Trial, sel: list[np.ndarray], n_sel: int, alpha: float) -> tuple[int, int]:
    """The event (index) and direction (which input is the numerator) with the highest lower
    bound on the selection half; among events with none, the highest point estimate."""
    best: tuple[float, int, int] = (-math.inf, 0, 0)  # (selection bound, event, direction)
    best_hat = -math.inf
    for i in range(len(trial.events.labels)):
        for direction in (0, 1):
            k0, k1 = sel[direction][i], sel[1 - direction][i]
            bound = epsilon_lower_bound(int(k0), n_sel, int(k1), n_sel, alpha)
            hat = point_estimate(int(k0), n_sel, int(k1), n_sel)
            if bound > best[0] or (bound == best[0] == -math.inf and hat > best_hat):
                best, best_hat = (bound, i, direction), hat
    return best[1], best[2]


def _own_row(
    audit: Auditable,
    trial: Any,
    eps: float,
    draws: int,
    rng: np.random.Generator,
    alpha: float,
    tick: Callable[[int], None],
) -> AuditRow:
    """A row with its own statistic (``audit.run``: the timing and rate rows)."""
    n = audit.draws(draws)
    got = audit.run(trial, n, rng, alpha, tick)
    return AuditRow(
        mechanism=audit.name,
        epsilon=float(eps),
        inputs=f"{trial.inputs[0]} vs {trial.inputs[1]}",
        unit=trial.unit,
        claimed_epsilon=float(trial.claimed_epsilon),
        draws=int(n),
        alpha_row=float(alpha),
        **got,
    )


def audit_one(
    audit: Auditable,
    eps: float,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    alpha: float = DEFAULT_ALPHA,
    tick: Callable[[int], None] = lambda n: None,
) -> AuditRow:
    """Audit one mechanism at one ε: ``draws`` runs on each input, the event chosen on the first
    half (highest lower bound there, either direction), ε_lb from the second half at 1 − α."""
    if draws < 4:
        raise ValueError(f"draws must be >= 4, got {draws}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    trial = audit.build(float(eps))
    rng = _rng(seed, audit.name, eps)
    if audit.run is not None:
        return _own_row(audit, trial, eps, draws, rng, alpha, tick)
    draws = audit.draws(draws)
    n_sel = draws // 2
    n_est = draws - n_sel
    sel = [_count_half(trial, w, n_sel, rng, tick) for w in (0, 1)]
    est = [_count_half(trial, w, n_est, rng, tick) for w in (0, 1)]
    i, direction = _choose_event(trial, sel, n_sel, alpha)
    k0, k1 = int(est[direction][i]), int(est[1 - direction][i])
    lb = max(0.0, epsilon_lower_bound(k0, n_est, k1, n_est, alpha))
    first, second = trial.inputs[direction], trial.inputs[1 - direction]
    label = trial.events.labels[i]
    return AuditRow(
        mechanism=audit.name,
        epsilon=float(eps),
        inputs=f"{trial.inputs[0]} vs {trial.inputs[1]}",
        unit=trial.unit,
        claimed_epsilon=float(trial.claimed_epsilon),
        epsilon_lower_bound=lb,
        epsilon_estimate=point_estimate(k0, n_est, k1, n_est),
        event=f"{label}: {first} over {second}",
        draws=int(draws),
        alpha_row=float(alpha),
        passed=bool(lb <= trial.claimed_epsilon + TOLERANCE),
        counts={"selected_on": n_sel, "estimated_on": n_est, "hits_num": k0, "hits_den": k1},
    )


def _progress_bar(jobs: list[tuple[Auditable, float]], draws: int) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=sum(2 * a.draws(draws) for a, _ in jobs),
        unit="draw",
        unit_scale=True,
        file=sys.stderr,
        desc="audit",
        smoothing=0.1,
    )


def run_audit(
    names: Iterable[str] | None = None,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    alpha: float = DEFAULT_ALPHA,
    progress: bool = False,
) -> list[AuditRow]:
    """Audit the named mechanisms (all registered ones when None) at every ε.

    α is split evenly over the rows, so all rows hold together at confidence 1 − α.
    """
    names = list(AUDITS) if names is None else list(names)
    unknown = [n for n in names if n not in AUDITS]
    if unknown:
        raise ValueError(f"unknown mechanism(s) {unknown}; known: {', '.join(AUDITS)}")
    if not names or not epsilons:
        raise ValueError("nothing to audit: no mechanism or no ε")
    jobs = [(AUDITS[n], float(e)) for n in names for e in epsilons]
    row_alpha = alpha / len(jobs)
    bar = _progress_bar(jobs, draws) if progress else None
    rows: list[AuditRow] = []
    try:
        for audit, eps in jobs:
            if bar is not None:
                bar.set_postfix_str(f"{audit.name} ε={eps:g}")
            tick = bar.update if bar is not None else (lambda n: None)
            rows.append(audit_one(audit, eps, draws, seed, row_alpha, tick))
    finally:
        if bar is not None:
            bar.close()
    return rows


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) and x > 0 else f"{x:.3f}"


COLUMNS = (
    "mechanism",
    "neighbouring inputs",
    "unit",
    "ε",
    "claimed ε",
    "ε lower bound",
    "ε̂",
    "event (chosen on the first half)",
    "draws",
    "result",
)


def table_cells(row: AuditRow) -> list[str]:
    """One row of the table as text cells, in :data:`COLUMNS` order."""
    return [
        row.mechanism,
        row.inputs,
        row.unit,
        f"{row.epsilon:g}",
        f"{row.claimed_epsilon:.4f}",
        _fmt(row.epsilon_lower_bound),
        _fmt(row.epsilon_estimate),
        row.event,
        f"{row.draws:,}",
        "PASS" if row.passed else "FAIL",
    ]


def format_table(rows: Sequence[AuditRow]) -> str:
    """The audit as an aligned text table, one row per (mechanism, ε)."""
    cells = [list(COLUMNS)] + [table_cells(r) for r in rows]
    widths = [max(len(c[j]) for c in cells) for j in range(len(COLUMNS))]
    numeric = {3, 4, 5, 6, 8}
    lines = []
    for k, c in enumerate(cells):
        parts = [
            c[j].rjust(widths[j]) if j in numeric and k else c[j].ljust(widths[j])
            for j in range(len(c))
        ]
        lines.append("  ".join(parts).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


__all__ = [
    "ARR_AUDIT_MU",
    "AUDITS",
    "CHUNK",
    "COLUMNS",
    "DEFAULT_ALPHA",
    "DEFAULT_DRAWS",
    "DEFAULT_EPSILONS",
    "DEGREES",
    "LAPLACE_BRACKET",
    "MULTIBIT_CHECK_ROWS",
    "MULTIBIT_D",
    "RR_ROWS",
    "RR_ROW_LENGTH",
    "TOLERANCE",
    "AuditRow",
    "Auditable",
    "EventFamily",
    "Trial",
    "audit_one",
    "cp_lower",
    "cp_upper",
    "degree_events",
    "epsilon_lower_bound",
    "format_table",
    "multibit_draw",
    "numeric_events",
    "numpy_laplace_output",
    "point_estimate",
    "register",
    "row_events",
    "rr_row_draw",
    "run_audit",
    "table_cells",
    "unreachable",
    "unreachable_laplace",
]
