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
    skip = {"tests/test_no_outside_refs.py"}  # its examples are pointers
    found = [p for f in repository_files() if f not in skip for p in pointers(f)]
    assert not found, "cite the paper instead:\n" + "\n".join(found)


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
