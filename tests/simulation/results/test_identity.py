"""A run's identity: which keys decide a run's result, and that stored runs keep theirs."""

from __future__ import annotations

from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.results import identity
from ldpgraph.simulation.results.identity import canonical_config, config_hash, run_key

DATA = "synthetic:n=50,classes=2,d=8"


def cfg(**kw) -> dict:
    base = {"dataset": DATA, "backend": "local", "epochs": 3}
    return RunConfig(**{**base, **kw}).to_dict()


def test_run_key_is_stable_and_ignores_non_result_keys():
    c = cfg(seed=3)
    key = run_key(c)
    assert run_key(dict(reversed(list(c.items())))) == key
    assert run_key({k.replace("_", "-"): v for k, v in c.items()}) == key
    moved = {
        **c,
        "data_root": "/elsewhere",
        "run_dir": "/tmp/x",
        "device": "cuda",
        "backend": "flower",
        "ray_actors": 7,
        "ray_address": "ray://h:1",
        "nodes_per_client": 4,
        "wait_timeout": 5.0,
        "round_timeout": 9.0,
    }
    assert run_key(moved) == key
    assert run_key({**c, "epsilon": 8}) == run_key({**c, "epsilon": 8.0})
    # missing keys mean their defaults, except a key added later (identity.ADDED_KEY_DEFAULTS): a
    # configuration without it was recorded before it existed, so it means the value it was
    # added with
    assert run_key({"dataset": DATA, "epochs": 3, "seed": 3, "center_features": True}) == key
    assert run_key(RunConfig(dataset=DATA, epochs=3, seed=3)) == key
    assert run_key({"dataset": DATA, "epochs": 3, "seed": 3}) == run_key(
        RunConfig(dataset=DATA, epochs=3, seed=3, center_features=False)
    )
    assert config_hash(c, exclude=()) != config_hash(moved, exclude=())


def test_seed_changes_run_key_not_config_hash():
    a, b = cfg(seed=0), cfg(seed=1)
    assert run_key(a) != run_key(b)
    assert config_hash(a) == config_hash(b)
    assert config_hash(cfg(seed=0, epsilon=2.0)) != config_hash(a)
    assert run_key(cfg(seed=0, epochs=4)) != run_key(a)


#: The protocols identity version 1 knew (it hashed every one of their parameters): history,
#: not a list to extend. Every parameter only later protocols declare is left out of a
#: version-1 hash, so adding a protocol needs no line here.
V1_PROTOCOLS = {
    "hogs", "hogs-edge", "none", "features-only", "rr", "rr-edge", "blink-hard", "blink-soft",
    "blink-hybrid", "fp-blink", "blink-fr", "ldpgen", "fp-ldpgen", "hogs-kprop", "solitude",
}  # fmt: skip


def later_keys() -> set[str]:
    """Parameters no protocol of version 1 declares (central strategies, hogs-arr's μ and
    report cap, any protocol added since)."""
    from ldpgraph.protocols import registry

    v1 = {p.name for name in V1_PROTOCOLS for p in registry.protocol_info(name).params}
    return set(registry.parameters()) - v1


def test_keys_added_later_keep_old_run_identities():
    """A run recorded before ``center_features`` existed keeps its key: at the default it was
    added with, an added key is left out of the hash (golden value from before the key, made
    with the defaults of that time: feature_share 0.5, no centring)."""
    golden = "878e6eb568bd6cae08b3451ea50523dd1d71bcc37c92597abc3629cd075e4f4f"
    later = tuple(later_keys())
    v1 = {"version": 1, "exclude": (*identity.non_result_keys(), "seed", *later)}
    old_defaults = RunConfig(feature_share=0.5, center_features=False).to_dict()
    assert config_hash(old_defaults, **v1) == golden
    stored_before_the_key = {k: v for k, v in old_defaults.items() if k != "center_features"}
    assert config_hash(stored_before_the_key, **v1) == golden
    assert config_hash({**stored_before_the_key, "center_features": True}, **v1) != golden
    # Version 2 leaves other protocols' parameters out: a new key, once, by a migration.
    assert config_hash(old_defaults) != golden
    assert config_hash(stored_before_the_key) == config_hash(old_defaults)
    assert set(identity.ADDED_KEY_DEFAULTS) <= set(RunConfig().to_dict())


def test_changed_defaults_leave_stored_identities_alone():
    """A default that changed (identity.CHANGED_DEFAULTS) changes what a new run is, never the
    identity of a stored one: stored configurations are whole, and a key missing from one is
    an added key, which means its value of the time."""
    assert set(identity.CHANGED_DEFAULTS) <= set(RunConfig().to_dict())
    for key, former in identity.CHANGED_DEFAULTS.items():
        assert getattr(RunConfig(), key) != former
    stored = RunConfig(feature_share=0.5, center_features=False).to_dict()
    assert run_key(stored) == run_key(RunConfig(feature_share=0.5, center_features=False))
    assert run_key(stored) != run_key(RunConfig())
    del stored["center_features"]  # recorded before the key existed
    assert canonical_config(stored)["center_features"] is False
    assert run_key(stored) == run_key(RunConfig(feature_share=0.5, center_features=False))


def test_only_the_chosen_protocols_parameters_make_the_identity():
    hogs = cfg(protocol="hogs")
    assert run_key({**hogs, "degree_share": 0.3, "combine": "and", "k0": 5}) == run_key(hogs)
    assert run_key({**hogs, "tau": 0.3}) != run_key(hogs)
    blink = cfg(protocol="blink-hard")
    assert run_key({**blink, "degree_share": 0.3}) != run_key(blink)
    assert run_key({**blink, "tau": 0.3}) == run_key(blink)
    # ε stays in every identity, even for `none`, which ignores it (runs are filed by ε).
    none = cfg(protocol="none", trust_curator=True)
    assert run_key({**none, "epsilon": 2.0}) != run_key(none)
    assert identity.other_protocols_keys(hogs) >= {"degree_share", "combine", "k0", "lx"}
    assert "epsilon" not in identity.other_protocols_keys(none)
    # A protocol not registered now keeps every key (its identity cannot shrink by accident).
    plug_in = {**hogs, "protocol": "not-registered-here"}
    assert identity.other_protocols_keys(plug_in) == set()
    assert run_key({**plug_in, "degree_share": 0.3}) != run_key(plug_in)


def test_dpar_sensitivity_keys_keep_stored_dpar_runs():
    """sgd_sensitivity and column_rows_cap came after DPAR runs were stored: a DPAR run at
    their defaults keeps the key it had before them (golden value from the code before the
    keys); strict, or another cap, is another run."""
    golden = "b04d490e237585f0485708c5399385ca8f91f5d00cd50d79133e87851e756509"
    dpar = cfg(protocol="dpar-gm", trust_curator=True, epsilon_convention="paper", seeded=True)
    later = ("sgd_sensitivity", "column_rows_cap", "epsilon_convention", "seeded")
    stored = {k: v for k, v in dpar.items() if k not in later}
    assert run_key(dpar) == run_key(stored) == golden
    # An unseeded central run draws its noise from OS entropy: another run. An LDP run is the
    # same run seeded or not (only a central release's noise depends on it).
    assert run_key({**dpar, "seeded": False}) != golden
    hogs = cfg(protocol="hogs")
    assert run_key({**hogs, "seeded": False}) == run_key({**hogs, "seeded": True})
    # The proven convention (today's default, "" resolved per protocol) calibrates other noise.
    assert run_key({**dpar, "epsilon_convention": ""}) == run_key(
        {**dpar, "epsilon_convention": "proven"}
    )
    assert run_key({**dpar, "epsilon_convention": "proven"}) != golden
    assert run_key({**dpar, "sgd_sensitivity": "strict"}) != run_key(dpar)
    assert run_key({**dpar, "column_rows_cap": 2}) != run_key(dpar)
