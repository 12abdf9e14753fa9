"""Stop exactly the processes a run started: those tied to its private Ray temp dir.

Ray renames its workers (``ray::…``) and, when the driver dies, re-parents them to PID 1, so
they are found by their command line or their open files under the temp dir, plus all their
descendants. Never ``ray stop``: it matches by name and can hit other users' processes.
"""

from __future__ import annotations

import os
import signal
import time


def _processes() -> dict[int, tuple[int, str, str]]:
    out: dict[int, tuple[int, str, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as fh:
                rest = fh.read().rsplit(")", 1)[1].split()
            out[int(entry)] = (int(rest[1]), cmd, rest[0])
        except (OSError, IndexError, ValueError):
            continue
    return out


def _has_open_file_under(pid: int, prefix: str) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                return True
        except OSError:
            continue
    return False


def pids_under(temp_dir: str) -> list[int]:
    """Live processes (and their descendants) whose command line or open files use temp_dir."""
    if not os.path.isdir("/proc"):
        return []
    prefix = temp_dir.rstrip("/") + "/"
    procs = _processes()
    me = os.getpid()
    roots = {
        pid
        for pid, (_, cmd, state) in procs.items()
        if state != "Z" and pid != me and (prefix in cmd or _has_open_file_under(pid, prefix))
    }
    found, frontier = set(roots), set(roots)
    while frontier:
        frontier = {
            pid
            for pid, (ppid, _, state) in procs.items()
            if ppid in frontier and pid not in found and state != "Z" and pid != me
        }
        found |= frontier
    return sorted(found)


def kill_under(temp_dir: str, grace: float = 3.0) -> list[int]:
    """SIGTERM, then SIGKILL, every process :func:`pids_under` finds; returns their pids."""
    pids = pids_under(temp_dir)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids_under(temp_dir):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and pids_under(temp_dir):
            time.sleep(0.1)
        if not pids_under(temp_dir):
            break
    return pids
