"""``ldpgraph run`` says each phase as it starts (issue 33: no phase over ~2 s in silence):
the server step after collection, the model's libraries, each metric."""

from __future__ import annotations

import re

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
