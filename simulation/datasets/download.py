"""Downloads, only where no data root is configured or for datasets the mirror cannot hold."""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.request
from pathlib import Path

from .info import DatasetInfo, Fetcher
from .locations import missing_files

_DOWNLOAD_TIMEOUT_S = 60.0


def download_file(url: str, dest: Path) -> None:
    """Fetch ``url`` into ``dest`` atomically (a failed download leaves nothing behind)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    try:
        with (
            os.fdopen(fd, "wb") as out,
            urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as resp,
        ):
            shutil.copyfileobj(resp, out)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def fetch_each(base_url: str) -> Fetcher:
    """Download every raw file by its base name from ``base_url`` (Planetoid, gnn-benchmark)."""

    def fetch(root: Path, info: DatasetInfo) -> None:
        for rel in missing_files(root, info):
            download_file(f"{base_url}/{Path(rel).name}", root / rel)

    return fetch


def fetch_url(url: str) -> Fetcher:
    def fetch(root: Path, info: DatasetInfo) -> None:
        download_file(url, root / info.raw_files[0])

    return fetch
