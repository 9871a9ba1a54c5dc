"""Writing files so that nothing written is ever lost or half-written: a temporary file in the target's folder,
flushed and fsync-ed, then ``os.replace``-d over the target (atomic on POSIX and Windows). Used by every checkpoint,
cache entry, stored result and report page the project writes; and reading a safetensors checkpoint without
trusting it (:func:`read_safetensors`); and one way to open a user's file (:func:`read_bounded`,
:func:`read_bounded_text`, :func:`expect_path`): a regular file (or a directory) as expected, a size limit per kind,
at most ``limit + 1`` bytes read, a one-line error for anything else (a FIFO, a device such as ``/dev/zero``, a
socket, a directory where a file is expected) — never a hang, never a read until memory runs out."""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable
from enum import Enum
from pathlib import Path

READ_CHUNK_BYTES = 1 << 20
"""Bytes asked of the kernel per ``read`` call by :func:`read_bounded` (a bound on one allocation, not on the file)."""


class PathKind(Enum):
    """What a path a user gives must be."""

    FILE = "regular file"
    DIRECTORY = "directory"


def _kind_of(mode: int) -> str:
    """A reader's name for the file type in ``st_mode`` (``"FIFO"``, ``"character device"``, ...)."""
    for test, name in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"),
                       (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def expect_path(path: str | Path, kind: PathKind, fail: Callable[[str], Exception]) -> Path:
    """``path`` as a :class:`~pathlib.Path` after checking, without opening it, that it exists and is ``kind``
    (symbolic links followed).

    Args:
        path: the user's path; kind: :attr:`PathKind.FILE` or :attr:`PathKind.DIRECTORY`;
        fail: builds the caller's error from a one-line problem (e.g. an ``InvalidInputError`` naming the file).

    Raises:
        whatever ``fail`` returns: missing, not statable, or of another type (a FIFO, a device, a directory where
        a file is expected, a file where a directory is expected).
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror or exc})") from None
    found = _kind_of(mode)
    if found != kind.value:
        raise fail(f"is a {found}, expected a {kind.value}")
    return path


def read_bounded(path: str | Path, max_bytes: int, fail: Callable[[str], Exception]) -> bytes:
    """The bytes of the regular file ``path``, refusing anything that is not one or is larger than ``max_bytes``.

    The type is checked before opening (:func:`expect_path`) and again on the open descriptor (a path swapped in
    between is caught); the file is opened with ``O_NONBLOCK`` so that even a FIFO swapped in cannot block, and at
    most ``max_bytes + 1`` bytes are read, so a file that grows or lies about its size (``/proc``) is still bounded.

    Args:
        path: the file; max_bytes: size limit [bytes], >= 0;
        fail: builds the caller's error from a one-line problem.

    Returns:
        the file's content, ``len <= max_bytes``.

    Raises:
        whatever ``fail`` returns: missing, unreadable, not a regular file, or larger than ``max_bytes``.
    """
    path = expect_path(path, PathKind.FILE, fail)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise fail(f"is a {_kind_of(st.st_mode)}, expected a regular file")
        if st.st_size > max_bytes:
            raise fail(f"file of {st.st_size} bytes exceeds the {max_bytes}-byte limit")
        data = _read_at_most(fd, max_bytes + 1, path, fail)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise fail(f"file of more than {max_bytes} bytes exceeds the {max_bytes}-byte limit")
    return data


def _read_at_most(fd: int, n: int, path: Path, fail: Callable[[str], Exception]) -> bytes:
    """Up to ``n`` bytes from the descriptor ``fd`` (fewer at end of file)."""
    chunks, left = [], n
    try:
        while left > 0:
            chunk = os.read(fd, min(left, READ_CHUNK_BYTES))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror or exc})") from None
    return b"".join(chunks)


def read_bounded_text(path: str | Path, max_bytes: int, fail: Callable[[str], Exception], what: str = "text") -> str:
    """The UTF-8 text of the regular file ``path`` (:func:`read_bounded`), ``what`` naming the expected content
    in the error (e.g. ``"JSON"``): a file that is not UTF-8 is refused with the first bad byte and its offset."""
    data = read_bounded(path, max_bytes, fail)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"not UTF-8 {what} (byte {data[exc.start]:#04x} at offset {exc.start}); a binary file?") from None


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

    Checks, in order: the file is a readable regular file of at most ``max_bytes`` (:func:`read_bounded`); the
    8-byte header length fits the file; the header is a JSON object; every tensor's dtype is known and its shape
    fits its byte range inside the payload.

    Args:
        path: the file; max_bytes: size limit [bytes];
        fail: builds the caller's error from a one-line problem (e.g. a ``CheckpointError`` naming the file).

    Returns:
        ``(data, header)``: the file's bytes and its parsed JSON header (``header.get("__metadata__")`` is the
        string-to-string metadata, unchecked).

    Raises:
        whatever ``fail`` returns, for the first check that does not hold.
    """
    data = read_bounded(path, max_bytes, fail)
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
