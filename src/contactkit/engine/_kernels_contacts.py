"""Node-space contacts in numba: tool vertices against environment pieces and environment vertices against
tool pieces (paper 1, data-driven-sim, §II and §III-A: contact nodes ``x_i`` with a penetration depth and
a normal), for one tool pose per call.

Why not :func:`contactkit.collision.contacts`: that query (COAL per piece pair, exact manifolds) costs
10–100 ms for a 50 mm peg in a 128-sided hole (measured), a hundred times the engine's whole budget per
10 ms control step. The environment is static, so this module precomputes, once per world
(:func:`contact_geometry`), each convex piece's face planes ``m·x ≤ o``, which faces are *internal* (fully
covered by a face of a neighbouring piece, e.g. the side faces between a hole's wall pieces, or a wall's
bottom on the floor slab) and a uniform grid of the pieces and of the (deduplicated) environment vertices.

Per query, for a point ``x`` (a tool vertex, or an environment vertex in the tool frame) against a convex
piece with external planes ``a_f = m_f·x - o_f``:

* if the point lies beyond an internal face it is in the neighbour's region: no contact with this piece;
* inside (``max a_f ≤ 0``): penetration ``d = max a_f`` (exact for a convex piece), normal ``m_f*``;
* outside, one positive plane: ``d = a_1`` along ``m_1`` (face region);
* outside, two positive planes ``a_1 ≥ a_2 > 0`` (edge region): the distance to their edge line,
  ``d = |α m_1 + β m_2|`` with ``[1 c; c 1][α; β] = [a_1; a_2]``, ``c = m_1·m_2`` (``β ≤ 0``: face region).

A point gives a contact when its gap can close to within ``margin`` during the step — the plane value
minus ``lookahead ×`` its closing speed along the plane normal (speculative contacts: a peg sliding down
a wall does not close the gap to the wall, a peg falling onto the floor does) — with the normal from the
environment into the tool, the point on the tool surface and the signed distance ``d``. A vertex keeps its
deepest contact and at most ``MAX_PER_VERTEX - 1`` more whose normals differ from the kept ones by more
than ``DEDUPE_ANGLE`` (a peg tip vertex in the corner of a hole touches the floor and a wall; at a junction
of two wall pieces it keeps one). Edge-edge contacts are not generated: a fine polygon's edges cross at
angles close to 180°, where the vertices next to a crossing carry its depth to within the polygon's sagitta.
The distance checks against :func:`contactkit.collision.contacts` (COAL) are in the engine's tests.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from contactkit.collision import CollisionWorld

MAX_PER_VERTEX = 3
"""Most contacts one vertex keeps (against different pieces with different normals)."""

DEDUPE_ANGLE = math.radians(45.0)
"""A vertex's contacts whose normals differ by less than this are one contact (the deepest is kept)."""

INTERNAL_TOL = 1e-9
"""A point more than this [m] beyond an internal face belongs to the neighbouring piece."""

FACE_MATCH_RTOL = 1e-9
"""Coincident faces (internal-face detection): normals opposite and offsets equal to this × extent."""

GRID_CELL = 5e-3
"""Preferred broad-phase grid cell [m]."""

GRID_MAX_CELLS = 2_000_000
"""The cell grows beyond :data:`GRID_CELL` when the environment would need more cells."""

VERTEX_WELD_TOL = 1e-10
"""Environment (or tool) vertices closer than this [m] are one vertex."""

KEY_SHIFT = 2**21
"""Contact keys: ``(source · 2²¹ + vertex) · 2²¹ + piece`` (source 0: tool vertex, 1: environment vertex)."""


class ContactGeometry(NamedTuple):
    """Static arrays of a scene for :func:`node_contacts` (built once by :func:`contact_geometry`).

    A ``NamedTuple`` (immutable; numba reads it as one argument).

    Attributes:
        tool_verts: ``(Vt, 3)`` distinct tool vertices, tool frame [m].
        tool_planes: ``(Pt, 4)`` face planes ``(m, o)`` of the tool pieces, tool frame, piece after piece.
        tool_start: ``(T + 1,)`` plane ranges of the tool pieces; tool_mid: ``(T,)`` where each piece's
            internal faces begin (its external faces come first).
        tool_lo, tool_hi: ``(T, 3)`` tool-frame bounding boxes of the tool pieces [m].
        tool_centre: ``(T, 3)`` box centres [m]; tool_reach: ``(Pt,)`` plane value at its piece's centre
            ``m·c - o`` [m] (≤ 0); each piece's planes are sorted by it, largest first.
        env_planes, env_start, env_mid, env_centre, env_reach: the same for the ``E`` environment
            pieces (world frame).
        env_friction: ``(E,)`` friction coefficient of contacts with each piece (before ``friction_scale``).
        env_verts: ``(Ve, 3)`` distinct environment vertices, world frame [m].
        env_vert_friction: ``(Ve,)`` friction of contacts at each vertex (largest of its pieces').
        grid_origin: ``(3,)`` [m]; grid_cell: ``(1,)`` cell edge [m]; grid_dims: ``(3,)`` cells per axis.
        piece_start, piece_items: cell → environment pieces whose box grown by ``max_margin`` meets it.
        vert_start, vert_items: cell → environment vertices inside it.
        max_margin: ``(1,)`` the largest margin [m] a query may use.
    """

    tool_verts: np.ndarray
    tool_planes: np.ndarray
    tool_start: np.ndarray
    tool_mid: np.ndarray
    tool_lo: np.ndarray
    tool_hi: np.ndarray
    tool_centre: np.ndarray
    tool_reach: np.ndarray
    env_planes: np.ndarray
    env_start: np.ndarray
    env_mid: np.ndarray
    env_centre: np.ndarray
    env_reach: np.ndarray
    env_friction: np.ndarray
    env_verts: np.ndarray
    env_vert_friction: np.ndarray
    grid_origin: np.ndarray
    grid_cell: np.ndarray
    grid_dims: np.ndarray
    piece_start: np.ndarray
    piece_items: np.ndarray
    vert_start: np.ndarray
    vert_items: np.ndarray
    max_margin: np.ndarray


def raw_capacity(geo: ContactGeometry) -> int:
    """Most contacts one :func:`node_contacts` query can return (before reduction)."""
    return MAX_PER_VERTEX * (len(geo.tool_verts) + len(geo.env_verts) * (len(geo.tool_start) - 1))


def _weld(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``points (N, 3)`` [m] (within :data:`VERTEX_WELD_TOL`) in first-seen order, and
    ``(N,)`` the index of each input row's distinct vertex."""
    _, first, inverse = np.unique(
        np.round(points / VERTEX_WELD_TOL).astype(np.int64), axis=0, return_index=True, return_inverse=True
    )
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.ascontiguousarray(points[first[order]]), rank[inverse.reshape(-1)]


def _internal_faces(piece_verts: list[np.ndarray], piece_planes: list[np.ndarray]) -> list[np.ndarray]:
    """Per piece, ``(F,)`` bool: the face lies entirely in a coincident, opposite face of another piece."""
    lo = np.array([v.min(axis=0) for v in piece_verts])
    hi = np.array([v.max(axis=0) for v in piece_verts])
    extent = max(float(np.ptp(np.concatenate(piece_verts), axis=0).max()), 1e-12)
    tol = FACE_MATCH_RTOL * extent
    out = []
    for a, (verts, planes) in enumerate(zip(piece_verts, piece_planes, strict=True)):
        internal = np.zeros(len(planes), dtype=bool)
        near = np.flatnonzero(np.all((lo <= hi[a] + tol) & (hi >= lo[a] - tol), axis=1))
        for f, plane in enumerate(planes):
            face = verts[np.abs(verts @ plane[:3] - plane[3]) <= tol]
            for b in near[near != a]:
                other = piece_planes[b]
                opposite = (other[:, :3] @ plane[:3] <= -1.0 + FACE_MATCH_RTOL) & (
                    np.abs(other[:, 3] + plane[3]) <= tol
                )
                if opposite.any() and np.all(face @ other[:, :3].T - other[:, 3] <= tol):
                    internal[f] = True
                    break
        out.append(internal)
    return out


def _sorted_planes(piece_verts: list[np.ndarray], piece_planes: list[np.ndarray]) -> tuple:
    """Planes of each piece: the external ones sorted by their value at the piece's box centre (largest
    first), then the internal ones. Returns ``(planes, first internal index per piece, centres (N, 3),
    values at the centre)``."""
    flags = _internal_faces(piece_verts, piece_planes)
    planes, mid, centres, reach = [], [], [], []
    offset = 0
    for verts, rows, flag in zip(piece_verts, piece_planes, flags, strict=True):
        centre = 0.5 * (verts.min(axis=0) + verts.max(axis=0))
        value = rows[:, :3] @ centre - rows[:, 3]
        order = np.lexsort((-value, flag))  # external first, each group by decreasing value
        planes.append(rows[order])
        mid.append(offset + int(np.count_nonzero(~flag)))
        centres.append(centre)
        reach.append(value[order])
        offset += len(rows)
    return (np.ascontiguousarray(np.concatenate(planes)), np.array(mid, dtype=np.int64), np.array(centres),
            np.concatenate(reach))


def _cell_lists(lo: np.ndarray, hi: np.ndarray, env_verts: np.ndarray, grow: float) -> tuple:
    """Uniform grid over the piece boxes ``lo, hi (E, 3)`` grown by ``grow`` [m]: cell lists of pieces
    (ascending) and of vertices. Returns ``(origin, cell, dims, piece_start, piece_items, vert_start,
    vert_items)``."""
    origin = lo.min(axis=0) - grow
    span = hi.max(axis=0) + grow - origin
    cell = max(GRID_CELL, float(np.prod(span) / GRID_MAX_CELLS) ** (1.0 / 3.0))
    dims = np.maximum(np.ceil(span / cell).astype(np.int64), 1)
    n_cells = int(np.prod(dims))
    cell_of, piece_of = [], []
    for e in range(len(lo)):
        c0 = np.clip(np.floor((lo[e] - grow - origin) / cell).astype(np.int64), 0, dims - 1)
        c1 = np.clip(np.floor((hi[e] + grow - origin) / cell).astype(np.int64), 0, dims - 1)
        i, j, k = np.meshgrid(*(np.arange(c0[a], c1[a] + 1) for a in range(3)), indexing="ij")
        flat = ((i * dims[1] + j) * dims[2] + k).reshape(-1)
        cell_of.append(flat)
        piece_of.append(np.full(len(flat), e))
    cells, pieces = np.concatenate(cell_of), np.concatenate(piece_of)
    order = np.lexsort((pieces, cells))
    piece_start = np.searchsorted(cells[order], np.arange(n_cells + 1)).astype(np.int64)
    vcell = np.clip(np.floor((env_verts - origin) / cell).astype(np.int64), 0, dims - 1)
    vflat = (vcell[:, 0] * dims[1] + vcell[:, 1]) * dims[2] + vcell[:, 2]
    vorder = np.argsort(vflat, kind="stable")
    vert_start = np.searchsorted(vflat[vorder], np.arange(n_cells + 1)).astype(np.int64)
    return origin, cell, dims, piece_start, pieces[order].astype(np.int64), vert_start, vorder.astype(np.int64)


def contact_geometry(world: CollisionWorld, max_margin: float) -> ContactGeometry:
    """The static :class:`ContactGeometry` of a scene's :class:`~contactkit.collision.CollisionWorld`.

    Args:
        world: COAL world of the scene (its pieces' planes and vertices are reused).
        max_margin: largest contact margin [m] the queries will use (grows the grid's piece boxes).
    """
    n_tool = len(world.tool_pieces)
    tool_v = [world.tool_verts[t][world.tool_vmask[t]] for t in range(n_tool)]
    tool_p = [p[np.any(p[:, :3] != 0.0, axis=1)] for p in world.tool_planes]
    starts = np.concatenate([[0], np.cumsum(world.env_plane_count)]).astype(np.int64)
    n_env = len(world.env_pieces)
    env_p = [world.env_plane_rows[starts[e]:starts[e + 1]] for e in range(n_env)]
    env_v = [world.env_verts[e][world.env_vmask[e]] for e in range(n_env)]
    if n_env:
        env_verts, index = _weld(np.concatenate(env_v))
        owner = np.repeat(np.arange(n_env), [len(v) for v in env_v])
        vert_mu = np.zeros(len(env_verts))
        np.maximum.at(vert_mu, index, np.asarray(world.env_friction)[owner])
        lo = np.array([v.min(axis=0) for v in env_v])
        hi = np.array([v.max(axis=0) for v in env_v])
        grid = _cell_lists(lo, hi, env_verts, max_margin)
        env_sorted = _sorted_planes(env_v, env_p)
    else:
        env_verts, vert_mu = np.zeros((0, 3)), np.zeros(0)
        grid = (np.zeros(3), GRID_CELL, np.ones(3, np.int64), np.zeros(2, np.int64), np.zeros(0, np.int64),
                np.zeros(2, np.int64), np.zeros(0, np.int64))
        env_sorted = (np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0))
    tool_sorted = _sorted_planes(tool_v, tool_p)
    return ContactGeometry(
        tool_verts=_weld(np.concatenate(tool_v))[0],
        tool_planes=tool_sorted[0],
        tool_start=np.concatenate([[0], np.cumsum([len(p) for p in tool_p])]).astype(np.int64),
        tool_mid=tool_sorted[1],
        tool_lo=np.array([v.min(axis=0) for v in tool_v]),
        tool_hi=np.array([v.max(axis=0) for v in tool_v]),
        tool_centre=tool_sorted[2],
        tool_reach=tool_sorted[3],
        env_planes=env_sorted[0],
        env_start=starts,
        env_mid=env_sorted[1],
        env_centre=env_sorted[2],
        env_reach=env_sorted[3],
        env_friction=np.asarray(world.env_friction, dtype=np.float64),
        env_verts=env_verts,
        env_vert_friction=vert_mu,
        grid_origin=np.asarray(grid[0], dtype=np.float64),
        grid_cell=np.array([grid[1]]),
        grid_dims=grid[2],
        piece_start=grid[3],
        piece_items=grid[4],
        vert_start=grid[5],
        vert_items=grid[6],
        max_margin=np.array([float(max_margin)]),
    )


@njit(cache=True)
def _reach(px, py, pz, u, margin, lookahead):
    """Margin [m] along the plane normal ``p``: ``margin + lookahead · closing speed`` of the point, the
    closing speed being the largest of ``-p·u_j`` (``u (2, 3)``: the point's velocity relative to the piece at
    the start and at the free end of the step) and 0. A point beyond it stays beyond the plane all step."""
    close = max(0.0, -(px * u[0, 0] + py * u[0, 1] + pz * u[0, 2]), -(px * u[1, 0] + py * u[1, 1] + pz * u[1, 2]))
    return margin + lookahead * close


@njit(cache=True)
def point_vs_piece(planes, reach, start, mid, stop, centre, x, y, z, u, margin, lookahead):
    """Signed distance of the point ``(x, y, z)`` to one convex piece (module docstring rules).

    Args:
        planes: ``(P, 4)`` rows ``(m, o)``; the piece's external planes are rows ``start:mid`` sorted by
            ``reach``, its internal ones ``mid:stop``.
        reach: ``(P,)`` plane values at ``centre (3,)`` [m].
        u: ``(2, 3)`` the point's velocities relative to the piece [m/s] (see :func:`_reach`).
        margin: [m]; lookahead: [s] (speculative factor × step).

    A plane's value at the point is at most ``reach + |x - centre|``: once that bound is at most
    ``min(best, max(second, 0))`` no later external plane can be the largest or make the second positive.

    Returns:
        ``(status, d, nx, ny, nz, plane)``: status 1 is a contact whose gap ``d`` [m] may close to within
        ``margin`` during the step, with unit normal ``n`` pointing from the piece to the point; 0 is none,
        with ``plane`` a plane the point stays beyond (a separating plane to try first next time) or -1.
    """
    dx, dy, dz = x - centre[0], y - centre[1], z - centre[2]
    radius = math.sqrt(dx * dx + dy * dy + dz * dz)
    best, second, ib, i2 = -np.inf, -np.inf, -1, -1
    for f in range(start, mid):
        if reach[f] + radius <= min(best, max(second, 0.0)):
            break
        val = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
        if val > second:
            if val > best:
                second, i2, best, ib = best, ib, val, f
            else:
                second, i2 = val, f
    if ib < 0:
        return 0, 0.0, 0.0, 0.0, 0.0, -1
    if best > margin:  # beyond the margin: separated if it stays beyond some plane all step
        for f in range(start, mid):
            val = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
            if val > margin and val > _reach(planes[f, 0], planes[f, 1], planes[f, 2], u, margin, lookahead):
                return 0, 0.0, 0.0, 0.0, 0.0, f
    for f in range(mid, stop):
        if planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3] > INTERNAL_TOL:
            return 0, 0.0, 0.0, 0.0, 0.0, -1
    nx, ny, nz = planes[ib, 0], planes[ib, 1], planes[ib, 2]
    d = best
    if best > 0.0 and second > 0.0:
        mx, my, mz = planes[i2, 0], planes[i2, 1], planes[i2, 2]
        c = nx * mx + ny * my + nz * mz
        if c < 1.0 - 1e-12:
            alpha = (best - c * second) / (1.0 - c * c)
            beta = (second - c * best) / (1.0 - c * c)
            if beta > 0.0:
                vx, vy, vz = alpha * nx + beta * mx, alpha * ny + beta * my, alpha * nz + beta * mz
                d = math.sqrt(vx * vx + vy * vy + vz * vz)
                nx, ny, nz = vx / d, vy / d, vz / d
    if d > margin and d > _reach(nx, ny, nz, u, margin, lookahead):
        return 0, 0.0, 0.0, 0.0, 0.0, -1
    return 1, d, nx, ny, nz, -1


@njit(cache=True)
def _keep(kept, count, d, nx, ny, nz, px, py, pz, mu, key):
    """Add a contact ``(d, n, p, mu, key)`` to one vertex's list ``kept (MAX_PER_VERTEX, 9)``: the deepest
    per normal direction (:data:`DEDUPE_ANGLE`), at most :data:`MAX_PER_VERTEX`. Returns the new count."""
    cos_tol = math.cos(DEDUPE_ANGLE)
    slot = count
    for s in range(count):
        if kept[s, 1] * nx + kept[s, 2] * ny + kept[s, 3] * nz >= cos_tol:
            if d >= kept[s, 0]:
                return count
            slot = s
            break
    if slot == MAX_PER_VERTEX:
        slot = 0
        for s in range(1, count):
            if kept[s, 0] > kept[slot, 0]:
                slot = s
        if d >= kept[slot, 0]:
            return count
    elif slot == count:
        count += 1
    kept[slot, 0], kept[slot, 1], kept[slot, 2], kept[slot, 3] = d, nx, ny, nz
    kept[slot, 4], kept[slot, 5], kept[slot, 6], kept[slot, 7], kept[slot, 8] = px, py, pz, mu, key
    return count


@njit(cache=True)
def _cell(origin, cell, dims, x, y, z):
    """Flat grid cell of a world point, or -1 outside the grid."""
    i = int(math.floor((x - origin[0]) / cell))
    j = int(math.floor((y - origin[1]) / cell))
    k = int(math.floor((z - origin[2]) / cell))
    if i < 0 or j < 0 or k < 0 or i >= dims[0] or j >= dims[1] or k >= dims[2]:
        return -1
    return (i * dims[1] + j) * dims[2] + k


@njit(cache=True)
def _point_velocities(motion, com, x, y, z, u):
    """World velocities ``u (2, 3)`` (written) of the body point ``(x, y, z)`` for the two twists of
    ``motion (2, 6)`` (rows ``[v_com, ω]``, world) about ``com``."""
    rx, ry, rz = x - com[0], y - com[1], z - com[2]
    for j in range(2):
        u[j, 0] = motion[j, 0] + motion[j, 4] * rz - motion[j, 5] * ry
        u[j, 1] = motion[j, 1] + motion[j, 5] * rx - motion[j, 3] * rz
        u[j, 2] = motion[j, 2] + motion[j, 3] * ry - motion[j, 4] * rx


@njit(cache=True)
def _tool_vertices(geo, rot, pos, motion, com, margin, lookahead, speed, cache, out, k):
    """Tool vertices against the environment pieces listed in their grid cells (module docstring); ``speed``
    bounds every tool point's speed [m/s] (cheap rejection before the point's own velocity is computed)."""
    verts, planes, mid, start = geo.tool_verts, geo.env_planes, geo.env_mid, geo.env_start
    reach, centre = geo.env_reach, geo.env_centre
    piece_start, piece_items, friction = geo.piece_start, geo.piece_items, geo.env_friction
    origin, cell_size, dims = geo.grid_origin, geo.grid_cell[0], geo.grid_dims
    kept = np.empty((MAX_PER_VERTEX, 9))
    u = np.empty((2, 3))
    for v in range(verts.shape[0]):
        lx, ly, lz = verts[v, 0], verts[v, 1], verts[v, 2]
        x = pos[0] + rot[0, 0] * lx + rot[0, 1] * ly + rot[0, 2] * lz
        y = pos[1] + rot[1, 0] * lx + rot[1, 1] * ly + rot[1, 2] * lz
        z = pos[2] + rot[2, 0] * lx + rot[2, 1] * ly + rot[2, 2] * lz
        cell = _cell(origin, cell_size, dims, x, y, z)
        if cell < 0:
            continue
        moving = False
        count = 0
        for item in range(piece_start[cell], piece_start[cell + 1]):
            e = piece_items[item]
            f = cache[v, e]
            if f >= 0:
                val = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
                if val > margin + lookahead * speed:
                    continue
                if not moving:
                    _point_velocities(motion, com, x, y, z, u)
                    moving = True
                if val > margin and val > _reach(planes[f, 0], planes[f, 1], planes[f, 2], u, margin, lookahead):
                    continue
            if not moving:
                _point_velocities(motion, com, x, y, z, u)
                moving = True
            status, d, nx, ny, nz, sep = point_vs_piece(planes, reach, start[e], mid[e], start[e + 1], centre[e],
                                                        x, y, z, u, margin, lookahead)
            cache[v, e] = sep
            if status:
                count = _keep(kept, count, d, nx, ny, nz, x, y, z, friction[e], float(v * KEY_SHIFT + e))
        for s in range(count):
            out[k] = kept[s]
            k += 1
    return k


@njit(cache=True)
def _env_vertices(geo, rot, pos, motion, com, margin, lookahead, speed, grow, cache, out, k):
    """Environment vertices (from the grid cells around each tool piece, grown by ``grow`` [m]) against
    the tool pieces, in the tool frame (velocities of the vertex relative to the tool)."""
    verts, planes, mid, start = geo.env_verts, geo.tool_planes, geo.tool_mid, geo.tool_start
    reach, centre = geo.tool_reach, geo.tool_centre
    tool_lo, tool_hi, vert_start, vert_items = geo.tool_lo, geo.tool_hi, geo.vert_start, geo.vert_items
    origin, cell_size, dims, friction = geo.grid_origin, geo.grid_cell[0], geo.grid_dims, geo.env_vert_friction
    lo, hi = np.empty(3), np.empty(3)
    c0, c1 = np.empty(3, np.int64), np.empty(3, np.int64)
    u_world, u = np.empty((2, 3)), np.empty((2, 3))
    for t in range(start.shape[0] - 1):
        _world_box(rot, pos, tool_lo[t], tool_hi[t], grow, lo, hi)
        for a in range(3):
            c0[a] = max(int(math.floor((lo[a] - origin[a]) / cell_size)), 0)
            c1[a] = min(int(math.floor((hi[a] - origin[a]) / cell_size)), dims[a] - 1)
        for i in range(c0[0], c1[0] + 1):
            for j in range(c0[1], c1[1] + 1):
                for kk in range(c0[2], c1[2] + 1):
                    cell = (i * dims[1] + j) * dims[2] + kk
                    for item in range(vert_start[cell], vert_start[cell + 1]):
                        w = vert_items[item]
                        wx, wy, wz = verts[w, 0] - pos[0], verts[w, 1] - pos[1], verts[w, 2] - pos[2]
                        x = rot[0, 0] * wx + rot[1, 0] * wy + rot[2, 0] * wz
                        y = rot[0, 1] * wx + rot[1, 1] * wy + rot[2, 1] * wz
                        z = rot[0, 2] * wx + rot[1, 2] * wy + rot[2, 2] * wz
                        if (x < tool_lo[t, 0] - grow or y < tool_lo[t, 1] - grow or z < tool_lo[t, 2] - grow
                                or x > tool_hi[t, 0] + grow or y > tool_hi[t, 1] + grow or z > tool_hi[t, 2] + grow):
                            continue
                        f = cache[w, t]
                        if f >= 0:
                            val = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
                            if val > margin + lookahead * speed:
                                continue
                        _point_velocities(motion, com, verts[w, 0], verts[w, 1], verts[w, 2], u_world)
                        for jj in range(2):  # the vertex relative to the tool, tool frame: -Rᵀ u
                            for a in range(3):
                                u[jj, a] = -(rot[0, a] * u_world[jj, 0] + rot[1, a] * u_world[jj, 1]
                                             + rot[2, a] * u_world[jj, 2])
                        if f >= 0:
                            val = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
                            if val > margin and val > _reach(planes[f, 0], planes[f, 1], planes[f, 2], u, margin,
                                                             lookahead):
                                continue
                        status, d, nx, ny, nz, sep = point_vs_piece(planes, reach, start[t], mid[t], start[t + 1],
                                                                    centre[t], x, y, z, u, margin, lookahead)
                        cache[w, t] = sep
                        if status:
                            k = _env_contact(rot, verts[w], d, nx, ny, nz, friction[w], w, t, out, k)
    return k


@njit(cache=True)
def _world_box(rot, pos, lo_local, hi_local, grow, lo, hi):
    """World bounding box ``lo, hi (3,)`` (written) of a tool-frame box, grown by ``grow`` [m]."""
    for a in range(3):
        centre, half = pos[a], grow
        for b in range(3):
            centre += rot[a, b] * 0.5 * (lo_local[b] + hi_local[b])
            half += abs(rot[a, b]) * 0.5 * (hi_local[b] - lo_local[b])
        lo[a], hi[a] = centre - half, centre + half


@njit(cache=True)
def _env_contact(rot, vertex, d, nx, ny, nz, mu, w, t, out, k):
    """Write the contact of environment vertex ``w`` with tool piece ``t``: the tool's outward normal
    ``n`` (tool frame) points from the tool to the vertex, so env → tool is ``-R n`` and the tool point is
    ``vertex + d·(-R n)``."""
    gx = -(rot[0, 0] * nx + rot[0, 1] * ny + rot[0, 2] * nz)
    gy = -(rot[1, 0] * nx + rot[1, 1] * ny + rot[1, 2] * nz)
    gz = -(rot[2, 0] * nx + rot[2, 1] * ny + rot[2, 2] * nz)
    out[k, 0], out[k, 1], out[k, 2], out[k, 3] = d, gx, gy, gz
    out[k, 4], out[k, 5], out[k, 6] = vertex[0] + d * gx, vertex[1] + d * gy, vertex[2] + d * gz
    out[k, 7], out[k, 8] = mu, float((KEY_SHIFT + w) * KEY_SHIFT + t)
    return k + 1


@njit(cache=True)
def node_contacts(geo, rot, pos, motion, com, margin, lookahead, speed, cache_tool, cache_env, out):
    """All node contacts of the tool at one pose that may come within ``margin`` during the step.

    Args:
        geo: :class:`ContactGeometry`. rot: ``(3, 3)`` tool → world rotation. pos: ``(3,)`` tool origin [m].
        motion: ``(2, 6)`` the tool's twists ``[v_com, ω]`` (world) at the start and the free end of the step.
        com: ``(3,)`` world centre of mass [m]. margin: base margin [m]. lookahead: [s]; a contact is found
            when its gap is within ``margin + lookahead · closing speed`` (speculative contacts). The caller
            keeps ``margin + lookahead × speed`` within ``geo.max_margin`` (the grid's reach).
        speed: bound on the speed of every tool point in either twist [m/s].
        cache_tool: ``(Vt, E)`` int, separating-plane cache of tool vertices (-1: none); updated.
        cache_env: ``(Ve, T)`` int, separating-plane cache of environment vertices; updated.
        out: ``(N ≥ raw_capacity, 9)`` rows ``(d [m], n (3) env → tool, p (3) tool point [m], μ, key)``.

    Returns:
        The number of rows written (tool vertices in index order, then environment vertices).
    """
    cap = geo.max_margin[0]
    margin = min(margin, cap)
    k = _tool_vertices(geo, rot, pos, motion, com, margin, lookahead, speed, cache_tool, out, 0)
    return _env_vertices(geo, rot, pos, motion, com, margin, lookahead, speed, cap, cache_env, out, k)
