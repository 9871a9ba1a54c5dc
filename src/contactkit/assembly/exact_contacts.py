"""Exact node contacts of the tool against the static part's mesh: the reference's contact detection.

Every tool node (a surface vertex, paper §II "original contact nodes") is tested against the EXACT signed distance
of the static triangle mesh: the same function :func:`contactkit.geometry.signed_distance` computes with libigl
(closest point on the mesh, sign by the angle-weighted pseudonormal of the closest feature), here with the closest
point and the normal as well. The normal is the unit direction from the closest surface point to the node,
signed to point out of the static part (into the tool), or the pseudonormal where the node lies on the surface.

Speed (measured, 1281 peg nodes in the bore): libigl's ``signed_distance`` rebuilds its AABB tree per call
(9 ms hole, 35 ms bolt) and a cached ``igl.AABB`` still takes 6.4 ms; the reference needs ~200k steps per task.
So the static mesh is indexed once (cached per mesh hash) in a uniform grid of cells of :data:`CELL_SIZE` listing
every face whose bounding box grown by :data:`REACH` meets the cell; a node then scans only its cell's faces in a
numba kernel. Exactness: a face within ``REACH`` of a node has its grown box around the node, so it is listed in
the node's cell; a node farther than ``REACH`` from every face is on the same side of the surface as its cell's
centre (the cell's half diagonal is below ``REACH``). The side of every cell centre is found once, when the grid is
built: exactly where the centre is within ``REACH`` of a face, and by flood fill elsewhere (two face-adjacent centres
both farther than ``REACH`` from the surface are on the same side, since ``CELL_SIZE <= REACH``; a far region that
does not touch the grid's border gets libigl's winding number at one of its centres). A node deeper inside than
``REACH`` falls back to libigl's exact signed distance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from contactkit.assembly.task import AssemblyTask
from contactkit.depth import NodeContacts
from contactkit.errors import InvalidInputError
from contactkit.geometry.part import mesh_sha256
from contactkit.rotations import quat_to_mat
from contactkit.state import BodyState

REACH = 5e-4
"""[m] distance to which the grid lists faces: exact contacts for any ``margin <= REACH``."""
CELL_SIZE = 5e-4
"""[m] grid cell edge; its half diagonal (0.43 mm) must stay below :data:`REACH` (module docstring)."""
ON_SURFACE = 1e-12
"""[m] below this node-to-surface distance the normal is the pseudonormal, not the (undefined) direction."""
MAX_CELLS = 60_000_000
"""Largest grid accepted (memory guard: 8 bytes per cell for the index)."""


@dataclass(frozen=True, eq=False)
class MeshIndex:
    """Static mesh with pseudonormals and its face grid (built once per mesh, :func:`mesh_index`).

    Attributes:
        vertices ``(V, 3)`` [m], faces ``(F, 3)`` int64, face_normals ``(F, 3)`` unit outward,
        edge_normals ``(F, 3, 3)`` (edge k = corners k→k+1: sum of the two adjacent face normals),
        vertex_normals ``(V, 3)`` (angle-weighted), lo ``(3,)`` grid origin [m], dims ``(3,)`` int64 cells,
        start ``(C+1,)`` int64 CSR offsets, cell_faces ``(E,)`` int32, cell_sign ``(C,)`` int8 (+1: the cell's
        centre is outside, -1 inside; :func:`_cell_signs`), sha256 of the mesh.
    """

    vertices: np.ndarray
    faces: np.ndarray
    face_normals: np.ndarray
    edge_normals: np.ndarray
    vertex_normals: np.ndarray
    lo: np.ndarray
    dims: np.ndarray
    start: np.ndarray
    cell_faces: np.ndarray
    cell_sign: np.ndarray
    sha256: str


_CACHE: dict[str, MeshIndex] = {}
_BY_ARRAYS: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, MeshIndex]] = {}


def _pseudonormals(v: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tri = v[f]
    fn = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    fn /= np.linalg.norm(fn, axis=1, keepdims=True)
    vn = np.zeros_like(v)
    for k in range(3):
        a = tri[:, (k + 1) % 3] - tri[:, k]
        b = tri[:, (k + 2) % 3] - tri[:, k]
        cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        np.add.at(vn, f[:, k], fn * np.arccos(np.clip(cos, -1.0, 1.0))[:, None])
    edges = np.stack([f, np.roll(f, -1, axis=1)], axis=2).reshape(-1, 2)  # (3F, 2): face-major, edge k
    key = np.sort(edges, axis=1)
    _, inverse = np.unique(key, axis=0, return_inverse=True)
    en_sum = np.zeros((inverse.max() + 1, 3))
    np.add.at(en_sum, inverse.reshape(-1), np.repeat(fn, 3, axis=0))
    return fn, en_sum[inverse.reshape(-1)].reshape(-1, 3, 3), vn


@njit(cache=True)
def _fill_grid(tri, lo, cell, dims, reach, start, out):
    """Count (``out`` empty) or fill the CSR lists of faces whose box grown by ``reach`` meets each cell."""
    fill = out.shape[0] > 0
    cursor = start[:-1].copy()
    for f in range(tri.shape[0]):
        i0 = np.empty(3, np.int64)
        i1 = np.empty(3, np.int64)
        for a in range(3):
            mn = min(tri[f, 0, a], tri[f, 1, a], tri[f, 2, a]) - reach
            mx = max(tri[f, 0, a], tri[f, 1, a], tri[f, 2, a]) + reach
            i0[a] = max(int(math.floor((mn - lo[a]) / cell)), 0)
            i1[a] = min(int(math.floor((mx - lo[a]) / cell)), dims[a] - 1)
        for x in range(i0[0], i1[0] + 1):
            for y in range(i0[1], i1[1] + 1):
                for z in range(i0[2], i1[2] + 1):
                    c = (x * dims[1] + y) * dims[2] + z
                    if fill:
                        out[cursor[c]] = f
                        cursor[c] += 1
                    else:
                        start[c + 1] += 1


def mesh_index(vertices: np.ndarray, faces: np.ndarray) -> MeshIndex:
    """The :class:`MeshIndex` of a closed outward-wound mesh ``(V, 3)`` [m], ``(F, 3)``; cached by mesh hash."""
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    f = np.ascontiguousarray(faces, dtype=np.int64)
    sha = mesh_sha256(v, f)
    if sha in _CACHE:
        return _CACHE[sha]
    fn, en, vn = _pseudonormals(v, f)
    lo = v.min(axis=0) - REACH - CELL_SIZE
    dims = np.ceil((v.max(axis=0) + REACH + CELL_SIZE - lo) / CELL_SIZE).astype(np.int64)
    n_cells = int(np.prod(dims))
    if n_cells > MAX_CELLS:
        raise InvalidInputError(f"static mesh too large for the contact grid: {n_cells} cells > {MAX_CELLS}")
    tri = np.ascontiguousarray(v[f])
    start = np.zeros(n_cells + 1, np.int64)
    _fill_grid(tri, lo, CELL_SIZE, dims, REACH, start, np.zeros(0, np.int32))
    np.cumsum(start, out=start)
    out = np.empty(int(start[-1]), np.int32)
    _fill_grid(tri, lo, CELL_SIZE, dims, REACH, start, out)
    index = MeshIndex(v, f, fn, en, vn, lo, dims, start, out, _cell_signs(v, f, fn, en, vn, lo, dims, start, out),
                      sha)
    _CACHE[sha] = index
    return index


@njit(cache=True)
def _closest_on_triangle(px, py, pz, v, a, b, c):
    """Closest point on triangle ``v[a] v[b] v[c]`` to ``p`` (Ericson, Real-Time Collision Detection §5.1.5),
    scalar arithmetic (no allocation), and its feature: 0 interior, 1/2/3 vertex a/b/c, 4/5/6 edge ab/bc/ca."""
    ax, ay, az = v[a, 0], v[a, 1], v[a, 2]
    abx, aby, abz = v[b, 0] - ax, v[b, 1] - ay, v[b, 2] - az
    acx, acy, acz = v[c, 0] - ax, v[c, 1] - ay, v[c, 2] - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, 1
    bpx, bpy, bpz = apx - abx, apy - aby, apz - abz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return v[b, 0], v[b, 1], v[b, 2], 2
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        return ax + t * abx, ay + t * aby, az + t * abz, 4
    cpx, cpy, cpz = apx - acx, apy - acy, apz - acz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return v[c, 0], v[c, 1], v[c, 2], 3
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        return ax + t * acx, ay + t * acy, az + t * acz, 6
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        bx, by, bz = v[b, 0], v[b, 1], v[b, 2]
        return bx + t * (v[c, 0] - bx), by + t * (v[c, 1] - by), bz + t * (v[c, 2] - bz), 5
    denom = 1.0 / (va + vb + vc)
    s, t = vb * denom, vc * denom
    return ax + abx * s + acx * t, ay + aby * s + acy * t, az + abz * s + acz * t, 0


@njit(cache=True)
def _nearest(px, py, pz, c, verts, faces, start, cell_faces, reach):
    """Nearest face of cell ``c``'s list within ``reach`` of ``p``: ``(d², face or -1, feature, closest xyz)``."""
    best, best_f, best_feat = reach * reach, -1, 0
    bx, by, bz = 0.0, 0.0, 0.0
    for j in range(start[c], start[c + 1]):
        f = cell_faces[j]
        qx, qy, qz, feat = _closest_on_triangle(px, py, pz, verts, faces[f, 0], faces[f, 1], faces[f, 2])
        d2 = (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2
        if d2 < best:
            best, best_f, best_feat, bx, by, bz = d2, f, feat, qx, qy, qz
    return best, best_f, best_feat, bx, by, bz


@njit(cache=True)
def _pseudonormal(fn, en, vn, faces, f, feat):
    if feat == 0:
        return fn[f]
    if feat <= 3:
        return vn[faces[f, feat - 1]]
    return en[f, feat - 4]


@njit(cache=True)
def _centre_signs(verts, faces, fn, en, vn, lo, cell, dims, start, cell_faces, reach, sign):
    """``sign (C,)`` int8 (written): +1 / -1 for a cell whose centre is within ``reach`` of the surface
    (outside / inside, exact), 0 where it is farther."""
    for x in range(dims[0]):
        for y in range(dims[1]):
            for z in range(dims[2]):
                c = (x * dims[1] + y) * dims[2] + z
                sign[c] = 0
                if start[c + 1] == start[c]:
                    continue
                px, py, pz = lo[0] + (x + 0.5) * cell, lo[1] + (y + 0.5) * cell, lo[2] + (z + 0.5) * cell
                _, f, feat, bx, by, bz = _nearest(px, py, pz, c, verts, faces, start, cell_faces, reach)
                if f >= 0:
                    pn = _pseudonormal(fn, en, vn, faces, f, feat)
                    sign[c] = 1 if (px - bx) * pn[0] + (py - by) * pn[1] + (pz - bz) * pn[2] >= 0.0 else -1


def _cell_signs(v, f, fn, en, vn, lo, dims, start, out) -> np.ndarray:
    """Side of the surface of every cell centre: exact near the surface (:func:`_centre_signs`); the far centres
    are flood-filled (face-adjacent far centres are on one side: module docstring), the components touching the
    grid's border are outside, each other one is decided by libigl's winding number at one of its centres."""
    import igl
    from scipy import ndimage

    sign = np.zeros(int(np.prod(dims)), np.int8)
    _centre_signs(v, f, fn, en, vn, lo, CELL_SIZE, dims, start, out, REACH, sign)
    labels, count = ndimage.label((sign == 0).reshape(tuple(dims)))
    border = np.unique(np.concatenate([labels[0].ravel(), labels[-1].ravel(), labels[:, 0].ravel(),
                                       labels[:, -1].ravel(), labels[:, :, 0].ravel(), labels[:, :, -1].ravel()]))
    side = np.zeros(count + 1, np.int8)
    side[border] = 1
    others = np.setdiff1d(np.arange(1, count + 1), border)
    if len(others):
        flat = labels.ravel()
        first = np.array([np.argmax(flat == k) for k in others])
        centres = lo + (np.stack(np.unravel_index(first, tuple(dims)), axis=1) + 0.5) * CELL_SIZE
        side[others] = np.where(np.asarray(igl.winding_number(v, f, centres)) > 0.5, -1, 1)
    far = sign == 0
    sign[far] = side[labels.ravel()[far]]
    return sign


@njit(cache=True)
def _query(points, verts, faces, fn, en, vn, lo, cell, dims, start, cell_faces, reach, dist, closest, normal,
           cell_of):
    """Signed distance, closest point and outward normal of each point (``dist = inf`` where no face is
    within ``reach``; ``cell_of`` then names the point's cell, -1 outside the grid)."""
    for i in range(points.shape[0]):
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        c = 0
        inside_grid = True
        for a in range(3):
            k = int(math.floor((points[i, a] - lo[a]) / cell))
            if k < 0 or k >= dims[a]:
                inside_grid = False
            c = c * dims[a] + k
        dist[i] = np.inf
        cell_of[i] = c if inside_grid else -1
        if not inside_grid:
            continue
        best, best_f, best_feat, bx, by, bz = _nearest(px, py, pz, c, verts, faces, start, cell_faces, reach)
        if best_f < 0:
            continue
        pn = _pseudonormal(fn, en, vn, faces, best_f, best_feat)
        dx, dy, dz = px - bx, py - by, pz - bz
        d = math.sqrt(best)
        sign = 1.0 if dx * pn[0] + dy * pn[1] + dz * pn[2] >= 0.0 else -1.0
        dist[i] = sign * d
        closest[i, 0], closest[i, 1], closest[i, 2] = bx, by, bz
        if d > ON_SURFACE:
            normal[i, 0], normal[i, 1], normal[i, 2] = sign * dx / d, sign * dy / d, sign * dz / d
        else:
            length = math.sqrt(pn[0] ** 2 + pn[1] ** 2 + pn[2] ** 2)
            normal[i, 0], normal[i, 1], normal[i, 2] = pn[0] / length, pn[1] / length, pn[2] / length


def signed_distance_with_normals(index: MeshIndex, points: np.ndarray, reach_only: bool = False
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact ``(d (N,), closest (N, 3), normals (N, 3))`` of mesh-frame points ``(N, 3)`` [m] (module docstring).

    ``d`` is positive outside the static part, negative inside (the sign of
    :func:`contactkit.geometry.signed_distance`); normals are unit, out of the static part. With ``reach_only``,
    points farther than :data:`REACH` outside get ``d = +inf`` (closest/normal undefined, zeros).
    """
    import igl

    p = np.ascontiguousarray(points, dtype=np.float64)
    n = len(p)
    dist, closest, normal = np.empty(n), np.zeros((n, 3)), np.zeros((n, 3))
    cell_of = np.empty(n, np.int64)
    _query(p, index.vertices, index.faces, index.face_normals, index.edge_normals, index.vertex_normals,
           index.lo, CELL_SIZE, index.dims, index.start, index.cell_faces, REACH, dist, closest, normal, cell_of)
    far = np.flatnonzero(~np.isfinite(dist))
    if len(far) == 0:
        return dist, closest, normal
    cells = cell_of[far]
    inside = np.zeros(len(far), bool)
    in_grid = cells >= 0
    inside[in_grid] = index.cell_sign[cells[in_grid]] < 0
    exact = far[inside] if reach_only else far
    if len(exact):
        s, _, c, nrm = igl.signed_distance(p[exact], index.vertices, index.faces,
                                           igl.SIGNED_DISTANCE_TYPE_PSEUDONORMAL)
        diff = p[exact] - c
        length = np.linalg.norm(diff, axis=1, keepdims=True)
        dist[exact], closest[exact] = s, c
        normal[exact] = np.sign(np.asarray(s))[:, None] * diff / np.maximum(length, ON_SURFACE)
    return dist, closest, normal


def exact_node_contacts(task: AssemblyTask, state: BodyState, margin: float) -> NodeContacts:
    """Contacts of every tool node with the static part's exact signed distance ``d < margin``.

    Args:
        task: the task (static part at the world origin, identity orientation; tool nodes in the body frame).
        state: the tool's pose (single body). margin: [m], ``0 <= margin <= REACH``: report ``d < margin``.

    Returns:
        :class:`contactkit.depth.NodeContacts` in the world frame (nodes in increasing index order): points are
        the nodes' world positions, normals unit out of the static part (into the tool), depth = signed distance.

    Raises:
        InvalidInputError: a margin outside ``[0, REACH]``, or a batched / non-unit state.
    """
    if not (np.isfinite(margin) and 0.0 <= margin <= REACH):
        raise InvalidInputError(f"margin must be in [0, {REACH}] m (the contact grid's reach), got {margin!r}")
    pos, quat = np.asarray(state.pos, dtype=np.float64), np.asarray(state.quat, dtype=np.float64)
    if pos.shape != (3,) or quat.shape != (4,) or abs(np.linalg.norm(quat) - 1.0) > 1e-6:
        raise InvalidInputError(f"state must be one body with a unit quaternion, got pos {pos!r}, quat {quat!r}")
    key = (id(task.static.vertices), id(task.static.faces))
    held = _BY_ARRAYS.get(key)
    if held is None or held[0] is not task.static.vertices or held[1] is not task.static.faces:
        held = (task.static.vertices, task.static.faces, mesh_index(task.static.vertices, task.static.faces))
        _BY_ARRAYS[key] = held  # the arrays are held, so their ids cannot be reused while the entry lives
    index = held[2]
    world = task.nodes @ quat_to_mat(quat).T + pos
    lo, hi = index.vertices.min(axis=0) - margin, index.vertices.max(axis=0) + margin
    cand = np.flatnonzero(((world >= lo) & (world <= hi)).all(axis=1))
    d, _, normals = signed_distance_with_normals(index, world[cand], reach_only=True)
    hit = d < margin
    idx = cand[hit]
    return NodeContacts(idx.astype(np.int64), world[idx], normals[hit], d[hit])
