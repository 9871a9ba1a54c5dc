"""Edge contacts in numba: environment edges against tool pieces and tool edges against environment pieces — the
edge–face and edge–edge contacts the node contacts (:mod:`._kernels_contacts`, vertices only) miss, e.g. a slot's
top edge pressed into the side of a tool none of whose vertices is inside the slot.

For a segment ``x(t) = x_0 + t s``, ``t ∈ [0, 1]``, against a convex piece with external planes ``a_f(x) = m_f·x -
o_f``, the function ``F(t) = max_f a_f(x(t))`` is convex and piecewise linear: it is the segment point's signed
distance to the piece where negative (exact) and a lower bound of it where positive. :func:`segment_minimum` walks
its upper envelope from ``t = 0`` to its minimum (each step: the next line of larger slope to cross the current
one). The minimum is

* at an end (``t = 0`` or ``1``): a vertex, which the node contacts already collide — no edge contact;
* at a kink between planes ``m_1`` (left) and ``m_2`` (right): the segment crosses the piece's edge line
  ``m_1 × m_2`` — an *edge–edge* contact, normal ``n ∝ (m_1 × m_2) × s`` (the common normal of the two lines,
  pointing out of the piece), distance ``d = (x - q)·n`` with ``q = x + α m_1 + β m_2`` the point of the edge line
  (``[1 c; c 1][α; β] = -[a_1; a_2]``, ``c = m_1·m_2``): the exact line–line distance, signed;
* on a line of slope ``|m·s| ≤ FLAT_SINE |s|``, a range ``[t_lo, t_hi]``: the segment lies along face ``m`` — an
  *edge–face* contact at each end of the range inside the segment, normal ``m``, ``d = a_m``.

Environment edges (tool frame) against tool pieces give both kinds; tool edges against environment pieces give only
edge–face contacts, since a crossing of a tool edge with an environment edge is the environment edge's kink. A
point beyond one of the piece's internal faces gives no contact (the neighbour's region, as for vertices), nor does a
point in a static's depth-network domain (the network answers there). Speculative margins as for vertices
(:func:`._kernels_contacts._reach`). Each pair keeps a separating-plane cache: a plane both ends of the segment lie
beyond by more than the margin.

Cost: a tool piece meets only the environment pieces whose boxes meet its own and that a face plane of either does
not separate by more than the limit (:mod:`._kernels_pairs`: bounding volumes, a plane cache and a travel bound
per piece pair), and only their edges are collided; against a fine prism (a peg's 64 sides) a segment's envelope is
walked on the side planes facing it (:mod:`._kernels_prism`), where that provably gives the same minimum.

Contact keys ``(source · 2²¹ + edge) · 2²¹ + piece`` with source 3 / 4
(environment edge, the range's first / second end) and 5 / 6 (tool edge); 0–2 are the vertices' and the depth
networks' (:data:`._kernels_depthnet.KEY_SOURCE`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from contactkit.engine._edge_geometry import RANGE_SHARP, RANGE_STOP
from contactkit.engine._kernels_contacts import (
    INTERNAL_TOL,
    KEY_SHIFT,
    _point_velocities,
    _reach,
    _world_box,
    _write_row,
    shallowest_kept,
)
from contactkit.engine._kernels_depthnet import inside_domain
from contactkit.engine._kernels_geometry import INFO_MID, INFO_START, INFO_STOP, MAX_PER_EDGE
from contactkit.engine._kernels_pairs import MOTION_WIDTH, NO_PLANE, PairCache, near_box, near_pieces, track
from contactkit.engine._kernels_prism import WINDOW_CAPACITY, side_window, window_holds
from contactkit.engine.layout import ROW_DISTANCE, ROW_WIDTH

FLAT_SINE = 1e-3
"""A segment at most this sine of an angle off a face's plane lies along it (an edge–face range)."""

END_RTOL = 1e-6
"""A minimum within this fraction of the segment's length of an end is that end's vertex: no edge contact."""

COMMON_NORMAL_MIN = 1e-9
"""Below this ``|(m_1 × m_2) × ŝ|`` the common normal is undefined: the contact takes the right plane's normal."""


@njit(cache=True)
def _line(planes, f, x0, y0, z0, sx, sy, sz):
    """Value at ``t = 0`` and slope of plane ``f`` along the segment."""
    a = planes[f, 0] * x0 + planes[f, 1] * y0 + planes[f, 2] * z0 - planes[f, 3]
    return a, planes[f, 0] * sx + planes[f, 1] * sy + planes[f, 2] * sz


@njit(cache=True)
def _next_line(planes, f0, f1, x0, y0, z0, sx, sy, sz, a_cur, b_cur, t):
    """The line of planes ``f0:f1`` that takes over the envelope from line ``(a_cur, b_cur)`` after ``t``: the
    first to cross it among the steeper ones (ties: the steepest). Returns ``(line, t_cross, a, b)``, line -1 if
    none."""
    best, t_best, a_best, b_best = -1, np.inf, 0.0, 0.0
    for g in range(f0, f1):
        a, b = _line(planes, g, x0, y0, z0, sx, sy, sz)
        if b <= b_cur:
            continue
        tg = max((a_cur - a) / (b - b_cur), t)
        if tg < t_best or (tg == t_best and b > b_best):
            best, t_best, a_best, b_best = g, tg, a, b
    return best, t_best, a_best, b_best


@njit(cache=True)
def segment_minimum(planes, f0, f1, x0, y0, z0, sx, sy, sz, flat):
    """Where ``F(t) = max_{f0 ≤ f < f1} (m_f·(x_0 + t s) - o_f)`` is least on ``[0, 1]`` (module docstring).

    Args:
        planes: ``(P, ≥4)`` rows ``(m, o)``. f0, f1: the plane range. x0..: segment start [m]; sx..: ``s`` [m].
        flat: slope [m] at or below which a line is flat (``FLAT_SINE · |s|``).

    Returns:
        ``(t_lo, t_hi, left, right, flat_line)``: a kink or end at ``t_lo = t_hi`` between lines ``left`` and
        ``right`` (-1 where the segment ends), or a flat range ``[t_lo, t_hi]`` on ``flat_line`` (else -1) with
        ``left`` before it and ``right`` after it.
    """
    cur, a_cur, b_cur = -1, -np.inf, 0.0
    for f in range(f0, f1):
        a, b = _line(planes, f, x0, y0, z0, sx, sy, sz)
        if a > a_cur or (a == a_cur and b > b_cur):
            cur, a_cur, b_cur = f, a, b
    t, prev = 0.0, -1
    while b_cur < -flat:
        nxt, t_next, a_next, b_next = _next_line(planes, f0, f1, x0, y0, z0, sx, sy, sz, a_cur, b_cur, t)
        if nxt < 0 or t_next >= 1.0:
            return 1.0, 1.0, cur, -1, -1
        prev, cur, a_cur, b_cur, t = cur, nxt, a_next, b_next, t_next
    if b_cur > flat:
        return t, t, prev, cur, -1
    nxt, t_next, _, _ = _next_line(planes, f0, f1, x0, y0, z0, sx, sy, sz, a_cur, b_cur, t)
    if nxt < 0 or t_next >= 1.0:
        return t, 1.0, prev, -1, cur
    return t, t_next, prev, nxt, cur


@njit(cache=True)
def _feature(planes, info, p, x0, y0, z0, sx, sy, sz, t, left, right, flat_line):
    """The contact of the segment point ``x(t)`` with piece ``p`` (module docstring): ``(ok, d, nx, ny, nz, x, y,
    z)``, ``n`` out of the piece; not ok beyond an internal face."""
    x, y, z = x0 + t * sx, y0 + t * sy, z0 + t * sz
    for f in range(int(info[p, INFO_MID]), int(info[p, INFO_STOP])):
        if planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3] > INTERNAL_TOL:
            return False, 0.0, 0.0, 0.0, 0.0, x, y, z
    f = flat_line if flat_line >= 0 else right
    nx, ny, nz = planes[f, 0], planes[f, 1], planes[f, 2]
    d = nx * x + ny * y + nz * z - planes[f, 3]
    if flat_line >= 0 or left < 0:
        return True, d, nx, ny, nz, x, y, z
    mx, my, mz = planes[left, 0], planes[left, 1], planes[left, 2]
    ex, ey, ez = my * nz - mz * ny, mz * nx - mx * nz, mx * ny - my * nx  # m_1 × m_2 (left × right)
    cx, cy, cz = ey * sz - ez * sy, ez * sx - ex * sz, ex * sy - ey * sx  # (m_1 × m_2) × s
    size = math.sqrt(cx * cx + cy * cy + cz * cz)
    if size <= COMMON_NORMAL_MIN * math.sqrt(sx * sx + sy * sy + sz * sz):
        return True, d, nx, ny, nz, x, y, z
    cx, cy, cz = cx / size, cy / size, cz / size
    if cx * (mx + nx) + cy * (my + ny) + cz * (mz + nz) < 0.0:
        cx, cy, cz = -cx, -cy, -cz
    a1 = mx * x + my * y + mz * z - planes[left, 3]
    c = mx * nx + my * ny + mz * nz
    alpha, beta = (-a1 + c * d) / (1.0 - c * c), (-d + c * a1) / (1.0 - c * c)
    dist = -(alpha * (mx * cx + my * cy + mz * cz) + beta * (nx * cx + ny * cy + nz * cz))
    return True, dist, cx, cy, cz, x, y, z


@njit(cache=True)
def _separating(planes, f1, f2, f3, x0, y0, z0, sx, sy, sz, limit):
    """A plane among ``f1, f2, f3`` (-1: none) both ends of the segment lie beyond by more than ``limit``, or -1."""
    for f in (f1, f2, f3):
        if f >= 0:
            a, b = _line(planes, f, x0, y0, z0, sx, sy, sz)
            if a > limit and a + b > limit:
                return f
    return -1


@njit(cache=True)
def _cached_apart(planes, f, x0, y0, z0, sx, sy, sz, limit):
    """Whether cached plane ``f`` (-1: none) still has both ends of the segment beyond ``limit``."""
    if f < 0:
        return False
    a, b = _line(planes, f, x0, y0, z0, sx, sy, sz)
    return a > limit and a + b > limit


@njit(cache=True)
def _envelope_minimum(planes, info, p, x0, y0, z0, sx, sy, sz, flat, limit, table, rows):
    """:func:`segment_minimum` of piece ``p``'s external planes, on the side planes facing the segment when the
    piece is a prism and the result provably the same (:mod:`._kernels_prism`; ``table, rows``: its scratch);
    indices are rows of ``planes``."""
    count, left_out, right_out = side_window(planes, info, p, x0, y0, z0, sx, sy, sz, table, rows)
    if count:
        t_lo, t_hi, left, right, flat_line = segment_minimum(table, 0, count, x0, y0, z0, sx, sy, sz, flat)
        left, right = rows[left] if left >= 0 else -1, rows[right] if right >= 0 else -1
        flat_line = rows[flat_line] if flat_line >= 0 else -1
        top = flat_line if flat_line >= 0 else (right if right >= 0 else left)
        a, b = _line(planes, top, x0, y0, z0, sx, sy, sz)
        if a + t_lo * b > limit:  # the true envelope is no lower: nothing within the limit
            return t_lo, t_hi, left, right, flat_line
        holds = True
        for t in (t_lo, t_hi):
            holds = holds and window_holds(planes, info, p, x0 + t * sx, y0 + t * sy, z0 + t * sz, a + t * b,
                                           left_out, right_out)
        if holds:
            return t_lo, t_hi, left, right, flat_line
    return segment_minimum(planes, int(info[p, INFO_START]), int(info[p, INFO_MID]), x0, y0, z0, sx, sy, sz, flat)


@njit(cache=True)
def _segment_features(planes, info, p, x0, y0, z0, sx, sy, sz, limit, kinks, feats, table, rows):
    """The candidate contacts of a segment against piece ``p`` written to ``feats (2, 8)``, rows ``(d, nx, ny, nz,
    x, y, z, end)`` (``end`` 0 / 1: the range's first / second end); kink contacts only when ``kinks``
    (``table, rows``: scratch of :func:`_envelope_minimum`). Returns ``(count, separating plane or -1)``."""
    length = math.sqrt(sx * sx + sy * sy + sz * sz)
    t_lo, t_hi, left, right, flat_line = _envelope_minimum(planes, info, p, x0, y0, z0, sx, sy, sz,
                                                           FLAT_SINE * length, limit, table, rows)
    top = flat_line if flat_line >= 0 else (right if right >= 0 else left)
    a, b = _line(planes, top, x0, y0, z0, sx, sy, sz)
    if a + t_lo * b > limit:
        return 0, _separating(planes, left, right, flat_line, x0, y0, z0, sx, sy, sz, limit)
    if flat_line < 0 and not kinks:
        return 0, -1
    n = 0
    for end, t in enumerate((t_lo, t_hi)):
        if (end == 1 and flat_line < 0) or t <= END_RTOL or t >= 1.0 - END_RTOL:
            continue
        ok, d, nx, ny, nz, x, y, z = _feature(planes, info, p, x0, y0, z0, sx, sy, sz, t, left, right, flat_line)
        if ok and d <= limit:
            feats[n, 0], feats[n, 1], feats[n, 2], feats[n, 3] = d, nx, ny, nz
            feats[n, 4], feats[n, 5], feats[n, 6], feats[n, 7] = x, y, z, end
            n += 1
    return n, -1


@njit(cache=True)
def _env_edge_features(planes, info, ends, w, t, rot, pos, limit, cache, q, feats, table, rows):
    """Environment edge ``w`` (world ``ends``) against tool piece ``t`` in the tool frame: its candidate contacts in
    ``feats`` (:func:`_segment_features`; ``q (6,)`` scratch: the edge in the tool frame). Returns their count."""
    for j in range(2):
        wx, wy, wz = ends[w, 3 * j] - pos[0], ends[w, 3 * j + 1] - pos[1], ends[w, 3 * j + 2] - pos[2]
        for a in range(3):
            q[3 * j + a] = rot[0, a] * wx + rot[1, a] * wy + rot[2, a] * wz
    sx, sy, sz = q[3] - q[0], q[4] - q[1], q[5] - q[2]
    if _cached_apart(planes, cache[w, t], q[0], q[1], q[2], sx, sy, sz, limit):
        return 0
    n, sep = _segment_features(planes, info, t, q[0], q[1], q[2], sx, sy, sz, limit, True, feats, table, rows)
    cache[w, t] = sep
    return n


@njit(cache=True)
def _env_edge_rows(depth, net, mu, w, t, n, feats, rot, pos, motion, com, margin, lookahead, out, k, u_world, u):
    """The contact rows of environment edge ``w``'s ``n`` candidates ``feats`` (tool frame) against tool piece ``t``
    (``net``: its static's depth network or -1, ``mu``: its friction). Returns the new row count."""
    for i in range(n):
        d, nx, ny, nz = feats[i, 0], feats[i, 1], feats[i, 2], feats[i, 3]
        x, y, z = feats[i, 4], feats[i, 5], feats[i, 6]
        px = pos[0] + rot[0, 0] * x + rot[0, 1] * y + rot[0, 2] * z
        py = pos[1] + rot[1, 0] * x + rot[1, 1] * y + rot[1, 2] * z
        pz = pos[2] + rot[2, 0] * x + rot[2, 1] * y + rot[2, 2] * z
        if net >= 0 and inside_domain(depth, net, px, py, pz):
            continue
        _point_velocities(motion, com, px, py, pz, u_world)
        for jj in range(2):  # the environment point relative to the tool, tool frame: -Rᵀ u
            for a in range(3):
                u[3 * jj + a] = -(rot[0, a] * u_world[3 * jj] + rot[1, a] * u_world[3 * jj + 1]
                                  + rot[2, a] * u_world[3 * jj + 2])
        if d > margin and d > _reach(nx, ny, nz, u, margin, lookahead):
            continue
        gx = -(rot[0, 0] * nx + rot[0, 1] * ny + rot[0, 2] * nz)
        gy = -(rot[1, 0] * nx + rot[1, 1] * ny + rot[1, 2] * nz)
        gz = -(rot[2, 0] * nx + rot[2, 1] * ny + rot[2, 2] * nz)
        key = ((3.0 + feats[i, 7]) * KEY_SHIFT + w) * KEY_SHIFT + t
        _write_row(out, k, d, gx, gy, gz, px + d * gx, py + d * gy, pz + d * gz, mu, key)
        k += 1
    return k


@njit(cache=True)
def _env_edges(geo, t, near, n_near, stop, lo, hi, rot, pos, motion, com, margin, lookahead, limit, cache, out, k,
               scratch):
    """The edges ``range[p, 0]:range[p, stop]`` of the environment pieces ``p`` in ``near[:n_near]`` whose boxes
    meet tool piece ``t``'s world box ``lo, hi`` (grown by the limit), against it. ``scratch``: ``(q (6,), feats
    (2, 8), u_world (6,), u (6,), table (WINDOW_CAPACITY, 4), rows (WINDOW_CAPACITY,))``. Returns the new row
    count."""
    ends, ranges, planes, info = geo.edges.env, geo.edges.env_range, geo.tool.planes, geo.tool.info
    q, feats, u_world, u, table, rows = scratch
    for i in range(n_near):
        p = near[i]
        for w in range(ranges[p, 0], ranges[p, stop]):
            meets = True
            for a in range(3):
                meets = meets and min(ends[w, a], ends[w, 3 + a]) <= hi[a] and max(ends[w, a], ends[w, 3 + a]) >= lo[a]
            if not meets:
                continue
            n = _env_edge_features(planes, info, ends, w, t, rot, pos, limit, cache, q, feats, table, rows)
            if n:
                k = _env_edge_rows(geo.depth, geo.env_net[p], geo.env_friction[p], w, t, n, feats, rot, pos, motion,
                                   com, margin, lookahead, out, k, u_world, u)
    return k


@njit(cache=True)
def _tool_edge_keep(depth, net, mu, e, p, n, feats, motion, com, margin, lookahead, kept, count, u):
    """Tool edge ``e``'s ``n`` candidates ``feats`` (world) against environment piece ``p`` added to ``kept`` (the
    deepest :data:`MAX_PER_EDGE`; ``net``, ``mu`` as :func:`_env_edge_rows`'). Returns the new count."""
    for i in range(n):
        d, nx, ny, nz = feats[i, 0], feats[i, 1], feats[i, 2], feats[i, 3]
        x, y, z = feats[i, 4], feats[i, 5], feats[i, 6]
        if net >= 0 and inside_domain(depth, net, x, y, z):
            continue
        _point_velocities(motion, com, x, y, z, u)
        if d > margin and d > _reach(nx, ny, nz, u, margin, lookahead):
            continue
        slot = count
        if count == MAX_PER_EDGE:
            slot = shallowest_kept(kept, count)
            if d >= kept[slot, ROW_DISTANCE]:
                continue
        else:
            count += 1
        key = ((5.0 + feats[i, 7]) * KEY_SHIFT + e) * KEY_SHIFT + p
        _write_row(kept, slot, d, nx, ny, nz, x, y, z, mu, key)
    return count


@njit(cache=True)
def _tool_edges(geo, t, near, n_near, stop, rot, pos, motion, com, margin, lookahead, limit, cache, out, k, kept,
                scratch):
    """The edges ``range[t, 0]:range[t, stop]`` of tool piece ``t`` (world) against the environment pieces
    ``near[:n_near]`` whose boxes grown by the limit meet theirs; each edge keeps its deepest :data:`MAX_PER_EDGE`
    contacts (``kept``); an edge outside the pieces' tool-frame box (:func:`._kernels_pairs.near_box`) is skipped.
    ``scratch`` as :func:`_env_edges`' (``u_world`` holds that box). Returns the new row count."""
    ed, planes, info = geo.edges, geo.env.planes, geo.env.info
    ends, piece_lo, piece_hi = ed.tool, ed.piece_lo, ed.piece_hi
    q, feats, box, u, table, rows = scratch
    near_box(near, n_near, piece_lo, piece_hi, limit, rot, pos, box)
    for e in range(ed.tool_range[t, 0], ed.tool_range[t, stop]):
        meets = True
        for a in range(3):
            meets = (meets and min(ends[e, a], ends[e, 3 + a]) <= box[3 + a]
                     and max(ends[e, a], ends[e, 3 + a]) >= box[a])
        if not meets:
            continue
        for j in range(2):
            lx, ly, lz = ends[e, 3 * j], ends[e, 3 * j + 1], ends[e, 3 * j + 2]
            for a in range(3):
                q[3 * j + a] = pos[a] + rot[a, 0] * lx + rot[a, 1] * ly + rot[a, 2] * lz
        sx, sy, sz = q[3] - q[0], q[4] - q[1], q[5] - q[2]
        count = 0
        for i in range(n_near):
            p = near[i]
            apart = False
            for a in range(3):
                apart = apart or (min(q[a], q[3 + a]) > piece_hi[p, a] + limit
                                  or max(q[a], q[3 + a]) < piece_lo[p, a] - limit)
            if apart or _cached_apart(planes, cache[e, p], q[0], q[1], q[2], sx, sy, sz, limit):
                continue
            n, sep = _segment_features(planes, info, p, q[0], q[1], q[2], sx, sy, sz, limit, False, feats, table,
                                       rows)
            cache[e, p] = sep
            if n:
                count = _tool_edge_keep(geo.depth, geo.env_net[p], geo.env_friction[p], e, p, n, feats, motion, com,
                                        margin, lookahead, kept, count, u)
        for s in range(count):
            out[k] = kept[s]
            k += 1
    return k


@njit(cache=True)
def edge_contacts(geo, rot, pos, motion, com, margin, lookahead, speed, all_edges, cache_env, cache_tool, out, k,
                  cache_pair=None):
    """The edge contacts of the tool at one pose that may come within ``margin`` during the step, appended to
    ``out`` from row ``k`` (module docstring). Per tool piece, the environment pieces whose boxes meet its own and
    that :func:`._kernels_pairs.pieces_apart` does not reject: their edges against it, then its edges against them.

    Args:
        geo: :class:`~._kernels_geometry.ContactGeometry`. rot, pos, motion, com, margin, lookahead, speed: as
            :func:`._kernels_contacts.node_contacts` takes them.
        all_edges: every edge (the penetration check), or the sharp ones only (a step;
            :mod:`contactkit.engine._edge_geometry`).
        cache_env: ``(Ee, T)`` int64 separating-plane cache of environment edges against tool pieces (-1: none);
            cache_tool: ``(Et, E)`` of tool edges against environment pieces; both updated.
        out: ``(N ≥ raw_capacity, ROW_WIDTH)`` contact rows (:mod:`contactkit.engine.layout`).
        cache_pair: :class:`~._kernels_pairs.PairCache` of the piece pairs, updated; None: a fresh one.

    Returns:
        The number of rows in ``out``.
    """
    if cache_pair is None:
        gap = np.zeros((geo.env.info.shape[0], geo.tool.info.shape[0], 3))
        gap[:, :, 0] = -np.inf
        pairs = PairCache(np.full((geo.env.info.shape[0], geo.tool.info.shape[0]), NO_PLANE, np.int64), gap,
                          np.zeros(MOTION_WIDTH))
    else:
        pairs = cache_pair
    moved, turned = track(pairs.motion, rot, pos)
    margin = min(margin, geo.max_margin[0])
    limit = margin + lookahead * speed
    stop = RANGE_STOP if all_edges else RANGE_SHARP
    ed = geo.edges
    lo, hi = np.empty(3), np.empty(3)
    near = np.empty(geo.env.info.shape[0], np.int64)
    kept = np.empty((MAX_PER_EDGE, ROW_WIDTH))
    scratch = (np.empty(6), np.empty((2, 8)), np.empty(6), np.empty(6), np.empty((WINDOW_CAPACITY, 4)),
               np.empty(WINDOW_CAPACITY, np.int64))
    for t in range(geo.tool.info.shape[0]):
        _world_box(rot, pos, geo.tool_lo[t], geo.tool_hi[t], max(limit, 0.0), lo, hi)
        n_near = near_pieces(geo.env, geo.tool, ed.env_bounds, ed.tool_bounds, ed.piece_lo, ed.piece_hi, t, lo, hi,
                              rot, pos, limit, pairs, moved, turned, near)
        if n_near:
            k = _env_edges(geo, t, near, n_near, stop, lo, hi, rot, pos, motion, com, margin, lookahead, limit,
                           cache_env, out, k, scratch)
            k = _tool_edges(geo, t, near, n_near, stop, rot, pos, motion, com, margin, lookahead, limit, cache_tool,
                            out, k, kept, scratch)
    return k
