"""Empirical audit of the central-DP strategies: the real mechanism, neighbouring datasets, a
Clopper–Pearson lower bound on ε, and a planted under-statement that shows the test's power.

A central strategy claims (ε, δ)-DP for its unit (an edge or a node, ``privacy_report().unit``):
for neighbouring uploaded graphs D₀, D₁ and every event E of the release,
P[M(D₁) ∈ E] ≤ e^ε · P[M(D₀) ∈ E] + δ, and the same with D₀ and D₁ swapped. A row of this
audit builds one such pair at a tiny size (:mod:`.audit_central_cases`), runs the strategy as
the harness runs it (``make_protocol(name, **params).release(graph, curator, seed)``) ``draws``
times on each, every run with a fresh seed from OS entropy (``secrets.randbits``: nothing in a
run's noise can be replayed or correlated with another run), reduces each release to one number
tied to the difference (the differing edge's membership, the prediction of a probe node), and
turns the counts of a threshold event on it into ε_lb = ln((p₁_lower − δ) / p₀_upper)
(Clopper–Pearson, the row's α split over the two bounds and over the events tried). A binary
statistic tries its events on all draws (Bonferroni over them); a real-valued one chooses its
threshold on the first half of the draws and estimates on the second, so ε_lb is a valid
(1 − α) lower bound on the mechanism's true ε whatever was chosen.

**Verdicts.** The claim is the headline ε (and δ) of the releases themselves (the largest over
the runs, where it depends on the data). A row

* FAILs when ε_lb exceeds the claim: the mechanism spends more than it says, at confidence
  1 − α;
* PASSes only when it could have failed: the same statistic, draws and neighbouring pair on the
  row's **planted** variant — the same strategy run with far less noise (a much larger ε, or no
  noise) while the claim stays the honest one — gives ε_lb above the claim (the planted row
  FAILs);
* is INCONCLUSIVE ("too little power") when the planted variant does not fail, or when no
  statistic at this many draws could certify the claim at all (``ceiling``: ε_lb of a perfect
  separation, ln((1 − δ)-ish / (α-quantile of 0 hits)) ≤ claim); then nothing was shown either way;
* says NO CLAIM for a headline ε = ∞ (nothing is under-stated; nothing is certified) and N/A for
  a strategy with no ε (PPGSL's unit is empirical), with the reason.

A PASS never proves privacy; it says that a test strong enough to catch this under-statement
found none. α is split evenly over the rows run (Bonferroni), so the table holds at 1 − α.
"""

from __future__ import annotations

import copy
import logging
import math
import secrets
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .audit import TOLERANCE
from .audit_central_stats import best_bound, ceiling
from .audit_central_types import (
    FAIL,
    INCONCLUSIVE,
    NO_CLAIM,
    NOT_APPLICABLE,
    PASS,
    CentralCase,
    CentralRow,
    World,
)

DEFAULT_ALPHA = 0.05
#: ``<name>-planted`` names a row's planted variant as a row of its own (it must FAIL).
PLANTED_SUFFIX = "-planted"


# --------------------------------------------------------------------------- cases


def planted_row(case: CentralCase) -> CentralCase:
    """``case``'s planted variant as a row of its own (``<name>-planted``): it runs the
    planted strategy and claims the honest headline, so it must FAIL."""
    if case.skip or case.claim_only:
        raise ValueError(f"{case.name} is not audited, so it has no planted row")
    return replace(
        case,
        name=f"{case.name}{PLANTED_SUFFIX}",
        protocol=case.planted_protocol or case.protocol,
        params=case.planted,
        planted_protocol=case.planted_protocol,
        claims_as=(case.protocol, case.params),
    )


def fresh_seed() -> int:
    """A seed from OS entropy: no run of the audit can be replayed or predicted from another."""
    return secrets.randbits(63)


def memoise_report(protocol: Any, cached: dict[Any, Any] | None = None) -> Any:
    """``protocol`` with ``privacy_report`` computed once per distinct argument list: every
    central strategy's report is a function of its parameters and those arguments alone
    (EdgeRand's and LapGraph's call dp-accounting's PLD, up to seconds at a large ε; DPAR's
    paper figure inverts a bisection over dp-accounting's analytic Gaussian, about a second
    per release at ε = 100), and the audit's draws on one world repeat the same arguments
    (DPAR's ``noise`` and ``plan`` are frozen dataclasses). Unhashable arguments are computed
    every time. ``cached``: the reports of another instance of the same strategy and
    parameters (:func:`audit_protocol`). The release itself is untouched."""
    compute = protocol.privacy_report
    cached = {} if cached is None else cached

    def report(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        try:
            hit = cached.get(key)
        except TypeError:  # an unhashable argument: nothing to key on
            return compute(*args, **kwargs)
        if hit is None:
            hit = cached[key] = compute(*args, **kwargs)
        return copy.deepcopy(hit)

    protocol.privacy_report = report
    return protocol


#: Reports by (class, strategy, parameters): every row of a process that builds the same
#: strategy reads one set (a planted variant's PLD at ε = 50 is computed once, not once per
#: row). The class is part of the key: a test that registers its own strategy under a used
#: name gets its own reports.
_REPORTS: dict[tuple[type, str, str], dict[Any, Any]] = {}


def audit_protocol(name: str, params: dict[str, Any]) -> Any:
    """``make_protocol(name, **params)`` with its reports memoised (:func:`memoise_report`)."""
    from ldpgraph.protocols.registry import make_protocol

    protocol = make_protocol(name, **params)
    key = (type(protocol), name, repr(sorted(params.items())))
    return memoise_report(protocol, _REPORTS.setdefault(key, {}))


#: Batches of draws by (protocol, parameters, worlds, statistic, draws): rows that run the same
#: mechanism on the same pair share one batch (:func:`audit_case`'s ``shared``).
Batches = dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray, list[Any]]]


def _sample(
    protocol: Any, worlds: tuple[World, World], statistic: Callable[[Any], float], draws: int,
    tick: Callable[[int], None],
) -> tuple[np.ndarray, np.ndarray, list[Any]]:  # fmt: skip
    """``draws`` releases on each world (alternating, so drift hits both alike): the statistic
    of each and every release's privacy report."""
    out = np.zeros((2, draws))
    reports = []
    for i in range(draws):
        for w in (0, 1):
            release = protocol.release(worlds[w].graph, worlds[w].curator, fresh_seed())
            out[w, i] = statistic(release)
            reports.append(release.privacy)
        tick(2)
    return out[0], out[1], reports


def _batch(
    name: str, params: dict[str, Any], case: CentralCase, worlds: tuple[World, World],
    draws: int, tick: Callable[[int], None], shared: Batches | None, protocol: Any = None,
) -> tuple[np.ndarray, np.ndarray, list[Any]]:  # fmt: skip
    """:func:`_sample` of the strategy ``name`` at ``params`` on the case's pair, taken from
    ``shared`` when a row before drew the same batch (and stored there otherwise).

    Why sharing is sound: every bound is computed from its own row's counts, so a batch read
    twice only makes two rows' errors dependent, which the Bonferroni split over rows allows.
    A planted row (:func:`planted_row`) samples exactly its honest row's planted batch, and
    its own power check the same batch again: with identical draws it can never PASS (its
    planted bound equals its honest one), so sharing cannot turn a verdict into a PASS."""
    key = (name, repr(sorted(params.items())), case.worlds, case.statistic, draws)
    if shared is not None and key in shared:
        tick(2 * draws)  # the bar counts releases the row stands on, drawn or shared
        return shared[key]
    if protocol is None:
        protocol = audit_protocol(name, params)
    out = _sample(protocol, worlds, case.statistic, draws, tick)
    if shared is not None:
        shared[key] = out
    return out


def _no_claim(row: CentralRow, report: Any) -> CentralRow:
    row.verdict = NO_CLAIM
    row.claimed_epsilon, row.claimed_delta = math.inf, float(report.delta)
    why = (report.notes or [report.headline])[0][:160]
    row.reason = f"headline ε = ∞: nothing is under-stated, nothing is certified ({why})"
    return row


def audit_case(
    case: CentralCase,
    alpha: float = DEFAULT_ALPHA,
    draws: int | None = None,
    tick: Callable[[int], None] = lambda n: None,
    shared: Batches | None = None,
) -> CentralRow:
    """Audit one case (module doc): claim, ceiling, honest bound, planted bound, verdict.
    ``shared`` (a dict kept across calls) lets rows that run the same strategy, parameters and
    pair read one batch of draws (:func:`_batch`): a row and its planted row then cost two
    batches instead of four."""
    import time

    start = time.perf_counter()
    draws = case.draws if draws is None else int(draws)
    if draws < 4 and not (case.skip or case.claim_only):
        raise ValueError(f"draws must be >= 4, got {draws}")
    protocol = audit_protocol(case.protocol, case.params)
    pre = protocol.privacy_report()
    row = CentralRow(
        case.name, case.protocol, pre.unit, case.neighbours, case.statistic_text, draws,
        float(pre.epsilon), float(pre.delta), float(alpha), NOT_APPLICABLE, "",
    )  # fmt: skip
    if case.skip:
        row.reason = case.skip
        return row
    worlds = case.worlds()
    first = _headline(case, protocol, pre, worlds)
    row.unit, row.claimed_epsilon, row.claimed_delta = first.unit, first.epsilon, first.delta
    row.seconds = time.perf_counter() - start
    unsampled = _unsampled(case, row, first, draws, alpha)
    if unsampled is not None:
        return unsampled
    s0, s1, reports = _batch(
        case.protocol, case.params, case, worlds, draws, tick, shared, protocol
    )
    if case.claims_as is not None:  # the planted releases' own reports are not the claim
        reports = []
    row.claimed_epsilon = max(float(r.epsilon) for r in reports + [first])
    row.claimed_delta = max(float(r.delta) for r in reports + [first])
    if math.isinf(row.claimed_epsilon):  # some release of the pair claims nothing
        return _no_claim(row, max(reports, key=lambda r: r.epsilon))
    _bounds(case, row, worlds, s0, s1, alpha, tick, shared)
    row.seconds = time.perf_counter() - start
    return row


def _headline(case: CentralCase, protocol: Any, pre: Any, worlds: Any) -> Any:
    """The privacy report the case is audited against: the headline as run on the second
    world (it may depend on the data), of the planted releases' honest twin with
    ``claims_as``; the protocol's own report when it claims nothing."""
    claimant = protocol
    if case.claims_as is not None:
        claimant = audit_protocol(*case.claims_as)
        pre = claimant.privacy_report()
    if math.isinf(pre.epsilon):
        return pre
    return claimant.release(worlds[1].graph, worlds[1].curator, fresh_seed()).privacy


def _unsampled(
    case: CentralCase, row: CentralRow, first: Any, draws: int, alpha: float
) -> CentralRow | None:
    """The row when it is decided without drawing (no claim, claim only, too little power
    at ``draws``); None when the case is to be sampled."""
    if math.isinf(first.epsilon):
        return _no_claim(row, first)
    if case.claim_only:
        row.verdict, row.draws = INCONCLUSIVE, 0
        row.reason = f"not audited (finite claim ε = {first.epsilon:.4g}): {case.claim_only}"
        return row
    row.ceiling = ceiling(draws, alpha / 4, first.delta)  # no statistic can certify more
    if row.ceiling <= first.epsilon:
        row.verdict = INCONCLUSIVE
        row.reason = (
            f"too little power: no test at {draws} draws can certify more than "
            f"{row.ceiling:.3f} ≤ claimed ε {first.epsilon:.4g} (not run)"
        )
        return row
    return None


def _bounds(
    case: CentralCase,
    row: CentralRow,
    worlds: Any,
    s0: np.ndarray,
    s1: np.ndarray,
    alpha: float,
    tick: Callable[[int], None],
    shared: Batches | None = None,
) -> None:
    """The honest release's bound from its statistics, then the planted variant's on as many
    draws (fresh, or ``shared`` with another row), and the verdict."""
    draws, eps, delta = row.draws, row.claimed_epsilon, row.claimed_delta
    binary = np.unique(np.concatenate([s0, s1])).size <= 2
    row.ceiling = (
        ceiling(draws, alpha / 4, delta) if binary else ceiling(draws - draws // 2, alpha, delta)
    )
    honest = best_bound(s0, s1, alpha, delta)
    row.epsilon_lower_bound, row.event = honest.epsilon_lower_bound, honest.event
    row.counts = {"honest_hits": list(honest.hits), "estimated_on": honest.estimated_on}
    name = case.planted_protocol or case.protocol
    p0, p1, _ = _batch(name, case.planted, case, worlds, draws, tick, shared)
    caught = best_bound(p0, p1, alpha, delta)
    row.planted = case.planted_what
    row.planted_lower_bound = caught.epsilon_lower_bound
    row.planted_verdict = FAIL if caught.epsilon_lower_bound > eps + TOLERANCE else INCONCLUSIVE
    row.counts.update(planted_hits=list(caught.hits), planted_event=caught.event)
    if honest.epsilon_lower_bound > eps + TOLERANCE:
        row.verdict = FAIL
        row.reason = f"ε_lb {honest.epsilon_lower_bound:.3f} > claimed ε {eps:.4g}"
    elif row.planted_verdict == FAIL:
        row.verdict = PASS
        row.reason = (
            f"ε_lb {honest.epsilon_lower_bound:.3f} ≤ {eps:.4g}; the same test catches the "
            f"planted variant (ε_lb {caught.epsilon_lower_bound:.3f})"
        )
    else:
        row.verdict = INCONCLUSIVE
        why = (
            f"no test at {draws} draws can certify more than {row.ceiling:.3f}"
            if row.ceiling <= eps
            else f"the planted variant reaches only ε_lb {caught.epsilon_lower_bound:.3f}"
        )
        row.reason = f"too little power: {why} ≤ claimed ε {eps:.4g}"


def run_central_audit(
    names: Iterable[str] | None = None,
    alpha: float = DEFAULT_ALPHA,
    draws: int | None = None,
    progress: bool = False,
    cases: dict[str, CentralCase] | None = None,
) -> list[CentralRow]:
    """Audit the named central cases (all when None); α split evenly over the rows run."""
    from .audit_central_cases import CASES

    cases = CASES if cases is None else cases
    names = list(cases) if names is None else list(names)
    cases = dict(cases)
    for name in names:
        base = name.removesuffix(PLANTED_SUFFIX)
        if name != base and base in cases:
            cases[name] = planted_row(cases[base])
    unknown = [n for n in names if n not in cases]
    if unknown:
        raise ValueError(
            f"unknown central audit(s) {unknown}; known: {', '.join(cases)} (and "
            f"NAME{PLANTED_SUFFIX} for a row's planted under-statement)"
        )
    if not names:
        raise ValueError("nothing to audit: no central mechanism named")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    row_alpha = alpha / len(names)
    bar = None
    if progress:
        from tqdm import tqdm

        total = sum(4 * (cases[n].draws if draws is None else draws) for n in names)
        bar = tqdm(total=total, unit="release", file=sys.stderr, desc="central audit")
    rows = []
    shared: Batches = {}  # a row named with its planted row: two batches, not four
    # dp-accounting logs every RDP order it drops at DPAR's huge noise multipliers (hundreds of
    # lines per row); the figures are unaffected, so the audit's output keeps only errors.
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        for name in names:
            if bar is not None:
                bar.set_postfix_str(name)
            tick = bar.update if bar is not None else (lambda n: None)
            rows.append(audit_case(cases[name], row_alpha, draws, tick, shared))
    finally:
        absl.setLevel(level)
        if bar is not None:
            bar.close()
    return rows


# --------------------------------------------------------------------------- output


def _fmt(x: float) -> str:
    return "∞" if math.isinf(x) and x > 0 else f"{x:.3f}"


def _ran(row: CentralRow) -> bool:
    return row.draws > 0 and row.verdict not in (NO_CLAIM, NOT_APPLICABLE)


COLUMNS = ("mechanism", "unit", "claimed ε (δ)", "ε_lb", "ceiling", "planted ε_lb", "draws",
           "result")  # fmt: skip


def format_central_table(rows: Sequence[CentralRow]) -> str:
    """The rows as an aligned table, each followed by what it tested and why it reads so."""
    cells = [list(COLUMNS)]
    for r in rows:
        ran = _ran(r)
        cells.append([
            r.mechanism, r.unit[:28],
            f"{_fmt(r.claimed_epsilon)} ({r.claimed_delta:.2g})",
            _fmt(r.epsilon_lower_bound) if ran else "-",
            _fmt(r.ceiling) if ran else "-",
            _fmt(r.planted_lower_bound) if ran else "-",
            f"{r.draws:,}" if ran else "-",
            r.verdict,
        ])  # fmt: skip
    widths = [max(len(c[j]) for c in cells) for j in range(len(COLUMNS))]
    lines = []
    for k, c in enumerate(cells):
        lines.append("  ".join(c[j].ljust(widths[j]) for j in range(len(c))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    for r in rows:
        lines.append(f"{r.mechanism}: {r.verdict}: {r.reason}")
        if _ran(r):
            lines.append(f"    neighbours: {r.neighbours}; statistic: {r.statistic}")
            lines.append(
                f"    event: {r.event} (α {r.alpha_row:.3g}); planted: {r.planted} "
                f"→ {r.planted_verdict}"
            )
    return "\n".join(lines)


def main_central(names: Sequence[str] | None, alpha: float, draws: int | None, as_json: bool,
                 quiet: bool) -> int:  # fmt: skip
    """``ldpgraph audit --central``: print the table (or JSON); exit 1 on any FAIL."""
    import json

    rows = run_central_audit(names or None, alpha=alpha, draws=draws, progress=not quiet)
    if as_json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        print(format_central_table(rows))
        tally = {v: sum(r.verdict == v for r in rows) for v in
                 (PASS, FAIL, INCONCLUSIVE, NO_CLAIM, NOT_APPLICABLE)}  # fmt: skip
        print(
            f"central audit at confidence {1 - alpha:g}: "
            + ", ".join(f"{k} {v}" for k, v in tally.items() if v)
            + f" ({sum(r.seconds for r in rows):.0f} s)"
        )
    return 1 if any(r.verdict == FAIL for r in rows) else 0
