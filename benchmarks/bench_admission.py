"""Node admission in the ``local`` backend: node by node against all at once.

Every node of a simulated graph passes its guard before each round. Both ways admit all n
nodes (one shared :class:`~ldpgraph.client.budget.NodeSettings`, a pinned seed as the local
backend's default, a budget of exactly the run) to ``--rounds`` rounds on an in-memory ledger:

* ``by node``: the former path, :meth:`Book.admit` for each node over a dict keyed by
  ``str(node)`` (the ledger copied per round, a list of node ids in, a list out);
* ``at once``: :func:`~ldpgraph.client.budget.admit_many`, the spends one float64 array and a
  bool mask per seeded round (an id array in, an id array out).

Printed per n and way: wall seconds of all rounds, the peak RSS added while admitting (sampled
every 5 ms) and, measured in a second pass under tracemalloc (slower, so not timed), the peak
of Python allocations and what the ledger keeps after the last round. Each way runs in its own
process, so its memory figures are its own.

    python benchmarks/bench_admission.py                        # n = 1e5, 1e6; 2 rounds
    python benchmarks/bench_admission.py --sizes 100000 --rounds 3
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc

from rss import peak_rss

WAYS = ("by node", "at once")


def by_node(n: int, rounds: int) -> object:
    """The former admission, kept here as the reference: a dict book, node after node."""
    from ldpgraph.client.budget import Book, NodeSettings, Refusal

    settings = NodeSettings(budget=1.0, seed=0)
    book = Book()
    for round_ in range(rounds):
        book = Book(dict(book.spent), dict(book.seeded_rounds))  # the former Ledger.open()
        admitted: list[int] = []
        refused: dict[int, str] = {}
        for node in list(range(n)):
            try:
                book.admit(node, 1.0 / rounds, round_, settings, False)
                admitted.append(node)
            except Refusal as exc:
                refused[node] = str(exc)
        assert len(admitted) == n
    return book


def at_once(n: int, rounds: int) -> object:
    """Admission through :func:`admit_many` on the in-memory ledger."""
    import numpy as np

    from ldpgraph.client.budget import Ledger, NodeSettings, admit_many

    settings = NodeSettings(budget=1.0, seed=0)
    ledger = Ledger(None, "local")
    for round_ in range(rounds):
        nodes = np.arange(n, dtype=np.int64)
        admission = admit_many(ledger, nodes, 1.0 / rounds, round_, settings, False)
        assert admission.admitted.size == n
        del nodes, admission  # a round's ids go with the round, as the lists do above
    return ledger


def one(n: int, way: str, rounds: int) -> dict:
    """Both measurements of one way at one n, in this process."""
    run = by_node if way == "by node" else at_once
    import ldpgraph.client.budget  # noqa: F401  (imports are not the admission's cost)

    gc.collect()
    with peak_rss() as measured:
        t0 = time.perf_counter()
        kept = run(n, rounds)
        seconds = time.perf_counter() - t0
    del kept
    gc.collect()
    tracemalloc.start()
    kept = run(n, rounds)
    _, peak = tracemalloc.get_traced_memory()
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return {
        "n": n,
        "way": way,
        "seconds": round(seconds, 3),
        "rss_added_mib": measured.added_mib,
        "traced_peak_mib": round(peak / 2**20, 1),
        "ledger_mib": round(held / 2**20, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child = json.loads(args.child)
        print(json.dumps(one(child["n"], child["way"], child["rounds"])))
        return
    rows = []
    load = os.getloadavg()[0]
    if not args.json:
        cpus = os.cpu_count()
        print(f"admission of n nodes to {args.rounds} rounds; {cpus} CPUs, load {load:.1f}")
        print(f"{'n':>9} {'way':>8} {'s':>8} {'RSS+ MiB':>9} {'peak MiB':>9} {'kept MiB':>9}")
    for n in args.sizes:
        for way in WAYS:
            spec = json.dumps({"n": n, "way": way, "rounds": args.rounds})
            out = subprocess.run(
                [sys.executable, __file__, "--child", spec],
                check=True,
                capture_output=True,
                text=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            if not args.json:
                print(
                    f"{n:>9} {way:>8} {row['seconds']:>8.3f} {row['rss_added_mib']:>9.1f} "
                    f"{row['traced_peak_mib']:>9.1f} {row['ledger_mib']:>9.1f}",
                    flush=True,
                )
    if args.json:
        print(json.dumps({"load": load, "args": vars(args), "rows": rows}, indent=2))
    else:
        print(
            "\nRSS+: peak resident memory added while admitting; peak: peak of Python "
            "allocations (tracemalloc); kept: what the ledger holds after the last round."
        )


if __name__ == "__main__":
    main()
