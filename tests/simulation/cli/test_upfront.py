"""Refused before any data is loaded: a store that is not one, a synthetic graph whose reports
cannot fit in memory, audit options out of range."""

from __future__ import annotations

import sqlite3

import pytest

from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.simulation import checks, pipeline
from ldpgraph.simulation.config import RunConfig

from . import SMALL, one_line_error


@pytest.fixture
def no_loading(monkeypatch):
    def boom(*_a, **_k):
        raise AssertionError("the dataset was loaded")

    monkeypatch.setattr(pipeline, "load_dataset", boom)


def test_a_store_that_is_not_one_is_refused_before_loading(capsys, tmp_path, no_loading):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database at all\n" * 100)
    err = one_line_error(capsys, ["run", "--dataset", SMALL, "--store", str(corrupt)])
    assert "--store" in err and "not a usable ldpgraph results store" in err
    foreign = tmp_path / "foreign.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE x (a)")
    con.commit()
    con.close()
    err = one_line_error(capsys, ["run", "--dataset", SMALL, "--store", str(foreign)])
    assert "--store" in err and "not an ldpgraph results store" in err


def test_reports_that_cannot_fit_are_refused_with_the_figure(capsys, monkeypatch, no_loading):
    monkeypatch.setattr(checks, "total_memory", lambda: 64 * 2**30)
    err = one_line_error(capsys, ["run", "--dataset", "synthetic:n=10000000,d=16"])
    assert "GiB" in err and "64 GiB" in err and "lower n" in err and "--epsilon" in err


@pytest.mark.parametrize("protocol", ["hogs", "rr", "blink-hard", "hogs-arr", "ldpgen"])
def test_the_million_node_path_stays_allowed(monkeypatch, protocol):
    monkeypatch.setattr(checks, "total_memory", lambda: 16 * 2**30)
    config = RunConfig.from_mapping(
        {"protocol": protocol, "dataset": "synthetic:n=1000000,d=16,avg_degree=10"}
    )
    checks.check_memory(config, pipeline.build_protocol(config))


def test_collection_bytes_is_the_rr_count():
    config = RunConfig.from_mapping({"protocol": "rr", "epsilon": 4.0})
    protocol = pipeline.build_protocol(config)
    eps_a = protocol.epsilon_parts(0).adjacency_bit
    n = 10_000
    want = 4 * (n * (n - 1) * flip_probability(eps_a) + n * 10)
    assert checks.collection_bytes(n, 10, protocol) == pytest.approx(want, abs=1)
    central = pipeline.build_protocol(
        RunConfig.from_mapping({"protocol": "dpar-gm", "trust_curator": True})
    )
    assert checks.collection_bytes(n, 10, central) == 0


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--all", "--alpha", "2"], "--alpha"),
        (["--all", "--alpha", "0"], "--alpha"),
        (["--central", "--alpha", "-1"], "--alpha"),
        (["--mechanism", "rr", "--draws", "2"], "--draws"),
        (["--mechanism", "rr", "--epsilon", "0"], "--epsilon"),
        (["--mechanism", "rr", "--seed", "-3"], "--seed"),
        (["--central", "--central-draws", "0"], "--central-draws"),
    ],
)
def test_audit_options_are_range_checked(capsys, argv, flag):
    err = one_line_error(capsys, ["audit", *argv])
    assert flag in err


@pytest.mark.parametrize("protocol", ["hogs", "rr", "features-only", "hogs-arr"])
def test_an_epsilon_every_node_would_refuse_is_refused_in_validation(capsys, no_loading, protocol):
    from ldpgraph.client.refusals import MIN_CHARGE

    err = one_line_error(
        capsys, ["run", "--protocol", protocol, "--epsilon", "1e-9", "--dataset", SMALL]
    )
    assert "too small" in err and "--epsilon" in err
    least = float(err.rsplit("--epsilon ", 1)[1].split()[0])
    config = RunConfig.from_mapping({"protocol": protocol, "epsilon": least * 1.01})
    assert config.built_protocol().round_epsilon(0) >= MIN_CHARGE
    # a per-vector node is charged the whole row: not refused before the graph is known
    RunConfig.from_mapping({"protocol": protocol, "epsilon": 1e-9, "node_unit": "per-vector"})


@pytest.mark.parametrize(
    ("argv", "kind", "usable"),
    [
        (["--metrics", "collection"], "graph", "accuracy, attack, graph, lp"),
        (["--protocol", "dpar-gm", "--trust-curator", "--metrics", "lp"], "model", "accuracy"),
        (
            ["--protocol", "dpggan", "--trust-curator", "--dataset", "dblp-collection"],
            "graphs",
            "collection, gin, graph",
        ),
    ],
)
def test_metrics_that_score_nothing_are_refused_before_loading(
    capsys, no_loading, argv, kind, usable
):
    if "--dataset" not in argv:
        argv = [*argv, "--dataset", SMALL]
    err = one_line_error(capsys, ["run", "--backend", "local", *argv])
    assert f"scores the {kind} release" in err and f"choose from {usable}" in err


def test_metrics_that_score_the_release_pass_the_check():
    from ldpgraph.simulation.checks import check_collection

    for protocol, dataset, metrics in [
        ("dpggan", "dblp-collection", "graph"),  # the collection metric stands in
        ("dpar-gm", "cora", "accuracy,lp"),  # lp is skipped, accuracy scores the model
        ("hogs", "cora", "none"),  # the release alone, as asked
    ]:
        check_collection(
            RunConfig.from_mapping(
                {
                    "protocol": protocol,
                    "dataset": dataset,
                    "metrics": metrics,
                    "trust_curator": True,
                }
            )
        )


def test_the_collapse_advice_fits_the_protocol():
    from ldpgraph.simulation.cli.run import collapse_warning

    base = {
        "training": {"collapsed": True, "top_class_share": 0.9, "majority_rate": 0.3},
        "accuracy": {"val": 0.3},
    }
    ldp = collapse_warning({**base, "config": {"protocol": "hogs", "epsilon": 8.0}})
    assert "a larger --epsilon" in ldp
    for protocol, eps in (("privdpr", 8.0), ("dpar-gm", 8.0), ("hogs", 100.0)):
        text = collapse_warning({**base, "config": {"protocol": protocol, "epsilon": eps}})
        assert "--epsilon" not in text and "--epochs" in text, protocol
