"""DPGGAN paper (Yang et al., "Secure Deep Graph Generation with Link Differential Privacy",
IJCAI 2021): the two experiments the `ldpgraph run` path cannot make (docs/reproduction/dpggan).

* ``table``: the **non-private baselines** of Tables 1-2, "GVAE (no DP)" (its §4: the same model
  with ordinary gradients, "trained to convergence") and GGAN (DPGGAN with neither clipping nor
  noise; in the official code, not in the tables): the paper's per-graph training
  (``dpg_training paper``, the lanes of ``protocols/central/dpggan_lanes.py``) with σ = 0 (the
  lanes add no noise when the std is 0) and a clip C no gradient reaches (every per-node
  gradient passes unchanged, so the clipped sum is the plain gradient), the true edge count
  (``topk_true``), scored by the ``collection`` metric's own comparison.
* ``linkpriv``: **Figure 3** (link privacy, the paper's §4 "individual link privacy"): hide a
  seeded 20 % of every graph's edges, train on the other 80 %, generate, align the generated
  nodes to the original training graph's by degree rank (descending, ties at random), and
  score the hidden edges against as many sampled non-edges of the original by the aligned
  generated graph (its adjacency, and common neighbours in it), as ROC-AUC pooled over the
  graphs. The references are common neighbours and Adamic-Adar on the original 80 % graph
  itself (what the generated graph is trying not to reveal), the degree product there
  (preferential attachment: what the degree alignment alone can carry) and 0.5.
  Trainings: ``nodp`` (as ``table``), ``paper`` (the paper's DP-SGD at its convention's ε, the
  strict release ``dp-*`` of experiments/dpggan-tables.toml: proven ε ∞) and ``bounded`` (the
  default, proven edge-level ε, at its own defaults: ``--steps`` and ``--q`` do not apply).
  ``--node2vec`` adds the official code's predictor (:func:`node2vec_aucs`): node2vec
  embeddings of the generated graphs and an MLP pair classifier trained on them.

    python experiments/dpggan_nodp.py table DATASET {gvae,ggan} [--steps T] [--q Q] [--seed S] \
        [--gin] [--no-table]
    python experiments/dpggan_nodp.py linkpriv DATASET {gvae,ggan} TRAINING [--epsilon E] \
        [--node2vec] ...

Needs LDPGRAPH_DATA (the mirror). Prints JSON lines.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from ldpgraph.protocols import progress
from ldpgraph.protocols.central.dpggan_model import Plan
from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.server.evaluation.collection import TABLE1, compare_collections, original_graphs
from ldpgraph.simulation.datasets.load import load_dataset

#: A clip no per-node gradient reaches: clipping is the identity (non-private training).
NO_CLIP = 1e12


def _train(parts, model: str, training: str, args) -> list[np.ndarray]:
    """One generated graph (local edges) per part, by ``training``."""
    gan = model == "ggan"
    name = "dpggan" if gan else "dpgvae"
    common = {"delta": 1e-5, "dpg_q": args.q, "dpg_steps": args.steps}
    if training == "bounded":
        from ldpgraph.protocols.central.dpggan_bounded_train import fit_and_generate_bounded

        s = make_protocol(name, epsilon=args.epsilon, dpg_training="bounded")
        results, _ = fit_and_generate_bounded(parts, s.plan(), s.p, gan, args.seed)
        return [g for g, _ in results]
    from ldpgraph.protocols.central.dpggan_lanes import fit_and_generate_many

    if training == "paper":  # the strict release dp-* (σ calibrated to ε over T steps)
        s = make_protocol(name, epsilon=args.epsilon, dpg_training="paper", **common)
        plan, p = s.plan(), s.p
    else:  # nodp: σ = 0, no clipping, the true M (a baseline: no privacy)
        s = make_protocol(name, epsilon=1.0, dpg_training="paper", **common)
        p = s.p.replace(dpg_clip=NO_CLIP, dpg_clip_decay=1.0, dpg_edge_selection="topk_true")
        plan = Plan(sigma=0.0, steps=args.steps, epsilon_train=float("inf"),
                    epsilon_count=0.0, epsilon_paper=float("inf"), delta=1e-5)  # fmt: skip
    return [g for g, _ in fit_and_generate_many(parts, plan, p, gan, args.seed)]


def gin_row(graph, generated: list[tuple[np.ndarray, int]], seed: int) -> dict:
    """Table 2's third column for a generated collection: the ``gin`` metric's 5-fold GIN
    accuracy (final epoch, the page's number; best epoch beside it, optimistic) on the generated
    graphs, each labelled as its original, and on the originals with the same folds and
    weights (the ``gin`` metric's own functions, at its defaults)."""
    from ldpgraph.protocols.rng import stage_rng
    from ldpgraph.server.evaluation.gin import FOLDS, gin_cross_validation
    from ldpgraph.server.evaluation.gin_model import labelled_originals, stratified_folds

    progress.stage("GIN accuracy (Table 2's third column), 5 folds, generated and original")
    originals, labels = labelled_originals(graph)
    folds = stratified_folds(labels, FOLDS, stage_rng(seed, "gin-folds"))
    gen = gin_cross_validation(generated, labels, folds, seed)
    orig = gin_cross_validation(originals, labels, folds, seed)
    return {"gin_generated": round(gen["final"], 4),
            "gin_generated_std": round(gen["final_std"], 4),
            "gin_generated_best": round(gen["best"], 4), "gin_original": round(orig["final"], 4),
            "gin_original_std": round(orig["final_std"], 4),
            "gin_majority": round(float(np.bincount(labels).max() / len(labels)), 4)}  # fmt: skip


def table(args) -> None:
    graph = load_dataset(args.dataset)
    originals = original_graphs(graph)
    t = time.time()
    gen = _train(originals, args.model, "nodp", args)
    train_s = time.time() - t
    row: dict = {}
    if not args.no_table:
        progress.stage("comparing the collections (Tables 1-2)")
        pairs = [(g, n) for g, (_, n) in zip(gen, originals, strict=True)]
        res = compare_collections(originals, pairs)
        t1, t2 = res["table1"], res["table2"]
        row = {c: t1[c]["abs_diff"] for c in TABLE1}
        row.update(degree_cos=t2["degree_cosine"], motif_cos=t2["motif_cosine"])
    if args.gin:
        row.update(gin_row(graph, [(g, n) for g, (_, n) in zip(gen, originals, strict=True)],
                           args.seed))  # fmt: skip
    print(json.dumps({"experiment": "table", "dataset": args.dataset, "model": args.model,
                      "training": "nodp", "steps": args.steps, "q": args.q, "seed": args.seed,
                      "train_s": round(train_s, 1), "total_s": round(time.time() - t, 1),
                      **row}), flush=True)  # fmt: skip


def _split(edges: np.ndarray, n: int, rng: np.random.Generator):
    """(80 % training edges, hidden 20 %, as many sampled non-edges of the full graph)."""
    m = len(edges)
    order = rng.permutation(m)
    hidden_n = int(round(0.2 * m))
    hidden, train = edges[order[:hidden_n]], edges[order[hidden_n:]]
    full = set(map(tuple, edges.tolist()))
    free = [(u, v) for u in range(n) for v in range(u + 1, n) if (u, v) not in full]
    k = min(hidden_n, len(free))
    neg = np.asarray([free[i] for i in rng.choice(len(free), k, replace=False)], np.int64)
    return train, hidden, neg.reshape(-1, 2)


def _adj(edges: np.ndarray, n: int) -> np.ndarray:
    a = np.zeros((n, n), np.float64)  # small graphs only (DBLP ≤ 1 000 nodes a graph)
    if len(edges):
        a[edges[:, 0], edges[:, 1]] = a[edges[:, 1], edges[:, 0]] = 1.0
    return a


def _degree_rank(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Nodes by degree, descending, ties broken at random."""
    return np.lexsort((rng.random(a.shape[0]), -a.sum(1)))


def _scored(splits) -> list[tuple[np.ndarray, np.ndarray]]:
    """(hidden, non-edges) of the graphs that have both (a complete graph has no non-edge)."""
    return [(hid, neg) for _, hid, neg in splits if len(hid) and len(neg)]


def link_aucs(
    splits, sizes, gen, rng: np.random.Generator, align: bool = True, n2v_seed: int | None = None
) -> dict:
    """ROC-AUC, pooled over the graphs, of the hidden edges against the sampled non-edges,
    ranked by the generated graph (``gen_*``, its nodes aligned to the training graph's by
    degree rank; ``align=False``: the identity, for tests) and by the training graph itself
    (``orig_*``: the references). Graphs without hidden edges or non-edges are left out.
    ``n2v_seed``: also the node2vec predictor's AUCs (:func:`node2vec_aucs`, its own streams
    from this seed: the other keys are the same with or without it)."""
    from sklearn.metrics import roc_auc_score

    keys = ("gen_adj", "gen_cn", "orig_cn", "orig_aa", "orig_pa")
    scores: dict[str, list[float]] = {k: [] for k in keys}
    labels: list[int] = []
    gen_pairs: list[np.ndarray] = []  # the scored pairs in generated node ids, per scored graph
    orig_pairs: list[np.ndarray] = []  # the same pairs in original node ids
    scored: list[int] = []
    graphs = zip(splits, sizes, gen, strict=True)
    skipped = 0
    for (tr, hid, neg), n, g in progress.steps(graphs, "scoring graph", len(sizes)):
        if not len(hid) or not len(neg):
            skipped += 1
            continue
        pairs = np.concatenate([hid, neg])
        labels += [1] * len(hid) + [0] * len(neg)
        a_tr, a_gen = _adj(tr, n), _adj(g, n)
        pi = np.arange(n)  # original node at degree rank r -> generated node at rank r
        if align:
            pi[_degree_rank(a_tr, rng)] = _degree_rank(a_gen, rng)
        u, v = pi[pairs[:, 0]], pi[pairs[:, 1]]
        gen_pairs.append(np.stack([u, v], 1))
        orig_pairs.append(pairs)
        scored.append(len(scored) + skipped)
        cn_gen = a_gen @ a_gen
        scores["gen_adj"] += list(a_gen[u, v])
        scores["gen_cn"] += list(cn_gen[u, v] + 1e-3 * a_gen[u, v])
        cn = a_tr @ a_tr
        deg = a_tr.sum(1)
        inv_log = np.where(deg > 1, 1.0 / np.log(np.maximum(deg, 2)), 0.0)
        aa = (a_tr * inv_log) @ a_tr
        scores["orig_cn"] += list(cn[pairs[:, 0], pairs[:, 1]])
        scores["orig_aa"] += list(aa[pairs[:, 0], pairs[:, 1]])
        scores["orig_pa"] += list(deg[pairs[:, 0]] * deg[pairs[:, 1]])
    out = {k: round(float(roc_auc_score(labels, s)), 4) for k, s in scores.items()}
    if n2v_seed is not None:
        y = np.asarray(labels)
        gen_graphs = [canonical_edges(np.asarray(g, np.int64).reshape(-1, 2), n)
                      for g, n in zip(gen, sizes, strict=True)]  # fmt: skip
        train_graphs = [tr for tr, _, _ in splits]
        for prefix, graphs, pairs in (
            ("gen", gen_graphs, gen_pairs),
            ("orig", train_graphs, orig_pairs),
        ):
            final, best = node2vec_aucs(graphs, sizes, scored, pairs, y, n2v_seed)
            out[f"{prefix}_n2v"], out[f"{prefix}_n2v_max"] = round(final, 4), round(best, 4)
    return out


def _union(graphs, sizes) -> tuple[np.ndarray, np.ndarray, int]:
    """The disjoint union of the graphs: its edges, each graph's node offset, its node count."""
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    parts = [
        np.asarray(g, np.int64).reshape(-1, 2) + o
        for g, o in zip(graphs, offsets[:-1], strict=True)
    ]
    edges = np.concatenate(parts) if parts else np.zeros((0, 2), np.int64)
    return edges, offsets[:-1], int(offsets[-1])


def _non_edges(graphs, sizes, offsets, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """``ratio`` times each graph's edge count of its non-edges (at most all of them), drawn
    uniformly without replacement, in union ids."""
    out = []
    for g, n, o in zip(graphs, sizes, offsets, strict=True):
        a = _adj(np.asarray(g, np.int64).reshape(-1, 2), n)
        free = np.argwhere(np.triu(1.0 - a, 1) > 0)
        k = min(len(free), int(round(ratio * len(g))))
        if k:
            out.append(free[rng.choice(len(free), k, replace=False)] + o)
    return np.concatenate(out) if out else np.zeros((0, 2), np.int64)


#: The official code's link predictor for Figure 3: node2vec (128-d) and an MLP on the pair,
#: trained on the graph's edges against 1.5 times as many of its non-edges, 40 epochs.
N2V_NEG_RATIO = 1.5
N2V_EPOCHS = 40
N2V_HIDDEN = 64


def node2vec_aucs(graphs, sizes, scored, pairs, labels, seed: int) -> tuple[float, float]:
    """The AUC of a node2vec link predictor learned on ``graphs`` (one embedding of their
    disjoint union: walks stay inside a graph) for the scored ``pairs`` (per scored graph, index
    ``scored``, in that graph's node ids), at the last epoch and the best of the epochs (the
    official code reports the best epoch's test AUC: optimistic, kept beside the last).

    The pair classifier reads the Hadamard product of the two embeddings (an MLP, one hidden
    layer, Adam, full batch), trained on every edge of ``graphs`` against
    :data:`N2V_NEG_RATIO` times as many of their non-edges."""
    import torch
    from sklearn.metrics import roc_auc_score

    from ldpgraph.protocols.rng import stage_rng, stage_seed
    from ldpgraph.server.evaluation.node2vec import node2vec_embedding

    progress.stage("node2vec on the union of the graphs and its pair classifier")
    edges, offsets, n = _union(graphs, sizes)
    if not len(edges):
        return 0.5, 0.5
    z = torch.from_numpy(node2vec_embedding(edges, n, seed))
    neg = _non_edges(graphs, sizes, offsets, N2V_NEG_RATIO, stage_rng(seed, "fig3-n2v-neg"))
    train = torch.from_numpy(np.concatenate([edges, neg]))
    y = torch.cat([torch.ones(len(edges)), torch.zeros(len(neg))])
    test = torch.from_numpy(
        np.concatenate([p + offsets[i] for i, p in zip(scored, pairs, strict=True)])
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(stage_seed(seed, "fig3-n2v-mlp"))
        mlp = torch.nn.Sequential(
            torch.nn.Linear(z.shape[1], N2V_HIDDEN), torch.nn.ReLU(),
            torch.nn.Linear(N2V_HIDDEN, 1),
        )  # fmt: skip
        opt = torch.optim.Adam(mlp.parameters(), lr=0.01)
        x_train, x_test = z[train[:, 0]] * z[train[:, 1]], z[test[:, 0]] * z[test[:, 1]]
        aucs = []
        for _ in range(N2V_EPOCHS):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(mlp(x_train).squeeze(1), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                aucs.append(float(roc_auc_score(labels, mlp(x_test).squeeze(1).numpy())))
    return aucs[-1], max(aucs)


def linkpriv(args) -> None:
    """Figure 3: train on 80 % of every graph's edges, rank the hidden 20 % (JSON line)."""
    rng = np.random.default_rng(args.seed)
    originals = original_graphs(load_dataset(args.dataset))
    progress.stage(f"hiding 20 % of the edges of {len(originals)} graphs")
    splits = [_split(canonical_edges(e, n), n, rng) for e, n in originals]
    t = time.time()
    gen = _train([(tr, n) for (tr, _, _), (_, n) in zip(splits, originals, strict=True)],
                 args.model, args.training, args)  # fmt: skip
    train_s = time.time() - t
    sizes = [n for _, n in originals]
    auc = link_aucs(splits, sizes, gen, rng, n2v_seed=args.seed if args.node2vec else None)
    pairs = sum(len(hid) + len(neg) for hid, neg in _scored(splits))
    print(json.dumps({"experiment": "linkpriv", "dataset": args.dataset, "model": args.model,
                      "training": args.training,
                      "epsilon": None if args.training == "nodp" else args.epsilon,
                      "steps": "bounded default" if args.training == "bounded" else args.steps,
                      "q": args.q, "seed": args.seed, "pairs": pairs,
                      "train_s": round(train_s, 1), **auc}),
          flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", choices=["table", "linkpriv"])
    ap.add_argument("dataset")
    ap.add_argument("model", choices=["gvae", "ggan"])
    ap.add_argument("training", nargs="?", default="nodp", choices=["nodp", "paper", "bounded"])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--q", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--gin",
        action="store_true",
        help="table: also GIN accuracy (Table 2's third column) on the generated graphs",
    )
    ap.add_argument(
        "--no-table",
        action="store_true",
        help="table: leave out the collection comparison (Tables 1-2's statistics: minutes of "
        "motif counting on IMDB) when a seed's row is already measured and only --gin is wanted",
    )
    ap.add_argument(
        "--node2vec",
        action="store_true",
        help="linkpriv: also the node2vec + MLP predictor (the official code's)",
    )
    args = ap.parse_args()
    if args.no_table and not (args.experiment == "table" and args.gin):
        ap.error("--no-table leaves nothing to measure without table --gin")
    t0 = time.time()

    def say(message: str) -> None:  # the lanes' stage lines, to stderr (stdout is the JSON)
        print(f"[{time.time() - t0:7.1f}s] {message}", file=sys.stderr, flush=True)

    with progress.listening(say):
        (table if args.experiment == "table" else linkpriv)(args)


if __name__ == "__main__":
    main()
