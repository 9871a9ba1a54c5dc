"""Quaternion and rotation helpers in numpy, batch dimensions first: the reference backend of
:mod:`contactkit.rotations` (re-exported there; :mod:`.numba` and :mod:`.torch` are tested against it).

Quaternions are ``(w, x, y, z)`` (MuJoCo's convention). A rotation vector (axis-angle) ``phi`` has the
rotation axis as direction and the angle [rad] as norm. All functions broadcast over leading dimensions.
"""

from __future__ import annotations

import numpy as np

SMALL_ANGLE = 1e-12
"""Angle [rad] (or ``|sin(θ/2)|`` where a quaternion's vector part is what is at hand) below which series
expansions replace the closed forms, in every backend (numpy, numba, torch) and in the engine's reference.

The series used (``sin(θ/2)/θ ≈ 1/2 - θ²/48``, ``θ ≈ 2|v|/w``) err by ``O(θ⁴)``, ``O(θ²)`` relative: at
1e-12 that is far below the float64 and float32 round-off, and the closed forms are still exact well below
it (``sin`` and ``atan2`` of a tiny argument return the argument), so the threshold only has to keep
``0/0`` away; the torch backend's series also keep gradients finite at exactly zero."""


def quat_mul(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Hamilton product ``q1 ⊗ q2`` of ``(*B, 4)`` quaternions; rotates by ``q2`` first, then ``q1``."""
    q1 = np.asarray(q1, dtype=np.float64)
    q2 = np.asarray(q2, dtype=np.float64)
    w1, x1, y1, z1 = q1[..., 0], q1[..., 1], q1[..., 2], q1[..., 3]
    w2, x2, y2, z2 = q2[..., 0], q2[..., 1], q2[..., 2], q2[..., 3]
    out = np.empty(np.broadcast_shapes(q1.shape, q2.shape))
    out[..., 0] = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    out[..., 1] = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    out[..., 2] = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    out[..., 3] = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    return out


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of ``(*B, 3)`` vectors (``np.cross`` without its per-call overhead)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def norm(v: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """Euclidean norm over the last axis."""
    v = np.asarray(v, dtype=np.float64)
    return np.sqrt(np.sum(v * v, axis=-1, keepdims=keepdims))


def quat_conj(q: np.ndarray) -> np.ndarray:
    """Conjugate (inverse of a unit quaternion), ``(*B, 4)``."""
    q = np.asarray(q, dtype=np.float64)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quat_normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternion with non-negative ``w`` (a canonical sign), ``(*B, 4)``."""
    q = np.asarray(q, dtype=np.float64)
    q = q / norm(q, keepdims=True)
    return np.where(q[..., :1] < 0.0, -q, q)


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """Rotation matrix ``(*B, 3, 3)`` of unit quaternions ``(*B, 4)``; maps body to world vectors."""
    q = np.asarray(q, dtype=np.float64)
    if q.shape == (4,):  # one quaternion: the same arithmetic on Python floats, 4x faster than the batched path
        w, x, y, z = q.tolist()
        return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                         [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                         [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(q.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 0, 1] = 2 * (x * y - w * z)
    out[..., 0, 2] = 2 * (x * z + w * y)
    out[..., 1, 0] = 2 * (x * y + w * z)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 1, 2] = 2 * (y * z - w * x)
    out[..., 2, 0] = 2 * (x * z - w * y)
    out[..., 2, 1] = 2 * (y * z + w * x)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def mat_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(*B, 4)`` (w ≥ 0) of rotation matrices ``(*B, 3, 3)`` (Shepperd's method)."""
    m = np.asarray(m, dtype=np.float64)
    batch = m.shape[:-2]
    m = m.reshape(-1, 3, 3)
    out = np.empty((m.shape[0], 4))
    tr = np.trace(m, axis1=1, axis2=2)
    diag = np.stack([m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]], -1)
    choice = np.argmax(np.concatenate([tr[:, None], diag], -1), -1)
    for i in range(m.shape[0]):
        r, c = m[i], choice[i]
        if c == 0:
            s = 2.0 * np.sqrt(1.0 + tr[i])
            out[i] = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
        elif c == 1:
            s = 2.0 * np.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
            out[i] = [(r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s]
        elif c == 2:
            s = 2.0 * np.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
            out[i] = [(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s]
        else:
            s = 2.0 * np.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
            out[i] = [(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s]
    return quat_normalize(out).reshape(*batch, 4)


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vector ``(*B, 3)`` [rad] of unit quaternions ``(*B, 4)``, angle in ``[0, π]``."""
    q = quat_normalize(q)
    v = q[..., 1:]
    s = norm(v, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    scale = np.where(
        s > SMALL_ANGLE, angle / np.maximum(s, SMALL_ANGLE), 2.0 / np.maximum(q[..., :1], SMALL_ANGLE)
    )
    return v * scale


def rotvec_to_quat(phi: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(*B, 4)`` of rotation vectors ``(*B, 3)`` [rad]."""
    phi = np.asarray(phi, dtype=np.float64)
    angle = norm(phi, keepdims=True)
    half = 0.5 * angle
    sinc = np.where(angle > SMALL_ANGLE, np.sin(half) / np.maximum(angle, SMALL_ANGLE), 0.5 - angle**2 / 48.0)
    return np.concatenate([np.cos(half), phi * sinc], axis=-1)


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` ``(*B, 3)`` by unit quaternions ``q`` ``(*B, 4)`` (body → world)."""
    return np.einsum("...ij,...j->...i", quat_to_mat(q), np.asarray(v, dtype=np.float64))


def quat_integrate(q: np.ndarray, omega_world: np.ndarray, dt: float) -> np.ndarray:
    """Advance ``q`` by a world-frame angular velocity ``(*B, 3)`` [rad/s] held for ``dt`` [s]."""
    return quat_normalize(quat_mul(rotvec_to_quat(np.asarray(omega_world) * dt), q))


def quat_angle_between(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Geodesic angle ``(*B,)`` [rad] between two orientations, in ``[0, π]``."""
    d = np.abs(np.sum(quat_normalize(q1) * quat_normalize(q2), axis=-1))
    return 2.0 * np.arccos(np.clip(d, 0.0, 1.0))
