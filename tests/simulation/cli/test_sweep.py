"""``ldpgraph sweep``: its counts are checked before the file is run."""

from __future__ import annotations

import pytest

from . import one_line_error


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["sweep", "experiments/hogs-fig8.toml", "--workers", "-2"], "--workers must be >= 0"),
        (["sweep", "experiments/hogs-fig8.toml", "--limit", "-1"], "--limit must be >= 1"),
        (["sweep", "experiments/hogs-fig8.toml", "--limit", "0"], "--limit must be >= 1"),
    ],
)
def test_sweep_counts_are_checked(capsys, argv, needle):
    assert needle in one_line_error(capsys, argv)
