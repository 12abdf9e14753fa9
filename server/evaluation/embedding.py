"""A graph auto-encoder (Kipf & Welling 2016) trained on a release: the node embedding the ``lp``
scorer and the ``attack`` metric's embedding attack use (not a metric itself).

Encoder: two GCN layers, [128, 64] (PPGSL's surrogate, Wu et al. 2025), ReLU between; decoder:
the inner product. Each epoch is one full-batch step of binary cross-entropy on up to
:data:`MAX_PAIRS` of the release's edges (positives) and as many uniform non-edges of the
release (negatives, fresh every epoch). It sees only the release: its edges, unweighted (an
attacker reads the published discrete graph), and its features (centred when dense, as the
node classifier gets them; a release without features gets a seeded Gaussian input).
Randomness comes from ``stage_seed(seed, "gae")`` inside ``fork_rng``, as in training.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ldpgraph.protocols.rng import stage_rng, stage_seed

from .base import EvaluationContext

#: Hidden and output widths of the encoder.
DIMS = (128, 64)
EPOCHS = 200
LR = 0.01
#: Positive pairs per epoch at most (a random subset of the release's edges above it).
MAX_PAIRS = 1 << 16
#: Epochs between two reads of a ``select`` score (early stopping).
SELECT_EVERY = 10
#: Input width when the release has no features.
RANDOM_INPUT_DIM = 64


def gae_embedding(
    edges: np.ndarray,
    x: np.ndarray,
    seed: int,
    *,
    device: str | None = None,
    num_threads: int | None = None,
    epochs: int = EPOCHS,
    select: Callable[[np.ndarray], float] | None = None,
) -> np.ndarray:
    """The ``[n, 64]`` float32 embedding of the release ``(edges, x)``; all zeros when the
    release has no edges (nothing to fit). ``select``: a score of an embedding (higher is
    better), read every :data:`SELECT_EVERY` epochs and after the last; the best-scoring
    embedding is returned instead of the last (early stopping on a validation set). Reading it
    draws nothing, so the training steps are the same with or without it."""
    import torch
    import torch.nn.functional as F

    # Long on purpose: one training loop whose torch and numpy draws must run in this order
    # (the seeded tests hold the embedding); helpers would only pass its state around.
    from ldpgraph.protocols.torch_env import cpu_threads, resolve_device
    from ldpgraph.server.models import SymmetricGCNConv, discard_generated_files
    from ldpgraph.server.tensors import center_columns, feature_tensor, graph_tensors, mostly_zero

    from .holdout import pair_keys

    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    n = int(x.shape[0])
    if len(edges) == 0:
        return np.zeros((n, DIMS[-1]), dtype=np.float32)
    if x.shape[1] == 0:
        x = stage_rng(seed, "gae-input").standard_normal((n, RANDOM_INPUT_DIM)).astype(np.float32)
    dev = resolve_device(device)
    sparse = mostly_zero(x)
    x = np.asarray(x, dtype=np.float32) if sparse else center_columns(x)
    rng = stage_rng(seed, "gae-pairs")
    cuda = list(range(torch.cuda.device_count())) if dev.type == "cuda" else []
    if num_threads is None and dev.type == "cpu":
        # One thread unless told: on a shared machine two threads spin-wait on each other
        # (Cora, under load: 10 s on one thread, 98 s on two).
        num_threads = 1
    with cpu_threads(num_threads), torch.random.fork_rng(devices=cuda):
        torch.default_generator.manual_seed(stage_seed(seed, "gae"))
        if cuda:
            torch.cuda.manual_seed_all(stage_seed(seed, "gae"))
        conv1 = SymmetricGCNConv(x.shape[1], DIMS[0], cached=True).to(dev)
        conv2 = SymmetricGCNConv(DIMS[0], DIMS[1], cached=True).to(dev)
        model = torch.nn.ModuleList([conv1, conv2])
        discard_generated_files(model)
        x_t = feature_tensor(x, dev, sparse=sparse)
        adj, _ = graph_tensors(edges, None, n, dev, sparse=True)
        optimizer = torch.optim.Adam(model.parameters(), lr=LR)
        size = min(len(edges), MAX_PAIRS)
        taken = np.sort(pair_keys(edges, n))
        room = n * (n - 1) // 2 - len(edges) >= size
        target = torch.cat([torch.ones(size), torch.zeros(size)]).to(dev)

        def encode() -> torch.Tensor:
            return conv2(conv1(x_t, adj).relu(), adj)

        best: tuple[float, np.ndarray] | None = None
        for epoch in range(1, epochs + 1):
            pairs = torch.as_tensor(_epoch_pairs(edges, n, size, room, taken, rng), device=dev)
            optimizer.zero_grad(set_to_none=True)
            z = encode()
            logits = (z[pairs[:, 0]] * z[pairs[:, 1]]).sum(dim=1)
            F.binary_cross_entropy_with_logits(logits, target).backward()
            optimizer.step()
            if select is not None and (epoch % SELECT_EVERY == 0 or epoch == epochs):
                with torch.no_grad():
                    candidate = encode().cpu().numpy().astype(np.float32)
                score = select(candidate)
                if best is None or score > best[0]:
                    best = (score, candidate)
        if best is not None:
            return best[1]
        with torch.no_grad():
            z = encode()
    return z.detach().cpu().numpy().astype(np.float32)


def _epoch_pairs(
    edges: np.ndarray,
    n: int,
    size: int,
    room: bool,
    taken: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """One epoch's ``size`` positive pairs (all edges, or a random subset) then ``size``
    negatives: non-edges, or uniform pairs (edges among them) in a near-complete release."""
    from .holdout import sample_non_edges

    pos = edges if size == len(edges) else edges[rng.choice(len(edges), size, False)]
    if room:
        neg = sample_non_edges(edges, n, size, rng, taken)
    else:
        neg = np.stack([rng.integers(0, n, size), rng.integers(0, n, size)], axis=1)
    return np.concatenate([pos, neg])


def release_embedding(ctx: EvaluationContext) -> np.ndarray:
    """The GAE embedding of ``ctx.release``, trained once per evaluation (``lp`` and
    ``attack`` share it through ``ctx.cache``)."""
    if "gae" not in ctx.cache:
        release = ctx.release
        ctx.cache["gae"] = gae_embedding(
            release.edges, release.x, ctx.seed, device=ctx.device, num_threads=ctx.num_threads
        )
    return ctx.cache["gae"]
