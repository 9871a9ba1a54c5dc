"""Multi-point contact manifold of a tool piece against an environment piece (COAL + exact gaps).

Manifold rule, for a convex tool piece ``T`` and a convex environment piece ``E`` whose signed distance
``d`` (COAL GJK/EPA through ``coal.collide`` with ``security_margin = margin``) is at most ``margin``,
with the unit normal ``n`` of their closest (or deepest) points, pointing from ``E`` into ``T``:

1. Candidates, all as points ``u`` of the world:

   a. touching features: COAL's contact patch (``computeContactPatch``) with the small tolerance
      ``FEATURE_TOL``: the face, edge or vertex of each piece within ``FEATURE_TOL`` of its own
      extreme along ``∓n``, projected onto the plane ``⊥ n`` and intersected; its corners are the
      corners of the overlap of two (nearly) parallel faces, including the points where an edge of one
      crosses an edge of the other (a peg's side edges crossing a hole's rim);
   b. tool vertices within ``margin`` of ``E``'s extreme plane along ``n``, and environment vertices within
      ``margin`` of ``T``'s extreme plane (the tight-tolerance paper's contact nodes, §II–III: every node
      near the other body carries its own distance), so that a tilted face contributes all its corners;
   c. the midpoint of COAL's closest point pair.

2. Exact gap per candidate: the line ``u + t n`` enters ``T`` at ``t_T`` (the largest entry parameter of the
   faces of ``T`` that face ``-n``) and leaves ``E`` at ``t_E`` (the smallest exit parameter of the faces of
   ``E`` that face ``+n``), from the pieces' half-space forms ``m·x ≤ o``. The contact point is the tool's
   surface point ``u + t_T n`` and its signed distance is ``t_T - t_E``: the gap along ``n`` (negative:
   penetration), equal to the Euclidean distance for the closest pair and for parallel faces. A line
   that misses either piece is no contact.
3. Selection: candidates with distance ``≤ margin`` are kept, all with the pair's normal ``n``; one whose
   tool point repeats an earlier candidate of the pair (on a grid of pitch ``DUPLICATE_ATOL``) counts once; the
   closest-pair candidate (c) is kept only when it is closer than all others by ``DOMINATE_ATOL`` (it
   then marks a minimum that no vertex or corner reaches, e.g. crossed edges).

So a box resting on a plane yields its four bottom corners (tilted: each with its own distance); a peg
against a parallel hole wall the corners of the overlap of its face with the wall (two at the tip, two
where its edges cross the rim); a tilted peg its tip edge against one wall and rim points against the
opposite face. The pair's smallest distance is always among its contacts.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import coal
import numpy as np

from contactkit.collision.coal_shapes import CoalPiece

GJK_TOLERANCE = 1e-12
"""COAL GJK convergence tolerance [m]: COAL's default 1e-6 reports gaps below 1e-6 m as 0, far too coarse
for 65 µm clearances (tight-tolerance paper §V)."""

EPA_TOLERANCE = 1e-12
"""COAL EPA tolerance [m] for penetration depths."""

FEATURE_TOL = 1e-5
"""Patch tolerance [m] of rule 1a: faces within this of parallel over their extent count as touching
faces (a 25 mm wall overlap up to a tilt of 4e-4 rad), so their edge crossings are candidates."""

VERTEX_ATOL = 1e-9
"""Slack [m] of the vertex test of rule 1b, so that vertices exactly ``margin`` away are not lost to rounding."""

PARALLEL_TOL = 1e-9
"""A face with ``|m·n|`` below this is parallel to the normal: it bounds no line along ``n`` (a rounding
offset ``ε`` of a point on it would otherwise move the gap by ``ε / |m·n|``)."""

HIT_ATOL = 1e-9
"""A line along ``n`` counts as meeting a piece when it misses it by at most this [m]."""

DOMINATE_ATOL = 1e-9
"""The closest-pair candidate is kept only when it is closer than every other candidate by this [m]."""

BLOCK_ELEMENTS = 8192
"""Most (faces × lines) evaluated at once in rule 2: temporaries of 64 kB stay in cache (a peg in a 64-sided
hole: 3x faster than one block, measured)."""

DUPLICATE_ATOL = 1e-9
"""Candidates of one pair whose tool points round to the same point of a grid of this pitch [m] are one
contact (the same vertex found twice differs by rounding, ~1e-17 m)."""


class Source(enum.IntEnum):
    """Where a candidate of the manifold rule comes from (rule 1a, 1b, 1c)."""

    CORNER = 0
    TOOL_VERTEX = 1
    ENV_VERTEX = 2
    CLOSEST = 3


@dataclass(frozen=True, eq=False)
class PairPatch:
    """COAL's answer for one piece pair within the margin.

    Attributes:
        normal: ``(3,)`` unit normal, world frame, from the environment piece into the tool piece.
        corners: ``(k, 3)`` patch corners [m], world frame (on COAL's patch plane); ``k`` may be 0.
        closest: ``(3,)`` midpoint of COAL's closest (deepest) point pair [m], world frame.
    """

    normal: np.ndarray
    corners: np.ndarray
    closest: np.ndarray


@dataclass(frozen=True, eq=False)
class PairQuery:
    """COAL request and scratch objects of one contact query (one tool pose and margin); never shared.

    Attributes:
        margin: contact margin [m], ≥ 0.
        tool_tf: tool pose, tool frame → world.
        identity: the identity transform of the (world-frame) environment pieces.
        request: one contact with normal and signed distance; pairs within ``margin`` count.
        patch_request, patch_result: patch tolerance ``FEATURE_TOL``; the result is reused by every pair.
    """

    margin: float
    tool_tf: coal.Transform3s
    identity: coal.Transform3s
    request: coal.CollisionRequest
    patch_request: coal.ContactPatchRequest
    patch_result: coal.ContactPatchResult


def pair_query(rot: np.ndarray, pos: np.ndarray, margin: float) -> PairQuery:
    """The :class:`PairQuery` of a tool pose ``rot (3, 3)`` (tool → world), ``pos (3,)`` [m] and ``margin`` [m]."""
    request = coal.CollisionRequest()
    request.enable_contact = True
    request.num_max_contacts = 1
    request.security_margin = float(margin)
    request.gjk_tolerance = GJK_TOLERANCE
    request.epa_tolerance = EPA_TOLERANCE
    patch_request = coal.ContactPatchRequest(1, 6, FEATURE_TOL)
    patch_result = coal.ContactPatchResult(patch_request)
    return PairQuery(
        float(margin), coal.Transform3s(rot, pos), coal.Transform3s(), request, patch_request, patch_result
    )


def pair_patch(env: CoalPiece, tool: CoalPiece, query: PairQuery) -> PairPatch | None:
    """COAL's normal, patch (rule 1a) and closest pair (rule 1c) of one pair, or ``None`` beyond the margin.

    Args:
        env: environment piece, vertices in the world frame (identity transform).
        tool: tool piece, vertices in the tool frame (placed by ``query.tool_tf``).
        query: the query's COAL objects (:func:`pair_query`).
    """
    result = coal.CollisionResult()
    coal.collide(env.geometry, query.identity, tool.geometry, query.tool_tf, query.request, result)
    if not result.isCollision():
        return None
    contact = result.getContact(0)
    patches = query.patch_result
    coal.computeContactPatch(
        env.geometry, query.identity, tool.geometry, query.tool_tf, result, query.patch_request, patches
    )
    corners = []
    if patches.numContactPatches():
        patch = patches.getContactPatch(0)
        corners = [patch.getPoint(i) for i in range(patch.size())]
    # copies: COAL returns views into its contact
    return PairPatch(np.array(contact.normal), np.array(corners).reshape(-1, 3), np.array(contact.pos))


@dataclass(frozen=True, eq=False)
class Candidates:
    """Candidate contacts of ``P`` pairs (rule 1), ``N`` in all, grouped pair by pair in rule order.

    Attributes:
        points: ``(N, 3)`` points ``u`` [m], world frame. normals: ``(N, 3)`` unit, world frame.
        pair: ``(N,)`` pair index, non-decreasing. source: ``(N,)`` :class:`Source` values.
    """

    points: np.ndarray
    normals: np.ndarray
    pair: np.ndarray
    source: np.ndarray


def near_vertices(
    normals: np.ndarray,
    tool_verts: np.ndarray,
    tool_mask: np.ndarray,
    env_verts: np.ndarray,
    env_mask: np.ndarray,
    margin: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Rule 1b for ``P`` pairs: masks of the tool vertices ``(P, V)`` and environment vertices ``(P, W)`` that
    lie within ``margin`` of the other piece's extreme plane along the pair's normal.

    Args:
        normals: ``(P, 3)`` pair normals. tool_verts: ``(P, V, 3)`` world tool vertices of each pair's tool
            piece, padded; ``tool_mask (P, V)`` marks the real ones. env_verts, env_mask: likewise ``(P, W, ...)``.
        margin: [m].
    """
    h_tool = (tool_verts @ normals[:, :, None])[..., 0]
    h_env = (env_verts @ normals[:, :, None])[..., 0]
    top_env = np.where(env_mask, h_env, -np.inf).max(axis=1, keepdims=True)
    low_tool = np.where(tool_mask, h_tool, np.inf).min(axis=1, keepdims=True)
    slack = margin + VERTEX_ATOL
    return tool_mask & (h_tool - top_env <= slack), env_mask & (low_tool - h_env <= slack)


def candidates(patches: list[PairPatch], tool_verts, tool_near, env_verts, env_near) -> Candidates:
    """Rule 1: every pair's patch corners, near tool vertices, near environment vertices, closest midpoint.

    Args:
        patches: ``P`` COAL answers. tool_verts ``(P, V, 3)``, env_verts ``(P, W, 3)``: world vertices of
            each pair's pieces, padded; tool_near ``(P, V)``, env_near ``(P, W)``: :func:`near_vertices`.
    """
    corners = [p.corners for p in patches]
    corner_pair = np.repeat(np.arange(len(patches)), [len(c) for c in corners])
    tool_pair, tool_vertex = np.nonzero(tool_near)
    env_pair, env_vertex = np.nonzero(env_near)
    points = np.concatenate(
        [
            *corners,
            tool_verts[tool_pair, tool_vertex],
            env_verts[env_pair, env_vertex],
            np.array([p.closest for p in patches]),
        ]
    )
    pair = np.concatenate([corner_pair, tool_pair, env_pair, np.arange(len(patches))])
    sizes = [len(corner_pair), len(tool_pair), len(env_pair), len(patches)]
    source = np.repeat(np.array([s.value for s in Source], dtype=np.int8), sizes)
    order = np.lexsort((source, pair))  # pair by pair, in rule order (stable within a source)
    normals = np.array([p.normal for p in patches])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return Candidates(points[order], normals[pair[order]], pair[order], source[order])


def world_planes(planes: np.ndarray, rot: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Planes ``(..., 4)`` ``m·x ≤ o`` of a body frame expressed in the world, for the pose ``x_w = R x + p``.

    ``m_w = R m`` and ``o_w = o + m_w·p``; padding rows (``m = 0``) stay padding.
    """
    m = planes[..., :3] @ rot.T
    return np.concatenate([m, (planes[..., 3] + m @ pos)[..., None]], axis=-1)


def _interval(slope: np.ndarray, room: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Entry and exit parameters ``(K,)`` of lines through ``{x : m·x ≤ o}`` from ``slope = m·n`` and
    ``room = o - m·u``, both ``(F, K)`` (faces first: the reductions run across contiguous rows). A line
    outside a face parallel to it (by more than ``HIT_ATOL``) gets entry ``+inf`` (a miss)."""
    parallel = np.abs(slope) <= PARALLEL_TOL
    ratio = room / np.where(parallel, 1.0, slope)
    down = slope < 0.0
    entry = np.where(down & ~parallel, ratio, -np.inf).max(axis=0)
    exit_ = np.where(down | parallel, np.inf, ratio).min(axis=0)
    outside = (parallel & (room < -HIT_ATOL)).any(axis=0)
    return np.where(outside, np.inf, entry), exit_


def _dot(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``m_fk · v_k`` ``(F, K)`` of plane normals ``(F, K, 3+)`` and vectors ``(K, 3)``."""
    return m[..., 0] * v[:, 0] + m[..., 1] * v[:, 1] + m[..., 2] * v[:, 2]


def surface_gaps(
    points: np.ndarray, normals: np.ndarray, tool_planes: np.ndarray, tool_index: np.ndarray, env_planes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rule 2: where each line ``u + t n`` meets the tool and the environment piece.

    Args:
        points: ``(K, 3)`` candidate points ``u`` [m], world frame.
        normals: ``(K, 3)`` unit normals ``n``, world frame, environment → tool.
        tool_planes: ``(T, F, 4)`` world-frame planes of the tool pieces (padded).
        tool_index: ``(K,)`` each candidate's tool piece.
        env_planes: ``(G, K, 4)`` world-frame planes of each candidate's environment piece (padded; faces
            first).

    Returns:
        ``t_tool (K,)`` (where the line enters the tool: its lowest point along ``n``), ``t_env (K,)``
        (where it leaves the environment piece: its highest point) [m], and ``hit (K,)`` bool: the line
        meets both pieces (within ``HIT_ATOL``). The signed distance is ``t_tool - t_env``.
    """
    count = len(points)
    env_entry, t_env = np.empty(count), np.empty(count)
    for block in _blocks(count, env_planes.shape[0]):
        planes = env_planes[:, block]
        env_entry[block], t_env[block] = _interval(
            _dot(planes, normals[block]), planes[..., 3] - _dot(planes, points[block])
        )
    hit = env_entry <= t_env + HIT_ATOL
    t_tool = np.full(count, np.inf)
    for t in np.unique(tool_index[hit]):  # the tool side (often many planes) only where the environment is hit
        m, o = tool_planes[t, :, :3], tool_planes[t, :, 3:]
        rows = np.flatnonzero(hit & (tool_index == t))
        for block in _blocks(len(rows), len(m)):
            r = rows[block]
            t_tool[r], tool_exit = _interval(m @ normals[r].T, o - m @ points[r].T)
            hit[r] = t_tool[r] <= tool_exit + HIT_ATOL
    return t_tool, t_env, hit


def _blocks(count: int, faces: int) -> list[slice]:
    """Slices of ``range(count)`` with at most ``BLOCK_ELEMENTS // faces`` lines each."""
    size = max(1, BLOCK_ELEMENTS // max(faces, 1))
    return [slice(i, min(i + size, count)) for i in range(0, count, size)]


def select(
    cands: Candidates, tool_points: np.ndarray, distance: np.ndarray, hit: np.ndarray, margin: float
) -> np.ndarray:
    """Rule 3: which candidates ``(N,)`` become contacts (bool mask).

    Args:
        cands: from :func:`candidates`. tool_points: ``(N, 3)`` tool surface points [m].
        distance: ``(N,)`` signed gaps [m]. hit: ``(N,)`` from :func:`surface_gaps`. margin: [m].
    """
    keep = hit & (distance <= margin)
    # the same tool point twice in one pair (on a DUPLICATE_ATOL grid): keep the first
    kept = np.flatnonzero(keep)
    key = np.column_stack([cands.pair[kept], np.round(tool_points[kept] / DUPLICATE_ATOL)]).astype(np.int64)
    order = np.lexsort(key.T[::-1])  # stable: equal keys stay in candidate order
    repeat = np.r_[False, ~np.any(key[order[1:]] != key[order[:-1]], axis=1)]
    keep[kept[order[repeat]]] = False
    closest = cands.source == Source.CLOSEST
    others = np.where(keep & ~closest, distance, np.inf)
    starts = np.flatnonzero(np.r_[True, cands.pair[1:] != cands.pair[:-1]])
    best_other = np.minimum.reduceat(others, starts)[cands.pair]
    return keep & (~closest | (distance < best_other - DOMINATE_ATOL))
