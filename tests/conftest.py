"""Session-wide environment: the offline mirror, a private cache, Flower and Ray kept local."""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

MIRROR = Path(
    os.environ.get("LDPGRAPH_DATA") or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)


#: torch's per-user compile cache (created by importing torch_geometric, reused by every run).
TMP_KEPT = ("torchinductor_*",)
#: Names this project's stack gives its temp files (see :func:`tmp_leftovers`).
TMP_OURS = ("ldpg*", "ray*", "flwr*", "torch_geometric*", "*_propagate_*", "*_edge_updater_*")


def tmp_leftovers(before: set[str], exclude: set[str], strict: bool | None = None) -> list[str]:
    """New entries of /tmp since ``before`` that no live process uses. /tmp is shared with
    other programs: unless ``strict`` (default: LDPGRAPH_TMP_CHECK=strict, as .ci/run sets),
    only names of this project's stack count; another test session's private dir never does."""
    from ldpgraph.simulation.processes import pids_under

    if strict is None:
        strict = os.environ.get("LDPGRAPH_TMP_CHECK") == "strict"
    return [
        name
        for name in sorted(set(os.listdir("/tmp")) - before - exclude)
        if not any(fnmatch.fnmatch(name, g) for g in (*TMP_KEPT, "ldpg-t-*"))
        and (strict or any(fnmatch.fnmatch(name, g) for g in TMP_OURS))
        and not pids_under(f"/tmp/{name}")
    ]


@pytest.fixture(scope="session", autouse=True)
def ldpgraph_env(tmp_path_factory: pytest.TempPathFactory):
    # A short private TMPDIR (Ray's socket paths must stay short), removed at the end. The
    # suite must leave no temp files: neither in it (what the code writes through tempfile) nor
    # in /tmp itself; pytest's own basetemp is the exception.
    before = set(os.listdir("/tmp"))
    base = tmp_path_factory.getbasetemp().resolve()
    tmp = tempfile.mkdtemp(prefix="ldpg-t-", dir="/tmp")
    saved = tempfile.tempdir
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", tmp)
        tempfile.tempdir = tmp
        mp.setenv("LDPGRAPH_DATA", str(MIRROR))
        if not os.environ.get("LDPGRAPH_CACHE"):
            mp.setenv("LDPGRAPH_CACHE", str(tmp_path_factory.mktemp("cache")))
        mp.setenv("FLWR_HOME", str(tmp_path_factory.mktemp("flwr-home")))
        # A deployed node's default ledger and witness live in the operator's state and config
        # homes: never the real ones from a test.
        mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state-home")))
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config-home")))
        mp.setenv("FLWR_TELEMETRY_ENABLED", "0")
        try:
            yield
        finally:
            tempfile.tempdir = saved
            # multiprocessing's own pymp-* dirs are removed by its finalizers at interpreter
            # exit, after this fixture; `ray` is Ray's per-user default dir that a driver
            # joining an existing cluster (test_ray_cluster) keeps and Ray reuses. Both live
            # in the private TMPDIR removed below.
            left = [
                f"$TMPDIR/{n}"
                for n in sorted(os.listdir(tmp))
                if not any(fnmatch.fnmatch(n, g) for g in (*TMP_KEPT, "pymp-*", "ray"))
            ]
            shutil.rmtree(tmp, ignore_errors=True)
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # an xdist worker: the controller checks /tmp
        left += [f"/tmp/{n}" for n in tmp_leftovers(before, _tmp_exclude(base, tmp))]
    if left:
        pytest.fail(f"the test session left temp files behind: {', '.join(left)}")


def pytest_configure(config: pytest.Config) -> None:
    if _controller(config) and config.pluginmanager.hasplugin("xdist"):
        from .support.xdist_schedule import XdistGroups

        config.pluginmanager.register(XdistGroups(), "ldpgraph-xdist-groups")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` are skipped on machines without CUDA; on an xdist worker of
    ``make test`` the tests are put in the order its scheduling needs (support/xdist_schedule)."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu:
        import torch

        if not torch.cuda.is_available():
            for item in gpu:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
    folder = getattr(config, "workerinput", {}).get("ldpgraph_serial_ids")
    if folder:
        from .support.xdist_schedule import order_for_workers

        order_for_workers(items, folder, config.workerinput["workerid"])


#: The programs that start an engine: Ray's daemons (a local Ray: Flower's simulation engine,
#: the Ray curator) and Flower's SuperLink, SuperNodes, apps and CLI.
ENGINE_PROGRAMS = frozenset(
    {
        "gcs_server",
        "raylet",
        "ray",
        "flwr",
        "flower-superlink",
        "flower-supernode",
        "flower-simulation",
        "flwr-serverapp",
        "flwr-clientapp",
    }
)
_RUNNING: dict[str, Any] = {}


def _engine_command(argv: list[str]) -> bool:
    """Whether a started process is an engine, or an ``ldpgraph run`` on a backend other than
    ``local`` (the default backend is Flower's simulation engine); a ``--help`` is neither."""
    if not argv or {"--help", "-h", "--version"} & set(argv):
        return False
    if Path(argv[0]).name in ENGINE_PROGRAMS:
        return True
    cli = Path(argv[0]).name == "ldpgraph" or "ldpgraph.simulation.cli" in argv[:3]
    if not cli or "run" not in argv:
        return False
    backend = next((a.split("=", 1)[1] for a in argv if a.startswith("--backend=")), None)
    if "--backend" in argv[:-1]:
        backend = argv[argv.index("--backend") + 1]
    return backend != "local"


def _audit(event: str, args: tuple) -> None:
    if event != "subprocess.Popen" or "item" not in _RUNNING:
        return
    argv = args[1]
    argv = [argv] if isinstance(argv, (str, bytes, os.PathLike)) else list(argv or [])
    argv = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in argv]
    if _engine_command(argv):
        _RUNNING["engines"].append(" ".join([Path(argv[0]).name, *argv[1:2]]))


sys.addaudithook(_audit)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _RUNNING.update(item=item, engines=[])


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A test that starts an engine must be marked ``engine``: unmarked, ``make test`` would
    run it beside another engine on the other worker."""
    engines = _RUNNING.pop("engines", [])
    _RUNNING.pop("item", None)
    if engines and not item.get_closest_marker("engine"):
        pytest.fail(
            f"{item.nodeid} starts an engine ({engines[0]}) but is not marked "
            "@pytest.mark.engine (make test runs engines one at a time)",
            pytrace=False,
        )


needs_mirror = pytest.mark.skipif(
    not (MIRROR / "Planetoid" / "Cora" / "raw").is_dir(), reason=f"no dataset mirror at {MIRROR}"
)


_EXIT_STATUS: dict[str, int] = {}


def _tmp_exclude(base: Path, *private: str) -> set[str]:
    """Entries of /tmp a test session may leave: its private dirs and pytest's basetemp."""
    exclude = {Path(p).name for p in private}
    if base.is_relative_to("/tmp"):
        exclude.add(base.relative_to("/tmp").parts[0])
    return exclude


def _controller(config: pytest.Config) -> bool:
    """Whether this process hands the tests to xdist workers (``pytest -n N``, N > 0)."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


_TMP_BEFORE: dict[str, set[str]] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    if _controller(session.config):
        _TMP_BEFORE["names"] = set(os.listdir("/tmp"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under xdist, the /tmp check of :func:`ldpgraph_env` runs here, once every worker has
    ended: a worker checking /tmp would see its neighbour's files in use."""
    if "names" in _TMP_BEFORE:
        base = session.config._tmp_path_factory.getbasetemp().resolve()
        left = tmp_leftovers(_TMP_BEFORE.pop("names"), _tmp_exclude(base))
        if left:
            _TMP_LEFT.extend(f"/tmp/{n}" for n in left)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _EXIT_STATUS["status"] = int(session.exitstatus)


_TMP_LEFT: list[str] = []


def pytest_terminal_summary(terminalreporter) -> None:
    if _TMP_LEFT:
        terminalreporter.write_line(
            f"FAILED: the test session left temp files behind: {', '.join(_TMP_LEFT)}", red=True
        )


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the test process with pytest's own status once every report is written, skipping
    the interpreter's teardown: after a full run (torch, Ray, gRPC and Flower threads loaded in
    one process) that teardown has crashed with a segfault after "N passed" was printed (seen
    on a fresh-clone CI run), which turned a green suite into a failed `make test`. Nothing of
    the tests runs after this point."""
    import sys

    if "status" not in _EXIT_STATUS or os.environ.get("LDPGRAPH_TEST_NORMAL_EXIT"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_EXIT_STATUS["status"])
