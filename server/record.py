"""The result record of one run, built in one place, and its human summary.

The record is what ``ldpgraph run --json`` prints, what the ServerApp writes and logs, and what
the results store keeps (one row per record: its keys map to the store's columns, so their
names and shapes are part of every existing store). This module is its public face; the parts:
the builder and the record's own keys (:mod:`.record_build`), its strict JSON and marked log
line (:mod:`.record_json`), and the summary for a person (:mod:`.summary`).
"""

from __future__ import annotations

from .record_build import RECORD_KEYS, GraphSizes, build_record, metric_sections, versions
from .record_json import NON_FINITE, RESULT_MARKER, from_json, json_default, result_line, to_json
from .summary import SECTION_LINES, guarantee_line, summary

__all__ = [
    "NON_FINITE",
    "RECORD_KEYS",
    "RESULT_MARKER",
    "SECTION_LINES",
    "GraphSizes",
    "build_record",
    "from_json",
    "guarantee_line",
    "json_default",
    "metric_sections",
    "result_line",
    "summary",
    "to_json",
    "versions",
]
