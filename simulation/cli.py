"""The ``ldpgraph`` command: ``run`` one experiment, ``sweep`` an experiment file, list
``datasets``, ``protocols`` and ``results``, build a ``report``."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from ldpgraph.protocols import registry
from ldpgraph.protocols.base import FEATURE_SHARE
from ldpgraph.server.evaluation import metric_names
from ldpgraph.server.record import json_default, summary, to_json

from .config import (
    SECTIONS,
    ConfigError,
    RunConfig,
    key_choices,
    key_default,
    key_help,
    key_names,
    section_of,
)
from .extras import MissingExtraError, missing_extra_hint, require_extra


class UserError(Exception):
    pass


#: How ``--protocol`` groups the protocols: privacy model → heading with its privacy unit.
PRIVACY_FAMILIES = {
    "ldp": "LOCAL DP: each node perturbs its own report; ε per adjacency bit / edge / node "
    "as each report states",
    "central": "CENTRAL DP, server-only strategies: node-level (ε, δ), or edge-level where "
    "the report says so (DPGGAN, EdgeRand, LapGraph); the nodes upload raw data to a trusted "
    "curator (--trust-curator)",
    "none": "NO PRIVACY: upper bounds (--trust-curator)",
    "empirical": "EMPIRICAL, no DP: a trusted curator's defence against link inference, "
    "measured by the attack metric only (--trust-curator)",
}


def central_only_parameters() -> set[str]:
    """Protocol parameters that only central-DP strategies use (their own ``--help`` group)."""
    central = {
        i.name
        for i in registry.all_protocols()
        if getattr(i.resolve(), "privacy_model", "ldp") in ("central", "empirical")
    }
    return {name for name, (_p, users) in registry.parameters().items() if set(users) <= central}


def protocol_help() -> dict[str, str]:
    """``--protocol`` and every protocol parameter's help, from the registry: the parameter's
    help, its allowed values and the protocols that use it."""
    families: dict[str, list[str]] = {model: [] for model in PRIVACY_FAMILIES}
    for i in registry.all_protocols():
        model = getattr(i.resolve(), "privacy_model", "ldp")
        families.setdefault(model, []).append(f"{i.name}: {i.summary}")
    out = {
        "protocol": "the protocol (`ldpgraph protocols` lists them with their parameters). "
        + " ".join(
            f"[{PRIVACY_FAMILIES.get(model, model)}] " + "; ".join(items) + "."
            for model, items in families.items()
            if items
        )
    }
    for name, (param, users) in registry.parameters().items():
        out[name] = f"{param.help}; {param.allowed}; used by {', '.join(users)}"
    return out


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class BoolFlag(argparse.Action):
    """A boolean option as a flag: ``--flag`` sets it, ``--no-flag`` clears it, and
    ``--flag true`` / ``--flag false`` (the form older commands use) still work."""

    def __init__(self, option_strings, dest, default=None, required=False, help=None):
        names = []
        for opt in option_strings:
            names.append(opt)
            if opt.startswith("--"):
                names.append("--no-" + opt[2:])
        super().__init__(
            names,
            dest,
            nargs="?",
            default=default,
            required=required,
            help=help,
            metavar="true|false",
        )

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string and option_string.startswith("--no-"):
            if values is not None:
                raise argparse.ArgumentError(self, f"{option_string} takes no value")
            setattr(namespace, self.dest, False)
            return
        if values is None or str(values).lower() in _TRUE:
            setattr(namespace, self.dest, True)
        elif str(values).lower() in _FALSE:
            setattr(namespace, self.dest, False)
        else:
            raise argparse.ArgumentError(self, f"expected true or false, got {values!r}")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    def _format_action_invocation(self, action: argparse.Action) -> str:
        if isinstance(action, BoolFlag):  # --flag [true|false], --no-flag
            return ", ".join(
                o if o.startswith("--no-") else f"{o} [true|false]" for o in action.option_strings
            )
        return super()._format_action_invocation(action)


def chosen_protocol(argv: list[str]) -> str:
    """The ``--protocol`` of a ``run`` command line (the last one given), else the default:
    ``run``'s flags and ``--help`` are that protocol's parameters only."""
    chosen = RunConfig().protocol
    for i, arg in enumerate(argv):
        if arg == "--protocol" and i + 1 < len(argv):
            chosen = argv[i + 1]
        elif arg.startswith("--protocol="):
            chosen = arg.partition("=")[2]
    return chosen if chosen in registry.protocol_names() else RunConfig().protocol


def foreign_flags(unknown: list[str], protocol: str) -> str | None:
    """The error for flags of other protocols' parameters given to ``protocol``, if any."""
    params = registry.parameters()
    named = []
    for arg in unknown:
        name = arg.removeprefix("--").partition("=")[0].replace("-", "_")
        if arg.startswith("--") and name in params and name not in ("epsilon",):
            users = ", ".join(params[name][1])
            named.append(f"--{name.replace('_', '-')} (a parameter of {users})")
    if not named:
        return None
    return (
        f"protocol {protocol!r} has no parameter {'; '.join(named)}: see "
        f"ldpgraph run --protocol {protocol} --help"
    )


def _add_run(sub: argparse._SubParsersAction, protocol: str | None = None) -> None:
    p = sub.add_parser(
        "run",
        help="run one experiment",
        description="Collect every node's LDP report, reconstruct a synthetic graph, train a GNN "
        "on it and evaluate on the true test labels; or, with a central-DP strategy, collect "
        "the raw rows of the nodes that trust the curator and release what the mechanism "
        "releases (a model or a graph), scored the same way.",
        formatter_class=_HelpFormatter,
    )
    # Every configuration key is a flag, in its section's group; help and choices come from
    # the schema (simulation/config.py) and, for protocol parameters, from the registry. Of
    # the protocols' parameters only the chosen protocol's are flags (another's is an error).
    defaults = RunConfig()
    params = protocol_help()
    chosen = protocol or defaults.protocol
    own = set(registry.protocol_info(chosen).param_names) | {"protocol", "epsilon"}
    if protocol is None or protocol == defaults.protocol:
        p.epilog = (
            f"Protocol parameters shown: {chosen!r}'s. Another protocol's: ldpgraph run "
            "--protocol NAME --help (ldpgraph protocols lists them)."
        )
    groups = {}
    for name, title in SECTIONS.items():
        groups[name] = p.add_argument_group(title)
        if name == "protocol":  # the central strategies' parameters follow the LDP ones
            central = p.add_argument_group(
                "protocol parameters of the central-DP strategies (node-level (ε, δ); DPAR)"
            )
    central_keys = central_only_parameters()
    for name in key_names():
        if section_of(name) == "protocol" and name not in own:
            continue
        flag = "--" + name.replace("_", "-")
        default = key_default(name)
        extra: dict[str, Any] = {}
        if key_choices(name):
            extra["choices"] = key_choices(name)
        if type(default) is bool:
            extra["action"] = BoolFlag
        else:
            extra["type"] = type(default)
        help_ = params.get(name) or key_help(name)
        if name == "metrics":
            help_ += ": " + ", ".join(metric_names())
        group = central if name in central_keys else groups[section_of(name)]
        if name in _UNSET_UNLESS_GIVEN:  # whether the user gave it decides `seeded`
            help_ += " (default: 0)" if name == "seed" else " (default: true iff --seed is given)"
            default = argparse.SUPPRESS
        group.add_argument(flag, default=default, help=help_, **extra)
    groups["data"].add_argument(
        "--split",
        type=str,
        default=None,
        help="train/val fractions as 'TRAIN,VAL', e.g. 0.5,0.25 (overrides the two)",
    )
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress output on stderr")
    d = p.add_argument_group("deploy backend (a running SuperLink; see README, Deploy)")
    d.add_argument("--superlink", metavar="HOST:PORT", help="the SuperLink to submit the run to")
    d.add_argument(
        "--root-certificates",
        metavar="CA.CRT",
        help="CA certificate that signed the SuperLink's TLS certificate",
    )
    d.add_argument(
        "--insecure",
        action="store_true",
        help="talk to a SuperLink started with --insecure (no TLS; testing only)",
    )
    d.add_argument(
        "--deploy-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="give up when the run has not finished after this long (default: wait)",
    )
    p.add_argument(
        "--store",
        default=None,
        metavar="PATH",
        help="also record the run in this results store (SQLite; see `ldpgraph results`)",
    )


def _add_datasets(sub: argparse._SubParsersAction) -> None:
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


def _add_protocols(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "protocols",
        help="list the protocols with their parameters",
        description="List every registered protocol: LDP or central, the privacy unit its "
        "report states, and each parameter with its default, allowed values and help "
        "(server-side parameters are post-processing: a sweep reuses one collection for them).",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _add_results(sub: argparse._SubParsersAction) -> None:
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


def _add_sweep(sub: argparse._SubParsersAction) -> None:
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
        "written by this process into the local store",
    )
    only = p.add_mutually_exclusive_group()
    only.add_argument("--only-search", action="store_true", help="run the search phase only")
    only.add_argument(
        "--only-final",
        action="store_true",
        help="run the final phase only (cells whose search is complete)",
    )
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
    p.add_argument("--quiet", action="store_true", help="no progress output on stderr")


def _add_report(sub: argparse._SubParsersAction) -> None:
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


def _add_partition(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "partition",
        help="write node files for SuperNodes and a curator file for the server (deployment)",
        description="Split a dataset for a deployment: one node file per block of k nodes "
        "(only those nodes' adjacency rows and features; give each SuperNode its file with "
        "--node-config \"data-file='DIR/nodes-00000'\") and DIR/curator.json, all the server "
        "may know (node ids, labels and the split, n, d, the public feature domain). Files are "
        "versioned, tagged with the partition's id and checksummed; a wrong or corrupt file is "
        "refused on load.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", required=True, help=key_help("dataset"))
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (new or empty)")
    p.add_argument(
        "--nodes-per-file",
        type=int,
        default=0,
        metavar="K",
        help="nodes per node file (one SuperNode hosts one file); 0: automatic, at most 16 "
        "node files",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the split stored for the server")
    p.add_argument("--train-split", type=float, default=0.5, help=key_help("train_split"))
    p.add_argument("--val-split", type=float, default=0.25, help=key_help("val_split"))
    p.add_argument("--data-root", default=None, help=key_help("data_root"))
    p.add_argument(
        "--public-features",
        nargs="?",
        const="all",
        default=None,
        metavar="CONSENT",
        help="also give the server the true features of the nodes that consent (only for "
        "edge-LDP protocols whose server sees them): CONSENT is 'all' (the default when the "
        "option is given alone) or a file of the consenting node ids; the rows of the others "
        "are not written, and the record names who consented",
    )
    p.add_argument(
        "--supernode-keys",
        nargs="+",
        default=None,
        metavar="KEY.pub",
        help="one SuperNode public key (deploy/make-supernode-keys.sh) per node file, in order: "
        "the manifest binding each file's nodes to the SuperNode that alone may host them; a "
        "deployment's server refuses a curator file without it",
    )


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


def _add_audit(sub: argparse._SubParsersAction) -> None:
    from .audit import DEFAULT_ALPHA, DEFAULT_DRAWS, DEFAULT_EPSILONS
    from .audit_rows import AUDITS

    p = sub.add_parser(
        "audit",
        help="empirical ε lower bounds for every client mechanism (PASS/FAIL vs the claim)",
        description=AUDIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
        help="audit this mechanism (repeatable): " + ", ".join(AUDITS),
    )
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


class ShortErrors(argparse.ArgumentParser):
    """An error is one line and a pointer to ``--help``, not the whole usage first (``run``
    has over a hundred flags)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(protocol: str | None = None) -> argparse.ArgumentParser:
    """The CLI; ``protocol``: the run's protocol, whose parameters ``run`` takes as flags."""
    parser = ShortErrors(
        prog="ldpgraph",
        description="Private graph learning where every graph node is a client: local DP "
        "(HoGS and baselines) and central DP under one harness.",
    )
    from ldpgraph import __version__

    parser.add_argument("--version", action="version", version=f"ldpgraph {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=ShortErrors
    )
    _add_run(sub, protocol)
    _add_datasets(sub)
    _add_protocols(sub)
    _add_partition(sub)
    _add_report(sub)
    _add_results(sub)
    _add_sweep(sub)
    _add_audit(sub)
    return parser


#: Flags left out of the namespace when not given (argparse.SUPPRESS): an explicit ``--seed``
#: makes the run ``seeded``.
_UNSET_UNLESS_GIVEN = ("seed", "seeded")


def _config_from_args(args: argparse.Namespace) -> RunConfig:
    # Flags exist for the chosen protocol's parameters only: the others keep their defaults
    # (absent from the namespace, so left out here).
    values = {name: getattr(args, name) for name in key_names() if hasattr(args, name)}
    for name in _UNSET_UNLESS_GIVEN:
        values.setdefault(name, None)
    # A central release is replayable only when the user asked for it: --seed given (or
    # --seeded); otherwise its noise comes from OS entropy (the split still uses seed 0).
    if values["seeded"] is None:
        values["seeded"] = values["seed"] is not None
    for name in _UNSET_UNLESS_GIVEN:
        if values[name] is None:
            values[name] = getattr(RunConfig(), name)
    if args.split:
        try:
            train, val = (float(v) for v in args.split.split(","))
        except ValueError:
            raise ConfigError(f"--split must be 'TRAIN,VAL', got {args.split!r}") from None
        values["train_split"], values["val_split"] = train, val
    return RunConfig.from_mapping(values)


def _stage_printer(quiet: bool):
    start = time.perf_counter()

    def say(msg: str) -> None:
        if not quiet:
            print(f"[{time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    return say


def check_writable(path: str | os.PathLike[str], what: str, *, kind: str = "file") -> None:
    """Refuse, before any work, a path this command will write: an existing one must be a
    writable ``kind`` ("file", "dir" or "sqlite": a file whose directory must be writable too,
    for SQLite's journal), a new one must be creatable (its nearest existing ancestor a
    writable directory)."""
    p = Path(path).expanduser()
    if p.exists():
        if kind == "dir" and not p.is_dir():
            raise UserError(f"{what} {p} is not a directory")
        if kind != "dir" and p.is_dir():
            raise UserError(f"{what} {p} is a directory, not a file")
        mode = os.W_OK | (os.X_OK if kind == "dir" else 0)
        if not os.access(p, mode) or (kind == "sqlite" and not os.access(p.parent, os.W_OK)):
            raise UserError(f"{what} {p} is not writable")
        return
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{what} {p} cannot be created: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{what} {p} cannot be created: {parent} is not writable")


def check_cache_writable(datasets: list[str]) -> None:
    """Loading a real dataset writes its processed form to the cache: check it can."""
    from .datasets import ENV_CACHE, cache_dir, parse_dataset_spec

    if all(parse_dataset_spec(d)[0] == "synthetic" for d in datasets):
        return
    via = f"${ENV_CACHE}" if os.environ.get(ENV_CACHE) else "the dataset cache"
    check_writable(cache_dir(), f"{via} (set {ENV_CACHE} to a writable directory)", kind="dir")


def check_device(device: str) -> None:
    """A CUDA device must exist here (the syntax is RunConfig.validate's)."""
    if not device.startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise UserError(
            f"--device {device}: PyTorch sees no CUDA GPU on this machine; use --device auto "
            "(the GPU when there is one) or cpu"
        )
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise UserError(
            f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), "
            f"cuda:0 to cuda:{torch.cuda.device_count() - 1}"
        )


def cmd_run(args: argparse.Namespace) -> int:
    config = _config_from_args(args)
    if args.store:
        check_writable(args.store, "--store", kind="sqlite")
    if config.backend != "deploy":
        from .datasets import check_dataset

        check_dataset(config.dataset)
        check_cache_writable([config.dataset])
        check_device(config.device)
    if config.backend == "deploy":
        result = _run_deploy(config, args)
    else:
        if args.superlink:
            raise UserError("--superlink is for --backend deploy")
        from .pipeline import run

        result = run(config, stage=_stage_printer(args.quiet), show_progress=not args.quiet)
    if args.store:
        from .results.store import record_run

        record_run(args.store, config, result)
    if args.json:
        print(to_json(result, indent=2))
    else:
        print(summary(result))
    warning = collapse_warning(result)
    if warning:
        print(f"ldpgraph: warning: {warning}", file=sys.stderr, flush=True)
    return 0


def collapse_warning(result: dict[str, Any]) -> str | None:
    """What to tell the user when training collapsed onto one class (``training.collapsed``,
    see ldpgraph.server.training.collapse_check), with the settings to try; None otherwise."""
    tr = result.get("training") or {}
    if not tr.get("collapsed"):
        return None
    c, acc = result.get("config") or {}, result.get("accuracy") or {}
    tries = []
    if not c.get("center_features", True):
        tries.append("--center-features (subtracts the noisy features' column means)")
    name = c.get("protocol")
    shares = (
        name in registry.protocol_names() and FEATURE_SHARE in registry.protocol_info(name).params
    )
    if shares and c.get("feature_share", FEATURE_SHARE.default) > FEATURE_SHARE.default:
        tries.append(f"a smaller feature share (--feature-share {FEATURE_SHARE.default:g})")
    if c.get("protocol") == "features-only" and c.get("feature_share", 1.0) < 1.0:
        tries.append("--feature-share 1 (features-only spends only that share of ε)")
    lr = float(c.get("lr", 0.01))
    tries.append(f"a lower learning rate (--lr {lr / 10:g})")
    tries.append("a larger --epsilon")
    return (
        f"the model collapsed onto one class: it gives one class to "
        f"{100 * tr.get('top_class_share', 0.0):.0f}% of the test nodes, and its validation "
        f"accuracy {100 * float(acc.get('val', 0.0)):.1f}% is at the majority-class rate "
        f"({100 * tr.get('majority_rate', 0.0):.1f}%); the accuracy says nothing about the "
        f"release. Try {', '.join(tries[:-1])} or {tries[-1]}."
    )


def _run_deploy(config: RunConfig, args: argparse.Namespace) -> dict[str, Any]:
    from .backends.deploy import DeployError, submit

    if not args.superlink:
        raise UserError("--backend deploy needs --superlink HOST:PORT")
    say = _stage_printer(args.quiet)
    say(f"submitting the run to the SuperLink at {args.superlink}")
    try:
        return submit(
            config,
            args.superlink,
            root_certificates=args.root_certificates,
            insecure=args.insecure,
            timeout=args.deploy_timeout,
            echo=None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True)),
        )
    except DeployError as exc:
        raise UserError(str(exc)) from None


def cmd_partition(args: argparse.Namespace) -> int:
    import numpy as np

    from .datasets import load_dataset
    from .partition import CuratorFileError, automatic_nodes_per_file, read_consent, write_partition

    if args.nodes_per_file < 0:
        raise UserError("--nodes-per-file must be >= 1 (or 0 for automatic)")
    for name, value in (("--train-split", args.train_split), ("--val-split", args.val_split)):
        if not 0.0 <= value <= 1.0:
            raise UserError(f"{name} must be in [0, 1], got {value}")
    if args.train_split + args.val_split > 1.0 + 1e-12:
        raise UserError("--train-split + --val-split must not exceed 1")
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--out {out} exists and is not an empty directory")
    check_writable(args.out, "--out", kind="dir")
    check_cache_writable([args.dataset])
    graph = load_dataset(args.dataset, args.data_root)
    k = args.nodes_per_file or automatic_nodes_per_file(graph.num_nodes)
    consent: bool | np.ndarray = False
    try:
        if args.public_features is not None:
            consent = read_consent(args.public_features, graph.num_nodes)
    except CuratorFileError as exc:
        raise UserError(str(exc)) from None
    info = write_partition(
        graph,
        args.out,
        k,
        dataset=args.dataset,
        seed=args.seed,
        train_split=args.train_split,
        val_split=args.val_split,
        public_features=consent,
        supernode_keys=args.supernode_keys,
    )
    bound = "bound to their SuperNode keys" if info["bound"] else "bound to no SuperNode key"
    shared = ""
    if info["public_consent"] is not None:
        shared = f"; true features of {info['public_consent']} consenting node(s)"
    print(
        f"partition {info['partition']}: {info['nodes']} nodes in {info['files']} node files "
        f"of {k} nodes under {args.out} ({bound}{shared}); curator file {info['curator']}"
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .results.report import write_report
    from .results.store import ResultsStore, default_store_path

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
    with ResultsStore(path, create=False) as store:
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


def cmd_datasets(args: argparse.Namespace) -> int:
    from .datasets import dataset_catalog

    rows = dataset_catalog(args.data_root, compute=not args.no_measure)
    if args.json:
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


def cmd_protocols(args: argparse.Namespace) -> int:
    rows = [registry.describe(name) for name in registry.protocol_names()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    keys = set(key_names())
    for r in rows:
        rounds = f", {r['rounds']} rounds" if r["rounds"] != 1 else ""
        features = ", public features" if r["public_features"] else ""
        print(f"{r['name']} ({r['privacy_model']}{rounds}{features}): {r['summary']}")
        print(f"    privacy unit: {r['privacy_unit']}")
        for p in r["params"]:
            flag = "--" + p["name"].replace("_", "-") if p["name"] in keys else p["name"]
            where = " [server-side]" if p["server_side"] else ""
            print(
                f"    {flag:<17} {p['type']:<5} default {p['default']!s:<9} {p['allowed']}"
                f"{where}: {p['help']}"
            )
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from .results import tables
    from .results.store import ResultsStore, default_store_path

    if args.csv and args.csv != "-":
        check_writable(args.csv, "--csv")
    path = default_store_path(args.store)
    with ResultsStore(path, create=False) as results:
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


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep.experiment import load_experiment
    from .sweep.run import format_dry_run, run_sweep

    if args.workers is not None and args.workers < 0:
        raise UserError(f"--workers must be >= 0 (0: in this process), got {args.workers}")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be >= 1 (the first N cells), got {args.limit}")
    exp = load_experiment(args.file, check_protocols=not args.dry_run)
    if not args.dry_run:
        check_writable(args.store or exp.store, "the results store", kind="sqlite")
        check_cache_writable(exp.datasets)
    phases = ("search",) if args.only_search else ("final",) if args.only_final else None
    workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    if args.dry_run:
        try:
            exp.check_protocols()
        except ValueError as exc:
            print(f"ldpgraph: warning: {exc}", file=sys.stderr)
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
        say=_stage_printer(args.quiet),
        ray_address=args.ray_address,
    )
    if args.dry_run:
        print(format_dry_run(exp, args.grid, result, workers))
    else:
        print(result.format())
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from .audit import DEFAULT_EPSILONS, format_table, run_audit
    from .audit_central import main_central
    from .audit_rows import AUDITS

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


def _use_recorded_data_root() -> None:
    from .datasets.locations import use_recorded_data_root

    use_recorded_data_root()


def main(argv: list[str] | None = None) -> int:
    from .backends import flower

    flower.EXIT_ON_INTERRUPT = True
    argv = sys.argv[1:] if argv is None else list(argv)
    protocol = chosen_protocol(argv) if argv[:1] == ["run"] else None
    parser = build_parser(protocol)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        run = parser._subparsers._group_actions[0].choices.get(args.command)
        foreign = foreign_flags(unknown, args.protocol) if args.command == "run" else None
        (run or parser).error(foreign or f"unrecognized arguments: {' '.join(unknown)}")
    args.argv = argv  # the report names the command that made it
    _use_recorded_data_root()
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
        print(f"ldpgraph: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
