"""Which optional extra of ``pip install ldpgraph[...]`` brings a missing module: the CLI turns
an import of an optional dependency that fails into one line naming the extra to install."""

from __future__ import annotations

import importlib.util

#: Top-level module -> the extra that installs it (pyproject.toml's optional-dependencies).
EXTRA_OF: dict[str, str] = {
    "flwr": "flower",
    "ray": "ray",
    "psutil": "ray",
    "pymetis": "metis",
    "matplotlib": "plots",
    "pandas": "frames",
}

#: What each extra is for, in the hint's words.
NEEDED_FOR: dict[str, str] = {
    "flower": "the Flower backends (--backend flower, the default, and deploy)",
    "ray": "Ray clusters (--ray-address, sweeps on Ray)",
    "metis": "--split-mode metis",
    "plots": "figures (ldpgraph report)",
    "frames": "results as a DataFrame (ldpgraph.results.load)",
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra."""


def hint_for(module: str) -> str | None:
    """The one-line hint for a missing top-level ``module``, or None if no extra brings it."""
    extra = EXTRA_OF.get(module.split(".")[0])
    if extra is None:
        return None
    return (
        f"{NEEDED_FOR[extra]} need {module.split('.')[0]}, which is not installed: "
        f"pip install 'ldpgraph[{extra}]'"
    )


def missing_extra_hint(exc: ModuleNotFoundError) -> str | None:
    """The hint for an import that failed, if an extra brings the missing module."""
    return hint_for(exc.name or "")


def require_extra(module: str) -> None:
    """Refuse at once, before any work, when ``module`` (an optional dependency) is missing."""
    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(hint_for(module) or f"{module} is not installed")
