"""Node-space contacts in numba: tool vertices against environment pieces and environment vertices against
tool pieces (tight-tolerance paper, §II and §III-A: contact nodes ``x_i`` with a penetration depth and
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
of two wall pieces it keeps one). Edge–face and edge–edge contacts are :mod:`._kernels_edges`' (the engine step
adds them after these).
The distance checks against :func:`contactkit.collision.contacts` (COAL) are in the engine's tests.

A static part with a learned depth network (:mod:`._kernels_depthnet`) is collided through the network where the
network answers — a point inside its training domain — and through its convex pieces everywhere else: a tool
vertex inside a network's domain skips that static's pieces, and so does a static vertex inside it. So a peg set
down on a hole block's top face beyond the network's domain rests on the block's pieces instead of falling through.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from contactkit.engine._kernels_depthnet import depth_contacts, inside_domain
from contactkit.engine._kernels_geometry import (
    INFO_CENTRE,
    INFO_FRAME,
    INFO_MID,
    INFO_SIDE,
    INFO_SIDE_REACH,
    INFO_START,
    INFO_STOP,
    MAX_PER_VERTEX,
    PLANE_PHI,
    PLANE_REACH,
)
from contactkit.engine._kernels_prism import first_side_at
from contactkit.engine.layout import ROW_DISTANCE, ROW_FRICTION, ROW_KEY, ROW_NORMAL, ROW_POINT, ROW_WIDTH

DEDUPE_ANGLE = math.radians(45.0)
"""A vertex's contacts whose normals differ by less than this are one contact (the deepest is kept)."""

INTERNAL_TOL = 1e-9
"""A point more than this [m] beyond an internal face belongs to the neighbouring piece."""

KEY_SHIFT = 2**21
"""Contact keys: ``(source · 2²¹ + vertex) · 2²¹ + piece`` (source 0: tool vertex, 1: environment vertex)."""


@njit(cache=True)
def _reach(px, py, pz, u, margin, lookahead):
    """Margin [m] along the plane normal ``p``: ``margin + lookahead · closing speed`` of the point, the
    closing speed being the largest of ``-p·u_j`` (``u (6,)``: the point's velocity relative to the piece at
    the start and at the free end of the step) and 0. A point beyond it stays beyond the plane all step."""
    close = max(0.0, -(px * u[0] + py * u[1] + pz * u[2]), -(px * u[3] + py * u[4] + pz * u[5]))
    return margin + lookahead * close


@njit(cache=True)
def _side_planes(planes, info, p, dx, dy, dz, x, y, z, best, second, ib, i2):
    """The side planes of piece ``p`` facing the point, nearest azimuth first (module docstring of
    :mod:`._kernels_geometry`): a side plane's value is ``reach + ρ cos(φ_f - φ)`` with ``(ρ, φ)`` the
    point's polar coordinates about the axis, so once ``side_reach + ρ cos Δ`` cannot matter, no plane
    farther in azimuth can. Returns the updated ``(best, second, ib, i2)``."""
    side, n = int(info[p, INFO_SIDE]), int(info[p, INFO_MID] - info[p, INFO_SIDE])
    e = INFO_FRAME + 3
    s1 = dx * info[p, e] + dy * info[p, e + 1] + dz * info[p, e + 2]
    s2 = dx * info[p, e + 3] + dy * info[p, e + 4] + dz * info[p, e + 5]
    rho, angle = math.hypot(s1, s2), math.atan2(s2, s1)
    right = first_side_at(planes, side, n, angle)  # first side plane with phi >= angle
    left = right - 1
    for _ in range(n):
        dr = planes[side + right % n, PLANE_PHI] - angle + (2.0 * math.pi if right >= n else 0.0)
        dl = angle - planes[side + left % n, PLANE_PHI] + (2.0 * math.pi if left < 0 else 0.0)
        if dr <= dl:
            f, delta = side + right % n, dr
            right += 1
        else:
            f, delta = side + left % n, dl
            left -= 1
        if info[p, INFO_SIDE_REACH] + rho * math.cos(min(delta, math.pi)) <= min(best, max(second, 0.0)):
            break
        val = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
        if val > second:
            if val > best:
                second, i2, best, ib = best, ib, val, f
            else:
                second, i2 = val, f
    return best, second, ib, i2


@njit(cache=True)
def point_vs_piece(planes, info, p, x, y, z, u, margin, lookahead):
    """Signed distance of the point ``(x, y, z)`` to convex piece ``p`` of a
    :class:`~._kernels_geometry.PieceSet` ``(planes, info)`` (module docstring rules).

    Args:
        u: ``(6,)`` the point's velocities relative to the piece, at the start and free end of the step
            [m/s] (see :func:`_reach`). margin: [m]; lookahead: [s] (speculative factor × step).

    A plane's value at the point is at most ``reach + |x - centre|``: once that bound is at most
    ``min(best, max(second, 0))`` no later plane of the first group can be the largest or make the second
    positive; side planes are bounded by azimuth (:func:`_side_planes`).

    Returns:
        ``(status, d, nx, ny, nz, plane)``: status 1 is a contact whose gap ``d`` [m] may close to within
        ``margin`` during the step, with unit normal ``n`` pointing from the piece to the point; 0 is none,
        with ``plane`` a plane the point stays beyond (a separating plane to try first next time) or -1.
    """
    dx = x - info[p, INFO_CENTRE]
    dy = y - info[p, INFO_CENTRE + 1]
    dz = z - info[p, INFO_CENTRE + 2]
    radius = math.sqrt(dx * dx + dy * dy + dz * dz)
    best, second, ib, i2 = -np.inf, -np.inf, -1, -1
    for f in range(int(info[p, INFO_START]), int(info[p, INFO_SIDE])):
        if planes[f, PLANE_REACH] + radius <= min(best, max(second, 0.0)):
            break
        val = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
        if val > second:
            if val > best:
                second, i2, best, ib = best, ib, val, f
            else:
                second, i2 = val, f
    if info[p, INFO_MID] > info[p, INFO_SIDE]:
        best, second, ib, i2 = _side_planes(planes, info, p, dx, dy, dz, x, y, z, best, second, ib, i2)
    if ib < 0:
        return 0, 0.0, 0.0, 0.0, 0.0, -1
    if best > margin and best > _reach(planes[ib, 0], planes[ib, 1], planes[ib, 2], u, margin, lookahead):
        return 0, 0.0, 0.0, 0.0, 0.0, ib  # beyond the margin along a plane it keeps to all step: separated
    if i2 >= 0 and second > margin and second > _reach(planes[i2, 0], planes[i2, 1], planes[i2, 2], u, margin,
                                                       lookahead):
        return 0, 0.0, 0.0, 0.0, 0.0, i2
    for f in range(int(info[p, INFO_MID]), int(info[p, INFO_STOP])):
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
def _write_row(out, k, d, nx, ny, nz, px, py, pz, mu, key):
    """Write contact row ``k`` of ``out (N, ROW_WIDTH)`` (:mod:`contactkit.engine.layout`)."""
    out[k, ROW_DISTANCE] = d
    out[k, ROW_NORMAL], out[k, ROW_NORMAL + 1], out[k, ROW_NORMAL + 2] = nx, ny, nz
    out[k, ROW_POINT], out[k, ROW_POINT + 1], out[k, ROW_POINT + 2] = px, py, pz
    out[k, ROW_FRICTION], out[k, ROW_KEY] = mu, key


@njit(cache=True)
def shallowest_kept(kept, count):
    """Row of ``kept (≥count, ROW_WIDTH)`` with the largest signed distance among the first ``count``: the contact a
    deeper one replaces when a list is full."""
    slot = 0
    for s in range(1, count):
        if kept[s, ROW_DISTANCE] > kept[slot, ROW_DISTANCE]:
            slot = s
    return slot


@njit(cache=True)
def _keep(kept, count, d, nx, ny, nz, px, py, pz, mu, key):
    """Add a contact ``(d, n, p, mu, key)`` to one vertex's list ``kept (MAX_PER_VERTEX, ROW_WIDTH)``: the deepest
    per normal direction (:data:`DEDUPE_ANGLE`), at most :data:`MAX_PER_VERTEX`. Returns the new count."""
    cos_tol = math.cos(DEDUPE_ANGLE)
    slot = count
    for s in range(count):
        if kept[s, ROW_NORMAL] * nx + kept[s, ROW_NORMAL + 1] * ny + kept[s, ROW_NORMAL + 2] * nz >= cos_tol:
            if d >= kept[s, ROW_DISTANCE]:
                return count
            slot = s
            break
    if slot == MAX_PER_VERTEX:
        slot = shallowest_kept(kept, count)
        if d >= kept[slot, ROW_DISTANCE]:
            return count
    elif slot == count:
        count += 1
    _write_row(kept, slot, d, nx, ny, nz, px, py, pz, mu, key)
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
    """World velocities ``u (6,)`` (written: two 3-vectors) of the body point ``(x, y, z)`` for the two twists
    of ``motion (2, 6)`` (rows ``[v_com, ω]``, world) about ``com``."""
    rx, ry, rz = x - com[0], y - com[1], z - com[2]
    for j in range(2):
        u[3 * j] = motion[j, 0] + motion[j, 4] * rz - motion[j, 5] * ry
        u[3 * j + 1] = motion[j, 1] + motion[j, 5] * rx - motion[j, 3] * rz
        u[3 * j + 2] = motion[j, 2] + motion[j, 3] * ry - motion[j, 4] * rx


@njit(cache=True)
def _tool_vertices(geo, rot, pos, motion, com, margin, lookahead, speed, cache, out, k):
    """Tool vertices against the environment pieces listed in their grid cells (module docstring); ``speed``
    bounds every tool point's speed [m/s] (cheap rejection before the point's own velocity is computed)."""
    verts, planes, info = geo.tool_verts, geo.env.planes, geo.env.info
    piece_start, piece_items, friction = geo.piece_start, geo.piece_items, geo.env_friction
    origin, cell_size, dims = geo.grid_origin, geo.grid_cell[0], geo.grid_dims
    kept = np.empty((MAX_PER_VERTEX, ROW_WIDTH))
    u = np.empty(6)
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
            net = geo.env_net[e]
            if net >= 0 and inside_domain(geo.depth, net, x, y, z):
                continue  # the static's depth network answers here (module docstring)
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
            status, d, nx, ny, nz, sep = point_vs_piece(planes, info, e, x, y, z, u, margin, lookahead)
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
    verts, planes, info = geo.env_verts, geo.tool.planes, geo.tool.info
    tool_lo, tool_hi, vert_start, vert_items = geo.tool_lo, geo.tool_hi, geo.vert_start, geo.vert_items
    origin, cell_size, dims, friction = geo.grid_origin, geo.grid_cell[0], geo.grid_dims, geo.env_vert_friction
    lo, hi = np.empty(3), np.empty(3)
    c0, c1 = np.empty(3, np.int64), np.empty(3, np.int64)
    u_world, u = np.empty(6), np.empty(6)
    for t in range(info.shape[0]):
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
                        net = geo.env_vert_net[w]
                        if net >= 0 and inside_domain(geo.depth, net, verts[w, 0], verts[w, 1], verts[w, 2]):
                            continue
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
                                u[3 * jj + a] = -(rot[0, a] * u_world[3 * jj] + rot[1, a] * u_world[3 * jj + 1]
                                                  + rot[2, a] * u_world[3 * jj + 2])
                        if f >= 0:
                            val = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
                            if val > margin and val > _reach(planes[f, 0], planes[f, 1], planes[f, 2], u, margin,
                                                             lookahead):
                                continue
                        status, d, nx, ny, nz, sep = point_vs_piece(planes, info, t, x, y, z, u, margin, lookahead)
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
    _write_row(out, k, d, gx, gy, gz, vertex[0] + d * gx, vertex[1] + d * gy, vertex[2] + d * gz, mu,
               float((KEY_SHIFT + w) * KEY_SHIFT + t))
    return k + 1


@njit(cache=True)
def node_contacts(geo, rot, pos, motion, com, margin, lookahead, speed, cache_tool, cache_env, out):
    """All node contacts of the tool at one pose that may come within ``margin`` during the step.

    Args:
        geo: :class:`~._kernels_geometry.ContactGeometry`.
        rot: ``(3, 3)`` tool → world rotation. pos: ``(3,)`` tool origin [m].
        motion: ``(2, 6)`` the tool's twists ``[v_com, ω]`` (world) at the start and the free end of the step.
        com: ``(3,)`` world centre of mass [m]. margin: base margin [m]. lookahead: [s]; a contact is found
            when its gap is within ``margin + lookahead · closing speed`` (speculative contacts). The caller
            keeps ``margin + lookahead × speed`` within ``geo.max_margin`` (the grid's reach).
        speed: bound on the speed of every tool point in either twist [m/s].
        cache_tool: ``(Vt, E)`` int, separating-plane cache of tool vertices (-1: none); updated.
        cache_env: ``(Ve, T)`` int, separating-plane cache of environment vertices; updated.
        out: ``(N ≥ raw_capacity, ROW_WIDTH)`` contact rows (:mod:`contactkit.engine.layout`): ``d`` [m], ``n``
            env → tool, ``p`` on the tool [m], ``μ``, key.

    Returns:
        The number of rows written (tool vertices in index order, then environment vertices, then the tool's
        surface nodes against the statics' depth networks, :func:`._kernels_depthnet.depth_contacts`).
    """
    cap = geo.max_margin[0]
    margin = min(margin, cap)
    k = _tool_vertices(geo, rot, pos, motion, com, margin, lookahead, speed, cache_tool, out, 0)
    k = _env_vertices(geo, rot, pos, motion, com, margin, lookahead, speed, cap, cache_env, out, k)
    return depth_contacts(geo.depth, rot, pos, motion, com, margin, lookahead, speed, out, k)
