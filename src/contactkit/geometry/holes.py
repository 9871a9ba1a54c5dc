"""The facts of a vertical hole read from a slot's surface mesh: where its top and floor are, how deep it is, and
how wide it is at its narrowest (what a peg-in-hole task needs to know about a slot that came from a mesh file).

The hole's axis is the vertical line ``x = axis_xy[0], y = axis_xy[1]`` of the part frame (+z up, opening upwards).
Along it:

* ``top_z`` is the part's highest point (the block's top face) [m];
* ``floor_z`` is the highest point where the axis meets the surface, found by intersecting the vertical line with
  every triangle (the first surface a peg lowered along the axis touches) [m]; where the axis meets no triangle
  inside the part's footprint the hole goes through (``through``) and its floor is the part's lowest point (the
  table the part stands on);
* ``depth = top_z - floor_z`` [m];
* without a given axis, the axis is centred: it starts at the centre of the part's bounding box in x and y and moves
  to where ``inradius`` is largest (the centre of the largest vertical cylinder that fits the hole; for a regular
  polygon, the polygon's centre) by Nelder-Mead, the inradius being concave in the axis for a convex section;
* ``inradius`` is the smallest horizontal distance from the axis to the surface over ``PROBE_LEVELS`` heights
  spread over the hole's depth (the section cut at each height by the triangles crossing it): for a prismatic
  regular-polygon hole, its apothem; for a hole with an entry chamfer, the apothem below the chamfer [m].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import GeometryError
from contactkit.geometry.part import Part

PROBE_LEVELS = 9
"""Heights at which the hole's section is cut for its inradius, spread evenly strictly inside the hole."""
PROBE_MARGIN = 0.02
"""Fraction of the depth kept clear of the floor and the top when cutting (the edges where sections change)."""
BARYCENTRIC_TOL = 1e-9
"""Slack on a triangle's barycentric coordinates when the axis passes through an edge or a corner of it."""
MIN_HOLE_DEPTH_FRACTION = 1e-6
"""A hole shallower than this fraction of the part's height is no hole (the axis meets the top face)."""
AXIS_XATOL = 1e-8
"""Tolerance on the centred axis's x, y [m] (Nelder-Mead's ``xatol``)."""


@dataclass(frozen=True)
class HoleFacts:
    """A hole read from a slot mesh (module docstring); lengths in the part frame [m].

    Attributes:
        axis_xy: ``(2,)`` the axis's x, y [m]. top_z, floor_z, depth, inradius: [m].
        through: the hole goes through the part (its floor is the part's lowest point).
    """

    axis_xy: np.ndarray
    top_z: float
    floor_z: float
    depth: float
    inradius: float
    through: bool = False


def _axis_hits(v: np.ndarray, f: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Heights [m] at which the vertical line through ``xy`` meets the triangles ``f`` of ``v``."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    e1, e2, p = (b - a)[:, :2], (c - a)[:, :2], xy[None] - a[:, :2]
    det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    ok = np.abs(det) > 0.0  # vertical triangles: the line runs along them, their edges' hits come from neighbours
    det = np.where(ok, det, 1.0)
    u = (p[:, 0] * e2[:, 1] - p[:, 1] * e2[:, 0]) / det
    w = (e1[:, 0] * p[:, 1] - e1[:, 1] * p[:, 0]) / det
    inside = ok & (u >= -BARYCENTRIC_TOL) & (w >= -BARYCENTRIC_TOL) & (u + w <= 1.0 + BARYCENTRIC_TOL)
    return (a[:, 2] + u * (b - a)[:, 2] + w * (c - a)[:, 2])[inside]


def _section_distance(v: np.ndarray, f: np.ndarray, xy: np.ndarray, z: float) -> float:
    """Smallest horizontal distance [m] from ``(xy, z)`` to the section of the surface cut at height ``z``: the
    segments where the triangles crossing ``z`` meet that plane (a vertex on the plane counts as above it, so every
    crossing triangle has exactly two crossing edges)."""
    tri = v[f]  # (F, 3, 3)
    dz = tri[:, :, 2] - z
    above = dz >= 0.0
    edges = ((0, 1), (1, 2), (2, 0))
    crossing = np.stack([above[:, i] != above[:, j] for i, j in edges], axis=1)  # (F, 3)
    keep = crossing.any(axis=1)
    if not np.any(keep):
        return float("inf")
    tri, dz, crossing = tri[keep], dz[keep], crossing[keep]
    points = []
    for k, (i, j) in enumerate(edges):
        t = dz[:, i] / np.where(crossing[:, k], dz[:, i] - dz[:, j], 1.0)
        points.append(tri[:, i, :2] + t[:, None] * (tri[:, j, :2] - tri[:, i, :2]))
    points = np.stack(points, axis=1)  # (T, 3, 2); the two crossing edges' points are the segment's ends
    order = np.argsort(~crossing, axis=1, kind="stable")[:, :2]
    a = np.take_along_axis(points, order[:, :1, None], axis=1)[:, 0]
    b = np.take_along_axis(points, order[:, 1:2, None], axis=1)[:, 0]
    d = b - a
    s = np.clip(np.einsum("ij,ij->i", xy - a, d) / np.maximum(np.einsum("ij,ij->i", d, d), 1e-300), 0.0, 1.0)
    return float(np.linalg.norm(a + s[:, None] * d - xy, axis=1).min())


def _inradius(v: np.ndarray, f: np.ndarray, xy: np.ndarray, floor: float, depth: float) -> float:
    levels = floor + depth * np.linspace(PROBE_MARGIN, 1.0 - PROBE_MARGIN, PROBE_LEVELS)
    return min(_section_distance(v, f, xy, float(z)) for z in levels)


def _depth_at(v: np.ndarray, f: np.ndarray, xy: np.ndarray, label: str) -> tuple[float, float]:
    """``(floor_z, depth)`` [m] of the hole on the axis through ``xy`` (GeometryError where there is none); a
    through hole's floor is the part's lowest point."""
    hits = _axis_hits(v, f, xy)
    lo, hi = v[:, :2].min(axis=0), v[:, :2].max(axis=0)
    if hits.size == 0 and not np.all((lo < xy) & (xy < hi)):
        raise GeometryError(f"{label} misses the part (no hole there: give the hole's axis)")
    top = float(v[:, 2].max())
    floor = float(hits.max()) if hits.size else float(v[:, 2].min())
    if top - floor <= MIN_HOLE_DEPTH_FRACTION * float(np.ptp(v[:, 2])):
        raise GeometryError(f"{label} meets the part's top face at z = {floor:.6g} m: there is no hole opening "
                            "upwards (+z) on that axis")
    return floor, top - floor


def _centred_axis(v: np.ndarray, f: np.ndarray, xy: np.ndarray, floor: float, depth: float) -> np.ndarray:
    """The axis through the hole's widest vertical cylinder, from ``xy`` (inside the hole) by Nelder-Mead."""
    from scipy.optimize import minimize

    scale = max(_inradius(v, f, xy, floor, depth), AXIS_XATOL)
    res = minimize(lambda p: -_inradius(v, f, xy + p * scale, floor, depth), np.zeros(2), method="Nelder-Mead",
                   options={"xatol": AXIS_XATOL / scale, "fatol": AXIS_XATOL / 10, "initial_simplex":
                            np.array([[0.0, 0.0], [0.5, 0.0], [0.0, 0.5]])})
    return xy + res.x * scale


def probe_hole(part: Part, axis_xy=None) -> HoleFacts:
    """The hole of ``part`` along the vertical axis through ``axis_xy`` (module docstring).

    Args:
        part: a slot whose hole opens upwards (+z), vertices in the part frame [m].
        axis_xy: ``(2,)`` x, y of the hole's axis [m]; default: centred (module docstring).

    Returns:
        :class:`HoleFacts`.

    Raises:
        GeometryError: naming the part: the axis misses the part, or meets its top face (no hole there), or the
            section around the axis is empty.
    """
    v, f = np.asarray(part.vertices, dtype=np.float64), np.asarray(part.faces, dtype=np.int64)
    lo, hi = v.min(axis=0), v.max(axis=0)
    xy = (lo[:2] + hi[:2]) / 2.0 if axis_xy is None else np.asarray(axis_xy, dtype=np.float64).reshape(2)
    label = f"part {part.name!r}: the vertical axis through x, y = {xy.tolist()} m"
    floor, depth = _depth_at(v, f, xy, label)
    if axis_xy is None:
        xy = _centred_axis(v, f, xy, floor, depth)
        floor, depth = _depth_at(v, f, xy, f"part {part.name!r}: the centred axis through x, y = {xy.tolist()} m")
    inradius = _inradius(v, f, xy, floor, depth)
    if not np.isfinite(inradius) or inradius <= 0.0:
        raise GeometryError(f"{label}: the hole has no wall around the axis (open on the side?)")
    return HoleFacts(xy, float(hi[2]), floor, depth, float(inradius), through=_axis_hits(v, f, xy).size == 0)
