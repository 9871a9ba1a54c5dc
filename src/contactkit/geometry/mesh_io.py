"""Reading triangle meshes from files into parts, and writing them as OBJ.

STL (binary or ASCII), PLY and OFF are read by trimesh (``process=False``: none of its repairs). Wavefront OBJ
is read by a strict parser of our own (``v`` and ``f`` statements; the other OBJ statements are ignored;
anything else, or bytes that are not UTF-8 text, is an error naming the line), because trimesh 5.2's OBJ reader
silently accepts or repairs what must be refused (checked on the bad-input catalog and hand-made cases):

- a line that is no OBJ statement (``hello world 1 2``) is skipped without a word;
- a face with fewer than 3 vertices (``f 1 2``) is dropped, so a file missing data still loads;
- the face index ``0`` (invalid: OBJ counts from 1) becomes ``-1``, i.e. silently the *last* vertex;
- random bytes (``not_an_obj.obj``) give an empty mesh instead of a parse error;
- out-of-range or non-numeric indices end in a bare ``IndexError``/``ValueError`` naming no line.

(NaN and Inf coordinates pass through trimesh too; the checks below refuse them for every format.) Then, for
every format:

- bit-identical vertices are merged (files often repeat a corner once per face, e.g. every STL, or an
  OBJ with per-face normals) and vertices that no face uses are dropped; both counts go to ``meta``.
  Faces that become duplicates after merging are *not* dropped: such a file is refused (its extra
  faces would make edges non-manifold and double-count volume);
- the mesh is checked by :func:`contactkit.geometry.validate.check_solid` (non-finite or huge
  coordinates, bad indices, degenerate faces, not watertight, flipped winding, zero volume) and, when it bounds
  a solid, by :func:`contactkit.geometry.validate.check_self_intersections` (no face crosses another);
- convex pieces: a closed convex mesh gets one piece, its convex hull. A non-convex mesh gets no piece
  (``pieces = ()``, ``meta["convex_pieces_missing"] = True``): :func:`contactkit.geometry.decompose` gives it
  pieces, and a :class:`~contactkit.scene.Scene` refuses it until then; or a GeometryError when
  ``require_convex``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from contactkit.errors import GeometryError
from contactkit.files import read_bounded
from contactkit.geometry.part import Part
from contactkit.geometry.validate import (
    check_self_intersections,
    check_solid,
    hull_piece,
    hull_volume,
    is_convex,
    signed_volume,
)

MAX_MESH_FILE_BYTES = 256 * 2**20
"""Largest mesh file read [bytes]; bounds memory on hostile input."""

TRIMESH_FORMATS = (".stl", ".ply", ".off")
"""Suffixes read through trimesh; ``.obj`` is read by :func:`read_obj`."""

_OBJ_IGNORED = frozenset(
    "vn vt vp o g s usemtl mtllib l p cstype deg bmat step curv curv2 surf parm trim hole scrv sp end con "
    "mg bevel c_interp d_interp lod shadow_obj trace_obj ctech stech maplib usemap".split()
)


def _obj_vertex(tokens: list[str], where: str) -> list[float]:
    if len(tokens) not in (3, 4, 6, 7):
        raise GeometryError(f"{where}: a vertex needs 3 coordinates (+ w or r g b), got {len(tokens)}")
    try:
        xyz = [float(t) for t in tokens[:3]]
    except ValueError:
        raise GeometryError(f"{where}: vertex coordinates not numbers: {' '.join(tokens[:3])!r}") from None
    if not all(math.isfinite(x) for x in xyz):
        raise GeometryError(f"{where}: non-finite vertex coordinate in {' '.join(tokens[:3])!r} (NaN or Inf)")
    return xyz


def _obj_face(tokens: list[str], n_seen: int, where: str) -> list[int]:
    if len(tokens) < 3:
        raise GeometryError(f"{where}: a face needs at least 3 vertices, got {len(tokens)}")
    idx = []
    for t in tokens:
        try:
            i = int(t.split("/")[0])
        except ValueError:
            raise GeometryError(f"{where}: bad face index {t!r}") from None
        if i == 0 or -i > n_seen:
            raise GeometryError(f"{where}: bad face index {i} (1-based; {n_seen} vertices so far)")
        idx.append(i - 1 if i > 0 else n_seen + i)
    return [k for j in range(1, len(idx) - 1) for k in (idx[0], idx[j], idx[j + 1])]


def read_obj(path: str | Path, text: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Parse a Wavefront OBJ file into ``(vertices (V, 3) float64 [file units], faces (F, 3) int64)``.

    Polygon faces are split into fans from their first corner (exact for convex planar polygons);
    ``i/t/n`` references keep the vertex index; negative (relative) indices are resolved.

    Raises:
        GeometryError: naming the file and line: not UTF-8 text, unknown statement, bad number,
            non-finite coordinate, bad or out-of-range face index.
    """
    path = Path(path)
    if text is None:
        text = _read_text(path)
    verts: list[list[float]] = []
    tris: list[list[int]] = []
    tri_lines: list[int] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        tokens = line.split("#", 1)[0].split()
        if not tokens:
            continue
        where = f"mesh file '{path}' line {lineno}"
        head, rest = tokens[0], tokens[1:]
        if head == "v":
            verts.append(_obj_vertex(rest, where))
        elif head == "f":
            face = _obj_face(rest, len(verts), where)
            tris += [face[k:k + 3] for k in range(0, len(face), 3)]
            tri_lines += [lineno] * (len(face) // 3)
        elif head not in _OBJ_IGNORED:
            raise GeometryError(f"{where}: not an OBJ statement: {head[:40]!r}")
    faces = np.asarray(tris, dtype=np.int64).reshape(-1, 3)
    if faces.size and faces.max() >= len(verts):
        k = int(np.argmax(faces.max(axis=1) >= len(verts)))
        raise GeometryError(f"mesh file '{path}' line {tri_lines[k]}: bad face index: refers to vertex "
                            f"{int(faces[k].max()) + 1} but the file has {len(verts)} vertices")
    return np.asarray(verts, dtype=np.float64).reshape(-1, 3), faces


def _read_text(path: Path) -> str:
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise GeometryError(f"mesh file '{path}': not a text OBJ file (byte {data[e.start]:#04x} at offset "
                            f"{e.start} is not UTF-8)") from None
    if "\x00" in text:
        raise GeometryError(f"mesh file '{path}': not a text OBJ file (contains NUL bytes)")
    return text


def _read_bytes(path: Path) -> bytes:
    return read_bounded(path, MAX_MESH_FILE_BYTES, lambda problem: GeometryError(f"mesh file '{path}': {problem}"))


def _read_with_trimesh(path: Path) -> tuple[np.ndarray, np.ndarray]:
    import io

    import trimesh

    data = _read_bytes(path)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():  # NaN/Inf are refused below, silently here
            warnings.simplefilter("ignore")
            mesh = trimesh.load_mesh(io.BytesIO(data), file_type=path.suffix.lower()[1:], process=False)
        v, f = np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces, dtype=np.int64)
    except Exception as e:  # third-party parser on untrusted bytes: any failure means "cannot parse"
        raise GeometryError(f"mesh file '{path}': cannot parse as {path.suffix} ({type(e).__name__}: "
                            f"{str(e)[:200]})") from None
    return v.reshape(-1, 3), f.reshape(-1, 3)


def weld(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Merge bit-identical vertices and drop vertices no face uses, keeping first-occurrence order.

    Args:
        vertices: ``(V, 3)`` finite float64; faces: ``(F, 3)`` indices in ``[0, V)``.

    Returns:
        ``(vertices (V', 3), faces (F, 3), n_merged, n_unused_dropped)``.
    """
    key = vertices + 0.0  # -0.0 -> 0.0
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    f = rank[inverse.ravel()][faces] if faces.size else faces
    v = vertices[first[order]]
    n_merged = len(vertices) - len(v)
    used = np.zeros(len(v), dtype=bool)
    used[f.ravel()] = True
    remap = np.cumsum(used) - 1
    return v[used], remap[f].reshape(-1, 3), n_merged, int((~used).sum())


def load_mesh(
    path: str | Path,
    *,
    name: str | None = None,
    require_watertight: bool = True,
    require_convex: bool = False,
) -> Part:
    """Read a mesh file (OBJ, STL, PLY, OFF; coordinates in metres) into a checked :class:`Part`.

    Args:
        path: the file; its frame becomes the part frame.
        name: part name; default the file's stem.
        require_watertight: refuse meshes that do not bound a solid (open, inconsistent winding, inward,
            zero volume). With False such meshes load (for display) with ``pieces = ()``.
        require_convex: refuse meshes that are not convex solids.

    Returns:
        :class:`Part`; ``pieces`` is ``(convex hull,)`` for a convex solid, else ``()``. ``meta`` holds
        kind ``"mesh"``, source, merged_vertices, dropped_unused_vertices, watertight, convex,
        convex_pieces_missing, and for a solid its volume and hull_volume [m^3].

    Raises:
        GeometryError: the message names the file and the problem (see the module docstring).
    """
    path = Path(path)
    label = f"mesh file '{path}'"
    if path.suffix.lower() in TRIMESH_FORMATS:
        v, f = _read_with_trimesh(path)
    else:
        v, f = read_obj(path)
    if len(v) == 0 or len(f) == 0:
        raise GeometryError(f"{label}: empty: {len(v)} vertices and {len(f)} faces")
    if not np.isfinite(v).all():
        raise GeometryError(f"{label}: non-finite vertex coordinate (NaN or Inf) at vertex "
                            f"{int(np.argwhere(~np.isfinite(v))[0][0])}")
    v, f, merged, unused = weld(v, f)
    if merged:
        label += f" (after merging {merged} duplicate vertices)"
    v, f, _ = check_solid(v, f, label, need_volume=require_watertight)
    watertight = require_watertight or _is_solid(v, f, label)
    if watertight:
        check_self_intersections(v, f, label)
    convex = watertight and is_convex(v, f, label)
    meta = {"kind": "mesh", "source": str(path), "merged_vertices": merged, "dropped_unused_vertices": unused,
            "watertight": watertight, "convex": convex, "convex_pieces_missing": not convex}
    if watertight:
        meta |= {"volume": signed_volume(v, f), "hull_volume": hull_volume(v, label)}
    if require_convex and not convex:
        why = (f"its volume is {meta['volume'] / meta['hull_volume']:.1%} of its convex hull's" if watertight
               else "it does not bound a solid")
        raise GeometryError(f"{label}: not convex where a convex piece is required: {why}")
    pieces = (hull_piece(v, label),) if convex else ()
    return Part(name or path.stem, v, f, pieces, meta)


def _is_solid(v: np.ndarray, f: np.ndarray, label: str) -> bool:
    try:
        check_solid(v, f, label)
    except GeometryError:
        return False
    return True


def save_obj(path: str | Path, vertices: np.ndarray, faces: np.ndarray, *, comment: str = "") -> Path:
    """Write ``vertices (V, 3)`` [m] and triangles ``faces (F, 3)`` (0-based) as OBJ; floats keep full
    precision (``repr``), so :func:`read_obj` gives back the same arrays. Returns the path."""
    path = Path(path)
    lines = [f"# {c}" for c in comment.splitlines()]
    lines += [f"v {x!r} {y!r} {z!r}" for x, y, z in np.asarray(vertices, dtype=np.float64).tolist()]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in np.asarray(faces, dtype=np.int64).tolist()]
    path.write_text("\n".join(lines) + "\n")
    return path
