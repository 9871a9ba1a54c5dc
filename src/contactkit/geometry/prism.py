"""Regular-polygon cross-sections and the pegs built on them (Act-FIGNet paper §IV-A: triangle, square,
pentagon, hexagon and circle tools).

Conventions, used by every part in this package:

- ``size`` of a cross-section is its *apothem* (inscribed radius) [m], for every shape.
- A circle of radius ``r`` is the regular ``circle_segments``-gon that *circumscribes* it: its apothem
  is ``r``, its corners lie at ``r / cos(pi / circle_segments)``. So ``size`` is the apothem for the
  circle as well, and a matching circular hole of the same segment count has parallel faces.
- Orientation: face ``k`` of an ``n``-gon has its outward normal at angle ``2 pi k / n`` from +x, so
  face 0 faces +x; corner ``k`` lies at angle ``(2k + 1) pi / n``. Every part built here (peg and slot)
  uses this orientation, so a peg and a hole of the same shape have parallel faces, and a circle
  polygon whose segment count is a multiple of 4 has faces at +-x, +-y like the square.
- Polygons are counter-clockwise seen from +z; meshes are wound counter-clockwise seen from outside.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.geometry.part import ConvexPiece, Part

MIN_CIRCLE_SEGMENTS = 8
"""Fewest polygon sides accepted for a circle."""

MAX_CIRCLE_SEGMENTS = 4096
"""Most polygon sides accepted for a circle (bounds memory)."""

DEFAULT_PEG_CIRCLE_SEGMENTS = 32
"""Sides of a circular peg unless told otherwise; also what :func:`slot` assumes for a circular peg."""


class Shape(str, enum.Enum):
    """Cross-section of a peg or a hole. ``POLYGON`` is a regular polygon of any number of sides (>= 3), named
    ``"<n>-gon"`` (e.g. ``"7-gon"``) or by its name (:data:`POLYGON_NAMES`); see :func:`section`."""

    TRIANGLE = "triangle"
    SQUARE = "square"
    PENTAGON = "pentagon"
    HEXAGON = "hexagon"
    CIRCLE = "circle"
    POLYGON = "polygon"


_POLYGON_SIDES = {Shape.TRIANGLE: 3, Shape.SQUARE: 4, Shape.PENTAGON: 5, Shape.HEXAGON: 6}
POLYGON_NAMES = {"heptagon": 7, "octagon": 8, "nonagon": 9, "decagon": 10, "hendecagon": 11, "dodecagon": 12}
"""Names of regular polygons beyond the hexagon → their sides (any other: ``"<n>-gon"``)."""
MIN_POLYGON_SIDES = 3
"""Fewest sides of a regular polygon section."""
_VALID_SHAPES = "triangle, square, pentagon, hexagon, circle, heptagon ... dodecagon, or '<n>-gon' for any n >= 3"


def _polygon_sides(name: str) -> int | None:
    """Sides of ``"<n>-gon"`` or of a name of :data:`POLYGON_NAMES` (None: neither)."""
    if name in POLYGON_NAMES:
        return POLYGON_NAMES[name]
    if name.endswith("-gon") and name[:-4].isdigit():
        return int(name[:-4])
    return None


def section(shape: Shape | str, circle_segments: int = DEFAULT_PEG_CIRCLE_SEGMENTS) -> tuple[Shape, int]:
    """``(Shape, sides)`` of the cross-section named ``shape``.

    ``shape`` is a :class:`Shape` or a name (case and surrounding blanks ignored): the five named shapes, a name of
    :data:`POLYGON_NAMES`, or ``"<n>-gon"`` for a regular polygon of ``n >= 3`` sides (``n <= 6`` gives the named
    shape: ``"6-gon"`` is the hexagon). A circle has ``circle_segments`` sides.

    Raises:
        InvalidInputError: no such shape (the message lists what is valid), ``Shape.POLYGON`` without its sides,
            fewer than 3 or more than :data:`MAX_CIRCLE_SEGMENTS` sides, bad ``circle_segments`` for a circle.
    """
    if isinstance(shape, Shape):
        name = shape.value
    elif isinstance(shape, str):
        name = shape.strip().lower()
    else:
        raise InvalidInputError(f"shape must be a string or Shape, got {type(shape).__name__}; valid: {_VALID_SHAPES}")
    sides = _polygon_sides(name)
    if sides is not None:
        if not MIN_POLYGON_SIDES <= sides <= MAX_CIRCLE_SEGMENTS:
            raise InvalidInputError(f"a regular polygon needs {MIN_POLYGON_SIDES} to {MAX_CIRCLE_SEGMENTS} sides, "
                                    f"got {shape!r}")
        named = {n: s for s, n in _POLYGON_SIDES.items()}.get(sides)
        return (named or Shape.POLYGON), sides
    if name == Shape.POLYGON.value:
        raise InvalidInputError("a regular polygon section is named by its sides: '<n>-gon' (e.g. '7-gon')")
    try:
        kind = Shape(name)
    except ValueError:
        raise InvalidInputError(f"unknown shape {shape!r}; valid shapes: {_VALID_SHAPES}") from None
    return kind, (check_segments(circle_segments) if kind is Shape.CIRCLE else _POLYGON_SIDES[kind])


def section_name(shape: Shape | str, circle_segments: int = DEFAULT_PEG_CIRCLE_SEGMENTS) -> str:
    """The canonical name of ``shape``'s section (:func:`section`): a named shape's value, or ``"<n>-gon"``."""
    kind, n = section(shape, circle_segments)
    return f"{n}-gon" if kind is Shape.POLYGON else kind.value


def parse_shape(name: Shape | str) -> Shape:
    """Return the :class:`Shape` named ``name`` (case and surrounding blanks ignored); a regular polygon named by
    its sides (``"7-gon"``, ``"heptagon"``) is ``Shape.POLYGON`` (:func:`section` keeps the sides).

    Raises:
        InvalidInputError: ``name`` is no shape; the message lists the valid names.
    """
    return section(name)[0]


def check_positive(label: str, value: float) -> float:
    """Return ``value`` as a float after checking that it is finite and > 0.

    Raises:
        InvalidInputError: naming ``label`` when ``value`` is not a finite positive number.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{label} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0.0:
        raise InvalidInputError(f"{label} must be finite and > 0, got {value!r}")
    return v


def check_segments(circle_segments: int) -> int:
    """Return ``circle_segments`` once checked to be an int in [MIN_CIRCLE_SEGMENTS, MAX_CIRCLE_SEGMENTS]."""
    if isinstance(circle_segments, bool) or not isinstance(circle_segments, (int, np.integer)):
        raise InvalidInputError(f"circle_segments must be an int, got {circle_segments!r}")
    if not MIN_CIRCLE_SEGMENTS <= circle_segments <= MAX_CIRCLE_SEGMENTS:
        raise InvalidInputError(
            f"circle_segments must be in [{MIN_CIRCLE_SEGMENTS}, {MAX_CIRCLE_SEGMENTS}], "
            f"got {circle_segments}"
        )
    return int(circle_segments)


def n_sides(shape: Shape | str, circle_segments: int = DEFAULT_PEG_CIRCLE_SEGMENTS) -> int:
    """Number of polygon sides of ``shape``'s cross-section (``circle_segments`` for the circle; :func:`section`)."""
    return section(shape, circle_segments)[1]


def apothem(shape: Shape | str, size: float, circle_segments: int = DEFAULT_PEG_CIRCLE_SEGMENTS) -> float:
    """Inscribed radius [m] of the cross-section of ``shape`` with the given ``size`` [m].

    By this package's convention (module docstring) ``size`` *is* the apothem for every shape,
    the circle included (its polygon circumscribes the circle of radius ``size``); this function
    validates the arguments and returns it.
    """
    n_sides(shape, circle_segments)
    return check_positive("size", size)


def face_normals(n: int) -> np.ndarray:
    """``(n, 2)`` outward unit normals of the faces of a regular ``n``-gon; face ``k`` at ``2 pi k / n``."""
    ang = 2.0 * np.pi * np.arange(n) / n
    return np.stack([np.cos(ang), np.sin(ang)], axis=1)


def polygon(
    shape: Shape | str, size: float, circle_segments: int = DEFAULT_PEG_CIRCLE_SEGMENTS
) -> np.ndarray:
    """``(n, 2)`` corners [m] of the cross-section, counter-clockwise, centred at the origin.

    The polygon is regular with apothem ``size``; corner ``k`` lies at angle ``(2k + 1) pi / n`` and
    radius ``size / cos(pi / n)``, so the face between corners ``k - 1`` and ``k`` has outward normal
    at angle ``2 pi k / n``.
    """
    n = n_sides(shape, circle_segments)
    a = apothem(shape, size, circle_segments)
    ang = (2.0 * np.arange(n) + 1.0) * np.pi / n
    r = a / math.cos(math.pi / n)
    return np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1)


def _ring(poly: np.ndarray, z: float) -> np.ndarray:
    return np.column_stack([poly, np.full(len(poly), z)])


def side_faces(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``(2n, 3)`` triangles joining two rings of vertex indices (counter-clockwise polygons, ``lower``
    below ``upper``), wound so that normals point away from the polygon's interior."""
    lo1, up1 = np.roll(lower, -1), np.roll(upper, -1)
    return np.concatenate([np.stack([lower, lo1, up1], 1), np.stack([lower, up1, upper], 1)])


def cap_faces(ring: np.ndarray, centre: int | None, up: bool) -> np.ndarray:
    """Triangles closing a counter-clockwise ring of vertex indices, normal +z if ``up`` else -z.

    With ``centre`` (the index of a vertex at the polygon's centre) the cap is a fan around it;
    without, a fan from the ring's first vertex (only valid for a convex polygon).
    """
    if centre is None:
        a, b, c = np.full(len(ring) - 2, ring[0]), ring[1:-1], ring[2:]
    else:
        a, b, c = np.full(len(ring), centre), ring, np.roll(ring, -1)
    tri = np.stack([a, b, c], 1)
    return tri if up else tri[:, [0, 2, 1]]


def strip_cap_faces(ring: np.ndarray, up: bool) -> np.ndarray:
    """Triangles closing a counter-clockwise convex ring of vertex indices as a zigzag strip (corners
    0, 1, n-1, 2, n-2, ...), normal +z if ``up`` else -z. Unlike a fan, no vertex gets more than four cap
    neighbours: COAL refuses a convex piece with a vertex of over 255 neighbours ("Too many neighbors"), which
    a fan over a many-sided circle makes."""
    n = len(ring)
    order = [0]
    lo, hi = 1, n - 1
    while lo <= hi:
        order.append(lo)
        lo += 1
        if lo <= hi:
            order.append(hi)
            hi -= 1
    seq = np.asarray(ring)[order]
    tri = np.stack([seq[:-2], seq[1:-1], seq[2:]], 1)
    tri[1::2] = tri[1::2][:, [0, 2, 1]]
    return tri if up else tri[:, [0, 2, 1]]


def loft(rings: list[tuple[float, np.ndarray]], *, centre_caps: bool,
         strip_caps: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Closed mesh through horizontal polygons stacked along +z.

    Args:
        rings: ``[(z, poly (n, 2)), ...]`` with increasing ``z`` [m]; polygons counter-clockwise,
            all with the same ``n``; corner ``j`` of one ring joins corner ``j`` of the next.
        centre_caps: close the ends with a fan around an added centre vertex (even triangles) instead
            of a fan from corner 0 (no extra vertex: every vertex is a corner of the hull).
        strip_caps: without centre caps, close the ends with :func:`strip_cap_faces` instead of a fan from
            corner 0 (for convex pieces of many-sided circles, which COAL refuses with a fan).

    Returns:
        ``(vertices (V, 3) float64, faces (F, 3) int64)``, outward counter-clockwise.
    """
    n = len(rings[0][1])
    verts = [_ring(p, z) for z, p in rings]
    idx = [np.arange(n) + i * n for i in range(len(rings))]
    faces = [side_faces(idx[i], idx[i + 1]) for i in range(len(rings) - 1)]
    bottom = top = None
    if centre_caps:
        bottom, top = n * len(rings), n * len(rings) + 1
        verts += [np.array([[0.0, 0.0, rings[0][0]], [0.0, 0.0, rings[-1][0]]])]
    if strip_caps and not centre_caps:
        faces += [strip_cap_faces(idx[0], up=False), strip_cap_faces(idx[-1], up=True)]
    else:
        faces += [cap_faces(idx[0], bottom, up=False), cap_faces(idx[-1], top, up=True)]
    return np.concatenate(verts).astype(np.float64), np.concatenate(faces).astype(np.int64)


FAN_CAP_MAX_SIDES = 128
"""A convex prism of more sides closes its ends with zigzag strips (:func:`strip_cap_faces`), not fans: a fan
vertex has ``n - 1`` cap neighbours and COAL refuses a vertex of over 255. Up to this many sides, fans as before
(the triangulation does not change the solid; keeping it keeps every earlier scene's pieces bit-identical)."""


def convex_prism(poly: np.ndarray, z0: float, z1: float) -> ConvexPiece:
    """Convex piece: the counter-clockwise convex polygon ``poly (n, 2)`` [m] extruded from z0 to z1 [m]."""
    return ConvexPiece(*loft([(z0, poly), (z1, poly)], centre_caps=False, strip_caps=len(poly) > FAN_CAP_MAX_SIDES))


DEFAULT_CHAMFER_ANGLE = math.pi / 4
"""Angle of a chamfer's bevel from the part's axis [rad] unless told otherwise: 45°, radial width = axial length."""


def chamfer_width(chamfer: float, angle: float, what: str) -> float:
    """Radial width [m] of a bevel of axial length ``chamfer`` [m] at ``angle`` [rad] from the axis:
    ``chamfer · tan(angle)``; ``chamfer >= 0``, ``0 < angle < π/2``.

    Raises:
        InvalidInputError: naming ``what``: a negative or non-finite length, an angle outside (0, π/2).
    """
    try:
        chamfer, angle = float(chamfer), float(angle)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{what} chamfer and its angle must be numbers, got {chamfer!r}, {angle!r}") from None
    if not math.isfinite(chamfer) or chamfer < 0.0:
        raise InvalidInputError(f"{what} chamfer must be finite and >= 0 [m], got {chamfer}")
    if not (math.isfinite(angle) and 0.0 < angle < math.pi / 2):
        raise InvalidInputError(f"{what} chamfer angle must be in (0, π/2) rad from the axis, got {angle}")
    return chamfer if angle == DEFAULT_CHAMFER_ANGLE else chamfer * math.tan(angle)


def peg(
    shape: Shape | str,
    size: float,
    length: float,
    *,
    chamfer: float = 0.0,
    chamfer_angle: float = DEFAULT_CHAMFER_ANGLE,
    circle_segments: int = DEFAULT_PEG_CIRCLE_SEGMENTS,
    name: str | None = None,
) -> Part:
    """A prismatic peg (Act-FIGNet paper §IV-A tools) with a regular-polygon cross-section.

    Frame: origin at the centre of the bottom (tip) face, axis +z, top face at ``z = length``.

    Args:
        shape: cross-section: a :class:`Shape`, its name, or any regular polygon as ``"<n>-gon"``
            (:func:`section`).
        size: apothem of the cross-section [m] (for the circle: the radius of the circle that the
            ``circle_segments``-gon circumscribes); see the module docstring.
        length: peg length along z [m].
        chamfer: axial length of the tip edge's bevel [m]: the full section starts at ``z = chamfer`` and the tip
            face has apothem ``size - chamfer · tan(chamfer_angle)``; ``0 <= chamfer < length`` and the bevel's
            width below ``size``.
        chamfer_angle: the bevel's angle from the peg's axis [rad], in (0, π/2); default 45° (width = length).
        circle_segments: polygon sides for the circle.
        name: part name; default ``"peg(<shape>)"``.

    Returns:
        :class:`Part` whose surface mesh has a centre vertex on each end cap, and one convex piece (a
        chamfered prism is convex, so the whole peg is one piece). ``meta`` holds kind, shape (:func:`section_name`),
        size, apothem, length, chamfer, circle_segments, n_sides, and chamfer_angle unless it is 45°.

    Raises:
        InvalidInputError: unknown shape, non-finite or non-positive size/length, bad chamfer or segments.
    """
    kind, n = section(shape, circle_segments)
    size = check_positive("peg size", size)
    length = check_positive("peg length", length)
    poly = polygon(shape, size, circle_segments)
    width = chamfer_width(chamfer, chamfer_angle, "peg")
    chamfer = float(chamfer)
    if chamfer >= length or width >= size:
        raise InvalidInputError(f"peg chamfer must be shorter than the peg ({length} m) and narrower than its apothem "
                                f"({size} m): got {chamfer} m long, {width} m wide")
    rings = [(0.0, poly), (length, poly)]
    if chamfer > 0.0:
        rings = [(0.0, poly * ((size - width) / size)), (chamfer, poly), (length, poly)]
    vertices, faces = loft(rings, centre_caps=True)
    piece = ConvexPiece(*loft(rings, centre_caps=False))
    label = f"{n}-gon" if kind is Shape.POLYGON else kind.value
    meta = {
        "kind": "peg", "shape": label, "size": size, "apothem": size, "length": length,
        "chamfer": chamfer, "circle_segments": n if kind is Shape.CIRCLE else None, "n_sides": n,
    }
    if chamfer_angle != DEFAULT_CHAMFER_ANGLE:  # absent at 45°: the meta (and scene JSON) of earlier pegs unchanged
        meta["chamfer_angle"] = float(chamfer_angle)
    return Part(name or f"peg({label})", vertices, faces, (piece,), meta)
