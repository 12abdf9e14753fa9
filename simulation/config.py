"""One configuration schema for ``ldpgraph run``, ``[tool.flwr.app.config]`` and sweep files.

Keys are written with hyphens on the command line and in TOML (``feature-share``) and with
underscores in Python; :meth:`RunConfig.from_mapping` accepts both.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from ldpgraph.client.budget import NodeSettings
from ldpgraph.protocols.base import EPSILON, FEATURE_SHARE, MAX_EPSILON, STEPS
from ldpgraph.protocols.ldp.blink import DEGREE_SHARE, MIN_WEIGHT, SHARE1, SHARE2
from ldpgraph.protocols.ldp.hogs import TAU
from ldpgraph.protocols.ldp.hogs_kprop import KPROP_K
from ldpgraph.protocols.ldp.ldpgen import GENERATOR, K0, K1, PHASE_SHARE
from ldpgraph.protocols.ldp.rr import COMBINE_PARAM
from ldpgraph.protocols.ldp.solitude import LX, LY
from ldpgraph.protocols.registry import UnknownProtocolError, make_protocol, protocol_info
from ldpgraph.server.choices import MODELS, SELECTIONS
from ldpgraph.server.evaluation import UnknownMetricError, resolve_metrics

from .splits import SPLIT_MODES

BACKENDS = ("local", "flower", "deploy")
#: With automatic nodes-per-client, the simulation starts at most this many SuperNodes.
AUTO_SUPERNODES = 256
#: Sanity bounds on the model and its training (far above anything useful on these graphs).
MAX_EPOCHS = 100_000
MAX_HIDDEN = 16_384
#: Training devices: auto (the GPU when there is one), cpu, cuda or cuda:N.
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")


class ConfigError(ValueError):
    """A bad run configuration; the message is meant for the user, one line."""


@dataclass
class RunConfig:
    protocol: str = "hogs"
    dataset: str = "cora"
    # The protocols' parameters: one field per name, the default where the protocol declares
    # it. feature-share and center-features used to default to 0.5 and off, which collapsed
    # to the majority class at ε <= 6 (results stores keep each run's full configuration, so
    # stored runs keep their identity: simulation/store.py).
    epsilon: float = EPSILON.default
    feature_share: float = FEATURE_SHARE.default
    tau: float = TAU.default
    steps: int = STEPS.default
    degree_share: float = DEGREE_SHARE.default
    share1: float = SHARE1.default
    share2: float = SHARE2.default
    min_weight: float = MIN_WEIGHT.default
    combine: str = COMBINE_PARAM.default
    kprop_k: int = KPROP_K.default
    lx: int = LX.default
    ly: int = LY.default
    k0: int = K0.default
    k1: int = K1.default
    phase_share: float = PHASE_SHARE.default
    generator: str = GENERATOR.default
    model: str = "gcn"
    lr: float = 0.01
    dropout: float = 0.5
    weight_decay: float = 5e-4
    epochs: int = 300
    hidden: int = 16
    selection: str = "val_acc"
    normalize_features: bool = False
    center_features: bool = True
    seed: int = 0
    train_split: float = 0.5
    val_split: float = 0.25
    split_mode: str = "seeded"
    data_root: str = ""
    backend: str = "flower"
    device: str = "auto"
    nodes_per_client: int = 0
    ray_actors: int = 0
    ray_cpus_per_actor: float = 1.0
    ray_address: str = ""
    node_budget: float = 0.0
    trust_curator: bool = False
    wait_timeout: float = 120.0
    round_timeout: float = 600.0
    run_dir: str = ""
    curator: str = ""
    metrics: str = "accuracy"

    def validate(self) -> RunConfig:
        try:
            protocol_info(self.protocol)
        except UnknownProtocolError as exc:
            raise ConfigError(str(exc)) from None
        if self.model not in MODELS:
            raise ConfigError(f"unknown model {self.model!r}; choose one of: {', '.join(MODELS)}")
        if self.backend not in BACKENDS:
            raise ConfigError(
                f"unknown backend {self.backend!r}; choose one of: {', '.join(BACKENDS)}"
            )
        _finite_positive("epsilon", self.epsilon)
        if self.epsilon > MAX_EPSILON:
            raise ConfigError(
                f"epsilon must be at most {MAX_EPSILON:g}, got {self.epsilon:g}: from ε ≈ 40 on "
                "the mechanisms add no noise at all (a bit flips with probability e^-ε); for "
                "the non-private bound use --protocol none --trust-curator"
            )
        _finite_positive("lr", self.lr)
        # The chosen protocol's parameters against its declarations, then the budget splits it
        # can serve; the other protocols' keys are not used by this run.
        params = self.protocol_params()
        try:
            for param in protocol_info(self.protocol).params:
                if param.name in params:
                    param.check(self.protocol, params[param.name], param.name.replace("_", "-"))
            protocol = make_protocol(self.protocol, **params)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        for name in ("train_split", "val_split"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and 0.0 <= v <= 1.0):
                raise ConfigError(f"{name.replace('_', '-')} must be in [0, 1], got {v}")
        if self.train_split + self.val_split > 1.0 + 1e-12:
            raise ConfigError("train-split + val-split must not exceed 1")
        if not (self.train_split > 0 and self.val_split > 0):
            raise ConfigError(
                f"train-split and val-split must be > 0 (training needs nodes to learn from "
                f"and validation nodes to select its epoch), got {self.train_split}, "
                f"{self.val_split}"
            )
        if self.train_split + self.val_split >= 1.0 - 1e-12:
            raise ConfigError(
                f"train-split + val-split must be below 1: the rest is the test set, and "
                f"{self.train_split} + {self.val_split} leaves none"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.weight_decay < 0 or not math.isfinite(self.weight_decay):
            raise ConfigError(f"weight-decay must be >= 0, got {self.weight_decay}")
        for name, most in (("epochs", MAX_EPOCHS), ("hidden", MAX_HIDDEN)):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1")
            if int(getattr(self, name)) > most:
                raise ConfigError(f"{name} must be at most {most}, got {getattr(self, name)}")
        if not DEVICE_PATTERN.fullmatch(self.device):
            raise ConfigError(
                f"unknown device {self.device!r}; choose auto (the GPU when there is one), cpu, "
                "cuda or cuda:N"
            )
        if self.split_mode not in SPLIT_MODES:
            raise ConfigError(
                f"unknown split-mode {self.split_mode!r}; choose one of: {', '.join(SPLIT_MODES)}"
            )
        if self.selection not in SELECTIONS:
            raise ConfigError(
                f"unknown selection {self.selection!r}; choose one of: {', '.join(SELECTIONS)}"
            )
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        if self.nodes_per_client < 0:
            raise ConfigError("nodes-per-client must be >= 1 (or 0 for automatic)")
        if self.ray_actors < 0 or not self.ray_cpus_per_actor > 0:
            raise ConfigError("ray-actors must be >= 0 and ray-cpus-per-actor > 0")
        if self.node_budget < 0 or not math.isfinite(self.node_budget):
            raise ConfigError("node-budget must be a finite number >= 0 (0: the run's epsilon)")
        if not (self.wait_timeout > 0 and self.round_timeout > 0):
            raise ConfigError("wait-timeout and round-timeout must be > 0")
        if self.backend == "deploy" and not self.curator:
            raise ConfigError(
                "the deploy backend runs from a curator file: add --curator PATH (written by "
                "`ldpgraph partition`, on the SuperLink's machine)"
            )
        if self.curator and self.backend != "deploy":
            raise ConfigError("--curator is for --backend deploy")
        try:
            self.metrics = ",".join(resolve_metrics(self.metrics))
        except UnknownMetricError as exc:
            raise ConfigError(str(exc)) from None
        if protocol.raw_upload and not self.trust_curator and self.backend != "deploy":
            raise ConfigError(
                f"protocol {self.protocol!r} uploads raw data and nodes refuse unless they "
                "trust the curator: add --trust-curator"
            )
        return self

    def resolved_nodes_per_client(self, num_nodes: int) -> int:
        """k given, or automatic: at most AUTO_SUPERNODES SuperNodes."""
        if self.nodes_per_client > 0:
            return self.nodes_per_client
        return max(1, math.ceil(num_nodes / AUTO_SUPERNODES))

    @property
    def budget(self) -> float:
        """Each simulated node's budget: node-budget, or the run's epsilon."""
        return self.node_budget if self.node_budget > 0 else self.epsilon

    def node_settings(self) -> NodeSettings:
        """The settings the simulation harness gives every node it plays (its own
        configuration: budget, consent and a reproducible seed). A deployed node ignores all
        three: its settings come from its SuperNode's --node-config."""
        return NodeSettings(budget=self.budget, trust_curator=self.trust_curator, seed=self.seed)

    def protocol_params(self) -> dict[str, Any]:
        """The chosen protocol's declared parameters, from this configuration. A parameter
        that is no run-configuration key (hogs-kprop's kprop_norm, Blink's variant: library
        use only) keeps its declared default."""
        keys = {f.name for f in fields(self)}
        declared = protocol_info(self.protocol).param_names
        return {name: getattr(self, name) for name in declared if name in keys}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_flwr(self) -> dict[str, Any]:
        """The same keys, hyphenated, as Flower's run config wants them."""
        return {k.replace("_", "-"): v for k, v in asdict(self).items()}

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> RunConfig:
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
            name = key.replace("-", "_")
            if name not in known:
                raise ConfigError(f"unknown configuration key {key!r}")
            kind = type(getattr(cls(), name))
            if kind is bool:
                if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
                    value = value.lower() in ("true", "1")
                if not isinstance(value, bool):
                    raise ConfigError(f"{key} must be true or false, got {value!r}")
                kwargs[name] = value
                continue
            try:
                if kind is int and isinstance(value, float) and not value.is_integer():
                    raise ValueError
                kwargs[name] = kind(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{key} must be of type {kind.__name__}, got {value!r}") from None
        return cls(**kwargs).validate()


def _finite_positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ConfigError(f"{name} must be a finite number > 0, got {value}")
