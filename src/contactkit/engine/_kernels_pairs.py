"""Piece-pair rejection in numba: whether a tool piece and an environment piece stay farther apart than a limit
at one pose, so that none of their vertices and edges can touch (:mod:`._kernels_edges`, and the end-of-step
penetration check of :class:`contactkit.engine.world.EngineWorld`).

A face plane ``m·x ≤ o`` of either piece separates the pair by more than ``limit`` when every point of the other
piece lies beyond it by more than ``limit``: ``min_v m·v - o > limit`` over the other piece's vertices. The
minimum is bounded below through the other piece's bounding volumes (:func:`._edge_geometry.piece_bounds`: its
box in its own frame, the cylinder about its axis, its axis-aligned box), ``min_v m·v ≥ -support(-m)`` — a few
flops a plane, no loop over vertices. A pair keeps the plane that last separated it (the cache, as the vertices'
and edges' own); when it no longer does, the pair's face planes are searched (first the environment piece's,
then the tool piece's) for one that does. The rejection is conservative: a rejected pair has no point of one
piece within ``limit`` of the other, so no vertex or edge contact within ``limit`` (a separating axis that is no
face normal — two edges' cross product — is not tried: such a pair is collided edge by edge).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from contactkit.engine._edge_geometry import (
    BOUND_AXES,
    BOUND_BOX_CENTRE,
    BOUND_BOX_HALF,
    BOUND_CENTRE,
    BOUND_HALF,
    BOUND_RADIUS,
    BOUND_REACH,
)
from contactkit.engine._kernels_contacts import _world_box
from contactkit.engine._kernels_geometry import (
    INFO_CENTRE,
    INFO_FRAME,
    INFO_MID,
    INFO_SIDE,
    INFO_START,
    INFO_STOP,
)
from contactkit.engine._kernels_prism import first_side_at

SIDE_WINDOW = 2
"""A prism's side planes tried for a pair (:func:`pieces_apart`): this many each way of the azimuth that faces the
other piece (a fine polygon's others face away from it)."""

RESEARCH_TRAVEL = 1e-5
"""A pair none of whose planes separated it when last measured is measured again once the tool has travelled this
far [m] (translation plus rotation times the tool piece's reach), or once its best plane may separate it —
touching pieces stay touching from step to step; until then it is taken as touching (a pair left unrejected is
collided edge by edge: slower, never wrong)."""

NO_PLANE = -1
"""Pair cache entry: no separating plane known. An entry ``f ≥ 0`` is environment plane ``f``; ``f ≤ -2`` is tool
plane ``-f - 2`` (rows of :attr:`~._kernels_geometry.PieceSet.planes`)."""

MOTION_POS, MOTION_ROT, MOTION_MOVED, MOTION_TURNED, MOTION_SET, MOTION_WIDTH = 0, 3, 12, 13, 14, 15
"""Columns of :attr:`PairCache.motion`: the last pose queried (origin (3) [m], rotation (9)), the running totals
of its translation [m] and rotation (Frobenius norm of the change of the rotation matrix), whether set."""


class PairCache(NamedTuple):
    """The piece pairs' separating planes and gaps, carried from query to query (module docstring).

    Attributes:
        plane: ``(E, T)`` int64 the pair's plane (:data:`NO_PLANE` and the encoding there).
        gap: ``(E, T, 3)`` its gap bound [m] when last measured (``-inf``: never) and the travel totals then.
        motion: ``(MOTION_WIDTH,)`` the tool's last pose and travel totals (:func:`track`).
    """

    plane: np.ndarray
    gap: np.ndarray
    motion: np.ndarray


def pair_cache(n_env: int, n_tool: int) -> PairCache:
    """An empty :class:`PairCache` of ``n_env`` environment and ``n_tool`` tool pieces."""
    gap = np.zeros((n_env, n_tool, 3))
    gap[:, :, 0] = -np.inf
    return PairCache(np.full((n_env, n_tool), NO_PLANE, np.int64), gap, np.zeros(MOTION_WIDTH))


@njit(cache=True)
def support(bounds, i, nx, ny, nz):
    """An upper bound [m] of ``max_v n·v`` over the vertices of piece ``i`` (``bounds (N, BOUND_WIDTH)``, in the
    frame of ``n``): the least of its bounding volumes' supports (module docstring)."""
    c = nx * bounds[i, BOUND_CENTRE] + ny * bounds[i, BOUND_CENTRE + 1] + nz * bounds[i, BOUND_CENTRE + 2]
    na = nx * bounds[i, BOUND_AXES] + ny * bounds[i, BOUND_AXES + 1] + nz * bounds[i, BOUND_AXES + 2]
    n1 = nx * bounds[i, BOUND_AXES + 3] + ny * bounds[i, BOUND_AXES + 4] + nz * bounds[i, BOUND_AXES + 5]
    n2 = nx * bounds[i, BOUND_AXES + 6] + ny * bounds[i, BOUND_AXES + 7] + nz * bounds[i, BOUND_AXES + 8]
    along = abs(na) * bounds[i, BOUND_HALF]
    box = along + abs(n1) * bounds[i, BOUND_HALF + 1] + abs(n2) * bounds[i, BOUND_HALF + 2]
    cylinder = along + bounds[i, BOUND_RADIUS] * math.sqrt(max(n1 * n1 + n2 * n2, 0.0))
    aligned = (nx * bounds[i, BOUND_BOX_CENTRE] + ny * bounds[i, BOUND_BOX_CENTRE + 1]
               + nz * bounds[i, BOUND_BOX_CENTRE + 2] + abs(nx) * bounds[i, BOUND_BOX_HALF]
               + abs(ny) * bounds[i, BOUND_BOX_HALF + 1] + abs(nz) * bounds[i, BOUND_BOX_HALF + 2])
    return min(c + min(box, cylinder), aligned)


@njit(cache=True)
def _env_plane_gap(env_planes, tool_bounds, f, t, rot, pos):
    """Lower bound [m] of how far every point of tool piece ``t`` lies beyond environment plane ``f`` (world)."""
    planes = env_planes
    mx, my, mz = planes[f, 0], planes[f, 1], planes[f, 2]
    ax = -(rot[0, 0] * mx + rot[1, 0] * my + rot[2, 0] * mz)  # -Rᵀ m: the direction in the tool frame
    ay = -(rot[0, 1] * mx + rot[1, 1] * my + rot[2, 1] * mz)
    az = -(rot[0, 2] * mx + rot[1, 2] * my + rot[2, 2] * mz)
    return mx * pos[0] + my * pos[1] + mz * pos[2] - planes[f, 3] - support(tool_bounds, t, ax, ay, az)


@njit(cache=True)
def _tool_plane_gap(tool_planes, env_bounds, g, p, rot, pos):
    """Lower bound [m] of how far every point of environment piece ``p`` lies beyond tool plane ``g``."""
    planes = tool_planes
    mx, my, mz = planes[g, 0], planes[g, 1], planes[g, 2]
    nx = rot[0, 0] * mx + rot[0, 1] * my + rot[0, 2] * mz  # R m: the plane's normal in the world
    ny = rot[1, 0] * mx + rot[1, 1] * my + rot[1, 2] * mz
    nz = rot[2, 0] * mx + rot[2, 1] * my + rot[2, 2] * mz
    return -support(env_bounds, p, -nx, -ny, -nz) - (nx * pos[0] + ny * pos[1] + nz * pos[2]) - planes[g, 3]


@njit(cache=True)
def _plane_gap(env, tool, env_bounds, tool_bounds, plane, t, p, rot, pos):
    """The gap bound of a pair cache entry ``plane`` (:data:`NO_PLANE`: ``-inf``)."""
    if plane >= 0:
        return _env_plane_gap(env.planes, tool_bounds, plane, t, rot, pos)
    if plane <= -2:
        return _tool_plane_gap(tool.planes, env_bounds, -plane - 2, p, rot, pos)
    return -np.inf


@njit(cache=True)
def _facing_side(tool, env_bounds, t, p, rot, pos):
    """The side plane of tool piece ``t`` (a prism, :mod:`._kernels_geometry`) first in azimuth at or after the
    direction from its centre to environment piece ``p``'s centre, as an offset in its side planes."""
    info, planes, b = tool.info, tool.planes, env_bounds
    wx, wy, wz = b[p, BOUND_CENTRE] - pos[0], b[p, BOUND_CENTRE + 1] - pos[1], b[p, BOUND_CENTRE + 2] - pos[2]
    d = np.empty(3)
    for a in range(3):
        d[a] = rot[0, a] * wx + rot[1, a] * wy + rot[2, a] * wz - info[t, INFO_CENTRE + a]
    e = INFO_FRAME + 3
    s1 = d[0] * info[t, e] + d[1] * info[t, e + 1] + d[2] * info[t, e + 2]
    s2 = d[0] * info[t, e + 3] + d[1] * info[t, e + 4] + d[2] * info[t, e + 5]
    angle, side = math.atan2(s2, s1), int(info[t, INFO_SIDE])
    return first_side_at(planes, side, int(info[t, INFO_MID]) - side, angle)


@njit(cache=True)
def _tool_planes_gap(tool, env_bounds, t, p, rot, pos, limit, best, arg):
    """The best gap bound ``(best, arg)`` over tool piece ``t``'s planes, stopping at one beyond ``limit``: all
    but its side planes, of which the :data:`SIDE_WINDOW` each way of the azimuth facing piece ``p``."""
    info = tool.info
    start, side, mid, stop = int(info[t, INFO_START]), int(info[t, INFO_SIDE]), int(info[t, INFO_MID]), int(
        info[t, INFO_STOP])
    n = mid - side
    first = _facing_side(tool, env_bounds, t, p, rot, pos) if n > 2 * SIDE_WINDOW else SIDE_WINDOW
    count = min(n, 2 * SIDE_WINDOW)
    for i in range(stop - start - n + count):
        if i < side - start:
            g = start + i
        elif i < side - start + count:
            g = side + (first - SIDE_WINDOW + i - (side - start)) % n
        else:
            g = mid + i - (side - start + count)
        gap = _tool_plane_gap(tool.planes, env_bounds, g, p, rot, pos)
        if gap > best:
            best, arg = gap, -g - 2
            if gap > limit:
                break
    return best, arg


@njit(cache=True)
def _search(env, tool, env_bounds, tool_bounds, t, p, rot, pos, limit):
    """The best face plane of the pair (cache encoding) and its gap bound [m], stopping at one beyond ``limit``."""
    best, arg = -np.inf, NO_PLANE
    for f in range(int(env.info[p, INFO_START]), int(env.info[p, INFO_STOP])):
        gap = _env_plane_gap(env.planes, tool_bounds, f, t, rot, pos)
        if gap > best:
            best, arg = gap, f
            if gap > limit:
                return best, arg
    return _tool_planes_gap(tool, env_bounds, t, p, rot, pos, limit, best, arg)


@njit(cache=True)
def track(motion, rot, pos):
    """Record the tool's pose in ``motion (MOTION_WIDTH,)`` (module docstring), adding its translation ``|Δpos|``
    [m] and rotation ``‖ΔR‖_F`` since the last recorded pose to the running totals; returns them."""
    if motion[MOTION_SET] != 0.0:
        moved, turned = 0.0, 0.0
        for a in range(3):
            moved += (pos[a] - motion[MOTION_POS + a]) ** 2
            for b in range(3):
                turned += (rot[a, b] - motion[MOTION_ROT + 3 * a + b]) ** 2
        motion[MOTION_MOVED] += math.sqrt(moved)
        motion[MOTION_TURNED] += math.sqrt(turned)
    for a in range(3):
        motion[MOTION_POS + a] = pos[a]
        for b in range(3):
            motion[MOTION_ROT + 3 * a + b] = rot[a, b]
    motion[MOTION_SET] = 1.0
    return motion[MOTION_MOVED], motion[MOTION_TURNED]


@njit(cache=True)
def _measure(env, tool, env_bounds, tool_bounds, t, p, rot, pos, limit, cache, moved, turned):
    """:func:`pieces_apart` past its travel bound: the cached plane's gap, else (unless the pair was measured within
    :data:`RESEARCH_TRAVEL` of travel) the best plane's; recorded with the travel totals."""
    plane = cache.plane[p, t]
    gap = _plane_gap(env, tool, env_bounds, tool_bounds, plane, t, p, rot, pos)
    if gap <= limit:
        if moved - cache.gap[p, t, 1] + (turned - cache.gap[p, t, 2]) * tool_bounds[t, BOUND_REACH] < RESEARCH_TRAVEL:
            return False  # measured within RESEARCH_TRAVEL: not searched again yet
        gap, plane = _search(env, tool, env_bounds, tool_bounds, t, p, rot, pos, limit)
        cache.plane[p, t] = plane
    cache.gap[p, t, 0], cache.gap[p, t, 1], cache.gap[p, t, 2] = gap, moved, turned
    return gap > limit


@njit(cache=True, inline="always")
def travel_verdict(env_bounds, tool_bounds, t, p, pos, limit, cache, moved, turned):
    """What the travel bound says of a pair (:func:`pieces_apart`): 1 apart, -1 not apart and not worth measuring
    (its last measure found no separating plane, and the gap cannot have grown past ``limit`` since, nor the tool
    travelled :data:`RESEARCH_TRAVEL`), 0 measure it."""
    since, spun = moved - cache.gap[p, t, 1], turned - cache.gap[p, t, 2]
    if cache.plane[p, t] >= 0:
        lever = tool_bounds[t, BOUND_REACH]
    else:
        dx = env_bounds[p, BOUND_BOX_CENTRE] - pos[0]
        dy = env_bounds[p, BOUND_BOX_CENTRE + 1] - pos[1]
        dz = env_bounds[p, BOUND_BOX_CENTRE + 2] - pos[2]
        lever = math.sqrt(dx * dx + dy * dy + dz * dz) + env_bounds[p, BOUND_REACH] + since
    drift = since + spun * lever
    if cache.gap[p, t, 0] - drift > limit:
        return 1
    if cache.gap[p, t, 0] + drift <= limit and since + spun * tool_bounds[t, BOUND_REACH] < RESEARCH_TRAVEL:
        return -1
    return 0


@njit(cache=True, inline="always")
def pieces_apart(env, tool, env_bounds, tool_bounds, t, p, rot, pos, limit, cache, moved, turned):
    """Whether tool piece ``t`` (pose ``rot, pos``: tool → world) and environment piece ``p`` are separated by more
    than ``limit`` [m] along a face plane of either (module docstring). ``cache``: :class:`PairCache`, updated;
    ``moved, turned``: the travel totals of :func:`track` at this pose.

    First the travel bound: the gap last measured changes by at most how far the tool's points (for an environment
    plane) or the piece's points in the tool frame (for a tool plane) can have moved since, ``Δmoved + Δturned ·
    lever`` (:func:`travel_verdict`); then the cached plane; then a search of the pair's planes."""
    verdict = travel_verdict(env_bounds, tool_bounds, t, p, pos, limit, cache, moved, turned)
    if verdict != 0:
        return verdict > 0
    return _measure(env, tool, env_bounds, tool_bounds, t, p, rot, pos, limit, cache, moved, turned)


@njit(cache=True)
def boxes_apart(lo, hi, p, piece_lo, piece_hi, grow):
    """Whether the world box ``lo, hi (3,)`` and environment piece ``p``'s box grown by ``grow`` [m] are disjoint."""
    for a in range(3):
        if lo[a] > piece_hi[p, a] + grow or hi[a] < piece_lo[p, a] - grow:
            return True
    return False


@njit(cache=True)
def any_touching(geo, rot, pos, limit, lo, hi, cache):
    """Whether some tool piece and environment piece at the pose are not :func:`pieces_apart` by ``limit`` [m]
    (``lo, hi (3,)``: scratch; ``cache``: :class:`PairCache`, updated)."""
    ed = geo.edges
    moved, turned = track(cache.motion, rot, pos)
    grow = max(limit, 0.0)
    for t in range(geo.tool.info.shape[0]):
        _world_box(rot, pos, geo.tool_lo[t], geo.tool_hi[t], 0.0, lo, hi)
        for p in range(geo.env.info.shape[0]):
            if not boxes_apart(lo, hi, p, ed.piece_lo, ed.piece_hi, grow) and not pieces_apart(
                    geo.env, geo.tool, ed.env_bounds, ed.tool_bounds, t, p, rot, pos, limit, cache, moved, turned):
                return True
    return False


@njit(cache=True)
def near_box(near, n_near, piece_lo, piece_hi, limit, rot, pos, box):
    """The tool-frame box ``box (6,) = (lo, hi)`` [m] (written) around the world boxes of the environment pieces
    ``near[:n_near]`` grown by ``limit``."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for i in range(n_near):
        for a in range(3):
            lo[a] = min(lo[a], piece_lo[near[i], a] - limit)
            hi[a] = max(hi[a], piece_hi[near[i], a] + limit)
    for a in range(3):
        centre, half = 0.0, 0.0
        for b in range(3):
            centre += rot[b, a] * (0.5 * (lo[b] + hi[b]) - pos[b])
            half += abs(rot[b, a]) * 0.5 * (hi[b] - lo[b])
        box[a], box[3 + a] = centre - half, centre + half


@njit(cache=True)
def near_pieces(env, tool, env_bounds, tool_bounds, piece_lo, piece_hi, t, lo, hi, rot, pos, limit, pairs, moved,
                 turned, near):
    """The environment pieces whose boxes meet tool piece ``t``'s world box ``lo, hi`` and that
    :func:`pieces_apart` does not reject (``pairs``, ``moved``, ``turned`` as it takes them), written
    to ``near``; returns their count."""
    n = 0
    for p in range(env.info.shape[0]):
        if boxes_apart(lo, hi, p, piece_lo, piece_hi, 0.0) or pieces_apart(env, tool, env_bounds, tool_bounds, t, p,
                                                                           rot, pos, limit, pairs, moved, turned):
            continue
        near[n] = p
        n += 1
    return n
