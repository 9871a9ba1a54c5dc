"""Writing files so that nothing written is ever lost or half-written: a temporary file in the target's folder,
flushed and fsync-ed, then ``os.replace``-d over the target (atomic on POSIX and Windows). Used by every checkpoint,
cache entry, stored result and report page the project writes."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: str | Path, payload: bytes | str) -> Path:
    """Write ``payload`` (bytes, or text written as UTF-8) to ``path`` atomically; create its folder.

    A reader sees the old file or the new one, never a mix; a failure (full disk, interruption) leaves the old file
    and no temporary file behind, and raises the ``OSError``.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    data = payload.encode("utf-8") if isinstance(payload, str) else payload
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
