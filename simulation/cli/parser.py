"""The argparse pieces every command shares: one-line errors, ``--flag``/``--no-flag`` booleans
and the help formatter that shows them."""

from __future__ import annotations

import argparse
from typing import NoReturn

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class BoolFlag(argparse.Action):
    """A boolean option as a flag: ``--flag`` sets it, ``--no-flag`` clears it, and
    ``--flag true`` / ``--flag false`` (the form older commands use) still work."""

    def __init__(self, option_strings, dest, default=None, required=False, help=None):
        names = []
        for opt in option_strings:
            names.append(opt)
            if opt.startswith("--"):
                names.append("--no-" + opt[2:])
        super().__init__(
            names,
            dest,
            nargs="?",
            default=default,
            required=required,
            help=help,
            metavar="true|false",
        )

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string and option_string.startswith("--no-"):
            if values is not None:
                raise argparse.ArgumentError(self, f"{option_string} takes no value")
            setattr(namespace, self.dest, False)
            return
        if values is None or str(values).lower() in _TRUE:
            setattr(namespace, self.dest, True)
        elif str(values).lower() in _FALSE:
            setattr(namespace, self.dest, False)
        else:
            raise argparse.ArgumentError(self, f"expected true or false, got {values!r}")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults in the help, and a :class:`BoolFlag` shown as ``--flag [true|false], --no-flag``."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if isinstance(action, BoolFlag):  # --flag [true|false], --no-flag
            return ", ".join(
                o if o.startswith("--no-") else f"{o} [true|false]" for o in action.option_strings
            )
        return super()._format_action_invocation(action)


class ShortErrors(argparse.ArgumentParser):
    """An error is one line and a pointer to ``--help``, not the whole usage first (``run``
    has over a hundred flags)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
