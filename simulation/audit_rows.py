"""Every row of ``ldpgraph audit``: the event rows :mod:`.audit` registers, then the node
audit's (:mod:`.audit_node`: the paths nodes run, the rates; :mod:`.audit_timing`: reply
times). Import :data:`AUDITS` from here to see them all; kept apart so that the node rows can
build on :mod:`.audit` without the two importing each other."""

from __future__ import annotations

from .audit import AUDITS
from .audit_node import register_all as _register_node
from .audit_timing import register_all as _register_timing

if "timing" not in AUDITS:  # once per process
    _register_node()
    _register_timing()

__all__ = ["AUDITS"]
