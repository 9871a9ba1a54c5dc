"""C-space model files: one safetensors file, never a pickle.

Tensors ``W0, b0, W1, b1, W2, b2, lo, hi`` (float64); the header metadata holds ``format`` =
``contactkit.cspace``, ``format_version`` and ``cspace``, a JSON object with the feature kind, pitch, handedness,
height of the opening, COM in the body frame and the task (kind, name). Writing is atomic
(:func:`contactkit.files.write_atomic`). Reading checks the header
against the file size before anything is allocated and refuses, with a :class:`~contactkit.errors.CheckpointError`
naming the file, anything that is not a well-formed C-space model, or (given a task) one trained for another task.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import safetensors.numpy

from contactkit.assembly.cspace import HIDDEN, CSpaceModel, FeatureSpec
from contactkit.assembly.task import AssemblyTask
from contactkit.errors import CheckpointError, ContactkitError
from contactkit.files import read_safetensors, write_atomic

FORMAT = "contactkit.cspace"
FORMAT_VERSION = "1"
MAX_FILE_BYTES = 4 * 2**20
"""Largest accepted file [bytes] (a 64-64 network is about 40 kB)."""
WEIGHT_NAMES = ("W0", "b0", "W1", "b1", "W2", "b2")


def save_cspace(model: CSpaceModel, path: str | Path) -> Path:
    """Write ``model`` to ``path`` (``.safetensors``) atomically; returns the path."""
    tensors = {n: np.ascontiguousarray(w, dtype=np.float64) for n, w in zip(WEIGHT_NAMES, model.weights, strict=True)}
    tensors["lo"], tensors["hi"] = np.asarray(model.lo, np.float64), np.asarray(model.hi, np.float64)
    spec = model.spec
    desc = {"features": spec.kind.value, "pitch": spec.pitch, "handedness": spec.handedness,
            "axis_height": spec.axis_height, "com_body": list(spec.com_body), "task_kind": model.task_kind,
            "task_name": model.task_name}
    payload = safetensors.numpy.save(tensors, metadata={"format": FORMAT, "format_version": FORMAT_VERSION,
                                                        "cspace": json.dumps(desc)})
    return write_atomic(path, payload)


def _fail(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(f"C-space model {str(path)!r}: {problem}")


def _read(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    data, header = read_safetensors(path, MAX_FILE_BYTES, lambda problem: _fail(path, problem))
    meta = header.get("__metadata__") or {}
    if not isinstance(meta, dict):
        raise _fail(path, "not a contactkit C-space model (no metadata object)")
    if meta.get("format") != FORMAT:
        raise _fail(path, f"not a contactkit C-space model (format {meta.get('format')!r}, expected {FORMAT!r})")
    if meta.get("format_version") != FORMAT_VERSION:
        raise _fail(path, f"format version {meta.get('format_version')!r}, this contactkit reads {FORMAT_VERSION!r}")
    try:
        tensors = safetensors.numpy.load(data)
    except Exception as exc:  # a truncated or inconsistent payload
        raise _fail(path, f"corrupt tensor data ({exc})") from None
    return meta, tensors


def load_cspace(path: str | Path, task: AssemblyTask | None = None) -> CSpaceModel:
    """Read a model written by :func:`save_cspace` (never unpickles).

    Raises:
        CheckpointError: missing, unreadable, not safetensors, truncated, another format or version, malformed
            (description, shapes, non-finite values), or trained for a task other than ``task`` (kind, name).
    """
    path = Path(path)
    meta, tensors = _read(path)
    try:
        desc = json.loads(meta["cspace"])
        spec = FeatureSpec(desc["features"], float(desc["pitch"]), int(desc["handedness"]),
                           float(desc["axis_height"]), tuple(float(v) for v in desc["com_body"]))
        k = spec.n_features
        shapes = ((HIDDEN, k), (HIDDEN,), (HIDDEN, HIDDEN), (HIDDEN,), (1, HIDDEN), (1,))
        weights = tuple(np.asarray(tensors[n], np.float64) for n in WEIGHT_NAMES)
        lo, hi = np.asarray(tensors["lo"], np.float64), np.asarray(tensors["hi"], np.float64)
        model = CSpaceModel(spec, lo, hi, weights, str(desc["task_kind"]), str(desc["task_name"]))
    except (KeyError, TypeError, ValueError, json.JSONDecodeError, ContactkitError) as exc:
        raise _fail(path, f"malformed description or missing tensor ({exc})") from None
    got = tuple(w.shape for w in weights)
    if got != shapes or lo.shape != (k,) or hi.shape != (k,):
        raise _fail(path, f"tensor shapes {got}, lo {lo.shape}, hi {hi.shape}; expected {shapes} and ({k},)")
    if not all(np.isfinite(w).all() for w in (*weights, lo, hi)) or not np.all(hi > lo):
        raise _fail(path, "non-finite weights or an empty feature range (hi <= lo)")
    if task is not None and (model.task_kind, model.task_name) != (task.kind.value, task.name):
        raise _fail(path, f"trained for {model.task_kind} {model.task_name!r}, not {task.kind.value} {task.name!r}")
    return model
