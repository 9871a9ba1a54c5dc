"""The edges of a scene's convex pieces for the edge-contact kernels (:mod:`._kernels_edges`; plain numpy).

An edge of a convex piece given by its vertices and face planes ``m·x ≤ o`` is a pair of faces sharing at least
two vertices: the segment between the two of them farthest apart along ``m_f × m_g``. Coplanar triangles are one
face plane (:func:`contactkit.collision.coal_shapes.face_planes`), so a triangulated face's diagonals are no edges.

Each edge records its piece and whether it is *sharp*: its dihedral angle (between the two face normals) is at
least :data:`SHARP_EDGE_ANGLE` and neither face is internal (:func:`._kernels_geometry.piece_set`). The engine's
step collides sharp edges only; the end-of-step penetration check (:meth:`contactkit.engine.world.EngineWorld.step`)
collides them all. A blunt edge — one of a fine polygon's, 2.8° between the sides of a 128-gon — crosses a face
no deeper than the vertices beside it (to within the polygon's sagitta), and an edge on an internal face lies in
the union of the pieces, where the neighbour's own edges and vertices answer.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

SHARP_EDGE_ANGLE = math.radians(15.0)
"""Edges whose faces' normals differ by at least this are collided every step (module docstring)."""

EDGE_ON_FACE_RTOL = 1e-7
"""A vertex lies on a face plane within this × the piece's extent [m]."""

MIN_EDGE_ANGLE = 1e-6
"""Two face planes closer than this [rad] in normal make no edge (degenerate direction)."""


BOUND_RTOL = 1e-9
"""The pieces' bounding volumes (:func:`piece_bounds`) grow by this × the piece's extent [m]: round-off never lets
a vertex out of them."""

BOUND_CENTRE, BOUND_AXES, BOUND_HALF, BOUND_RADIUS, BOUND_BOX_CENTRE, BOUND_BOX_HALF, BOUND_REACH, BOUND_WIDTH = (
    0, 3, 12, 15, 16, 19, 22, 23)
"""Columns of a piece's bounds row (:func:`piece_bounds`): the centre ``c`` (3) and the axes ``a, e_1, e_2`` (rows,
9) of its box in its own frame with the half extents (3) along them, the radius ``R`` about the axis ``a`` through
``c``, the centre (3) and half extents (3) of its box along the coordinate axes, and its reach: the largest
distance of a vertex from the frame's origin (a tool piece: the tool origin) or from that box's centre (an
environment piece), the lever of the travel bound of :func:`._kernels_pairs.pieces_apart`."""

RANGE_START, RANGE_SHARP, RANGE_STOP = 0, 1, 2
"""Columns of :attr:`EdgeSet.tool_range` / ``env_range``: a piece's edges are ``start:stop``, its sharp ones
``start:sharp``."""


class EdgeSet(NamedTuple):
    """The edges of the tool's and the environment's pieces (module docstring), and the pieces' bounding volumes
    for the piece-pair rejection of :mod:`._kernels_pairs`.

    Attributes:
        tool: ``(Et, 6)`` tool-frame endpoints ``(p0, p1)`` of the tool pieces' edges [m], piece after piece, the
            sharp ones first within a piece.
        tool_piece: ``(Et,)`` int64, the tool piece of each edge.
        tool_sharp: ``(Et,)`` bool.
        tool_range: ``(T, 3)`` int64, each tool piece's edge range (columns ``RANGE_*``).
        tool_bounds: ``(T, BOUND_WIDTH)`` the tool pieces' bounds (tool frame; :func:`piece_bounds`).
        env, env_piece, env_sharp, env_range, env_bounds: the same of the environment pieces (world frame).
        piece_lo, piece_hi: ``(E, 3)`` world boxes of the environment pieces [m].
    """

    tool: np.ndarray
    tool_piece: np.ndarray
    tool_sharp: np.ndarray
    tool_range: np.ndarray
    tool_bounds: np.ndarray
    env: np.ndarray
    env_piece: np.ndarray
    env_sharp: np.ndarray
    env_range: np.ndarray
    env_bounds: np.ndarray
    piece_lo: np.ndarray
    piece_hi: np.ndarray


def piece_edges(verts: np.ndarray, planes: np.ndarray, internal: np.ndarray | None = None) -> tuple[np.ndarray,
                                                                                                      np.ndarray]:
    """The edges of one convex piece: ``(K, 6)`` endpoints [m] (frame of ``verts``) and ``(K,)`` sharpness.

    Args:
        verts: ``(V, 3)`` vertices [m]. planes: ``(F, 4)`` face planes ``(m, o)``, ``|m| = 1``.
        internal: ``(F,)`` which faces are internal (their edges are not sharp); default none.
    """
    extent = max(float(np.ptp(verts, axis=0).max()), 1e-12)
    on = np.abs(verts @ planes[:, :3].T - planes[:, 3]) <= EDGE_ON_FACE_RTOL * extent  # (V, F)
    shared = on.T.astype(np.int64) @ on.astype(np.int64)
    internal = np.zeros(len(planes), bool) if internal is None else internal
    ends, sharp = [], []
    for f, g in zip(*np.nonzero(np.triu(shared >= 2, k=1)), strict=True):
        axis = np.cross(planes[f, :3], planes[g, :3])
        sine = float(np.linalg.norm(axis))
        if sine < MIN_EDGE_ANGLE:
            continue
        pts = verts[on[:, f] & on[:, g]]
        along = pts @ axis
        p0, p1 = pts[int(np.argmin(along))], pts[int(np.argmax(along))]
        if np.linalg.norm(p1 - p0) <= EDGE_ON_FACE_RTOL * extent:
            continue
        angle = math.acos(float(np.clip(planes[f, :3] @ planes[g, :3], -1.0, 1.0)))
        ends.append(np.concatenate([p0, p1]))
        sharp.append(angle >= SHARP_EDGE_ANGLE and not internal[f] and not internal[g])
    return np.array(ends, dtype=np.float64).reshape(-1, 6), np.array(sharp, dtype=bool)


def piece_bounds(verts: np.ndarray, frame: np.ndarray, from_origin: bool) -> np.ndarray:
    """A convex piece's bounding volumes: ``(BOUND_WIDTH,)``, columns ``BOUND_*`` — its box in the frame ``(3, 3)``
    (rows ``a, e_1, e_2``, orthonormal: the piece's own, :func:`._kernels_geometry.piece_set`), the cylinder of
    axis ``a`` through that box's centre, and its box along the coordinate axes, each grown by :data:`BOUND_RTOL`.

    A piece's support ``max_v n·v`` is at most each one's (:func:`._kernels_pairs.support`): the first is exact
    for a box, the second within the sagitta for a fine polygonal prism (a peg), the third for an axis-aligned part.

    Args:
        verts: ``(V, 3)`` the piece's vertices [m] (any frame; the bounds are in it).
        from_origin: :data:`BOUND_REACH` measured from the frame's origin (a tool piece), else from the box's centre.
    """
    pad = BOUND_RTOL * max(float(np.ptp(verts, axis=0).max()), 1e-12)
    local = verts @ frame.T
    lo, hi = local.min(axis=0), local.max(axis=0)
    mid = 0.5 * (lo + hi)
    radius = float(np.sqrt(((local[:, 1:] - mid[1:]) ** 2).sum(axis=1).max()))
    box_lo, box_hi = verts.min(axis=0), verts.max(axis=0)
    reach = np.linalg.norm(verts - (0.0 if from_origin else 0.5 * (box_lo + box_hi)), axis=1).max()
    return np.concatenate([frame.T @ mid, frame.reshape(-1), 0.5 * (hi - lo) + pad, [radius + pad],
                           0.5 * (box_lo + box_hi), 0.5 * (box_hi - box_lo) + pad, [reach + pad]])


def _stack(per_piece: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Edges of several pieces stacked, a piece's sharp ones first: endpoints ``(K, 6)``, piece ``(K,)``, sharpness
    ``(K,)`` and each piece's range ``(N, 3)`` (columns ``RANGE_*``)."""
    ends, piece, sharp, ranges, start = [np.zeros((0, 6))], [], [], [], 0
    for i, (e, s) in enumerate(per_piece):
        order = np.argsort(~s, kind="stable")
        ends.append(e.reshape(-1, 6)[order])
        sharp.append(s[order])
        piece.append(np.full(len(s), i, np.int64))
        ranges.append((start, start + int(s.sum()), start + len(s)))
        start += len(s)
    return (np.ascontiguousarray(np.concatenate(ends)), np.concatenate(piece or [np.zeros(0, np.int64)]),
            np.concatenate(sharp or [np.zeros(0, bool)]).astype(bool), np.array(ranges, np.int64).reshape(-1, 3))


def edge_set(tool: list[tuple[np.ndarray, np.ndarray]], env: list[tuple[np.ndarray, np.ndarray]],
             tool_bounds: np.ndarray, env_bounds: np.ndarray, piece_lo: np.ndarray, piece_hi: np.ndarray) -> EdgeSet:
    """The :class:`EdgeSet` of a scene.

    Args:
        tool, env: per piece, the output of :func:`piece_edges` (tool frame; world frame).
        tool_bounds, env_bounds: ``(T, BOUND_WIDTH)``, ``(E, BOUND_WIDTH)`` the pieces' :func:`piece_bounds`.
        piece_lo, piece_hi: ``(E, 3)`` world boxes of the environment pieces [m].
    """
    tool_ends, tool_piece, tool_sharp, tool_range = _stack(tool)
    env_ends, env_piece, env_sharp, env_range = _stack(env)
    return EdgeSet(
        tool=tool_ends, tool_piece=tool_piece, tool_sharp=tool_sharp, tool_range=tool_range,
        tool_bounds=np.ascontiguousarray(np.asarray(tool_bounds, np.float64).reshape(-1, BOUND_WIDTH)),
        env=env_ends, env_piece=env_piece, env_sharp=env_sharp, env_range=env_range,
        env_bounds=np.ascontiguousarray(np.asarray(env_bounds, np.float64).reshape(-1, BOUND_WIDTH)),
        piece_lo=np.ascontiguousarray(np.asarray(piece_lo, np.float64).reshape(-1, 3)),
        piece_hi=np.ascontiguousarray(np.asarray(piece_hi, np.float64).reshape(-1, 3)),
    )
