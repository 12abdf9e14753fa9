"""``ldpgraph sweep``: run an experiment file (grid search, then the final runs)."""

from __future__ import annotations

import argparse
import os

from .errors import UserError, exit_on_interrupt
from .output import stage_printer
from .paths import check_cache_writable, check_store


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run an experiment file: grid search on validation accuracy, then final runs",
        description="Run the experiment FILE (TOML, see experiments/): for every cell (dataset, "
        "protocol, model, ε) run every configuration of the grid runs_per_config times, pick "
        "the best mean validation accuracy, then run it final_runs times with fresh seeds. "
        "Resumable: finished runs in the store are never redone; reports are collected once "
        "per (privacy parameters, seed) and reused for every τ, l and training configuration.",
    )
    p.add_argument("file", metavar="FILE", help="experiment file (TOML)")
    p.add_argument("--grid", default="paper", help="search space: [grid.NAME] of the file")
    p.add_argument("--dry-run", action="store_true", help="count and estimate; run nothing")
    p.add_argument(
        "--store",
        default=None,
        metavar="PATH",
        help="results store (default: the file's store, else results/<name>.db)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes (default: CPU count; 0: in this process)",
    )
    p.add_argument(
        "--ray-address",
        default="",
        metavar="HOST:PORT",
        help="run the work as tasks on the existing Ray cluster at this address (its head's "
        "GCS, e.g. 127.0.0.1:6379) instead of local worker processes; results are still "
        "written by this process into the local store (default: $RAY_ADDRESS, as `ray job "
        "submit` sets it)",
    )
    only = p.add_mutually_exclusive_group()
    only.add_argument("--only-search", action="store_true", help="run the search phase only")
    only.add_argument(
        "--only-final",
        action="store_true",
        help="run the final phase only (cells whose search is complete)",
    )
    _add_filters(p)
    p.add_argument("--quiet", action="store_true", help="no progress output on stderr")


def _add_filters(p: argparse.ArgumentParser) -> None:
    """Which part of the file to run: the first N cells, or only some of its entries."""
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="only the first N cells (file order: dataset, protocol, model, ε)",
    )
    for key, what in (
        ("datasets", "datasets"),
        ("protocols", "protocol entries (names or variant labels)"),
        ("models", "models"),
        ("epsilons", "ε values"),
    ):
        p.add_argument(
            f"--{key}",
            metavar="A,B",
            default=None,
            help=f"only these {what} of the file, comma-separated",
        )


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..sweep.experiment import load_experiment
    from ..sweep.run import format_dry_run, run_sweep

    if args.workers is not None and args.workers < 0:
        raise UserError(f"--workers must be >= 0 (0: in this process), got {args.workers}")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be >= 1 (the first N cells), got {args.limit}")
    # A dry run validates as the real run does (an unknown protocol is an error in both).
    exp = load_experiment(args.file)
    if not args.dry_run:
        check_store(args.store or exp.store, "the results store")
        check_cache_writable(exp.datasets)
        exit_on_interrupt()
    phases = ("search",) if args.only_search else ("final",) if args.only_final else None
    workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    result = run_sweep(
        exp,
        args.grid,
        store_path=args.store,
        workers=workers,
        phases=phases or ("search", "final"),
        limit=args.limit,
        only={
            key: [v.strip() for v in value.split(",") if v.strip()]
            for key in ("datasets", "protocols", "models", "epsilons")
            if (value := getattr(args, key)) is not None
        },
        dry_run=args.dry_run,
        progress=not args.quiet,
        say=stage_printer(args.quiet),
        # Like Ray's own tools: RAY_ADDRESS (set by `ray job submit`) when no flag is given.
        ray_address=args.ray_address or os.environ.get("RAY_ADDRESS", "").strip(),
    )
    if args.dry_run:
        print(format_dry_run(exp, args.grid, result, workers))
    else:
        print(result.format())
    return 0
