"""DPAR's training and inference (Zhang et al., WWW 2024, §4): DP-SGD of the MLP f_θ on the
rows of Π (step 4 of :mod:`.dpar`) and Eq. 4's power iteration on the non-training nodes
(step 5). The strategy (:class:`.dpar.Dpar`) owns the plan and the accounting; these two steps
only run it. torch is imported inside the functions (the registry lists DPAR without torch).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..rng import stage_seed
from .appr import with_self_loops
from .base import UploadedGraph
from .dpar_model import (
    SparseFeatures,
    Structure,
    _init_mlp,
    _padded,
    mlp_logits,
    power_iteration,
    sparse_clipped_sum,
    sparse_target_batch,
    target_loss,
)
from .dpar_params import NODP_WEIGHT_DECAY

if TYPE_CHECKING:
    from .dpar import Dpar


def train(dpar: Dpar, graph: UploadedGraph, st: Structure, seed: int, device: str) -> dict:
    """Step 4: DP-SGD (plain Adam for DPARNoDP) of f_θ on Π's rows; θ as tensors."""
    import torch

    from . import dpsgd

    p, plan = dpar.p, st.plan
    labels, kept, here, row_nodes = st.labels, st.kept, st.here, st.row_nodes
    if dpar.private:
        sgd = dpsgd.DpSgdPlan(plan.q, plan.steps, p.sgd_clip, plan.noise, p.sgd_lr)
    else:
        sgd = dpsgd.DpSgdPlan(plan.q, plan.steps, math.inf, 0.0, p.sgd_lr, NODP_WEIGHT_DECAY)
    x_kept = np.asarray(graph.x, dtype=np.float32)[kept] * here[:, None]
    feats = SparseFeatures.of(x_kept, device)
    y_rows = torch.as_tensor(np.where(here[row_nodes], labels[kept[row_nodes]], 0), device=device)
    row_here = torch.as_tensor(dpar.example_rows(st), device=device)
    nbr_idx, nbr_w = _padded(st.pi)
    nbr_idx_t = torch.as_tensor(nbr_idx, device=device)
    nbr_w_t = torch.as_tensor(nbr_w, dtype=torch.float32, device=device)
    classes = int(max(labels.max(), 0)) + 1
    gen = torch.Generator(device=device)
    gen.manual_seed(stage_seed(seed, f"{dpar.name}/sgd"))
    params = _init_mlp(graph.num_features, p.mlp_hidden, classes, gen, device)
    drop = float(p.mlp_dropout)

    def make_batch(i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        i = i[row_here[i]]  # a row without an example (absent node) is sampled, adds nothing
        # One example = a target and its Π row's neighbours, their nonzero features only.
        return sparse_target_batch(
            feats, nbr_idx_t[i], nbr_w_t[i], y_rows[i], drop, p.mlp_hidden, gen
        )

    with one_thread(device):
        return dpsgd.train(
            target_loss, params, st.pi.shape[0], make_batch, sgd, gen,
            clipped_sum=sparse_clipped_sum, fused_adam=True,
        )  # fmt: skip


@contextmanager
def one_thread(device: str) -> Iterator[None]:
    """torch on one intra-op thread for the DP-SGD loop on a CPU: its steps work on tensors of
    at most ~10⁶ entries, where a second thread gains little and, on shared cores, costs many
    times the step in spin-waits (benchmarks/bench_dpar.py: 2.0 against 13 steps/s on the
    loaded 2-core machine). Restored afterwards."""
    import torch

    if not str(device).startswith("cpu"):
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def predict(
    dpar: Dpar, graph: UploadedGraph, st: Structure, trained: dict, device: str
) -> np.ndarray:
    """Step 5: Eq. 4 on the non-training nodes that uploaded; a training node gets -1."""
    import torch

    p = dpar.p
    with torch.no_grad():
        x_all = torch.as_tensor(np.asarray(graph.x, dtype=np.float32), device=device)
        logits = mlp_logits(trained, x_all).cpu().numpy().astype(np.float64)
    steps_p = p.inference_steps
    if dpar.variant == "features" and p.features_inference == "mlp":
        steps_p = 0
    # ``inductive`` has no cross edge; zeroing the training rows leaves training nodes
    # with no edge at all (a self-loop: Eq. 4 returns f_θ(x_v)).
    test_side = sp.diags((~st.is_train).astype(float)) @ st.inductive
    scores = power_iteration(with_self_loops(test_side), logits, p.ppr_alpha, steps_p)
    # A training node's f_θ(x_v) is a function of its own raw features, not of θ alone:
    # it is not released (-1, "no prediction"); the release is θ and the non-training
    # nodes' classes.
    return np.where(st.is_train, -1, scores.argmax(1))
