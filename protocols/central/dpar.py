"""DPAR: decoupled GNN with node-level DP (central DP; Zhang et al., "DPAR: Decoupled Graph
Neural Networks with Node-Level Differential Privacy", WWW 2024).

The curator runs the whole mechanism on the uploaded graph and releases a model θ. The privacy
argument is ``docs/privacy/dpar.md``; the accounting is :mod:`.dpar_privacy`, the model and graph
pieces :mod:`.dpar_model`, the parameters :mod:`.dpar_params`, DP-APPR :mod:`.appr`, DP-SGD
:mod:`.dpsgd`.

1. **Slots and presence.** The training slots are the split's training node ids (public: the
   harness fixes them before any data is read). A slot is *present* when its node uploaded its
   data and the curator holds its label; the neighbouring relation adds or removes one present
   node (its features, label and every incident edge). Edges to nodes that did not upload are
   dropped everywhere (training and inference), and so is every training–non-training edge (the
   paper's inductive setting, §4 "Setup").
2. **Node subsample q′** over the *slots* (Bernoulli by default; ``fixed``: ⌈q′·slots⌉ of them,
   no amplification claimed) → the kept slots; G is the graph induced on the present kept ones.
   Every size the mechanism uses (rows N, q = B/N, T, the top-K candidates) is a count of kept
   slots: it never depends on who is present.
3. **DP-APPR** (:mod:`.appr`): M seeds drawn uniformly among the kept slots (a seed that is not
   present has the zero APPR vector), noise on every kept slot's coordinate, top-K → Π (N×N over
   kept slots, identity rows elsewhere [R], or M×N with ``non_appr_rows=exclude``), the column
   cap D_max (how many rows one node's features reach) and the column ℓ1 bound τ: functions of
   the released rows only.
4. **DP-SGD** (:mod:`.dpsgd`) of ``softmax(Σ_u Π_vu·f_θ(X_u))`` (f_θ: a 2-layer MLP, hidden 32,
   no bias, dropout 0.1 [R]), per-target clipping C, Poisson rate q per row over all N rows (an
   absent node's row contributes nothing), T = epochs·⌈N/B⌉, the noisy sum divided by q·N.
5. **Inference (Eq. 4)**: logits f_θ(X); P = 2 power-iteration steps on the graph of the
   non-training nodes that uploaded. Training nodes get f_θ(x_v) alone (no graph): the release
   carries no prediction made over the training graph.

**What ``--epsilon`` means** (``epsilon_convention``). ``proven`` (default): (ε, δ) is the
headline, node-level under add/remove, and the noise is calibrated so the proven bound equals it:
ε_raw = ln(1 + (e^ε − 1)/q′) on G (q′ Poisson amplification inverted), split ``pr_share`` /
``delta_pr_share`` between DP-APPR and DP-SGD, DP-APPR's σ or Gumbel/value ε by the exact bound of
its M rows, DP-SGD's noise by the strict bound with D rows (the column cap always applies).
``paper``: the paper's calibration (ε_rep = q′·(ε_pr + ε_sgd), KOV per-vector budgets, DP-SGD at
the τ-scaled sensitivity; paper §4 and Thm. 2) reproduced, and the headline is the proven ε of
that noise (``paper_epsilon`` beside it is the paper's figure).

**``sgd_sensitivity``** matters only under ``paper``: ``faithful`` (default) is the paper's
τ·C DP-SGD calibration with no column cap (D read off Π for the proven figure); ``strict``
applies the cap D_max = ``column_rows_cap`` and calibrates the paper's ε_sgd budget at the
sensitivity C·(2D − 1) and rate 1 − (1 − q)^D (the older heuristic; its headline is still the
proven ε of its noise). Under ``proven`` the DP-SGD noise is always the proven calibration with
the cap, whatever ``sgd_sensitivity`` says.

The test graph (non-training nodes) is used without protection at inference; hyper-parameters
were not chosen privately. torch is imported inside functions (the registry lists this module
without importing torch).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..base import CuratorView
from ..params import Params, ProtocolParameterError
from ..progress import stage
from ..registry import register
from ..rng import stage_rng
from ..torch_env import auto_device
from ..types import PrivacyReport, Release
from . import dpar_fit
from . import dpar_privacy as dp
from .appr import ApprNoise, column_bound, dp_appr, ista_appr, with_self_loops
from .base import CentralStrategy, UploadedGraph
from .dpar_model import (  # noqa: F401  (re-exported: benchmarks)
    Budgets,
    DparModel,
    SgdPlan,
    Structure,
    _adjacency,
    _assemble,
    _drop_cross,
    _init_mlp,
    _mask,
    _own_rows,
    _padded,
    cap_column_rows,
    column_rows,
    mlp_logits,
    power_iteration,
    target_clipped_sum,
    target_loss,
)
from .dpar_params import *  # noqa: F403  (every Param re-exported: config, other strategies)
from .dpar_params import (
    _APPR,
    _COMMON,
    _DP,
    _DP_APPR,
    CLIP_EM,
    CLIP_GM,
    EM1_VALUE_SHARE,
    FEATURES_INFERENCE,
)

#: The registered names and the variant each chooses.
VARIANTS = {
    "dpar-em0": "em0",
    "dpar-em1": "em1",
    "dpar-gm": "gm",
    "dpar-nodp": "nodp",
    "dpar-features": "features",
}


# One class under five names; the name chooses the variant (Dpar.from_params).
@register(
    "dpar-em0",
    label="DPAR-EM0",
    params=_DP + _DP_APPR + _APPR + (CLIP_EM,) + _COMMON,
    summary="DPAR (central, node DP): DP-APPR by Gumbel top-K with 1/K weights + DP-SGD MLP",
)
@register(
    "dpar-em1",
    label="DPAR-EM1",
    params=_DP + _DP_APPR + _APPR + (CLIP_EM, EM1_VALUE_SHARE) + _COMMON,
    summary="DPAR (central, node DP): DP-APPR by Gumbel top-K with Laplace values + DP-SGD MLP",
)
@register(
    "dpar-gm",
    label="DPAR-GM",
    params=_DP + _DP_APPR + _APPR + (CLIP_GM,) + _COMMON,
    summary="DPAR (central, node DP): DP-APPR by the Gaussian mechanism + DP-SGD MLP",
)
@register(
    "dpar-nodp",
    label="DPARNoDP",
    params=_APPR + _COMMON,
    summary="DPAR without DP (exact top-K APPR, plain Adam): the non-private reference",
)
@register(
    "dpar-features",
    label="Features",
    params=_DP + (FEATURES_INFERENCE,) + _COMMON,
    summary="DPAR's Features baseline: DP-SGD MLP on node features alone (Π = I)",
)
class Dpar(CentralStrategy):
    """DPAR (one class; the registered names choose the variant)."""

    kind = "model"

    def __init__(self, variant: str = "gm", **params: Any) -> None:
        if variant not in VARIANTS.values():
            raise ValueError(f"unknown DPAR variant {variant!r}")
        self.variant = variant
        self.name = next(name for name, v in VARIANTS.items() if v == variant)
        self.privacy_model = self.privacy_model_of(self.name)
        p = {param.name: param.default for param in _COMMON + _APPR + _DP + _DP_APPR}
        p.update({CLIP_GM.name: CLIP_GM.default, CLIP_EM.name: CLIP_EM.default})
        p.update({EM1_VALUE_SHARE.name: EM1_VALUE_SHARE.default})
        p[FEATURES_INFERENCE.name] = FEATURES_INFERENCE.default
        p.update(params)
        self.p = Params(p)
        budgets = self.budgets()
        if budgets is not None and budgets.delta_raw >= 1.0:
            raise ProtocolParameterError(
                f"delta/q_prime = {budgets.delta_raw:.3g} must be below 1 (the paper's "
                "convention states δ after its q′ amplification)"
            )

    @classmethod
    def privacy_model_of(cls, name: str) -> str:
        # DPARNoDP is the non-private reference, like the LDP side's `none`.
        return "none" if VARIANTS.get(name) == "nodp" else "central"

    @classmethod
    def from_params(cls, name: str, **params: Any) -> Dpar:
        return cls(VARIANTS[name], **params)

    @property
    def private(self) -> bool:
        return self.variant != "nodp"

    @property
    def uses_appr(self) -> bool:
        return self.variant != "features"

    @property
    def proven(self) -> bool:
        """``epsilon_convention=proven``: the noise is calibrated to the proven bound."""
        return self.private and self.p.epsilon_convention != "paper"

    @property
    def amplify(self) -> bool:
        """Whether the headline may claim the q′ subsample's amplification ln(1 + q′(e^ε − 1)).
        It may not: amplification by subsampling (Balle, Barthe, Gaboardi 2018, Thm. 8) needs
        the run without node j's slot to have the law of the world without j, but the run keeps
        an absent slot as an isolated vertex (N, q, T, the seeds and the top-K candidates are
        drawn over the kept slots), so whether j's slot was kept is visible in the release.
        Only δ shrinks by q′ from that structure; the headline takes neither
        (docs/privacy/dpar.md)."""
        return False

    @property
    def capped(self) -> bool:
        """Π's columns are capped at D_max rows (proven, or paper with strict)."""
        return self.uses_appr and (self.proven or self.p.sgd_sensitivity == "strict")

    def budgets(self) -> Budgets | None:
        """The raw budgets on G. paper: ε/q′ and δ/q′ (Theorem 2's linear rule); proven: the
        raw ε whose amplification ln(1 + q′(e^ε − 1)) is the request, δ/q′ (q′·δ_raw after
        amplification); fixed sampling claims no amplification (raw = request)."""
        if not self.private:
            return None
        qp, eps, delta = self.p.q_prime, self.p.epsilon, self.p.delta
        if not self.proven:
            eps_raw, delta_raw = eps / qp, delta / qp
        elif self.amplify:
            eps_raw, delta_raw = dp.deamplified(eps, qp), delta / qp
        else:
            eps_raw, delta_raw = eps, delta
        if not self.uses_appr:
            return Budgets(eps_raw, delta_raw, 0.0, 0.0, eps_raw, delta_raw)
        r, rd = self.p.pr_share, self.p.delta_pr_share
        return Budgets(
            eps_raw, delta_raw, r * eps_raw, rd * delta_raw, (1 - r) * eps_raw, (1 - rd) * delta_raw
        )

    def appr_noise(self) -> ApprNoise | None:
        b = self.budgets()
        if b is None or not self.uses_appr:
            return None
        make = ApprNoise.proven if self.proven else ApprNoise.calibrate
        return make(
            self.variant, b.eps_pr, b.delta_pr, self.p.appr_nodes, self.p.top_k,
            self.p.clip_gm, self.p.clip_em, self.p.em1_value_share,
        )  # fmt: skip

    def sgd_plan(self, rows: int, d_rows: int) -> SgdPlan:
        """The DP-SGD noise for ``rows`` Π rows (a public count) and D = ``d_rows``."""
        from . import dpsgd

        p, b = self.p, self.budgets()
        q = min(1.0, p.batch_size / rows)
        steps = p.sgd_epochs * math.ceil(rows / p.batch_size)
        if b is None:
            return SgdPlan(q, steps, d_rows, 0.0, "none")
        with dp.quiet_absl():
            if self.proven and d_rows == 1:
                z = dpsgd.calibrate_noise_multiplier(b.eps_sgd, b.delta_sgd, q, steps, p.accountant)
                return SgdPlan(q, steps, 1, z, f"proven: {p.accountant.upper()}, D = 1")
            if self.proven:
                z = dp.calibrate_strict_sgd(b.eps_sgd, b.delta_sgd, q, steps, d_rows)
                return SgdPlan(q, steps, d_rows, z, f"proven: RDP triangle bound, D = {d_rows}")
            if p.sgd_sensitivity == "strict":
                rate = dp.strict_rate(q, d_rows)
                z = dpsgd.calibrate_noise_multiplier(
                    b.eps_sgd, b.delta_sgd, rate, steps, p.accountant
                )
                return SgdPlan(q, steps, d_rows, z * (2 * d_rows - 1), "paper, strict (heuristic)")
            tau = p.column_tau if self.uses_appr else 1.0
            z = dpsgd.calibrate_noise_multiplier(b.eps_sgd, b.delta_sgd, q, steps, p.accountant)
            return SgdPlan(q, steps, d_rows, z * tau, "paper: τ-scaled sensitivity (Theorem 2)")

    def sgd_epsilon(self, plan: SgdPlan) -> tuple[float, float]:
        """(proven ε_sgd, the paper's τ-scaled ε_sgd) of ``plan``'s noise at δ_sgd."""
        from . import dpsgd

        b = self.budgets()
        assert b is not None
        tau = self.p.column_tau if self.uses_appr else 1.0
        with dp.quiet_absl():
            if plan.rows == 1:
                proven = dpsgd.sgd_epsilon(
                    plan.noise, plan.q, plan.steps, b.delta_sgd, self.p.accountant
                )
            else:
                proven = dp.strict_sgd_epsilon(
                    plan.noise, plan.q, plan.steps, plan.rows, b.delta_sgd
                )
            paper = dpsgd.sgd_epsilon(plan.noise / tau, plan.q, plan.steps, b.delta_sgd)
        return proven, paper

    def sgd_accountant(self, plan: SgdPlan) -> str:
        """How :meth:`sgd_epsilon` bounds ``plan`` (the report's accountant line)."""
        if plan.rows == 1:
            return f"dp_accounting {self.p.accountant.upper()} (add/remove one row)"
        return "dp_accounting RDP, weak triangle inequality through the world without the D rows"

    def example_rows(self, st: Structure) -> np.ndarray:
        """Which Π rows hold a training example: those of present nodes (an absent slot's row
        is sampled but holds nothing)."""
        return st.here[st.row_nodes]

    # --- the mechanism ------------------------------------------------------------------

    def structure(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Structure:
        """Steps 1–3 of the module docstring: slots, the q′ subsample, DP-APPR → Π, and the
        DP-SGD plan for that Π (no training: what the accounting needs)."""
        p = self.p
        labels = curator.labels
        if labels is None or curator.train_nodes is None or len(curator.train_nodes) == 0:
            raise ValueError(f"{self.name} trains on the curator's training labels; it has none")
        n = graph.num_nodes
        labels = np.asarray(labels)
        slots = np.unique(np.asarray(curator.train_nodes, dtype=np.int64))
        is_train = np.zeros(n, dtype=bool)
        is_train[slots] = True
        uploaded = np.asarray(graph.uploaded, dtype=bool)
        present = uploaded & is_train & (labels >= 0)
        if not present.any():
            raise ValueError(f"{self.name}: no training node with a label uploaded its data")
        # Consenting nodes' edges only, then the inductive split: no edge leaves its side.
        edges = np.asarray(graph.edges, dtype=np.int64).reshape(-1, 2)
        edges = edges[uploaded[edges[:, 0]] & uploaded[edges[:, 1]]]
        inductive = _drop_cross(_adjacency(edges, n), is_train)

        # Node subsample q′ over the public slots (data-independent), then the seeds.
        rng = stage_rng(seed, f"{self.name}/nodes")
        if p.node_sampling == "fixed":
            kept = np.sort(rng.permutation(slots)[: math.ceil(p.q_prime * slots.size)])
        else:
            kept = slots[rng.random(slots.size) < p.q_prime]
        big_n = kept.size
        if big_n == 0:
            raise ValueError(
                f"{self.name}: the q′ = {p.q_prime:g} subsample of {slots.size} training "
                "slots is empty; raise q_prime"
            )
        here = present[kept]  # which kept slots hold a node's data
        # G on the kept slots: an absent slot is an isolated vertex (a self-loop only).
        sub = inductive[kept][:, kept]
        sub = with_self_loops(sp.diags(here.astype(float)) @ sub @ sp.diags(here.astype(float)))
        pi, own, row_nodes, noise = self._pi(sub, here, rng, seed)
        rows = pi.shape[0]
        d_rows = max(1, int(column_rows(pi, own).max(initial=0)))
        stage(f"{self.name}: calibrating DP-SGD ({rows} rows, D = {d_rows})")
        return Structure(
            labels, is_train, present, inductive, kept, here, pi, row_nodes, noise,
            self.sgd_plan(rows, d_rows),
        )  # fmt: skip

    def _pi(
        self, sub: sp.csr_matrix, here: np.ndarray, rng: np.random.Generator, seed: int
    ) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, ApprNoise | None]:
        """Step 3: DP-APPR on the kept slots' graph ``sub`` → Π (capped and column-bounded),
        each node's own row, the node of each Π row and the noise; Π = I for Features.
        ``rng`` continues the node-subsample stream (the seeds are drawn from it)."""
        p = self.p
        big_n = here.size
        if not self.uses_appr:
            ident = np.arange(big_n)
            # Features: Π = I (paper §4 baselines)
            return sp.identity(big_n, format="csr"), ident, ident, None
        m, k = p.appr_nodes, p.top_k
        if m > big_n or k > big_n:
            raise ValueError(
                f"{self.name}: appr_nodes M = {m} and top_k K = {k} must not exceed the "
                f"{big_n} kept slots of the q′-subsampled training graph; lower them or "
                "raise q_prime"
            )
        seeds = np.sort(rng.choice(big_n, size=m, replace=False))
        stage(f"{self.name}: APPR (ISTA) of {m} seeds on {big_n} kept slots")
        exact = ista_appr(sub, seeds, p.ppr_alpha, p.ista_rho, p.ista_gamma)
        exact[~here[seeds]] = 0.0  # an absent seed's vector is zero (data-independent)
        noise = self.appr_noise()
        arng = stage_rng(seed, f"{self.name}/appr")
        idx, val = dp_appr(exact, noise, k, p.clip_gm, p.clip_em, arng)
        pi = _assemble(idx, val, seeds, big_n, p.non_appr_rows)
        own = _own_rows(seeds, big_n, p.non_appr_rows)
        if self.capped:
            pi = cap_column_rows(pi, own, p.column_rows_cap)  # post-processing
        pi = column_bound(pi, p.column_tau, p.column_mode)
        row_nodes = seeds if p.non_appr_rows == "exclude" else np.arange(big_n)
        return pi, own, row_nodes, noise

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        p = self.p
        st = self.structure(graph, curator, seed)
        device = auto_device(curator.device)
        stage(f"{self.name}: DP-SGD, {st.plan.steps} steps on {st.pi.shape[0]} rows")
        trained = dpar_fit.train(self, graph, st, seed, device)  # step 4
        stage(f"{self.name}: inference (Eq. 4, {p.inference_steps} power-iteration steps)")
        released = dpar_fit.predict(self, graph, st, trained, device)  # step 5
        model = DparModel({k: v.cpu().numpy() for k, v in trained.items()}, released)
        report = self.privacy_report(graph.num_features, noise=st.noise, plan=st.plan)
        plan = st.plan
        stats = {
            "training_nodes": int(st.present.sum()),
            "training_slots": int(np.flatnonzero(st.is_train).size),
            "subsampled_nodes": int(st.here.sum()),
            "kept_slots": int(st.kept.size),
            "rows": int(st.pi.shape[0]),
            "appr_rows": int(p.appr_nodes) if self.uses_appr else 0,
            "sgd_q": plan.q,
            "sgd_steps": int(plan.steps),
            "noise_multiplier": float(plan.noise),
            "pi_nonzeros": int(st.pi.nnz),
            "sgd_sensitivity": p.sgd_sensitivity,
            # Most rows one node's removal moves (its own counted): D of the accounting.
            "column_rows": plan.rows,
        }
        return Release.of_model(model, graph.num_nodes, report, stats)

    # --- privacy ------------------------------------------------------------------------

    def privacy_report(
        self,
        num_features: int | None = None,
        *,
        noise: ApprNoise | None = None,
        plan: SgdPlan | None = None,
        **_: Any,
    ) -> PrivacyReport:
        """Node-level (ε, δ) under add/remove (docs/privacy/dpar.md): the proven headline and
        the paper's figure beside it (:func:`.dpar_report.privacy_report`). Before a release
        (no ``plan``: its rows and D are not known yet) a proven run states its calibration
        target, which the release meets; a paper run's proven ε needs the release and is ∞
        until then."""
        from .dpar_report import privacy_report

        return privacy_report(self, noise, plan)
