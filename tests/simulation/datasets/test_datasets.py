"""Tests of the dataset layer: the mirror's exact statistics, invariants, cache, errors,
the LastFM filter and the synthetic generator."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.simulation.datasets import (
    DATASETS,
    DatasetError,
    cache_dir,
    dataset_catalog,
    download,
    load_dataset,
    parse_dataset_spec,
    resolve_data_root,
)
from ldpgraph.simulation.datasets.build import make_graph

from ...conftest import MIRROR, needs_mirror


@pytest.fixture(scope="module", autouse=True)
def env(tmp_path_factory: pytest.TempPathFactory):
    """Point the loaders at the mirror and at a private, writable cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LDPGRAPH_DATA", str(MIRROR))
        mp.setenv("LDPGRAPH_CACHE", str(tmp_path_factory.mktemp("ldpgraph-cache")))
        yield


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def assert_canonical(g: Graph) -> None:
    e = g.edges
    assert e.dtype == np.int64 and e.ndim == 2 and e.shape[1] == 2
    assert (e[:, 0] < e[:, 1]).all()  # undirected once, no self-loops
    assert e.min() >= 0 and e.max() < g.num_nodes
    key = e[:, 0] * g.num_nodes + e[:, 1]
    assert (np.diff(key) > 0).all()  # sorted and deduplicated
    assert np.array_equal(e, canonical_edges(e, g.num_nodes))
    assert g.y.dtype == np.int64 and g.y.shape == (g.num_nodes,)
    assert g.y.min() >= 0


# --------------------------------------------------------------------------------------------
# The mirror


@needs_mirror
@pytest.mark.parametrize(
    ("name", "stats"),
    [
        ("cora", (2708, 5278, 1433, 7)),
        ("citeseer", (3327, 4552, 3703, 6)),
        ("facebook", (22470, 170823, 4714, 4)),
    ],
)
def test_exact_stats(name: str, stats: tuple[int, int, int, int]) -> None:
    g = load_dataset(name)
    assert (g.num_nodes, g.num_edges, g.num_features, g.num_classes) == stats
    assert DATASETS[name].expected.as_dict() == dict(
        zip(("nodes", "edges", "features", "classes"), stats, strict=True)
    )
    assert g.x.dtype == np.uint8 and g.is_binary()
    assert g.feature_domain == (0.0, 1.0)
    assert_canonical(g)


@needs_mirror
def test_npz_reader_matches_pyg() -> None:
    """Our sparse reader gives exactly what torch_geometric.io.read_npz gives (binarised x)."""
    from torch_geometric.io import read_npz

    g = load_dataset("cora-ml")
    data = read_npz(str(MIRROR / DATASETS["cora-ml"].raw_files[0]))
    assert np.array_equal(g.edges, canonical_edges(data.edge_index.numpy().T, data.num_nodes))
    assert data.edge_index.shape[1] == 2 * g.num_edges
    assert np.array_equal(g.x, data.x.numpy().astype(np.uint8))
    assert np.array_equal(g.y, data.y.numpy())
    assert (g.num_nodes, g.num_edges, g.num_features, g.num_classes) == (2995, 8158, 2879, 7)


@needs_mirror
def test_cache_is_used_and_mirror_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LDPGRAPH_CACHE", str(tmp_path / "cache"))
    before = snapshot(MIRROR)
    cold = {name: load_dataset(name) for name in ("cora", "citeseer", "facebook", "cora-ml")}
    assert all(g.meta["cache"] == "miss" for g in cold.values())
    assert snapshot(MIRROR) == before, "a loader wrote into the mirror"
    assert (tmp_path / "cache" / "pyg" / "Planetoid" / "Cora" / "processed").is_dir()

    def boom(*_args: object) -> Graph:
        raise AssertionError("the raw files were parsed again")

    for name in cold:
        monkeypatch.setitem(DATASETS, name, dataclasses.replace(DATASETS[name], loader=boom))
    cora = load_dataset("cora")  # a re-parse would raise (boom)
    assert cora.meta["cache"] == "hit"
    for name, g in cold.items():
        warm = cora if name == "cora" else load_dataset(name)
        assert warm.meta["cache"] == "hit"
        assert np.array_equal(warm.edges, g.edges)
        assert np.array_equal(warm.x, g.x) and warm.x.dtype == g.x.dtype
        assert np.array_equal(warm.y, g.y)
        assert warm.feature_domain == g.feature_domain
    assert snapshot(MIRROR) == before


@needs_mirror
def test_catalog() -> None:
    rows = {row["name"]: row for row in dataset_catalog()}
    assert set(rows) == set(DATASETS)
    cora = rows["cora"]
    assert cora["offline"] and cora["missing"] == []
    assert cora["measured"] == {
        "nodes": 2708,
        "edges": 5278,
        "features": 1433,
        "classes": 7,
        "binary": True,
    }
    for name in (
        "cora",
        "citeseer",
        "facebook",
        "cora-ml",
        "coauthor-cs",
        "coauthor-physics",
        "amazon-photo",
        "amazon-computers",
    ):
        measured = dict(rows[name]["measured"])
        assert measured.pop("binary") is True
        assert measured == rows[name]["expected"], name
    assert not rows["pubmed"]["offline"]
    assert "Planetoid/PubMed/raw/ind.pubmed.allx" in rows["pubmed"]["missing"]
    assert not rows["lastfm"]["offline"] and "measured" not in rows["lastfm"]
    assert rows["synthetic"]["offline"] and rows["synthetic"]["measured"]["nodes"] == 1000
    again = {row["name"]: row for row in dataset_catalog()}  # from the cache's sidecars
    assert again["cora"] == rows["cora"]


# --------------------------------------------------------------------------------------------
# Errors and locations


def test_unknown_dataset() -> None:
    with pytest.raises(DatasetError, match="unknown dataset 'nope'") as err:
        load_dataset("nope")
    for name in ("cora", "facebook", "lastfm", "synthetic"):
        assert name in str(err.value)


@pytest.mark.parametrize("name", ["cora", "facebook", "amazon-photo"])
def test_missing_files_named(name: str, tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as err:
        load_dataset(name, data_root=tmp_path)
    msg = str(err.value)
    assert str(tmp_path) in msg
    for rel in DATASETS[name].raw_files:
        assert rel in msg
    assert "\n" not in msg


def test_resolve_data_root_and_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LDPGRAPH_DATA", str(tmp_path / "env"))
    assert resolve_data_root(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_data_root(None) == tmp_path / "env"
    monkeypatch.delenv("LDPGRAPH_DATA")
    assert resolve_data_root(None) is None
    monkeypatch.setenv("LDPGRAPH_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("LDPGRAPH_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "ldpgraph"


def test_failed_download_is_a_dataset_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def offline(url: str, dest: Path) -> None:
        raise OSError(f"no network for {url}")

    monkeypatch.setattr(download, "download_file", offline)
    with pytest.raises(DatasetError, match="download failed") as err:
        load_dataset("lastfm", data_root=tmp_path)
    msg = str(err.value)
    assert "LastFM/raw/lastfm_asia_features.json" in msg
    assert str(tmp_path / "LastFM" / "raw") in msg  # where to put them
    with pytest.raises(DatasetError, match="download failed"):
        load_dataset("cora", data_root=tmp_path, download=True)


def test_float_features_keep_float32() -> None:
    x = np.array([[0.0, 0.5], [1.0, 2.0]])
    g = make_graph("t", np.array([[0, 1], [1, 0], [1, 1]]), x, np.array([0, 1]))
    assert g.x.dtype == np.float32 and g.feature_domain == (0.0, 2.0)
    assert g.meta["feature_domain_public"] is False
    assert g.edges.tolist() == [[0, 1]]


# --------------------------------------------------------------------------------------------
# LastFM (raw MUSAE release, 10 largest classes)


def write_lastfm(
    root: Path, edges: np.ndarray, feats: dict[int, list[int]], target: dict[int, int]
) -> None:
    raw = root / "LastFM" / "raw"
    raw.mkdir(parents=True)
    lines = ["node_1,node_2"] + [f"{u},{v}" for u, v in edges.tolist()]
    (raw / "lastfm_asia_edges.csv").write_text("\n".join(lines) + "\n")
    feats_json = json.dumps({str(k): v for k, v in feats.items()})
    (raw / "lastfm_asia_features.json").write_text(feats_json)
    rows = ["id,target"] + [f"{i},{t}" for i, t in target.items()]
    (raw / "lastfm_asia_target.csv").write_text("\n".join(rows) + "\n")


def test_lastfm_small_release(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    # 12 classes with non-contiguous ids; 60 nodes. Sizes make the top 10 unambiguous except
    # for four classes of size 3 competing for the last two places (ties go to smaller ids).
    sizes = {40: 10, 3: 9, 17: 8, 8: 6, 25: 5, 1: 5, 30: 4, 11: 4, 50: 3, 6: 3, 60: 3, 2: 0}
    sizes[2] = 60 - sum(sizes.values())  # = 0: class 2 only to show empty classes vanish
    labels = np.concatenate([np.full(s, c) for c, s in sizes.items()])
    node_ids = rng.permutation(np.arange(100, 220, 2))[: labels.size]  # sparse original ids
    target = dict(zip(node_ids.tolist(), labels.tolist(), strict=True))
    artist_pool = rng.choice(np.arange(5000), size=40, replace=False)
    feats = {
        int(i): sorted(set(rng.choice(artist_pool, size=rng.integers(0, 6)).tolist()))
        for i in node_ids
    }
    e = rng.choice(node_ids, size=(150, 2))
    e = np.concatenate([e, e[:10, ::-1], [[node_ids[0], node_ids[0]]]])  # dups, a self-loop
    write_lastfm(tmp_path, e, feats, target)

    g = load_dataset("lastfm", data_root=tmp_path)

    # Reference computed the slow, obvious way.
    ranked = sorted((c for c in sizes if sizes[c] > 0), key=lambda c: (-sizes[c], c))
    kept_classes = sorted(ranked[:10])
    assert kept_classes == [1, 3, 6, 8, 11, 17, 25, 30, 40, 50]  # 60 loses the tie to 6 and 50
    kept_ids = sorted(i for i, t in target.items() if t in kept_classes)
    new = {old: k for k, old in enumerate(kept_ids)}
    artists = sorted({a for v in feats.values() for a in v})
    assert g.num_nodes == len(kept_ids) == 57
    assert g.num_features == len(artists)
    assert g.num_classes == 10
    assert g.y.tolist() == [kept_classes.index(target[i]) for i in kept_ids]
    ref_edges = {
        (min(new[u], new[v]), max(new[u], new[v]))
        for u, v in e.tolist()
        if u in new and v in new and u != v
    }
    assert [tuple(r) for r in g.edges.tolist()] == sorted(ref_edges)
    ref_x = np.zeros((len(kept_ids), len(artists)), dtype=np.uint8)
    for old, k in new.items():
        for a in feats[old]:
            ref_x[k, artists.index(a)] = 1
    assert g.x.dtype == np.uint8 and np.array_equal(g.x, ref_x)
    assert g.meta["original_ids"].tolist() == kept_ids
    assert_canonical(g)
    again = load_dataset("lastfm", data_root=tmp_path)
    assert again.meta["cache"] == "hit" and np.array_equal(again.x, g.x)
    assert again.meta["original_ids"].tolist() == kept_ids


LASTFM_PARTIAL = MIRROR / "LastFMAsia" / "partial_no_features"


@pytest.mark.skipif(not LASTFM_PARTIAL.is_dir(), reason="no LastFM edges/targets in the mirror")
def test_lastfm_real_structure(tmp_path: Path) -> None:
    """On the real edges and targets (features faked), the filter gives HoGS's 7083 / 25814."""
    edges = np.loadtxt(
        LASTFM_PARTIAL / "karateclub_lastfm_edges.csv", delimiter=",", skiprows=1, dtype=np.int64
    )
    tgt = np.loadtxt(
        LASTFM_PARTIAL / "karateclub_lastfm_target.csv", delimiter=",", skiprows=1, dtype=np.int64
    )
    feats = {int(i): [int(i) % 97] for i in tgt[:, 0]}
    write_lastfm(
        tmp_path, edges, feats, dict(zip(tgt[:, 0].tolist(), tgt[:, 1].tolist(), strict=True))
    )
    g = load_dataset("lastfm", data_root=tmp_path)
    assert (g.num_nodes, g.num_edges, g.num_classes) == (7083, 25814, 10)
    assert g.num_features == 97


# --------------------------------------------------------------------------------------------
# Synthetic


def test_synthetic_defaults() -> None:
    g = load_dataset("synthetic")
    assert (g.num_nodes, g.num_features, g.num_classes) == (1000, 500, 5)
    assert g.num_edges == 4000  # n * avg_degree / 2
    assert g.x.dtype == np.uint8 and g.feature_domain == (0.0, 1.0)
    assert_canonical(g)
    assert np.bincount(g.y).tolist() == [200] * 5


@pytest.mark.parametrize("homophily", [0.8, 0.3, 1.0])
def test_synthetic_homophily_and_density(homophily: float) -> None:
    g = load_dataset("synthetic", n=3000, homophily=homophily, feature_density=0.04, seed=3)
    e = g.edges
    measured = float(np.mean(g.y[e[:, 0]] == g.y[e[:, 1]]))
    assert abs(measured - homophily) <= 0.05
    assert abs(g.x.mean() - 0.04) < 0.002
    assert abs(2 * g.num_edges / g.num_nodes - 8.0) < 0.01
    # Class signal: a class's own block of columns is much denser than the rest.
    blocks = np.array_split(np.arange(g.num_features), g.num_classes)
    own = np.mean([g.x[g.y == c][:, blocks[c]].mean() for c in range(g.num_classes)])
    assert own > 3 * g.x.mean()


def test_synthetic_determinism() -> None:
    a = load_dataset("synthetic:n=500,seed=4")
    b = load_dataset("synthetic", n=500, seed=4)
    c = load_dataset("synthetic", n=500, seed=5)
    assert np.array_equal(a.edges, b.edges) and np.array_equal(a.x, b.x)
    assert np.array_equal(a.y, b.y)
    assert not np.array_equal(a.edges, c.edges)
    assert not np.array_equal(a.x, c.x)


def test_synthetic_large_shapes() -> None:
    """A 100k-node synthetic graph builds with compact dtypes (speed is a benchmark's job, not
    a timed unit test: this one failed on a loaded machine)."""
    g = load_dataset("synthetic", n=100_000, d=500)
    assert g.x.nbytes == 100_000 * 500 and g.num_edges == 400_000


def test_spec_parsing() -> None:
    name, params = parse_dataset_spec("synthetic:n=2000,classes=4,homophily=0.9")
    assert name == "synthetic" and params == {"n": 2000, "classes": 4, "homophily": 0.9}
    assert isinstance(params["n"], int) and isinstance(params["homophily"], float)
    assert parse_dataset_spec("synthetic:n=1e4")[1] == {"n": 10000}
    assert parse_dataset_spec("Cora") == ("cora", {})
    assert parse_dataset_spec("cora_ml") == ("cora-ml", {})
    assert parse_dataset_spec("synthetic:") == ("synthetic", {})
    g = load_dataset("synthetic:n=2000,classes=4,homophily=0.9")
    assert (g.num_nodes, g.num_classes) == (2000, 4)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("synthetic:nodes=10", "unknown parameter"),
        ("synthetic:n=abc", "not a valid int"),
        ("synthetic:n=10.5", "not a valid int"),
        ("synthetic:homophily=nan", "not a valid float"),
        ("synthetic:homophily=1.5", "homophily must be in"),
        ("synthetic:n", "want key=value"),
        ("synthetic:n=10,n=20", "given twice"),
        ("synthetic:n=100,avg_degree=90", "too dense"),
        ("synthetic:classes=1", "classes must be"),
        ("synthetic:d=3", "d must be"),
        ("synthetic:feature_density=0.5", "in-block 1-rate"),
        ("cora:n=10", "unknown parameter"),
        ("nope:n=1", "unknown dataset"),
    ],
)
def test_spec_errors(spec: str, match: str) -> None:
    with pytest.raises(DatasetError, match=match):
        load_dataset(spec)


def test_spec_and_kwargs_clash() -> None:
    with pytest.raises(DatasetError, match="both"):
        load_dataset("synthetic:n=100", n=200)
    with pytest.raises(DatasetError, match="not a valid int"):
        load_dataset("synthetic", n=True)


def test_the_dataset_table_is_exactly_what_the_family_modules_declare():
    """registry.BUILTIN against the package: every module with ``ENTRIES`` imported, the
    datasets they declare equal the table; a mismatch names the line to fix."""
    import importlib
    import pkgutil

    from ldpgraph.protocols.catalog import table_mismatches
    from ldpgraph.simulation import datasets
    from ldpgraph.simulation.datasets import registry

    declared = {}
    for mod in pkgutil.iter_modules(datasets.__path__, datasets.__name__ + "."):
        entries = getattr(importlib.import_module(mod.name), "ENTRIES", None)
        if entries is not None:
            declared.update({info.name: f"{mod.name}:ENTRIES" for info in entries})
    assert table_mismatches(registry.BUILTIN, declared) == []
    assert list(DATASETS)[: len(registry.BUILTIN)] == list(registry.BUILTIN)
