"""PPGSL's learner on a real graph (issue 35): CPU and wall seconds of ``ppgsl.learn`` (all of
Algorithm 1 lines 3-19: the N₂ learner steps and the ⌈N₂/μ⌉ surrogate retrains of N₁ epochs
each), optionally beside the learner of an earlier commit, measured in the same command.

    python benchmarks/bench_ppgsl.py                                 # Cora-ML at the defaults
    python benchmarks/bench_ppgsl.py --n2 20 --n1 100 --mu 10        # 220 iterations: a look
    python benchmarks/bench_ppgsl.py --n2 20 --n1 100 --mu 10 --before 44140e1 --reps 2

``--before REV`` loads ``protocols/central/ppgsl_model.py`` and ``ppgsl_sparse.py`` as they
were at that commit (``git show``) and runs each learner in its own process, alternating, so
that neither inherits the other's state (torch's imports, the allocator's settings). It then
compares the two learned graphs: the largest weight difference, and one shared Bernoulli draw
on each (released edges, pairs that differ).

``--run`` measures the whole ``ldpgraph run --dataset cora-ml --protocol ppgsl --backend local
--trust-curator --seeded`` instead (loading, the learner, the default metric's GCN), each in its
own process: wall and CPU seconds, the CPU seconds of each of its threads (sampled from
``/proc``, Linux; the first row is the main thread: loading, lane 0, the training's first torch
thread), the run's stage timings and test accuracy, and its fingerprint (``--seeded``: the same
release gives the same fingerprint). With ``--before REV`` the other run is the same command
with ``ppgsl.learn`` replaced by that commit's learner (everything else is the tree's)::

    python benchmarks/bench_ppgsl.py --run --before db02553     # the issue's command, twice

CPU seconds (``time.process_time``, both lanes) are the figure to compare on a shared machine:
wall time there counts the other jobs too, and CPU time itself rises with the load, so only
ratios from one command compare. "main thread's CPU s" is the calling thread's CPU time
(``time.thread_time``): the learner steps and, up to round 4, lane 0's half of each epoch (the
floor of the wall time on an idle 2-core machine; ``--lanes 1``: the whole CPU time). From
round 5 the epoch is one TorchScript call whose lanes run on torch's inter-op threads (lane 0
starts on the main thread and may continue on an inter-op thread after a join): "other
threads' CPU s" lists the threads still alive after the learner (the inter-op threads), and
what neither column holds is the learner's ended Python worker (the negatives).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FILES = (
    "ppgsl_sparse",
    "ppgsl_surrogate",
    "ppgsl_script",
    "ppgsl_lanes",
    "ppgsl_negatives",
    "ppgsl_model",
)  # import order


def _load_learner(module_dir: str | None):
    """``learn`` from the working tree, or from the files of an earlier commit in
    ``module_dir`` (imported under new names inside the package, so relative imports work)."""
    if module_dir is None:
        from ldpgraph.protocols.central import ppgsl_model

        return ppgsl_model.learn
    for name in FILES:
        path = Path(module_dir, f"{name}_before.py")
        if not path.exists():  # not yet written at that commit
            continue
        full = f"ldpgraph.protocols.central.{name}_before"
        spec = importlib.util.spec_from_file_location(full, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules["ldpgraph.protocols.central.ppgsl_model_before"].learn


def _export(rev: str, into: str) -> None:
    for name in FILES:
        got = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:protocols/central/{name}.py"],
            capture_output=True, text=True,
        )  # fmt: skip
        if got.returncode:  # the file did not exist at that commit
            continue
        text = got.stdout
        for other in FILES:
            text = text.replace(f".{other} import", f".{other}_before import")
        Path(into, f"{name}_before.py").write_text(text)


def measure(args: argparse.Namespace, module_dir: str | None) -> dict:
    """One learner run (after a one-iteration warm-up: torch's first optimizer imports
    torch._dynamo, a one-off per process): CPU and wall seconds, the weights and the log."""
    from ldpgraph.protocols.central import ppgsl as pg
    from ldpgraph.protocols.graph import canonical_edges
    from ldpgraph.protocols.params import Params
    from ldpgraph.simulation.datasets import load_dataset

    learn = _load_learner(module_dir)
    graph = load_dataset(args.dataset)
    n = graph.num_nodes
    edges = canonical_edges(np.asarray(graph.edges), n)
    public, sensitive = pg.split_sensitive(edges, 0.1, args.seed)
    x = np.asarray(graph.x)
    defaults = {q.name: q.default for q in pg.PARAMS}
    tiny = Params({**defaults, "ppgsl_epochs": 1, "ppgsl_attack_epochs": 1, "ppgsl_mu": 1})
    p = Params({**defaults, "ppgsl_epochs": args.n2, "ppgsl_attack_epochs": args.n1,
                "ppgsl_mu": args.mu})  # fmt: skip
    # an earlier learner without lanes runs on one core
    lanes = {"lanes": args.lanes} if "lanes" in inspect.signature(learn).parameters else {}
    learn(public, sensitive, x, n, tiny, args.seed, num_threads=args.threads, **lanes)
    threads = _thread_cpu(os.getpid())
    cpu, main, wall = time.process_time(), time.thread_time(), time.perf_counter()
    learned = learn(public, sensitive, x, n, p, args.seed, num_threads=args.threads, **lanes)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    main = time.thread_time() - main
    # the other threads still alive (torch's inter-op threads: the scripted epoch's lanes); the
    # learner's Python worker has ended, its CPU is the rest of ``cpu``
    after = _thread_cpu(os.getpid())
    after.pop(threading.get_native_id(), None)
    others = sorted((c - threads.get(t, 0.0) for t, c in after.items()), reverse=True)
    return {
        "cpu": cpu, "main": main, "wall": wall, "weights": learned.weights.tolist(),
        "others": [c for c in others if c >= 0.05],
        "attack_loss": learned.log["attack_loss"],
        "shape": [n, len(public), len(sensitive), len(learned.pairs)],
    }  # fmt: skip


def run_argv(args: argparse.Namespace) -> list[str]:
    """The whole run's command line (the learner's sizes only where they are not the defaults)."""
    argv = ["run", "--dataset", args.dataset, "--protocol", "ppgsl", "--backend", "local",
            "--trust-curator", "--seeded", "--seed", str(args.seed), "--quiet",
            "--json"]  # fmt: skip
    for flag, value, default in (("--ppgsl-epochs", args.n2, 500),
                                 ("--ppgsl-attack-epochs", args.n1, 500),
                                 ("--ppgsl-mu", args.mu, 50)):  # fmt: skip
        if value != default:
            argv += [flag, str(value)]
    return argv


def run_child(args: argparse.Namespace) -> None:
    """The whole run in this process, with an earlier commit's learner when ``--module-dir``."""
    from ldpgraph.protocols.central import ppgsl
    from ldpgraph.simulation.cli import main as cli_main

    if args.module_dir is not None:
        ppgsl.learn = _load_learner(args.module_dir)
    raise SystemExit(cli_main(run_argv(args)))


def _thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of ``pid`` now."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:  # the thread ended
            continue
        fields = text[text.rindex(")") + 2 :].split()
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def measure_run(args: argparse.Namespace, module_dir: str | None) -> dict:
    """One whole run in a child process, its threads' CPU sampled every 0.1 s."""
    cmd = [sys.executable, __file__, "--run-child", "--dataset", args.dataset, "--n2",
           str(args.n2), "--n1", str(args.n1), "--mu", str(args.mu), "--seed",
           str(args.seed)]  # fmt: skip
    if module_dir is not None:
        cmd += ["--module-dir", module_dir]
    wall = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, text=True)
        threads: dict[int, float] = {}
        while child.poll() is None:
            try:
                threads.update(_thread_cpu(child.pid))
            except OSError:  # it ended between the poll and the read
                pass
            time.sleep(0.1)
        wall = time.perf_counter() - wall
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        if child.returncode:
            raise SystemExit(f"bench_ppgsl: a whole run failed:\n{child.stderr.read()[-3000:]}")
        out.seek(0)
        record = json.loads(out.read())
    main = threads.pop(child.pid, 0.0)
    others = sorted((c for c in threads.values() if c >= 0.05), reverse=True)
    return {"wall": wall, "rusage": ru.ru_utime + ru.ru_stime, "main": main, "others": others,
            "timings": record.get("timings", {}), "fingerprint": record.get("fingerprint", ""),
            "test": (record.get("accuracy") or {}).get("test"),
            "released": (record.get("release") or {}).get("released_edges")}  # fmt: skip


def report_runs(runs: dict[str, list[dict]]) -> None:
    """The whole runs' table (CPU of all children is cumulative: each row takes its own)."""
    print("| run | wall s | CPU s | main thread's CPU s | other threads' CPU s | load s | "
          "reconstruct s | train s | total s | released edges | test acc. | "
          "fingerprint |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, results in runs.items():
        for r in results:
            t = r["timings"]
            test = "-" if r["test"] is None else f"{100 * r['test']:.2f} %"
            others = " + ".join(f"{c:.1f}" for c in r["others"]) or "0"
            print(f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['main']:.1f} | {others} | "
                  f"{t.get('load', 0):.2f} | {t.get('reconstruct', 0):.1f} | "
                  f"{t.get('train', 0):.1f} | {t.get('total', 0):.1f} | {r['released']} | "
                  f"{test} | {r['fingerprint'][:12]} |")  # fmt: skip


def _child(args: argparse.Namespace, module_dir: str | None) -> dict:
    cmd = [sys.executable, __file__, "--dataset", args.dataset, "--n2", str(args.n2),
           "--n1", str(args.n1), "--mu", str(args.mu), "--threads", str(args.threads),
           "--seed", str(args.seed), "--lanes", str(args.lanes), "--child"]  # fmt: skip
    if module_dir is not None:
        cmd += ["--module-dir", module_dir]
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode:
        raise SystemExit(f"bench_ppgsl: a learner run failed:\n{got.stderr[-3000:]}")
    return json.loads(got.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="cora-ml")
    parser.add_argument("--n2", type=int, default=500, help="learner steps (default 500)")
    parser.add_argument("--n1", type=int, default=500, help="surrogate epochs (default 500)")
    parser.add_argument("--mu", type=int, default=50, help="retrain every μ steps (default 50)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lanes", type=int, default=2, help="the learner's CPU lanes (1 or 2)")
    parser.add_argument("--before", metavar="REV", help="also run the learner of this commit")
    parser.add_argument("--reps", type=int, default=1, help="runs of each learner (default 1)")
    parser.add_argument("--run", action="store_true", help="the whole `ldpgraph run` instead")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--module-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args, args.module_dir)))
        return
    if args.run_child:
        run_child(args)

    iterations = args.n2 + math.ceil(args.n2 / args.mu) * args.n1
    full = 500 + math.ceil(500 / 50) * 500
    with tempfile.TemporaryDirectory() as tmp:
        sides: dict[str, str | None] = {}
        if args.before:
            _export(args.before, tmp)
            sides[f"before ({args.before})"] = tmp
        sides["now"] = None
        runs: dict[str, list[dict]] = {name: [] for name in sides}
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # sums every child that ended
        used = ru.ru_utime + ru.ru_stime  # git's, before the runs
        for _ in range(args.reps):
            for name, module_dir in sides.items():
                if not args.run:
                    runs[name].append(_child(args, module_dir))
                    continue
                got = measure_run(args, module_dir)
                got["cpu"], used = got["rusage"] - used, got["rusage"]
                runs[name].append(got)
    if args.run:
        print(f"the whole run: ldpgraph {' '.join(run_argv(args))}")
        report_runs(runs)
        return
    n, public, sensitive, pairs = runs["now"][0]["shape"]
    print(f"{args.dataset}: {n} nodes, {public} public edges, {sensitive} sensitive, {pairs} "
          f"parameterised pairs; N2 {args.n2}, N1 {args.n1}, mu {args.mu} ({iterations} "
          f"iterations), {args.threads} thread(s), each learner in its own process")  # fmt: skip
    print("| learner | CPU s | main thread's CPU s | other threads' CPU s | wall s | CPU ms / "
          "iteration | CPU s at the defaults (5 500 it.) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    best = {}
    for name, results in runs.items():
        cpus = ", ".join(f"{r['cpu']:.2f}" for r in results)
        walls = ", ".join(f"{r['wall']:.1f}" for r in results)
        mains = ", ".join(f"{r['main']:.2f}" for r in results)
        others = "; ".join(" + ".join(f"{c:.1f}" for c in r.get("others", [])) or "0"
                           for r in results)  # fmt: skip
        best[name] = min(r["cpu"] for r in results) / iterations
        print(f"| {name} | {cpus} | {mains} | {others} | {walls} | {1e3 * best[name]:.1f} | "
              f"{best[name] * full:.0f} |")  # fmt: skip
    now = np.asarray(runs["now"][0]["weights"])
    draw = np.random.default_rng(args.seed).random(len(now))
    losses = runs["now"][0]["attack_loss"]
    print(f"now: expected released edges {now.sum():.1f}, one draw releases "
          f"{int((draw < now).sum())}; surrogate losses {losses}")  # fmt: skip
    if args.before:
        name = f"before ({args.before})"
        old = np.asarray(runs[name][0]["weights"])
        diff = np.abs(old - now)
        print(f"CPU per iteration (best of each): {best[name] / best['now']:.2f}x less than "
              f"before")  # fmt: skip
        print(f"before: one draw releases {int((draw < old).sum())}, "
              f"{int(((draw < old) != (draw < now)).sum())} pairs differ; weights differ by "
              f"> 1e-3 on {int((diff > 1e-3).sum())} of {len(now)} pairs (max {diff.max():.3g}); "
              f"surrogate losses {runs[name][0]['attack_loss']}")  # fmt: skip


if __name__ == "__main__":
    main()
