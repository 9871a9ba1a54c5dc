"""Face-interaction mesh–mesh edges of Act-FIGNet (paper §III-C.1, appendix V-A.2.b, eq. 14).

Two faces of different bodies interact when their closest points are within the collision radius. Each
interacting pair gives two directed edges (each face once the sender). An edge connects the three sender
vertices to the three receiver vertices, each set ranked by distance to its face's closest point, and
carries the features of eq. 14 followed by the norms of its distance vectors (as FIGNet does).
"""

from __future__ import annotations

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


def _bounding_spheres(tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centre = tris.mean(axis=1)
    return centre, np.linalg.norm(tris - centre[:, None], axis=-1).max(axis=1)


def face_pairs_within(
    tris_a: np.ndarray, tris_b: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All pairs of triangles from ``tris_a`` (Fa, 3, 3) and ``tris_b`` (Fb, 3, 3) closer than ``radius`` [m].

    Broad phase: bounding spheres in a k-d tree; narrow phase: exact triangle–triangle closest points.

    Returns:
        ``(ia, ib, dist, point_a, point_b)``: face indices (P,), distances (P,) [m] and closest points
        (P, 3) on each face, ordered by ``(ia, ib)``.
    """
    if not (np.isfinite(radius) and radius >= 0):
        raise InvalidInputError(f"collision radius must be finite and >= 0 [m], got {radius}")
    empty_i = np.zeros(0, dtype=np.int64)
    if len(tris_a) == 0 or len(tris_b) == 0:
        return empty_i, empty_i, np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3))
    ca, ra = _bounding_spheres(tris_a)
    cb, rb = _bounding_spheres(tris_b)
    hits = cKDTree(cb).query_ball_point(ca, ra + rb.max() + radius)
    counts = np.fromiter((len(h) for h in hits), dtype=np.int64, count=len(hits))
    ia = np.repeat(np.arange(len(tris_a)), counts)
    ib = np.fromiter((j for h in hits for j in sorted(h)), dtype=np.int64, count=int(counts.sum()))
    near = np.linalg.norm(ca[ia] - cb[ib], axis=-1) <= ra[ia] + rb[ib] + radius
    ia, ib = ia[near], ib[near]
    dist, pa, pb = triangle_pair_closest_points(tris_a[ia], tris_b[ib])
    keep = dist <= radius
    return ia[keep], ib[keep], dist[keep], pa[keep], pb[keep]


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


def _normals(tris: np.ndarray) -> np.ndarray:
    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    return n / np.sqrt(np.maximum(np.einsum("ij,ij->i", n, n), NORMAL_EPS))[:, None]


def _directed(ids_s, tris_s, p_s, ids_r, tris_r, p_r) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            _normals(tris_s),
            _normals(tris_r),
            np.linalg.norm(d_rs, axis=-1, keepdims=True),
            np.linalg.norm(d_s, axis=-1),
            np.linalg.norm(d_r, axis=-1),
        ],
        axis=1,
    )
    return ids_s[rows, order_s], ids_r[rows, order_r], feats


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
    tris_a, tris_b = positions[faces_a], positions[faces_b]
    ia, ib, dist, pa, pb = face_pairs_within(tris_a, tris_b, radius)
    s1, r1, f1 = _directed(faces_a[ia], tris_a[ia], pa, faces_b[ib], tris_b[ib], pb)
    s2, r2, f2 = _directed(faces_b[ib], tris_b[ib], pb, faces_a[ia], tris_a[ia], pa)
    return FaceEdges(
        senders=np.concatenate([s1, s2]).astype(np.int64),
        receivers=np.concatenate([r1, r2]).astype(np.int64),
        features=np.concatenate([f1, f2]).reshape(-1, FACE_FEATURE_DIM),
        distance=np.concatenate([dist, dist]),
    )
