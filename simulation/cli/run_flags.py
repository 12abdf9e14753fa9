"""``run``'s protocol flags, read from the protocol registry: the ``--protocol`` help grouped by
privacy model, each parameter's help, which protocol's flags a command line asks for, and the
error for another protocol's flag."""

from __future__ import annotations

from ldpgraph.protocols import registry

from .. import schema_static
from ..config import key_default

#: How ``--protocol`` groups the protocols: privacy model → heading with its privacy unit.
PRIVACY_FAMILIES = {
    "ldp": "LOCAL DP: each node perturbs its own report; ε per adjacency bit / edge / node "
    "as each report states",
    "central": "CENTRAL DP, server-only strategies: node-level (ε, δ), or edge-level where "
    "the report says so (DPGGAN, EdgeRand, LapGraph); the nodes upload raw data to a trusted "
    "curator (--trust-curator)",
    "none": "NO PRIVACY: upper bounds (--trust-curator)",
    "empirical": "EMPIRICAL, no DP: a trusted curator's defence against link inference, "
    "measured by the attack metric only (--trust-curator)",
}


def central_only_parameters() -> set[str]:
    """Protocol parameters that only the raw-upload strategies use (central DP, their
    non-private references and the empirical defences: their own ``--help`` group)."""
    central = {
        e.name
        for e in schema_static.protocol_entries()
        if e.privacy_model in ("central", "empirical", "none")
    }
    params = schema_static.parameters()
    return {name for name, (_p, users) in params.items() if set(users) <= central}


def protocol_help() -> dict[str, str]:
    """``--protocol`` and every protocol parameter's help, from the registry: the parameter's
    help, its allowed values and the protocols that use it."""
    families: dict[str, list[str]] = {model: [] for model in PRIVACY_FAMILIES}
    for e in schema_static.protocol_entries():
        families.setdefault(e.privacy_model, []).append(f"{e.name}: {e.summary}")
    out = {
        "protocol": "the protocol (`ldpgraph protocols` lists them with their parameters). "
        + " ".join(
            f"[{PRIVACY_FAMILIES.get(model, model)}] " + "; ".join(items) + "."
            for model, items in families.items()
            if items
        )
    }
    for name, (param, users) in schema_static.parameters().items():
        out[name] = f"{param.help}; {param.allowed}; used by {', '.join(users)}"
    return out


def chosen_protocol(argv: list[str]) -> str:
    """The ``--protocol`` of a ``run`` command line (the last one given), else the default:
    ``run``'s flags and ``--help`` are that protocol's parameters only."""
    chosen = key_default("protocol")
    for i, arg in enumerate(argv):
        if arg == "--protocol" and i + 1 < len(argv):
            chosen = argv[i + 1]
        elif arg.startswith("--protocol="):
            chosen = arg.partition("=")[2]
    return chosen if chosen in registry.protocol_names() else key_default("protocol")


def foreign_flags(unknown: list[str], protocol: str) -> str | None:
    """The error for flags of other protocols' parameters given to ``protocol``, if any."""
    params = schema_static.parameters()
    named = []
    for arg in unknown:
        name = arg.removeprefix("--").partition("=")[0].replace("-", "_")
        if arg.startswith("--") and name in params and name not in ("epsilon",):
            users = ", ".join(params[name][1])
            named.append(f"--{name.replace('_', '-')} (a parameter of {users})")
    if not named:
        return None
    return (
        f"protocol {protocol!r} has no parameter {'; '.join(named)}: see "
        f"ldpgraph run --protocol {protocol} --help"
    )
