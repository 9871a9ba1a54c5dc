"""Slots (holes in a block) for peg insertion, with an exact radial clearance (Act-FIGNet paper §IV-A: 5 mm in
simulation, 1 mm on the real robot; tight-tolerance assembly: down to 0.065 mm).

Clearance definition: with the peg centred in the hole and both in this package's orientation (see
:mod:`contactkit.geometry.prism`), the radial clearance is the smallest horizontal distance between
the peg's cross-section and the hole's wall. The hole polygon's faces ``n_k . x = a_h`` (unit normals
``n_k``) are placed at ``a_h = max_k h_peg(n_k) + clearance``, where ``h_peg`` is the support function
of the peg polygon; for a convex peg inside a convex hole this makes the smallest gap exactly
``clearance``. For a peg and hole of the same shape (and, for circles, the same segment count) the
faces are parallel and ``a_h - a_peg = clearance``. For a circular peg (a 4m-gon) in a square hole
``a_h = radius + clearance``.

No boolean mesh operation is used: the surface is built directly as a cup, and the convex pieces are
one trapezoidal prism per hole edge (the region between the hole edge and the outer edge, from z = 0 to
z = depth) plus the floor slab. The pieces are disjoint, their union is the solid, and none enters the
cavity.
"""

from __future__ import annotations

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.geometry.part import ConvexPiece, Part
from contactkit.geometry.prism import (
    DEFAULT_PEG_CIRCLE_SEGMENTS,
    Shape,
    cap_faces,
    check_positive,
    convex_prism,
    face_normals,
    n_sides,
    parse_shape,
    polygon,
    side_faces,
)

DEFAULT_SLOT_CIRCLE_SEGMENTS = 64
"""Sides of a circular hole unless told otherwise."""


def hole_apothem(
    shape: Shape | str,
    peg_shape: Shape | str,
    peg_size: float,
    clearance: float,
    *,
    circle_segments: int = DEFAULT_SLOT_CIRCLE_SEGMENTS,
    peg_circle_segments: int = DEFAULT_PEG_CIRCLE_SEGMENTS,
) -> float:
    """Apothem [m] of a ``shape`` hole that leaves exactly ``clearance`` [m] around a centred peg.

    Implements ``a_h = max_k h_peg(n_k) + clearance`` (module docstring), ``n_k`` the hole's face normals
    and ``h_peg`` the support function of the peg polygon ``polygon(peg_shape, peg_size, ...)``.

    Raises:
        InvalidInputError: a clearance or peg size that is not finite and > 0, or a clearance that does not fit
            the part: ``clearance >= peg_size`` (a gap as wide as the peg's apothem or radius guides nothing).
    """
    clearance = check_positive("clearance", clearance)
    peg_size = check_positive("peg_size", peg_size)
    if clearance >= peg_size:
        raise InvalidInputError(
            f"clearance {clearance:g} m does not fit the part: it must be smaller than the peg's size (apothem or "
            f"radius) {peg_size:g} m"
        )
    peg_poly = polygon(peg_shape, peg_size, peg_circle_segments)
    normals = face_normals(n_sides(shape, circle_segments))
    return float(np.max(normals @ peg_poly.T)) + clearance


def _cup_surface(hole: np.ndarray, outer: np.ndarray, depth: float, floor: float):
    """Closed outward cup mesh: outer prism from -floor to depth minus the hole prism from 0 to depth."""
    n = len(hole)
    ob, ot, it, ib = (np.arange(n) + i * n for i in range(4))
    cb, cf = 4 * n, 4 * n + 1
    vertices = np.concatenate([
        np.column_stack([outer, np.full(n, -floor)]),
        np.column_stack([outer, np.full(n, depth)]),
        np.column_stack([hole, np.full(n, depth)]),
        np.column_stack([hole, np.zeros(n)]),
        np.array([[0.0, 0.0, -floor], [0.0, 0.0, 0.0]]),
    ])
    faces = np.concatenate([
        cap_faces(ob, cb, up=False),  # bottom, normal -z
        side_faces(ob, ot),  # outer walls, normals outward
        side_faces(ot, it),  # top rim, normal +z
        side_faces(ib, it)[:, [0, 2, 1]],  # cavity walls, normals towards the axis
        cap_faces(ib, cf, up=True),  # cavity floor, normal +z
    ])
    return vertices.astype(np.float64), faces.astype(np.int64)


def _wall_pieces(hole: np.ndarray, outer: np.ndarray, depth: float) -> list[ConvexPiece]:
    """One trapezoidal prism per hole edge: corners ``hole[j], outer[j], outer[j+1], hole[j+1]``."""
    n = len(hole)
    pieces = []
    for j in range(n):
        k = (j + 1) % n
        quad = np.stack([hole[j], outer[j], outer[k], hole[k]])
        pieces.append(convex_prism(quad, 0.0, depth))
    return pieces


def slot(
    shape: Shape | str,
    peg_size: float,
    clearance: float,
    depth: float,
    *,
    wall: float = 0.02,
    floor: float = 0.01,
    circle_segments: int = DEFAULT_SLOT_CIRCLE_SEGMENTS,
    name: str | None = None,
    peg_shape: Shape | str | None = None,
    peg_circle_segments: int = DEFAULT_PEG_CIRCLE_SEGMENTS,
) -> Part:
    """A block with a prismatic hole of cross-section ``shape``, sized for a peg with ``clearance``.

    Frame: origin at the centre of the hole's bottom (the floor's top surface), hole opening along +z;
    walls from ``z = 0`` to ``z = depth``, floor slab from ``z = -floor`` to ``0``. The hole polygon has
    the orientation of :func:`contactkit.geometry.prism.polygon`, so its faces are parallel to those of a
    peg of the same shape. The outer boundary is the same polygon with apothem ``hole_apothem + wall``.

    Args:
        shape: the hole's cross-section.
        peg_size: apothem [m] of the peg meant to go in (radius for a circular peg).
        clearance: radial clearance [m] (module docstring), > 0.
        depth: hole depth [m]; wall: minimum wall thickness [m]; floor: floor thickness [m].
        circle_segments: sides of a circular hole.
        name: part name; default ``"slot(<shape>)"``.
        peg_shape: shape of the peg meant to go in; default ``shape``.
        peg_circle_segments: sides of that peg if it is a circle (default: :func:`peg`'s default).
            Use :func:`matching_slot` to read both from a peg part.

    Returns:
        :class:`Part`: a closed cup surface and ``n + 1`` disjoint convex pieces (walls, then floor).
        ``meta`` holds kind, shape, peg_shape, peg_size, clearance, depth, wall, floor, hole_apothem,
        outer_apothem, circle_segments, peg_circle_segments, n_sides.

    Raises:
        InvalidInputError: unknown shape; non-finite or non-positive size, clearance, depth, wall, floor.
    """
    shape = parse_shape(shape)
    peg_shape = shape if peg_shape is None else parse_shape(peg_shape)
    depth = check_positive("depth", depth)
    wall = check_positive("wall", wall)
    floor = check_positive("floor", floor)
    a_h = hole_apothem(shape, peg_shape, peg_size, clearance, circle_segments=circle_segments,
                       peg_circle_segments=peg_circle_segments)
    hole = polygon(shape, a_h, circle_segments)
    outer = polygon(shape, a_h + wall, circle_segments)
    vertices, faces = _cup_surface(hole, outer, depth, floor)
    pieces = (*_wall_pieces(hole, outer, depth), convex_prism(outer, -floor, 0.0))
    meta = {
        "kind": "slot", "shape": shape.value, "peg_shape": peg_shape.value, "peg_size": float(peg_size),
        "clearance": float(clearance), "depth": depth, "wall": wall, "floor": floor, "hole_apothem": a_h,
        "outer_apothem": a_h + wall, "circle_segments": len(hole) if shape is Shape.CIRCLE else None,
        "peg_circle_segments": int(peg_circle_segments) if peg_shape is Shape.CIRCLE else None,
        "n_sides": len(hole),
    }
    return Part(name or f"slot({shape.value})", vertices, faces, pieces, meta)


def matching_slot(
    peg_part: Part,
    clearance: float,
    depth: float,
    *,
    slot_shape: Shape | str | None = None,
    wall: float = 0.02,
    floor: float = 0.01,
    circle_segments: int | None = None,
    name: str | None = None,
) -> Part:
    """A :func:`slot` for ``peg_part`` (made by :func:`peg`), reading its shape and size from ``meta``.

    Args:
        peg_part: a peg part; its ``meta`` must hold ``kind == "peg"``, ``shape``, ``size`` and, for a
            circle, ``circle_segments``.
        clearance, depth, wall, floor: as in :func:`slot` [m].
        slot_shape: the hole's shape; default the peg's (e.g. ``"square"`` for the unseen pairing of a
            circular peg in a square slot).
        circle_segments: sides of a circular hole; default the peg's segment count when the peg is a
            circle (faces parallel, ``a_h - a_peg = clearance``), else 64.

    Raises:
        InvalidInputError: ``peg_part`` has no peg meta, or any :func:`slot` argument is invalid.
    """
    meta = peg_part.meta if isinstance(peg_part, Part) else None
    if not meta or meta.get("kind") != "peg" or "shape" not in meta or "size" not in meta:
        label = getattr(peg_part, "name", repr(peg_part))
        raise InvalidInputError(f"part {label!r} is not a peg made by geometry.peg "
                                "(its meta lacks kind/shape/size)")
    peg_shape = parse_shape(meta["shape"])
    peg_segments = int(meta.get("circle_segments") or DEFAULT_PEG_CIRCLE_SEGMENTS)
    shape = peg_shape if slot_shape is None else parse_shape(slot_shape)
    if circle_segments is None:
        circle_segments = peg_segments if peg_shape is Shape.CIRCLE else DEFAULT_SLOT_CIRCLE_SEGMENTS
    return slot(shape, meta["size"], clearance, depth, wall=wall, floor=floor,
                circle_segments=circle_segments, name=name, peg_shape=peg_shape,
                peg_circle_segments=peg_segments)
