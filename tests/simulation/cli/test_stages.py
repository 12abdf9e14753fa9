"""``ldpgraph run`` says each phase as it starts (issue 33: no phase over ~2 s in silence):
the server step after collection, the model's libraries, each metric."""

from __future__ import annotations

import re

import pytest

from . import SMALL, run_cli


def test_a_run_names_its_phases_in_order(capsys):
    code, _, err = run_cli(
        capsys, "run", "--dataset", SMALL, "--backend", "local", "--epochs", "2",
        "--metrics", "accuracy,graph",
    )  # fmt: skip
    assert code == 0, err
    lines = err.replace("\r", "\n")  # a tqdm bar clears its line with a carriage return
    said = [m.group(1) for m in re.finditer(r"^\[\s*[\d.]+s\] (.*)$", lines, re.M)]
    want = [
        "collecting 300 node reports",
        "round 0: 300 reports; the server step of hogs",
        "training gcn on 300 nodes",
        "metric accuracy (1/2) on a graph of 300 nodes",
        "metric graph (2/2) on a graph of 300 nodes",
    ]
    at = [next((i for i, line in enumerate(said) if line.startswith(w)), None) for w in want]
    assert None not in at and at == sorted(at), said
    code, _, err = run_cli(capsys, "run", "--quiet", "--dataset", SMALL, "--epochs", "2",
                           "--backend", "local")  # fmt: skip
    assert code == 0 and "[" not in err, err


#: A stage line said inside HoGS's server step (ldpgraph.protocols.progress), not by the
#: pipeline: on the Flower backend the server step runs in the ServerApp (another process for
#: ``flwr run``, another thread for the in-process engine), and must still reach the printer.
#: ``flwr run``'s relay is checked on the README's HoGS run (tests/test_readme_commands.py:
#: the same command a user types, one Flower run fewer).
SERVER_SIDE = "HoGS: topology from"
TINY = "synthetic:n=40,classes=2,d=8,avg_degree=4,seed=3"


@pytest.mark.slow
@pytest.mark.engine
def test_the_in_process_engine_relays_them_too():
    """Sweeps call the pipeline, whose ``flower`` collection runs Flower's in-process engine:
    the ServerApp's thread says its stage lines to the caller's listener."""
    from ldpgraph.simulation import pipeline
    from ldpgraph.simulation.config import RunConfig

    said: list[str] = []
    config = RunConfig.from_mapping(
        {"dataset": TINY, "backend": "flower", "epochs": 1, "ray_actors": 1}
    )
    pipeline.run(config, stage=said.append)
    assert any(line.startswith(SERVER_SIDE) for line in said), said
