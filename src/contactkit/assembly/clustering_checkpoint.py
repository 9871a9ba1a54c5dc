"""Clustering-network files (:class:`contactkit.assembly.clustering.ClusteringNet`): one safetensors file, never a
pickle.

Tensors ``params`` (the flat vector), ``x_lo``, ``x_hi`` (float64); the header metadata holds ``format`` =
``contactkit.clustering``, ``format_version`` and ``clustering``, a JSON object with ``mc``, ``k``, the task it was
fitted on (``task_kind``, ``tool_sha256``, ``static_sha256``) and ``meta``. Writing is atomic
(:func:`contactkit.files.write_atomic`). Reading checks the header against the file size before anything is
allocated and refuses, with a :class:`~contactkit.errors.CheckpointError` naming the file, anything that is not a
well-formed clustering network, or (given a task) one fitted on other meshes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import safetensors.numpy

from contactkit.assembly.clustering import ClusteringNet
from contactkit.assembly.task import AssemblyTask
from contactkit.errors import CheckpointError, ContactkitError
from contactkit.files import write_atomic
from contactkit.geometry.part import mesh_sha256

FORMAT = "contactkit.clustering"
FORMAT_VERSION = "1"
MAX_FILE_BYTES = 4 * 2**20
"""Largest accepted clustering file [bytes] (Mc = 12: 2 558 parameters, about 21 kB)."""
TENSOR_NAMES = ("params", "x_lo", "x_hi")
_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def task_hashes(task: AssemblyTask) -> tuple[str, str]:
    """``(tool_sha256, static_sha256)`` of a task's meshes (:func:`contactkit.geometry.part.mesh_sha256`)."""
    return (mesh_sha256(task.tool.vertices, task.tool.faces), mesh_sha256(task.static.vertices, task.static.faces))


def check_task(net: ClusteringNet, task: AssemblyTask, what: str) -> None:
    """Raise :class:`CheckpointError` naming ``what`` if ``net`` was fitted on another task (an unfitted net,
    with empty hashes, fits every task)."""
    if not net.tool_sha256 and not net.static_sha256:
        return
    tool, static = task_hashes(task)
    if (net.tool_sha256, net.static_sha256) != (tool, static):
        raise CheckpointError(f"{what}: fitted on {net.task_kind!r} meshes (tool {net.tool_sha256[:12]}…, static "
                              f"{net.static_sha256[:12]}…), but task {task.kind.value!r} {task.name!r} has tool "
                              f"{tool[:12]}…, static {static[:12]}…")


def save_clustering(net: ClusteringNet, path: str | Path) -> Path:
    """Write ``net`` to ``path`` (a ``.safetensors`` file) atomically; returns the path."""
    tensors = {"params": np.ascontiguousarray(net.params), "x_lo": np.ascontiguousarray(net.x_lo),
               "x_hi": np.ascontiguousarray(net.x_hi)}
    desc = {"mc": net.mc, "k": net.k, "task_kind": net.task_kind, "tool_sha256": net.tool_sha256,
            "static_sha256": net.static_sha256, "meta": net.meta}
    payload = safetensors.numpy.save(tensors, metadata={"format": FORMAT, "format_version": FORMAT_VERSION,
                                                        "clustering": json.dumps(desc)})
    return write_atomic(Path(path), payload)


def _fail(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(f"clustering network {str(path)!r}: {problem}")


def _header(path: Path, data: bytes) -> dict:
    """The safetensors header of ``data``, checked against the file size without trusting it."""
    n = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if n < 2 or n > len(data) - 8:
        raise _fail(path, f"not a safetensors file or truncated ({len(data)} bytes, header length field {n})")
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _fail(path, "not a safetensors file: its header is not JSON") from None
    if not isinstance(header, dict):
        raise _fail(path, "not a safetensors file: its header is not a JSON object")
    payload = len(data) - 8 - n
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            numel = int(np.prod(spec["shape"], dtype=np.float64))
            begin, end = (int(v) for v in spec["data_offsets"])
            size = _DTYPE_BYTES[spec["dtype"]]
        except (KeyError, TypeError, ValueError):
            raise _fail(path, f"tensor {name!r} has a malformed header entry") from None
        if not 0 <= begin <= end <= payload or end - begin != numel * size:
            raise _fail(path, f"truncated or inconsistent: tensor {name!r} (shape {spec['shape']}) does not fit "
                        f"bytes {begin}..{end} of a {payload}-byte payload")
    return header


def _read(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _fail(path, f"file of {size} bytes exceeds the {MAX_FILE_BYTES}-byte limit of a clustering network")
        return path.read_bytes()
    except OSError as exc:
        raise _fail(path, f"cannot be read ({exc.strerror or exc})") from None


def load_clustering(path: str | Path, task: AssemblyTask | None = None) -> ClusteringNet:
    """Read a clustering network written by :func:`save_clustering` (never unpickles anything).

    Args:
        path: the ``.safetensors`` file. task: when given, a fitted net's mesh hashes must be this task's.

    Raises:
        CheckpointError: missing, unreadable, too large, not safetensors, truncated, not a clustering network
            (another format or version), malformed (description, shapes, non-finite values), or another task's.
    """
    path = Path(path)
    data = _read(path)
    meta = _header(path, data).get("__metadata__") or {}
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise _fail(path, f"not a contactkit clustering network (format {found!r}, expected {FORMAT!r})")
    if meta.get("format_version") != FORMAT_VERSION:
        raise _fail(path, f"format version {meta.get('format_version')!r}, this contactkit reads {FORMAT_VERSION!r}")
    try:
        tensors = safetensors.numpy.load(data)
    except Exception as exc:  # the header was checked; what is left is a corrupt payload
        raise _fail(path, f"corrupt tensor data ({exc})") from None
    try:
        desc = json.loads(meta["clustering"])
        if sorted(tensors) != sorted(TENSOR_NAMES):
            raise ValueError(f"tensors {sorted(tensors)}, expected {sorted(TENSOR_NAMES)}")
        if not isinstance(desc.get("meta", {}), dict):
            raise ValueError("meta is not a JSON object")
        net = ClusteringNet(tensors["params"], tensors["x_lo"], tensors["x_hi"], int(desc["mc"]), int(desc["k"]),
                            str(desc["task_kind"]), str(desc["tool_sha256"]), str(desc["static_sha256"]),
                            desc.get("meta", {}))
    except (ContactkitError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _fail(path, f"malformed clustering network ({exc})") from None
    if task is not None:
        check_task(net, task, f"clustering network {str(path)!r}")
    return net
