"""The refusals a first user meets (issue 33's five late errors) come before the heavy imports:
a corrupt or unwritable ``--store``, a synthetic graph whose reports cannot fit in memory, an
ε too small for any node to accept, and a valid store read as it is. Each runs in a fresh
interpreter, which then must not have imported torch, PyG, Flower, Ray or dp-accounting:
importing them is what made these one-line errors take seconds. (No timing is asserted: the
modules are what the check can hold without depending on the machine's load.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

#: What a refusal must not wait for (each takes from a second to several to import).
HEAVY = ("torch", "torch_geometric", "flwr", "ray", "dp_accounting", "grpc")

#: One interpreter runs the commands in turn and says, after each, its exit code, the last
#: line of its stderr and which HEAVY modules are loaded by then. The memory limit is pinned
#: (64 GiB) so that the synthetic graph is refused on any machine.
_SCRIPT = r"""
import contextlib, io, json, sys
from ldpgraph.simulation import checks
from ldpgraph.simulation.cli import main
checks.total_memory = lambda: 64 * 2**30
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    lines = err.getvalue().strip().splitlines()
    heavy = sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)
    out.append({"argv": argv, "code": code, "err": lines[-1] if lines else "", "heavy": heavy})
print(json.dumps(out))
"""


def test_the_five_late_errors_come_before_the_heavy_imports(tmp_path):
    from ldpgraph.simulation.results.store import ResultsStore

    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database at all\n" * 100)
    blocker = tmp_path / "a-file"
    blocker.write_text("a file, not a folder\n")
    valid = tmp_path / "valid.db"
    ResultsStore(valid).close()
    run = ["run", "--backend", "local", "--quiet"]
    commands = [
        [*run, "--store", str(corrupt)],
        [*run, "--store", str(blocker / "sub" / "r.db")],
        [*run, "--dataset", "synthetic:n=10000000,d=16"],
        [*run, "--epsilon", "1e-9"],
        ["results", "--store", str(valid)],
    ]
    env = dict(os.environ, LDPGRAPH_CACHE=str(tmp_path / "cache"), FLWR_TELEMETRY_ENABLED="0")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(commands), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    expect = [
        (2, "not a usable ldpgraph results store"),
        (2, "cannot be created"),
        (2, "GiB"),
        (2, "too small"),
        (0, ""),
    ]
    for row, (code, words) in zip(got, expect, strict=True):
        assert row["code"] == code and words in row["err"], row
        assert row["heavy"] == [], f"{row['argv']} imported {row['heavy']} before: {row['err']}"
