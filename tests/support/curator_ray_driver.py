"""One HoGS release with the curator on threads and on a Ray cluster, compared (a driver process).

Run as ``python -m tests.support.curator_ray_driver ADDRESS [DATASET] [EPSILON] [KEY=VALUE ...]``
(further run keys, e.g. a protocol parameter) from the
repository root: prints one JSON line with whether the edges, weights and features agree, the
blocks each Ray node ran and the seconds of each release. Small blocks (patched module
constants: the driver computes the block bounds) so that a small graph gives many of them.
A process of its own, because a process joins one Ray cluster once and keeps Ray's
one-machine switch from the moment it imports ``ray``.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def releases(
    address: str, dataset: str, epsilon: float, block_entries: int, **extra: object
) -> dict:
    from ldpgraph.protocols.ldp import hogs_features, reported_pairs
    from ldpgraph.simulation import pipeline
    from ldpgraph.simulation.config import RunConfig

    reported_pairs.BLOCK_ENTRIES = block_entries
    hogs_features.FR_BLOCK_BYTES = block_entries * 64
    out: dict = {}
    got = {}
    protocol = str(extra.pop("protocol", "hogs"))
    for where in ("threads", "ray"):
        config = RunConfig(
            protocol, dataset=dataset, epsilon=epsilon, backend="local", epochs=1,
            curator_on=where, ray_address=address if where == "ray" else "", seed=3, **extra,
        ).validate()  # fmt: skip
        prepared = pipeline.prepare(config)
        t0 = time.perf_counter()
        released, _ = pipeline.release(config, prepared.graph, split=prepared.split)
        out[f"seconds_{where}"] = round(time.perf_counter() - t0, 3)
        got[where] = released
    a, b = got["threads"], got["ray"]
    out["edges"] = int(a.edges.shape[0])
    out["same_edges"] = bool(np.array_equal(a.edges, b.edges))
    wa, wb = a.edge_weight, b.edge_weight
    out["same_weights"] = bool(
        (wa is None and wb is None) or (wa is not None and np.array_equal(wa, wb))
    )
    out["same_features"] = bool(np.array_equal(a.x, b.x))
    out["curator"] = b.stats.get("curator", {})
    return out


if __name__ == "__main__":
    address = sys.argv[1]
    dataset = sys.argv[2] if len(sys.argv) > 2 else "synthetic:n=1500,classes=3,d=24,avg_degree=6"
    epsilon = float(sys.argv[3]) if len(sys.argv) > 3 else 8.0
    extra = {}
    for arg in sys.argv[4:]:
        key, _, value = arg.partition("=")
        try:  # a number or boolean as JSON reads it, else the string
            extra[key.replace("-", "_")] = json.loads(value)
        except ValueError:
            extra[key.replace("-", "_")] = value
    out = releases(address, dataset, epsilon, block_entries=1500, **extra)
    print(json.dumps(out), flush=True)
