"""The README's commands, run as a new user types them after ``make run`` on a fresh clone.

tests/test_docs_commands.py parses every documented command; this test *runs* the README's.
It copies the repository's tracked files into a temp folder (a fresh clone of the working
tree), links the venv that ``make run`` would have made there (this test's own, which records
the data root as ``make run`` does), and runs each command of every fenced shell block from
that folder. The rule: every command runs for real, on the smallest input that takes the same
path (:func:`as_run`):

- ``make TARGET`` runs as ``make -n TARGET``: the recipe must expand (the real targets install
  the venv and run the experiment or the whole suite, which is what this test stands in for);
- ``ldpgraph run …`` runs as typed (same backend, protocol, ε, model, split and flags) on a
  small synthetic graph (``--dataset`` :data:`SMALL`) for one training epoch: collection,
  release, training, evaluation and the summary, in about a minute instead of many;
- ``ldpgraph audit --all`` runs one row of its table (``--mechanism`` the first, at one ε):
  the same draws, event choice, bound and table as each of its rows, in seconds instead of
  minutes (tests/simulation/test_audit.py runs the rows);
- every other ``ldpgraph`` command (``datasets``, ``protocols``, ``sweep … --dry-run``) runs as
  typed: each is cheap.

Each must exit 0 and print no traceback; a run must print its summary (its fingerprint) and the
audit its verdict. A command of another program fails the test: the README is the front door,
and a command this test cannot run is one a user cannot check.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_docs_commands import ROOT, commands, shell_blocks

# minutes: two Flower runs, one measuring every dataset
pytestmark = [pytest.mark.slow, pytest.mark.engine]

README_COMMANDS = [
    c for block in shell_blocks((ROOT / "README.md").read_text()) for c in commands(block)
]
#: The graph a README ``run`` runs on here: small, and large enough for every protocol's
#: defaults. DPAR keeps each of the 1 600 training nodes with q′ = 9 % (144 expected, standard
#: deviation 11.5) and needs M = 70 of them; at n = 1000 the 72 expected fell to 59 in a CI run.
SMALL = "synthetic:n=2000,d=16"
#: The audit row a README ``audit --all`` runs here (the first of the table, at one ε).
AUDIT_ROW = ["--mechanism", "rr", "--epsilon", "1"]


def as_run(argv: list[str]) -> list[str]:
    """The command this test runs for the README's ``argv`` (the module's rule)."""
    program, args = argv[0], argv[1:]
    if program == "make":
        return ["make", "-n", *args]
    if Path(program).name != "ldpgraph":
        raise AssertionError(f"README command {shlex.join(argv)}: no rule to run it here")
    if args[:1] == ["run"]:
        if "--dataset" in args:
            i = args.index("--dataset")
            args = [*args[:i], *args[i + 2 :]]
        return [program, *args, "--dataset", SMALL, "--epochs", "1"]
    if args[:1] == ["audit"]:
        if args[1:] != ["--all"]:
            raise AssertionError(f"README command {shlex.join(argv)}: no rule for this audit")
        return [program, "audit", *AUDIT_ROW]
    return argv


#: A stage line said inside HoGS's server step (ldpgraph.protocols.progress), not by the
#: pipeline: through ``flwr run`` the server step runs in the ServerApp's own process, and the
#: runner must relay the line to the user's terminal (issue 33: no phase in silence). The
#: README's HoGS run on the default (flower) backend shows it; the in-process engine's relay is
#: tests/simulation/cli/test_stages.py's.
SERVER_SIDE_STAGE = re.compile(r"^\[\s*[\d.]+s\] HoGS: topology from ", re.M)


def shows_server_stages(argv: list[str]) -> bool:
    """Whether the README command ``argv`` is a HoGS run through ``flwr run`` (the default
    backend) without --quiet: its stderr must carry the ServerApp's own stage lines."""
    if Path(argv[0]).name != "ldpgraph" or argv[1:2] != ["run"] or "--quiet" in argv:
        return False
    value = dict(zip(argv[2::1], argv[3::1], strict=False))
    return value.get("--protocol", "hogs").startswith("hogs") and (
        value.get("--backend", "flower") == "flower"
    )


def did_its_work(argv: list[str]) -> str:
    """What the README command ``argv`` must print on stdout to show that it did its work."""
    if Path(argv[0]).name != "ldpgraph":
        return ""
    return {"run": "fingerprint", "audit": "PASS", "protocols": "hogs"}.get(argv[1], "")


def test_the_rule_covers_every_readme_command():
    """The README shows the two commands, the venv's ldpgraph, and nothing this test skips."""
    assert [["make", "run"], ["make", "test"]] == README_COMMANDS[:2]
    assert sum(Path(c[0]).name == "ldpgraph" for c in README_COMMANDS) >= 5
    for argv in README_COMMANDS:
        run = as_run(argv)
        if Path(argv[0]).name == "ldpgraph" and argv[1] in ("run", "audit"):  # never --help
            assert "--help" not in run and run[:2] == argv[:2], run
    # The relay of the ServerApp's stage lines through `flwr run` is checked on a README run.
    assert any(shows_server_stages(argv) for argv in README_COMMANDS)


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory) -> Path:
    """The working tree's tracked files in a temp folder, with ``.venv`` linked to this
    interpreter's venv."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("not running in a venv: there is no .venv to link")
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    clone = tmp_path_factory.mktemp("clone")
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (clone / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, clone / rel)
    (clone / ".venv").symlink_to(Path(sys.prefix))
    return clone


@pytest.mark.parametrize("argv", README_COMMANDS, ids=[" ".join(c)[:70] for c in README_COMMANDS])
def test_readme_command_runs(argv, fresh_clone):
    run = as_run(argv)
    env = dict(os.environ, FLWR_TELEMETRY_ENABLED="0")
    done = subprocess.run(
        run, cwd=fresh_clone, env=env, capture_output=True, text=True, timeout=600
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, f"{shlex.join(run)} exited {done.returncode}:\n{said[-3000:]}"
    assert "Traceback" not in said, f"{shlex.join(run)}:\n{said[-3000:]}"
    assert did_its_work(argv) in done.stdout, f"{shlex.join(run)}:\n{done.stdout[-3000:]}"
    if shows_server_stages(argv):
        said = done.stderr.replace("\r", "\n")  # a progress bar clears its line with a CR
        assert SERVER_SIDE_STAGE.search(said), f"{shlex.join(run)}:\n{said[-3000:]}"
