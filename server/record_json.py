"""The result record as strict JSON, and as the one marked log line a deployment reads.

JSON has no ∞ or NaN, and a headline ε of ∞ (no proof) is a value a record must carry: it is
written as the string ``"Infinity"`` and read back as a float (:data:`NON_FINITE`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

#: The ServerApp logs the record as one line starting with this marker; ``ldpgraph run
#: --backend deploy`` finds it in the stream of ``flwr run``.
RESULT_MARKER = "LDPGRAPH-RESULT "


def json_default(obj: Any) -> Any:
    """JSON for what a record may hold besides plain values: numpy scalars and arrays;
    anything else as its string."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


#: JSON has no ∞ or NaN: :func:`to_json` writes a non-finite float as one of these strings
#: (JavaScript's ``Number()`` and Python's ``float()`` read them) and :func:`from_json` reads
#: them back as floats. A headline ε of ∞ (no proof) is the case that matters.
NON_FINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def _finite_only(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _finite_only(value.tolist())
    if isinstance(value, dict):
        return {k: _finite_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_only(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _non_finite_back(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _non_finite_back(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_non_finite_back(v) for v in value]
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    return value


def to_json(record: Any, **kwargs: Any) -> str:
    """Strict JSON of a record (numpy values as plain ones, ∞ as ``"Infinity"``)."""
    return json.dumps(_finite_only(record), default=json_default, allow_nan=False, **kwargs)


def from_json(text: str) -> Any:
    """A record from :func:`to_json`'s text, ``"Infinity"`` read back as ∞."""
    return _non_finite_back(json.loads(text))


def result_line(record: dict[str, Any]) -> str:
    """The record as the one marked log line ``ldpgraph run --backend deploy`` reads."""
    return RESULT_MARKER + to_json(record, separators=(",", ":"))
