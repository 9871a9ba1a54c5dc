"""The peg and the holed cylinder of the tight-tolerance peg-in-hole experiment (data-driven simulation
paper §V-A: aluminium peg Ø 49.97 mm in a hole Ø 50.035 mm, 0.065 mm diametral / 32.5 µm radial clearance;
§V-C: peg 4,786 and hole 5,324 triangles).

How a diameter maps to the polygon: both parts are regular ``circle_segments``-gons in the orientation of
:mod:`contactkit.geometry.prism`, and a nominal diameter ``d`` is the polygon's *inscribed* circle (its faces
are tangent to the circle of diameter ``d``, its corners lie at ``d / 2 / cos(pi / circle_segments)``).
Peg and hole use the same segment count, so their faces are parallel and, with the peg centred, the gap is
exactly ``(hole_diameter - peg_diameter) / 2`` everywhere on the faces (32.5 µm), not only at its minimum.

Faceting: the corners stand out of the nominal circle by ``r (1 / cos(pi / n) - 1)``, and a corner sits
``r (1 - cos(pi / n))`` (the chord sagitta) from the circumscribed circle through the corners; both are
0.30 µm at the default ``n = 640`` and r = 25 mm, under ``MAX_SAGITTA`` (0.5 µm), tiny against the 32.5 µm
clearance. This matters for the learned depth network of the hole, which sees the hole in cylindrical
coordinates ``(r, z)`` and so assumes it is axisymmetric: the faceting is the error that assumption makes.

Triangle counts at the default ``n = 640``: peg ``8 n = 5,120`` (two end fans, the chamfer band and two
side bands; the extra side ring at mid-length gives contact nodes along the side), hole ``8 n = 5,120``
(:func:`contactkit.geometry.slots.slot`'s cup). The paper's 4,786 and 5,324 lie within 7 % of these.
"""

from __future__ import annotations

import math

from contactkit.errors import InvalidInputError
from contactkit.geometry.part import ConvexPiece, Part
from contactkit.geometry.prism import Shape, check_positive, check_segments, loft, polygon
from contactkit.geometry.slots import slot

PAPER_PEG_DIAMETER = 0.04997
"""Peg diameter [m] (paper §V-A)."""

PAPER_HOLE_DIAMETER = 0.050035
"""Hole diameter [m] (paper §V-A)."""

PAPER_HOLE_SEGMENTS = 640
"""Polygon sides of the paper's peg and hole (sagitta 0.30 µm at r = 25 mm; 8 n = 5,120 triangles each)."""

MAX_SAGITTA = 0.5e-6
"""Largest chord sagitta ``r (1 - cos(pi / n))`` [m] accepted for the paper's peg and hole: the depth network
of the hole treats it as axisymmetric, and its accuracy bar is 6.5 µm (0.2 x the clearance)."""

DEFAULT_PEG_LENGTH = 0.06
"""Peg length [m] (the paper does not give it)."""

DEFAULT_PEG_CHAMFER = 0.0005
"""45-degree chamfer of the peg's tip edge [m] (lets an aligned peg enter the tight hole)."""

DEFAULT_HOLE_DEPTH = 0.04
"""Hole depth [m] (the paper does not give it)."""

DEFAULT_HOLE_WALL = 0.015
"""Wall thickness of the holed cylinder around the hole [m] (outer diameter ~80 mm)."""

DEFAULT_HOLE_FLOOR = 0.01
"""Floor thickness under the hole [m]."""


def chord_sagitta(radius: float, segments: int) -> float:
    """Chord sagitta ``radius (1 - cos(pi / segments))`` [m]: how far the middle of a polygon edge whose ends lie on
    a circle of ``radius`` [m] falls inside that circle."""
    return float(radius) * (1.0 - math.cos(math.pi / int(segments)))


def _check_faceting(radius: float, segments: int) -> None:
    s = chord_sagitta(radius, segments)
    if s > MAX_SAGITTA:
        need = math.ceil(math.pi / math.acos(1.0 - MAX_SAGITTA / radius))
        raise InvalidInputError(f"circle_segments={segments}: chord sagitta {s * 1e6:.2f} µm exceeds "
                                f"MAX_SAGITTA {MAX_SAGITTA * 1e6:g} µm at radius {radius:g} m; use >= {need}")


def paper_peg(
    *,
    diameter: float = PAPER_PEG_DIAMETER,
    length: float = DEFAULT_PEG_LENGTH,
    chamfer: float = DEFAULT_PEG_CHAMFER,
    circle_segments: int = PAPER_HOLE_SEGMENTS,
    side_bands: int = 2,
    name: str = "paper-peg",
) -> Part:
    """The paper's aluminium peg (§V-A): a circular prism of nominal ``diameter`` [m] with a chamfered tip.

    Frame: origin at the centre of the tip (bottom) face, axis +z, top face at ``z = length``. The cross-section
    is the regular ``circle_segments``-gon whose inscribed circle has the nominal diameter (module docstring);
    the tip face has apothem ``diameter / 2 - chamfer`` and the full section starts at ``z = chamfer``.

    Args:
        diameter, length, chamfer: [m]; ``0 <= chamfer < min(diameter / 2, length)``.
        circle_segments: polygon sides; its sagitta must stay within ``MAX_SAGITTA``.
        side_bands: equal bands the side is split into between ``z = chamfer`` and the top (rings of
            vertices, i.e. contact nodes, along the side); >= 1.

    Returns:
        :class:`Part` with ``(4 + 2 side_bands) circle_segments`` triangles (``2 n`` with a zero chamfer
        fewer), one convex piece (the chamfered prism, convex), and ``meta`` with kind ``"paper-peg"``,
        diameter, radius, length, chamfer, circle_segments, corner_radius, sagitta, n_triangles.

    Raises:
        InvalidInputError: non-positive sizes, a chamfer out of range, too few segments or bands.
    """
    diameter = check_positive("peg diameter", diameter)
    length = check_positive("peg length", length)
    n = check_segments(circle_segments)
    radius = diameter / 2.0
    _check_faceting(radius, n)
    chamfer = float(chamfer)
    if not math.isfinite(chamfer) or not 0.0 <= chamfer < min(radius, length):
        raise InvalidInputError(f"peg chamfer must be in [0, {min(radius, length):g}) m, got {chamfer!r}")
    if isinstance(side_bands, bool) or not isinstance(side_bands, int) or side_bands < 1:
        raise InvalidInputError(f"side_bands must be an int >= 1, got {side_bands!r}")
    poly = polygon(Shape.CIRCLE, radius, n)
    hull_rings = [(0.0, poly), (length, poly)]
    if chamfer > 0.0:
        hull_rings = [(0.0, poly * ((radius - chamfer) / radius)), (chamfer, poly), (length, poly)]
    z_side = [chamfer + (length - chamfer) * k / side_bands for k in range(1, side_bands)]
    rings = hull_rings[:-1] + [(z, poly) for z in z_side] + hull_rings[-1:]
    vertices, faces = loft(rings, centre_caps=True)
    piece = ConvexPiece(*loft(hull_rings, centre_caps=False, strip_caps=True))
    meta = {
        "kind": "paper-peg", "diameter": diameter, "radius": radius, "length": length, "chamfer": chamfer,
        "circle_segments": n, "corner_radius": radius / math.cos(math.pi / n),
        "sagitta": chord_sagitta(radius / math.cos(math.pi / n), n), "side_bands": side_bands,
        "n_triangles": int(len(faces)), "paper_n_triangles": 4786,
    }
    return Part(name, vertices, faces, (piece,), meta)


def paper_hole(
    *,
    diameter: float = PAPER_HOLE_DIAMETER,
    peg_diameter: float = PAPER_PEG_DIAMETER,
    depth: float = DEFAULT_HOLE_DEPTH,
    wall: float = DEFAULT_HOLE_WALL,
    floor: float = DEFAULT_HOLE_FLOOR,
    circle_segments: int = PAPER_HOLE_SEGMENTS,
    name: str = "paper-hole",
) -> Part:
    """The paper's holed cylinder (§V-A): a blind circular hole of nominal ``diameter`` [m] in a block.

    Built by :func:`contactkit.geometry.slots.slot` for a circular peg of ``peg_diameter`` with the same
    ``circle_segments``, so the hole polygon's inscribed circle has exactly ``diameter`` and its faces are
    parallel to the peg's (module docstring). Frame: origin at the centre of the hole's bottom (the floor's top
    surface), opening along +z; walls from ``z = 0`` to ``depth``, floor from ``z = -floor`` to ``0``; the outer
    boundary is the same polygon with apothem ``diameter / 2 + wall``. A peg of :func:`paper_peg` placed with
    its frame at the hole's frame stands on the floor, centred, with a 32.5 µm gap all round.

    Returns:
        :class:`Part` with ``8 circle_segments`` triangles and ``circle_segments + 1`` exact disjoint convex pieces
        (one wedge prism per hole edge, then the floor slab); ``meta`` is :func:`slot`'s plus kind
        ``"paper-hole"``, diameter, peg_diameter, radial clearance, sagitta, n_triangles.

    Raises:
        InvalidInputError: non-positive sizes, ``diameter <= peg_diameter``, too few segments.
    """
    diameter = check_positive("hole diameter", diameter)
    peg_diameter = check_positive("peg_diameter", peg_diameter)
    if diameter <= peg_diameter:
        raise InvalidInputError(f"hole diameter {diameter:g} m must exceed peg_diameter {peg_diameter:g} m")
    n = check_segments(circle_segments)
    _check_faceting(diameter / 2.0, n)
    clearance = (diameter - peg_diameter) / 2.0
    part = slot(Shape.CIRCLE, peg_diameter / 2.0, clearance, depth, wall=wall, floor=floor, circle_segments=n,
                name=name, peg_shape=Shape.CIRCLE, peg_circle_segments=n)
    meta = dict(part.meta)
    meta.update({
        "kind": "paper-hole", "diameter": diameter, "peg_diameter": peg_diameter, "radial_clearance": clearance,
        "sagitta": chord_sagitta(meta["hole_apothem"] / math.cos(math.pi / n), n),
        "n_triangles": int(len(part.faces)), "paper_n_triangles": 5324,
    })
    return Part(name, part.vertices, part.faces, part.pieces, meta)
