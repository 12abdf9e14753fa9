"""No file of the repository points at files outside it.

Code comments, docstrings, docs, experiment files and tests cite the papers (authors, year,
section, equation, theorem, table), never a working note a reader of the repository cannot open:
an implementation spec ("spec §4.6", "spec A9", "(spec)", "specs/…"), a seed text, or a path on
the development machine ("/work/…"). The dataset mirror's default location (``../shared/datasets``,
which ``make`` and CI pass as the data root) is configuration, not a citation, and is allowed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What a pointer outside the repository looks like. Case matters: ``spec`` is also a word of
#: the code (a dataset spec string, ``find_spec``).
POINTERS = re.compile(
    r"/work/"
    r"|shared/(?:specs|seeds)\b"
    r"|ARCHITECTURE\.md"
    r"|\bspecs/"
    r"|\b[Ss]pec\s*(?:§|#\s*\d|A\d+\b|\d{3}\b)"
    r"|(?<![\w.])\(spec\)"
    r"|\b(?:[Tt]he|[Oo]ur|as the) spec(?:'s)?\b(?! (?:string|strings|of the dataset)\b)"
    r"|^Spec: "
    r"|\bspec (?:says|author|predicts)\b",
    re.M,
)

#: Files owned by other work in progress that still carry such pointers (issue 30 removes them
#: file by file). This list only shrinks: a file leaves it when its pointers are gone, and the
#: test below fails on a listed file that has none left, so the list cannot go stale. When it is
#: empty, delete it.
NOT_YET_CLEAN = {
    "protocols/central/appr.py",
    "protocols/central/baselines.py",
    "protocols/central/dpar_model.py",
    "protocols/central/dpar_params.py",
    "protocols/central/dpggan.py",
    "protocols/central/dpggan_lanes.py",
    "protocols/central/dpggan_model.py",
    "protocols/central/dpsgd.py",
    "protocols/central/ppgsl.py",
    "protocols/central/privdpr.py",
    "tests/protocols/central/test_appr.py",
    "tests/protocols/central/test_dpggan.py",
    "tests/protocols/central/test_ppgsl.py",
    "tests/protocols/central/test_privdpr.py",
}

#: Text files of the repository, as git lists them (tracked and new, not ignored).
TEXT = (".py", ".md", ".toml", ".txt", ".cfg", ".yaml", ".yml", ".sh", ".cff", ".json", ".ini")


def repository_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    names = {"Makefile", "Dockerfile", "run"}
    return [f for f in out if (f.endswith(TEXT) or Path(f).name in names) and (ROOT / f).is_file()]


def pointers(path: str) -> list[str]:
    text = (ROOT / path).read_text(errors="replace")
    return [
        f"{path}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
        for m in POINTERS.finditer(text)
    ]


def test_no_pointer_outside_the_repository():
    skip = NOT_YET_CLEAN | {"tests/test_no_outside_refs.py"}  # its examples are pointers
    found = [p for f in repository_files() if f not in skip for p in pointers(f)]
    assert not found, "cite the paper instead:\n" + "\n".join(found)


def test_the_allow_list_only_holds_files_with_pointers():
    """A listed file without pointers (cleaned, moved or deleted) must leave the list."""
    clean = sorted(f for f in NOT_YET_CLEAN if not (ROOT / f).is_file() or not pointers(f))
    assert not clean, f"remove from NOT_YET_CLEAN: {clean}"


def test_the_pattern_catches_the_pointers_it_is_for():
    for text in (
        "see spec §4.6",
        "(spec A9)",
        "spec 004 §1.7",
        "the noise (spec)",
        "shared/specs/002-dpggan.md",
        "/work/shared/datasets",
        "as the spec says",
        "Spec: `x`",
        "../shared/ARCHITECTURE.md is the map",
    ):
        assert POINTERS.search(text), text
    for text in (
        "load_dataset(spec)",
        "importlib.util.find_spec(name)",
        "def f(spec: str)",
        "a `synthetic:...` spec",
        "the spec string",
        "make run uses ../shared/datasets",
        "Path(spec).read_text()",
    ):
        assert not POINTERS.search(text), text
