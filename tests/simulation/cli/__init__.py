"""Tests of the ``ldpgraph`` command, one module per command (``run``'s are
tests/simulation/test_cli.py), and the helpers they share."""

from __future__ import annotations

from ldpgraph.simulation import cli

SMALL = "synthetic:n=300,classes=3,d=60,avg_degree=6,seed=1"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``ldpgraph ARGV``: its exit code, stdout and stderr."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys, argv) -> str:
    """The error of ``ldpgraph ARGV``, asserted to be one line with exit code 2."""
    if argv[0] == "run":
        argv = ["run", "--quiet", *argv[1:]]  # no progress lines
    code, _, err = run_cli(capsys, *argv)
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def garbage_mirror(root, *names: str) -> None:
    """Overwrite the raw files of datasets ``names`` under ``root`` with garbage."""
    from ldpgraph.simulation.datasets import DATASETS

    for name in names:
        for rel in DATASETS[name].raw_files:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(b"not what you think\n" * 3)
