"""PolBlogs (simulation/datasets/polblogs.py): the mirror's graph symmetrised with identity
features, and a small hand-made release through the same loader (self-loops and both
directions of a link collapse; an id outside the label file is refused)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldpgraph.simulation.datasets import DATASETS, DatasetError, load_dataset

from ...conftest import needs_mirror


@needs_mirror
def test_polblogs_from_the_mirror():
    g = load_dataset("polblogs")
    assert (g.num_nodes, g.num_edges, g.num_features, g.num_classes) == (1490, 16715, 1490, 2)
    assert DATASETS["polblogs"].expected.as_dict()["edges"] == 16715
    np.testing.assert_array_equal(g.x, np.eye(1490, dtype=np.uint8))
    assert (g.edges[:, 0] < g.edges[:, 1]).all()
    assert np.bincount(g.y).tolist() == [758, 732]


def _write(root: Path, pairs: list[tuple[int, int]], labels: list[int]) -> None:
    raw = root / "PolBlogs" / "raw"
    raw.mkdir(parents=True)
    (raw / "adjacency.tsv").write_text("".join(f"{u}\t{v}\n" for u, v in pairs))
    (raw / "labels.tsv").write_text("".join(f"{y}\n" for y in labels))


def test_polblogs_loader_symmetrises_and_checks_ids(tmp_path: Path):
    _write(tmp_path / "a", [(0, 1), (1, 0), (2, 2), (2, 3), (3, 1)], [0, 1, 0, 1])
    g = load_dataset("polblogs", data_root=tmp_path / "a")
    assert g.edges.tolist() == [[0, 1], [1, 3], [2, 3]]
    assert g.x.shape == (4, 4) and g.y.tolist() == [0, 1, 0, 1]
    _write(tmp_path / "b", [(0, 7)], [0, 1])
    with pytest.raises(DatasetError, match="outside"):
        load_dataset("polblogs", data_root=tmp_path / "b")
