"""Full-batch training at scale: memory and CPU of the training step alone, before/after.

The release at 10^6+ nodes takes many minutes to make (benchmarks/bench_scale.py); what
training adds on top of it is measured here on a stand-in release of the same shape: n nodes,
``--edges-per-node`` random edges a node (6.5 is hogs-arr's release at μ = 0.0149), float32
features from the labels plus noise (``--d`` columns, as HoGS's reconstruction gives), 5
classes. Each (n, path) runs in a fresh process, so its RSS is its own:

* ``now``: :func:`ldpgraph.server.training.train_and_evaluate` as it is (the graph as one
  int32 CSR built from the edge list, GCN's normalisation once for both layers, the features
  shared or centred in blocks);
* ``former``: the same function with the former pieces put back in that process (PyG's
  both-directions ``edge_index`` and ``to_torch_csr_tensor``, ``gcn_norm`` in each layer, a
  float32 copy of the features before centring and a torch copy after, the ``np.unique``
  duplicate check). Same results (the tests hold the two to the bit).

Printed: the RSS before training, the peak during it (sampled every 5 ms) and their
difference, the process CPU seconds of the training call, wall seconds and test accuracy.

    python benchmarks/bench_train_scale.py --sizes 1000000 2000000
    python benchmarks/bench_train_scale.py --sizes 200000 --paths now --model mlp
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from types import SimpleNamespace

from rss import cpu_seconds, peak_rss, rss_bytes


def stand_in(n: int, per_node: float, d: int, classes: int, seed: int = 0):
    """(edges sorted u < v, x float32, y, split) of a homophilous random graph: 80 % of a
    node's edges inside its class."""
    import numpy as np

    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    order = np.argsort(y, kind="stable")
    starts = np.searchsorted(y[order], np.arange(classes + 1))
    m = int(per_node * n)
    u = rng.integers(0, n, m)
    same = rng.random(m) < 0.8
    cls = y[u]
    pick = starts[cls] + (rng.random(m) * (starts[cls + 1] - starts[cls])).astype(np.int64)
    v = np.where(same, order[pick], rng.integers(0, n, m))
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    keys = np.unique(lo[lo != hi] * n + hi[lo != hi])
    edges = np.stack([keys // n, keys % n], axis=1)
    means = rng.normal(size=(classes, d)).astype(np.float32) * 0.3
    x = means[y] + rng.normal(size=(n, d)).astype(np.float32)
    perm = rng.permutation(n)
    split = SimpleNamespace(
        train=perm[: n // 2], val=perm[n // 2 : 3 * n // 4], test=perm[3 * n // 4 :]
    )
    return edges, x, y, split


def former_pieces() -> None:
    """Put the former graph and feature handling back into this process."""
    import warnings

    import numpy as np
    import torch
    from torch_geometric.utils import to_torch_csr_tensor

    from ldpgraph.server import tensors, training

    def graph(model, edges, weight, n, dev):
        if not model.uses_edges:
            return None, None
        both = torch.tensor(np.concatenate([edges, edges[:, ::-1]], axis=0).T, device=dev)
        w = None
        if weight is not None:
            w = torch.tensor(np.concatenate([weight, weight]).astype(np.float32), device=dev)
        if not model.sparse_adjacency:
            return both, w
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ss]parse.*", category=UserWarning)
            return to_torch_csr_tensor(both, w, size=(n, n)), None

    def center(x):
        x = np.asarray(x, dtype=np.float32)
        return x - tensors.column_means(x)[None, :]

    def features(x, dev, sparse=None):
        return torch.tensor(x, dtype=torch.float32, device=dev)

    training._graph = graph
    training.center_columns = center
    training.feature_tensor = features
    tensors.is_sorted_unique = lambda edges, n: False  # so the np.unique check always runs


def one(n: int, path: str, args: argparse.Namespace) -> dict:
    from ldpgraph.server import training

    edges, x, y, split = stand_in(n, args.edges_per_node, args.d, args.classes)
    if path == "former":
        former_pieces()
    cfg = training.TrainConfig(model=args.model, epochs=args.epochs, center_features=True)
    before, c0 = rss_bytes(), cpu_seconds()
    with peak_rss() as measured:
        out = training.train_and_evaluate(edges, x, y, split, cfg, seed=0, device="cpu")
    return {
        "n": n,
        "path": path,
        "edges": int(edges.shape[0]),
        "rss_before_gib": before / 2**30,
        "peak_gib": measured.peak / 2**30,
        "added_gib": (measured.peak - before) / 2**30,
        "cpu_s": cpu_seconds() - c0,
        "wall_s": measured.seconds,
        "test_acc": out["test_acc"],
        "val_loss": out["val_loss"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--paths", nargs="+", choices=("now", "former"), default=["now", "former"])
    ap.add_argument("--model", default="gcn", choices=("gcn", "sage", "mlp"))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--edges-per-node", type=float, default=6.5)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, path = json.loads(args.child)
        print(json.dumps(one(n, path, args)))
        return
    print(
        f"{args.model}, {args.epochs} epochs, {args.edges_per_node} edges a node, d = {args.d}; "
        f"one process per row; load {__import__('os').getloadavg()[0]:.1f}"
    )
    print(
        f"{'n':>9} {'path':<7} {'edges':>10} {'RSS before':>10} {'peak':>8} {'added':>8} "
        f"{'cpu':>8} {'wall':>8} {'test acc':>8} {'val loss':>9}"
    )
    for n in args.sizes:
        for path in args.paths:
            t0 = time.perf_counter()
            run = subprocess.run(
                [sys.executable, __file__, *sys.argv[1:], "--child", json.dumps([n, path])],
                capture_output=True,
                text=True,
            )
            if run.returncode != 0:
                tail = " | ".join(run.stderr.strip().splitlines()[-2:])
                print(f"{n:>9} {path:<7} failed after {time.perf_counter() - t0:.0f}s: {tail}")
                continue
            r = json.loads(run.stdout.strip().splitlines()[-1])
            print(
                f"{n:>9} {path:<7} {r['edges']:>10} {r['rss_before_gib']:>8.2f}G "
                f"{r['peak_gib']:>7.2f}G {r['added_gib']:>7.2f}G {r['cpu_s']:>7.1f}s "
                f"{r['wall_s']:>7.1f}s {100 * r['test_acc']:>7.1f}% {r['val_loss']:>9.6f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
