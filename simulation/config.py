"""A run's configuration: :class:`RunConfig`, the schema of ``ldpgraph run``'s flags,
``[tool.flwr.app.config]`` and sweep files, and its checks (:meth:`RunConfig.validate`).

Its own keys are fields declared with :func:`~.schema.key` (default, section, help, allowed
values, whether it decides the result); the protocols' parameters and the metrics' settings
are declared once in their modules and derived (:mod:`.schema`). Keys are written with hyphens
on the command line and in TOML (``feature-share``) and with underscores in Python;
:meth:`RunConfig.from_mapping` accepts both, grouped by section or not (``[fixed.train]`` in
an experiment file, ``train.lr`` as Flower flattens a nested table). ``[tool.flwr.app.config]``
stays flat on purpose: Flower refuses a ``--run-config`` override whose key is not in that
table, so nested tables there would break every ``flwr run --run-config "epsilon=4"`` in use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ldpgraph.client.settings import NodeSettings
from ldpgraph.protocols.params import Param, ProtocolParameterError, did_you_mean
from ldpgraph.server.choices import MODELS, SELECTIONS

from .config_checks import check_extras, check_run, check_training
from .schema import (
    SECTIONS,
    ConfigError,
    Derived,
    coerce,
    derived_keys,
    flatten_sections,
    key,
    key_choices,
    key_default,
    key_help,
    key_names,
    key_param,
    keys_in,
    non_result_keys,
    per_protocol_keys,
    register_own_keys,
    section_of,
)
from .splits import SPLIT_MODES

__all__ = [  # the schema's functions are imported from here by the CLI and sweeps
    "AUTO_SUPERNODES", "BACKENDS", "MODELS", "NO_METRICS", "SELECTIONS", "SPLIT_MODES",
    "SECTIONS", "ConfigError", "Derived", "RunConfig", "derived_keys",
    "flatten_sections", "key", "key_choices", "key_default", "key_help", "key_names",
    "key_param", "keys_in", "non_result_keys", "per_protocol_keys", "section_of",
]  # fmt: skip

BACKENDS = ("local", "flower", "deploy")
#: Where the curator's row blocks run (``curator-on``; :mod:`.curator_ray`).
CURATOR_PLACES = ("threads", "ray")
#: ``--metrics none``: release only, measure nothing (e.g. a structure-only dataset, which
#: ``accuracy`` cannot score).
NO_METRICS = "none"
#: With automatic nodes-per-client, the simulation starts at most this many SuperNodes.
AUTO_SUPERNODES = 256


@dataclass(init=False, eq=False, repr=False)
class RunConfig:
    """One run's configuration: the schema of ``ldpgraph run``'s flags, of
    ``[tool.flwr.app.config]`` and of experiment files. Its own keys are fields declared with
    :func:`key`; the protocols' parameters and the metrics' settings are declared where they
    are used and held in :attr:`derived` (the values given; the rest read as their declared
    defaults), flattened to plain keys: ``config.tau``, ``RunConfig(tau=0.5)`` and
    :meth:`to_dict` treat them as the fields they used to be."""

    protocol: str = key("hogs", "protocol")
    model: str = key("gcn", "train", "GNN trained on the release", choices=MODELS)
    lr: float = key(0.01, "train", "Adam learning rate")
    dropout: float = key(0.5, "train", "dropout after the first layer")
    weight_decay: float = key(5e-4, "train", "Adam weight decay")
    epochs: int = key(
        300, "train", "training epochs (the epoch with the best validation accuracy is kept)"
    )
    hidden: int = key(16, "train", "hidden units")
    selection: str = key(
        "val_acc",
        "train",
        "which epoch training keeps, and which configuration a sweep picks: val_acc (highest "
        "validation accuracy, the HoGS protocol) or val_loss (lowest validation loss, "
        "Blink_GNN's protocol)",
        choices=SELECTIONS,
    )
    normalize_features: bool = key(
        False,
        "train",
        "row-normalise the features before training (PyG's NormalizeFeatures, as Blink_GNN "
        "does); server-side post-processing, no budget",
    )
    center_features: bool = key(
        True,
        "train",
        "subtract each feature column's mean before training (keeps dense noisy 1-bit "
        "features from locking the model onto one class); post-processing, no budget; "
        "--no-center-features trains on the release as it is",
        added_with=False,  # stored runs before the key existed trained uncentred
    )
    seed: int = key(
        0,
        "run",
        "run seed: the split, the hidden edges, training and the simulated nodes' streams "
        "derive from it (a central release's noise too when seeded)",
    )
    seeded: bool = key(
        False,
        "run",
        "a central release's noise and sampling derive from the seed too (replayable: not a "
        "private release); off: they are drawn from OS entropy at release time and never "
        "written. On by default when --seed is given and in experiment files",
        added_with=True,  # every run before the key existed drew its central noise from the seed
    )
    dataset: str = key(
        "cora",
        "data",
        "dataset name (see `ldpgraph datasets`), or a synthetic spec such as "
        "'synthetic:n=2000,classes=4,homophily=0.9'",
    )
    train_split: float = key(0.5, "data", "fraction of nodes for training")
    val_split: float = key(
        0.25, "data", "fraction of nodes for validation (the rest is the test set)"
    )
    split_mode: str = key(
        "seeded",
        "data",
        "seeded: a split drawn from the run seed; blinkgnn: Blink_GNN's one fixed split "
        "(scikit-learn's train_test_split with random_state=42), as its published numbers used; "
        "metis: DPAR's reference split, the last of 1/(1 - train-split) METIS parts held out "
        "(fixed for every seed; the seed divides it into validation and test)",
        choices=SPLIT_MODES,
    )
    data_root: str = key(
        "",
        "data",
        "offline dataset mirror (default: $LDPGRAPH_DATA, else download)",
        result=False,
    )
    backend: str = key(
        "flower", "run", "how reports are collected: " + ", ".join(BACKENDS),
        choices=BACKENDS, result=False,
    )  # fmt: skip
    device: str = key(
        "auto", "run", "device of HoGS's reconstruction and of training: auto, cpu, cuda",
        result=False,
    )  # fmt: skip
    nodes_per_client: int = key(
        0,
        "run",
        "logical node-clients per simulated SuperNode (0: automatic, at most 256 SuperNodes)",
        result=False,
    )
    ray_actors: int = key(
        0, "run", "Ray actors running ClientApps (0: one per CPU core)", result=False
    )
    ray_cpus_per_actor: float = key(1.0, "run", "CPUs Ray reserves per actor", result=False)
    ray_address: str = key(
        "",
        "run",
        "join an existing Ray cluster at this address instead of starting Ray",
        result=False,
    )
    curator_on: str = key(
        "threads",
        "run",
        "where the curator's row blocks (HoGS's posterior, similarity join and feature "
        "reconstruction) run: threads (this process's cores) or ray (Ray tasks on "
        "--ray-address / $RAY_ADDRESS, else on a local Ray the run starts); same edges",
        choices=CURATOR_PLACES,
        result=False,
    )
    node_budget: float = key(
        0.0,
        "nodes",
        "each node's privacy budget ε (0: the run's epsilon); a node refuses rounds that would "
        "exceed it",
    )
    node_unit: str = key(
        "per-bit",
        "nodes",
        "the unit each simulated node counts its budget in: per-bit (a round costs its ε) or "
        "per-vector ((n−1)·ε per adjacency bit + d·ε_f: the whole row and feature vector; a "
        "deployed SuperNode's default)",
        choices=("per-bit", "per-vector"),
        added_with="per-bit",  # nodes counted per bit before they could count per vector
    )
    trust_curator: bool = key(
        False, "nodes", "nodes trust the curator with raw data (needed by --protocol none)"
    )
    wait_timeout: float = key(
        120.0, "run", "seconds to wait for the SuperNodes to connect", result=False
    )
    round_timeout: float = key(
        600.0, "run", "seconds to wait for the replies of a round", result=False
    )
    run_dir: str = key(
        "",
        "run",
        "where Flower and Ray write state and temp files (default: a fresh temp dir, removed "
        "at the end)",
        result=False,
    )
    # In a deployment the curator file holds the graph: it decides the result.
    curator: str = key(
        "",
        "run",
        "deploy: the curator file written by `ldpgraph partition` (a path on the SuperLink's "
        "machine); the server reads nothing else",
    )
    metrics: str = key(
        "accuracy",
        "metrics",
        "what to measure on the release, comma-separated, or all; none: measure nothing (the "
        "release and its privacy report only); on a generated collection (dpggan, dpgvae) "
        "graph means collection (Tables 1-2 against the originals)",
        added_with="accuracy",
    )
    #: The protocol parameters and metric settings given (by key); the others are their
    #: declared defaults (:func:`derived_keys`).
    derived: dict[str, Any] = field(default_factory=dict, metadata={"section": None})

    def __init__(
        self, protocol: str = "hogs", *, derived: Mapping[str, Any] | None = None, **values: Any
    ) -> None:
        object.__setattr__(self, "protocol", protocol)
        for name, f in _OWN_FIELDS.items():
            if name != "protocol":
                object.__setattr__(self, name, values.pop(name, f.default))
        object.__setattr__(self, "derived", dict(derived or {}))
        if values:
            known = derived_keys()
            for name, value in values.items():
                if name not in known:
                    hint = did_you_mean(name, [*_OWN_FIELDS, *known])
                    raise TypeError(
                        f"RunConfig() got an unexpected keyword argument {name!r}{hint}"
                    )
                self.derived[name] = value

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are no field: a protocol parameter or metric setting.
        if name.startswith("__") or name == "derived":
            raise AttributeError(name)
        decl = derived_keys().get(name)
        if decl is None:
            raise AttributeError(f"'RunConfig' object has no attribute {name!r}")
        return self.__dict__.get("derived", {}).get(name, decl.param.default)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _OWN_FIELDS or name == "derived" or name not in derived_keys():
            object.__setattr__(self, name, value)
        else:
            self.derived[name] = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunConfig):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __getstate__(self) -> dict[str, Any]:
        # The protocol validate() built stays in this process (sweep units, Ray tasks and
        # node processes pickle configurations, not protocols).
        return {k: v for k, v in self.__dict__.items() if k != "_built"}

    def built_protocol(self) -> Any:
        """The protocol :meth:`validate` built, while the configuration still names it with the
        same parameters; else None."""
        built = self.__dict__.get("_built")
        if built and built[0] == self.protocol and built[1] == self.protocol_params():
            return built[2]
        return None

    def __repr__(self) -> str:
        given = {k: v for k, v in self.to_dict().items() if v != key_default(k)}
        return "RunConfig(" + ", ".join(f"{k}={v!r}" for k, v in given.items()) + ")"

    def validate(self) -> RunConfig:
        """This configuration, checked against every declaration (raising :class:`ConfigError`,
        one line), with the chosen protocol's own defaults filled in where the key stands
        for them."""
        from ldpgraph.protocols.base import MAX_EPSILON
        from ldpgraph.protocols.registry import UnknownProtocolError, make_protocol, protocol_info

        try:
            declared = {p.name: p for p in protocol_info(self.protocol).params}
        except UnknownProtocolError as exc:
            raise ConfigError(str(exc)) from None
        self._check_declared(_OWN_DECLS, "")
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
        for name, decl in derived_keys().items():
            if decl.per_protocol and name in declared and getattr(self, name) == decl.param.default:
                setattr(self, name, declared[name].default)
        self._check_declared(declared, self.protocol)
        params = self.protocol_params()
        try:
            protocol = make_protocol(self.protocol, **params)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        # The run uses this very protocol (pipeline.build_protocol) while its parameters stay
        # as checked here: a run builds its protocol once (DPGGAN's build alone takes ~1 s).
        object.__setattr__(self, "_built", (self.protocol, params, protocol))
        check_training(self)
        check_run(self)
        self._check_declared(
            {n: d.param for n, d in derived_keys().items() if d.section == "metrics"}, ""
        )
        if self.metrics.strip() != NO_METRICS:
            from ldpgraph.server.evaluation import UnknownMetricError, resolve_metrics

            try:
                self.metrics = ",".join(resolve_metrics(self.metrics))
            except UnknownMetricError as exc:
                raise ConfigError(f"{exc} (or {NO_METRICS})") from None
        else:
            self.metrics = NO_METRICS
        check_extras(self)
        if protocol.raw_upload and not self.trust_curator and self.backend != "deploy":
            raise ConfigError(
                f"protocol {self.protocol!r} uploads raw data and nodes refuse unless they "
                "trust the curator: add --trust-curator"
            )
        return self

    def _check_declared(self, decls: Mapping[str, Param], protocol: str) -> None:
        """Each key of ``decls`` this configuration holds against its declaration (type,
        range, choices): ``protocol`` names the protocol whose parameters they are, or is
        empty for run keys and metric settings."""
        for name, decl in decls.items():
            if name not in _OWN_FIELDS and name not in derived_keys():
                continue  # a library-only parameter: its declared default
            if name in _OWN_FIELDS and decl.choices is None:
                continue  # run keys: their ranges are checked below, with their reasons
            try:
                decl.check(protocol, getattr(self, name), name.replace("_", "-"))
            except ProtocolParameterError as exc:
                raise ConfigError(str(exc)) from None

    def metric_names(self) -> tuple[str, ...]:
        """The chosen metrics (none for ``--metrics none``)."""
        if self.metrics.strip() == NO_METRICS:
            return ()
        from ldpgraph.server.evaluation import resolve_metrics

        return resolve_metrics(self.metrics)

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
        return NodeSettings(
            budget=self.budget,
            trust_curator=self.trust_curator,
            seed=self.seed,
            unit=self.node_unit,
        )

    def protocol_params(self) -> dict[str, Any]:
        """The chosen protocol's declared parameters, from this configuration. A parameter
        that is no run-configuration key (hogs-kprop's kprop_norm, Blink's variant: library
        use only) keeps its declared default."""
        from ldpgraph.protocols.registry import protocol_info

        keys = derived_keys()
        declared = protocol_info(self.protocol).param_names
        return {name: getattr(self, name) for name in declared if name in keys}

    def to_dict(self) -> dict[str, Any]:
        """Every key (underscore form) with its value, in schema order (:func:`key_names`)."""
        return {name: getattr(self, name) for name in key_names()}

    def to_flwr(self) -> dict[str, Any]:
        """The same keys, hyphenated, as Flower's run config wants them."""
        return {k.replace("_", "-"): v for k, v in self.to_dict().items()}

    def sections(self) -> dict[str, dict[str, Any]]:
        """This configuration by section, keys hyphenated as in TOML; the protocol section
        holds the protocol's name, ε and the chosen protocol's parameters only."""
        out: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        used = {"protocol", "epsilon", *self.protocol_params()}
        for name in key_names():
            section = section_of(name)
            if section == "protocol" and name not in used:
                continue
            out[section][name.replace("_", "-")] = getattr(self, name)
        return out

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> RunConfig:
        """A checked configuration from flat keys (``feature-share`` or ``feature_share``),
        section tables (``{"train": {"lr": 0.1}}``) or dotted keys (``train.lr``, as Flower
        flattens nested TOML tables)."""
        kwargs = {
            raw.replace("-", "_"): coerce(raw, v) for raw, v in flatten_sections(values).items()
        }
        return cls(**kwargs).validate()


def _finite_positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ConfigError(f"{name} must be a finite number > 0, got {value}")


_OWN_FIELDS = {f.name: f for f in fields(RunConfig) if f.name != "derived"}
_OWN_DECLS = {name: f.metadata["decl"].but(name=name) for name, f in _OWN_FIELDS.items()}
register_own_keys(_OWN_FIELDS, _OWN_DECLS)
