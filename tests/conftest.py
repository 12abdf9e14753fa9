"""Session-wide environment: the offline mirror, a private cache, Flower and Ray kept local."""

from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile
from pathlib import Path

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
    exclude = {Path(tmp).name}
    if base.is_relative_to("/tmp"):
        exclude.add(base.relative_to("/tmp").parts[0])
    left += [f"/tmp/{n}" for n in tmp_leftovers(before, exclude)]
    if left:
        pytest.fail(f"the test session left temp files behind: {', '.join(left)}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` are skipped on machines without CUDA."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu:
        import torch

        if not torch.cuda.is_available():
            for item in gpu:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


needs_mirror = pytest.mark.skipif(
    not (MIRROR / "Planetoid" / "Cora" / "raw").is_dir(), reason=f"no dataset mirror at {MIRROR}"
)


_EXIT_STATUS: dict[str, int] = {}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS["status"] = int(exitstatus)


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
