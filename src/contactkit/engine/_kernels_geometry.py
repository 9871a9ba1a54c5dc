"""Static contact geometry of a scene for the node-contact kernels (built once per world; plain numpy).

From a :class:`~contactkit.collision.CollisionWorld` (its convex pieces' vertices and face planes ``m·x ≤ o``):

* *internal* faces: a face lying entirely in a coincident, opposite face of another piece (the sides between a
  hole's wall pieces, a wall's bottom on the floor slab, the slab's bottom on the table). A point beyond such a
  face is in the neighbour's region, so it gives no contact with this piece (:mod:`._kernels_contacts`);
* per piece, its planes in query order: the external planes that are not *side planes*, by decreasing value
  at the piece's box centre (the query stops once no later plane can matter); the side planes — those parallel
  to the piece's axis of symmetry, as a polygonal prism's — by the azimuth of their normal about that axis
  (the query visits only the few facing the point); the internal planes last;
* a uniform grid of the environment pieces (each grown by the largest margin) and of the distinct environment
  vertices: the broad phase of a query is one cell lookup per tool vertex.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from contactkit.collision import CollisionWorld
from contactkit.engine._edge_geometry import BOUND_WIDTH, EdgeSet, edge_set, piece_bounds, piece_edges
from contactkit.engine._kernels_depthnet import DepthSet, empty_depth_set

FACE_MATCH_RTOL = 1e-9
"""Coincident faces (internal-face detection): normals opposite and offsets equal to this × extent."""

SIDE_RTOL = 1e-9
"""A plane is a side plane of an axis when ``|m·a|`` is below this."""

SIDE_PLANES_MIN = 12
"""Pieces with at least this many side planes about one axis are queried by azimuth."""

GRID_CELL = 5e-3
"""Preferred broad-phase grid cell [m]."""

GRID_MAX_CELLS = 2_000_000
"""The cell grows beyond :data:`GRID_CELL` when the environment would need more cells."""

VERTEX_WELD_TOL = 1e-10
"""Vertices closer than this [m] are one vertex."""

MAX_PER_VERTEX = 3
"""Most contacts one vertex keeps (against different pieces with different normals)."""

MAX_PER_EDGE = 4
"""Most contacts one tool edge keeps (the deepest) over all environment pieces (:mod:`._kernels_edges`)."""


PLANE_REACH, PLANE_PHI = 4, 5
"""Columns of :attr:`PieceSet.planes` after ``(m_x, m_y, m_z, o)``."""
INFO_START, INFO_SIDE, INFO_MID, INFO_STOP, INFO_CENTRE, INFO_SIDE_REACH, INFO_FRAME = 0, 1, 2, 3, 4, 7, 8
"""Columns of :attr:`PieceSet.info`: plane ranges, box centre (3), side-plane reach, frame (9, rows a, e1, e2)."""


class PieceSet(NamedTuple):
    """The planes of ``N`` convex pieces in query order (module docstring). Two arrays, so that a kernel
    passes a piece around without the reference counting of many arrays.

    Attributes:
        planes: ``(P, 6)`` rows ``(m_x, m_y, m_z, o, reach, phi)``, piece after piece: the face plane
            ``m·x ≤ o`` [m], its value at the piece's box centre ``reach = m·c - o`` [m], and for a side plane
            the azimuth of ``m`` about the piece's axis, ``phi = atan2(m·e2, m·e1)`` [rad].
        info: ``(N, 17)`` per piece: ``start, side, mid, stop`` (as floats): its planes are ``start:side``
            (by decreasing ``reach``), ``side:mid`` (side planes by ``phi``), ``mid:stop`` (internal); the
            box centre ``c`` (3) [m]; the largest ``reach`` of its side planes [m]; the frame rows ``a, e1, e2``.
    """

    planes: np.ndarray
    info: np.ndarray


class ContactGeometry(NamedTuple):
    """Static arrays of a scene for :func:`contactkit.engine._kernels_contacts.node_contacts`.

    Attributes:
        tool: :class:`PieceSet` of the tool pieces, tool frame.
        tool_verts: ``(Vt, 3)`` distinct tool vertices, tool frame [m].
        tool_lo, tool_hi: ``(T, 3)`` tool-frame bounding boxes of the tool pieces [m].
        env: :class:`PieceSet` of the environment pieces, world frame.
        env_friction: ``(E,)`` friction coefficient of contacts with each piece (before ``friction_scale``).
        env_verts: ``(Ve, 3)`` distinct environment vertices, world frame [m].
        env_vert_friction: ``(Ve,)`` friction of contacts at each vertex (largest of its pieces').
        grid_origin: ``(3,)`` [m]; grid_cell: ``(1,)`` cell edge [m]; grid_dims: ``(3,)`` cells per axis.
        piece_start, piece_items: cell → environment pieces whose box grown by ``max_margin`` meets it.
        vert_start, vert_items: cell → environment vertices inside it.
        max_margin: ``(1,)`` the largest margin [m] a query may use.
        depth: :class:`~._kernels_depthnet.DepthSet`, the statics collided through a learned depth network
            and the tool's surface nodes.
        env_net: ``(E,)`` int64, the network in ``depth`` of each environment piece's static (-1: none): its piece
            is collided only outside the network's domain (:mod:`._kernels_contacts`).
        env_vert_net: ``(Ve,)`` int64, the same for each environment vertex.
        edges: :class:`~contactkit.engine._edge_geometry.EdgeSet`, the pieces' edges (:mod:`._kernels_edges`).
    """

    tool: PieceSet
    tool_verts: np.ndarray
    tool_lo: np.ndarray
    tool_hi: np.ndarray
    env: PieceSet
    env_friction: np.ndarray
    env_verts: np.ndarray
    env_vert_friction: np.ndarray
    grid_origin: np.ndarray
    grid_cell: np.ndarray
    grid_dims: np.ndarray
    piece_start: np.ndarray
    piece_items: np.ndarray
    vert_start: np.ndarray
    vert_items: np.ndarray
    max_margin: np.ndarray
    depth: DepthSet
    env_net: np.ndarray
    env_vert_net: np.ndarray
    edges: EdgeSet


def raw_capacity(geo: ContactGeometry) -> int:
    """Most contacts one query can return (before reduction): the convex pieces' vertices, one per tool node and
    depth network, and the edges' (:mod:`._kernels_edges`: two per environment edge and tool piece, at most
    :data:`MAX_PER_EDGE` per tool edge)."""
    convex = MAX_PER_VERTEX * (len(geo.tool_verts) + len(geo.env_verts) * len(geo.tool.info))
    edges = MAX_PER_EDGE * len(geo.edges.tool) + 2 * len(geo.edges.env) * len(geo.tool.info)
    return convex + len(geo.depth.nodes) * len(geo.depth.kind) + edges


def _weld(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``points (N, 3)`` [m] (within :data:`VERTEX_WELD_TOL`) in first-seen order, and
    ``(N,)`` the index of each input row's distinct vertex."""
    _, first, inverse = np.unique(
        np.round(points / VERTEX_WELD_TOL).astype(np.int64), axis=0, return_index=True, return_inverse=True
    )
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.ascontiguousarray(points[first[order]]), rank[inverse.reshape(-1)]


def _internal_faces(piece_verts: list[np.ndarray], piece_planes: list[np.ndarray]) -> list[np.ndarray]:
    """Per piece, ``(F,)`` bool: the face lies entirely in a coincident, opposite face of another piece."""
    lo = np.array([v.min(axis=0) for v in piece_verts])
    hi = np.array([v.max(axis=0) for v in piece_verts])
    extent = max(float(np.ptp(np.concatenate(piece_verts), axis=0).max()), 1e-12)
    tol = FACE_MATCH_RTOL * extent
    out = []
    for a, (verts, planes) in enumerate(zip(piece_verts, piece_planes, strict=True)):
        internal = np.zeros(len(planes), dtype=bool)
        near = np.flatnonzero(np.all((lo <= hi[a] + tol) & (hi >= lo[a] - tol), axis=1))
        for f, plane in enumerate(planes):
            face = verts[np.abs(verts @ plane[:3] - plane[3]) <= tol]
            for b in near[near != a]:
                other = piece_planes[b]
                opposite = (other[:, :3] @ plane[:3] <= -1.0 + FACE_MATCH_RTOL) & (
                    np.abs(other[:, 3] + plane[3]) <= tol
                )
                if opposite.any() and np.all(face @ other[:, :3].T - other[:, 3] <= tol):
                    internal[f] = True
                    break
        out.append(internal)
    return out


def _side_frame(verts: np.ndarray, normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The piece's principal axis with the most planes parallel to it: frame ``(3, 3)`` (rows ``a, e1, e2``)
    and ``(F,)`` which planes are side planes of it (none when fewer than :data:`SIDE_PLANES_MIN`)."""
    _, axes = np.linalg.eigh(np.cov((verts - verts.mean(axis=0)).T) + 1e-30 * np.eye(3))
    counts = [np.count_nonzero(np.abs(normals @ axes[:, i]) < SIDE_RTOL) for i in range(3)]
    axis = axes[:, int(np.argmax(counts))]
    helper = np.eye(3)[int(np.argmin(np.abs(axis)))]
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    frame = np.stack([axis, e1, np.cross(axis, e1)])
    side = np.abs(normals @ axis) < SIDE_RTOL
    return frame, side if side.sum() >= SIDE_PLANES_MIN else np.zeros_like(side)


def piece_set(piece_verts: list[np.ndarray], piece_planes: list[np.ndarray],
              flags: list[np.ndarray] | None = None) -> PieceSet:
    """The :class:`PieceSet` of convex pieces given by their vertices ``(V_i, 3)`` and planes ``(F_i, 4)``
    (``flags``: their internal faces, computed when not given)."""
    if flags is None:
        flags = _internal_faces(piece_verts, piece_planes) if piece_verts else []
    planes, info, offset = [], [], 0
    for verts, rows, internal in zip(piece_verts, piece_planes, flags, strict=True):
        centre = 0.5 * (verts.min(axis=0) + verts.max(axis=0))
        value = rows[:, :3] @ centre - rows[:, 3]
        frame, side = _side_frame(verts, rows[:, :3])
        side &= ~internal
        phi = np.where(side, np.arctan2(rows[:, :3] @ frame[2], rows[:, :3] @ frame[1]), 0.0)
        group = np.where(internal, 2, np.where(side, 1, 0))
        order = np.lexsort((np.where(group == 1, phi, -value), group))
        planes.append(np.column_stack([rows, value, phi])[order])
        counts = [int(np.count_nonzero(group == g)) for g in range(3)]
        ranges = [offset, offset + counts[0], offset + counts[0] + counts[1], offset + len(rows)]
        side_reach = float(value[side].max()) if side.any() else -1e300
        info.append(np.concatenate([ranges, centre, [side_reach], frame.reshape(-1)]))
        offset += len(rows)
    if not planes:
        return PieceSet(np.zeros((0, 6)), np.zeros((0, 17)))
    return PieceSet(np.ascontiguousarray(np.concatenate(planes)), np.array(info))


def _cell_lists(lo: np.ndarray, hi: np.ndarray, env_verts: np.ndarray, grow: float) -> tuple:
    """Uniform grid over the piece boxes ``lo, hi (E, 3)`` grown by ``grow`` [m]: cell lists of pieces
    (ascending) and of vertices. Returns ``(origin, cell, dims, piece_start, piece_items, vert_start,
    vert_items)``."""
    origin = lo.min(axis=0) - grow
    span = hi.max(axis=0) + grow - origin
    cell = max(GRID_CELL, float(np.prod(span) / GRID_MAX_CELLS) ** (1.0 / 3.0))
    dims = np.maximum(np.ceil(span / cell).astype(np.int64), 1)
    n_cells = int(np.prod(dims))
    cell_of, piece_of = [], []
    for e in range(len(lo)):
        c0 = np.clip(np.floor((lo[e] - grow - origin) / cell).astype(np.int64), 0, dims - 1)
        c1 = np.clip(np.floor((hi[e] + grow - origin) / cell).astype(np.int64), 0, dims - 1)
        i, j, k = np.meshgrid(*(np.arange(c0[a], c1[a] + 1) for a in range(3)), indexing="ij")
        flat = ((i * dims[1] + j) * dims[2] + k).reshape(-1)
        cell_of.append(flat)
        piece_of.append(np.full(len(flat), e))
    cells, pieces = np.concatenate(cell_of), np.concatenate(piece_of)
    order = np.lexsort((pieces, cells))
    piece_start = np.searchsorted(cells[order], np.arange(n_cells + 1)).astype(np.int64)
    vcell = np.clip(np.floor((env_verts - origin) / cell).astype(np.int64), 0, dims - 1)
    vflat = (vcell[:, 0] * dims[1] + vcell[:, 1]) * dims[2] + vcell[:, 2]
    vorder = np.argsort(vflat, kind="stable")
    vert_start = np.searchsorted(vflat[vorder], np.arange(n_cells + 1)).astype(np.int64)
    return origin, cell, dims, piece_start, pieces[order].astype(np.int64), vert_start, vorder.astype(np.int64)


def contact_geometry(world: CollisionWorld, max_margin: float, depth: DepthSet | None = None,
                     piece_net: np.ndarray | None = None) -> ContactGeometry:
    """The static :class:`ContactGeometry` of a scene's :class:`~contactkit.collision.CollisionWorld`.

    Args:
        world: COAL world of the scene (its pieces' planes and vertices are reused).
        max_margin: largest contact margin [m] the queries will use (grows the grid's piece boxes).
        depth: the statics collided through a learned depth network
            (:func:`contactkit.engine.depth_contacts.depth_set`); ``None``: none.
        piece_net: ``(E,)`` the network in ``depth`` of each environment piece's static, -1 for none (default:
            none); such a piece is collided only outside its network's domain.
    """
    n_env_all = len(world.env_pieces)
    piece_net = np.full(n_env_all, -1, np.int64) if piece_net is None else np.asarray(piece_net, np.int64)
    n_tool, n_env = len(world.tool_pieces), len(world.env_pieces)
    tool_v = [world.tool_verts[t][world.tool_vmask[t]] for t in range(n_tool)]
    tool_p = [p[np.any(p[:, :3] != 0.0, axis=1)] for p in world.tool_planes]
    starts = np.concatenate([[0], np.cumsum(world.env_plane_count)]).astype(np.int64)
    env_p = [world.env_plane_rows[starts[e]:starts[e + 1]] for e in range(n_env)]
    env_v = [world.env_verts[e][world.env_vmask[e]] for e in range(n_env)]
    if n_env:
        env_verts, index = _weld(np.concatenate(env_v))
        owner = np.repeat(np.arange(n_env), [len(v) for v in env_v])
        vert_net = np.full(len(env_verts), -1, np.int64)
        np.maximum.at(vert_net, index, piece_net[owner])
        vert_mu = np.zeros(len(env_verts))
        np.maximum.at(vert_mu, index, np.asarray(world.env_friction)[owner])
        lo = np.array([v.min(axis=0) for v in env_v])
        hi = np.array([v.max(axis=0) for v in env_v])
        grid = _cell_lists(lo, hi, env_verts, max_margin)
        internal = _internal_faces(env_v, env_p)
        env = piece_set(env_v, env_p, internal)
        env_edges = [piece_edges(v, p, f) for v, p, f in zip(env_v, env_p, internal, strict=True)]
    else:
        env_verts, vert_mu, env = np.zeros((0, 3)), np.zeros(0), piece_set([], [])
        vert_net = np.zeros(0, np.int64)
        grid = (np.zeros(3), GRID_CELL, np.ones(3, np.int64), np.zeros(2, np.int64), np.zeros(0, np.int64),
                np.zeros(2, np.int64), np.zeros(0, np.int64))
        lo, hi, env_edges = np.zeros((0, 3)), np.zeros((0, 3)), []
    tool_internal = _internal_faces(tool_v, tool_p)
    tool = piece_set(tool_v, tool_p, tool_internal)
    return ContactGeometry(
        tool=tool,
        tool_verts=_weld(np.concatenate(tool_v))[0],
        tool_lo=np.array([v.min(axis=0) for v in tool_v]),
        tool_hi=np.array([v.max(axis=0) for v in tool_v]),
        env=env,
        env_friction=np.asarray(world.env_friction, dtype=np.float64),
        env_verts=env_verts,
        env_vert_friction=vert_mu,
        grid_origin=np.asarray(grid[0], dtype=np.float64),
        grid_cell=np.array([grid[1]]),
        grid_dims=grid[2],
        piece_start=grid[3],
        piece_items=grid[4],
        vert_start=grid[5],
        vert_items=grid[6],
        max_margin=np.array([float(max_margin)]),
        depth=depth if depth is not None else empty_depth_set(),
        env_net=piece_net,
        env_vert_net=vert_net,
        edges=edge_set([piece_edges(v, p, f) for v, p, f in zip(tool_v, tool_p, tool_internal, strict=True)],
                       env_edges, _bounds(tool_v, tool, True), _bounds(env_v, env, False), lo, hi),
    )


def _bounds(piece_verts: list[np.ndarray], pieces: PieceSet, tool: bool) -> np.ndarray:
    """``(N, BOUND_WIDTH)`` the pieces' bounding volumes in their own frames (:func:`._edge_geometry.piece_bounds`;
    ``tool``: reach from the origin)."""
    rows = [piece_bounds(v, pieces.info[i, INFO_FRAME:INFO_FRAME + 9].reshape(3, 3), tool)
            for i, v in enumerate(piece_verts)]
    return np.array(rows, np.float64).reshape(-1, BOUND_WIDTH)
