"""The checks of a run configuration's own keys that need more than their declarations (which
:meth:`~ldpgraph.simulation.config.RunConfig.validate` applies first): the split, the trainer's
bounds, where and how the run executes, and the optional dependencies it needs. Each raises
:class:`~ldpgraph.simulation.schema.ConfigError` with a one-line message."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from .schema import ConfigError

if TYPE_CHECKING:
    from .config import RunConfig

#: Sanity bounds on the model and its training (far above anything useful on these graphs).
MAX_EPOCHS = 100_000
MAX_HIDDEN = 16_384
#: Devices of the curator's reconstruction (HoGS) and of training: auto (the GPU when there is
#: one), cpu, cuda or cuda:N.
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")


def check_training(cfg: RunConfig) -> None:
    """The split and the trainer's settings."""
    for name in ("train_split", "val_split"):
        v = getattr(cfg, name)
        if not (isinstance(v, int | float) and 0.0 <= v <= 1.0):
            raise ConfigError(f"{name.replace('_', '-')} must be in [0, 1], got {v}")
    if cfg.train_split + cfg.val_split > 1.0 + 1e-12:
        raise ConfigError("train-split + val-split must not exceed 1")
    if not (cfg.train_split > 0 and cfg.val_split > 0):
        raise ConfigError(
            f"train-split and val-split must be > 0 (training needs nodes to learn from "
            f"and validation nodes to select its epoch), got {cfg.train_split}, "
            f"{cfg.val_split}"
        )
    if cfg.train_split + cfg.val_split >= 1.0 - 1e-12:
        raise ConfigError(
            f"train-split + val-split must be below 1: the rest is the test set, and "
            f"{cfg.train_split} + {cfg.val_split} leaves none"
        )
    if not 0.0 <= cfg.dropout < 1.0:
        raise ConfigError(f"dropout must be in [0, 1), got {cfg.dropout}")
    if cfg.weight_decay < 0 or not math.isfinite(cfg.weight_decay):
        raise ConfigError(f"weight-decay must be >= 0, got {cfg.weight_decay}")
    for name, most in (("epochs", MAX_EPOCHS), ("hidden", MAX_HIDDEN)):
        if int(getattr(cfg, name)) < 1:
            raise ConfigError(f"{name} must be >= 1")
        if int(getattr(cfg, name)) > most:
            raise ConfigError(f"{name} must be at most {most}, got {getattr(cfg, name)}")
    if not DEVICE_PATTERN.fullmatch(cfg.device):
        raise ConfigError(
            f"unknown device {cfg.device!r}; choose auto (the GPU when there is one), cpu, "
            "cuda or cuda:N"
        )
    if cfg.split_mode == "metis":
        from .splits import metis_parts

        try:
            metis_parts(cfg.train_split)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def check_run(cfg: RunConfig) -> None:
    """Where and how the run executes."""
    if cfg.seed < 0:
        raise ConfigError(f"seed must be >= 0, got {cfg.seed}")
    if cfg.nodes_per_client < 0:
        raise ConfigError("nodes-per-client must be >= 1 (or 0 for automatic)")
    if cfg.ray_actors < 0 or not cfg.ray_cpus_per_actor > 0:
        raise ConfigError("ray-actors must be >= 0 and ray-cpus-per-actor > 0")
    if cfg.node_budget < 0 or not math.isfinite(cfg.node_budget):
        raise ConfigError("node-budget must be a finite number >= 0 (0: the run's epsilon)")
    if not (cfg.wait_timeout > 0 and cfg.round_timeout > 0):
        raise ConfigError("wait-timeout and round-timeout must be > 0")
    if cfg.backend == "deploy" and not cfg.curator:
        raise ConfigError(
            "the deploy backend runs from a curator file: add --curator PATH (written by "
            "`ldpgraph partition`, on the SuperLink's machine)"
        )
    if cfg.curator and cfg.backend != "deploy":
        raise ConfigError("--curator is for --backend deploy")
    check_charges(cfg)


def check_charges(cfg: RunConfig) -> None:
    """Refuse an ε so small that every node would refuse a round: a node accepts no charge
    below :data:`~ldpgraph.client.refusals.MIN_CHARGE` (its spend could vanish in a
    floating-point sum), so such a run would fail after collection blaming the nodes' budgets.
    A round's charge (its ε, the sum of its parts: RR bit and feature coordinate for a
    split-budget protocol) scales with the run's ε, which gives the smallest usable one."""
    from ldpgraph.client.refusals import MIN_CHARGE
    from ldpgraph.client.units import PER_BIT

    protocol = cfg.built_protocol()
    # A raw upload to a trusted curator is not charged; a per-vector node is charged at least
    # the per-bit figure ((n - 1) adjacency bits and d features), which needs the graph.
    if protocol is None or protocol.raw_upload or cfg.node_unit != PER_BIT:
        return
    charges = [float(protocol.round_epsilon(r)) for r in range(int(protocol.rounds))]
    r = min(range(len(charges)), key=charges.__getitem__)
    if charges[r] >= MIN_CHARGE:
        return
    least = cfg.epsilon * MIN_CHARGE / charges[r] if charges[r] > 0 else math.inf
    raise ConfigError(
        f"epsilon {cfg.epsilon:g} is too small for {cfg.protocol!r}: its round {r} would charge "
        f"each node ε {charges[r]:.3g}, below the smallest charge a node accepts "
        f"({MIN_CHARGE:g}: a smaller spend could vanish in a floating-point sum), so every "
        f"node would refuse it; use --epsilon {least:.3g} or more"
    )


def check_extras(cfg: RunConfig) -> None:
    """Refuse before any work when an optional dependency this run needs is missing,
    naming the extra that brings it."""
    from .extras import MissingExtraError, require_extra

    needed = []
    if cfg.backend in ("flower", "deploy"):
        needed.append("flwr")
    if cfg.ray_address or cfg.curator_on == "ray":
        needed.append("ray")
    if cfg.split_mode == "metis":
        needed.append("pymetis")
    for module in needed:
        try:
            require_extra(module)
        except MissingExtraError as exc:
            local = " (or --backend local)" if module == "flwr" else ""
            raise ConfigError(f"{exc}{local}") from None
