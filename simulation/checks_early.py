"""Two refusals of ``ldpgraph run`` made before any protocol module is imported.

An ε too small for any node to accept (:func:`~.config_checks.check_charges`) and a synthetic
graph whose reports cannot fit in memory (:func:`~.checks.check_memory`) are found from the
built protocol, whose module imports NumPy and SciPy: about a second before a one-line error.
For a built-in protocol run with no protocol flag but ``--epsilon``, the figures they need are
fixed multiples of ε, kept in the generated schema table (``EARLY``,
:func:`~.schema_generate.early_arithmetic`, which a test holds equal to the protocols): the same
refusal, with the same words and figures, comes at once. Any other run is left to the full
checks. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..client.units import PER_BIT  # no NumPy behind it
from . import checks, schema_static
from .config import ConfigError, key_default


def _figures(values: Mapping[str, Any]) -> tuple[tuple[float, ...], float | None] | None:
    """The table's (round charges / ε, adjacency ε / ε) of the run ``values`` describe, when
    they hold for it: a built-in protocol, every protocol flag but ε at its default."""
    from ldpgraph.protocols import registry

    name = values.get("protocol", key_default("protocol"))
    table = schema_static._table()
    early = getattr(table, "EARLY", {}) if table is not None else {}
    if not isinstance(name, str) or name not in early or name not in registry.BUILTIN:
        return None
    entry = schema_static.protocol_entry(name)
    for p in entry.params:
        if p.name == "epsilon" or p.name not in values:
            continue
        if not p.run_key or values[p.name] != key_default(p.name):
            return None
    charges, adjacency = early[name]
    return (charges, adjacency) if charges else None


def refuse_early(values: Mapping[str, Any], memory: bool = True) -> None:
    """Raise the full checks' error for an ε no node accepts or (``memory``: the run loads the
    graph here) a synthetic graph whose reports cannot fit in this machine's memory, when the
    table's figures decide it; else nothing."""
    epsilon = values.get("epsilon", key_default("epsilon"))
    table = schema_static._table()
    if not (
        isinstance(epsilon, int | float) and 0 < epsilon <= getattr(table, "EARLY_MAX_EPSILON", 0.0)
    ):
        return  # the configuration's own check says what is wrong
    figures = _figures(values)
    if figures is None:
        return
    shares, adjacency = figures
    node_unit = values.get("node_unit", key_default("node_unit"))
    name = values.get("protocol", key_default("protocol"))
    if node_unit == PER_BIT:
        _charges(name, float(epsilon), shares, table.EARLY_MIN_CHARGE)
    if memory and adjacency:
        _memory(values, name, float(epsilon), adjacency, table.EARLY_SYNTHETIC)


def _charges(name: str, epsilon: float, shares: tuple[float, ...], least_charge: float) -> None:
    """:func:`~.config_checks.check_charges` on the table's figures."""
    charges = [share * epsilon for share in shares]
    r = min(range(len(charges)), key=charges.__getitem__)
    if charges[r] >= least_charge:
        return
    least = epsilon * least_charge / charges[r] if charges[r] > 0 else math.inf
    raise ConfigError(
        f"epsilon {epsilon:g} is too small for {name!r}: its round {r} would charge "
        f"each node ε {charges[r]:.3g}, below the smallest charge a node accepts "
        f"({least_charge:g}: a smaller spend could vanish in a floating-point sum), so every "
        f"node would refuse it; use --epsilon {least:.3g} or more"
    )


def _memory(
    values: Mapping[str, Any], name: str, epsilon: float, share: float, defaults: dict
) -> None:
    """:func:`~.checks.check_memory` on the table's figures (an unsampled report)."""
    dataset = values.get("dataset", key_default("dataset"))
    head, _, tail = str(dataset).partition(":")
    have = checks.total_memory()
    if head.strip().lower() != "synthetic" or have is None:
        return
    # The --dataset value's own items, read as the dataset registry reads them (whose lookup imports
    # every dataset module); anything it would refuse is left to it.
    given = dict(item.partition("=")[::2] for item in tail.split(",") if "=" in item)
    p = {"n": defaults["n"], "avg_degree": defaults["avg_degree"]}
    p |= {k.strip(): v.strip() for k, v in given.items()}
    if not str(p["n"]).isdigit():
        return
    try:
        n, degree = int(p["n"]), float(p["avg_degree"])
    except (TypeError, ValueError):
        return
    if not (1 <= n <= defaults["max_n"] and math.isfinite(degree) and degree >= 0):
        return
    flip = 1.0 / (math.exp(share * epsilon) + 1.0)  # Warner's rate at round 0's ε per bit
    need = int(4 * (n * (n - 1) * flip + n * degree))
    if need > have:
        gib = 2**30
        raise ValueError(
            f"dataset {dataset!r} with protocol {name!r} at ε {epsilon:g}: "
            f"the nodes' randomized-response reports alone need about {need / gib:,.0f} GiB "
            f"(n(n-1) bits flipped at rate 1/(1+e^ε_a)), and this machine has "
            f"{have / gib:,.0f} GiB: lower n in the dataset spec or raise --epsilon"
        )
