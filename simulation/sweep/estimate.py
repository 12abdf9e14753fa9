"""``ldpgraph sweep --dry-run``'s time estimate: seconds per collection, reconstruction and
training on Cora, scaled by the size of each data set."""

from __future__ import annotations

from .plan import Unit

#: Seconds per training of 300 epochs on Cora, one thread (for --dry-run estimates), scaled
#: by epochs and by the size of the first layer's input (nodes × features) relative to Cora.
TRAIN_SECONDS = {"gcn": 2.0, "sage": 4.5, "gat": 8.0, "mlp": 1.0}
#: Seconds to collect / reconstruct on Cora (scaled by nodes, resp. by n·d for reconstruction).
COLLECT_SECONDS = 0.1
RECONSTRUCT_SECONDS = 0.2
_CORA = (2708, 1433)


def _size(dataset: str, data_root: str) -> tuple[int, int]:
    from ..datasets import DATASETS, parse_dataset_spec

    name, params = parse_dataset_spec(dataset)
    info = DATASETS[name]
    if info.expected is not None and not params:
        return info.expected.nodes, info.expected.features
    from ..datasets import load_dataset

    g = load_dataset(dataset, data_root or None)
    return g.num_nodes, g.num_features


def estimate_seconds(units: list[Unit], workers: int) -> float:
    sizes: dict[str, tuple[int, int]] = {}
    total = 0.0
    for u in units:
        cfg = u.trainings[0].config
        ds = cfg["dataset"]
        if ds not in sizes:
            sizes[ds] = _size(ds, cfg.get("data_root", ""))
        n, d = sizes[ds]
        scale = ((n * d) / (_CORA[0] * _CORA[1])) ** 1.1  # calibrated: Facebook GCN ≈ 37x Cora
        total += COLLECT_SECONDS * n / _CORA[0] + u.releases * RECONSTRUCT_SECONDS * scale
        for t in u.trainings:
            per = TRAIN_SECONDS.get(t.config["model"], 4.0) * t.config["epochs"] / 300
            total += per * max(1.0, scale)
    return total / max(1, workers)
