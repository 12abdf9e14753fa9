"""A real multi-process deployment on loopback: a SuperLink with TLS and SuperNode
authentication and three SuperNodes (one node file of a small graph each), started with the
scripts of deploy/ exactly as docs/deployment.md runs them, and runs submitted with
``ldpgraph run --backend deploy``.

Checks: the deployed nodes draw their own noise and keep their own ledgers; a SuperNode without a
registered key is refused; a registered SuperNode the partition's manifest does not name claims
block 0 in every run and gets none of it; a SuperNode whose nodes do not trust the curator refuses a
raw-upload round; a SuperNode killed mid-run leaves its block counted as missing and the run
completes. Every process started here carries a tag in its environment and is stopped at the
end (also on failure); the test checks that none is left. Traffic: 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.pipeline import run

# Real SuperLinks, SuperNodes and Ray clusters as processes: end-to-end, out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.engine]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent
DATASET = "synthetic:n=90,classes=3,d=16,seed=4"
BLOCK = 30  # nodes per node file: three SuperNodes
EPOCHS = 10
HOST = "127.0.0.1"
TAG = "LDPGRAPH_DEPLOY_TEST"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def tagged(tag: str) -> list[int]:
    """Live processes whose environment carries this test's tag."""
    found = []
    needle = f"{TAG}={tag}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if needle in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry))
        except OSError:
            continue
    return found


class Federation:
    """The processes of one loopback deployment; every one is stopped by :meth:`stop`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tag = uuid.uuid4().hex
        self.port = free_port()
        self.address = f"{HOST}:{self.port}"
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = {
            **os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "FLWR_HOME": str(root / "flwr-home"),
            "FLWR_TELEMETRY_ENABLED": "0",
            "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
            # The operator's state home: the SuperNodes' default ledger lives there.
            "XDG_STATE_HOME": str(root / "state-home"),
            TAG: self.tag,
        }

    def sh(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(a) for a in args],
            env=self.env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "w")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(
            [str(a) for a in args],
            env=self.env,
            cwd=self.root,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name)
        deadline = time.monotonic() + 15
        while (left := tagged(self.tag)) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL if time.monotonic() > deadline - 10 else 15)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)

    def supernode(self, name: str, key: str, block: int, port: int, *extra: str):
        return self.start(
            name,
            DEPLOY / "start-supernode.sh",
            "--superlink", self.address,
            "--ca", "certs/ca.crt",
            "--key", f"keys/{key}",
            "--data", f"part/nodes-{block:05d}",
            "--port", str(port),
            *extra,
        )  # fmt: skip

    def submit(self, *extra: str, timeout: float = 150) -> subprocess.Popen:
        return self.start(
            f"run-{len(self.procs)}",
            BIN / "ldpgraph", "run", "--backend", "deploy",
            "--superlink", self.address,
            "--root-certificates", "certs/ca.crt",
            "--curator", "part/curator.json",
            "--epochs", str(EPOCHS),
            "--deploy-timeout", str(timeout),
            "--json",
            *extra,
        )  # fmt: skip


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def result_of(fed: Federation, proc: subprocess.Popen, timeout: float = 180) -> dict:
    name = next(k for k, v in fed.procs.items() if v is proc)
    proc.wait(timeout=timeout)
    out = fed.log(name)
    assert proc.returncode == 0, out[-3000:]
    return json.loads(out[out.index("\n{\n") + 1 : out.rindex("\n}") + 2])


@pytest.fixture(scope="module")
def fed(tmp_path_factory):
    root = tmp_path_factory.mktemp("deploy")
    f = Federation(root)
    try:
        # docs/deployment.md: machine A (SuperLink) ...
        assert f.sh(DEPLOY / "make-certs.sh", "-o", "certs", HOST, "localhost").returncode == 0
        r = f.sh(
            DEPLOY / "make-supernode-keys.sh", "-o", "keys", "b0", "b1", "b2", "rogue", "impostor"
        )
        assert r.returncode == 0, r.stderr
        # The manifest: node file i may be hosted only by the SuperNode holding key b<i>.
        r = f.sh(
            BIN / "ldpgraph", "partition", "--dataset", DATASET, "--out", "part",
            "--nodes-per-file", str(BLOCK),
            "--supernode-keys", *(f"keys/b{i}.pub" for i in range(3)),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        f.start(
            "superlink", DEPLOY / "start-superlink.sh", "--certs", "certs", "--host", HOST,
            "--port", str(f.port), "--state", "state",
        )  # fmt: skip
        wait_for(lambda: "Uvicorn running" in f.log("superlink"), 60, "the SuperLink")
        pubs = [f"keys/b{i}.pub" for i in range(3)] + ["keys/impostor.pub"]
        r = f.sh(
            DEPLOY / "register-supernodes.sh", "--superlink", f.address, "--ca", "certs/ca.crt",
            *pubs,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr + r.stdout
        # ... machine B (SuperNodes): block 2's nodes do not trust the curator with raw data.
        # Each SuperNode's budget is its own (enough for this module's runs, counted per bit:
        # edge LDP, as the runs state it); none is seeded.
        per_bit = ("--budget", "40", "--unit", "per-bit")
        f.supernode("sn0", "b0", 0, free_port(), *per_bit, "--trust-curator")
        f.supernode("sn1", "b1", 1, free_port(), *per_bit, "--trust-curator")
        f.supernode("sn2", "b2", 2, free_port(), *per_bit)
        # A registered SuperNode the manifest does not name, serving a copy of block 0's file
        # and claiming its nodes: its claims are refused in every run, block 0 stays sn0's.
        f.supernode("impostor", "impostor", 0, free_port(), *per_bit,
                    "--ledger", "impostor/ledger")  # fmt: skip
        for name in ("sn0", "sn1", "sn2", "impostor"):
            wait_for(lambda name=name: "SuperNode ID" in f.log(name), 60, name)
        yield f
    finally:
        f.stop()
        assert tagged(f.tag) == [], "processes left behind"


def test_deployed_hogs_uses_node_entropy_and_ledgers(fed):
    """The run's seed does not reach the nodes: their noise is their own (the release differs
    from the seeded simulation's), and each node's ledger, in its operator's state home and
    keyed by its data, holds what it spent (witnessed beside the SuperNode's key)."""
    from ldpgraph.client.ledger import verified
    from ldpgraph.client.nodedata import NodeStore

    proc = fed.submit("--seed", "2")
    sim = run(
        RunConfig(dataset=DATASET, epochs=EPOCHS, seed=2, backend="local", nodes_per_client=BLOCK)
    )
    record = result_of(fed, proc)
    assert record["config"]["backend"] == "deploy"
    assert record["config"]["dataset"] == DATASET
    collection = record["release"]["collection"]
    assert collection["supernodes"] == 3, collection
    assert collection["rounds"][0]["replied"] == 90
    # The impostor claimed block 0 first or last: it got none, sn0 kept all of it.
    hello = collection["hello"]
    assert hello["granted"] == 90 and hello["refused_claims"] == BLOCK, hello
    assert hello["binding"].startswith("manifest")
    assert collection["node_randomness"].startswith("node-owned")
    assert collection["node_units"] == {"per-bit": 90}  # as each SuperNode's hello states it
    assert collection["node_sampling"] == {"constant-work": 90}  # deployed: no timing channel
    assert record["fingerprint"] != sim["fingerprint"]
    # Same graph, same ε: the releases' sizes agree in distribution, not in bytes.
    edges = record["graph"]["synthetic"]["edges"], sim["graph"]["synthetic"]["edges"]
    assert abs(edges[0] - edges[1]) <= 0.5 * max(edges), edges
    assert record["graph"]["original"]["edges"] is None  # the server never saw the graph
    ledger = fed.root / "state-home" / "ldpgraph" / "ledger"
    for block in range(3):
        store = NodeStore(fed.root / "part" / f"nodes-{block:05d}")
        witness = fed.root / "keys" / f"b{block}.ledger-witness"
        spent = [verified(ledger, witness, store.fingerprint(n)).spent for n in store.node_ids]
        assert len(spent) == BLOCK and {s["per-bit"] for s in spent} == {8.0}


def test_unregistered_supernode_is_refused(fed):
    proc = fed.supernode("rogue", "rogue", 0, free_port(), "--budget", "1")
    proc.wait(timeout=60)
    assert proc.returncode != 0
    assert "Failed to activate SuperNode" in fed.log("rogue")


def test_untrusting_nodes_refuse_raw_upload(fed):
    record = result_of(fed, fed.submit("--protocol", "none", "--trust-curator", "true"))
    r0 = record["release"]["collection"]["rounds"][0]
    assert (r0["replied"], r0["refused"], r0["missing"]) == (60, BLOCK, 0)
    assert r0["reasons"] == {"refused by the node": BLOCK}  # and nothing about why


def test_supernode_killed_mid_run_counts_as_missing(fed):
    """SuperNode 1 is killed once it has its round message, before its ClientApp answers. No
    race against a short round timeout: the timeout is generous, so the other two replies
    arrive however loaded the machine, and the round ends once the SuperLink reports
    SuperNode 1 lost (its heartbeats stop; under a minute) or, at the latest, at the timeout.
    The server counts both the same way: no reply from that SuperNode."""
    before = len(fed.log("sn1"))

    def round_0() -> str:
        text = fed.log("sn1")[before:]
        return text.split("ROUND round-0]", 1)[1] if "ROUND round-0]" in text else ""

    proc = fed.submit("--seed", "3", "--round-timeout", "120", timeout=240)
    run_log = next(k for k, v in fed.procs.items() if v is proc)
    wait_for(
        lambda: "Received successfully" in round_0() or proc.poll() is not None,
        200,
        "SuperNode 1 to receive its round message",
    )
    assert proc.poll() is None, fed.log(run_log)[-3000:]  # the run waits for round 0
    fed.kill("sn1")  # before its ClientApp can answer
    assert "Sent successfully" not in round_0(), "SuperNode 1 answered before it was killed"
    record = result_of(fed, proc, timeout=240)
    r0 = record["release"]["collection"]["rounds"][0]
    assert (r0["replied"], r0["missing"]) == (60, BLOCK), r0
    assert r0["reasons"] == {"no reply (timeout or lost SuperNode)": BLOCK}
    assert record["fingerprint"]  # the run completed with the rest


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--curator", "c.json"], "needs --superlink HOST:PORT"),
        (["--superlink", "127.0.0.1:9"], "add --curator PATH"),
        (["--superlink", "nowhere", "--curator", "c.json"], "must be HOST:PORT"),
        (["--superlink", "127.0.0.1:9", "--curator", "c.json"], "--root-certificates"),
        (
            ["--superlink", "127.0.0.1:9", "--curator", "c.json", "--root-certificates", "no.crt"],
            "no CA certificate",
        ),
    ],
)
def test_deploy_cli_errors(args, message, capsys):
    from ldpgraph.simulation.cli import main

    assert main(["run", "--backend", "deploy", "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_curator_needs_deploy_and_superlink_needs_deploy(capsys):
    from ldpgraph.simulation.cli import main

    assert main(["run", "--backend", "local", "--curator", "c.json"]) == 2
    assert "--curator is for --backend deploy" in capsys.readouterr().err
    assert main(["run", "--backend", "local", "--superlink", "127.0.0.1:9"]) == 2
    assert "--superlink is for --backend deploy" in capsys.readouterr().err


def test_unreachable_superlink_is_a_clear_error(tmp_path, capsys):
    from ldpgraph.simulation.cli import main

    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    args = ["--superlink", f"{HOST}:{free_port()}", "--root-certificates", str(ca)]
    code = main(
        ["run", "--backend", "deploy", "--quiet", "--curator", "c.json", "--deploy-timeout", "60"]
        + args
    )
    assert code == 2
    assert "gave no result" in capsys.readouterr().err


def test_timed_out_run_is_stopped_on_the_superlink(fed):
    """Runs after the kill test: with SuperNode 1 gone the server waits for it, the submitter
    gives up at --deploy-timeout and asks the SuperLink to stop the run."""
    assert fed.procs["sn1"].poll() is not None, "needs the SuperNode killed by the test above"
    proc = fed.submit("--seed", "5", timeout=25)
    name = next(k for k, v in fed.procs.items() if v is proc)
    proc.wait(timeout=120)
    out = fed.log(name)
    assert proc.returncode == 2, out[-2000:]
    assert "did not finish within --deploy-timeout" in out and "stopped it there" in out, out
    run_id = out.split("(run ")[-1].split()[0]
    home = fed.root / "ls-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "link"\n\n[superlink.link]\naddress = "{fed.address}"\n'
        f'root-certificates = "{fed.root / "certs" / "ca.crt"}"\n'
    )
    env = {**fed.env, "FLWR_HOME": str(home)}

    def status() -> str:
        ls = subprocess.run(
            [str(BIN / "flwr"), "ls", "link", "--run-id", run_id, "--format", "json"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return ls.stdout

    wait_for(lambda: "stopped" in status(), 60, f"run {run_id} to show as stopped")
