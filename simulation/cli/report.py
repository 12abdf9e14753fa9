"""``ldpgraph report``: figures and tables from a results store."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from ..extras import require_extra
from .errors import UserError
from .paths import check_writable, open_store_for_reading


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write figures (PNG) and tables (Markdown) from a results store",
        description="Build the HoGS paper's tables and figures from the finished final runs "
        "of a results store: Table III and a reproduction table beside the paper's numbers, "
        "accuracy-vs-ε figures with the non-private bound and the MLP floor, δ and τ sweeps; "
        "and metrics.md: per cell, mean ± std of every other metric's values (graph "
        "statistics as MRE per statistic and the degree KS). Where the store holds their "
        "runs, also the DPAR, PrivDPR, PPGSL (privacy-utility frontier) and DPGGAN/DPGVAE "
        "(Tables 1-2) reports beside those papers' numbers.",
    )
    p.add_argument("--store", default=None, help="results store (default: $LDPGRAPH_STORE)")
    p.add_argument(
        "--sweep", action="append", default=None, help="only runs of this sweep (repeatable)"
    )
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--substitute",
        action="append",
        default=[],
        metavar="PAPER=OURS",
        help="a dataset standing in for the paper's, e.g. lastfm=facebook",
    )
    p.add_argument("--title", default="ldpgraph results")


def cmd_report(args: argparse.Namespace) -> int:
    from ..results.report import write_report
    from ..results.store import default_store_path

    require_extra("matplotlib")
    # The CLI writes files: no GUI backend (library code never picks one, so a notebook keeps
    # its inline plots).
    os.environ.setdefault("MPLBACKEND", "Agg")
    path = default_store_path(args.store)
    if not path.is_file():
        raise UserError(f"no results store at {path}")
    check_writable(args.out, "--out", kind="dir")
    subs = {}
    for item in args.substitute:
        paper, _, ours = item.partition("=")
        if not paper or not ours:
            raise UserError(f"--substitute takes PAPER=OURS, got {item!r}")
        subs[paper] = ours
    with open_store_for_reading(path) as store:
        rows = [r for sweep in (args.sweep or [None]) for r in store.rows(sweep=sweep)]
    if not rows:
        raise UserError(f"no runs in {path}" + (f" for sweep {args.sweep}" if args.sweep else ""))
    written = write_report(
        rows,
        Path(args.out),
        title=args.title,
        substitutes=subs,
        command=shlex.join(["ldpgraph", *getattr(args, "argv", [])]),  # quoted: copy-pasteable
    )
    for w in written:
        print(w)
    return 0
