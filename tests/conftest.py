"""Session-wide environment: the offline mirror, a private cache, Flower and Ray kept local."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

MIRROR = Path(
    os.environ.get("LDPGRAPH_DATA") or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)


@pytest.fixture(scope="session", autouse=True)
def ldpgraph_env(tmp_path_factory: pytest.TempPathFactory):
    # A short private TMPDIR (Ray's socket paths must stay short), removed at the end: PyG
    # writes a generated module into the temp dir for every process that builds a conv layer.
    tmp = tempfile.mkdtemp(prefix="ldpg-t-", dir="/tmp")
    saved = tempfile.tempdir
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", tmp)
        tempfile.tempdir = tmp
        mp.setenv("LDPGRAPH_DATA", str(MIRROR))
        if not os.environ.get("LDPGRAPH_CACHE"):
            mp.setenv("LDPGRAPH_CACHE", str(tmp_path_factory.mktemp("cache")))
        mp.setenv("FLWR_HOME", str(tmp_path_factory.mktemp("flwr-home")))
        mp.setenv("FLWR_TELEMETRY_ENABLED", "0")
        try:
            yield
        finally:
            tempfile.tempdir = saved
            shutil.rmtree(tmp, ignore_errors=True)


needs_mirror = pytest.mark.skipif(
    not (MIRROR / "Planetoid" / "Cora" / "raw").is_dir(), reason=f"no dataset mirror at {MIRROR}"
)
