"""A node's state files are replaced whole: a write that fails leaves the old file and no
temporary beside it (both ledgers write through :func:`write_atomic`)."""

from __future__ import annotations

import os

import pytest

from ldpgraph.client import files
from ldpgraph.client.files import write_atomic


@pytest.mark.parametrize("durable", [False, True])
def test_write_replaces_the_file_and_makes_its_directory(tmp_path, durable):
    path = tmp_path / "a" / "b" / "state.json"
    write_atomic(path, b"one", durable)
    write_atomic(path, b"two", durable)
    assert path.read_bytes() == b"two"
    assert os.listdir(path.parent) == ["state.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    write_atomic(path, b"old", False)

    def broken(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, b"new", True)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["state.json"]
