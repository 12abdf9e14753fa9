"""Torch housekeeping shared by the server and the central strategies: which device to compute
on and how many CPU threads torch may use for a block.

It sits in ``protocols/`` so that both ``server/`` and ``protocols/central/`` can import it
without an import against the map's direction. torch is imported inside the functions: the
module itself costs nothing to import, and nothing here reaches the client's import path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

#: The spellings of "the GPU when one is present, else the CPU".
AUTO = (None, "", "auto")


def auto_device(device: str | None) -> str:
    """``device`` as a torch device string: ``"auto"`` (or ``""``/``None``) becomes ``"cuda"``
    when CUDA is available, else ``"cpu"``; anything else is returned as given."""
    if device in AUTO:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    assert device is not None
    return device


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``device`` as a :class:`torch.device`; ``None`` means the GPU when one is present, else
    the CPU. A CUDA device asked for on a machine without CUDA is a one-line error."""
    import torch

    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(dev)!r} requested but CUDA is not available")
    return dev


@contextmanager
def cpu_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` torch CPU threads, then restore the previous setting
    (``None``: leave torch's setting alone). torch's setting is process-wide, so two threads
    of one process must not use this concurrently."""
    if threads is None:
        yield
        return
    if threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {threads}")
    import torch

    previous = torch.get_num_threads()
    if threads == previous:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@contextmanager
def one_cpu_thread(device: str) -> Iterator[None]:
    """One torch CPU thread for the block when computing on the CPU (restored afterwards); a
    no-op on any other device. For small kernels (d×d layers, N×r updates) more threads only
    synchronise and, on a busy machine, spin-wait on each other (PrivDPR on Cora on 2 loaded
    cores: 130 s with 2 threads, 31 s with 1)."""
    if device != "cpu":
        yield
        return
    with cpu_threads(1):
        yield
