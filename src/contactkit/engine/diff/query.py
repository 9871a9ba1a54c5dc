"""Which feature pairs touch: a non-differentiable numpy query over convex pieces (placement paper §IV-B, eq 4).

For each pair of a tool piece ``T`` and an environment piece ``E`` whose bounding boxes come within the margin:

1. Separating axes: the face normals of both pieces and the cross products of their edges. The largest
   separation (a lower bound on the distance, exact when touching) above ``margin`` means no contact. An edge
   axis counts as a contact only when both generating edges are support features along it.
2. Edge–edge: when a valid edge axis separates clearly more than every face axis (``EDGE_PREFERENCE``), one
   ``EDGE_CROSS``/``CROSSING`` contact at the closest points of the two edges.
3. Otherwise face manifold: the reference face is the best environment face (or the best tool face when it
   separates more by ``REFERENCE_PREFERENCE``), the incident face the other piece's face most opposed to it. The
   contacts are the corners of the overlap of the two faces seen along the normal: vertices of the incident
   piece over the reference face, reference-face corners over the incident face, and crossings of their edges;
   each keeps its own gap along the pair normal, and those within ``margin`` are kept.

4. Reduction: contacts of one problem that share a face normal (the same reference face, possibly over several
   tool pieces, e.g. a ring of pieces on a table) are redundant inside the convex hull of their points seen along
   the normal: with a planar contact the gap and the normal velocity are affine in the point, so the hull's
   constraints imply the interior's (:mod:`contactkit.engine.diff.reduction`).

The output is a :class:`~contactkit.engine.diff.features.FeatureIndex` whose formulas
(:func:`~contactkit.engine.diff.features.contact_features`) give the same points, normals and gaps as torch
functions of the pose and the geometry.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from contactkit.engine.diff.features import FeatureIndex, NormalKind, ParamPiece, PointKind
from contactkit.engine.diff.reduction import reduce_contacts

EDGE_PREFERENCE = 2e-5
"""An edge axis replaces the best face axis only when it separates more by this [m] ..."""

EDGE_PREFERENCE_RTOL = 0.1
"""... plus, for penetrating pieces, this fraction of the penetration: a slightly tilted face resting on a face
penetrates a little less along some edge-pair axis, and one edge contact there would stand for a whole face
(Box2D's relative tolerance serves the same end)."""

REFERENCE_PREFERENCE = 1e-7
"""A tool face is the reference only when it separates more than the best environment face by this [m]."""

PARALLEL_RTOL = 1e-6
"""Edge pairs with ``|e_T × e_E| ≤ PARALLEL_RTOL |e_T||e_E|`` give no axis."""

SUPPORT_TOL = 1e-9
"""An edge is a support feature along an axis when its projection is within this [m] of the extreme."""

INSIDE_TOL = 1e-9
"""A point counts as over a polygon when no side plane has it outside by more than this [m]."""

CROSS_RTOL = 1e-9
"""Edge crossings closer than this fraction of an edge to one of its ends are left to the vertex contacts."""

MIN_INCIDENT_COS = 0.05
"""A gap is not taken along the pair normal to a plane nearly parallel to it (``|m·n|`` below this)."""


_GEOMETRY = ("px", "py", "pz", "nx", "ny", "nz", "gap")
"""Numeric columns carried by the internal record table (tool point, normal, gap) for the reduction."""

_FIELDS = ("normal_kind", "normal_face", "te0", "te1", "ee0", "ee1", "sign", "point_kind", "vertex", "plane_face",
           "env_piece")


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a × b`` over the last axis with broadcasting (``np.cross`` costs ~10 µs of axis handling per call)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _take(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``x[b, idx[b]]`` for ``x (B, N, ...)`` and ``idx (B,)``."""
    return x[np.arange(len(idx)), idx]


def _inside(points: np.ndarray, loop: np.ndarray, face_normal: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Which ``points (B, N, 3)`` project along ``direction (B, 3)`` into the convex polygons ``loop (B, L, 3)``
    (padded by repeating the last corner) of outward normal ``face_normal (B, 3)``: ``(B, N)`` bool."""
    sigma = np.where(np.einsum("bk,bk->b", direction, face_normal) >= 0.0, 1.0, -1.0)
    side = sigma[:, None, None] * _cross(direction[:, None], np.roll(loop, -1, axis=1) - loop)
    side /= np.maximum(np.linalg.norm(side, axis=-1, keepdims=True), 1e-300)
    return np.all(np.einsum("blk,bnlk->bnl", side, points[:, :, None] - loop[:, None]) >= -INSIDE_TOL, axis=-1)


@dataclass(frozen=True)
class Topology:
    """Padded topology of a tuple of pieces in the concatenated numbering (built once per tuple, cached).

    Attributes:
        verts: ``(T, V)`` global vertex ids of each piece (padded by repeating its last vertex).
        faces: ``(T, F)`` global face ids (padded by repeating its last face).
        loops: ``(T, F, L)`` face loops in piece-local vertex positions (rows of ``verts``), padded as above.
        loop_len: ``(T, F)`` corners per face. edges: ``(T, E, 2)`` piece-local edges (padded by repeating the last).
    """

    verts: np.ndarray
    faces: np.ndarray
    loops: np.ndarray
    loop_len: np.ndarray
    edges: np.ndarray


def _pad(rows: list[np.ndarray], width: int) -> np.ndarray:
    return np.stack([np.concatenate([r, np.repeat(r[-1:], width - len(r), axis=0)]) for r in rows])


@functools.lru_cache(maxsize=64)
def topology(pieces: tuple[ParamPiece, ...]) -> Topology:
    """The :class:`Topology` of ``pieces`` (concatenated in order)."""
    n_v = max(len(p.base) for p in pieces)
    n_f = max(len(p.loops) for p in pieces)
    n_l = max(p.loops.shape[1] for p in pieces)
    v0 = np.cumsum([0] + [len(p.base) for p in pieces])
    f0 = np.cumsum([0] + [len(p.loops) for p in pieces])
    loops = [np.concatenate([p.loops, np.repeat(p.loops[:, -1:], n_l - p.loops.shape[1], axis=1)], axis=1)
             for p in pieces]
    return Topology(
        verts=_pad([v0[i] + np.arange(len(p.base)) for i, p in enumerate(pieces)], n_v),
        faces=_pad([f0[i] + np.arange(len(p.loops)) for i, p in enumerate(pieces)], n_f),
        loops=_pad(loops, n_f), loop_len=_pad([p.loop_len for p in pieces], n_f),
        edges=_pad([p.edges for p in pieces], max(len(p.edges) for p in pieces)),
    )


@dataclass(frozen=True)
class Side:
    """One piece per row of ``R`` (problem, tool piece, environment piece) rows, world frame.

    Attributes:
        verts: ``(R, V, 3)`` [m]. planes: ``(R, F, 4)``. loops: ``(R, F, L)`` and edges: ``(R, E, 2)`` in row-local
        vertex positions; loop_len: ``(R, F)``. vmap: ``(R, V)`` and fmap: ``(R, F)`` global vertex and face ids.
    """

    verts: np.ndarray
    planes: np.ndarray
    loops: np.ndarray
    loop_len: np.ndarray
    edges: np.ndarray
    vmap: np.ndarray
    fmap: np.ndarray

    def take(self, rows: np.ndarray) -> Side:
        """The rows ``rows``."""
        return Side(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))


def _side(topo: Topology, piece: np.ndarray, problem: np.ndarray, verts: np.ndarray, planes: np.ndarray) -> Side:
    vmap, fmap = topo.verts[piece], topo.faces[piece]
    return Side(verts[problem[:, None], vmap], planes[problem[:, None], fmap], topo.loops[piece],
                topo.loop_len[piece], topo.edges[piece], vmap, fmap)


_WIDTH = 1 + len(_FIELDS) + len(_GEOMETRY)


def _rows(b: np.ndarray, point: np.ndarray, normal: np.ndarray, gap: np.ndarray, **cols) -> np.ndarray:
    """Record table ``(N, _WIDTH)``: problem index, the fields (defaults 0, sign 1), tool point, normal and gap."""
    out = np.zeros((len(b), _WIDTH))
    out[:, 0] = b
    out[:, 1 + _FIELDS.index("sign")] = 1.0
    for name, value in cols.items():
        out[:, 1 + _FIELDS.index(name)] = value
    out[:, 1 + len(_FIELDS) :] = np.column_stack([point.reshape(-1, 3), normal.reshape(-1, 3), gap])
    return out


def _edge_axes(tool: Side, env: Side, margin: np.ndarray):
    """Edge-pair axes that may hold a contact: ``(r, i, j, separation, sign, valid)`` flat over the candidate pairs.

    Candidates are pairs of a tool edge ``i`` and an environment edge ``j`` of row ``r`` whose bounding boxes come
    within ``margin (R,)`` (a necessary condition for a contact between them); for each, the separation along the
    normalised ``e_T × e_E`` (the better of its two orientations) and whether both edges are support features.
    """
    rows = np.arange(len(tool.verts))[:, None]
    t0, t1 = tool.verts[rows, tool.edges[..., 0]], tool.verts[rows, tool.edges[..., 1]]
    e0, e1 = env.verts[rows, env.edges[..., 0]], env.verts[rows, env.edges[..., 1]]
    pad = margin[:, None, None]
    lo_t, hi_t = np.minimum(t0, t1) - pad, np.maximum(t0, t1) + pad
    lo_e, hi_e = np.minimum(e0, e1), np.maximum(e0, e1)
    near = (lo_t[:, :, None, 0] <= hi_e[:, None, :, 0]) & (hi_t[:, :, None, 0] >= lo_e[:, None, :, 0])
    for k in (1, 2):
        near &= (lo_t[:, :, None, k] <= hi_e[:, None, :, k]) & (hi_t[:, :, None, k] >= lo_e[:, None, :, k])
    b, i, j = np.nonzero(near)
    dt, de = (t1 - t0)[b, i], (e1 - e0)[b, j]
    axes = _cross(dt, de)
    length = np.linalg.norm(axes, axis=-1)
    ok = length > PARALLEL_RTOL * np.linalg.norm(dt, axis=-1) * np.linalg.norm(de, axis=-1)
    axes = axes / np.where(ok, length, 1.0)[:, None]
    pt = np.einsum("nk,nvk->nv", axes, tool.verts[b])
    pe = np.einsum("nk,nvk->nv", axes, env.verts[b])
    plus, minus = pt.min(-1) - pe.max(-1), pe.min(-1) - pt.max(-1)
    sign = np.where(plus >= minus, 1.0, -1.0)
    et = np.einsum("nk,nk->n", axes, t0[b, i])
    ee = np.einsum("nk,nk->n", axes, e0[b, j])
    support_t = np.where(sign > 0, et - pt.min(-1), pt.max(-1) - et) <= SUPPORT_TOL
    support_e = np.where(sign > 0, pe.max(-1) - ee, ee - pe.min(-1)) <= SUPPORT_TOL
    return b, i, j, np.where(ok, np.maximum(plus, minus), -np.inf), sign, ok & support_t & support_e


def _crossings(ref_loop: np.ndarray, inc_loop: np.ndarray, m: np.ndarray):
    """Crossing edges of two padded polygons seen along ``m (B, 3)``: problem, ref edge, inc edge, and the points."""
    a0, b0 = ref_loop, inc_loop
    a1, b1 = np.roll(a0, -1, axis=1), np.roll(b0, -1, axis=1)
    k_a, k_b = _cross(a1 - a0, m[:, None]), _cross(b1 - b0, m[:, None])
    den_s = np.einsum("bak,bck->bac", k_a, b1 - b0)
    den_r = np.einsum("bck,bak->bac", k_b, a1 - a0)
    ok = (np.abs(den_s) > 1e-300) & (np.abs(den_r) > 1e-300)
    s = np.einsum("bak,back->bac", k_a, a0[:, :, None] - b0[:, None]) / np.where(ok, den_s, 1.0)
    r = np.einsum("bck,back->bac", k_b, b0[:, None] - a0[:, :, None]) / np.where(ok, den_r, 1.0)
    ok &= (s > CROSS_RTOL) & (s < 1 - CROSS_RTOL) & (r > CROSS_RTOL) & (r < 1 - CROSS_RTOL)
    bi, ia, ib = np.nonzero(ok)
    p_ref = a0[bi, ia] + r[bi, ia, ib, None] * (a1 - a0)[bi, ia]
    p_inc = b0[bi, ib] + s[bi, ia, ib, None] * (b1 - b0)[bi, ib]
    return bi, ia, ib, p_ref, p_inc


def _face_manifold(ref: Side, inc: Side, ref_is_env: bool, face: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """Records of the face manifolds (module docstring, step 3) of ``R`` rows with reference faces ``face (R,)``;
    the first column holds the row."""
    plane = _take(ref.planes, face)
    m, o = plane[:, :3], plane[:, 3]
    n = m if ref_is_env else -m
    loop_ref = _take(ref.loops, face)
    pts_ref = np.take_along_axis(ref.verts, loop_ref[..., None], axis=1)
    g = np.argmin(np.einsum("bfk,bk->bf", inc.planes[..., :3], m), axis=1)
    loop_inc = _take(inc.loops, g)
    pts_inc = np.take_along_axis(inc.verts, loop_inc[..., None], axis=1)
    inc_plane = _take(inc.planes, g)
    ref_face, inc_face = _take(ref.fmap, face), _take(inc.fmap, g)
    normal = {"normal_kind": NormalKind.ENV_FACE if ref_is_env else NormalKind.TOOL_FACE}
    gap = np.einsum("bvk,bk->bv", inc.verts, m) - o[:, None]  # (1) incident-piece vertices over the reference face
    bi, vi = np.nonzero((gap <= margin[:, None]) & _inside(inc.verts, pts_ref, m, m))
    point = inc.verts[bi, vi] + (0.0 if ref_is_env else gap[bi, vi, None] * n[bi])
    out = [_rows(bi, point, n[bi], gap[bi, vi],
                 point_kind=PointKind.TOOL_VERTEX if ref_is_env else PointKind.ENV_VERTEX,
                 vertex=inc.vmap[bi, vi], plane_face=ref_face[bi], normal_face=ref_face[bi], **normal)]
    cos = np.einsum("bk,bk->b", inc_plane[:, :3], n)  # (2) reference-face corners over the incident face
    along = np.einsum("blk,bk->bl", pts_ref, inc_plane[:, :3]) - inc_plane[:, 3:]
    gaps = (along if not ref_is_env else -along) / np.where(np.abs(cos) > 0, cos, 1.0)[:, None]
    corners = np.arange(loop_ref.shape[1])[None] < _take(ref.loop_len, face)[:, None]
    valid = corners & (np.abs(cos) >= MIN_INCIDENT_COS)[:, None]
    bi, ki = np.nonzero(valid & (gaps <= margin[:, None]) & _inside(pts_ref, pts_inc, inc_plane[:, :3], m))
    point = pts_ref[bi, ki] + (gaps[bi, ki, None] * n[bi] if ref_is_env else 0.0)
    out.append(_rows(bi, point, n[bi], gaps[bi, ki], point_kind=PointKind.ENV_VERTEX if ref_is_env else
                     PointKind.TOOL_VERTEX, vertex=ref.vmap[bi, loop_ref[bi, ki]], plane_face=inc_face[bi],
                     normal_face=ref_face[bi], **normal))
    bi, ia, ib, p_ref, p_inc = _crossings(pts_ref, pts_inc, m)  # (3) edge crossings
    cross_gap = np.einsum("nk,nk->n", (p_inc - p_ref) if ref_is_env else (p_ref - p_inc), n[bi])
    keep = cross_gap <= margin[bi]
    bi, ia, ib, cross_gap = bi[keep], ia[keep], ib[keep], cross_gap[keep]
    cross_point = (p_inc if ref_is_env else p_ref)[keep]
    width_r, width_i = loop_ref.shape[1], loop_inc.shape[1]
    edge_ref = ref.vmap[bi[:, None], np.stack([loop_ref[bi, ia], loop_ref[bi, (ia + 1) % width_r]], -1)]
    edge_inc = inc.vmap[bi[:, None], np.stack([loop_inc[bi, ib], loop_inc[bi, (ib + 1) % width_i]], -1)]
    e_tool, e_env = (edge_inc, edge_ref) if ref_is_env else (edge_ref, edge_inc)
    out.append(_rows(bi, cross_point, n[bi], cross_gap, point_kind=PointKind.CROSSING, normal_face=ref_face[bi],
                     te0=e_tool[:, 0], te1=e_tool[:, 1], ee0=e_env[:, 0], ee1=e_env[:, 1], **normal))
    return np.concatenate(out)


def pair_features(tool: Side, env: Side, margin: np.ndarray) -> np.ndarray:
    """Feature records ``(N, _WIDTH)`` of ``R`` (tool piece, environment piece) rows within each row's ``margin (R,)``
    [m]; the first column is the row."""
    sep_env = (env.planes[..., :3] @ tool.verts.transpose(0, 2, 1)).min(-1) - env.planes[..., 3]
    sep_tool = (tool.planes[..., :3] @ env.verts.transpose(0, 2, 1)).min(-1) - tool.planes[..., 3]
    fe, ft = np.argmax(sep_env, axis=1), np.argmax(sep_tool, axis=1)
    se, st = _take(sep_env, fe), _take(sep_tool, ft)
    best_face = np.maximum(se, st)
    near = np.flatnonzero(best_face <= margin)  # a face axis separating by more than the margin settles the row
    if near.size < len(best_face):
        rec = pair_features(tool.take(near), env.take(near), margin[near]) if near.size else np.zeros((0, _WIDTH))
        rec[:, 0] = near[rec[:, 0].astype(np.int64)]
        return rec
    b, i, j, sep, sign, valid = _edge_axes(tool, env, margin)
    n_rows = len(best_face)
    edge_max = np.full(n_rows, -np.inf)
    np.maximum.at(edge_max, b, sep)
    contact = np.maximum(best_face, edge_max) <= margin
    best_valid = np.full(n_rows, -np.inf)
    np.maximum.at(best_valid, b[valid], sep[valid])
    prefer_face = EDGE_PREFERENCE + EDGE_PREFERENCE_RTOL * np.maximum(-best_face, 0.0)
    edge_mode = contact & (best_valid > best_face + prefer_face)
    ref_env = se + REFERENCE_PREFERENCE >= st
    out = []
    pick = np.flatnonzero(valid & edge_mode[b] & (sep == best_valid[b]))
    pick = pick[np.unique(b[pick], return_index=True)[1]]  # one edge pair per row
    if pick.size:
        r = b[pick]
        ti, ej = tool.edges[r, i[pick]], env.edges[r, j[pick]]
        mid = 0.5 * (tool.verts[r, ti[:, 0]] + tool.verts[r, ti[:, 1]])
        out.append(_rows(r, mid, np.zeros((pick.size, 3)), sep[pick], normal_kind=NormalKind.EDGE_CROSS,
                         point_kind=PointKind.CROSSING, te0=tool.vmap[r, ti[:, 0]], te1=tool.vmap[r, ti[:, 1]],
                         ee0=env.vmap[r, ej[:, 0]], ee1=env.vmap[r, ej[:, 1]], sign=sign[pick]))
    for ref_is_env, mode, faces in ((True, contact & ~edge_mode & ref_env, fe),
                                    (False, contact & ~edge_mode & ~ref_env, ft)):
        rows = np.flatnonzero(mode)
        if rows.size:
            t, e = tool.take(rows), env.take(rows)
            rec = _face_manifold(e, t, True, faces[rows], margin[rows]) if ref_is_env else \
                _face_manifold(t, e, False, faces[rows], margin[rows])
            rec[:, 0] = rows[rec[:, 0].astype(np.int64)]
            out.append(rec)
    return np.concatenate(out) if out else np.zeros((0, _WIDTH))


def _reduce(table: np.ndarray) -> np.ndarray:
    """Step 4 of the module docstring on a record table ``(N, _WIDTH)``: the rows kept, grouped by problem."""
    if not len(table):
        return table
    geo = table[:, 1 + len(_FIELDS) :]
    keep = reduce_contacts(table[:, 0].astype(np.int64), table[:, 1 + _FIELDS.index("normal_kind")].astype(np.int64),
                           table[:, 1 + _FIELDS.index("normal_face")].astype(np.int64), geo[:, :3], geo[:, 3:6],
                           geo[:, 6], NormalKind.EDGE_CROSS)
    return table[keep]


def query_batch(
    tool_pieces: tuple[ParamPiece, ...], env_pieces: tuple[ParamPiece, ...], tool_verts: np.ndarray,
    tool_planes: np.ndarray, env_verts: np.ndarray, env_planes: np.ndarray, margin: float | np.ndarray,
) -> FeatureIndex:
    """Feature pairs within ``margin`` [m] for ``B`` configurations (world frame, concatenated pieces).

    Args:
        tool_pieces, env_pieces: topology of the pieces (their order defines the concatenation).
        tool_verts: ``(B, Vt, 3)`` world tool vertices [m]; tool_planes: ``(B, Ft, 4)`` their face planes.
        env_verts: ``(B, Ve, 3)`` world environment vertices [m]; env_planes: ``(B, Fe, 4)``.
        margin: contact margin [m], one for all or ``(B,)`` one per configuration: pairs whose gap exceeds it give
            no contact (a configuration's pairs never depend on the others in the batch).

    Returns:
        :class:`FeatureIndex` with ``K = max`` contacts over the batch (at least 1 slot), padded with masked slots.
    """
    n_batch = tool_verts.shape[0]
    tt, te = topology(tool_pieces), topology(env_pieces)
    box_t = tool_verts[:, tt.verts]  # (B, T, V, 3)
    box_e = env_verts[:, te.verts]
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), (n_batch,))
    lo_t, hi_t = box_t.min(2) - margin[:, None, None], box_t.max(2) + margin[:, None, None]
    lo_e, hi_e = box_e.min(2), box_e.max(2)
    overlap = np.all((lo_e[:, None] <= hi_t[:, :, None]) & (hi_e[:, None] >= lo_t[:, :, None]), axis=-1)
    problem, tool_piece, env_piece = np.nonzero(overlap)  # (B, T, E) rows whose boxes meet
    table = np.zeros((0, _WIDTH))
    if problem.size:
        table = pair_features(_side(tt, tool_piece, problem, tool_verts, tool_planes),
                              _side(te, env_piece, problem, env_verts, env_planes), margin[problem])
        row = table[:, 0].astype(np.int64)
        table[:, 0] = problem[row]
        table[:, 1 + _FIELDS.index("env_piece")] = env_piece[row]
    table = _reduce(table)
    table = table[np.argsort(table[:, 0], kind="stable")]
    problem = table[:, 0].astype(np.int64)
    counts = np.bincount(problem, minlength=n_batch)
    slot = np.arange(len(problem)) - np.repeat(np.cumsum(counts) - counts, counts)
    k = max(1, int(counts.max(initial=0)))
    full = np.zeros((n_batch, k, len(_FIELDS)))
    full[problem, slot] = table[:, 1 : 1 + len(_FIELDS)]
    mask = np.zeros((n_batch, k), dtype=bool)
    mask[problem, slot] = True
    col = {name: full[..., i] for i, name in enumerate(_FIELDS)}
    as_int = {name: col[name].astype(np.int64) for name in _FIELDS if name != "sign"}
    return FeatureIndex(
        mask=mask, normal_kind=as_int["normal_kind"], normal_face=as_int["normal_face"],
        tool_edge=np.stack([as_int["te0"], as_int["te1"]], -1), env_edge=np.stack([as_int["ee0"], as_int["ee1"]], -1),
        sign=np.where(mask, col["sign"], 1.0), point_kind=as_int["point_kind"], vertex=as_int["vertex"],
        plane_face=as_int["plane_face"], env_piece=as_int["env_piece"],
    )
