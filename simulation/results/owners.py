"""Who runs a cell of the results store, and whether they still do.

A 'running' row names its owner: the process id, the host, this host's boot and pid namespace
(pids are only comparable inside one) and the ldpgraph checkout's commit. A row whose owner is
gone (its pid is dead on this host, the host has rebooted since, or no sign of life for
``stale_after`` seconds) is abandoned and may be taken over (:meth:`.store.ResultsStore.claim`).
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def now() -> datetime:
    return datetime.now(UTC)


def iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds")


@functools.lru_cache(maxsize=1)
def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the ldpgraph source checkout this module runs from, or (None, None)
    when it is not one (an installed wheel). Cached."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            return None, None  # some other repository around an installed copy
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
        return commit, dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


@functools.lru_cache(maxsize=1)
def machine() -> str:
    """This host's boot and pid namespace: pids are only comparable when it matches."""
    parts = []
    for path in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/pid"):
        try:
            parts.append(os.readlink(path) if path.endswith("/pid") else Path(path).read_text())
        except OSError:
            parts.append("")
    return "/".join(p.strip() for p in parts)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host is running (a zombie has finished)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OSError:
        return False
    try:  # a zombie has finished: it is not running our cell
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def owner_fields() -> dict[str, Any]:
    """This process as the owner of a row (its columns)."""
    commit, dirty = git_state()
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "owner": machine(),
        "git_commit": commit,
        "git_dirty": None if dirty is None else int(dirty),
    }


def abandoned(
    pid: int | None, host: str | None, owner: str | None, beat: str | None, stale_after: float
) -> bool:
    """Whether a 'running' row's owner is gone."""
    if host == socket.gethostname():
        here = machine()
        if owner == here and pid is not None:
            if not pid_alive(int(pid)):
                return True
        elif owner and here and owner.split("/")[0] != here.split("/")[0]:
            return True  # this host has rebooted since the row was claimed
    if beat is None:
        return True
    age = (now() - datetime.fromisoformat(beat)).total_seconds()
    return age > stale_after
