"""Checks, before any work, that what a command will write can be written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import UserError


def check_writable(path: str | os.PathLike[str], what: str, *, kind: str = "file") -> None:
    """Refuse, before any work, a path this command will write: an existing one must be a
    writable ``kind`` ("file", "dir" or "sqlite": a file whose directory must be writable too,
    for SQLite's journal), a new one must be creatable (its nearest existing ancestor a
    writable directory)."""
    p = Path(path).expanduser()
    if p.exists():
        if kind == "dir" and not p.is_dir():
            raise UserError(f"{what} {p} is not a directory")
        if kind != "dir" and p.is_dir():
            raise UserError(f"{what} {p} is a directory, not a file")
        mode = os.W_OK | (os.X_OK if kind == "dir" else 0)
        if not os.access(p, mode) or (kind == "sqlite" and not os.access(p.parent, os.W_OK)):
            raise UserError(f"{what} {p} is not writable")
        return
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{what} {p} cannot be created: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{what} {p} cannot be created: {parent} is not writable")
    # os.access answers for the permission bits, which root passes everywhere: a file made and
    # removed at once finds what only a write finds (/proc, a full or special file system).
    try:
        fd, probe = tempfile.mkstemp(prefix=".ldpgraph-probe-", dir=parent)
    except OSError as exc:
        raise UserError(f"{what} {p} cannot be created: {parent}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)


def check_cache_writable(datasets: list[str]) -> None:
    """Loading a real dataset writes its processed form to the cache: check it can."""
    from ..datasets import ENV_CACHE, cache_dir, parse_dataset_spec

    if all(parse_dataset_spec(d)[0] == "synthetic" for d in datasets):
        return
    via = f"${ENV_CACHE}" if os.environ.get(ENV_CACHE) else "the dataset cache"
    check_writable(cache_dir(), f"{via} (set {ENV_CACHE} to a writable directory)", kind="dir")


def check_store(path: str | os.PathLike[str], what: str) -> None:
    """Refuse, before any data is loaded, a results store this command could not record into:
    an unwritable path, or an existing file that is not an ldpgraph store (corrupt, another
    SQLite database, a newer schema). Opening it checks (and, for an older schema, migrates)
    what recording would; a new store is only checked to be creatable, not created."""
    check_writable(path, what, kind="sqlite")
    p = Path(path).expanduser()
    if not p.exists():
        return
    from ..results.store import ResultsStore, StoreError

    try:
        ResultsStore(p, create=False).close()
    except (StoreError, OSError) as exc:
        raise UserError(f"{what}: {exc}") from None


def open_store_for_reading(path: str | os.PathLike[str]) -> Any:
    """A results store to read: opened writable where it can be (an old schema is migrated),
    else read-only (a store on a read-only mount, or a file this user cannot write, is read
    as it is rather than called unusable)."""
    from ..results.store import ResultsStore, StoreError

    p = Path(path)
    if p.is_file() and not (os.access(p, os.W_OK) and os.access(p.parent, os.W_OK)):
        return ResultsStore(p, read_only=True)
    try:
        return ResultsStore(p, create=False)
    except StoreError as exc:
        try:
            return ResultsStore(p, read_only=True)
        except (StoreError, OSError):
            raise exc from None
