"""How ``make test`` shares the suite between pytest-xdist workers (``-n 2 --dist loadgroup``).

Two kinds of work unit, each run whole by one worker:

- the *serial* unit: every test marked ``engine`` (it starts Ray, a Flower engine, a SuperLink
  deployment or ``flwr run``) or ``wallclock`` (it times code on the wall clock). One worker
  runs them one after another: two engines side by side would compete for CI's two cores under
  their own timeouts. The unit is handed out first (it is the longest) and its ``wallclock``
  tests run last in it, when the other worker has little or nothing left to run beside them;
- every other module, whole: its fixtures are built once and its tests run in their written
  order, as in a serial run; a folder with package-scoped fixtures (:data:`PACKAGE_UNITS`),
  whole.

xdist's own ``loadgroup`` reads ``xdist_group`` marks through the item's ``_nodeid``, which
pytest 9.2 no longer uses, so it groups nothing: :class:`SuiteScheduling` replaces it. Workers
know the marks, the controller only the test ids: each worker writes its serial test ids to a
file in a folder the controller passes it (:class:`XdistGroups`), and the controller reads them
when it schedules (every worker has finished collecting by then).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

#: The work unit of the serial tests.
SERIAL = "serial"
#: Folders whose conftest builds package-scoped fixtures: each runs whole on one worker, so
#: the fixtures are built once (tests/test_xdist_schedule.py holds the list complete).
PACKAGE_UNITS = ("tests/server/evaluation/",)
#: The workerinput key naming the folder of the workers' serial test ids.
KEY = "ldpgraph_serial_ids"


def is_serial(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(m) for m in ("engine", "wallclock"))


def unit_of(nodeid: str, serial: set[str]) -> str:
    """The work unit of a test: the serial unit, its package's (:data:`PACKAGE_UNITS`) or
    its module's."""
    if nodeid in serial:
        return SERIAL
    module = nodeid.split("::", 1)[0]
    return next((f for f in PACKAGE_UNITS if module.startswith(f)), module)


def order_for_workers(items: list[pytest.Item], folder: str, worker: str) -> None:
    """On a worker: the serial tests first (``wallclock`` last among them), the rest in their
    collected order; the serial ids written to ``folder`` for the controller."""
    rank = {id(item): (0 if is_serial(item) else 1) for item in items}
    items.sort(
        key=lambda item: (
            rank[id(item)],
            rank[id(item)] == 0 and bool(item.get_closest_marker("wallclock")),
        )
    )
    ids = [item.nodeid for item in items if rank[id(item)] == 0]
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{worker}.")
    with os.fdopen(fd, "w") as fh:
        json.dump(ids, fh)
    os.replace(tmp, Path(folder) / f"{worker}.json")


class SuiteScheduling(LoadScopeScheduling):
    """xdist's scope scheduling over this suite's units (the module's docstring), handed out in
    the workers' collected order: the serial unit first."""

    def __init__(self, config: pytest.Config, log: Any, folder: Path) -> None:
        super().__init__(config, log)
        self._folder = folder
        self._serial: set[str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._serial is None:
            self._serial = set()
            for path in self._folder.glob("*.json"):
                self._serial.update(json.loads(path.read_text()))
        return unit_of(nodeid, self._serial)

    def schedule(self) -> None:
        reorder = self.config.option.loadscopereorder
        self.config.option.loadscopereorder = False  # the collected order: serial unit first
        try:
            super().schedule()
        finally:
            self.config.option.loadscopereorder = reorder


class XdistGroups:
    """The controller's side: a folder for the workers' serial ids, passed to each worker,
    and :class:`SuiteScheduling` for ``--dist loadgroup``."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ldpg-t-xdist-", dir="/tmp"))

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[KEY] = str(self.folder)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") == "loadgroup":
            return SuiteScheduling(config, log, self.folder)
        return None

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
