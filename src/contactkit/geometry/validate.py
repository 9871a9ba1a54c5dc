"""Checks that a triangle mesh bounds a solid, and that a part's convex pieces are convex solids.

Every failure raises :class:`~contactkit.errors.GeometryError` whose message starts with a label (the
part name, or the file a mesh came from) and names the problem. Checks, in order:

1. arrays: ``vertices (V, 3)`` float, ``faces (F, 3)`` integer, neither empty;
2. every coordinate finite, and ``|x| <= MAX_ABS_COORDINATE`` (a mesh 1e9 m from the origin keeps only
   ~1e-7 m of resolution, so it is refused with a request to recentre it);
3. face indices within ``[0, V)``, every vertex used by some face;
4. (solids only) not all vertices collinear or coplanar;
5. no face with a repeated vertex or (near-)zero area, no two faces over the same three vertices;
6. (solids only) closed: every edge shared by exactly two faces, traversed in opposite directions
   (consistent winding);
7. (solids only) signed volume (divergence theorem, sum of tetrahedra) positive and not negligible:
   negative means the faces are wound inward.

:func:`check_self_intersections` (not part of :func:`check_solid`: it costs about a second for 10k faces) finds
faces that cross each other; mesh files and :func:`contactkit.geometry.decompose` run it.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from contactkit.errors import GeometryError
from contactkit.geometry.part import ConvexPiece, Part

MAX_ABS_COORDINATE = 1.0e3
"""Largest accepted |coordinate| [m]: beyond it float64 resolution is coarser than ~1e-13 m per metre."""

FLAT_RTOL = 1e-9
"""Vertices count as coplanar (collinear) when the smallest (second) singular value of the centred
vertex cloud is below this fraction of the largest."""

AREA_RTOL = 1e-14
"""A face is degenerate when its area is below this fraction of the squared bounding-box extent."""

VOLUME_RTOL = 1e-12
"""A closed mesh has no volume when |volume| is below this fraction of the cubed bounding-box extent."""

CONVEX_VOLUME_RTOL = 1e-7
"""A closed mesh is convex when its volume equals its convex hull's to this relative tolerance."""


def _fail(label: str, problem: str) -> GeometryError:
    return GeometryError(f"{label}: {problem}")


def signed_volume(vertices: np.ndarray, faces: np.ndarray) -> float:
    """Signed volume [m^3] enclosed by triangles ``faces (F, 3)`` over ``vertices (V, 3)`` [m].

    Divergence theorem: sum over faces of ``(a - r) . ((b - r) x (c - r)) / 6`` with ``r`` the vertex mean
    (any ``r`` gives the same value for a closed mesh; the mean limits rounding). Positive for a closed
    mesh wound counter-clockwise seen from outside.
    """
    v = np.asarray(vertices, dtype=np.float64)
    v = v - v.mean(axis=0)
    a, b, c = v[faces[:, 0]], v[faces[:, 1]], v[faces[:, 2]]
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0)


def check_arrays(vertices, faces, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Checks 1-3 of the module docstring; returns ``(vertices float64 (V, 3), faces int64 (F, 3))``."""
    try:
        v = np.asarray(vertices, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise _fail(label, f"vertices are not numbers ({e})") from None
    try:
        f = np.asarray(faces)
    except (TypeError, ValueError) as e:
        raise _fail(label, f"faces are not an index array ({e})") from None
    if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
        raise _fail(label, f"empty or malformed vertices: need shape (V>0, 3), got {v.shape}")
    if f.ndim != 2 or f.shape[1] != 3 or len(f) == 0:
        raise _fail(label, f"empty or malformed faces: need shape (F>0, 3) triangles, got {f.shape}")
    if not np.issubdtype(f.dtype, np.integer):
        raise _fail(label, f"face indices must be integers, got dtype {f.dtype}")
    f = f.astype(np.int64)
    bad = ~np.isfinite(v)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise _fail(label, f"non-finite vertex coordinate ({v[i, j]}) at vertex {i}, axis {'xyz'[j]}")
    biggest = float(np.abs(v).max())
    if biggest > MAX_ABS_COORDINATE:
        raise _fail(label, f"huge coordinates: |x| reaches {biggest:.3g} m, beyond {MAX_ABS_COORDINATE:g} m "
                    "(float64 precision loss); recentre the mesh near its origin")
    out = (f < 0) | (f >= len(v))
    if out.any():
        k = int(np.argwhere(out)[0][0])
        raise _fail(label, f"bad face index: face {k} refers to vertices {f[k].tolist()} but there are "
                    f"{len(v)} vertices (0-based)")
    unused = np.setdiff1d(np.arange(len(v)), f.ravel())
    if len(unused):
        raise _fail(label, f"{len(unused)} vertices are used by no face (first: {int(unused[0])})")
    return v, f


def _extent(v: np.ndarray) -> float:
    return float(np.ptp(v, axis=0).max())


def check_not_flat(v: np.ndarray, label: str) -> None:
    """Check 4: raise when all vertices lie on one line or one plane (zero volume)."""
    s = np.linalg.svd(v - v.mean(axis=0), compute_uv=False) if len(v) >= 3 else np.zeros(3)
    s = np.concatenate([s, np.zeros(3 - len(s))])
    if s[0] == 0.0 or s[1] <= FLAT_RTOL * s[0]:
        raise _fail(label, "degenerate: all vertices are collinear (zero area, zero volume)")
    if s[2] <= FLAT_RTOL * s[0]:
        raise _fail(label, "degenerate: all vertices are coplanar (zero volume)")


def check_faces(v: np.ndarray, f: np.ndarray, label: str) -> None:
    """Check 5: no repeated vertex in a face, no zero-area face, no duplicate face."""
    rep = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 0] == f[:, 2])
    if rep.any():
        k = int(np.argmax(rep))
        raise _fail(label, f"degenerate face {k}: repeated vertex {f[k].tolist()}")
    area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
    small = area <= AREA_RTOL * _extent(v) ** 2
    if small.any():
        k = int(np.argmax(small))
        raise _fail(label, f"degenerate face {k}: zero area (collinear vertices {f[k].tolist()})")
    _, first, counts = np.unique(np.sort(f, axis=1), axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        key = np.sort(f, axis=1)[first[np.argmax(counts > 1)]]
        dup = np.flatnonzero((np.sort(f, axis=1) == key).all(axis=1))
        raise _fail(label, f"duplicate faces {dup.tolist()} over the same vertices {key.tolist()}")


def check_closed(f: np.ndarray, label: str) -> None:
    """Check 6: every edge in exactly two faces with opposite directions (watertight, consistent winding)."""
    directed = f[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    undirected, counts = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    if (counts == 1).any():
        e = undirected[counts == 1]
        raise _fail(label, f"not watertight: {len(e)} open edges (boundary edges used by one face, first "
                    f"{e[0].tolist()})")
    if (counts > 2).any():
        e = undirected[counts > 2]
        raise _fail(label, f"not watertight: {len(e)} non-manifold edges shared by more than two faces "
                    f"(first {e[0].tolist()})")
    _, dcounts = np.unique(directed, axis=0, return_counts=True)
    if (dcounts > 1).any():
        raise _fail(label, f"inconsistent winding: {int((dcounts > 1).sum())} edges traversed in the same "
                    "direction by both of their faces")


def check_solid(
    vertices, faces, label: str, *, need_volume: bool = True
) -> tuple[np.ndarray, np.ndarray, float]:
    """Run checks 1-7 (1-3 and 5 only when ``need_volume`` is False).

    Returns:
        ``(vertices (V, 3) float64, faces (F, 3) int64, volume [m^3])``; volume is NaN when not checked.
    """
    v, f = check_arrays(vertices, faces, label)
    if need_volume:
        check_not_flat(v, label)
    check_faces(v, f, label)
    if not need_volume:
        return v, f, float("nan")
    check_closed(f, label)
    vol = signed_volume(v, f)
    if abs(vol) <= VOLUME_RTOL * _extent(v) ** 3:
        raise _fail(label, f"zero volume ({vol:.3g} m^3): the closed surface encloses nothing")
    if vol < 0:
        raise _fail(label, f"flipped winding: faces wound inward (signed volume {vol:.3g} m^3 < 0)")
    return v, f, vol


def _hull_error(label: str, e: Exception) -> GeometryError:
    return _fail(label, f"convex hull failed (flat or degenerate points): {str(e).splitlines()[0]}")


def hull_volume(vertices: np.ndarray, label: str) -> float:
    """Volume [m^3] of the convex hull of ``vertices (V, 3)`` [m]; GeometryError if it has none."""
    try:
        return float(ConvexHull(vertices).volume)
    except (QhullError, ValueError) as e:
        raise _hull_error(label, e) from None


def is_convex(vertices: np.ndarray, faces: np.ndarray, label: str = "mesh") -> bool:
    """Whether a closed outward mesh (passing :func:`check_solid`) bounds a convex solid.

    The solid lies inside its convex hull, so it equals the hull exactly when the volumes agree
    (to ``CONVEX_VOLUME_RTOL``).
    """
    vol = signed_volume(vertices, faces)
    hv = hull_volume(vertices, label)
    return abs(hv - vol) <= CONVEX_VOLUME_RTOL * hv


def hull_piece(vertices: np.ndarray, label: str = "mesh") -> ConvexPiece:
    """The convex hull of ``vertices (V, 3)`` [m] as a :class:`ConvexPiece` (outward counter-clockwise)."""
    try:
        hull = ConvexHull(np.asarray(vertices, dtype=np.float64))
    except (QhullError, ValueError) as e:
        raise _hull_error(label, e) from None
    keep = np.unique(hull.simplices)
    remap = np.full(len(hull.points), -1, dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    pts = hull.points[keep]
    tri = remap[hull.simplices]
    normal = np.cross(pts[tri[:, 1]] - pts[tri[:, 0]], pts[tri[:, 2]] - pts[tri[:, 0]])
    flip = np.einsum("ij,ij->i", normal, hull.equations[:, :3]) < 0
    tri[flip] = tri[flip][:, [0, 2, 1]]
    return ConvexPiece(pts, tri)


def validate_part(part: Part, *, need_volume: bool = True) -> Part:
    """Check that ``part`` is well formed and return it unchanged.

    The surface mesh passes checks 1-7 of the module docstring (1-3 and 5 when ``need_volume`` is
    False, e.g. for a display-only shell). Every convex piece passes checks 1-7 and is convex (its
    volume equals its hull's). Nothing is repaired.

    Raises:
        GeometryError: message starts with ``part.name`` (and the piece index) and names the problem.
    """
    if not isinstance(part, Part):
        raise GeometryError(f"expected a Part, got {type(part).__name__}")
    label = f"part {part.name!r}"
    check_solid(part.vertices, part.faces, label, need_volume=need_volume)
    for i, piece in enumerate(part.pieces):
        plabel = f"{label} piece {i}"
        if not isinstance(piece, ConvexPiece):
            raise GeometryError(f"{plabel}: expected a ConvexPiece, got {type(piece).__name__}")
        v, f, _ = check_solid(piece.vertices, piece.faces, plabel)
        if not is_convex(v, f, plabel):
            raise _fail(plabel, "not convex: its volume is smaller than its convex hull's")
    return part


# ---- self-intersection -----------------------------------------------------------------------------------------
SELF_INTERSECTION_RTOL = 1e-9
"""Crossings shallower than this fraction of the mesh's extent are grazing contacts, not self-intersections."""

PAIR_CHUNK = 1 << 20
"""Candidate triangle pairs tested per block (bounds memory)."""


def _candidate_pairs(lo: np.ndarray, hi: np.ndarray):
    """Blocks of at most about ``PAIR_CHUNK`` pairs ``(P, 2)``, ``i != j``, of boxes ``lo, hi (F, 3)`` that overlap
    on every axis (sweep and prune along the axis with the fewest overlaps); a generator."""
    best = None
    for a in range(3):
        order = np.argsort(lo[:, a], kind="stable")
        ends = np.searchsorted(lo[order, a], hi[order, a], side="right")
        counts = np.maximum(ends - np.arange(len(order)) - 1, 0)
        if best is None or counts.sum() < best[1].sum():
            best = (order, counts)
    order, counts = best
    bounds = np.searchsorted(np.cumsum(counts), np.arange(PAIR_CHUNK, int(counts.sum()) + PAIR_CHUNK, PAIR_CHUNK))
    start = 0
    for stop in np.unique(np.minimum(bounds + 1, len(order))):
        k, cnt = np.arange(start, stop), counts[start:stop]
        start = stop
        first = np.repeat(k, cnt)
        offset = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        i, j = order[first], order[first + 1 + offset]
        keep = ((lo[i] <= hi[j]) & (lo[j] <= hi[i])).all(axis=1)
        yield np.column_stack([i[keep], j[keep]])


def _edge_crosses(s0, s1, a, b, c, n, tol) -> np.ndarray:
    """Whether segments ``s0 s1 (P, 3)`` properly cross the interiors of triangles ``a b c`` (unit normals ``n``)."""
    d0 = np.einsum("ij,ij->i", n, s0 - a)
    d1 = np.einsum("ij,ij->i", n, s1 - a)
    cross = ((d0 > tol) & (d1 < -tol)) | ((d0 < -tol) & (d1 > tol))
    t = np.divide(d0, d0 - d1, out=np.zeros_like(d0), where=cross)
    x = s0 + t[:, None] * (s1 - s0)
    inside = cross
    for p, q in ((a, b), (b, c), (c, a)):
        e = q - p
        side = np.einsum("ij,ij->i", np.cross(n, e), x - p) / np.maximum(np.linalg.norm(e, axis=1), 1e-300)
        inside &= side > tol
    return inside


def _pairs_intersect(v, f, n, pairs, tol) -> np.ndarray:
    """Which candidate pairs ``(P, 2)`` of faces intersect beyond what they share (vertex or edge)."""
    fi, fj = f[pairs[:, 0]], f[pairs[:, 1]]
    shared = (fi[:, :, None] == fj[:, None, :]).sum(axis=(1, 2))
    hit = np.zeros(len(pairs), dtype=bool)
    ni, nj = n[pairs[:, 0]], n[pairs[:, 1]]
    # sharing an edge: only a fold back onto itself (coplanar, opposite normals) overlaps
    hit |= (shared == 2) & (np.einsum("ij,ij->i", ni, nj) < -1.0 + 1e-12)
    # sharing no vertex: an edge of one properly crosses the other
    m = shared == 0
    if m.any():
        a, b = v[fi[m]], v[fj[m]]
        cr = np.zeros(int(m.sum()), dtype=bool)
        for x, y, ny in ((a, b, nj[m]), (b, a, ni[m])):
            for k in range(3):
                cr |= _edge_crosses(x[:, k], x[:, (k + 1) % 3], y[:, 0], y[:, 1], y[:, 2], ny, tol)
        hit[m] = cr
    # sharing one vertex p: each meets the other's plane along the line through p; they overlap on it beyond p
    # when both opposite edges cross the other plane and the two crossing points lie on the same side of p
    m = shared == 1
    if m.any():
        hit[m] = _one_vertex_overlap(v, fi[m], fj[m], ni[m], nj[m], tol)
    # coplanar faces sharing at most a vertex: overlap in their plane
    d = np.abs(np.einsum("ikj,ij->ik", v[fj] - v[fi][:, :1], ni)).max(axis=1)
    m = (shared <= 1) & (np.abs(np.einsum("ij,ij->i", ni, nj)) > 1.0 - 1e-12) & (d <= tol)
    if m.any():
        hit[m] |= _coplanar_overlap(v[fi[m]], v[fj[m]], ni[m], tol)
    return hit


def _coplanar_overlap(a: np.ndarray, b: np.ndarray, n: np.ndarray, tol: float) -> np.ndarray:
    """For coplanar triangles ``a, b (P, 3, 3)`` (unit normal ``n`` of ``a``): whether their interiors overlap,
    i.e. an edge of one properly crosses an edge of the other, or a vertex of one lies strictly inside the other."""
    u = np.cross(n, np.where(np.abs(n[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    w = np.cross(n, u)
    a2 = np.stack([np.einsum("ikj,ij->ik", a, u), np.einsum("ikj,ij->ik", a, w)], axis=-1)
    b2 = np.stack([np.einsum("ikj,ij->ik", b, u), np.einsum("ikj,ij->ik", b, w)], axis=-1)

    def side(p, q, r):  # signed distance of r from the line p -> q (left positive)
        e = q - p
        return (e[:, 0] * (r - p)[:, 1] - e[:, 1] * (r - p)[:, 0]) / np.maximum(np.linalg.norm(e, axis=1), 1e-300)

    def strictly_inside(x, t):  # point x (P, 2) strictly inside triangle t (P, 3, 2) of either orientation
        s = np.stack([side(t[:, k], t[:, (k + 1) % 3], x) for k in range(3)])
        return (s > tol).all(axis=0) | (s < -tol).all(axis=0)

    hit = np.zeros(len(a), dtype=bool)
    for k in range(3):
        hit |= strictly_inside(a2[:, k], b2) | strictly_inside(b2[:, k], a2)
        for m in range(3):
            p0, p1, q0, q1 = a2[:, k], a2[:, (k + 1) % 3], b2[:, m], b2[:, (m + 1) % 3]
            s0, s1, s2, s3 = side(p0, p1, q0), side(p0, p1, q1), side(q0, q1, p0), side(q0, q1, p1)
            hit |= (((s0 > tol) & (s1 < -tol)) | ((s0 < -tol) & (s1 > tol))) & (
                ((s2 > tol) & (s3 < -tol)) | ((s2 < -tol) & (s3 > tol)))
    return hit


def _one_vertex_overlap(v, fi, fj, ni, nj, tol) -> np.ndarray:
    """For faces sharing exactly one vertex: whether they overlap beyond it (non-coplanar pairs)."""
    eq = fi[:, :, None] == fj[:, None, :]
    ki, kj = eq.any(axis=2).argmax(axis=1), eq.any(axis=1).argmax(axis=1)
    rows = np.arange(len(fi))
    p = v[fi[rows, ki]]

    def crossing(face, k, n_other):
        a, b = v[face[rows, (k + 1) % 3]], v[face[rows, (k + 2) % 3]]
        da, db = np.einsum("ij,ij->i", n_other, a - p), np.einsum("ij,ij->i", n_other, b - p)
        ok = ((da > tol) & (db < -tol)) | ((da < -tol) & (db > tol))
        t = np.divide(da, da - db, out=np.zeros_like(da), where=ok)
        return ok, a + t[:, None] * (b - a) - p

    ok_i, qi = crossing(fi, ki, nj)
    ok_j, qj = crossing(fj, kj, ni)
    return ok_i & ok_j & (np.einsum("ij,ij->i", qi, qj) > tol * tol)


def check_self_intersections(vertices: np.ndarray, faces: np.ndarray, label: str) -> None:
    """Raise when two faces of a mesh cross each other (the surface passes through itself).

    Broad phase: triangle bounding boxes, sweep and prune. Exact tests (float64, tolerance
    ``SELF_INTERSECTION_RTOL`` × extent, so grazing contacts pass): faces with no common vertex intersect when an
    edge of one properly crosses the other's interior; faces sharing one vertex when they overlap along their
    planes' common line beyond it; faces sharing an edge when folded flat onto each other; coplanar faces sharing
    at most a vertex when an edge of one properly crosses an edge of the other or a vertex of one lies strictly
    inside the other (not detected: coplanar faces sharing a vertex whose sectors coincide exactly).

    Args:
        vertices: ``(V, 3)`` [m]; faces: ``(F, 3)`` triangles with non-zero area (:func:`check_faces`).

    Raises:
        GeometryError: ``"<label>: self-intersecting: faces i and j intersect ..."``.
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    tol = SELF_INTERSECTION_RTOL * _extent(v)
    tri = v[f]
    lo, hi = tri.min(axis=1) - tol, tri.max(axis=1) + tol
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    for block in _candidate_pairs(lo, hi):
        hit = _pairs_intersect(v, f, n, block, tol)
        if hit.any():
            i, j = sorted(int(x) for x in block[np.argmax(hit)])
            raise _fail(label, f"self-intersecting: faces {i} and {j} intersect ({int(hit.sum())} such pairs in "
                        "this block): the surface passes through or folds onto itself")
