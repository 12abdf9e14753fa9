"""``ldpgraph protocols``: every registered protocol with its privacy model, unit and
parameters."""

from __future__ import annotations

import argparse
import json

from ldpgraph.protocols import registry

from ..config import key_names


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "protocols",
        help="list the protocols with their parameters",
        description="List every registered protocol: LDP or central, the privacy unit its "
        "report states, and each parameter with its default, allowed values and help "
        "(server-side parameters are post-processing: a sweep reuses one collection for them).",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def cmd_protocols(args: argparse.Namespace) -> int:
    rows = [registry.describe(name) for name in registry.protocol_names()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    keys = set(key_names())
    for r in rows:
        rounds = f", {r['rounds']} rounds" if r["rounds"] != 1 else ""
        features = ", public features" if r["public_features"] else ""
        print(f"{r['name']} ({r['privacy_model']}{rounds}{features}): {r['summary']}")
        print(f"    privacy unit: {r['privacy_unit']}")
        for p in r["params"]:
            flag = "--" + p["name"].replace("_", "-") if p["name"] in keys else p["name"]
            where = " [server-side]" if p["server_side"] else ""
            print(
                f"    {flag:<17} {p['type']:<5} default {p['default']!s:<9} {p['allowed']}"
                f"{where}: {p['help']}"
            )
    return 0
