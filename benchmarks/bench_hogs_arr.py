"""hogs-arr against full HoGS at matched ε: test accuracy and the size of the reports.

Every (dataset, ε, entry, seed) is one ``ldpgraph run --json`` in its own process, written to
``OUT/<dataset>-eps<ε>-<entry>-s<seed>.json`` as it finishes; a file already there is not run
again (resumable). Then one markdown table: test accuracy (mean ± std over the seeds), μ, the
reported 1s the server received (sum over nodes, mean over seeds) and their share of HoGS's at
the same ε and seeds, the released edges, and the reconstruction time.

Training is the ``fast`` grid's one configuration of the HoGS figures (GCN, 200 epochs, lr 0.01,
dropout 0, weight decay 0, centred features), feature share 0.1, τ 0.5, l 1.

    python benchmarks/bench_hogs_arr.py --datasets cora --epsilons 4,8 --seeds 0,1 \
        --entries hogs,default,mu0.889,mu0.5,mu0.2,mu0.05 --out results/hogs-arr
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

TRAIN = ["--model", "gcn", "--epochs", "200", "--lr", "0.01", "--dropout", "0"]
TRAIN += ["--weight-decay", "0"]


def entry_args(entry: str) -> list[str]:
    """``hogs``; ``default`` (hogs-arr at its defaults: the report cap); ``muX``
    (hogs-arr with μ = X, no target); then optional ``-tauY`` (τ = Y) and ``-lZ`` (Z feature
    reconstruction steps): ``mu0.5-tau0.99-l0``."""
    head, *rest = entry.split("-")
    if head == "hogs":
        args = ["--protocol", "hogs"]
    elif head == "default":
        args = ["--protocol", "hogs-arr"]
    elif head.startswith("mu"):
        args = ["--protocol", "hogs-arr", "--mu", head[2:], "--report-cap", "0"]
    else:
        raise SystemExit(f"unknown entry {entry!r}")
    for token in rest:
        if token.startswith("tau"):
            args += ["--tau", token[3:]]
        elif token.startswith("l"):
            args += ["--steps", token[1:]]
        else:
            raise SystemExit(f"unknown entry {entry!r}")
    return args


def run_one(dataset: str, eps: float, entry: str, seed: int, out: Path) -> dict:
    path = out / f"{dataset}-eps{eps:g}-{entry}-s{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    cmd = [sys.executable, "-m", "ldpgraph.simulation.cli", "run", "--dataset", dataset]
    cmd += ["--epsilon", str(eps), "--seed", str(seed), "--backend", "local"]
    cmd += [*entry_args(entry), *TRAIN, "--json", "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout)
    path.write_text(json.dumps(result, indent=1))
    return result


def table(rows: dict[tuple, list[dict]], entries: list[str]) -> str:
    lines = [
        "| dataset | ε | entry | μ | test acc. % | reported 1s | share of HoGS's | edges | "
        "reconstruct s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, eps), by_entry in rows.items():
        base = by_entry.get("hogs") or next(
            (runs for entry, runs in by_entry.items() if entry.startswith("hogs")), None
        )
        base_ones = statistics.mean(r["release"]["reported_ones"] for r in base) if base else None
        for entry in entries:
            runs = by_entry.get(entry)
            if not runs:
                continue
            acc = [100 * r["accuracy"]["test"] for r in runs]
            ones = statistics.mean(r["release"]["reported_ones"] for r in runs)
            mu = runs[0]["release"].get("mu", 1.0)
            share = f"{ones / base_ones:.3f}" if base_ones else "–"
            sd = statistics.stdev(acc) if len(acc) > 1 else 0.0
            edges = statistics.mean(r["graph"]["synthetic"]["edges"] for r in runs)
            rec = statistics.mean(r["timings"]["reconstruct"] for r in runs)
            lines.append(
                f"| {dataset} | {eps:g} | {entry} | {mu:.3g} | {statistics.mean(acc):.1f} ± "
                f"{sd:.1f} | {ones:,.0f} | {share} | {edges:,.0f} | {rec:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="cora")
    ap.add_argument("--epsilons", default="4,8")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--entries", default="hogs,default,mu0.889,mu0.5,mu0.2,mu0.05")
    ap.add_argument("--out", default="results/hogs-arr")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    entries = args.entries.split(",")
    rows: dict[tuple, dict[str, list[dict]]] = {}
    for dataset in args.datasets.split(","):
        for eps in (float(e) for e in args.epsilons.split(",")):
            for entry in entries:
                for seed in (int(s) for s in args.seeds.split(",")):
                    r = run_one(dataset, eps, entry, seed, out)
                    rows.setdefault((dataset, eps), {}).setdefault(entry, []).append(r)
                    print(
                        f"{dataset} ε={eps:g} {entry} seed {seed}: "
                        f"{100 * r['accuracy']['test']:.1f} %, {r['release']['reported_ones']} "
                        f"reported 1s, fingerprint {r['fingerprint'][:12]}",
                        file=sys.stderr,
                        flush=True,
                    )
    print(table(rows, entries))


if __name__ == "__main__":
    main()
