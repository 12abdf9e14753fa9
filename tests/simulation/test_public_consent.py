"""Public features by consent: the partitioner takes each node's consent, writes only the rows
of the nodes that gave it into the curator file, and the run record names who consented."""

from __future__ import annotations

import numpy as np

from ldpgraph.simulation.cli import main
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.partition import load_curator
from ldpgraph.simulation.pipeline import public_consent

DATASET = "synthetic:n=50,classes=3,d=12,seed=3"


def test_only_consenting_nodes_features_are_shipped(tmp_path):
    consent = tmp_path / "consent.txt"
    consent.write_text("0 1 2\n3,4\n")
    out = tmp_path / "pub"
    assert main(["partition", "--dataset", DATASET, "--out", str(out),
                 "--public-features", str(consent)]) == 0  # fmt: skip
    x = load_dataset(DATASET).x
    shipped = np.load(out / "curator-features.npy")  # the file itself, not a view of it
    assert np.array_equal(shipped[:5], x[:5])
    assert not shipped[5:].any() and x[5:].any()
    cur = load_curator(out)
    assert np.flatnonzero(cur.public_consent).tolist() == [0, 1, 2, 3, 4]
    record = public_consent(cur)
    assert (record["consented"], record["of"]) == (5, 50)
    assert record["declined"] == list(range(5, 50))


def test_all_is_said_out_loud_and_simulation_is_every_node(tmp_path):
    out = tmp_path / "all"
    assert main(["partition", "--dataset", DATASET, "--out", str(out), "--public-features"]) == 0
    cur = load_curator(out)
    assert cur.public_consent.all()
    assert public_consent(cur)["declined"] == []
    assert public_consent(load_dataset(DATASET))["source"].startswith("simulation")


def test_a_bad_consent_file_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2 77\n")
    args = ["partition", "--dataset", DATASET, "--public-features", str(bad)]
    assert main([*args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "node ids must be in [0, 50)" in err and err.count("\n") == 1
    assert main([*args[:-1], str(tmp_path / "none.txt"), "--out", str(tmp_path / "p")]) == 2
    assert "cannot read the consent file" in capsys.readouterr().err
