"""``ldpgraph datasets``: the registered datasets, their statistics and offline availability."""

from __future__ import annotations

import argparse
import sys

from ..config import key_help
from .output import stage_printer


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "datasets",
        help="list datasets, their statistics and offline availability",
        description="List the registered datasets. Statistics of datasets available offline "
        "are measured by loading them (cached after the first time).",
    )
    p.add_argument("--data-root", default=None, help=key_help("data_root"))
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--no-measure",
        action="store_true",
        help="only show the documented statistics; load nothing",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output on stderr")


def cmd_datasets(args: argparse.Namespace) -> int:
    from ldpgraph.protocols import progress

    from ..datasets import dataset_catalog

    say = stage_printer(args.quiet)
    if not args.no_measure:  # loading each dataset the first time takes seconds: say so
        say(
            "measuring the datasets available offline (the first time loads each one; "
            "--no-measure skips it)"
        )
    with progress.listening(say):  # one line per dataset measured
        rows = dataset_catalog(args.data_root, compute=not args.no_measure)
    if args.json:
        from ldpgraph.server.record_json import to_json

        print(to_json(rows, indent=2))
        return 0
    print(f"{'name':<18}{'nodes':>8}{'edges':>9}{'feats':>7}{'cls':>5}  offline  description")
    for r in rows:
        st = r.get("measured") or r.get("expected") or {}
        mark = "ERROR" if r.get("error") else "yes" if r.get("offline") else "no"
        print(
            f"{r['name']:<18}{st.get('nodes', '?'):>8}{st.get('edges', '?'):>9}"
            f"{st.get('features', '?'):>7}{st.get('classes', '?'):>5}  {mark:<7}  "
            f"{r.get('description', '')}"
        )
    for r in rows:
        if r.get("error"):
            print(f"ldpgraph: warning: {r['error']}", file=sys.stderr)
    return 0
