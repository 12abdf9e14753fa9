"""The refusals a first user meets (issue 33's five late errors) come before the heavy imports:
a corrupt or unwritable ``--store``, a synthetic graph whose reports cannot fit in memory, an
ε too small for any node to accept, and a valid store read as it is. Each runs in a fresh
interpreter, which then must not have imported torch, PyG, Flower, Ray or dp-accounting:
importing them is what made these one-line errors take seconds. None of the five may have
imported NumPy or SciPy either (about 0.6 s together): ``run``'s flags come from the generated
schema table, :mod:`ldpgraph.simulation.schema_static`, the store is checked before the
configuration, and the memory and ε refusals of a built-in protocol run at its defaults come
from the table's figures (:mod:`ldpgraph.simulation.checks_early`) before the protocol's module
is imported; no other protocol's module may be imported either. (No timing is asserted: the
modules are what the check can hold without depending on the machine's load.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: What a refusal must not wait for (each takes from a second to several to import).
HEAVY = ("torch", "torch_geometric", "flwr", "ray", "dp_accounting", "grpc")
#: What a refusal that needs no protocol must not wait for either (about 0.6 s together).
ARRAYS = ("numpy", "scipy")

#: A fresh interpreter runs one command and says its exit code, the last line of its stderr,
#: which HEAVY and ARRAYS modules are loaded by then and which protocol modules. The memory
#: limit is pinned (64 GiB) so that the synthetic graph is refused on any machine.
_SCRIPT = r"""
import contextlib, io, json, sys
from ldpgraph.simulation import checks
from ldpgraph.simulation.cli import main
checks.total_memory = lambda: 64 * 2**30
err = io.StringIO()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    code = main(json.loads(sys.argv[1]))
lines = err.getvalue().strip().splitlines()
loaded = sorted({m.split(".")[0] for m in sys.modules})
protocols = sorted(m for m in sys.modules if m.startswith("ldpgraph.protocols.central")
                   or m in ("ldpgraph.protocols.ldp.blink", "ldpgraph.protocols.ldp.rr",
                            "ldpgraph.protocols.ldp.ldpgen", "ldpgraph.protocols.ldp.solitude"))
print(json.dumps({"code": code, "err": lines[-1] if lines else "", "loaded": loaded,
                  "protocols": protocols}))
"""

RUN = ["run", "--backend", "local", "--quiet"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A corrupt store, a path under a file, and a valid store in a read-only folder."""
    from ldpgraph.simulation.results.store import ResultsStore

    root = tmp_path_factory.mktemp("stores")
    corrupt = root / "corrupt.db"
    corrupt.write_bytes(b"not a database at all\n" * 100)
    blocker = root / "a-file"
    blocker.write_text("a file, not a folder\n")
    folder = root / "read-only"
    folder.mkdir()
    ResultsStore(folder / "valid.db").close()
    (folder / "valid.db").chmod(0o444)
    folder.chmod(0o555)
    yield {"corrupt": corrupt, "blocked": blocker / "sub" / "r.db", "valid": folder / "valid.db"}
    folder.chmod(0o755)


CASES = {
    "corrupt store": (lambda s: [*RUN, "--store", str(s["corrupt"])], 2, "not a usable", True),
    "unwritable store": (lambda s: [*RUN, "--store", str(s["blocked"])], 2, "cannot be", True),
    "memory": (lambda s: [*RUN, "--dataset", "synthetic:n=10000000,d=16"], 2, "GiB", True),
    "tiny epsilon": (lambda s: [*RUN, "--epsilon", "1e-9"], 2, "too small", True),
    "read-only store": (lambda s: ["results", "--store", str(s["valid"])], 0, "", True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_five_late_errors_come_before_the_heavy_imports(case, stores, tmp_path):
    argv, code, words, no_arrays = CASES[case]
    argv = argv(stores)
    env = dict(os.environ, LDPGRAPH_CACHE=str(tmp_path / "cache"), FLWR_TELEMETRY_ENABLED="0")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout.strip().splitlines()[-1])
    assert row["code"] == code and words in row["err"], row
    heavy = sorted(set(HEAVY) & set(row["loaded"]))
    assert heavy == [], f"{argv} imported {heavy} before: {row['err']}"
    if no_arrays:
        arrays = sorted(set(ARRAYS) & set(row["loaded"]))
        assert arrays == [], f"{argv} imported {arrays} before: {row['err']}"
    assert row["protocols"] == [], f"{argv} imported other protocols: {row['protocols']}"
