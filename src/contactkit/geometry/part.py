"""A rigid part: a closed triangle mesh plus the convex pieces that collision detection uses.

Vertices are in the part frame [m]. Faces are vertex-index triplets wound counter-clockwise seen from
outside, so face normals point out of the solid and the signed volume is positive.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ConvexPiece:
    """One convex solid of a part.

    Attributes:
        vertices: ``(V, 3)`` float64, part frame [m].
        faces: ``(F, 3)`` int64, outward counter-clockwise triangles of the convex hull.
    """

    vertices: np.ndarray
    faces: np.ndarray

    def to_dict(self) -> dict:
        """JSON-compatible form."""
        return {"vertices": self.vertices.tolist(), "faces": self.faces.tolist()}

    @staticmethod
    def from_dict(d: dict) -> ConvexPiece:
        """Inverse of :meth:`to_dict`."""
        return ConvexPiece(np.asarray(d["vertices"], dtype=np.float64), np.asarray(d["faces"], dtype=np.int64))


@dataclass(frozen=True)
class Part:
    """A named rigid part.

    Attributes:
        name: what error messages call the part (e.g. ``"peg(hexagon)"``).
        vertices: ``(V, 3)`` float64 vertices of the closed surface mesh, part frame [m].
        faces: ``(F, 3)`` int64 outward triangles of the surface mesh.
        pieces: convex pieces whose union is the solid, used for collision.
        meta: JSON-compatible facts about how the part was made (shape, size, clearance, ...).
    """

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    pieces: tuple[ConvexPiece, ...]
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-compatible form (lists of floats and ints)."""
        return {
            "name": self.name,
            "vertices": self.vertices.tolist(),
            "faces": self.faces.tolist(),
            "pieces": [p.to_dict() for p in self.pieces],
            "meta": self.meta,
        }

    @staticmethod
    def from_dict(d: dict) -> Part:
        """Inverse of :meth:`to_dict`."""
        return Part(
            name=str(d["name"]),
            vertices=np.asarray(d["vertices"], dtype=np.float64),
            faces=np.asarray(d["faces"], dtype=np.int64),
            pieces=tuple(ConvexPiece.from_dict(p) for p in d["pieces"]),
            meta=dict(d.get("meta", {})),
        )


def mesh_sha256(vertices: np.ndarray, faces: np.ndarray) -> str:
    """Hex SHA-256 of a triangle mesh: its ``(V, 3)`` vertices as little-endian float64 [m] followed by its
    ``(F, 3)`` faces as little-endian int64, both C-ordered, with the two shapes in front.

    What ties a derived artefact to the exact mesh it came from (a convex decomposition in the cache, a
    learned depth network's checkpoint): the same geometry gives the same hash whatever file it was read
    from; moving one vertex by one ulp changes it.
    """
    v = np.ascontiguousarray(vertices, dtype="<f8")
    f = np.ascontiguousarray(faces, dtype="<i8")
    h = hashlib.sha256()
    h.update(np.asarray(v.shape + f.shape, dtype="<i8").tobytes())
    h.update(v.tobytes())
    h.update(f.tobytes())
    return h.hexdigest()
