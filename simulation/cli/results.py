"""``ldpgraph results``: list, filter, aggregate and export the runs of a results store."""

from __future__ import annotations

import argparse
import os
import sys

from .errors import UserError
from .paths import check_writable, open_store_for_reading


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "results",
        help="list, filter, aggregate and export the runs in a results store",
        description="List the runs of a results store (one row per run), filtered; aggregate "
        "the repeats of a configuration (--group), print JSON or write CSV.",
    )
    p.add_argument(
        "--store",
        default=None,
        metavar="PATH",
        help="results store (default: $LDPGRAPH_STORE, else ./results/ldpgraph.db)",
    )
    p.add_argument("--protocol", default=None, help="only runs of this protocol")
    p.add_argument("--dataset", default=None, help="only runs on this dataset")
    p.add_argument("--model", default=None, help="only runs training this model")
    p.add_argument("--epsilon", type=float, default=None, help="only runs with this ε")
    p.add_argument("--sweep", default=None, help="only runs of this sweep")
    p.add_argument(
        "--status", choices=("running", "done", "failed"), default=None, help="only these runs"
    )
    p.add_argument("--csv", default=None, metavar="FILE", help="write CSV to FILE ('-': stdout)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--group",
        action="store_true",
        help="aggregate finished runs by configuration (all but the seed): n, mean ± std",
    )
    p.add_argument(
        "--columns",
        default=None,
        metavar="A,B",
        help="also show these columns: metric values such as graph_stats.triangles.re, lp.auc, "
        "attack.max (with --group their mean ± std), or any CSV column (config.tau, "
        "timings.total); wildcards allowed: 'graph_stats.*.re'",
    )
    p.add_argument(
        "--list-columns",
        action="store_true",
        help="list the metric columns of the selected runs by metric section, with how many "
        "runs have each",
    )


def cmd_results(args: argparse.Namespace) -> int:
    from ..results import tables
    from ..results.store import default_store_path

    if args.csv and args.csv != "-":
        check_writable(args.csv, "--csv")
    path = default_store_path(args.store)
    with open_store_for_reading(path) as results:
        rows = results.rows(
            protocol=args.protocol,
            dataset=args.dataset,
            model=args.model,
            epsilon=args.epsilon,
            sweep=args.sweep,
            status=args.status,
        )
    if args.list_columns:
        print(tables.format_available(rows))
        return 0
    columns: list[str] = []
    if args.columns:
        names = [c.strip() for c in args.columns.split(",") if c.strip()]
        try:
            columns = tables.resolve_columns(names, rows)
        except tables.ColumnError as exc:
            raise UserError(str(exc)) from None
    items = tables.group_rows(rows, columns) if args.group else rows
    what = "configurations" if args.group else "runs"
    try:
        if args.csv:
            flat = items if args.group else [tables.flatten_row(r) for r in rows]
            n = tables.write_csv(sys.stdout if args.csv == "-" else args.csv, flat)
            if args.csv != "-":
                print(f"wrote {n} {what} to {args.csv}", file=sys.stderr)
        if args.json:
            print(tables.dumps_rows(items))
        elif not args.csv:
            if not items:
                print(f"no {what} in {path} match", file=sys.stderr)
            else:
                print(
                    tables.format_groups(items, columns)
                    if args.group
                    else tables.format_runs(items, columns)
                )
        sys.stdout.flush()
    except BrokenPipeError:  # `ldpgraph results | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
