"""Face-interaction mesh–mesh edges of Act-FIGNet (paper §III-C.1, appendix V-A.2.b, eq. 14).

Two faces of different bodies interact when their closest points are within the collision radius. Each
interacting pair gives two directed edges (each face once the sender). An edge connects the three sender
vertices to the three receiver vertices, each set ranked by distance to its face's closest point, and
carries the features of eq. 14 followed by the norms of its distance vectors (as FIGNet does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from contactkit.errors import InvalidInputError
from contactkit.models.gnn.triangles import triangle_pair_closest_points

FACE_FEATURE_LAYOUT: tuple[tuple[str, int, bool], ...] = (
    ("d_rs", 3, True),
    ("d_s1", 3, True),
    ("d_s2", 3, True),
    ("d_s3", 3, True),
    ("d_r1", 3, True),
    ("d_r2", 3, True),
    ("d_r3", 3, True),
    ("n_s", 3, True),
    ("n_r", 3, True),
    ("norm_d_rs", 1, False),
    ("norm_d_s", 3, False),
    ("norm_d_r", 3, False),
)
"""Blocks ``(name, width, is_vector)`` of a face-edge feature row (eq. 14 + norms); vectors rotate with
the world, the rest are rotation invariant."""

FACE_FEATURE_DIM = sum(w for _, w, _ in FACE_FEATURE_LAYOUT)

RANK_RTOL = 1e-9
"""Relative difference below which two vertex distances tie in the ranking of appendix V-A.2.b."""

BRUTE_FORCE_PAIRS = 200_000
"""Broad phase tests all face pairs at once up to this many (``Fa·Fb``), beyond that uses a k-d tree."""

NORMAL_EPS = 1e-30
"""Floor on ``|normal|²`` so that a face squashed by input noise does not divide by zero."""


@dataclass(frozen=True)
class FaceEdges:
    """Directed face-interaction edges.

    Attributes:
        senders: ``(E, 3)`` int64 mesh-node ids of the sender face, nearest vertex first.
        receivers: ``(E, 3)`` int64 mesh-node ids of the receiver face, nearest vertex first.
        features: ``(E, FACE_FEATURE_DIM)`` float64, world frame [m] (normals unitless).
        distance: ``(E,)`` closest-point distance of the face pair [m].
    """

    senders: np.ndarray
    receivers: np.ndarray
    features: np.ndarray
    distance: np.ndarray

    @property
    def num_edges(self) -> int:
        """Number of directed edges ``E``."""
        return int(self.senders.shape[0])


def bounding_spheres(tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centres ``(..., F, 3)`` and radii ``(..., F)`` of spheres around triangles ``(..., F, 3, 3)``."""
    centre = tris.mean(axis=-2)
    return centre, np.linalg.norm(tris - centre[..., None, :], axis=-1).max(axis=-1)


def _sphere_pairs(tris_a: np.ndarray, tris_b: np.ndarray, radius: float) -> tuple[np.ndarray, ...]:
    """Face pairs ``(g, ia, ib)`` of graphs ``g`` whose bounding spheres are within ``radius``, sorted.

    ``tris_a`` ``(G, Fa, 3, 3)``, ``tris_b`` ``(G, Fb, 3, 3)``: all pairs at once for small meshes, else a
    k-d tree per graph.
    """
    ca, ra = bounding_spheres(tris_a)
    cb, rb = bounding_spheres(tris_b)
    if tris_a.shape[1] * tris_b.shape[1] <= BRUTE_FORCE_PAIRS:
        gap = np.linalg.norm(ca[:, :, None] - cb[:, None], axis=-1) - ra[:, :, None] - rb[:, None]
        return tuple(i.astype(np.int64) for i in np.nonzero(gap <= radius))
    out = []
    for g in range(len(tris_a)):
        hits = cKDTree(cb[g]).query_ball_point(ca[g], ra[g] + rb[g].max() + radius)
        counts = np.fromiter((len(h) for h in hits), dtype=np.int64, count=len(hits))
        ia = np.repeat(np.arange(len(hits)), counts)
        ib = np.fromiter((j for h in hits for j in sorted(h)), dtype=np.int64, count=int(counts.sum()))
        near = np.linalg.norm(ca[g, ia] - cb[g, ib], axis=-1) <= ra[g, ia] + rb[g, ib] + radius
        out.append((np.full(int(near.sum()), g, dtype=np.int64), ia[near], ib[near]))
    return tuple(np.concatenate([o[k] for o in out]) for k in range(3))


def _candidate_pairs(tris_a: np.ndarray, tris_b: np.ndarray, radius: float) -> tuple[np.ndarray, ...]:
    """Broad phase: face pairs ``(g, ia, ib)`` that may be within ``radius``, ordered by ``(g, ia, ib)``.

    ``tris_a`` ``(G, Fa, 3, 3)`` and ``tris_b`` ``(G, Fb, 3, 3)``: the faces of ``G`` graphs. Bounding
    spheres first, then two exact, conservative culls: axis-aligned boxes further apart than ``radius``
    along an axis, and a triangle lying wholly more than ``radius`` to one side of the other's plane. Long
    thin faces (prism sides) have loose spheres: the culls remove about 6 in 7 sphere candidates of a peg
    in its hole, each a costly narrow-phase test.
    """
    if tris_a.shape[1] == 0 or tris_b.shape[1] == 0:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(3))
    g, ia, ib = _sphere_pairs(tris_a, tris_b, radius)
    a, b = tris_a[g, ia], tris_b[g, ib]
    boxes = np.all(np.maximum(a.min(axis=1), b.min(axis=1)) - np.minimum(a.max(axis=1), b.max(axis=1)) <= radius,
                   axis=1)
    keep = boxes & straddles(a, b, radius) & straddles(b, a, radius)
    return g[keep], ia[keep], ib[keep]


def straddles(tris: np.ndarray, other: np.ndarray, radius: float, normals: np.ndarray | None = None) -> np.ndarray:
    """False where all of ``other``'s vertices lie more than ``radius`` to one side of ``tris``' plane (P,).

    ``normals``: ``tris``' unit normals (P, 3) when already known (:func:`triangle_normals`, the same values).
    """
    d = np.einsum("pk,pvk->pv", triangle_normals(tris) if normals is None else normals, other - tris[:, :1])
    return ~(np.all(d > radius, axis=1) | np.all(d < -radius, axis=1))


def face_pairs_within(
    tris_a: np.ndarray, tris_b: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All pairs of triangles from ``tris_a`` (Fa, 3, 3) and ``tris_b`` (Fb, 3, 3) closer than ``radius`` [m].

    Broad phase: bounding spheres (all pairs for small meshes, else a k-d tree); narrow phase: exact
    triangle–triangle closest points.

    Returns:
        ``(ia, ib, dist, point_a, point_b)``: face indices (P,), distances (P,) [m] and closest points
        (P, 3) on each face, ordered by ``(ia, ib)``.
    """
    _check_radius(radius)
    _, ia, ib = _candidate_pairs(tris_a[None], tris_b[None], radius)
    dist, pa, pb = triangle_pair_closest_points(tris_a[ia], tris_b[ib])
    keep = dist <= radius
    return ia[keep], ib[keep], dist[keep], pa[keep], pb[keep]


def _check_radius(radius: float) -> None:
    if not (np.isfinite(radius) and radius >= 0):
        raise InvalidInputError(f"collision radius must be finite and >= 0 [m], got {radius}")


def _rank(tris: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Order (P, 3) of each face's vertices by distance to its closest point, nearest first.

    Distances within ``RANK_RTOL`` (relative to the largest of the three) count as equal and keep the
    face's own vertex order, so that ties (common on regular meshes) break the same way in any frame.
    """
    d = np.linalg.norm(tris - point[:, None], axis=-1)
    tol = RANK_RTOL * d.max(axis=1, keepdims=True)[:, :, None]
    local = np.arange(3)
    before = (d[:, None, :] < d[:, :, None] - tol) | (
        (np.abs(d[:, None, :] - d[:, :, None]) <= tol) & (local[None, :] < local[:, None])
    )  # before[p, i, j]: vertex j ranks before vertex i
    return np.argsort(before.sum(axis=2), axis=1, kind="stable")


def triangle_normals(tris: np.ndarray) -> np.ndarray:
    """Unit normals ``(P, 3)`` of triangles ``(P, 3, 3)`` (right-hand winding); each row from its own triangle only,
    so normals computed once per face equal those computed per face pair."""
    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    return n / np.sqrt(np.maximum(np.einsum("ij,ij->i", n, n), NORMAL_EPS))[:, None]



def directed_edges(ids_s, tris_s, p_s, ids_r, tris_r, p_r) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges from faces ``s`` to faces ``r``: ranked node ids and the eq. 14 features."""
    rows = np.arange(len(ids_s))[:, None]
    order_s, order_r = _rank(tris_s, p_s), _rank(tris_r, p_r)
    vs, vr = tris_s[rows, order_s], tris_r[rows, order_r]  # (P, 3, 3) ranked vertices
    d_rs = p_r - p_s
    d_s = vs - p_s[:, None]
    d_r = vr - p_r[:, None]
    feats = np.concatenate(
        [
            d_rs,
            d_s.reshape(-1, 9),
            d_r.reshape(-1, 9),
            triangle_normals(tris_s),
            triangle_normals(tris_r),
            np.linalg.norm(d_rs, axis=-1, keepdims=True),
            np.linalg.norm(d_s, axis=-1),
            np.linalg.norm(d_r, axis=-1),
        ],
        axis=1,
    )
    return ids_s[rows, order_s], ids_r[rows, order_r], feats


def edges_both_ways(ids_a, tris_a, p_a, normals_a, ids_b, tris_b, p_b, normals_b) -> tuple[np.ndarray, ...]:
    """``directed_edges(a → b)`` and ``directed_edges(b → a)`` of interacting face pairs, each face ranked once.

    Args: per pair ``P``: node ids ``(P, 3)``, triangles ``(P, 3, 3)``, closest points ``(P, 3)`` and unit normals
    ``(P, 3)`` (:func:`triangle_normals`) of face ``a`` and of face ``b`` [m].

    Returns:
        ``(senders (2P, 3), receivers (2P, 3), features (2P, 34))``, the ``a → b`` edges then ``b → a``: the values
        of :func:`directed_edges` (the reverse edge's vectors are the forward ones swapped, ``d_rs`` negated, which
        is exact in floating point).
    """
    rows = np.arange(len(ids_a))[:, None]
    order_a, order_b = _rank(tris_a, p_a), _rank(tris_b, p_b)
    d_ba = p_b - p_a
    d_a = (tris_a[rows, order_a] - p_a[:, None]).reshape(-1, 9)
    d_b = (tris_b[rows, order_b] - p_b[:, None]).reshape(-1, 9)
    n_ba = np.linalg.norm(d_ba, axis=-1, keepdims=True)
    n_a, n_b = np.linalg.norm(d_a.reshape(-1, 3, 3), axis=-1), np.linalg.norm(d_b.reshape(-1, 3, 3), axis=-1)
    forward = np.concatenate([d_ba, d_a, d_b, normals_a, normals_b, n_ba, n_a, n_b], axis=1)
    backward = np.concatenate([-d_ba, d_b, d_a, normals_b, normals_a, n_ba, n_b, n_a], axis=1)
    ranked_a, ranked_b = ids_a[rows, order_a], ids_b[rows, order_b]
    return (np.concatenate([ranked_a, ranked_b]), np.concatenate([ranked_b, ranked_a]),
            np.concatenate([forward, backward]))


def face_interaction_edges(
    positions: np.ndarray, faces_a: np.ndarray, faces_b: np.ndarray, radius: float
) -> FaceEdges:
    """Face-interaction edges between two face sets of different bodies (eq. 14), both directions.

    Args:
        positions: ``(N, 3)`` world positions of all mesh nodes [m].
        faces_a: ``(Fa, 3)`` node ids of the first body's faces (the tool), outward winding.
        faces_b: ``(Fb, 3)`` node ids of the other bodies' faces (the environment).
        radius: collision radius [m]: faces interact when their closest points are at most this far apart.

    Returns:
        :class:`FaceEdges`, the ``a → b`` edges first, then ``b → a``, each ordered by face pair.
    """
    return face_interaction_edges_many([positions], [faces_a], [faces_b], radius)[0]


def face_interaction_edges_many(
    positions: Sequence[np.ndarray], faces_a: Sequence[np.ndarray], faces_b: Sequence[np.ndarray], radius: float
) -> list[FaceEdges]:
    """:func:`face_interaction_edges` of several graphs, the narrow phase and features computed in one pass.

    Each argument holds one entry per graph (``(N_g, 3)`` positions, ``(Fa_g, 3)`` and ``(Fb_g, 3)`` faces);
    the result equals calling :func:`face_interaction_edges` on each, only faster (numpy's per-call
    overhead dominates on the few hundred candidate pairs of one graph).
    """
    _check_radius(radius)
    n = len(positions)
    if not n == len(faces_a) == len(faces_b):
        raise InvalidInputError(f"{n} position arrays for {len(faces_a)} and {len(faces_b)} face arrays")
    groups: dict[tuple, list[int]] = {}
    for k in range(n):  # graphs of one scene share face arrays: their broad phase runs in one pass
        groups.setdefault((id(faces_a[k]), id(faces_b[k])), []).append(k)
    parts = []  # (graph ids (P,), ids_a (P, 3), tris_a (P, 3, 3), ids_b, tris_b)
    for members in groups.values():
        fa, fb = faces_a[members[0]], faces_b[members[0]]
        ta = np.stack([positions[k][fa] for k in members])
        tb = np.stack([positions[k][fb] for k in members])
        g, ia, ib = _candidate_pairs(ta, tb, radius)
        parts.append((np.asarray(members, dtype=np.int64)[g], fa[ia], ta[g, ia], fb[ib], tb[g, ib]))
    owner, ids_a, tris_a, ids_b, tris_b = (np.concatenate([p[k] for p in parts]) for k in range(5))
    order = np.argsort(owner, kind="stable")
    owner, ids_a, tris_a, ids_b, tris_b = (x[order] for x in (owner, ids_a, tris_a, ids_b, tris_b))
    dist, pa, pb = triangle_pair_closest_points(tris_a, tris_b)
    keep = dist <= radius
    owner = owner[keep]
    ids_a, tris_a, ids_b, tris_b, dist, pa, pb = (x[keep] for x in (ids_a, tris_a, ids_b, tris_b, dist, pa, pb))
    s1, r1, f1 = directed_edges(ids_a, tris_a, pa, ids_b, tris_b, pb)
    s2, r2, f2 = directed_edges(ids_b, tris_b, pb, ids_a, tris_a, pa)
    out = []
    for g in range(n):
        m = owner == g
        out.append(FaceEdges(
            senders=np.concatenate([s1[m], s2[m]]).astype(np.int64),
            receivers=np.concatenate([r1[m], r2[m]]).astype(np.int64),
            features=np.concatenate([f1[m], f2[m]]).reshape(-1, FACE_FEATURE_DIM),
            distance=np.concatenate([dist[m], dist[m]]),
        ))
    return out
