"""The error a command raises for bad input: ``main`` prints it as one line (exit code 2)."""

from __future__ import annotations


class UserError(Exception):
    """Bad input to a command, said in one line (a missing file, a bad option value)."""
