"""A protocol's checked parameters read by attribute: a misspelt name fails where it is read,
with the declared names; read-only; a Mapping for code that passes them on; picklable (a
protocol crosses process and Ray boundaries)."""

from __future__ import annotations

import pickle

import pytest

from ldpgraph.protocols.params import Params


def test_attribute_and_mapping_access_agree():
    p = Params({"epsilon": 1.0, "tau": 2})
    assert p.epsilon == p["epsilon"] == 1.0
    assert dict(p) == {"epsilon": 1.0, "tau": 2} and len(p) == 2 and list(p) == ["epsilon", "tau"]


def test_a_misspelt_name_fails_naming_the_closest():
    with pytest.raises(AttributeError, match="did you mean 'epsilon'.*declared: epsilon, tau"):
        _ = Params({"epsilon": 1.0, "tau": 2}).epsilom


def test_read_only_and_replace_checks_names():
    p = Params(epsilon=1.0)
    with pytest.raises(AttributeError, match="read-only"):
        p.epsilon = 2.0
    assert p.replace(epsilon=2.0).epsilon == 2.0 and p.epsilon == 1.0
    with pytest.raises(AttributeError, match="no parameter 'delta'"):
        p.replace(delta=0.1)


def test_pickles():
    p = Params({"epsilon": 1.0})
    assert pickle.loads(pickle.dumps(p)) == p


def test_declarations_by_name_keeps_the_most_common_and_every_declarer():
    from ldpgraph.protocols.params import Param, declarations_by_name

    wide = Param("epsilon", float, 1.0, help="ε")
    narrow = Param("epsilon", float, 1.0, low=0.5, help="ε")
    tau = Param("tau", int, 2, help="τ")
    got = declarations_by_name([("a", [wide, tau]), ("b", [narrow]), ("c", [wide])])
    assert got == {"epsilon": (wide, ["a", "b", "c"]), "tau": (tau, ["a"])}
