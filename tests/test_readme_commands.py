"""The README's commands, run as a new user types them after ``make run`` on a fresh clone.

tests/test_docs_commands.py parses every documented command; this test *runs* the README's.
It copies the repository's tracked files into a temp folder (a fresh clone of the working
tree), links the venv that ``make run`` would have made there (this test's own, which records
the data root as ``make run`` does), and runs each command of every fenced shell block from
that folder. The rule, one per command (:func:`as_run`):

- ``make TARGET`` runs as ``make -n TARGET``: the recipe must expand (the real targets install
  the venv and run the experiment or the whole suite, which is what this test stands in for);
- ``ldpgraph run …`` runs as ``ldpgraph run … --help``: the real one is minutes of collection
  and training (``make run`` is that run; tests/test_docs_commands.py checks every flag
  against the chosen protocol's);
- ``ldpgraph audit …`` runs with ``--help`` (minutes of draws; tests/simulation/test_audit.py
  runs the audits);
- every other ``ldpgraph`` command (``datasets``, ``protocols``, ``sweep … --dry-run``) runs as
  typed: each is cheap.

Each must exit 0 and print no traceback. A command of another program fails the test: the
README is the front door, and a command this test cannot run is one a user cannot check.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_docs_commands import ROOT, commands, shell_blocks

pytestmark = pytest.mark.slow  # about a minute: eight commands, one measuring every dataset

README_COMMANDS = [
    c for block in shell_blocks((ROOT / "README.md").read_text()) for c in commands(block)
]
#: ``ldpgraph`` commands whose real run is long: run with ``--help`` instead.
LONG = ("run", "audit")


def as_run(argv: list[str]) -> list[str]:
    """The command this test runs for the README's ``argv`` (the module's rule)."""
    program, args = argv[0], argv[1:]
    if program == "make":
        return ["make", "-n", *args]
    if Path(program).name == "ldpgraph":
        return [program, *args, "--help"] if args[:1] and args[0] in LONG else argv
    raise AssertionError(f"README command {shlex.join(argv)}: no rule to run it here")


def test_the_rule_covers_every_readme_command():
    """The README shows the two commands, the venv's ldpgraph, and nothing this test skips."""
    assert [["make", "run"], ["make", "test"]] == README_COMMANDS[:2]
    assert sum(Path(c[0]).name == "ldpgraph" for c in README_COMMANDS) >= 5
    for argv in README_COMMANDS:
        as_run(argv)


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
