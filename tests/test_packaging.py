"""`pip install .` gives a working `ldpgraph`: the wheel holds every module of the four code
folders (and nothing else), and its console script runs from outside the repository.

The slow test builds the wheel from a copy of the working tree and installs it, without its
dependencies, into a fresh virtual environment that sees the test environment's
site-packages through a ``.pth`` file (installing torch, Ray and Flower again would take
minutes). Only path lines are read from that file: the ``.pth`` files inside the added
directory, among them the editable install's finder, are not run, so ``ldpgraph`` there can
only come from the wheel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("client", "server", "simulation", "protocols")
#: The façade package: ``ldpgraph/__init__.py`` (the version), mapped onto itself.
ROOT_PACKAGE = "ldpgraph"


def package_folders() -> dict[str, Path]:
    """Every folder with Python modules under the four code folders, by its package name."""
    found = {ROOT_PACKAGE: Path(ROOT_PACKAGE)}
    for folder in FOLDERS:
        for py in (ROOT / folder).rglob("*.py"):
            rel = py.parent.relative_to(ROOT)
            if "__pycache__" not in rel.parts:
                found["ldpgraph." + ".".join(rel.parts)] = rel
    return found


def test_every_package_folder_is_listed_in_pyproject():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    expected = {ROOT_PACKAGE: ROOT_PACKAGE, **{f"ldpgraph.{f}": f for f in FOLDERS}}
    assert setuptools["package-dir"] == expected
    assert sorted(setuptools["packages"]) == sorted(package_folders())


def package_data() -> set[str]:
    """The data files pyproject ships with the packages, as paths in the wheel."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {
        f"{package.replace('.', '/')}/{name}"
        for package, names in setuptools.get("package-data", {}).items()
        for name in names
    }


def test_package_data_exists():
    folders = package_folders()
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package, names in setuptools.get("package-data", {}).items():
        assert all((ROOT / folders[package] / name).is_file() for name in names)


def copy_tree(dest: Path) -> Path:
    """The working tree without VCS data, environments and build outputs: a stale build/ or
    egg-info must not hide a missing package. Run outputs (runs/, results/) are skipped at the
    top level only: simulation/results/ is a package."""
    skip_anywhere = shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
    )

    def skip(folder: str, names: list[str]) -> set[str]:
        outputs = {"runs", "results"} & set(names) if Path(folder) == ROOT else set()
        return set(skip_anywhere(folder, names)) | outputs

    shutil.copytree(ROOT, dest, ignore=skip, symlinks=True)
    return dest


def sh(*args, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs
    )
    assert r.returncode == 0, f"{args}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_repo(tmp_path):
    src = copy_tree(tmp_path / "src")
    # This environment's setuptools where it has one: no download.
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w",
       tmp_path / "dist", src)  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("ldpgraph-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {n for n in names if not n.startswith("ldpgraph-")}
    expected = {
        f"{package.replace('.', '/')}/{py.name}"
        for package, rel in package_folders().items()
        for py in (ROOT / rel).glob("*.py")
    } | package_data()
    assert modules == expected, (sorted(expected - modules), sorted(modules - expected))

    venv = tmp_path / "venv"
    sh(sys.executable, "-m", "venv", "--without-pip", venv)
    python, script = venv / "bin" / "python", venv / "bin" / "ldpgraph"
    sh(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
       "--no-index", wheel)  # fmt: skip
    # Then the dependencies: this environment's site-packages, as plain path lines.
    site = Path(sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
                .stdout.strip())  # fmt: skip
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "zz_test_dependencies.pth").write_text("".join(f"{p}\n" for p in ours))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    probe = (
        "import json, sys, ldpgraph, ldpgraph.simulation.backends.local as m; "
        "print(json.dumps({'module': m.__file__, 'namespace': list(ldpgraph.__path__), "
        "'finders': [type(f).__module__ for f in sys.meta_path]}))"
    )
    where = json.loads(sh(python, "-c", probe, cwd=elsewhere, env=env).stdout)
    assert Path(where["module"]).is_relative_to(site), where
    assert all(Path(p).is_relative_to(site) for p in where["namespace"]), where
    assert not any("editable" in f for f in where["finders"]), where

    assert "usage: ldpgraph" in sh(script, "--help", cwd=elsewhere, env=env).stdout
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert sh(script, "--version", cwd=elsewhere, env=env).stdout.strip() == f"ldpgraph {version}"
    probe = "import ldpgraph; print(ldpgraph.__version__)"
    assert sh(python, "-c", probe, cwd=elsewhere, env=env).stdout.strip() == version
    # The core alone (no extra) releases HoGS on a PyG Data and trains on it: the example
    # runs with every extra's modules blocked.
    core_only = (
        "import runpy, sys\n"
        "for name in ('flwr', 'ray', 'matplotlib', 'pandas', 'pymetis'):\n"
        "    sys.modules[name] = None  # import fails, find_spec says absent\n"
        f"runpy.run_path({str(ROOT / 'examples' / 'release_pyg.py')!r}, run_name='__main__')\n"
    )
    assert "test accuracy" in sh(python, "-c", core_only, cwd=elsewhere, env=env).stdout
    out = sh(
        script, "run", "--dataset", "synthetic:n=200,classes=3,d=16", "--epsilon", "4",
        "--backend", "local", "--epochs", "20", "--json", "--quiet", cwd=elsewhere, env=env,
    ).stdout  # fmt: skip
    record = json.loads(out[out.index("{") :])
    assert record["config"]["backend"] == "local"
    assert record["config"]["dataset"] == "synthetic:n=200,classes=3,d=16"
    assert 0.0 <= record["accuracy"]["test"] <= 1.0
    assert os.listdir(elsewhere) == []  # a run without --store writes nothing where it runs
