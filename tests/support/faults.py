"""A ClientApp that misbehaves on purpose, to test that the server survives bad SuperNodes.

``make_faulty_app({partition_id: fault})`` answers like the real ClientApp except on the
listed SuperNodes, which (in report rounds) send:

- ``garbage``: random bytes in place of every report field;
- ``too-long``: an adjacency payload longer than a row can be;
- ``out-of-range``: adjacency indices past n;
- ``unsorted``: adjacency indices in reverse order;
- ``wrong-round``: reports stamped with another round;
- ``impostor``: its own valid reports plus one for a node it does not host;
- ``raise``: an exception (Flower turns it into an error reply);
- ``silent``: its reply only after ``delay`` seconds (past the server's round timeout).
"""

from __future__ import annotations

import time

import numpy as np
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from ldpgraph.client.app import answer
from ldpgraph.protocols.reports import CONFIG_RECORD, node_from_record_name, node_record_name

FAULTS = (
    "garbage",
    "too-long",
    "out-of-range",
    "unsorted",
    "wrong-round",
    "impostor",
    "raise",
    "silent",
)


def _corrupt(fault: str, records: dict[str, ConfigRecord], n: int, rng) -> None:
    for name, rec in list(records.items()):
        node = node_from_record_name(name)
        if node is None or "adj" not in rec:
            continue
        if fault == "garbage":
            records[name] = ConfigRecord({k: rng.bytes(7) for k in rec.keys()})
        elif fault == "too-long":
            rec["adj_fmt"] = "idx"
            rec["adj"] = np.arange(1, 8 * n, dtype="<i4").tobytes()
        elif fault == "out-of-range":
            rec["adj_fmt"] = "idx"
            rec["adj"] = np.array([n, n + 5], dtype="<i4").tobytes()
        elif fault == "unsorted":
            rec["adj_fmt"] = "idx"
            rec["adj"] = np.array([n - 1, 0], dtype="<i4").tobytes()
        elif fault == "wrong-round":
            rec["round"] = int(rec["round"]) + 7
    if fault == "impostor" and records:
        hosted = {node_from_record_name(k) for k in records}
        other = next(i for i in range(n) if i not in hosted)
        records[node_record_name(other)] = ConfigRecord(dict(next(iter(records.values()))))


def make_faulty_app(faults: dict[int, str], delay: float = 10.0) -> ClientApp:
    unknown = set(faults.values()) - set(FAULTS)
    if unknown:
        raise ValueError(f"unknown fault(s) {sorted(unknown)}; choose from {FAULTS}")
    app = ClientApp()

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        cfg = dict(msg.content.config_records[CONFIG_RECORD])
        fault = faults.get(int(context.node_config.get("partition-id", -1)))
        if cfg.get("op") != "report" or fault is None:
            return Message(RecordDict(answer(cfg, context)), reply_to=msg)
        if fault == "raise":
            raise RuntimeError("injected fault: this SuperNode crashes")
        if fault == "silent":
            time.sleep(delay)
        records = answer(cfg, context)
        _corrupt(fault, records, int(cfg["num-nodes"]), np.random.default_rng(0))
        return Message(RecordDict(records), reply_to=msg)

    return app
