"""Convex pieces as COAL ``Convex`` objects plus the numpy data the contact manifold needs (cached).

A :class:`CoalPiece` is one convex solid in a fixed frame (the tool frame for tool pieces, the world
frame for environment pieces, whose vertices are placed once at their static body's pose). Besides the
COAL object it holds the piece's vertices, its axis-aligned bounding box, and its face planes
``m·x ≤ o`` (outward unit normals ``m``, offsets ``o`` [m]), the half-space description that
:mod:`contactkit.collision.manifold` casts rays against and the broad phase uses for separating-axis
culling. Building a COAL object costs far more than a query, so :func:`coal_piece` caches by content.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import coal
import numpy as np

from contactkit.errors import GeometryError
from contactkit.rotations import quat_to_mat

CONVEXITY_RTOL = 1e-9
"""A vertex may lie outside a face plane of its own piece by this fraction of the piece's extent [m/m]."""

PLANE_MERGE_RTOL = 1e-9
"""Face planes whose normals and offsets (relative to the extent) agree to this are merged into one."""

PAD_PLANE_OFFSET = 1.0e30
"""Offset [m] of the padding planes (normal 0) that fill :func:`stack_planes`: never active."""

COAL_CACHE_SIZE = 4096
"""How many distinct pieces :func:`coal_piece` keeps built."""


@dataclass(frozen=True, eq=False)
class CoalPiece:
    """One convex piece ready for COAL queries, in a fixed frame (tool frame or world frame).

    Attributes:
        label: what error messages call the piece, e.g. ``"static 1 'slot(circle)' piece 3"``.
        geometry: the ``coal.Convex`` (vertices in this piece's frame).
        vertices: ``(V, 3)`` float64 vertices [m], read-only.
        planes: ``(F, 4)`` rows ``(m_x, m_y, m_z, o)``: the piece is ``{x : m·x ≤ o}`` [m], read-only.
        lo, hi: ``(3,)`` corners of the axis-aligned bounding box [m].
    """

    label: str
    geometry: coal.Convex
    vertices: np.ndarray
    planes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def face_planes(vertices: np.ndarray, faces: np.ndarray, label: str) -> np.ndarray:
    """Distinct outward face planes ``(F', 3+1)`` of a convex piece; the half-space form ``m·x ≤ o``.

    Args:
        vertices: ``(V, 3)`` [m]. faces: ``(F, 3)`` outward counter-clockwise triangles of the hull.
        label: names the piece in errors.

    Returns:
        rows ``(m, o)`` with ``|m| = 1``; coplanar triangles give one row.

    Raises:
        GeometryError: a zero-area face, or a vertex outside a face plane by more than
            ``CONVEXITY_RTOL`` × extent (the piece is not convex or its faces are wound inward).
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    if v.ndim != 2 or v.shape[1] != 3 or len(v) < 4 or f.ndim != 2 or f.shape[1] != 3 or len(f) < 4:
        raise GeometryError(f"{label}: a convex piece needs >= 4 vertices (V, 3) and >= 4 faces (F, 3)")
    if not np.all(np.isfinite(v)):
        raise GeometryError(f"{label}: non-finite vertex coordinates")
    if f.min() < 0 or f.max() >= len(v):
        raise GeometryError(f"{label}: face index out of range [0, {len(v)})")
    extent = float(np.ptp(v, axis=0).max())
    normal = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    length = np.linalg.norm(normal, axis=1)
    if np.any(length <= CONVEXITY_RTOL * extent**2):
        raise GeometryError(f"{label}: face {int(np.argmin(length))} has zero area")
    normal = normal / length[:, None]
    offset = np.einsum("ij,ij->i", normal, v[f[:, 0]])
    outside = v @ normal.T - offset
    if outside.max() > CONVEXITY_RTOL * extent:
        k = int(np.argmax(outside.max(axis=0)))
        raise GeometryError(
            f"{label}: not convex with outward faces (a vertex lies {outside.max():.3g} m outside face {k})"
        )
    key = np.round(np.column_stack([normal, offset / extent]) / PLANE_MERGE_RTOL)
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    return np.column_stack([normal[first], offset[first]])


@functools.lru_cache(maxsize=COAL_CACHE_SIZE)
def _build(vertex_bytes: bytes, face_bytes: bytes, label: str) -> CoalPiece:
    vertices = np.frombuffer(vertex_bytes, dtype=np.float64).reshape(-1, 3).copy()
    faces = np.frombuffer(face_bytes, dtype=np.int64).reshape(-1, 3).copy()
    planes = face_planes(vertices, faces, label)
    points = coal.StdVec_Vec3s()
    for x in vertices:
        points.append(x)
    triangles = coal.StdVec_Triangle()
    for a, b, c in faces.tolist():
        triangles.append(coal.Triangle(a, b, c))
    for a in (vertices, planes):
        a.flags.writeable = False
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    return CoalPiece(label, coal.Convex(points, triangles), vertices, planes, lo, hi)


def coal_piece(vertices: np.ndarray, faces: np.ndarray, label: str) -> CoalPiece:
    """A :class:`CoalPiece` of the convex solid ``vertices (V, 3)`` [m], ``faces (F, 3)`` (cached by content).

    Raises:
        GeometryError: see :func:`face_planes`.
    """
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    if v.ndim != 2 or v.shape[1:] != (3,) or f.ndim != 2 or f.shape[1:] != (3,):
        raise GeometryError(f"{label}: vertices must be (V, 3) and faces (F, 3), got {v.shape} and {f.shape}")
    return _build(v.tobytes(), f.tobytes(), label)


def placed_piece(vertices: np.ndarray, faces: np.ndarray, pos: np.ndarray, quat: np.ndarray, label: str) -> CoalPiece:
    """:func:`coal_piece` of a piece given in a body frame and placed at the body pose ``pos (3,)`` [m],
    ``quat (4,)`` (w, x, y, z): its vertices become ``R(quat) v + pos`` (world frame)."""
    rot = quat_to_mat(np.asarray(quat, dtype=np.float64))
    world = np.asarray(vertices, dtype=np.float64) @ rot.T + np.asarray(pos, dtype=np.float64)
    return coal_piece(world, faces, label)


def stack_planes(pieces: tuple[CoalPiece, ...] | list[CoalPiece]) -> np.ndarray:
    """Face planes of ``P`` pieces as one ``(P, F_max, 4)`` array, padded with inactive rows.

    A padding row has normal 0 and offset ``PAD_PLANE_OFFSET``: it bounds no ray (its normal is
    parallel to every direction) and its separation ``m·x - o`` is hugely negative.
    """
    width = max(len(p.planes) for p in pieces)
    out = np.zeros((len(pieces), width, 4))
    out[:, :, 3] = PAD_PLANE_OFFSET
    for i, p in enumerate(pieces):
        out[i, : len(p.planes)] = p.planes
    return out


def stack_vertices(pieces: tuple[CoalPiece, ...] | list[CoalPiece]) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of ``P`` pieces as ``(P, V_max, 3)`` [m] (padded with zeros) and a ``(P, V_max)`` mask of real ones."""
    width = max(len(p.vertices) for p in pieces)
    out = np.zeros((len(pieces), width, 3))
    mask = np.zeros((len(pieces), width), dtype=bool)
    for i, p in enumerate(pieces):
        out[i, : len(p.vertices)] = p.vertices
        mask[i, : len(p.vertices)] = True
    return out, mask
