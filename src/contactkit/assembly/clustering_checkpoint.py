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
from contactkit.files import read_safetensors, write_atomic
from contactkit.geometry.part import mesh_sha256

FORMAT = "contactkit.clustering"
FORMAT_VERSION = "1"
MAX_FILE_BYTES = 4 * 2**20
"""Largest accepted clustering file [bytes] (Mc = 12: 2 558 parameters, about 21 kB)."""
TENSOR_NAMES = ("params", "x_lo", "x_hi")


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


def load_clustering(path: str | Path, task: AssemblyTask | None = None) -> ClusteringNet:
    """Read a clustering network written by :func:`save_clustering` (never unpickles anything).

    Args:
        path: the ``.safetensors`` file. task: when given, a fitted net's mesh hashes must be this task's.

    Raises:
        CheckpointError: missing, unreadable, too large, not safetensors, truncated, not a clustering network
            (another format or version), malformed (description, shapes, non-finite values), or another task's.
    """
    path = Path(path)
    data, header = read_safetensors(path, MAX_FILE_BYTES, lambda problem: _fail(path, problem))
    meta = header.get("__metadata__") or {}
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
