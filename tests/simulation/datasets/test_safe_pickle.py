"""Dataset pickles are read with a restricted unpickler: every mirrored pickle loads, and a
poisoned one (its ``__reduce__`` calls ``os.system``) is a one-line error before it runs."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest

from ldpgraph.simulation.datasets.info import DatasetError
from ldpgraph.simulation.datasets.registry import DATASETS
from ldpgraph.simulation.datasets.safe_pickle import load_pickle

MIRROR = Path(os.environ.get("LDPGRAPH_DATA", "/nonexistent"))
PICKLED = [
    (name, rel)
    for name, info in DATASETS.items()
    for rel in info.raw_files
    if rel.endswith(".pkl") or ("/ind." in rel and not rel.endswith(".index"))
]


class Poison:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def poison(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps([Poison(marker)], protocol=2))


@pytest.mark.parametrize(("name", "rel"), PICKLED)
def test_every_mirrored_pickle_loads(name, rel):
    path = MIRROR / rel
    if not path.is_file():
        pytest.skip(f"{rel} is not in the mirror")
    assert load_pickle(path, encoding="latin1") is not None


def test_a_poisoned_pickle_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "ran"
    poison(tmp_path / "bad.pkl", marker)
    with pytest.raises(DatasetError) as err:
        load_pickle(tmp_path / "bad.pkl")
    assert "refused to unpickle posix.system" in str(err.value) or "os.system" in str(err.value)
    assert "\n" not in str(err.value)
    assert not marker.exists()
    # Without the restriction the same file runs its code (the test can fail).
    with open(tmp_path / "bad.pkl", "rb") as fh:
        pickle.load(fh)  # noqa: S301
    assert marker.exists()


@pytest.mark.parametrize("dataset", ["cora", "dblp-collection"])
def test_a_poisoned_dataset_folder_is_refused(tmp_path, dataset):
    """A copy of the mirror's files with one pickle replaced: the dataset's own loader
    refuses it (Planetoid: before PyG unpickles it without restriction)."""
    info = DATASETS[dataset]
    if not all((MIRROR / rel).is_file() for rel in info.raw_files):
        pytest.skip(f"{dataset} is not in the mirror")
    root = tmp_path / "mirror"
    for rel in info.raw_files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(MIRROR / rel, root / rel)
    marker = tmp_path / "ran"
    target = next(rel for rel in info.raw_files if not rel.endswith(".index"))
    poison(root / target, marker)
    with pytest.raises(DatasetError, match="refused to unpickle"):
        info.loader(root, info)
    assert not marker.exists()
