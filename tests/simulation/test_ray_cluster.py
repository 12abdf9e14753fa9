"""Ray clusters: docs/ray.md's one-machine commands on loopback, and the ``ray up`` config.

A module fixture starts a Ray head exactly as docs/ray.md's "On one machine" section says (its
``ray start`` line, with a free port and a private temp dir, plus every other port pinned to
free ones so that it cannot collide with another Ray on a shared machine), runs that page's
``ldpgraph run`` and ``ldpgraph sweep`` against it and ends it by the pids of the processes
under its temp dir (never ``ray stop``, which matches other people's Ray by name). While the
commands run, every TCP socket of the cluster's and the driver's processes is checked to be on
loopback.
"""

from __future__ import annotations

import ipaddress
import os
import random
import re
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ldpgraph.simulation.cli import main
from ldpgraph.simulation.processes import kill_under, pids_under
from ldpgraph.simulation.results.store import ResultsStore

# Real SuperLinks, SuperNodes and Ray clusters as processes: end-to-end, out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.engine]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


# --- the commands of docs/ray.md ---------------------------------------------------------------


def readme_commands() -> list[str]:
    """The commands of the first ``bash`` block of docs/ray.md's "On one machine" section."""
    text = (ROOT / "docs" / "ray.md").read_text()
    section = text.split("## On one machine", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    joined = block.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        line = line.split("  #", 1)[0].split("    #", 1)[0].strip()
        if line and not line.startswith("#"):
            out.append(" ".join(line.split()))
    return out


def readme_command(prefix: str) -> list[str]:
    commands = readme_commands()
    found = [c for c in commands if c.startswith(prefix)]
    found = found or [c for c in commands if f" {prefix}" in c]
    assert len(found) == 1, (prefix, readme_commands())
    return shlex.split(found[0])


# --- ports and sockets -------------------------------------------------------------------------


def _port_free(port: int) -> bool:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def free_ports(n: int) -> list[int]:
    """``n`` consecutive free ports (Ray's worker range must be contiguous)."""
    for _ in range(200):
        base = random.randrange(20000, 30000 - n)
        if all(_port_free(p) for p in range(base, base + n)):
            return list(range(base, base + n))
    raise RuntimeError("no free port range")


def _hex_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(text)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words)


def tcp_sockets() -> dict[int, tuple[str, int, str, str]]:
    """inode -> (local ip, local port, remote ip, state) of this namespace's TCP sockets."""
    out = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            lip, lport = parts[1].split(":")
            rip, _ = parts[2].split(":")
            local, remote = _hex_ip(lip), _hex_ip(rip)
            out[int(parts[9])] = (_plain(local), int(lport, 16), _plain(remote), parts[3])
    return out


def _plain(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    mapped = getattr(ip, "ipv4_mapped", None)
    return str(mapped or ip)


def socket_inodes(pid: int) -> set[int]:
    found = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            found.add(int(link[8:-1]))
    return found


def _descendants(pid: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(entry))
    out, frontier = {pid}, [pid]
    while frontier:
        frontier = [k for p in frontier for k in kids.get(p, []) if k not in out]
        out.update(frontier)
    return out


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()[:300]
    except OSError:
        return "?"


@dataclass
class Watch:
    """What the cluster's and the driver's processes had open, sampled while a command ran."""

    listening: set[tuple[str, int, str]] = field(default_factory=set)
    connected: set[tuple[str, str]] = field(default_factory=set)
    processes: set[str] = field(default_factory=set)

    def sample(self, pids: set[int]) -> None:
        table = tcp_sockets()
        for pid in pids:
            name = _comm(pid)
            self.processes.add(name)
            for inode in socket_inodes(pid):
                if inode not in table:
                    continue
                local, port, remote, state = table[inode]
                if state == "0A":  # LISTEN
                    self.listening.add((local, port, name.split(" ")[0]))
                else:
                    self.connected.add((local, remote))

    def off_loopback(self) -> list[str]:
        bad = [f"{ip}:{port} ({who})" for ip, port, who in self.listening if not _loop(ip)]
        bad += [f"{a} -> {b}" for a, b in self.connected if not (_loop(a) and _loop(b))]
        return bad


def _loop(ip: str) -> bool:
    return ipaddress.ip_address(ip).is_loopback


def run_watched(
    cmd: list[str], head: Head, timeout: float, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen, str, Watch]:
    """Run ``cmd`` (from the repository root), sampling the sockets of the cluster's processes
    and of the command's process tree until it ends."""
    watch = Watch()
    log = head.temp / f"cmd-{time.monotonic_ns()}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env or head.env
        )
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{cmd[:3]} ran over {timeout} s")
                watch.sample(set(pids_under(str(head.temp))) | _descendants(proc.pid))
                time.sleep(0.25)
        finally:
            if proc.poll() is None:
                for pid in sorted(_descendants(proc.pid), reverse=True):
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
                proc.wait()
    text = log.read_text()
    log.unlink()
    return proc, text, watch


# --- the head ----------------------------------------------------------------------------------


@dataclass
class Head:
    address: str
    temp: Path
    env: dict[str, str]
    started: Watch
    dashboard: str = ""


@pytest.fixture(scope="module")
def head():
    """docs/ray.md's ``ray start --head`` on loopback, in a private short temp dir; ended by the
    pids under that dir, also when the tests fail."""
    temp = Path(tempfile.mkdtemp(prefix="ldpg-rt-", dir="/tmp"))  # Ray's socket paths: short
    ports = free_ports(60)
    gcs, client, nm, om, agent, agent_grpc, metrics, renv, dash = ports[:9]
    workers = ports[10:]
    cmd = readme_command("ray start")
    env_prefix = {}
    while "=" in cmd[0]:  # VAR=value ray start …
        key, value = cmd.pop(0).split("=", 1)
        env_prefix[key] = value
    assert cmd[:3] == ["ray", "start", "--head"], cmd
    assert next(a for a in cmd if a.startswith("--port=")) == "--port=6379", cmd
    cmd = [
        str(BIN / "ray"),
        *(
            f"--port={gcs}"
            if a.startswith("--port=")
            else f"--temp-dir={temp}"
            if a.startswith("--temp-dir=")
            # `ray job submit` talks to the dashboard's job API: on, and on loopback.
            else "--include-dashboard=true"
            if a.startswith("--include-dashboard")
            else a
            for a in cmd[1:]
            if not a.startswith("--dashboard-host")
        ),
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dash}",
        # Pinned as well, to free ports: on a shared machine Ray's fixed defaults collide.
        f"--ray-client-server-port={client}",
        f"--node-manager-port={nm}",
        f"--object-manager-port={om}",
        f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}",
        f"--runtime-env-agent-port={renv}",
        f"--min-worker-port={workers[0]}",
        f"--max-worker-port={workers[-1]}",
    ]
    ray_env = {
        **os.environ,
        **env_prefix,
        "RAY_USAGE_STATS_ENABLED": "0",
        # The workers' environment comes from the head: keep their caches in the temp dir.
        "LDPGRAPH_CACHE": str(temp / "cache"),
        "FLWR_HOME": str(temp / "flwr"),
        "FLWR_TELEMETRY_ENABLED": "0",
        # A shared test machine may be short of memory because of other jobs: Ray's own OOM
        # killer would then kill our small workers. The kernel's still guards the machine.
        "RAY_memory_monitor_refresh_ms": "0",
        # PyG writes a generated module per process into $TMPDIR and never removes it.
        "TMPDIR": str(temp / "tmp"),
    }
    # ldpgraph itself runs without Ray's one-machine switch: it keeps a loopback head on
    # loopback by itself (see ldpgraph.simulation.raycluster).
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    env.update(RAY_USAGE_STATS_ENABLED="0", TMPDIR=str(temp / "tmp"))
    (temp / "tmp").mkdir()
    try:
        started = subprocess.run(
            cmd, env=ray_env, capture_output=True, text=True, timeout=120, cwd=temp
        )
        assert started.returncode == 0, started.stdout + started.stderr
        watch = Watch()
        watch.sample(set(pids_under(str(temp))))
        yield Head(f"127.0.0.1:{gcs}", temp, env, watch, f"http://127.0.0.1:{dash}")
    finally:
        kill_under(str(temp))
        left = pids_under(str(temp))
        shutil.rmtree(temp, ignore_errors=True)
        assert left == [], f"Ray processes left: {left}"
        assert not temp.exists()


def _address(cmd: list[str], head: Head) -> list[str]:
    """docs/ray.md's command with the head's address and ldpgraph from this venv."""
    readme = "127.0.0.1:6379"
    assert readme in cmd, cmd
    out = [head.address if a == readme else a for a in cmd]
    return [str(BIN / out[0]), *out[1:]]


def test_head_listens_on_loopback_only(head: Head) -> None:
    assert head.started.listening, "the head listens nowhere?"
    print("head listens on", sorted(head.started.listening))  # shown with pytest -s
    assert head.started.off_loopback() == []
    assert any(p == int(head.address.rsplit(":", 1)[1]) for _, p, _ in head.started.listening)


def test_run_uses_the_cluster(head: Head) -> None:
    before = set(pids_under(str(head.temp)))
    cmd = _address(readme_command("ldpgraph run"), head)
    proc, out, watch = run_watched(cmd, head, timeout=120)
    assert proc.returncode == 0, out[-3000:]
    assert "backend flower" in out and re.search(r"asked 60\s+replied 60\b", out), out[-3000:]
    # Flower's ClientApp actors ran on the cluster (as children of its raylet) ...
    assert any("ClientAppActor" in p for p in watch.processes), watch.processes
    # ... no Ray of the run's own was started (only the cluster's GCS), ...
    assert sum("gcs_server" in p for p in watch.processes) == 1, watch.processes
    # ... the cluster is still up, and everything stayed on loopback.
    print("during run:", sorted(watch.listening), sorted(watch.connected))
    assert before <= set(pids_under(str(head.temp)))
    assert watch.off_loopback() == [], watch.off_loopback()


SWEEP_ROWS = 8 + 4  # deploy/ray-smoke.toml: 2 cells x 2 lr x 2 seeds, then 2 x 2 final runs


def _rows(store: Path) -> dict[str, dict]:
    with ResultsStore(store) as s:
        return {r["run_key"]: r for r in s.rows()}


def wait_for_dashboard(head: Head, timeout: float = 120.0) -> None:
    """``ray start`` returns before the dashboard serves its job API on a busy machine."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{head.dashboard}/api/version", timeout=3) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            logs = head.temp / "session_latest" / "logs"
            text = "".join(
                f"--- {name}\n" + (logs / name).read_text(errors="replace")[-1500:]
                for name in ("dashboard.err", "dashboard.log")
                if (logs / name).is_file()
            )
            raise AssertionError(f"the dashboard never answered at {head.dashboard}:\n{text}")
        time.sleep(1)


def _tasks_named(head: Head, name: str) -> int:
    """How many tasks called ``name`` the cluster has run (Ray's state API, through the head's
    dashboard)."""
    from ray.util.state import list_tasks

    tasks = list_tasks(
        address=head.dashboard,
        filters=[("name", "=", name)],
        limit=1000,
        raise_on_missing_output=False,
    )
    return len(tasks)


def test_sweep_on_the_cluster_is_resumable_and_matches_the_pool(head: Head, tmp_path: Path):
    """docs/ray.md's sweep on the cluster (``--ray-address``) gives the process pool's numbers;
    interrupted, it is resumed by Ray's own way to run a program on a cluster, ``ray job
    submit -- ldpgraph sweep …`` (the job's driver gets RAY_ADDRESS from Ray), which redoes
    only the lost and failed runs. (One cluster sweep for both: a fresh sweep through the job
    would take the same path as the first one's.)"""
    store = tmp_path / "ray.db"
    cmd = [
        str(store) if a == "ray-smoke.db" else a
        for a in _address(readme_command("ldpgraph sweep"), head)
    ]
    proc, out, watch = run_watched(cmd, head, timeout=300)
    assert proc.returncode == 0, out[-3000:]
    assert "Ray cluster at 127.0.0.1" in out and "8/8" in out and "4/4" in out, out[-3000:]
    rows = _rows(store)
    assert len(rows) == SWEEP_ROWS and {r["status"] for r in rows.values()} == {"done"}
    assert {r["pid"] for r in rows.values()} == {proc.pid}  # recorded by the driver
    # the units ran as Ray tasks: seen while one ran, or (a short task the sampling missed, as
    # on a fast or a loaded machine) in the cluster's own record of its tasks
    seen = sum("ray::unit_results" in p for p in watch.processes)
    assert seen >= 1 or _tasks_named(head, "unit_results") >= 1, watch.processes
    assert watch.off_loopback() == [], watch.off_loopback()

    # The same sweep through the process pool gives the same numbers.
    pool = tmp_path / "pool.db"
    toml = str(ROOT / "deploy" / "ray-smoke.toml")
    pooled = subprocess.run(
        [str(BIN / "ldpgraph"), "sweep", toml, "--grid", "small", "--store", str(pool),
         "--workers", "0", "--quiet"],
        env=head.env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pooled.returncode == 0, pooled.stderr[-3000:]
    pooled = _rows(pool)
    assert set(pooled) == set(rows)
    for key, row in rows.items():
        assert row["val_acc"] == pooled[key]["val_acc"]
        assert row["test_acc"] == pooled[key]["test_acc"]

    # Interrupted: two search runs lost, one final run failed. Only those are redone, by a
    # Ray job whose driver finds the cluster through RAY_ADDRESS.
    lost = sorted(k for k, r in rows.items() if (r["extra"] or {}).get("phase") == "search")[:2]
    failed = next(k for k, r in rows.items() if (r["extra"] or {}).get("phase") == "final")
    with sqlite3.connect(store) as con:
        con.executemany("DELETE FROM runs WHERE run_key = ?", [(k,) for k in lost])
        con.execute("UPDATE runs SET status = 'failed' WHERE run_key = ?", (failed,))
    wait_for_dashboard(head)
    job = [
        str(BIN / "ray"), "job", "submit", "--address", head.dashboard, "--",
        str(BIN / "ldpgraph"), "sweep", toml, "--grid", "small", "--store", str(store),
        "--workers", "0",
    ]  # fmt: skip
    first = proc.pid
    proc, out, watch = run_watched(job, head, timeout=400)
    assert proc.returncode == 0, out[-3000:]
    assert "succeeded" in out, out[-3000:]
    assert "Ray cluster at 127.0.0.1" in out, out[-3000:]  # the job's driver used the cluster
    assert "search: 2 of 8 trainings" in out and "final: 1 of 4 trainings" in out, out[-3000:]
    again = _rows(store)
    assert {r["status"] for r in again.values()} == {"done"} and set(again) == set(rows)
    redone = {k for k, r in again.items() if r["pid"] != first}
    assert redone == {*lost, failed}
    assert all(again[k]["val_acc"] == rows[k]["val_acc"] for k in redone)
    assert watch.off_loopback() == [], watch.off_loopback()


def test_flwr_run_backend_joins_the_cluster_of_ray_address(head: Head) -> None:
    """``RAY_ADDRESS=… ldpgraph.run(backend="flower")`` goes through ``flwr run`` and joins that
    cluster, as ``--ray-address`` does (before, Ray refused our ``num_cpus`` for an existing
    cluster): the local SuperLink's simulation runs its ClientApp actors there, with no Ray of
    its own, everything on loopback, and the cluster stays up. One run for the environment
    variable and the API (``ldpgraph run`` with the flag is test_run_uses_the_cluster; the
    ``ray_address=`` keyword is the flag's config field, test_ray_init_args_…)."""
    before = set(pids_under(str(head.temp)))
    script = (
        "import ldpgraph\n"
        "r = ldpgraph.run(dataset='synthetic:n=60,classes=3,d=8,avg_degree=4', epochs=3,\n"
        "                 nodes_per_client=20)\n"
        "c = r.record['release']['collection']\n"
        "print('replied', c['rounds'][0]['replied'], 'supernodes', c['supernodes'])\n"
    )
    env = {**head.env, "RAY_ADDRESS": head.address}
    proc, out, watch = run_watched([sys.executable, "-c", script], head, timeout=300, env=env)
    assert proc.returncode == 0, out[-3000:]
    assert "replied 60 supernodes 3" in out, out[-3000:]
    assert any("ClientAppActor" in p for p in watch.processes), watch.processes
    assert any("flower-superlink" in p for p in watch.processes), watch.processes
    assert sum("gcs_server" in p for p in watch.processes) == 1, watch.processes
    assert before <= set(pids_under(str(head.temp)))
    assert watch.off_loopback() == [], watch.off_loopback()


def test_ray_init_args_take_the_cluster_from_ray_address(monkeypatch) -> None:
    from ldpgraph.simulation.backends.flower import ray_init_args
    from ldpgraph.simulation.config import RunConfig

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert "num_cpus" in ray_init_args(RunConfig(ray_actors=2))
    # ldpgraph.run(ray_address=…) sets the field the --ray-address flag sets
    from ldpgraph.simulation.api import _config

    assert _config(None, {"ray_address": "10.0.0.2:6379"}).ray_address == "10.0.0.2:6379"
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    args = ray_init_args(RunConfig(ray_actors=2))
    assert args["address"] == "127.0.0.1:6379" and "num_cpus" not in args
    assert ray_init_args(RunConfig(ray_address="10.0.0.1:1"))["address"] == "10.0.0.1:1"


def test_no_private_ray_api_in_our_code() -> None:
    for path in (ROOT / "simulation").rglob("*.py"):
        text = path.read_text()
        for private in ("ray._private", "_node_ip_address", "_temp_dir"):
            assert private not in text, f"{path.relative_to(ROOT)} uses {private}"


# --- errors (no cluster needed) ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_unreachable_or_malformed_address_is_a_one_line_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_ports(1)[0]
    base = (
        ["run", "--dataset", "synthetic:n=60,classes=3,d=8,avg_degree=4", "--epochs", "1",
         "--quiet", "--run-dir", str(tmp_path / "run")]
        if command == "run"
        else ["sweep", str(ROOT / "deploy" / "ray-smoke.toml"), "--grid", "small",
              "--store", str(tmp_path / "s.db"), "--quiet"]
    )  # fmt: skip
    t0 = time.monotonic()
    assert main([*base, "--ray-address", f"127.0.0.1:{port}"]) == 2
    assert time.monotonic() - t0 < 30
    err = capsys.readouterr().err.strip()
    assert err.startswith("ldpgraph: error: cannot reach the Ray cluster at 127.0.0.1:")
    assert "\n" not in err
    assert main([*base, "--ray-address", "headnode"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--ray-address must be HOST:PORT" in err and "\n" not in err


def test_sweep_of_a_flower_file_on_ray_is_refused(tmp_path: Path, capsys) -> None:
    text = (ROOT / "deploy" / "ray-smoke.toml").read_text()
    path = tmp_path / "flower.toml"
    path.write_text(text.replace('backend = "local"', 'backend = "flower"'))
    args = ["sweep", str(path), "--grid", "small", "--store", str(tmp_path / "s.db"), "--quiet"]
    assert main([*args, "--ray-address", "127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert 'needs backend = "local"' in err


# --- the `ray up` config -----------------------------------------------------------------------


def test_cluster_config_is_valid_for_ray_up() -> None:
    yaml = pytest.importorskip("yaml")
    pytest.importorskip("jsonschema")
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = (ROOT / "deploy" / "ray-cluster.yaml").read_text()
    config = yaml.safe_load(raw)
    validate_config(prepare_config(config))  # what `ray up` does first
    assert config["provider"]["type"] == "local"
    assert config["provider"]["head_ip"] == "HEAD_IP"
    assert config["provider"]["worker_ips"] and "SSH_USER" in raw
    setup = " ".join(config["setup_commands"])
    assert '-c constraints.txt -e ".[ray,flower]"' in setup
    head_cmd = " ".join(config["head_start_ray_commands"])
    worker_cmd = " ".join(config["worker_start_ray_commands"])
    assert "ray start --head --port=6379" in head_cmd and "--disable-usage-stats" in head_cmd
    # `ray job submit` needs the dashboard (its job API), on the head's loopback.
    assert "--include-dashboard=false" not in head_cmd
    assert "--dashboard-host=127.0.0.1" in head_cmd
    assert "ray start --address=$RAY_HEAD_IP:6379" in worker_cmd
    assert "LDPGRAPH_DATA=" in head_cmd and "LDPGRAPH_DATA=" in worker_cmd
