"""How far a set of convex pieces is from the solid they stand for: the error report of a convex decomposition
(:func:`contactkit.geometry.decompose`; issue 16, part 1).

Estimated with ``n_samples`` points per sample set drawn from the given generator:

- ``volume_error``: ``vol(U Δ M) / vol(M)``, ``U`` the union of pieces and ``M`` the solid, by Monte-Carlo
  over their common bounding box (inside ``M``: libigl's fast winding number > 1/2; inside ``U``: inside the
  half-spaces of some piece);
- ``hausdorff`` [m]: two-sided Hausdorff distance between the mesh surface and the boundary of ``U``, over
  points sampled on both (area-weighted) and their vertices. Surface points of ``U``: piece-surface samples
  that lie inside no other piece, nor within ``GAP_RTOL`` of the extent outside one (a sliver between pieces
  inside the solid is no boundary); their distance to the mesh is exact (libigl). Mesh points outside ``U``:
  exact distance to the nearest piece; mesh points inside ``U``: the smallest of the distance to the nearest
  ``U`` sample and the distances to where a ray leaves ``U``, along the mesh's outward normal, the outward
  normal of the nearest face of the deepest piece, and ``RAY_DIRECTIONS`` fixed directions (all points of
  ``U``'s boundary: an upper bound, tight where a piece sticks out over the surface);
- ``max_protrusion`` [m]: how far ``U`` sticks out of the solid at most (signed distance of the ``U`` samples,
  positive outside): what a decomposition takes off a fit's clearance.
"""

from __future__ import annotations

import numpy as np

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry.part import ConvexPiece, Part
from contactkit.geometry.signed_distance import signed_distance
from contactkit.geometry.validate import signed_volume

INSIDE_RTOL = 1e-9
"""A point is strictly inside a piece when it lies this fraction of the part's extent inside every face plane."""

GAP_RTOL = 1e-3
"""A gap between pieces narrower than this fraction of the part's extent counts as closed: the two sides of such
a gap (CoACD's cuts leave slivers of tens of µm between pieces, inside the solid) are not the union's boundary."""

BOX_PAD_RTOL = 1e-3
"""The Monte-Carlo box is the bounding box of the mesh and pieces, grown by this fraction of the extent."""

RAY_DIRECTIONS = 32
"""Fixed directions (beside the mesh normal and the deepest piece's nearest face normal) along which a mesh point
inside the union is walked out of it; the shortest walk bounds its distance to the union's boundary from above."""

CHUNK = 4096
"""Points per block in the half-space tests (bounds memory to CHUNK x faces x pieces)."""


# ---- sampling -------------------------------------------------------------------------------------------------
def _planes(piece: ConvexPiece) -> np.ndarray:
    """``(F, 4)`` face planes ``(n, o)`` of a convex piece, ``n·x <= o`` inside, ``|n| = 1``."""
    v, f = piece.vertices, piece.faces
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return np.column_stack([n, np.einsum("ij,ij->i", n, v[f[:, 0]])])


def _depth_in(points: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """``(N,)`` how far each point lies inside a convex piece: ``min_k (o_k - n_k·x)`` [m] (< 0 outside)."""
    out = np.empty(len(points))
    for i in range(0, len(points), CHUNK):
        p = points[i:i + CHUNK]
        out[i:i + CHUNK] = (planes[:, 3][None, :] - p @ planes[:, :3].T).min(axis=1)
    return out


def _areas(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    return 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)


def _surface_samples(v: np.ndarray, f: np.ndarray, n: int, rng: np.random.Generator):
    """``(points (n, 3), face index (n,))``: points uniform over the area of triangles ``f`` of ``v``."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    area = _areas(v, f)
    k = rng.choice(len(f), size=n, p=area / area.sum())
    r1, r2 = rng.random(n), rng.random(n)
    s = np.sqrt(r1)
    return (1 - s)[:, None] * a[k] + (s * (1 - r2))[:, None] * b[k] + (s * r2)[:, None] * c[k], k


def _ray_exit(points: np.ndarray, dirs: np.ndarray, planes: list[np.ndarray], gap: float) -> np.ndarray:
    """``(N,)`` distance [m] along unit ``dirs`` from ``points`` (inside the union) to where the ray first leaves
    the union of the convex pieces (pieces closer than ``gap`` along the ray count as touching): a point of the
    union's boundary, so an upper bound on the distance to it."""
    out = np.empty(len(points))
    for c in range(0, len(points), CHUNK):
        p, d = points[c:c + CHUNK], dirs[c:c + CHUNK]
        enter = np.empty((len(p), len(planes)))
        leave = np.empty((len(p), len(planes)))
        for k, pl in enumerate(planes):  # the ray's span [enter, leave] in each piece (empty: leave < enter)
            den = d @ pl[:, :3].T
            num = pl[:, 3][None, :] - p @ pl[:, :3].T
            with np.errstate(divide="ignore", invalid="ignore"):
                t = num / den
            enter[:, k] = np.where(den < 0, t, -np.inf).max(axis=1)
            leave[:, k] = np.where(((den == 0) & (num < 0)).any(axis=1), -np.inf,
                                   np.where(den > 0, t, np.inf).min(axis=1))
        order = np.argsort(enter, axis=1)  # merge the spans in order of entry
        enter, leave = np.take_along_axis(enter, order, 1), np.take_along_axis(leave, order, 1)
        exit_t = np.zeros(len(p))
        for k in range(len(planes)):
            exit_t = np.where((enter[:, k] <= exit_t + gap) & (leave[:, k] > exit_t), leave[:, k], exit_t)
        out[c:c + CHUNK] = exit_t
    return out


def _union_boundary(pieces, planes, n: int, gap: float, rng: np.random.Generator) -> np.ndarray:
    """Samples of the union's boundary: area-weighted piece-surface samples and piece vertices that lie inside no
    other piece nor within ``gap`` outside one."""
    area = np.array([_areas(p.vertices, p.faces).sum() for p in pieces])
    out = []
    for i, p in enumerate(pieces):
        k = max(1, int(round(n * area[i] / area.sum())))
        pts = np.concatenate([_surface_samples(p.vertices, p.faces, k, rng)[0], p.vertices])
        keep = np.ones(len(pts), dtype=bool)
        for j, pl in enumerate(planes):
            if j != i:
                keep &= _depth_in(pts, pl) <= -gap
        out.append(pts[keep])
    return np.concatenate(out)


def _mesh_to_union(part: Part, pieces, planes, u: np.ndarray, n: int, tol: float, gap: float, rng) -> float:
    """Largest distance [m] from the mesh surface (samples and vertices) to the union's boundary."""
    from scipy.spatial import cKDTree

    v, f = part.vertices, part.faces
    pts, k = _surface_samples(v, f, n, rng)
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])  # area-weighted face normals
    vn = np.zeros_like(v)
    for c in range(3):
        np.add.at(vn, f[:, c], fn)
    m = np.concatenate([pts, v])
    normals = np.concatenate([fn[k], vn])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    depths = np.array([_depth_in(m, pl) for pl in planes])
    deepest = depths.argmax(axis=0)
    depth = depths.max(axis=0)
    cat_v = np.concatenate([p.vertices for p in pieces])
    offsets = np.cumsum([0] + [len(p.vertices) for p in pieces[:-1]])
    cat_f = np.concatenate([p.faces + o for p, o in zip(pieces, offsets, strict=True)])
    d = np.abs(signed_distance((cat_v, cat_f), m))  # exact outside the union
    inside = np.flatnonzero(depth > tol)
    if len(inside):
        # out through the nearest face of the deepest piece, or along the mesh normal, or to a sample
        face_normal = np.array([planes[deepest[i]][np.argmin(planes[deepest[i]][:, 3] - planes[deepest[i]][:, :3]
                                                             @ m[i]), :3] for i in inside])
        q = m[inside]
        dirs = np.concatenate([normals[inside], face_normal]
                              + [np.broadcast_to(e, q.shape) for e in _sphere_directions(RAY_DIRECTIONS)])
        walks = _ray_exit(np.tile(q, (RAY_DIRECTIONS + 2, 1)), dirs, planes, tol).reshape(-1, len(q))
        d[inside] = np.minimum(cKDTree(u).query(q)[0], walks.min(axis=0))
    return float(d.max())


def _sphere_directions(n: int) -> np.ndarray:
    """``(n, 3)`` unit vectors spread evenly over the sphere (Fibonacci lattice)."""
    k = np.arange(n) + 0.5
    z = 1.0 - 2.0 * k / n
    phi = np.pi * (1.0 + 5.0**0.5) * k
    r = np.sqrt(1.0 - z * z)
    return np.column_stack([r * np.cos(phi), r * np.sin(phi), z])


def decomposition_errors(
    part: Part, pieces: tuple[ConvexPiece, ...], rng: np.random.Generator, n_samples: int = 20000
) -> tuple[float, float, float]:
    """How far convex ``pieces`` are from the solid bounded by ``part``'s mesh (module docstring).

    Args:
        part: a closed outward mesh, part frame [m]; pieces: convex pieces in the same frame (non-empty);
        rng: the sampler; n_samples: points per sample set.

    Returns:
        ``(volume_error = vol(U Δ M)/vol(M), hausdorff [m], max_protrusion [m])``, ``U`` the union of the pieces.
    """
    if not pieces:
        raise GeometryError(f"part {part.name!r}: no convex pieces to measure")
    if not isinstance(rng, np.random.Generator):
        raise InvalidInputError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return _errors(part, tuple(pieces), rng, int(n_samples))


def _errors(part: Part, pieces, rng: np.random.Generator, n: int) -> tuple[float, float, float]:
    """``(volume_error, hausdorff [m], max_protrusion [m])`` of the module docstring."""
    import igl

    planes = [_planes(p) for p in pieces]
    allv = np.concatenate([part.vertices] + [p.vertices for p in pieces])
    lo, hi = allv.min(axis=0), allv.max(axis=0)
    extent = float((hi - lo).max())
    tol, gap = INSIDE_RTOL * extent, GAP_RTOL * extent
    u = _union_boundary(pieces, planes, n, gap, rng)
    d_u = signed_distance(part, u)
    hausdorff = max(float(np.abs(d_u).max()), _mesh_to_union(part, pieces, planes, u, n, tol, gap, rng))
    # volume: Monte-Carlo over the padded common bounding box
    pad = BOX_PAD_RTOL * extent
    q = lo - pad + rng.random((n, 3)) * (hi - lo + 2 * pad)
    in_m = igl.fast_winding_number(part.vertices, part.faces, q) > 0.5
    in_u = np.max([_depth_in(q, pl) for pl in planes], axis=0) > 0
    box = float(np.prod(hi - lo + 2 * pad))
    volume_error = box * float(np.mean(in_m != in_u)) / signed_volume(part.vertices, part.faces)
    return volume_error, hausdorff, max(0.0, float(d_u.max()))


def piece_deviation(part: Part, rng: np.random.Generator, n_samples: int = 20000) -> tuple[float, float]:
    """How far ``part``'s convex pieces stick out of its mesh and how deep they leave it uncovered (issue 34,
    part 4: what ``contactkit scene mesh`` compares with the fit's clearance).

    - protrusion [m]: the largest signed distance to the mesh (positive outside, libigl exact) of the pieces'
      vertices (every one) and of ``n_samples`` points on the pieces' surfaces (area-weighted): a point of a
      piece outside the solid is where the pieces, not the mesh, stop a mating part;
    - uncovered [m]: of the mesh's vertices and ``n_samples`` points on its surface that lie outside every
      piece, the largest exact distance to the nearest piece: where a mating part can go into the solid
      without touching a piece.

    Both are lower bounds that converge with ``n_samples`` (exact at the vertices); 0 for a perfect cover.

    Args:
        part: a closed outward mesh with convex pieces, part frame [m]; rng: the sampler; n_samples: > 0.

    Returns:
        ``(protrusion [m] >= 0, uncovered [m] >= 0)``.

    Raises:
        GeometryError: a part without pieces. InvalidInputError: rng not a numpy Generator.
    """
    pieces = tuple(part.pieces)
    if not pieces:
        raise GeometryError(f"part {part.name!r}: no convex pieces to measure")
    if not isinstance(rng, np.random.Generator):
        raise InvalidInputError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    cat_v = np.concatenate([p.vertices for p in pieces])
    offsets = np.cumsum([0] + [len(p.vertices) for p in pieces[:-1]])
    cat_f = np.concatenate([p.faces + o for p, o in zip(pieces, offsets, strict=True)])
    out_pts = np.concatenate([cat_v, _surface_samples(cat_v, cat_f, int(n_samples), rng)[0]])
    protrusion = max(0.0, float(signed_distance(part, out_pts).max()))
    m = np.concatenate([part.vertices, _surface_samples(part.vertices, part.faces, int(n_samples), rng)[0]])
    extent = float(np.ptp(np.concatenate([part.vertices, cat_v]), axis=0).max())
    depth = np.max([_depth_in(m, _planes(p)) for p in pieces], axis=0)
    bare = m[depth < -INSIDE_RTOL * extent]
    uncovered = float(np.abs(signed_distance((cat_v, cat_f), bare)).max()) if len(bare) else 0.0
    return protrusion, uncovered
