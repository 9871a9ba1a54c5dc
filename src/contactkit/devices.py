"""The torch device a command or model runs on: one check shared by every learned model (the graph networks,
the depth networks), so ``--device`` means the same everywhere and a device this machine lacks is a clear error."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from contactkit.errors import InvalidInputError

if TYPE_CHECKING:
    import torch


def check_device(device: torch.device | str) -> torch.device:
    """The torch device named ``device`` ('cpu', 'cuda', 'cuda:N'), checked to exist on this machine.

    Raises:
        InvalidInputError: not a torch device name, not a CPU or CUDA device, or a CUDA device this machine
            does not have (naming ``device`` and the number of CUDA devices).
    """
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise InvalidInputError(f"device {str(device)!r} is not a torch device; use cpu, cuda or cuda:N") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (dev.index or 0) >= count:
            raise InvalidInputError(f"device {str(device)!r}: this machine has {count} CUDA device(s)")
    elif dev.type != "cpu":
        raise InvalidInputError(f"device {str(device)!r}: only cpu and cuda devices are supported")
    return dev


@contextlib.contextmanager
def torch_threads(n: int):
    """Run the block with ``n`` torch intra-op threads, restoring the previous count afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
