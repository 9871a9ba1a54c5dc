"""Files of a piecewise depth network (:class:`contactkit.depth.network.DepthNetSet`): a JSON manifest beside the
pieces' own ``.safetensors`` files, never a pickle.

The manifest ``{"format": "contactkit.depth-set", "format_version": "1", "part_name", "mesh_sha256", "pieces":
[{"path", "sha256", "z_window_m"}, ...]}`` names each piece by a path relative to the manifest's folder (inside
it: an absolute path or one that leaves the folder is refused) and the sha256 of the piece's file, which must
match. :func:`load_depth_nets` reads a manifest or a single network file (a set of one piece), so every place that
takes a network file takes a piecewise one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from contactkit.depth.checkpoint import MAX_FILE_BYTES as MAX_NET_BYTES
from contactkit.depth.checkpoint import load_depth_net
from contactkit.depth.network import DepthNetSet
from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.files import read_bounded, write_atomic
from contactkit.geometry.part import Part

SET_FORMAT = "contactkit.depth-set"
SET_FORMAT_VERSION = "1"
MAX_MANIFEST_BYTES = 64 * 2**10
"""Largest accepted manifest [bytes] (a few pieces take a few hundred bytes)."""
MANIFEST_SUFFIX = ".json"
"""A network path with this suffix is a manifest; any other is a single network file."""


def _sha256(path: Path, manifest: Path) -> str:
    """The sha256 of the network file ``path`` (read bounded as a network is; CheckpointError naming ``manifest``)."""
    data = read_bounded(path, MAX_NET_BYTES, lambda problem: _fail(manifest, f"piece '{path}': {problem}"))
    return hashlib.sha256(data).hexdigest()


def save_depth_net_set(pieces: Sequence[str | Path], path: str | Path) -> Path:
    """Write the manifest ``path`` (``.json``) of the network files ``pieces`` (each loaded and checked; together
    a valid :class:`DepthNetSet`), atomically; returns the path.

    Raises:
        CheckpointError: a piece that cannot be read, or pieces that do not make one set (different parts or
            frames, overlapping windows); InvalidInputError: a manifest name without ``.json``, or a piece
            outside the manifest's folder.
    """
    path = Path(path)
    if path.suffix != MANIFEST_SUFFIX:
        raise InvalidInputError(f"a depth-network set manifest is a {MANIFEST_SUFFIX} file, got {str(path)!r}")
    folder = path.parent.resolve()
    files = [Path(p) for p in pieces]
    outside = [str(p) for p in files if not p.resolve().is_relative_to(folder)]
    if outside:
        raise InvalidInputError(f"pieces {outside} lie outside the manifest's folder {str(path.parent)!r}")
    nets = [load_depth_net(p) for p in files]
    try:
        net_set = DepthNetSet(tuple(nets))
    except InvalidInputError as exc:
        raise CheckpointError(f"depth-network set {str(path)!r}: {exc}") from None
    order = sorted(range(len(nets)), key=lambda i: float(nets[i].feature_lo[-1]))
    manifest = {"format": SET_FORMAT, "format_version": SET_FORMAT_VERSION, "part_name": net_set.part_name,
                "mesh_sha256": nets[0].mesh_sha256,
                "pieces": [{"path": files[i].resolve().relative_to(folder).as_posix(),
                            "sha256": _sha256(files[i], path),
                            "z_window_m": [float(nets[i].feature_lo[-1]), float(nets[i].feature_hi[-1])]}
                           for i in order]}
    return write_atomic(path, json.dumps(manifest, indent=1) + "\n")


def depth_net_files(path: str | Path) -> list[Path]:
    """The files a network path stands for: itself, and for a manifest the pieces it names (unchecked)."""
    path = Path(path)
    if path.suffix != MANIFEST_SUFFIX:
        return [path]
    return [path, *(path.parent / piece["path"] for piece in _manifest(path)["pieces"])]


def _fail(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(f"depth-network set {str(path)!r}: {problem}")


def _manifest(path: Path) -> dict:
    """The manifest's JSON object, its format, version and piece entries checked (CheckpointError if not)."""
    data = read_bounded(path, MAX_MANIFEST_BYTES, lambda problem: _fail(path, problem))
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _fail(path, f"not a JSON manifest ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(doc, dict) or doc.get("format") != SET_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        raise _fail(path, f"format {found!r}, expected {SET_FORMAT!r}")
    if doc.get("format_version") != SET_FORMAT_VERSION:
        raise _fail(path, f"format version {doc.get('format_version')!r}, this contactkit reads "
                          f"{SET_FORMAT_VERSION!r}")
    pieces = doc.get("pieces")
    good = isinstance(pieces, list) and pieces and all(
        isinstance(p, dict) and isinstance(p.get("path"), str) and isinstance(p.get("sha256"), str) for p in pieces)
    if not good:
        raise _fail(path, "'pieces' must be a non-empty list of {path, sha256} objects")
    return doc


def load_depth_nets(path: str | Path, part: Part | None = None) -> DepthNetSet:
    """The network(s) at ``path``: a manifest written by :func:`save_depth_net_set`, or one ``.safetensors``
    network (:func:`contactkit.depth.load_depth_net`) as a set of one piece.

    Args:
        part: when given, every piece must have been trained on this part's mesh.

    Raises:
        CheckpointError: an unreadable, malformed or oversized manifest; a piece path that is absolute or leaves
            the manifest's folder; a piece whose sha256 differs from the manifest's; a piece that cannot be
            loaded (see :func:`contactkit.depth.load_depth_net`); pieces that do not make one set.
    """
    path = Path(path)
    if path.suffix != MANIFEST_SUFFIX:
        return DepthNetSet((load_depth_net(path, part),))
    doc, folder = _manifest(path), path.parent.resolve()
    nets = []
    for entry in doc["pieces"]:
        piece = Path(entry["path"])
        resolved = (folder / piece).resolve()
        if piece.is_absolute() or not resolved.is_relative_to(folder):
            raise _fail(path, f"piece {entry['path']!r} lies outside the manifest's folder")
        if _sha256(resolved, path) != entry["sha256"]:
            raise _fail(path, f"piece {entry['path']!r} differs from the file the manifest was written with "
                              "(sha256)")
        nets.append(load_depth_net(resolved, part))
    try:
        return DepthNetSet(tuple(nets))
    except InvalidInputError as exc:
        raise _fail(path, str(exc)) from None
