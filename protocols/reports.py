"""The wire form of a node's report, and its strict decoder.

A report travels as a flat dict of ints, strings and bytes (it fits a Flower ConfigRecord).
The adjacency row goes as sorted little-endian int32 ids of its 1-bits or as packed bits,
whichever is smaller; 0/1 features go as packed bits, real-valued ones as float32. The decoder
trusts nothing: every type, length, range, ordering and size is checked, and a bad payload
raises :class:`ReportError` with the reason. numpy only (client import path).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .types import Report

WIRE_VERSION = 1


class ReportError(ValueError):
    """A reply that is not a valid report; the message says why."""


def encode_adjacency(ids: np.ndarray, length: int) -> tuple[str, bytes]:
    ids = np.asarray(ids, dtype="<i4")
    if 4 * ids.shape[0] <= (length + 7) // 8:
        return "idx", ids.tobytes()
    bits = np.zeros(length, dtype=np.uint8)
    bits[ids] = 1
    return "bits", np.packbits(bits, bitorder="little").tobytes()


def decode_adjacency(fmt: str, payload: bytes, length: int) -> np.ndarray:
    if fmt == "idx":
        if len(payload) % 4:
            raise ReportError("adjacency index payload is not a multiple of 4 bytes")
        if len(payload) > 4 * length:
            raise ReportError("adjacency index payload longer than the row")
        ids = np.frombuffer(payload, dtype="<i4")
        if ids.size:
            if ids.min() < 0 or ids.max() >= length:
                raise ReportError(f"adjacency index out of range [0, {length})")
            if ids.size > 1 and not (np.diff(ids) > 0).all():
                raise ReportError("adjacency indices are unsorted or duplicated")
        return ids.astype(np.int32)
    if fmt == "bits":
        if len(payload) != (length + 7) // 8:
            raise ReportError(
                f"packed adjacency has {len(payload)} bytes, expected {(length + 7) // 8}"
            )
        bits = np.unpackbits(np.frombuffer(payload, dtype=np.uint8), bitorder="little")
        if bits[length:].any():
            raise ReportError("packed adjacency has bits set past the row length")
        return np.flatnonzero(bits[:length]).astype(np.int32)
    raise ReportError(f"unknown adjacency format {fmt!r}")


def encode_features(x: np.ndarray) -> tuple[str, bytes]:
    x = np.asarray(x)
    if x.dtype == np.uint8:
        return "bits", np.packbits(x, bitorder="little").tobytes()
    return "f32", np.asarray(x, dtype="<f4").tobytes()


def decode_features(fmt: str, payload: bytes, d: int) -> np.ndarray:
    if fmt == "bits":
        if len(payload) != (d + 7) // 8:
            raise ReportError(f"packed features have {len(payload)} bytes, expected {(d + 7) // 8}")
        bits = np.unpackbits(np.frombuffer(payload, dtype=np.uint8), bitorder="little")
        if bits[d:].any():
            raise ReportError("packed features have bits set past the feature length")
        return bits[:d].copy()
    if fmt == "f32":
        if len(payload) != 4 * d:
            raise ReportError(f"float features have {len(payload)} bytes, expected {4 * d}")
        x = np.frombuffer(payload, dtype="<f4").astype(np.float32)
        if not np.isfinite(x).all():
            raise ReportError("float features are not finite")
        return x
    raise ReportError(f"unknown feature format {fmt!r}")


def encode_report(report: Report) -> dict[str, Any]:
    """The flat wire dict of a report."""
    out: dict[str, Any] = {
        "v": WIRE_VERSION,
        "node": int(report.node_id),
        "round": int(report.round),
        "n": int(report.num_nodes),
    }
    if report.adjacency is not None:
        out["adj_fmt"], out["adj"] = encode_adjacency(report.adjacency, report.num_nodes)
    if report.features is not None:
        out["feat_fmt"], out["feat"] = encode_features(report.features)
        out["d"] = int(report.features.shape[0])
    for key, value in report.extras.items():
        out[f"x.{key}"] = float(value)
    return out


def _get(payload: dict[str, Any], key: str, kind: type) -> Any:
    if key not in payload:
        raise ReportError(f"missing field {key!r}")
    value = payload[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int | np.integer)):
        raise ReportError(f"field {key!r} must be an integer")
    if kind is bytes and not isinstance(value, bytes | bytearray):
        raise ReportError(f"field {key!r} must be bytes")
    if kind is str and not isinstance(value, str):
        raise ReportError(f"field {key!r} must be a string")
    return value


def decode_report(
    payload: Any,
    *,
    num_nodes: int,
    round_: int,
    num_features: int | None = None,
    expect_adjacency: bool = True,
    expect_features: bool = False,
    node_id: int | None = None,
    extras: tuple[str, ...] = (),
    max_bytes: int | None = None,
) -> Report:
    """Decode and validate one wire report against what the server asked for."""
    if not isinstance(payload, dict):
        raise ReportError(f"report must be a mapping, got {type(payload).__name__}")
    size = sum(len(v) for v in payload.values() if isinstance(v, bytes | bytearray))
    limit = max_bytes if max_bytes is not None else 4 * num_nodes + 4 * (num_features or 0) + 64
    if size > limit:
        raise ReportError(f"report payload of {size} bytes exceeds the limit of {limit}")
    if _get(payload, "v", int) != WIRE_VERSION:
        raise ReportError(f"unsupported report version {payload['v']}")
    node = int(_get(payload, "node", int))
    if not 0 <= node < num_nodes:
        raise ReportError(f"node id {node} out of range")
    if node_id is not None and node != node_id:
        raise ReportError(f"report is for node {node}, expected node {node_id}")
    if int(_get(payload, "round", int)) != round_:
        raise ReportError(f"report is for round {payload['round']}, expected round {round_}")
    if int(_get(payload, "n", int)) != num_nodes:
        raise ReportError(f"report has n={payload['n']}, expected {num_nodes}")
    adjacency = None
    if expect_adjacency:
        adjacency = decode_adjacency(
            _get(payload, "adj_fmt", str), bytes(_get(payload, "adj", bytes)), num_nodes
        )
        if (adjacency == node).any():
            raise ReportError("adjacency report contains the node's own diagonal entry")
    features = None
    if expect_features:
        if num_features is None:
            raise ValueError("num_features is required when features are expected")
        if int(_get(payload, "d", int)) != num_features:
            raise ReportError(f"report has d={payload['d']}, expected {num_features}")
        features = decode_features(
            _get(payload, "feat_fmt", str), bytes(_get(payload, "feat", bytes)), num_features
        )
    values: dict[str, float] = {}
    for key in extras:
        value = payload.get(f"x.{key}")
        if not isinstance(value, float | int) or isinstance(value, bool) or not np.isfinite(value):
            raise ReportError(f"missing or invalid field 'x.{key}'")
        values[key] = float(value)
    return Report(node, round_, num_nodes, adjacency, features, values)


#: Names of the records in Flower messages: the server's round config, a SuperNode's list of
#: hosted node ids (hello round), and one record per hosted node in a report reply.
CONFIG_RECORD = "config"
HOSTS_RECORD = "hosts"


def node_record_name(node_id: int) -> str:
    return f"n{int(node_id)}"


def node_from_record_name(name: str) -> int | None:
    """The node id a reply record names, or None if the name is not a node record."""
    if name.startswith("n") and name[1:].isdigit():
        return int(name[1:])
    return None
