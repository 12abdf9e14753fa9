"""``ldpgraph run``: one experiment. Its flags are the configuration schema's keys (each in its
section's group, the chosen protocol's parameters only) plus the deploy backend's connection;
its handler checks the inputs, runs the pipeline (or submits to a SuperLink), records and
prints the result."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ldpgraph.protocols import registry

from .. import schema_static
from ..config import (
    SECTIONS,
    ConfigError,
    RunConfig,
    key_choices,
    key_default,
    key_help,
    key_names,
    section_of,
)
from .errors import UserError, exit_on_interrupt
from .output import stage_printer
from .parser import BoolFlag, HelpFormatter
from .paths import check_cache_writable, check_store
from .run_flags import central_only_parameters, protocol_help

#: Flags left out of the namespace when not given (argparse.SUPPRESS): an explicit ``--seed``
#: makes the run ``seeded``.
_UNSET_UNLESS_GIVEN = ("seed", "seeded")
#: ``run``'s line in ``ldpgraph --help``.
RUN_HELP = "run one experiment"


def add_parser(sub: argparse._SubParsersAction, protocol: str | None = None) -> None:
    """``run``'s parser; ``protocol``: the chosen protocol, whose parameters are its flags."""
    p = sub.add_parser(
        "run",
        help=RUN_HELP,
        description="Collect every node's LDP report, reconstruct a synthetic graph, train a GNN "
        "on it and evaluate on the true test labels; or, with a central-DP strategy, collect "
        "the raw rows of the nodes that trust the curator and release what the mechanism "
        "releases (a model or a graph), scored the same way.",
        formatter_class=HelpFormatter,
    )
    groups = _add_config_flags(p, protocol)
    groups["data"].add_argument(
        "--split",
        type=str,
        default=None,
        help="train/val fractions as 'TRAIN,VAL', e.g. 0.5,0.25 (overrides the two)",
    )
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress output on stderr")
    _add_deploy_flags(p)
    p.add_argument(
        "--store",
        default=None,
        metavar="PATH",
        help="also record the run in this results store (SQLite; see `ldpgraph results`)",
    )


def _add_config_flags(
    p: argparse.ArgumentParser, protocol: str | None
) -> dict[str, argparse._ArgumentGroup]:
    """Every configuration key as a flag, in its section's group; returns the groups. Help and
    choices come from the schema (simulation/config.py) and, for protocol parameters, from the
    registry. Of the protocols' parameters only the chosen protocol's are flags (another's is
    an error)."""
    default_protocol = key_default("protocol")
    params = protocol_help()
    chosen = protocol or default_protocol
    declared = schema_static.protocol_entry(chosen).param_names
    if protocol is None or protocol == default_protocol:
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
    # The chosen protocol's parameters in the order its module declares them, then the rest.
    names = [n for n in ("protocol", "epsilon") if n not in declared] + list(declared)
    names += [n for n in key_names() if section_of(n) != "protocol"]
    for name in names:
        if name not in key_names():  # a declared parameter that is no run key (library use)
            continue
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
            help_ += ": " + ", ".join(schema_static.metric_names())
        group = central if name in central_keys else groups[section_of(name)]
        if name in _UNSET_UNLESS_GIVEN:  # whether the user gave it decides `seeded`
            help_ += " (default: 0)" if name == "seed" else " (default: true iff --seed is given)"
            default = argparse.SUPPRESS
        group.add_argument("--" + name.replace("_", "-"), default=default, help=help_, **extra)
    return groups


def _add_deploy_flags(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("deploy backend (a running SuperLink; see docs/deployment.md)")
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


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The checked configuration of a ``run`` command line."""
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
            values[name] = key_default(name)
    if args.split:
        try:
            train, val = (float(v) for v in args.split.split(","))
        except ValueError:
            raise ConfigError(f"--split must be 'TRAIN,VAL', got {args.split!r}") from None
        values["train_split"], values["val_split"] = train, val
    return RunConfig.from_mapping(values)


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


def _protocol(config: RunConfig) -> Any:
    """The run's one protocol: the one validation built (the pipeline, which imports the
    whole server side, only when there is none)."""
    built = config.built_protocol()
    if built is not None:
        return built
    from ..pipeline import build_protocol

    return build_protocol(config)


def cmd_run(args: argparse.Namespace) -> int:
    """Run (or submit) one experiment, record it if asked, print its summary or JSON."""
    if args.store:  # before the configuration: checking it imports the protocol's module
        check_store(args.store, "--store")
    from ..checks_early import refuse_early

    # An ε no node accepts, reports that cannot fit in memory: refused before the protocol's
    # module (NumPy, SciPy) is imported, where the generated table's figures decide it.
    refuse_early(vars(args), memory=args.backend != "deploy")
    config = config_from_args(args)
    if config.backend != "deploy":
        from ..datasets import check_dataset

        check_dataset(config.dataset)
        check_cache_writable([config.dataset])
        check_device(config.device)
        from ..checks import check_memory

        check_memory(config, _protocol(config))
    if config.backend == "deploy":
        result = _run_deploy(config, args)
    else:
        if args.superlink:
            raise UserError("--superlink is for --backend deploy")
        from ..api import run_record

        if config.backend == "flower":
            exit_on_interrupt()

        # The configuration is validated (config_from_args): the run's one protocol is built
        # here and passed on, not validated and rebuilt by the pipeline. `flower` goes through
        # `flwr run` (Flower's supported runtime), whose ServerApp builds its own.
        result = run_record(
            config,
            stage=stage_printer(args.quiet),
            show_progress=not args.quiet,
            protocol=None if config.backend == "flower" else _protocol(config),
        )
    if args.store:
        from ..results.store import record_run

        record_run(args.store, config, result)
    if args.json:
        from ldpgraph.server.record_json import to_json

        print(to_json(result, indent=2))
    else:
        from ldpgraph.server.record import summary

        print(summary(result))
    warning = collapse_warning(result)
    if warning:
        print(f"ldpgraph: warning: {warning}", file=sys.stderr, flush=True)
    return 0


def collapse_warning(result: dict[str, Any]) -> str | None:
    """What to tell the user when training collapsed onto one class (``training.collapsed``,
    see ldpgraph.server.training.collapse_check), with the settings to try; None otherwise."""
    from ldpgraph.protocols.base import FEATURE_SHARE

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
    if _more_epsilon_helps(name, float(c.get("epsilon", 0.0))):
        tries.append("a larger --epsilon")
    else:  # a central release (or one at the largest ε) has what it has: train differently
        tries.append(f"more epochs (--epochs {2 * int(c.get('epochs', 200))})")
    return (
        f"the model collapsed onto one class: it gives one class to "
        f"{100 * tr.get('top_class_share', 0.0):.0f}% of the test nodes, and its validation "
        f"accuracy {100 * float(acc.get('val', 0.0)):.1f}% is at the majority-class rate "
        f"({100 * tr.get('majority_rate', 0.0):.1f}%); the accuracy says nothing about the "
        f"release. Try {', '.join(tries[:-1])} or {tries[-1]}."
    )


def _more_epsilon_helps(name: str | None, epsilon: float) -> bool:
    """Whether a larger ε is advice worth giving: not for a central strategy (its ε buys
    less noise in what it releases, which need not carry the class signal a node-level model
    needs; e.g. PrivDPR's synthetic graph, Zhang et al. KDD 2025, holds no features), nor at the
    largest ε a run accepts."""
    from ldpgraph.protocols.base import MAX_EPSILON

    if name not in registry.protocol_names():
        return False
    central = bool(getattr(registry.protocol_info(name).resolve(), "raw_upload", False))
    return not central and epsilon < MAX_EPSILON


def _run_deploy(config: RunConfig, args: argparse.Namespace) -> dict[str, Any]:
    from ..backends.deploy import DeployError, submit

    if not args.superlink:
        raise UserError("--backend deploy needs --superlink HOST:PORT")
    say = stage_printer(args.quiet)
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
