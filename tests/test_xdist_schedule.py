"""``make test``'s split of the suite over pytest-xdist workers (tests/support/xdist_schedule.py)
and the watch that keeps every engine-starting test in the serial unit (tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import _engine_command
from .support.xdist_schedule import PACKAGE_UNITS, SERIAL, order_for_workers, unit_of

ROOT = Path(__file__).resolve().parent


def test_every_folder_with_package_fixtures_is_one_unit():
    """A package-scoped fixture split over two workers is built twice, and rebuilt whenever
    a worker's tests leave the folder and come back."""
    folders = {
        f"{c.parent.relative_to(ROOT.parent).as_posix()}/"
        for c in ROOT.rglob("conftest.py")
        if 'scope="package"' in c.read_text()
    }
    assert folders and folders == set(PACKAGE_UNITS)


def test_units_are_the_serial_tests_the_packages_and_the_modules():
    serial = {"tests/simulation/test_flower.py::test_faulty"}
    assert unit_of("tests/simulation/test_flower.py::test_faulty", serial) == SERIAL
    assert unit_of("tests/simulation/test_flower.py::test_only", serial) == (
        "tests/simulation/test_flower.py"
    )
    assert unit_of("tests/server/evaluation/test_lp.py::test_x[a-b]", serial) == (
        "tests/server/evaluation/"
    )
    assert unit_of("tests/server/test_rounds.py::T::test_y", set()) == "tests/server/test_rounds.py"


class Item:
    def __init__(self, nodeid: str, *marks: str) -> None:
        self.nodeid, self.marks = nodeid, marks

    def get_closest_marker(self, name: str):
        return name if name in self.marks else None


def test_workers_order_the_serial_tests_first_and_the_wallclock_ones_last_among_them(tmp_path):
    items = [
        Item("a::plain"),
        Item("a::timed", "wallclock"),
        Item("b::engine", "engine", "slow"),
        Item("b::plain"),
        Item("c::engine", "engine"),
    ]
    order_for_workers(items, str(tmp_path), "gw0")
    ids = ["b::engine", "c::engine", "a::timed"]
    assert [i.nodeid for i in items] == [*ids, "a::plain", "b::plain"]
    assert json.loads((tmp_path / "gw0.json").read_text()) == ids
    assert [p.name for p in tmp_path.iterdir()] == ["gw0.json"]


@pytest.mark.parametrize(
    ("argv", "engine"),
    [
        (["/v/lib/ray/core/src/ray/gcs/gcs_server", "--log_dir=x"], True),
        (["/v/bin/ray", "start", "--head"], True),
        (["/v/bin/flower-superlink", "--insecure"], True),
        (["/v/bin/flwr", "run", "."], True),
        (["/v/bin/flwr", "run", "--help"], False),
        (["/v/bin/ldpgraph", "run", "--dataset", "cora"], True),
        (["/v/bin/ldpgraph", "run", "--backend", "flower"], True),
        (["/v/bin/ldpgraph", "run", "--backend", "local"], False),
        (["python", "-m", "ldpgraph.simulation.cli", "run", "--backend=local"], False),
        (["python", "-m", "ldpgraph.simulation.cli", "run", "--json"], True),
        (["python", "-m", "ldpgraph.simulation.cli", "run", "--help"], False),
        (["/v/bin/ldpgraph", "sweep", "x.toml"], False),
        (["python", "-c", "pass"], False),
        ([], False),
    ],
)
def test_the_watch_knows_an_engine_start(argv, engine):
    assert _engine_command(argv) is engine
