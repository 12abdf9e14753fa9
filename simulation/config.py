"""One configuration schema for ``ldpgraph run``, ``[tool.flwr.app.config]`` and sweep files.

Every key is a field of :class:`RunConfig` declared with :func:`key`: its default, its section
(:data:`SECTIONS`: data, protocol, train, nodes, metrics, run), its help, its allowed values and
whether it decides the result. From these come ``ldpgraph run``'s flags (one help group per
section), the run identity's left-out keys (:mod:`ldpgraph.simulation.results.identity`) and
the checks of experiment files; protocol parameters take their help and ranges from the
protocol registry.

Keys are written with hyphens on the command line and in TOML (``feature-share``) and with
underscores in Python; :meth:`RunConfig.from_mapping` accepts both, and accepts them grouped by
section (``[fixed.train]`` in an experiment file, ``train.lr`` as Flower flattens a nested
table). ``[tool.flwr.app.config]`` stays flat on purpose: Flower refuses a ``--run-config``
override whose key is not in that table, so nested tables there would break every
``flwr run --run-config "epsilon=4"`` in use (the overrides would have to be ``protocol.epsilon``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ldpgraph.client.budget import NodeSettings
from ldpgraph.protocols.base import EPSILON, FEATURE_SHARE, MAX_EPSILON, STEPS
from ldpgraph.protocols.central.baselines import EDGE_RATIO
from ldpgraph.protocols.central.dpar import (
    ACCOUNTANT_PARAM,
    APPR_NODES,
    BATCH_SIZE,
    CLIP_EM,
    CLIP_GM,
    COLUMN_MODE,
    COLUMN_ROWS_CAP,
    COLUMN_TAU,
    DELTA_PR_SHARE,
    EM1_VALUE_SHARE,
    FEATURES_INFERENCE,
    INFERENCE_STEPS,
    ISTA_GAMMA,
    ISTA_RHO,
    MLP_DROPOUT,
    MLP_HIDDEN,
    NODE_SAMPLING,
    NON_APPR_ROWS,
    PPR_ALPHA,
    PR_SHARE,
    Q_PRIME,
    SGD_CLIP,
    SGD_EPOCHS,
    SGD_LR,
    SGD_SENSITIVITY,
    TOP_K,
)
from ldpgraph.protocols.central.dpggan import (
    DPG_CALIBRATION,
    DPG_CLIP,
    DPG_CLIP_DECAY,
    DPG_EDGE_COUNT_SHARE,
    DPG_EDGE_SELECTION,
    DPG_GENERATION,
    DPG_LAMBDA1,
    DPG_LAMBDA2,
    DPG_LR,
    DPG_POS_WEIGHT,
    DPG_Q,
    DPG_SENSITIVITY_MULTIPLIER,
    DPG_SIGMA,
    DPG_STEPS,
)
from ldpgraph.protocols.central.ppgsl import (
    PPGSL_ALPHA,
    PPGSL_ATTACK_EPOCHS,
    PPGSL_ATTACK_LR,
    PPGSL_EPOCHS,
    PPGSL_FGP,
    PPGSL_K,
    PPGSL_LR,
    PPGSL_MU,
    PPGSL_PRIV_REDUCTION,
    SENSITIVE_SHARE,
)
from ldpgraph.protocols.central.privdpr import (
    DAMPING,
    DPR_DIAGNOSTICS,
    DPR_DIM,
    DPR_EPOCHS,
    DPR_FEATURES,
    DPR_HIDDEN,
    DPR_LR,
    DPR_NODE_BATCH,
    DPR_WALK_LENGTH,
    DPR_WALKS,
    EDGE_BUDGET_DIVISOR,
    FIRST_STAGE,
    NOISE_CALIBRATION,
    PRESET_SENSITIVITY,
    STRICT_SENSITIVITY,
    SYMMETRIZE,
    WN_SCALE,
)
from ldpgraph.protocols.ldp.blink import DEGREE_SHARE, MIN_WEIGHT, SHARE1, SHARE2
from ldpgraph.protocols.ldp.consistency import CONSISTENCY_ALPHA
from ldpgraph.protocols.ldp.hogs import TAU
from ldpgraph.protocols.ldp.hogs_arr import MU, REPORT_CAP
from ldpgraph.protocols.ldp.hogs_kprop import KPROP_K
from ldpgraph.protocols.ldp.ldpgen import GENERATOR, K0, K1, PHASE_SHARE
from ldpgraph.protocols.ldp.rr import COMBINE_PARAM
from ldpgraph.protocols.ldp.solitude import LX, LY
from ldpgraph.protocols.params import did_you_mean
from ldpgraph.protocols.registry import UnknownProtocolError, make_protocol, protocol_info
from ldpgraph.server.choices import MODELS, SELECTIONS
from ldpgraph.server.evaluation import UnknownMetricError, resolve_metrics
from ldpgraph.server.evaluation.collection import DEFAULT_MOTIF_LIMIT as COLLECTION_MOTIF_LIMIT
from ldpgraph.server.evaluation.gin import DEFAULT_EPOCHS as GIN_EPOCHS
from ldpgraph.server.evaluation.gin import DEFAULT_HIDDEN as GIN_HIDDEN
from ldpgraph.server.evaluation.gin import DEFAULT_LAYERS as GIN_LAYERS
from ldpgraph.server.evaluation.graph import DEFAULT_EXACT_LIMIT as GRAPH_EXACT_LIMIT
from ldpgraph.server.evaluation.graph import DEFAULT_SAMPLE_SOURCES as GRAPH_SAMPLE_SOURCES

from .splits import SPLIT_MODES

BACKENDS = ("local", "flower", "deploy")
#: ``--metrics none``: release only, measure nothing (e.g. a structure-only dataset, which
#: ``accuracy`` cannot score).
NO_METRICS = "none"
#: With automatic nodes-per-client, the simulation starts at most this many SuperNodes.
AUTO_SUPERNODES = 256
#: Sanity bounds on the model and its training (far above anything useful on these graphs).
MAX_EPOCHS = 100_000
MAX_HIDDEN = 16_384
#: Devices of the curator's reconstruction (HoGS) and of training: auto (the GPU when there is
#: one), cpu, cuda or cuda:N.
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")


class ConfigError(ValueError):
    """A bad run configuration; the message is meant for the user, one line."""


#: The configuration's sections, in the order ``ldpgraph run --help`` shows them. ``data``,
#: ``protocol`` (only the chosen protocol's parameters count), ``train``, ``nodes`` (the
#: settings the harness gives every simulated node as its own) and ``metrics`` decide a run's
#: result; ``run`` says where and how it executes (the seed, which it also holds, decides the
#: result too).
SECTIONS: dict[str, str] = {
    "data": "data: the graph and its split",
    "protocol": "protocol: the privacy mechanism and its parameters",
    "train": "train: the model trained on the release (server-side post-processing)",
    "nodes": "nodes: what every simulated node configures for itself (simulation only)",
    "metrics": "metrics: what is measured on the release",
    "run": "run: where and how the run executes",
}


def key(
    default: Any,
    section: str,
    help: str = "",
    *,
    choices: tuple[str, ...] | None = None,
    result: bool = True,
) -> Any:
    """A configuration key: its default, section, help, allowed values and whether it
    decides the run's result (a key that only says where or how a run executes is left out
    of the run's identity, :mod:`ldpgraph.simulation.results.identity`)."""
    if section not in SECTIONS:
        raise ValueError(f"unknown section {section!r}")
    meta = {"section": section, "help": help, "choices": choices, "result": result}
    return field(default=default, metadata=meta)


def _param(default: Any) -> Any:
    """A protocol parameter: its help, range and users come from the protocol registry."""
    return key(default, "protocol")


@dataclass
class RunConfig:
    """One run's configuration: the schema of ``ldpgraph run``'s flags, of
    ``[tool.flwr.app.config]`` and of experiment files. Each field is a :func:`key` with
    its section and help."""

    protocol: str = _param("hogs")
    # The protocols' parameters: one field per name, the default where the protocol declares
    # it. feature-share and center-features used to default to 0.5 and off, which collapsed
    # to the majority class at ε <= 6 (results stores keep each run's full configuration, so
    # stored runs keep their identity: simulation/results/identity.py).
    epsilon: float = _param(EPSILON.default)
    feature_share: float = _param(FEATURE_SHARE.default)
    tau: float = _param(TAU.default)
    steps: int = _param(STEPS.default)
    mu: float = _param(MU.default)
    report_cap: float = _param(REPORT_CAP.default)
    degree_share: float = _param(DEGREE_SHARE.default)
    share1: float = _param(SHARE1.default)
    share2: float = _param(SHARE2.default)
    min_weight: float = _param(MIN_WEIGHT.default)
    combine: str = _param(COMBINE_PARAM.default)
    consistency_alpha: float = _param(CONSISTENCY_ALPHA.default)
    kprop_k: int = _param(KPROP_K.default)
    lx: int = _param(LX.default)
    ly: int = _param(LY.default)
    k0: int = _param(K0.default)
    k1: int = _param(K1.default)
    phase_share: float = _param(PHASE_SHARE.default)
    generator: str = _param(GENERATOR.default)
    # DPAR (central DP, protocols/central/dpar.py)
    # 0: the chosen protocol's own default δ (DPAR 2e-3, PrivDPR 1e-5), resolved in validate.
    delta: float = _param(0.0)
    # "": the chosen central strategy's own default (resolved in validate, as δ's 0 is).
    epsilon_convention: str = _param("")
    pr_share: float = _param(PR_SHARE.default)
    delta_pr_share: float = _param(DELTA_PR_SHARE.default)
    em1_value_share: float = _param(EM1_VALUE_SHARE.default)
    q_prime: float = _param(Q_PRIME.default)
    node_sampling: str = _param(NODE_SAMPLING.default)
    appr_nodes: int = _param(APPR_NODES.default)
    top_k: int = _param(TOP_K.default)
    ppr_alpha: float = _param(PPR_ALPHA.default)
    ista_rho: float = _param(ISTA_RHO.default)
    ista_gamma: float = _param(ISTA_GAMMA.default)
    clip_gm: float = _param(CLIP_GM.default)
    clip_em: float = _param(CLIP_EM.default)
    column_tau: float = _param(COLUMN_TAU.default)
    column_mode: str = _param(COLUMN_MODE.default)
    non_appr_rows: str = _param(NON_APPR_ROWS.default)
    sgd_clip: float = _param(SGD_CLIP.default)
    sgd_lr: float = _param(SGD_LR.default)
    sgd_epochs: int = _param(SGD_EPOCHS.default)
    batch_size: int = _param(BATCH_SIZE.default)
    mlp_hidden: int = _param(MLP_HIDDEN.default)
    mlp_dropout: float = _param(MLP_DROPOUT.default)
    inference_steps: int = _param(INFERENCE_STEPS.default)
    accountant: str = _param(ACCOUNTANT_PARAM.default)
    sgd_sensitivity: str = _param(SGD_SENSITIVITY.default)
    column_rows_cap: int = _param(COLUMN_ROWS_CAP.default)
    features_inference: str = _param(FEATURES_INFERENCE.default)
    # PrivDPR (central DP, protocols/central/privdpr.py; also delta and accountant above)
    noise_calibration: str = _param(NOISE_CALIBRATION.default)
    strict_sensitivity: bool = _param(STRICT_SENSITIVITY.default)
    dpr_epochs: int = _param(DPR_EPOCHS.default)
    dpr_node_batch: int = _param(DPR_NODE_BATCH.default)
    dpr_walks: int = _param(DPR_WALKS.default)
    dpr_walk_length: int = _param(DPR_WALK_LENGTH.default)
    dpr_dim: int = _param(DPR_DIM.default)
    dpr_hidden: int = _param(DPR_HIDDEN.default)
    wn_scale: float = _param(WN_SCALE.default)
    preset_sensitivity: float = _param(PRESET_SENSITIVITY.default)
    damping: float = _param(DAMPING.default)
    dpr_lr: float = _param(DPR_LR.default)
    symmetrize: str = _param(SYMMETRIZE.default)
    first_stage: str = _param(FIRST_STAGE.default)
    edge_budget_divisor: float = _param(EDGE_BUDGET_DIVISOR.default)
    dpr_features: str = _param(DPR_FEATURES.default)
    dpr_diagnostics: bool = _param(DPR_DIAGNOSTICS.default)
    # DPGGAN / DPGVAE (central DP, protocols/central/dpggan.py; also delta and accountant)
    dpg_calibration: str = _param(DPG_CALIBRATION.default)
    dpg_sigma: float = _param(DPG_SIGMA.default)
    dpg_steps: int = _param(DPG_STEPS.default)
    dpg_q: float = _param(DPG_Q.default)
    dpg_clip: float = _param(DPG_CLIP.default)
    dpg_clip_decay: float = _param(DPG_CLIP_DECAY.default)
    dpg_lr: float = _param(DPG_LR.default)
    dpg_lambda1: float = _param(DPG_LAMBDA1.default)
    dpg_lambda2: float = _param(DPG_LAMBDA2.default)
    dpg_edge_selection: str = _param(DPG_EDGE_SELECTION.default)
    dpg_edge_count_share: float = _param(DPG_EDGE_COUNT_SHARE.default)
    dpg_sensitivity_multiplier: float = _param(DPG_SENSITIVITY_MULTIPLIER.default)
    dpg_pos_weight: str = _param(DPG_POS_WEIGHT.default)
    dpg_generation: str = _param(DPG_GENERATION.default)
    # Edge-perturbation baselines (protocols/central/baselines.py; EdgeRand/LapGraph: epsilon)
    edge_ratio: float = _param(EDGE_RATIO.default)
    # PPGSL (empirical, no DP; protocols/central/ppgsl.py)
    ppgsl_alpha: float = _param(PPGSL_ALPHA.default)
    ppgsl_k: int = _param(PPGSL_K.default)
    ppgsl_mu: int = _param(PPGSL_MU.default)
    ppgsl_fgp: bool = _param(PPGSL_FGP.default)
    ppgsl_attack_epochs: int = _param(PPGSL_ATTACK_EPOCHS.default)
    ppgsl_epochs: int = _param(PPGSL_EPOCHS.default)
    ppgsl_lr: float = _param(PPGSL_LR.default)
    ppgsl_attack_lr: float = _param(PPGSL_ATTACK_LR.default)
    ppgsl_priv_reduction: str = _param(PPGSL_PRIV_REDUCTION.default)
    sensitive_share: float = _param(SENSITIVE_SHARE.default)
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
    )
    graph_exact_limit: int = key(
        GRAPH_EXACT_LIMIT,
        "metrics",
        "graph metric: path statistics (CPL, diameter) are exact while the largest component "
        "has at most this many nodes, sampled above",
    )
    graph_sample_sources: int = key(
        GRAPH_SAMPLE_SOURCES,
        "metrics",
        "graph metric: BFS sources of the sampled path statistics above graph-exact-limit "
        "(seeded from the run seed); 0: never sample (a larger graph is an error)",
    )
    collection_motif_limit: int = key(
        COLLECTION_MOTIF_LIMIT,
        "metrics",
        "collection metric: a graph pair whose motif enumeration would visit more connected "
        "3-5-node subgraphs than this is left out of the motif similarity (counted)",
    )
    gin_epochs: int = key(
        GIN_EPOCHS,
        "metrics",
        "gin metric: training epochs per fold, each 50 random batches of 32 graphs (at most 5 "
        "passes over the training graphs); the official GIN code's 350 take hours on a CPU",
    )
    gin_hidden: int = key(GIN_HIDDEN, "metrics", "gin metric: hidden units of every GIN layer")
    gin_layers: int = key(
        GIN_LAYERS, "metrics", "gin metric: GIN layers counting the input layer (>= 2)"
    )

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
        declared = {p.name: p for p in protocol_info(self.protocol).params}
        if "delta" in declared and self.delta == 0.0:
            self.delta = declared["delta"].default
        if "epsilon_convention" in declared and self.epsilon_convention == "":
            self.epsilon_convention = declared["epsilon_convention"].default
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
        if self.split_mode == "metis":
            from .splits import metis_parts

            try:
                metis_parts(self.train_split)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
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
        for name in ("graph_exact_limit", "graph_sample_sources", "collection_motif_limit"):
            if int(getattr(self, name)) < 0:
                raise ConfigError(
                    f"{name.replace('_', '-')} must be >= 0, got {getattr(self, name)}"
                )
        for name, least in (("gin_epochs", 1), ("gin_hidden", 1), ("gin_layers", 2)):
            if int(getattr(self, name)) < least:
                raise ConfigError(
                    f"{name.replace('_', '-')} must be >= {least}, got {getattr(self, name)}"
                )
        if self.metrics.strip() != NO_METRICS:
            try:
                self.metrics = ",".join(resolve_metrics(self.metrics))
            except UnknownMetricError as exc:
                raise ConfigError(f"{exc} (or {NO_METRICS})") from None
        else:
            self.metrics = NO_METRICS
        self._check_extras()
        if protocol.raw_upload and not self.trust_curator and self.backend != "deploy":
            raise ConfigError(
                f"protocol {self.protocol!r} uploads raw data and nodes refuse unless they "
                "trust the curator: add --trust-curator"
            )
        return self

    def _check_extras(self) -> None:
        """Refuse before any work when an optional dependency this run needs is missing,
        naming the extra that brings it."""
        from .extras import MissingExtraError, require_extra

        needed = []
        if self.backend in ("flower", "deploy"):
            needed.append("flwr")
        if self.ray_address:
            needed.append("ray")
        if self.split_mode == "metis":
            needed.append("pymetis")
        for module in needed:
            try:
                require_extra(module)
            except MissingExtraError as exc:
                local = " (or --backend local)" if module == "flwr" else ""
                raise ConfigError(f"{exc}{local}") from None

    def metric_names(self) -> tuple[str, ...]:
        """The chosen metrics (none for ``--metrics none``)."""
        if self.metrics.strip() == NO_METRICS:
            return ()
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
        keys = {f.name for f in fields(self)}
        declared = protocol_info(self.protocol).param_names
        return {name: getattr(self, name) for name in declared if name in keys}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_flwr(self) -> dict[str, Any]:
        """The same keys, hyphenated, as Flower's run config wants them."""
        return {k.replace("_", "-"): v for k, v in asdict(self).items()}

    def sections(self) -> dict[str, dict[str, Any]]:
        """This configuration by section, keys hyphenated as in TOML; the protocol section
        holds the protocol's name, ε and the chosen protocol's parameters only."""
        out: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        used = {"protocol", "epsilon", *self.protocol_params()}
        for f in fields(self):
            if f.metadata["section"] == "protocol" and f.name not in used:
                continue
            out[f.metadata["section"]][f.name.replace("_", "-")] = getattr(self, f.name)
        return out

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> RunConfig:
        """A checked configuration from flat keys (``feature-share`` or ``feature_share``),
        section tables (``{"train": {"lr": 0.1}}``) or dotted keys (``train.lr``, as Flower
        flattens nested TOML tables)."""
        known = {f.name: f for f in fields(cls)}
        defaults = cls()
        kwargs: dict[str, Any] = {}
        for raw, value in flatten_sections(values).items():
            name = raw.replace("-", "_")
            if name not in known:
                hint = did_you_mean(raw.replace("_", "-"), [k.replace("_", "-") for k in known])
                raise ConfigError(f"unknown configuration key {raw!r}{hint}")
            kind = type(getattr(defaults, name))
            if kind is bool:
                if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
                    value = value.lower() in ("true", "1")
                if not isinstance(value, bool):
                    raise ConfigError(f"{raw} must be true or false, got {value!r}")
                kwargs[name] = value
                continue
            try:
                if kind is int and isinstance(value, float) and not value.is_integer():
                    raise ValueError
                kwargs[name] = kind(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{raw} must be of type {kind.__name__}, got {value!r}") from None
        return cls(**kwargs).validate()


def key_names() -> tuple[str, ...]:
    """Every configuration key (underscore form), in schema order. Callers list keys through
    this (and :func:`key_default`, :func:`section_of`, :func:`key_help`, :func:`key_choices`),
    never through the dataclass's fields: how keys are declared is this module's business."""
    return tuple(_FIELDS)


def key_default(name: str) -> Any:
    """The default of configuration key ``name`` (either spelling)."""
    return getattr(_DEFAULTS, name.replace("-", "_"))


def section_of(name: str) -> str:
    """The section of configuration key ``name`` (either spelling)."""
    return _FIELDS[name.replace("-", "_")].metadata["section"]


def keys_in(section: str) -> tuple[str, ...]:
    """The configuration keys of ``section`` (underscore form), in schema order."""
    return tuple(f.name for f in fields(RunConfig) if f.metadata["section"] == section)


def non_result_keys() -> tuple[str, ...]:
    """The keys that only say where or how a run executes (left out of its identity)."""
    return tuple(f.name for f in fields(RunConfig) if not f.metadata["result"])


def key_help(name: str) -> str:
    """The help of a key that is not a protocol parameter (those come from the registry)."""
    return _FIELDS[name.replace("-", "_")].metadata["help"]


def key_choices(name: str) -> tuple[str, ...] | None:
    return _FIELDS[name.replace("-", "_")].metadata["choices"]


def flatten_sections(values: Mapping[str, Any]) -> dict[str, Any]:
    """Flat keys from a mapping that may group them by section: ``{"train": {"lr": 0.1}}``
    and ``{"train.lr": 0.1}`` both give ``{"lr": 0.1}``; plain keys pass through. A key under
    a section it does not belong to, an unknown section or a key given twice is an error."""
    out: dict[str, Any] = {}
    seen: dict[str, str] = {}

    def add(section: str | None, name: str, value: Any, spelled: str) -> None:
        norm = name.replace("-", "_")
        if section is not None:
            if section not in SECTIONS:
                hint = did_you_mean(section, list(SECTIONS))
                raise ConfigError(
                    f"unknown configuration section {section!r} in {spelled!r}{hint}; "
                    f"sections: {', '.join(SECTIONS)}"
                )
            if norm in _FIELDS and section_of(norm) != section:
                raise ConfigError(
                    f"{spelled!r}: {name} belongs in section {section_of(norm)!r}, not {section!r}"
                )
        if norm in seen:
            raise ConfigError(f"configuration key {name!r} given twice ({seen[norm]}, {spelled})")
        seen[norm] = spelled
        out[name] = value

    for raw, value in values.items():
        raw = str(raw)
        if raw in SECTIONS and isinstance(value, Mapping):
            for name, inner in value.items():
                add(raw, str(name), inner, f"{raw}.{name}")
        elif "." in raw:
            section, _, name = raw.partition(".")
            add(section, name, value, raw)
        else:
            add(None, raw, value, raw)
    return out


def _finite_positive(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ConfigError(f"{name} must be a finite number > 0, got {value}")


_FIELDS = {f.name: f for f in fields(RunConfig)}
_DEFAULTS = RunConfig()
