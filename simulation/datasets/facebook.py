"""Facebook page-page (MUSAE), read from its npz without PyG."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ldpgraph.protocols.graph import Graph

from .build import make_graph
from .download import fetch_url
from .info import DatasetError, DatasetInfo, Stats


def _load_facebook(root: Path, info: DatasetInfo) -> Graph:
    """Read ``facebook.npz`` directly: PyG's process() would make a 424 MB float copy of x.

    The mirror's file has the 4714 binary MUSAE feature ids; the download fallback gets PyG's
    hosted file instead, whose 128 features are floats (so ``x`` is float32 there).
    """
    path = root / info.raw_files[0]
    with np.load(path, allow_pickle=False) as f:
        missing = {"edges", "features", "target"} - set(f.files)
        if missing:
            raise DatasetError(f"{path}: lacks arrays {sorted(missing)}")
        x = f["features"]
        y = f["target"]
        pairs = f["edges"]
    return make_graph(info.name, pairs, x, y)


#: This family's registry entries, in the order ``ldpgraph datasets`` lists them.
ENTRIES = (
    DatasetInfo(
        name="facebook",
        description="FacebookPagePage (MUSAE), 4714 binary feature ids (mirror conversion)",
        expected=Stats(22470, 170823, 4714, 4),
        raw_files=("FacebookPagePage/raw/facebook.npz",),
        loader=_load_facebook,
        fetch=fetch_url("https://graphmining.ai/datasets/ptg/facebook.npz"),
    ),
)
