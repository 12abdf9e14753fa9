"""Where a dataset's raw files are: the data root (the offline mirror), else the download
cache; the cache is the only place ldpgraph writes to."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .info import DatasetError, DatasetInfo

ENV_DATA = "LDPGRAPH_DATA"
ENV_CACHE = "LDPGRAPH_CACHE"


def resolve_data_root(data_root: str | os.PathLike[str] | None) -> Path | None:
    """The argument, else ``$LDPGRAPH_DATA``, else None (download into the cache)."""
    if data_root is not None and str(data_root) != "":
        return Path(data_root).expanduser()
    env = os.environ.get(ENV_DATA, "")
    return Path(env).expanduser() if env else None


#: ``make`` writes the data root it resolved (``DATA``) to this file in the virtual
#: environment; the ``ldpgraph`` command of that environment falls back to it when neither
#: ``--data-root`` nor ``LDPGRAPH_DATA`` is given (see :func:`recorded_data_root`).
DATA_ROOT_FILE = "ldpgraph-data-root"


def recorded_data_root() -> Path | None:
    """The data root ``make`` recorded in this Python environment (``sys.prefix``), when the
    file exists and names an existing directory; else None."""
    try:
        text = (Path(sys.prefix) / DATA_ROOT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text) if text and Path(text).is_dir() else None


def use_recorded_data_root() -> None:
    """Without $LDPGRAPH_DATA, the data root ``make`` recorded in this virtual environment
    (:func:`recorded_data_root`), exported so that worker processes see it too; --data-root
    still wins over both. The CLI and the library (``ldpgraph.run``, ``load_dataset``) call it."""
    if not os.environ.get(ENV_DATA):
        root = recorded_data_root()
        if root is not None:
            os.environ[ENV_DATA] = str(root)


def cache_dir() -> Path:
    """``$LDPGRAPH_CACHE``, else ``~/.cache/ldpgraph``: the only place loaders write to."""
    env = os.environ.get(ENV_CACHE, "")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ldpgraph"


def download_root() -> Path:
    """Where downloads go: inside the cache, laid out like the data root."""
    return cache_dir() / "download"


#: How to point ldpgraph at the offline mirror; every "files not found" error ends with it.
DATA_HINT = (
    f"point ldpgraph at the dataset mirror with --data-root PATH or {ENV_DATA}=PATH "
    "(make run uses ../shared/datasets)"
)


def missing_files(root: Path, info: DatasetInfo) -> list[str]:
    """The raw files of ``info`` that ``root`` lacks."""
    return [rel for rel in info.raw_files if not (root / rel).is_file()]


def locate(info: DatasetInfo, data_root: Path | None, download: bool | None) -> Path:
    """The root holding ``info.raw_files``: the data root, else the download cache (fetching)."""
    dl_root = download_root()
    if data_root is not None:
        missing = missing_files(data_root, info)
        if not missing:
            return data_root
        allow = (not info.mirrored) if download is None else download
        if not allow and missing_files(dl_root, info):
            raise DatasetError(
                f"dataset {info.name!r}: data root {data_root} lacks {len(missing)} raw file(s): "
                f"{', '.join(missing)} (expected at {data_root / missing[0]}"
                f"{' etc.' if len(missing) > 1 else ''}; see shared/datasets/MANIFEST.md); "
                f"{DATA_HINT}"
            )
    else:
        allow = True if download is None else download
    if not missing_files(dl_root, info):
        return dl_root
    where = f"{data_root} or {dl_root}" if data_root is not None else str(dl_root)
    files = ", ".join(info.raw_files)
    if not allow or info.fetch is None:
        raise DatasetError(
            f"dataset {info.name!r}: raw files {files} not found under {where}; {DATA_HINT}"
        )
    try:
        info.fetch(dl_root, info)
    except Exception as err:  # any failure of a download means the same to the user
        target = data_root if data_root is not None else dl_root
        dirs = sorted({str((target / rel).parent) for rel in info.raw_files})
        raise DatasetError(
            f"dataset {info.name!r}: raw files {files} are not under {where} and the download "
            f"failed ({type(err).__name__}: {err}); put "
            f"{', '.join(sorted({Path(rel).name for rel in info.raw_files}))} "
            f"in {' / '.join(dirs)}, or {DATA_HINT}"
        ) from err
    still = missing_files(dl_root, info)
    if still:
        raise DatasetError(
            f"dataset {info.name!r}: download did not provide {', '.join(still)} under {dl_root}"
        )
    return dl_root
