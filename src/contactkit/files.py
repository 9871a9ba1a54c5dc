"""Writing files so that nothing written is ever lost or half-written: a temporary file in the target's folder,
flushed and fsync-ed, then ``os.replace``-d over the target (atomic on POSIX and Windows). Used by every checkpoint,
cache entry, stored result and report page the project writes; and reading a safetensors checkpoint without
trusting it (:func:`read_safetensors`)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
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


SAFETENSORS_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                           "BOOL": 1}
"""Bytes per element of the safetensors dtypes a contactkit checkpoint may hold."""


def read_safetensors(path: str | Path, max_bytes: int, fail: Callable[[str], Exception]) -> tuple[bytes, dict]:
    """Read a safetensors file without trusting it (nothing is unpickled, nothing allocated from its header).

    Checks, in order: the file is readable and at most ``max_bytes``; the 8-byte header length fits the file; the
    header is a JSON object; every tensor's dtype is known and its shape fits its byte range inside the payload.

    Args:
        path: the file; max_bytes: size limit [bytes];
        fail: builds the caller's error from a one-line problem (e.g. a ``CheckpointError`` naming the file).

    Returns:
        ``(data, header)``: the file's bytes and its parsed JSON header (``header.get("__metadata__")`` is the
        string-to-string metadata, unchecked).

    Raises:
        whatever ``fail`` returns, for the first check that does not hold.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise fail(f"file of {size} bytes exceeds the {max_bytes}-byte limit")
        data = path.read_bytes()
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror or exc})") from None
    n = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if n < 2 or n > len(data) - 8:
        raise fail(f"not a safetensors file or truncated ({len(data)} bytes, header length field {n})")
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise fail("not a safetensors file: its header is not JSON") from None
    if not isinstance(header, dict):
        raise fail("not a safetensors file: its header is not a JSON object")
    _check_tensor_ranges(header, len(data) - 8 - n, fail)
    return data, header


def _check_tensor_ranges(header: dict, payload: int, fail: Callable[[str], Exception]) -> None:
    """Every tensor entry of a safetensors ``header`` fits bytes ``[0, payload)`` with its shape and dtype."""
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            numel = math.prod(int(s) for s in spec["shape"])
            begin, end = (int(v) for v in spec["data_offsets"])
            size = SAFETENSORS_DTYPE_BYTES[spec["dtype"]]
        except (KeyError, TypeError, ValueError):
            raise fail(f"tensor {name!r} has a malformed header entry") from None
        if not 0 <= begin <= end <= payload or end - begin != numel * size:
            raise fail(f"truncated or inconsistent: tensor {name!r} (shape {spec['shape']}) does not fit "
                       f"bytes {begin}..{end} of a {payload}-byte payload")
