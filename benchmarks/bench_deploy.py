"""Loopback deployment benchmark: wall time and memory of ``ldpgraph run --backend deploy``.

Starts, with the deploy/ scripts, a SuperLink (TLS, SuperNode authentication) and S SuperNodes
on 127.0.0.1, each hosting one node file of the dataset, submits one run and samples the RSS
of every process it started (SuperLink, its SuperExec and ServerApp, the SuperNodes with their
SuperExec and ClientApp children, the submitter and `flwr run`) every 0.1 s. Prints the run's
wall time, the peak of the summed RSS of all processes, and the peak summed RSS of each
SuperNode's process group. Everything is stopped at the end.

    .venv/bin/python benchmarks/bench_deploy.py [--dataset cora] [--nodes-per-file 700]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent
TAG = "LDPGRAPH_BENCH_DEPLOY"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tagged(tag: str) -> dict[int, tuple[int, int]]:
    """pid -> (process group, RSS bytes) of live processes carrying the tag."""
    out = {}
    needle = f"{TAG}={tag}".encode()
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if needle not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            rss = int(Path(f"/proc/{entry}/statm").read_text().split()[1]) * page
            out[int(entry)] = (int(stat[2]), rss)
        except (OSError, IndexError, ValueError):
            continue
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--nodes-per-file", type=int, default=700)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    tag = uuid.uuid4().hex
    work = Path(tempfile.mkdtemp(prefix="ldpg-bench-deploy-"))
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "FLWR_HOME": str(work / "flwr-home"),
        "FLWR_TELEMETRY_ENABLED": "0",
        TAG: tag,
    }
    procs: dict[str, subprocess.Popen] = {}

    def sh(*cmd) -> None:
        done = subprocess.run([str(c) for c in cmd], env=env, cwd=work, capture_output=True)
        if done.returncode:
            raise RuntimeError(f"{cmd[0]} failed: {done.stderr.decode()[-2000:]}")

    def start(name: str, *cmd) -> subprocess.Popen:
        with open(work / f"{name}.log", "w") as log:
            procs[name] = subprocess.Popen(
                [str(c) for c in cmd], env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        return procs[name]

    def wait_log(name: str, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in (work / f"{name}.log").read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: no {text!r} within {timeout} s")
            time.sleep(0.2)

    try:
        port = free_port()
        link = f"127.0.0.1:{port}"
        sh(DEPLOY / "make-certs.sh", "-o", "certs", "127.0.0.1")
        sh(BIN / "ldpgraph", "partition", "--dataset", args.dataset, "--out", "part",
           "--nodes-per-file", args.nodes_per_file)  # fmt: skip
        blocks = sorted(p.name for p in (work / "part").glob("nodes-*"))
        names = [f"sn{i}" for i in range(len(blocks))]
        sh(DEPLOY / "make-supernode-keys.sh", "-o", "keys", *names)
        start("superlink", DEPLOY / "start-superlink.sh", "--certs", "certs", "--host",
              "127.0.0.1", "--port", port)  # fmt: skip
        wait_log("superlink", "Uvicorn running")
        sh(DEPLOY / "register-supernodes.sh", "--superlink", link, "--ca", "certs/ca.crt",
           *(f"keys/{n}.pub" for n in names))  # fmt: skip
        for name, block in zip(names, blocks, strict=True):
            start(name, DEPLOY / "start-supernode.sh", "--superlink", link, "--ca",
                  "certs/ca.crt", "--key", f"keys/{name}", "--data", f"part/{block}",
                  "--port", free_port(), "--budget", "8")  # fmt: skip
        for name in names:
            wait_log(name, "SuperNode ID")

        peak_all, peak_group = 0, {}
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak_all
            while not stop.is_set():
                snap = tagged(tag)
                peak_all = max(peak_all, sum(rss for _, rss in snap.values()))
                for name in names:
                    pgid = procs[name].pid
                    total = sum(rss for g, rss in snap.values() if g == pgid)
                    peak_group[name] = max(peak_group.get(name, 0), total)
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        run = start("run", BIN / "ldpgraph", "run", "--backend", "deploy", "--superlink", link,
                    "--root-certificates", "certs/ca.crt", "--curator", "part/curator.json",
                    "--epochs", args.epochs, "--seed", args.seed, "--json", "--quiet")  # fmt: skip
        run.wait(timeout=1800)
        wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
        out = (work / "run.log").read_text()
        if run.returncode != 0:
            print(out[-3000:], file=sys.stderr)
            return 1
        record = json.loads(out[out.index("{") : out.rindex("}") + 1])
        mib = 1 << 20
        print(
            json.dumps(
                {
                    "dataset": args.dataset,
                    "nodes": record["graph"]["original"]["nodes"],
                    "supernodes": len(names),
                    "nodes_per_file": args.nodes_per_file,
                    "epochs": args.epochs,
                    "wall_s": round(wall, 1),
                    "timings_s": record["timings"],
                    "round0": record["release"]["collection"]["rounds"][0],
                    "peak_rss_all_mib": round(peak_all / mib),
                    "peak_rss_supernode_mib": {k: round(v / mib) for k, v in peak_group.items()},
                    "fingerprint": record["fingerprint"],
                },
                indent=1,
            )
        )
        return 0
    finally:
        for proc in procs.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        while tagged(tag) and time.monotonic() < deadline:
            time.sleep(0.3)
        for pid in tagged(tag):
            os.kill(pid, signal.SIGKILL)
        subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    sys.exit(main())
