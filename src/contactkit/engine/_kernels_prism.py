"""A segment against a polygonal prism's planes, restricted to the side planes that face it (numba; used by
:func:`._kernels_edges.segment_minimum`'s callers).

A fine prism — a 64-sided peg — has most of its planes among its *side planes* (parallel to its axis, ordered by
the azimuth ``φ_f`` of their normals, :mod:`._kernels_geometry`). A side plane's value at a point at azimuth ``φ``
and distance ``ρ`` from the axis is ``reach_f + ρ cos(φ_f - φ)``, so along a segment, whose azimuth sweeps the arc
between its ends' (less than π: a straight line), only the side planes in that arc and :data:`EDGE_SIDE_WINDOW`
more each way can lead the envelope ``F(t) = max_f a_f(x(t))``. :func:`side_window` copies those and the piece's
other external planes into a small table; the envelope's minimum on the table is the true one wherever every left
out side plane lies strictly below it there, which :func:`window_holds` checks by the bound
``side_reach + ρ cos δ`` (``δ``: the azimuth distance to the nearest left-out plane) — the callers fall back to all
planes when it does not hold.
"""

from __future__ import annotations

import math

from numba import njit

from contactkit.engine._kernels_geometry import (
    INFO_CENTRE,
    INFO_FRAME,
    INFO_MID,
    INFO_SIDE,
    INFO_SIDE_REACH,
    INFO_START,
    PLANE_PHI,
)

EDGE_SIDE_WINDOW = 2
"""Side planes taken beyond each end of a segment's azimuth arc (module docstring)."""

WINDOW_CAPACITY = 32
"""Rows of the table :func:`side_window` fills; a piece needing more is queried on all its planes."""


@njit(cache=True)
def _azimuth(info, p, x, y, z):
    """Azimuth [rad] and distance [m] of a point about piece ``p``'s axis (its frame rows ``e1, e2``, centre)."""
    dx, dy, dz = x - info[p, INFO_CENTRE], y - info[p, INFO_CENTRE + 1], z - info[p, INFO_CENTRE + 2]
    e = INFO_FRAME + 3
    s1 = dx * info[p, e] + dy * info[p, e + 1] + dz * info[p, e + 2]
    s2 = dx * info[p, e + 3] + dy * info[p, e + 4] + dz * info[p, e + 5]
    return math.atan2(s2, s1), math.hypot(s1, s2)


@njit(cache=True)
def first_side_at(planes, side, n, angle):
    """Offset of the first of the ``n`` side planes from row ``side`` with ``φ ≥ angle`` (``n`` if none)."""
    lo, hi = 0, n
    while lo < hi:
        m = (lo + hi) // 2
        if planes[side + m, PLANE_PHI] < angle:
            lo = m + 1
        else:
            hi = m
    return lo


@njit(cache=True)
def side_window(planes, info, p, x0, y0, z0, sx, sy, sz, table, rows):
    """Fill ``table (WINDOW_CAPACITY, ≥4)`` with piece ``p``'s external planes that may lead the envelope of the
    segment ``x_0 + t s`` (module docstring), ``rows (WINDOW_CAPACITY,)`` with their rows in ``planes``.

    Returns:
        ``(count, left_out, right_out)``: the table's rows, and the nearest left-out side plane on either side of
        the window (rows of ``planes``); count 0 when the piece has no side planes or the window would hold
        them all (or overflow the table): query all planes then.
    """
    start, side, mid = int(info[p, INFO_START]), int(info[p, INFO_SIDE]), int(info[p, INFO_MID])
    n, others = mid - side, side - start
    if n == 0:
        return 0, -1, -1
    phi0 = _azimuth(info, p, x0, y0, z0)[0]
    phi1 = _azimuth(info, p, x0 + sx, y0 + sy, z0 + sz)[0]
    sweep = (phi1 - phi0 + math.pi) % (2.0 * math.pi) - math.pi
    low, high = (phi1, phi0) if sweep < 0.0 else (phi0, phi1)  # the arc runs counter-clockwise from low to high
    first = first_side_at(planes, side, n, low)
    inside = (first_side_at(planes, side, n, high) - first) % n
    count = inside + 2 * EDGE_SIDE_WINDOW
    if count >= n or others + count > WINDOW_CAPACITY:
        return 0, -1, -1
    for i in range(others + count):
        f = start + i if i < others else side + (first - EDGE_SIDE_WINDOW + i - others) % n
        for c in range(4):
            table[i, c] = planes[f, c]
        rows[i] = f
    return others + count, side + (first - EDGE_SIDE_WINDOW - 1) % n, side + (first - EDGE_SIDE_WINDOW + count) % n


@njit(cache=True)
def _apart_by(a, b):
    """Angular distance [rad] in ``[0, π]`` between azimuths ``a`` and ``b``."""
    return abs((a - b + math.pi) % (2.0 * math.pi) - math.pi)


@njit(cache=True)
def window_holds(planes, info, p, x, y, z, value, left_out, right_out):
    """Whether every side plane left out of :func:`side_window`'s table lies strictly below ``value`` [m] at the
    point ``(x, y, z)``: ``side_reach + ρ cos δ < value``, ``δ`` the azimuth distance to the nearer of
    ``left_out, right_out``."""
    phi, rho = _azimuth(info, p, x, y, z)
    delta = min(_apart_by(phi, planes[left_out, PLANE_PHI]), _apart_by(phi, planes[right_out, PLANE_PHI]))
    return info[p, INFO_SIDE_REACH] + rho * math.cos(delta) < value
