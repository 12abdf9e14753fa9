"""``ldpgraph audit``: empirical ε lower bounds of the client mechanisms and the central
strategies, PASS/FAIL against their claims."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable

from .errors import UserError

AUDIT_HELP = """\
Empirical privacy audit of the client mechanisms, as a node runs them. Each mechanism is run
DRAWS times on each of two neighbouring inputs (vectorised, seeded from --seed); an output
event is chosen on the first half of the draws and its frequencies on the second half give a
Clopper-Pearson lower bound ε_lb = ln(p0_lower / p1_upper) on the mechanism's true ε. The α is
split over the two bounds and over the rows, so the whole table holds at confidence 1 - α.

What a lower bound means: if ε_lb exceeds the claimed ε (the privacy report's figure), the
mechanism spends more than it claims, with confidence 1 - α (FAIL, exit code 1). A PASS cannot
prove that a mechanism is ε-DP: it only says that these draws found no event that leaks more
than claimed. Real-valued outputs are also tested for floating-point outputs that one input
cannot produce (a float Laplace fails that way).

The node audit (docs/privacy/audit.md) runs each node's own code path: the scalar sampler
(degree-node), the batched client step (degree-batch, rr-batch-rate), LDPGen's vector
(ldpgen-vector), flip rates over 100·DRAWS bits (the *-rate rows: power for a 2 % over-spend at
ε = 8) and the reply time (timing, timing-rr: output and wall-clock time of one call on
neighbouring inputs, 0.15·DRAWS pairs, FAIL when the time adds more than 0.1 to the claim).
Rows that make one node call per draw use 0.1·DRAWS."""


#: ``audit``'s line in ``ldpgraph --help``.
AUDIT_LINE = "empirical ε lower bounds for every client mechanism (PASS/FAIL vs the claim)"


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..audit import DEFAULT_ALPHA, DEFAULT_DRAWS, DEFAULT_EPSILONS
    from ..audit_rows import AUDITS

    p = sub.add_parser(
        "audit",
        help=AUDIT_LINE,
        description=AUDIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_targets(p, AUDITS)
    p.add_argument(
        "--draws",
        type=int,
        default=DEFAULT_DRAWS,
        help=f"draws per input (half select the event, half estimate it; default {DEFAULT_DRAWS})",
    )
    p.add_argument(
        "--epsilon",
        type=float,
        action="append",
        default=None,
        metavar="E",
        help="ε at which each claim is checked (repeatable; default "
        + ", ".join(f"{e:g}" for e in DEFAULT_EPSILONS)
        + ")",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of every draw (default 0)")
    p.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"1 - confidence of the whole table (default {DEFAULT_ALPHA})",
    )
    p.add_argument(
        "--central-draws",
        type=int,
        default=None,
        metavar="N",
        help="runs per neighbouring dataset of every central row (default: each row's own)",
    )
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr")


def _add_targets(p: argparse.ArgumentParser, audits: Iterable[str]) -> None:
    """What to audit: everything, the central strategies, or named mechanisms."""
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--all",
        action="store_true",
        help="audit every registered mechanism, then every central strategy (--central)",
    )
    which.add_argument(
        "--central",
        nargs="*",
        metavar="NAME",
        default=None,
        help="audit the central strategies instead (all, or the NAMEs): the real mechanism on "
        "neighbouring tiny graphs, PASS/FAIL/INCONCLUSIVE against its headline "
        "(docs/privacy/audit.md)",
    )
    which.add_argument(
        "--mechanism",
        action="append",
        metavar="NAME",
        help="audit this mechanism (repeatable): " + ", ".join(audits),
    )


def check_options(args: argparse.Namespace) -> None:
    """Range-check every option before any draw: a confidence of ``1 - alpha`` outside (0, 1)
    would turn every row into a false FAIL (or a vacuous PASS)."""
    import math

    if not 0.0 < args.alpha < 1.0:
        raise UserError(f"--alpha must be in (0, 1) (1 - the confidence), got {args.alpha:g}")
    if args.draws < 4:
        raise UserError(
            f"--draws must be >= 4 (half select the event, half estimate it), got {args.draws}"
        )
    if args.central_draws is not None and args.central_draws < 1:
        raise UserError(f"--central-draws must be >= 1, got {args.central_draws}")
    for eps in args.epsilon or ():
        if not (eps > 0 and math.isfinite(eps)):
            raise UserError(f"--epsilon must be a finite number > 0, got {eps:g}")
    if args.seed < 0:
        raise UserError(f"--seed must be >= 0, got {args.seed}")


def cmd_audit(args: argparse.Namespace) -> int:
    from ..audit import DEFAULT_EPSILONS, format_table, run_audit
    from ..audit_central import main_central
    from ..audit_rows import AUDITS

    check_options(args)
    if args.central is not None:
        return main_central(args.central, args.alpha, args.central_draws, args.json, args.quiet)
    names = list(AUDITS) if args.all else args.mechanism
    rows = run_audit(
        names,
        epsilons=args.epsilon or DEFAULT_EPSILONS,
        draws=args.draws,
        seed=args.seed,
        alpha=args.alpha,
        progress=not args.quiet,
    )
    if args.json:
        from ldpgraph.server.record_json import json_default

        print(json.dumps([r.as_dict() for r in rows], indent=2, default=json_default))
    else:
        print(format_table(rows))
        failed = sum(not r.passed for r in rows)
        print(
            f"{len(rows) - failed} of {len(rows)} PASS at confidence {1 - args.alpha:g} "
            f"(seed {args.seed})" + (f"; {failed} FAIL" if failed else "")
        )
    code = 0 if all(r.passed for r in rows) else 1
    if args.all:  # the central rows after the client ones (own table, own α)
        central = main_central(None, args.alpha, args.central_draws, args.json, args.quiet)
        code = max(code, central)
    return code
