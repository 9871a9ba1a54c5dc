"""A user's part from a mesh file: read, checked, scaled to metres and given convex pieces, in one call.

The file is read and checked by :func:`contactkit.geometry.load_mesh` (OBJ, STL, PLY, OFF), its coordinates scaled
from the file's length unit to metres (:data:`LENGTH_UNITS`), and a non-convex solid decomposed into convex pieces by
:func:`contactkit.geometry.decompose` (CoACD, cached on disk where ``cache_dir`` is given; issue 16). A convex solid
keeps its one piece (its hull).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from contactkit.errors import InvalidInputError
from contactkit.geometry.decompose import DecompositionReport, DecompositionSettings, decompose
from contactkit.geometry.mesh_io import load_mesh
from contactkit.geometry.part import ConvexPiece, Part

LENGTH_UNITS = {"m": 1.0, "cm": 1e-2, "mm": 1e-3, "um": 1e-6, "in": 0.0254}
"""Length units a mesh file may be written in → metres per unit."""


def length_scale(units: str) -> float:
    """Metres per unit of ``units`` (a key of :data:`LENGTH_UNITS`).

    Raises:
        InvalidInputError: an unknown unit (the message lists the known ones).
    """
    if units not in LENGTH_UNITS:
        raise InvalidInputError(f"unknown length unit {units!r}; valid: {sorted(LENGTH_UNITS)}")
    return LENGTH_UNITS[units]


def scaled(part: Part, factor: float) -> Part:
    """``part`` with its vertices and pieces multiplied by ``factor`` (> 0; e.g. 1e-3 from mm to m)."""
    if not factor > 0.0:
        raise InvalidInputError(f"scale factor must be > 0, got {factor!r}")
    if factor == 1.0:
        return part
    pieces = tuple(ConvexPiece(p.vertices * factor, p.faces) for p in part.pieces)
    meta = dict(part.meta) | {"scale": factor}
    for key, power in (("volume", 3), ("hull_volume", 3)):
        if key in meta:
            meta[key] = meta[key] * factor**power
    return dataclasses.replace(part, vertices=part.vertices * factor, pieces=pieces, meta=meta)


def load_part(
    path: str | Path,
    *,
    units: str = "m",
    name: str | None = None,
    settings: DecompositionSettings | None = None,
    cache_dir: str | Path | None = None,
) -> tuple[Part, DecompositionReport]:
    """A part from the mesh file ``path`` with convex pieces (module docstring).

    Args:
        path: OBJ, STL, PLY or OFF file of a closed, outward, non-self-intersecting solid.
        units: the file's length unit (:data:`LENGTH_UNITS`); the part is in metres.
        name: part name; default the file's stem.
        settings: CoACD settings (:class:`DecompositionSettings`); None: defaults.
        cache_dir: folder of cached decompositions; None: no cache.

    Returns:
        ``(part [m] with convex pieces, DecompositionReport)``; the report's lengths are in metres.

    Raises:
        GeometryError: naming the file: unreadable, malformed, not a closed solid, self-intersecting, or CoACD fails.
        InvalidInputError: an unknown unit or bad settings.
    """
    factor = length_scale(units)
    part = scaled(load_mesh(path, name=name), factor)
    return decompose(part, settings, cache_dir=cache_dir)
