"""An errno error names the option and the path; a directory is not a store."""

from __future__ import annotations

import argparse
import errno

from ldpgraph.simulation.cli.errors import errno_line

from . import one_line_error


def test_errno_errors_name_the_option_and_the_path():
    args = argparse.Namespace(command="report", out="res/figs", store="r.db", file="e.toml")
    denied = PermissionError(errno.EACCES, "Permission denied", "res/figs/a.png")
    assert errno_line(denied, args) == "--out res/figs (res/figs/a.png): Permission denied"
    assert errno_line(IsADirectoryError(errno.EISDIR, "Is a directory", "e.toml"), args) == (
        "FILE e.toml: Is a directory"
    )
    elsewhere = FileNotFoundError(errno.ENOENT, "No such file or directory", "/x/y")
    assert errno_line(elsewhere, args) == "/x/y: No such file or directory"
    assert errno_line(OSError(errno.ENOSPC, "No space left on device"), args) == (
        "No space left on device"
    )
    assert errno_line(FileNotFoundError("no results store at r.db"), args) == (
        "no results store at r.db"
    )


def test_a_directory_given_as_a_file_is_one_line_naming_it(capsys, tmp_path):
    err = one_line_error(capsys, ["sweep", str(tmp_path)])
    assert f"FILE {tmp_path}: Is a directory" in err
    err = one_line_error(capsys, ["results", "--store", str(tmp_path)])
    assert "is a directory, not a results store" in err


def test_third_party_noise_is_filtered_by_message_only():
    import warnings

    from ldpgraph.simulation.cli.output import quiet_third_party_warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_third_party_warnings()
        warnings.warn(
            "An issue occurred while importing 'torch-scatter'. Disabling",
            UserWarning,
            stacklevel=1,
        )
        warnings.warn(
            "`torch.jit.script` is deprecated. Please switch", DeprecationWarning, stacklevel=1
        )
        warnings.warn("the model collapsed", UserWarning, stacklevel=1)
        warnings.warn(
            "`torch.jit.script` is deprecated", UserWarning, stacklevel=1
        )  # another category
    assert [str(w.message) for w in seen] == [
        "the model collapsed",
        "`torch.jit.script` is deprecated",
    ]


def test_a_store_this_user_cannot_write_is_read_read_only(capsys, tmp_path, monkeypatch):
    from ldpgraph.simulation.cli import paths
    from ldpgraph.simulation.results.store import ResultsStore

    from . import run_cli

    store = tmp_path / "r.db"
    ResultsStore(store).close()
    opened = []
    real = ResultsStore.__init__

    def spy(self, *a, **k):
        opened.append(k.get("read_only", False))
        real(self, *a, **k)

    monkeypatch.setattr(ResultsStore, "__init__", spy)
    monkeypatch.setattr(paths.os, "access", lambda *_a, **_k: False)  # as on a read-only mount
    code, out, err = run_cli(capsys, "results", "--store", str(store))
    assert code == 0 and "no runs" in out + err and opened == [True]
