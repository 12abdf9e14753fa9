"""No import circles inside ldpgraph, and no import against the map's direction: a static
check of every import, lazy ones included.

A circle works only as long as every module in it defers the imports that close it, and it
ties the modules' import order to whoever imports first; two had crept in (the ServerApp →
CLI → deploy backend → ServerApp, and the sweep ↔ its Ray executor). This test reads every
module of the four code folders with ``ast`` (imports inside functions count too: they close a
circle as soon as they run) and fails with the circle it finds.

The folders are layered (the architecture's map): ``protocols`` (the maths) imports no other
folder; ``client`` and ``server`` import ``protocols`` and themselves only; ``simulation``
(the composition root) imports anything. An arrow back up that ladder is no circle yet, but it
drags the upper folder into the lower one's import path (torch into the client, Flower into a
protocol), so it fails too, naming the importing module and the one it imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "client": "ldpgraph.client",
    "server": "ldpgraph.server",
    "simulation": "ldpgraph.simulation",
    "protocols": "ldpgraph.protocols",
}


#: Which folders each folder may import (itself included).
ALLOWED = {
    "protocols": {"protocols"},
    "client": {"client", "protocols"},
    "server": {"server", "protocols"},
    "simulation": {"simulation", "server", "client", "protocols"},
}


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__``)."""
    out = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The ldpgraph modules that ``name`` imports anywhere in its source."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    # Imports under ``if TYPE_CHECKING:`` never run (annotations only): they close no circle.
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in known else module)
    return {m for m in found if m in known and m != name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def folder(module: str) -> str:
    """The code folder of ``ldpgraph.<folder>.…``."""
    return module.split(".")[1]


def back_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import ``(importer, imported)`` between folders the map does not allow
    (:data:`ALLOWED`)."""
    return sorted(
        (src, dst)
        for src, targets in graph.items()
        for dst in targets
        if folder(dst) not in ALLOWED[folder(src)]
    )


def test_the_check_sees_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_the_check_reads_relative_and_lazy_imports():
    known = modules()
    deploy = imports(
        "ldpgraph.simulation.backends.deploy",
        known["ldpgraph.simulation.backends.deploy"],
        known,
    )
    assert "ldpgraph.simulation.config" in deploy  # from ..config import RunConfig
    assert "ldpgraph.server.record" in deploy
    cli = imports("ldpgraph.simulation.cli.run", known["ldpgraph.simulation.cli.run"], known)
    assert "ldpgraph.simulation.pipeline" in cli  # imported inside cmd_run


def test_no_import_circles():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert circles(graph) == []


def test_the_direction_check_sees_a_back_arrow():
    """A fake graph with one arrow of each forbidden kind and the allowed ones around them."""
    graph = {
        "ldpgraph.protocols.central.ppgsl": {"ldpgraph.server.training", "ldpgraph.protocols.rng"},
        "ldpgraph.protocols.rng": set(),
        "ldpgraph.client.app": {"ldpgraph.protocols.rng", "ldpgraph.server.record"},
        "ldpgraph.server.training": {"ldpgraph.protocols.rng", "ldpgraph.simulation.config"},
        "ldpgraph.server.record": {"ldpgraph.server.training"},
        "ldpgraph.simulation.config": {"ldpgraph.protocols.rng"},
    }
    assert circles(graph) == []  # none of these arrows closes a circle
    assert back_arrows(graph) == [
        ("ldpgraph.client.app", "ldpgraph.server.record"),
        ("ldpgraph.protocols.central.ppgsl", "ldpgraph.server.training"),
        ("ldpgraph.server.training", "ldpgraph.simulation.config"),
    ]


def test_the_direction_check_reads_a_planted_back_arrow(tmp_path):
    """A lazy import of server/ planted in a copy of a protocols module is found from source."""
    known = modules()
    name = "ldpgraph.protocols.rng"
    planted = tmp_path / "rng.py"
    planted.write_text(
        known[name].read_text()
        + "\n\ndef _planted():\n    from ldpgraph.server.training import train_and_evaluate\n"
    )
    graph = {m: imports(m, p, known) for m, p in known.items()}
    assert back_arrows(graph) == []
    graph[name] = imports(name, planted, known)
    assert back_arrows(graph) == [(name, "ldpgraph.server.training")]


def test_imports_follow_the_map():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert back_arrows(graph) == []
