"""What every collection backend checks after a round, written once."""

from __future__ import annotations


class NoReportsError(ValueError):
    """No node sent a usable report in a round: there is nothing private to release, and
    training on an empty graph would only print a meaningless accuracy."""


def require_reports(protocol: str, round_: int, replied: int, asked: int, refused: int) -> None:
    """Stop the run when a round collected no report at all."""
    if replied == 0:
        raise NoReportsError(
            f"{protocol}: no node reported in round {round_} ({refused} of {asked} refused, the "
            "rest sent nothing usable): nothing to release. A node refuses a round over its own "
            "budget (--node-budget in simulation, `budget` in a SuperNode's --node-config) or a "
            "raw upload it did not consent to (--trust-curator / `trust-curator`)"
        )
