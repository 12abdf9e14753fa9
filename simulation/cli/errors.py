"""The error a command raises for bad input: ``main`` prints it as one line (exit code 2)."""

from __future__ import annotations


class UserError(Exception):
    """Bad input to a command, said in one line (a missing file, a bad option value)."""


#: Positional arguments, by their namespace name, as the usage line shows them.
_POSITIONAL = {"file": "FILE"}


def errno_line(exc: OSError, args: object) -> str:
    """An OSError as one line that names the option and the path it is about: ``--out
    results/x: Permission denied``, not a bare ``[Errno 13] Permission denied``. The option is
    the one whose value is the failing path or a folder above it; none matches: the path."""
    import os
    from pathlib import Path

    what = exc.strerror or str(exc)
    paths = [p for p in (exc.filename, getattr(exc, "filename2", None)) if p]
    if not paths:
        return str(exc) if exc.errno is None else what
    failing = Path(os.fsdecode(paths[0]))
    for name, value in sorted(vars(args).items()):
        if not isinstance(value, str) or not value or name in ("command", "argv"):
            continue
        given = Path(value).expanduser()
        if given == failing or given in failing.parents:
            option = _POSITIONAL.get(name, "--" + name.replace("_", "-"))
            tail = "" if given == failing else f" ({failing})"
            return f"{option} {value}{tail}: {what}"
    return f"{failing}: {what}"


def exit_on_interrupt() -> None:
    """Ctrl-C in a Flower simulation leaves the process at once (one line, exit 130) rather
    than unwinding through Ray's threads. Set by the commands that run one, after their
    checks: importing the backend imports Flower (a second), which a refusal must not wait
    for."""
    from ..backends import flower

    flower.EXIT_ON_INTERRUPT = True
