"""Every command the README and the docs show still parses, so a renamed flag fails CI.

Each shell block (```bash, ```sh, ```shell, ```console) of README.md and docs/**/*.md is split
into commands; every ``ldpgraph …`` command is parsed by the real CLI parser (the chosen
protocol's parameters included, an unknown or foreign flag refused, as ``ldpgraph`` itself
refuses it) without running anything, every ``make`` target must exist in the Makefile, every
``python script.py`` and ``deploy/*.sh`` must be a file of the repository, and every repository
path an argument names (``experiments/…``, ``deploy/…``, ``benchmarks/…``, ``examples/…``) must
exist. Other programs (``flwr``, ``ray``, ``scp``, ``pip`` …) are left alone. The README's Python
example must be ``examples/release_pyg.py``'s, which the example test runs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
from pathlib import Path

import pytest

from ldpgraph.simulation import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELLS = {"bash", "sh", "shell", "console"}
#: Paths under these folders, named as arguments, must be files of the repository.
REPO_FOLDERS = ("experiments/", "deploy/", "benchmarks/", "examples/")
OPERATORS = {"&&", "||", ";", "|", "&"}
REDIRECTS = {">", ">>", "2>", "2>>", "<", "&>"}


def shell_blocks(text: str) -> list[str]:
    """The bodies of the fenced shell blocks of a Markdown page."""
    return [
        body
        for lang, body in re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.M | re.S)
        if lang in SHELLS
    ]


def commands(block: str) -> list[list[str]]:
    """A block's commands as argument lists: continuations joined, comments, prompts,
    redirections and environment assignments dropped, ``a && b`` split."""
    out: list[list[str]] = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.strip().removeprefix("$ ")
        if not line or line.startswith("#"):
            continue
        tokens = shlex.split(line, comments=True)
        current: list[str] = []
        skip = False
        for token in [*tokens, ";"]:
            if skip:
                skip = False
            elif token in REDIRECTS:
                skip = True
            elif token in OPERATORS:
                while current and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", current[0]):
                    current.pop(0)  # VAR=value before the program
                if current:
                    out.append(current)
                current = []
            else:
                current.append(token)
    return out


def documented() -> list[tuple[str, list[str]]]:
    """Every command of every page, with the page it is on."""
    found = []
    for page in PAGES:
        for block in shell_blocks(page.read_text()):
            found += [(str(page.relative_to(ROOT)), c) for c in commands(block)]
    return found


COMMANDS = documented()


def _ldpgraph(argv: list[str]) -> None:
    """Parse ``argv`` as ``ldpgraph`` does (``main``'s parse, without its handler)."""
    protocol = cli.chosen_protocol(argv) if argv[:1] == ["run"] else None
    parser = cli.build_parser(protocol)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            args, unknown = parser.parse_known_args(argv)
        except SystemExit as exc:
            if exc.code == 0 and ("--help" in argv or "-h" in argv):
                return
            raise AssertionError(f"ldpgraph {shlex.join(argv)}: {err.getvalue().strip()}") from None
    if unknown:
        foreign = cli.foreign_flags(unknown, args.protocol) if args.command == "run" else None
        raise AssertionError(f"ldpgraph {shlex.join(argv)}: {foreign or unknown}")


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, re.M))


def _check(argv: list[str]) -> None:
    program, args = argv[0], argv[1:]
    for arg in args:
        if arg.startswith(REPO_FOLDERS):
            assert (ROOT / arg).exists(), f"{shlex.join(argv)}: no {arg} in the repository"
    if program == "ldpgraph" or program.endswith("/bin/ldpgraph"):
        _ldpgraph(args)
    elif program == "make":
        targets = [a for a in args if "=" not in a and not a.startswith("-")]
        assert set(targets) <= _make_targets(), f"{shlex.join(argv)}: no such make target"
    elif re.fullmatch(r"(.*/)?python3?", program):
        if args[:1] == ["-m"]:
            assert importlib.util.find_spec(args[1]) is not None, shlex.join(argv)
        else:
            assert (ROOT / args[0]).is_file(), f"{shlex.join(argv)}: no {args[0]}"
    elif program.startswith(("deploy/", "./deploy/")):
        assert (ROOT / program).is_file(), f"{shlex.join(argv)}: no {program}"


def test_the_pages_show_commands():
    """The extraction finds the commands (a broken extraction would make the test below vacuous)."""
    programs = {c[0] for _, c in COMMANDS}
    assert {"make", ".venv/bin/ldpgraph", "ldpgraph"} <= programs, programs
    assert sum(c[0].endswith("ldpgraph") for _, c in COMMANDS) >= 20


@pytest.mark.parametrize(
    "page,argv", COMMANDS, ids=[f"{p}:{' '.join(c)[:60]}" for p, c in COMMANDS]
)
def test_documented_command_parses(page, argv):
    _check(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["ldpgraph", "run", "--dataset", "cora", "--epsilonn", "8"],
        ["ldpgraph", "run", "--protocol", "hogs", "--mu", "0.5"],  # hogs-arr's flag
        ["ldpgraph", "sweep"],
        ["ldpgraph", "sweep", "experiments/no-such-file.toml"],
        ["make", "no-such-target"],
        ["python", "benchmarks/bench_nothing.py"],
    ],
)
def test_a_wrong_command_fails(argv):
    with pytest.raises(AssertionError):
        _check(argv)


def test_readme_python_example_is_the_tested_example():
    """The README's five lines are examples/release_pyg.py's (which tests/simulation/test_api.py
    runs), up to the example's smaller graph and shorter training."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"^```python\n(.*?)^```", readme, re.M | re.S).group(1)
    calls = [line.split("#")[0].strip() for line in block.splitlines() if "ldpgraph." in line]
    example = (ROOT / "examples" / "release_pyg.py").read_text()
    for call in calls:
        name = re.search(r"ldpgraph\.\w+", call).group(0)
        assert name in example, f"the README calls {name}, the tested example does not"
    assert re.search(r'release\(data, protocol="hogs", epsilon=8\)', example)


def test_ci_runs_the_readmes_test_command():
    """The README's first block is the two commands, and CI runs exactly its test command."""
    first = commands(shell_blocks((ROOT / "README.md").read_text())[0])
    assert first == [["make", "run"], ["make", "test"]], first
    ci = [line.split("#")[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in ci


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings (outside code blocks)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.*)$", text, re.M)
    }


def test_every_link_of_the_pages_resolves():
    """A moved or renamed page (or heading) leaves no dead relative link behind."""
    dead = []
    for page in [*PAGES, ROOT / "CHANGELOG.md"]:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path) if path else page
            if not dest.exists():
                dead.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                dead.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not dead, "\n".join(dead)
