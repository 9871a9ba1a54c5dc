"""Planar geometry of the pushed object (pushing paper eqs 11–12): poses, the plan polygon, tip distances.

A planar pose is ``(x, y, θ)`` of the object's centre of mass in the world (metres, radians); a planar twist is
``(v_x, v_y, ω)`` in the world frame. Points are world ``(x, y)`` unless a name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError


def rotation_2d(theta: float) -> np.ndarray:
    """``(2, 2)`` rotation by ``theta`` [rad]."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def world_polygon(polygon: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """``(V, 2)`` world vertices of an object-frame polygon ``(V, 2)`` at planar ``pose`` ``(3,)``."""
    pose = np.asarray(pose, dtype=np.float64)
    return np.asarray(polygon) @ rotation_2d(pose[2]).T + pose[:2]


def point_jacobian(pose: np.ndarray, point: np.ndarray) -> np.ndarray:
    """``(2, 3)`` world velocity of the body point at world ``point`` ``(2,)`` per planar twist (eq 12's ``A_ob``).

    ``v_p = v + ω e_z × r`` with ``r = p - com``: ``[[1, 0, -r_y], [0, 1, r_x]]``.
    """
    r = np.asarray(point, dtype=np.float64) - np.asarray(pose, dtype=np.float64)[:2]
    return np.array([[1.0, 0.0, -r[1]], [0.0, 1.0, r[0]]])


@dataclass(frozen=True)
class FaceDistance:
    """Signed distance of a point to a convex polygon and the face it is closest to.

    Attributes:
        distance: signed distance [m] (> 0 outside, < 0 inside: minus the distance to the nearest face).
        normal: ``(2,)`` outward unit normal of the nearest face (world).
        closest: ``(2,)`` nearest point on the polygon boundary (world) [m].
        face: index of the face (edge from vertex ``face`` to ``face + 1``).
    """

    distance: float
    normal: np.ndarray
    closest: np.ndarray
    face: int


def face_distance(vertices: np.ndarray, point: np.ndarray) -> FaceDistance:
    """Signed distance from ``point`` ``(2,)`` to the convex counter-clockwise polygon ``vertices`` ``(V, 2)``.

    Outside, the nearest boundary point may be a vertex; the reported normal is then that of the adjacent
    face with the larger signed plane distance (the face the point is in front of), which is the face a
    pusher tip pushes on.
    """
    v = np.asarray(vertices, dtype=np.float64)
    p = np.asarray(point, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 2 or v.shape[0] < 3 or p.shape != (2,):
        raise InvalidInputError(f"face_distance needs (V>=3, 2) vertices and a (2,) point, got {v.shape}, {p.shape}")
    edges = np.roll(v, -1, axis=0) - v
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1) / np.linalg.norm(edges, axis=1)[:, None]
    plane = np.einsum("ij,ij->i", p - v, normals)
    face = int(np.argmax(plane))
    t = np.clip(np.dot(p - v[face], edges[face]) / np.dot(edges[face], edges[face]), 0.0, 1.0)
    closest = v[face] + t * edges[face]
    if plane[face] <= 0.0:
        return FaceDistance(float(plane[face]), normals[face], p - plane[face] * normals[face], face)
    return FaceDistance(float(np.linalg.norm(p - closest)), normals[face], closest, face)


def mean_radius(polygon: np.ndarray) -> float:
    """Mean distance ``ρ = (1/A) ∫ |r| dA`` of a convex polygon ``(V, 2)`` from the origin (inside it) [m].

    Exact: a fan of triangles from the origin; over the triangle of an edge at distance ``d`` from the origin,
    ``∫ |r| dA = (d³/6) [sec ψ tan ψ + ln(sec ψ + tan ψ)]`` between the edge ends' angles ``ψ`` measured from
    the foot of the perpendicular. ``μ m g ρ`` is the largest friction torque of a uniformly pressed base.
    """
    v = np.asarray(polygon, dtype=np.float64)
    total, area = 0.0, 0.0
    for a, b in zip(v, np.roll(v, -1, axis=0), strict=True):
        edge = b - a
        length = float(np.linalg.norm(edge))
        tangent = edge / length
        d = abs(a[0] * edge[1] - a[1] * edge[0]) / length
        area += 0.5 * d * length
        psi = np.arctan2([a @ tangent, b @ tangent], d)
        f = 1.0 / np.cos(psi) * np.tan(psi) + np.log(1.0 / np.cos(psi) + np.tan(psi))
        total += d**3 / 6.0 * float(f[1] - f[0])
    return total / area


def support_points(polygon: np.ndarray) -> np.ndarray:
    """``(V, 2)`` ground support points of the hybrid model: the vertices scaled about the origin (centre of mass).

    Each carries ``m g / V`` with box friction along the object's axes; the scale ``k = ρ / mean_i(|x_i| + |y_i|)``
    (``ρ`` of :func:`mean_radius`) makes their largest friction torque in pure spin, ``μ (m g / V) Σ (|x_i| +
    |y_i|)``, equal to that of a uniformly pressed base, ``μ m g ρ`` (eq 11's ``τ_z`` bound).
    """
    v = np.asarray(polygon, dtype=np.float64)
    return v * (mean_radius(v) / float(np.mean(np.abs(v).sum(axis=1))))


def shift_body_point(pose, twist, offset, sign: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Pose ``(3,)`` and world twist ``(3,)`` of the frame at body-frame ``sign · offset`` ``(2,)`` [m] from the
    frame of ``pose``/``twist`` (same yaw and yaw rate): ``p' = p + R(θ) s``, ``v' = v + ω e_z × R(θ) s``.

    ``sign = 1`` takes the object frame to its centre of mass (``offset`` = the centre-of-mass offset), ``-1`` back.
    """
    pose, twist = np.asarray(pose, dtype=np.float64), np.asarray(twist, dtype=np.float64)
    r = rotation_2d(pose[2]) @ (sign * np.asarray(offset, dtype=np.float64))
    return (np.array([pose[0] + r[0], pose[1] + r[1], pose[2]]),
            np.array([twist[0] - twist[2] * r[1], twist[1] + twist[2] * r[0], twist[2]]))
