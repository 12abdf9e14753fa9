"""Stop exactly the processes a run started: those tied to its private temp dir.

Ray renames its workers (``ray::…``) and, when the driver dies, re-parents them to PID 1; Flower's
local SuperLink is started detached by ``flwr run``. So they are found by their command line or
their open files (and Unix sockets) under the run's private temp dir, plus all their
descendants, through psutil (any OS it supports). Never ``ray stop`` and never a name alone:
both match other users' processes.
"""

from __future__ import annotations

import os
import time
from typing import Any


def _uses(proc: Any, prefix: str) -> bool:
    """Whether ``proc``'s command line, open files or Unix sockets name a path under prefix."""
    import psutil

    try:
        if prefix in " ".join(proc.cmdline()):
            return True
        if any(f.path.startswith(prefix) for f in proc.open_files()):
            return True
        return any(
            isinstance(c.laddr, str) and c.laddr.startswith(prefix)
            for c in proc.net_connections(kind="unix")
        )
    except (psutil.Error, OSError):  # gone, a zombie, or someone else's
        return False


def pids_under(temp_dir: str) -> list[int]:
    """Live processes (and their descendants) whose command line or open files use temp_dir;
    never this process."""
    import psutil

    prefix = temp_dir.rstrip("/") + "/"
    me = os.getpid()
    live: dict[int, Any] = {}
    children: dict[int, list[int]] = {}
    for proc in psutil.process_iter(["ppid", "status"]):
        if proc.pid == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        live[proc.pid] = proc
        children.setdefault(proc.info["ppid"] or 0, []).append(proc.pid)
    found = {pid for pid, proc in live.items() if _uses(proc, prefix)}
    frontier = set(found)
    while frontier:
        frontier = {k for p in frontier for k in children.get(p, ()) if k not in found}
        found |= frontier
    return sorted(found)


def kill_under(temp_dir: str, grace: float = 3.0) -> list[int]:
    """SIGTERM, then SIGKILL, every process :func:`pids_under` finds; returns their pids."""
    return kill_pids(lambda: pids_under(temp_dir), grace)


def kill_pids(find: Any, grace: float = 3.0) -> list[int]:
    """Terminate (then kill, after ``grace`` seconds) the processes ``find()`` names, asking
    again each time (a dying parent may leave children); returns the first pids found."""
    import psutil

    first = list(find())
    for stop in ("terminate", "kill"):
        procs = []
        for pid in find():
            try:
                proc = psutil.Process(pid)
                getattr(proc, stop)()
                procs.append(proc)
            except psutil.Error:
                pass
        psutil.wait_procs(procs, timeout=grace)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and find():
            time.sleep(0.1)
        if not find():
            break
    return first
