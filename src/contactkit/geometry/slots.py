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
    DEFAULT_CHAMFER_ANGLE,
    DEFAULT_PEG_CIRCLE_SEGMENTS,
    Shape,
    cap_faces,
    chamfer_width,
    check_positive,
    convex_prism,
    face_normals,
    n_sides,
    polygon,
    section,
    section_name,
    side_faces,
)
from contactkit.geometry.validate import hull_piece

DEFAULT_SLOT_CIRCLE_SEGMENTS = 64
"""Sides of a circular hole unless told otherwise."""
CONVEXITY_TOL = 1e-9
"""Smallest sine of the turn between two consecutive edges of a hole polygon counted as a convex corner (a
4096-gon turns by sin(2π/4096) = 1.5e-3)."""


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


def _cup_surface(inner: list[tuple[float, np.ndarray]], outer: np.ndarray, depth: float, floor: float):
    """Closed outward cup mesh: the outer prism from -floor to depth minus the cavity through the ``inner`` rings
    ``[(z, polygon (n, 2)), ...]``, from the rim (``z = depth``) down to the cavity floor (``z = 0``)."""
    n = len(outer)
    rings = [(-floor, outer), (depth, outer), *inner]
    idx = [np.arange(n) + i * n for i in range(len(rings))]
    cb, cf = len(rings) * n, len(rings) * n + 1
    vertices = np.concatenate([np.column_stack([p, np.full(n, z)]) for z, p in rings]
                              + [np.array([[0.0, 0.0, -floor], [0.0, 0.0, 0.0]])])
    faces = [
        cap_faces(idx[0], cb, up=False),  # bottom, normal -z
        side_faces(idx[0], idx[1]),  # outer walls, normals outward
        side_faces(idx[1], idx[2]),  # top rim, normal +z
        *(side_faces(idx[k + 1], idx[k])[:, [0, 2, 1]] for k in range(2, len(rings) - 1)),  # cavity: inward
        cap_faces(idx[-1], cf, up=True),  # cavity floor, normal +z
    ]
    return vertices.astype(np.float64), np.concatenate(faces).astype(np.int64)


def _wall_pieces(hole: np.ndarray, outer: np.ndarray, depth: float, rim: np.ndarray | None = None,
                 knee: float | None = None) -> list[ConvexPiece]:
    """One convex piece per hole edge: corners ``hole[j], outer[j], outer[j+1], hole[j+1]`` from ``z = 0`` to
    ``depth``; with an entry chamfer, the inner edge runs from ``hole`` at ``knee`` to ``rim`` at ``depth``."""
    n = len(hole)
    pieces = []
    for j in range(n):
        k = (j + 1) % n
        if rim is None:
            pieces.append(convex_prism(np.stack([hole[j], outer[j], outer[k], hole[k]]), 0.0, depth))
            continue
        pts = [np.column_stack([hole[[j, k]], [z, z]]) for z in (0.0, knee)]
        pts += [np.column_stack([outer[[j, k]], [z, z]]) for z in (0.0, depth)]
        pts += [np.column_stack([rim[[j, k]], [depth, depth]])]
        pieces.append(hull_piece(np.concatenate(pts), label=f"slot wall {j}"))
    return pieces


def offset_convex(poly: np.ndarray, t: float) -> np.ndarray:
    """Corners ``(n, 2)`` [m] of the convex counter-clockwise polygon ``poly (n, 2)`` with every face moved outward
    by ``t`` [m]: corner ``k`` moves along its angle's bisector by ``t (n₁ + n₂) / (1 + n₁·n₂)``, ``n₁, n₂`` the unit
    normals of its two faces (so a wall split at the corners tiles with its neighbours)."""
    edges = np.roll(poly, -1, axis=0) - poly  # edge k runs from corner k to k + 1
    normals = np.column_stack([edges[:, 1], -edges[:, 0]]) / np.linalg.norm(edges, axis=1)[:, None]
    before = np.roll(normals, 1, axis=0)  # the face ending at corner k
    return poly + t * (before + normals) / (1.0 + np.einsum("ij,ij->i", before, normals))[:, None]


def _check_convex(hole, what: str) -> np.ndarray:
    hole = np.asarray(hole, dtype=np.float64)
    if hole.ndim != 2 or hole.shape[1] != 2 or len(hole) < 3 or not np.isfinite(hole).all():
        raise InvalidInputError(f"{what} must be an (n >= 3, 2) array of finite corners [m], got shape {hole.shape}")
    e = np.roll(hole, -1, axis=0) - hole
    length = np.linalg.norm(e, axis=1)
    if np.any(length == 0.0):
        raise InvalidInputError(f"{what} has a repeated corner ({int(np.argmax(length == 0.0)) + 1})")
    e = e / length[:, None]
    cross = e[:, 0] * np.roll(e, -1, axis=0)[:, 1] - e[:, 1] * np.roll(e, -1, axis=0)[:, 0]
    if np.any(cross <= CONVEXITY_TOL):
        raise InvalidInputError(f"{what} must be a convex polygon, counter-clockwise seen from +z, with no repeated "
                                f"or collinear corner (corner {int(np.argmax(cross <= CONVEXITY_TOL)) + 1} is not)")
    return hole


def cup(
    hole: np.ndarray,
    depth: float,
    *,
    outer: np.ndarray | None = None,
    wall: float = 0.02,
    floor: float = 0.01,
    chamfer: float = 0.0,
    chamfer_angle: float = DEFAULT_CHAMFER_ANGLE,
    name: str = "slot",
    meta: dict | None = None,
) -> Part:
    """A block with a prismatic hole of any convex cross-section ``hole``: the public slot builder.

    Frame: origin at the hole polygon's frame on the cavity floor, opening along +z; walls from ``z = 0`` to
    ``z = depth``, floor slab from ``z = -floor`` to ``0``.

    Args:
        hole: ``(n, 2)`` corners of the hole's section [m], convex, counter-clockwise seen from +z.
        depth: hole depth [m].
        outer: ``(n, 2)`` corners of the block's outline [m]; default ``hole`` offset outward by ``wall``
            (:func:`offset_convex`). Corner ``k`` of ``outer`` must lie on the bisector of corner ``k`` of ``hole``
            (as an offset's or a scaled regular polygon's do), or the wall pieces overlap.
        wall: thickness of the walls [m] where ``outer`` is not given. floor: floor thickness [m].
        chamfer: axial length of the hole's entry chamfer [m] (0: none), below ``depth``.
        chamfer_angle: its bevel's angle from the axis [rad], in (0, π/2); the rim is ``hole`` offset outward by
            ``chamfer · tan(chamfer_angle)``, which must stay inside ``outer``.
        name: part name. meta: extra JSON-compatible facts for ``Part.meta``.

    Returns:
        :class:`Part`: a closed cup surface and ``n + 1`` disjoint convex pieces (one wall piece per hole edge, then
        the floor). ``meta`` holds kind ``"slot"``, depth, floor, chamfer, n_sides and ``meta``.

    Raises:
        InvalidInputError: a hole that is not a convex counter-clockwise polygon, ``outer`` of another shape, a
            non-positive depth, wall or floor, a chamfer as deep as the hole or as wide as the wall.
    """
    hole = _check_convex(hole, "cup hole")
    depth, floor = check_positive("depth", depth), check_positive("floor", floor)
    outer = offset_convex(hole, check_positive("wall", wall)) if outer is None else _check_convex(outer, "cup outer")
    if outer.shape != hole.shape:
        raise InvalidInputError(f"cup outer must have the hole's {len(hole)} corners, got {len(outer)}")
    width = chamfer_width(chamfer, chamfer_angle, "slot entry")
    inner, rim, knee = [(depth, hole), (0.0, hole)], None, None
    if chamfer > 0.0:
        knee, rim = depth - float(chamfer), offset_convex(hole, width)
        if knee <= 0.0 or np.any(np.linalg.norm(rim - hole, axis=1) >= np.linalg.norm(outer - hole, axis=1)):
            raise InvalidInputError(f"slot entry chamfer ({chamfer} m long, {width} m wide) must be shorter than the "
                                    f"hole ({depth} m) and narrower than the wall")
        inner = [(depth, rim), (knee, hole), (0.0, hole)]
    vertices, faces = _cup_surface(inner, outer, depth, floor)
    pieces = (*_wall_pieces(hole, outer, depth, rim, knee), convex_prism(outer, -floor, 0.0))
    facts = {"kind": "slot", "depth": depth, "floor": floor, "chamfer": float(chamfer), "n_sides": len(hole)}
    if chamfer > 0.0:
        facts["chamfer_angle"] = float(chamfer_angle)
    return Part(name, vertices, faces, pieces, facts | (meta or {}))


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
    chamfer: float = 0.0,
    chamfer_angle: float = DEFAULT_CHAMFER_ANGLE,
) -> Part:
    """A block with a prismatic hole of cross-section ``shape``, sized for a peg with ``clearance``.

    Frame: origin at the centre of the hole's bottom (the floor's top surface), hole opening along +z;
    walls from ``z = 0`` to ``z = depth``, floor slab from ``z = -floor`` to ``0``. The hole polygon has
    the orientation of :func:`contactkit.geometry.prism.polygon`, so its faces are parallel to those of a
    peg of the same shape. The outer boundary is the same polygon with apothem ``hole_apothem + wall``.
    Built by :func:`cup`.

    Args:
        shape: the hole's cross-section: a :class:`Shape`, its name, or any regular polygon as ``"<n>-gon"``.
        peg_size: apothem [m] of the peg meant to go in (radius for a circular peg).
        clearance: radial clearance [m] (module docstring), > 0.
        depth: hole depth [m]; wall: minimum wall thickness [m]; floor: floor thickness [m].
        circle_segments: sides of a circular hole.
        name: part name; default ``"slot(<shape>)"``.
        peg_shape: shape of the peg meant to go in; default ``shape``.
        peg_circle_segments: sides of that peg if it is a circle (default: :func:`peg`'s default).
            Use :func:`matching_slot` to read both from a peg part.
        chamfer: axial length of the hole's entry chamfer [m] (0: none; the clearance holds below it).
        chamfer_angle: the chamfer's angle from the axis [rad]; default 45° (its width equals its length).

    Returns:
        :class:`Part`: a closed cup surface and ``n + 1`` disjoint convex pieces (walls, then floor).
        ``meta`` holds kind, shape, peg_shape, peg_size, clearance, depth, wall, floor, hole_apothem,
        outer_apothem, circle_segments, peg_circle_segments, n_sides (and chamfer, chamfer_angle when chamfered).

    Raises:
        InvalidInputError: unknown shape; non-finite or non-positive size, clearance, depth, wall, floor; a
            chamfer as deep as the hole or as wide as the wall.
    """
    kind, n = section(shape, circle_segments)
    label = section_name(shape, circle_segments)
    peg_shape = label if peg_shape is None else peg_shape
    peg_kind, _ = section(peg_shape, peg_circle_segments)
    depth = check_positive("depth", depth)
    wall = check_positive("wall", wall)
    floor = check_positive("floor", floor)
    a_h = hole_apothem(shape, peg_shape, peg_size, clearance, circle_segments=circle_segments,
                       peg_circle_segments=peg_circle_segments)
    hole = polygon(shape, a_h, circle_segments)
    outer = polygon(shape, a_h + wall, circle_segments)
    part = cup(hole, depth, outer=outer, floor=floor, chamfer=chamfer, chamfer_angle=chamfer_angle,
               name=name or f"slot({label})")
    meta = {
        "kind": "slot", "shape": label, "peg_shape": section_name(peg_shape, peg_circle_segments),
        "peg_size": float(peg_size), "clearance": float(clearance), "depth": depth, "wall": wall, "floor": floor,
        "hole_apothem": a_h, "outer_apothem": a_h + wall, "circle_segments": n if kind is Shape.CIRCLE else None,
        "peg_circle_segments": int(peg_circle_segments) if peg_kind is Shape.CIRCLE else None, "n_sides": n,
    }
    if chamfer > 0.0:  # absent without one: the meta (and scene JSON) of earlier slots unchanged
        meta |= {"chamfer": float(chamfer), "chamfer_angle": float(chamfer_angle)}
    return Part(part.name, part.vertices, part.faces, part.pieces, meta)


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
    chamfer: float = 0.0,
    chamfer_angle: float = DEFAULT_CHAMFER_ANGLE,
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
        chamfer, chamfer_angle: the hole's entry chamfer, as in :func:`slot`.

    Raises:
        InvalidInputError: ``peg_part`` has no peg meta, or any :func:`slot` argument is invalid.
    """
    meta = peg_part.meta if isinstance(peg_part, Part) else None
    if not meta or meta.get("kind") != "peg" or "shape" not in meta or "size" not in meta:
        label = getattr(peg_part, "name", repr(peg_part))
        raise InvalidInputError(f"part {label!r} is not a peg made by geometry.peg "
                                "(its meta lacks kind/shape/size)")
    peg_segments = int(meta.get("circle_segments") or DEFAULT_PEG_CIRCLE_SEGMENTS)
    peg_shape = section_name(meta["shape"], peg_segments)
    shape = peg_shape if slot_shape is None else slot_shape
    if circle_segments is None:
        circle_segments = peg_segments if section(peg_shape, peg_segments)[0] is Shape.CIRCLE \
            else DEFAULT_SLOT_CIRCLE_SEGMENTS
    return slot(shape, meta["size"], clearance, depth, wall=wall, floor=floor,
                circle_segments=circle_segments, name=name, peg_shape=peg_shape,
                peg_circle_segments=peg_segments, chamfer=chamfer, chamfer_angle=chamfer_angle)
