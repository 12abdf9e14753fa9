"""The command line's parsing: boolean flags, the help of ``run`` (the chosen protocol's
parameters only, the central strategies in their own group), one-line argparse errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ldpgraph.simulation import cli


def test_unknown_model_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--model", "transformer"])
    assert exc.value.code == 2
    assert "invalid choice: 'transformer'" in capsys.readouterr().err


def test_console_script_help():
    out = subprocess.run(
        [sys.executable, "-m", "ldpgraph.simulation.cli", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--feature-share" in out and "--backend" in out


@pytest.mark.parametrize(
    "argv,expected",
    [
        ([], {"trust_curator": False, "center_features": True, "normalize_features": False}),
        (["--trust-curator"], {"trust_curator": True}),
        (["--trust-curator", "true"], {"trust_curator": True}),
        (["--trust-curator", "false"], {"trust_curator": False}),
        (["--trust-curator=1"], {"trust_curator": True}),
        (["--trust-curator", "--no-trust-curator"], {"trust_curator": False}),
        (["--no-center-features"], {"center_features": False}),
        (["--center-features", "false"], {"center_features": False}),
        (["--center-features", "False", "--center-features"], {"center_features": True}),
        (["--normalize-features", "--epsilon", "3"], {"normalize_features": True}),
    ],
)
def test_boolean_options_are_flags_and_still_take_a_value(argv, expected):
    args = cli.build_parser().parse_args(["run", *argv])
    for name, value in expected.items():
        assert getattr(args, name) is value


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--center-features", "maybe"], "expected true or false, got 'maybe'"),
        (["--no-trust-curator=true"], "--no-trust-curator takes no value"),
    ],
)
def test_boolean_options_reject_other_values(capsys, argv, needle):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", *argv])
    assert exc.value.code == 2 and needle in capsys.readouterr().err


def test_help_shows_both_forms_of_a_flag():
    text = cli.build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert "--trust-curator [true|false], --no-trust-curator" in text
    assert "--center-features [true|false], --no-center-features" in text


def _run_help(protocol: str | None = None) -> str:
    parser = cli.build_parser(protocol)
    return " ".join(parser._subparsers._group_actions[0].choices["run"].format_help().split())


def test_run_help_lists_central_strategies_in_their_own_group():
    """`run --help` names each privacy family with its unit; a central strategy's parameters
    sit in their own group, after their heading, shown when that strategy is chosen."""
    text = _run_help("dpar-gm")
    local, central = text.index("[LOCAL DP"), text.index("[CENTRAL DP")
    assert "node-level (ε, δ)" in text[central : central + 120]
    assert local < text.index("hogs:") < central < text.index("dpar-gm:")
    group = text.index("protocol parameters of the central-DP strategies")
    assert group < text.index("--delta DELTA node") < text.index("--pr-share PR_SHARE share")


def test_run_help_shows_the_chosen_protocols_parameters_only():
    hogs = _run_help()
    assert "--tau TAU" in hogs and "--feature-share" in hogs
    assert "--delta" not in hogs and "--sgd-clip" not in hogs and "--mu MU" not in hogs
    assert "ldpgraph run --protocol NAME --help" in hogs
    dpar = _run_help("dpar-gm")
    assert "--sgd-clip" in dpar and "--tau TAU" not in dpar
    assert len(hogs) < len(dpar) < 2 * len(hogs) + 20000


def test_another_protocols_flag_is_an_error_naming_its_owner(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--protocol", "dpar-gm", "--tau", "0.3", "--trust-curator"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and "\n" not in err
    assert "protocol 'dpar-gm' has no parameter --tau (a parameter of hogs" in err
    assert err.endswith("(see ldpgraph run --help)")


def test_a_type_error_is_one_line_not_the_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--epsilon", "lots"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and "\n" not in err and "usage:" not in err
    assert "--epsilon: invalid float value: 'lots'" in err


def test_run_help_files_the_non_private_references_under_no_privacy():
    """A class registered under a private name and its non-private reference is filed by the
    built protocol's privacy model: dpar-nodp and dpr-nodp are upper bounds, not central DP;
    the random edge baselines are empirical (no DP)."""
    from ldpgraph.simulation.cli.run_flags import protocol_help

    text = protocol_help()["protocol"]
    central, none = text.index("[CENTRAL DP"), text.index("[NO PRIVACY")
    empirical = text.index("[EMPIRICAL")
    assert central < text.index("dpar-gm:") < none < empirical
    assert none < text.index("dpar-nodp:") < empirical
    assert none < text.index("dpr-nodp:") < empirical
    assert empirical < text.index("edge-delete:") and empirical < text.index("edge-random:")
