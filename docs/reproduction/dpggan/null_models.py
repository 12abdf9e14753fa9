"""What graphs with no learned structure score on DPGGAN's Tables 1-2 (docs/reproduction/dpggan).

For each original graph k of a collection, one graph on the same N_k nodes from a null model,
then the `collection` metric's own comparison (server/evaluation/collection.py):

* ``empty``: no edges;
* ``gnm``: M_k edges uniformly at random (Erdős–Rényi G(N, M), the true edge count);
* ``degree``: a configuration-model graph with the original's degree sequence (multi-edges and
  self-loops dropped; it reads the degrees, so it is a reference, not a private release).

    python docs/reproduction/dpggan/null_models.py dblp-collection [imdb-collection] [--seed 0]

Needs LDPGRAPH_DATA (the mirror). Prints one markdown row per null model.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.server.evaluation.collection import TABLE1, compare_collections, original_graphs
from ldpgraph.simulation.datasets.load import load_dataset


def gnm(n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    iu, ju = np.triu_indices(n, k=1)
    keep = rng.choice(iu.size, size=min(m, iu.size), replace=False)
    return np.stack([iu[keep], ju[keep]], axis=1)


def configuration(edges: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    stubs = np.repeat(np.arange(n), np.bincount(edges.ravel(), minlength=n))
    rng.shuffle(stubs)
    pairs = stubs[: stubs.size // 2 * 2].reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return canonical_edges(pairs, n) if pairs.size else np.zeros((0, 2), np.int64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cols = list(TABLE1)
    print(
        "| dataset | null model | "
        + " | ".join(c.upper() for c in cols)
        + " | degree cos | motif cos | s |"
    )
    print("|---" * (len(cols) + 5) + "|")
    for name in args.datasets:
        originals = original_graphs(load_dataset(name))
        models = {
            "empty": lambda e, n, r: np.zeros((0, 2), np.int64),
            "gnm (true M)": lambda e, n, r: gnm(n, len(e), r),
            "configuration (true degrees)": configuration,
        }
        for label, make in models.items():
            rng = np.random.default_rng(args.seed)
            t = time.time()
            generated = [(make(e, n, rng), n) for e, n in originals]
            res = compare_collections(originals, generated)
            t1, t2 = res["table1"], res["table2"]
            cells = [
                f"{t1[c]['abs_diff']:.4g}" if t1[c]["abs_diff"] is not None else "—" for c in cols
            ]
            mc = t2["motif_cosine"]
            print(
                f"| {name} | {label} | "
                + " | ".join(cells)
                + f" | {t2['degree_cosine']:.3f} | {mc:.3f} | {time.time() - t:.0f} |"
                if mc is not None
                else f"| {name} | {label} | "
                + " | ".join(cells)
                + f" | {t2['degree_cosine']:.3f} | — | {time.time() - t:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
