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


class EdgeSet(NamedTuple):
    """The edges of the tool's and the environment's pieces (module docstring).

    Attributes:
        tool: ``(Et, 6)`` tool-frame endpoints ``(p0, p1)`` of the tool pieces' edges [m].
        tool_piece: ``(Et,)`` int64, the tool piece of each edge.
        tool_sharp: ``(Et,)`` bool.
        env: ``(Ee, 6)`` world endpoints of the environment pieces' edges [m].
        env_piece: ``(Ee,)`` int64, the environment piece of each edge.
        env_sharp: ``(Ee,)`` bool.
        env_cells: ``(Ee, 6)`` int64, the grid cell range ``(c0, c1)`` of each edge's box grown by the largest margin
            (the grid of :class:`~._kernels_geometry.ContactGeometry`).
        edge_start, edge_items: cell → environment edges whose grown box meets it.
        piece_lo, piece_hi: ``(E, 3)`` world boxes of the environment pieces [m].
        piece_cells: ``(E, 6)`` int64, each environment piece's grown cell range (as the grid lists it).
    """

    tool: np.ndarray
    tool_piece: np.ndarray
    tool_sharp: np.ndarray
    env: np.ndarray
    env_piece: np.ndarray
    env_sharp: np.ndarray
    env_cells: np.ndarray
    edge_start: np.ndarray
    edge_items: np.ndarray
    piece_lo: np.ndarray
    piece_hi: np.ndarray
    piece_cells: np.ndarray


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


def _stack(per_piece: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges of several pieces stacked: endpoints ``(K, 6)``, piece ``(K,)``, sharpness ``(K,)``."""
    ends = np.concatenate([e for e, _ in per_piece]) if per_piece else np.zeros((0, 6))
    piece = np.repeat(np.arange(len(per_piece)), [len(e) for e, _ in per_piece]).astype(np.int64)
    sharp = np.concatenate([s for _, s in per_piece]) if per_piece else np.zeros(0, bool)
    return np.ascontiguousarray(ends.reshape(-1, 6)), piece, sharp.astype(bool)


def _cell_range(lo: np.ndarray, hi: np.ndarray, origin: np.ndarray, cell: float, dims: np.ndarray) -> np.ndarray:
    """``(N, 6)`` int64 clipped grid cell ranges ``(c0, c1)`` of boxes ``lo, hi (N, 3)`` [m]."""
    c0 = np.clip(np.floor((lo - origin) / cell).astype(np.int64), 0, dims - 1)
    c1 = np.clip(np.floor((hi - origin) / cell).astype(np.int64), 0, dims - 1)
    return np.ascontiguousarray(np.concatenate([c0, c1], axis=1).reshape(-1, 6))


def edge_set(tool: list[tuple[np.ndarray, np.ndarray]], env: list[tuple[np.ndarray, np.ndarray]],
             piece_lo: np.ndarray, piece_hi: np.ndarray, grid: tuple, grow: float) -> EdgeSet:
    """The :class:`EdgeSet` of a scene.

    Args:
        tool, env: per piece, the output of :func:`piece_edges` (tool frame; world frame).
        piece_lo, piece_hi: ``(E, 3)`` world boxes of the environment pieces [m].
        grid: ``(origin (3,), cell [m], dims (3,))`` of the scene's broad-phase grid.
        grow: the largest margin [m]: boxes grow by it.
    """
    tool_ends, tool_piece, tool_sharp = _stack(tool)
    env_ends, env_piece, env_sharp = _stack(env)
    origin, cell, dims = np.asarray(grid[0], np.float64), float(grid[1]), np.asarray(grid[2], np.int64)
    n_cells = int(np.prod(dims))
    lo = np.minimum(env_ends[:, :3], env_ends[:, 3:]) - grow
    hi = np.maximum(env_ends[:, :3], env_ends[:, 3:]) + grow
    cells = _cell_range(lo, hi, origin, cell, dims)
    flat, owner = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for e, r in enumerate(cells):
        i, j, k = np.meshgrid(*(np.arange(r[a], r[a + 3] + 1) for a in range(3)), indexing="ij")
        flat.append(((i * dims[1] + j) * dims[2] + k).reshape(-1))
        owner.append(np.full(flat[-1].shape, e, np.int64))
    flat_all, owner_all = np.concatenate(flat), np.concatenate(owner)
    order = np.lexsort((owner_all, flat_all))
    edge_start = np.searchsorted(flat_all[order], np.arange(n_cells + 1)).astype(np.int64)
    piece_lo = np.asarray(piece_lo, np.float64).reshape(-1, 3)
    piece_hi = np.asarray(piece_hi, np.float64).reshape(-1, 3)
    return EdgeSet(
        tool=tool_ends, tool_piece=tool_piece, tool_sharp=tool_sharp,
        env=env_ends, env_piece=env_piece, env_sharp=env_sharp, env_cells=cells,
        edge_start=edge_start, edge_items=owner_all[order].astype(np.int64),
        piece_lo=piece_lo, piece_hi=piece_hi,
        piece_cells=_cell_range(piece_lo - grow, piece_hi + grow, origin, cell, dims),
    )
