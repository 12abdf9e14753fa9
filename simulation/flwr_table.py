"""The ``[tool.flwr.app.config]`` table of ``pyproject.toml``, generated from the declarations.

Flower refuses a ``--run-config`` override whose key is not in that table, so the table must
list every configuration key with its default: it is derived here from the schema
(:func:`~ldpgraph.simulation.schema.key_names`, :meth:`RunConfig.to_flwr`), never written by
hand. After adding a protocol parameter or a metric setting run::

    python -m ldpgraph.simulation.flwr_table --write     # rewrite the table in pyproject.toml
    python -m ldpgraph.simulation.flwr_table --check     # exit 1 when it is out of date

(``--write`` also rewrites simulation/schema_table.py, :mod:`.schema_generate`.)

(tests/simulation/test_schema.py runs the check).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HEADER = "[tool.flwr.app.config]"
#: Where the ServerApp writes the result record (a run-config key of the app only).
RESULT_PATH = "result-path"
#: Keys of the table that are no configuration key: the ServerApp's own, with their defaults
#: (declared here once: the ServerApp, ``flwr run``'s generated app and pyproject read them).
APP_ONLY: dict[str, Any] = {RESULT_PATH: ""}


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"no TOML literal for {value!r}")


def table() -> dict[str, Any]:
    """Every key of the table with its default (hyphenated), in schema order."""
    from ldpgraph.protocols import registry
    from ldpgraph.server.evaluation import metric_names

    from .config import RunConfig

    registry.all_protocols(), metric_names()  # the modules' declarations, not schema_table's
    return {**RunConfig().to_flwr(), **APP_ONLY}


def render() -> str:
    """The table: its header, a line saying where it comes from, then one ``key = default``
    line per configuration key (schema order) and the app-only keys."""
    lines = [
        HEADER,
        "# Generated from the declarations: python -m ldpgraph.simulation.flwr_table --write",
    ]
    for name, value in table().items():
        lines.append(f"{name} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def replace_table(text: str, table: str) -> str:
    """``text`` (a pyproject.toml) with its ``[tool.flwr.app.config]`` table replaced by
    ``table`` (appended when there is none)."""
    start = text.find("\n" + HEADER + "\n")
    if start < 0:
        return text.rstrip("\n") + "\n\n" + table
    start += 1
    end = text.find("\n[", start + len(HEADER))
    rest = "" if end < 0 else "\n" + text[end + 1 :]
    return text[:start] + table + rest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ldpgraph.simulation.flwr_table")
    parser.add_argument("--pyproject", type=Path, default=Path("pyproject.toml"))
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the table in place")
    mode.add_argument("--check", action="store_true", help="exit 1 when it is out of date")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        print(render(), end="")
        return 0
    from . import schema_generate  # its generated table too (the flags before any import)

    text = args.pyproject.read_text()
    new = replace_table(text, render())
    if args.check:
        if new != text:
            print(f"{args.pyproject}: {HEADER} is out of date; run with --write", file=sys.stderr)
            return 1
        return schema_generate.main(["--check"])
    if new != text:
        args.pyproject.write_text(new)
    return schema_generate.main(["--write"])


if __name__ == "__main__":
    sys.exit(main())
