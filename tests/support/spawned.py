"""A child process for the Ctrl-C tests, with its output in a file rather than a pipe.

A pipe that nobody reads fills at 64 KiB and blocks the child's next write, so a chatty run
would stall before the state the test waits for (seen once in CI as "never started").
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


class Spawned:
    """``subprocess.Popen`` with stdout and stderr going to ``log``, SIGINT at its default; a
    context manager that stops a child still running at its exit (Ctrl-C first, so that the
    run stops what it started, then SIGKILL) and closes the log."""

    def __init__(self, cmd: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        self._out = open(log, "wb")  # noqa: SIM115 (closed in stop())
        # A user's shell delivers Ctrl-C to a process with the default disposition; an ignored
        # SIGINT inherited from this pytest process would let the run finish instead.
        self.proc = subprocess.Popen(
            cmd,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )

    def __enter__(self) -> Spawned:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def tail(self, chars: int = 3000) -> str:
        """The end of the child's output so far."""
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self, grace: float = 60.0) -> None:
        """Ctrl-C to a child still running, SIGKILL after ``grace`` seconds; the log closed."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            self._out.close()

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = 180) -> None:
        """Poll ``ready()`` until it holds; fail with the child's output if the child exits or
        the time runs out first."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                pytest.fail(f"exited ({self.proc.returncode}) before {what}:\n{self.tail()}")
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"no {what} after {timeout:.0f} s:\n{self.tail()}")
            time.sleep(0.2)

    def wait(self, timeout: float) -> int:
        """The child's exit status; fail with its output if it is still running after
        ``timeout`` seconds."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"still running after {timeout:.0f} s:\n{self.tail()}")
