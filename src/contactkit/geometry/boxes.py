"""Axis-aligned boxes (Act-FIGNet paper §IV-A: the box obstacles of the training scenes)."""

from __future__ import annotations

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.geometry.part import ConvexPiece, Part
from contactkit.geometry.prism import check_positive, loft


def box(size: tuple[float, float, float], name: str = "box") -> Part:
    """A solid box centred at the origin of its frame, edges along the frame axes.

    Args:
        size: full extents ``(sx, sy, sz)`` [m] along x, y, z; each finite and > 0.
        name: part name.

    Returns:
        :class:`Part` with 8 vertices and 12 outward triangles; its single convex piece is the same mesh.
        ``meta = {"kind": "box", "size": [sx, sy, sz]}``.

    Raises:
        InvalidInputError: ``size`` is not three finite positive numbers.
    """
    try:
        n = len(size)
    except TypeError:
        raise InvalidInputError(f"box size must be 3 extents (sx, sy, sz) [m], got {size!r}") from None
    if n != 3:
        raise InvalidInputError(f"box size must be 3 extents (sx, sy, sz) [m], got {n} values")
    sx, sy, sz = (check_positive(f"box size[{i}]", v) for i, v in enumerate(size))
    hx, hy, hz = sx / 2.0, sy / 2.0, sz / 2.0
    rect = np.array([[-hx, -hy], [hx, -hy], [hx, hy], [-hx, hy]])
    vertices, faces = loft([(-hz, rect), (hz, rect)], centre_caps=False)
    piece = ConvexPiece(vertices.copy(), faces.copy())
    return Part(name, vertices, faces, (piece,), {"kind": "box", "size": [sx, sy, sz]})
