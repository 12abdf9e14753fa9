"""What a command will write is checked before any work: one line, exit code 2."""

from __future__ import annotations

import pytest

from ldpgraph.simulation import pipeline

from . import SMALL, one_line_error


@pytest.fixture
def not_a_dir(tmp_path):
    """A path under a regular file: nothing can be created there (even as root)."""
    f = tmp_path / "a-file"
    f.write_text("x")
    return f / "sub"


def test_unwritable_outputs_are_refused_before_any_work(capsys, tmp_path, not_a_dir, monkeypatch):
    from ldpgraph.simulation.results.store import ResultsStore

    def boom(*_a, **_k):
        raise AssertionError("the run started")

    monkeypatch.setattr(pipeline, "load_dataset", boom)
    err = one_line_error(capsys, ["run", "--dataset", SMALL, "--store", str(not_a_dir / "r.db")])
    assert "--store" in err and "cannot be created" in err
    store = tmp_path / "r.db"
    ResultsStore(store).close()
    err = one_line_error(capsys, ["results", "--store", str(store), "--csv", str(not_a_dir)])
    assert "--csv" in err
    err = one_line_error(capsys, ["report", "--store", str(store), "--out", str(not_a_dir)])
    assert "--out" in err
    err = one_line_error(capsys, ["partition", "--dataset", SMALL, "--out", str(not_a_dir)])
    assert "--out" in err
    exp = tmp_path / "e.toml"
    exp.write_text(
        f'name = "e"\ndatasets = ["{SMALL}"]\nprotocols = ["hogs"]\nepsilons = [4]\n'
        "[grid.g]\nlr = [0.01]\n"
    )
    err = one_line_error(capsys, ["sweep", str(exp), "--grid", "g", "--store", str(not_a_dir)])
    assert "results store" in err
    monkeypatch.setenv("LDPGRAPH_CACHE", str(not_a_dir))
    err = one_line_error(capsys, ["run", "--dataset", "cora"])
    assert "LDPGRAPH_CACHE" in err and "cannot be created" in err


def test_a_folder_only_a_write_finds_unwritable_is_refused(capsys, tmp_path, monkeypatch):
    """Root passes every permission check (os.access), yet /proc or a full or read-only file
    system refuses the write: the check makes (and removes) a file to find out."""
    import errno
    import tempfile

    def refuse(*_a, **_k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(pipeline, "load_dataset", lambda *_a, **_k: pytest.fail("loaded"))
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    err = one_line_error(capsys, ["run", "--dataset", SMALL, "--store", str(tmp_path / "r.db")])
    assert "--store" in err and "cannot be created" in err and "Read-only file system" in err
    assert list(tmp_path.iterdir()) == []
