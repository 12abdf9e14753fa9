"""Every client test keeps a deployed node's default ledger places in its own temporary
directory: none writes into the user's state or configuration home."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def node_state_homes(tmp_path_factory, monkeypatch):
    root = tmp_path_factory.mktemp("node-homes")
    monkeypatch.setenv("XDG_STATE_HOME", str(root / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    return root
