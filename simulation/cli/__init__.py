"""The ``ldpgraph`` command: ``run`` one experiment, ``sweep`` an experiment file, list
``datasets``, ``protocols`` and ``results``, build a ``report``, ``partition`` a dataset for a
deployment, ``audit`` the mechanisms.

One module per command, each with its options (``add_parser``) and its handler (``cmd_*``);
this module puts them together and turns the errors a user can fix into one line."""

# ruff: noqa: E402  (the warning filter goes in before the commands are imported)
from __future__ import annotations

import argparse
import os
import sys

from .output import quiet_third_party_warnings

# Before the commands' imports: PyG warns at import time.
quiet_third_party_warnings()

from ..extras import MissingExtraError, missing_extra_hint
from . import audit, datasets, partition, protocols, report, results, run, sweep
from .audit import cmd_audit
from .datasets import cmd_datasets
from .errors import UserError, errno_line
from .parser import ShortErrors
from .partition import cmd_partition
from .protocols import cmd_protocols
from .report import cmd_report
from .results import cmd_results
from .run import cmd_run
from .run_flags import chosen_protocol, foreign_flags
from .sweep import cmd_sweep

__all__ = ["UserError", "build_parser", "main"]


def build_parser(
    protocol: str | None = None, command: str | None = None
) -> argparse.ArgumentParser:
    """The CLI; ``protocol``: the run's protocol, whose parameters ``run`` takes as flags;
    ``command``: the command about to run, when known: another than ``run`` gets ``run`` as a
    name only (its flags are the configuration schema, which imports every protocol and
    metric module: seconds that ``ldpgraph results`` should not wait for), and so does
    ``audit`` (its defaults import the audit, and NumPy)."""
    parser = ShortErrors(
        prog="ldpgraph",
        description="Private graph learning where every graph node is a client: local DP "
        "(HoGS and baselines) and central DP under one harness.",
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show program's version number and exit"
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=ShortErrors
    )
    every = command is None or command.startswith("-")
    if every or command == "run":
        run.add_parser(sub, protocol)
    else:
        sub.add_parser("run", help=run.RUN_HELP)
    for module in (datasets, protocols, partition, report, results, sweep):
        module.add_parser(sub)
    if every or command == "audit":  # its options' defaults import the audit (NumPy)
        audit.add_parser(sub)
    else:
        sub.add_parser("audit", help=audit.AUDIT_LINE)
    return parser


class _Version(argparse.Action):
    """``--version``: the version is read when asked for (the metadata lookup costs every other
    command a tenth of a one-line refusal's time)."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        import ldpgraph

        print(f"ldpgraph {ldpgraph.__version__}")
        parser.exit()


def _use_recorded_data_root() -> None:
    from ..datasets.locations import use_recorded_data_root

    use_recorded_data_root()


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's arguments) and run the command; returns the exit
    code (2: a one-line error the user can fix)."""
    quiet_third_party_warnings()
    argv = sys.argv[1:] if argv is None else list(argv)
    protocol = chosen_protocol(argv) if argv[:1] == ["run"] else None
    parser = build_parser(protocol, argv[0] if argv else None)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = parser._subparsers._group_actions[0].choices.get(args.command)
        foreign = foreign_flags(unknown, args.protocol) if args.command == "run" else None
        (command or parser).error(foreign or f"unrecognized arguments: {' '.join(unknown)}")
    args.argv = argv  # the report names the command that made it
    _use_recorded_data_root()
    # Looked up here, not at import: a test may stand in for a handler.
    handlers = {
        "run": cmd_run,
        "datasets": cmd_datasets,
        "protocols": cmd_protocols,
        "partition": cmd_partition,
        "results": cmd_results,
        "sweep": cmd_sweep,
        "report": cmd_report,
        "audit": cmd_audit,
    }
    try:
        return handlers[args.command](args)
    except ModuleNotFoundError as exc:
        hint = missing_extra_hint(exc)
        if hint is None or os.environ.get("LDPGRAPH_DEBUG"):
            raise
        print(f"ldpgraph: error: {hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Our processes are stopped by now (the backends clean up in `finally`). A Flower worker
        # thread may still sit in a Ray call and would hang the interpreter's exit: leave hard.
        print("ldpgraph: interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)
    except (ValueError, OSError, UserError, MissingExtraError) as exc:
        # ConfigError, DatasetError, unknown protocol/model, out-of-domain features …
        if os.environ.get("LDPGRAPH_DEBUG"):
            raise
        line = errno_line(exc, args) if type(exc).__str__ is OSError.__str__ else str(exc)
        print(f"ldpgraph: error: {line}", file=sys.stderr)
        return 2
