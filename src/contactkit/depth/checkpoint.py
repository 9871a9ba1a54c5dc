"""Depth-network files: one safetensors file, never a pickle.

Tensors ``W0, b0, W1, b1, W2, b2`` (float64); the header metadata holds ``format`` = ``contactkit.depth``,
``format_version`` and ``depth_net``, a JSON object with the part name, its mesh's sha256, the coordinates and
their frame, the padded domain, the output scale and the training facts (``meta``). Writing is atomic (a
temporary file in the same folder, then ``os.replace``). Reading checks the header against the file size before
anything is allocated and refuses, with a :class:`~contactkit.errors.CheckpointError` naming the file, anything
that is not a well-formed depth network, or (given the part) one trained on another mesh.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import safetensors.numpy

from contactkit.depth.coordinates import N_FEATURES, Coordinates, make_frame
from contactkit.depth.network import HIDDEN, DepthNet
from contactkit.errors import CheckpointError, ContactkitError
from contactkit.files import read_safetensors, write_atomic
from contactkit.geometry.part import Part, mesh_sha256

FORMAT = "contactkit.depth"
FORMAT_VERSION = "1"
MAX_FILE_BYTES = 16 * 2**20
"""Largest accepted depth-network file [bytes] (a 64-64 network is about 40 kB)."""
WEIGHT_NAMES = ("W0", "b0", "W1", "b1", "W2", "b2")


def weight_shapes(k: int) -> tuple[tuple[int, ...], ...]:
    """Shapes of ``(W0, b0, W1, b1, W2, b2)`` for ``k`` features (paper §V-B: two hidden layers of 64)."""
    return (HIDDEN, k), (HIDDEN,), (HIDDEN, HIDDEN), (HIDDEN,), (1, HIDDEN), (1,)


def save_depth_net(net: DepthNet, path: str | Path) -> Path:
    """Write ``net`` to ``path`` (a ``.safetensors`` file) atomically; returns the path."""
    path = Path(path)
    tensors = {n: np.ascontiguousarray(w, dtype=np.float64) for n, w in zip(WEIGHT_NAMES, net.weights, strict=True)}
    desc = {
        "part_name": net.part_name, "mesh_sha256": net.mesh_sha256, "coordinates": net.coordinates.value,
        "origin": net.origin.tolist(), "axis": net.axis.tolist(), "ref": net.ref.tolist(), "pitch": net.pitch,
        "handedness": net.handedness, "feature_lo": net.feature_lo.tolist(), "feature_hi": net.feature_hi.tolist(),
        "depth_scale": net.depth_scale, "meta": net.meta,
    }
    payload = safetensors.numpy.save(tensors, metadata={"format": FORMAT, "format_version": FORMAT_VERSION,
                                                        "depth_net": json.dumps(desc)})
    return write_atomic(path, payload)


def _fail(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(f"depth network {str(path)!r}: {problem}")


def load_depth_net(path: str | Path, part: Part | None = None) -> DepthNet:
    """Read a depth network written by :func:`save_depth_net` (never unpickles anything).

    Args:
        path: the ``.safetensors`` file.
        part: when given, the file's stored mesh sha256 must equal ``mesh_sha256(part.vertices, part.faces)``.

    Raises:
        CheckpointError: missing, unreadable, not safetensors, truncated, not a depth network (another format
            or version), malformed (description, shapes, non-finite weights), or trained on another mesh.
    """
    path = Path(path)
    data, header = read_safetensors(path, MAX_FILE_BYTES, lambda problem: _fail(path, problem))
    meta = header.get("__metadata__") or {}
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise _fail(path, f"not a contactkit depth network (format {found!r}, expected {FORMAT!r})")
    if meta.get("format_version") != FORMAT_VERSION:
        raise _fail(path, f"format version {meta.get('format_version')!r}, this contactkit reads {FORMAT_VERSION!r}")
    try:
        tensors = safetensors.numpy.load(data)
    except Exception as exc:  # the header was checked; what is left is a corrupt payload
        raise _fail(path, f"corrupt tensor data ({exc})") from None
    try:
        net = _build(json.loads(meta["depth_net"]), tensors)
    except (ContactkitError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _fail(path, f"malformed depth network ({exc})") from None
    if part is not None:
        want = mesh_sha256(part.vertices, part.faces)
        if net.mesh_sha256 != want:
            raise _fail(path, f"trained on mesh {net.mesh_sha256[:12]}… ({net.part_name!r}), but part "
                        f"{part.name!r} has mesh {want[:12]}…")
    return net


def _build(desc: dict, tensors: dict[str, np.ndarray]) -> DepthNet:
    """A :class:`DepthNet` from the JSON description and tensors, every field checked (ValueError if not)."""
    frame = make_frame(desc["coordinates"], desc["origin"], desc["axis"], desc["ref"], float(desc["pitch"]),
                       int(desc["handedness"]))
    k = N_FEATURES[frame.coordinates]
    if sorted(tensors) != sorted(WEIGHT_NAMES):
        raise ValueError(f"tensors {sorted(tensors)}, expected {list(WEIGHT_NAMES)}")
    weights = tuple(np.asarray(tensors[n], dtype=np.float64) for n in WEIGHT_NAMES)
    for name, w, shape in zip(WEIGHT_NAMES, weights, weight_shapes(k), strict=True):
        if w.shape != shape or not np.isfinite(w).all():
            raise ValueError(f"tensor {name} is {w.shape}, needs a finite {shape}")
    lo, hi = (np.asarray(desc[key], dtype=np.float64) for key in ("feature_lo", "feature_hi"))
    finite = np.isfinite(lo).all() and np.isfinite(hi).all()
    if lo.shape != (k,) or hi.shape != (k,) or not (finite and (hi > lo).all()):
        raise ValueError(f"feature_lo/feature_hi must be finite ({k},) with hi > lo")
    scale = float(desc["depth_scale"])
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"depth_scale {scale!r} must be finite and > 0")
    sha = str(desc["mesh_sha256"])
    if len(sha) != 64:
        raise ValueError("mesh_sha256 is not a sha256 hex digest")
    meta = desc.get("meta", {})
    if not isinstance(meta, dict):
        raise ValueError("meta is not a JSON object")
    return DepthNet(str(desc["part_name"]), sha, Coordinates(frame.coordinates), frame.origin, frame.axis, frame.ref,
                    frame.pitch, frame.handedness, lo, hi, scale, weights, meta)
