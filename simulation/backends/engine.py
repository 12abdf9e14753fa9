"""The one place that starts Flower's in-process Simulation Runtime: the named fallback.

Flower 1.41 marks ``flwr.simulation.run_simulation`` deprecated in favour of ``flwr run``, and
``ldpgraph run --backend flower`` (and ``ldpgraph.run``) now go through ``flwr run``
(:mod:`.flwr_run`, through :func:`ldpgraph.simulation.api.run_record`). The in-process engine
remains for what calls :func:`ldpgraph.simulation.pipeline.run` directly (sweep workers,
benchmarks) and for the tests that inject a faulty ClientApp object, which only an in-process
engine can take. Every such call goes through
:func:`run_in_simulation_engine`; when Flower removes the call, this module is the one change
(a test holds every other module to it).
"""

from __future__ import annotations

import logging
from typing import Any


class _DropDeprecationNotice(logging.Filter):
    """Flower logs its deprecation notice on every call; we know, and say so above."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`run_simulation` function is deprecated" not in record.getMessage()


def run_in_simulation_engine(
    server_app: Any, client_app: Any, num_supernodes: int, backend_config: dict[str, Any]
) -> None:
    """Run ``server_app`` against ``num_supernodes`` virtual SuperNodes of ``client_app`` on
    Flower's Ray backend (Ray must already be initialised by the caller)."""
    from flwr.simulation import run_simulation

    flwr_log = logging.getLogger("flwr")
    notice = _DropDeprecationNotice()
    flwr_log.addFilter(notice)
    try:
        run_simulation(
            server_app=server_app,
            client_app=client_app,
            num_supernodes=num_supernodes,
            backend_config=backend_config,
        )
    finally:
        flwr_log.removeFilter(notice)
