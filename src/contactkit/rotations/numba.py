"""Quaternion and rotation helpers compiled with numba, one rotation at a time (float64).

The maths of :mod:`contactkit.rotations.numpy` (the reference) for the compiled kernels of the engine
(:mod:`contactkit.engine._kernels_dynamics`, :mod:`contactkit.engine._kernels_step`) and of the MuJoCo sub-step
summary (:mod:`contactkit.mujoco.substeps`). Quaternions are ``(w, x, y, z)``; a rotation vector ``φ`` [rad] has
the axis as direction and the angle as norm; ``R`` maps body to world coordinates. The series branches switch at
the package's one :data:`~contactkit.rotations.numpy.SMALL_ANGLE`.

Arguments are anything indexable (arrays or tuples). Quaternions come back as 4-tuples of floats, so that the
kernels' inner loops allocate nothing for them; vectors and matrices come back as arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from contactkit.rotations.numpy import SMALL_ANGLE


@njit(cache=True)
def quat_mul(a, b):
    """Hamilton product ``a ⊗ b`` of two quaternions ``(4,)``, as a 4-tuple (rotates by ``b`` first)."""
    w1, x1, y1, z1 = a[0], a[1], a[2], a[3]
    w2, x2, y2, z2 = b[0], b[1], b[2], b[3]
    return (w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2)


@njit(cache=True)
def quat_conj(q):
    """Conjugate ``(w, -x, -y, -z)`` of a quaternion ``(4,)`` (the inverse of a unit one), as a 4-tuple."""
    return q[0], -q[1], -q[2], -q[3]


@njit(cache=True)
def quat_normalize(q):
    """Unit quaternion with ``w ≥ 0`` (the canonical sign) of a non-zero quaternion ``(4,)``, as a 4-tuple."""
    size = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    scale = (-1.0 if q[0] < 0.0 else 1.0) / size
    return q[0] * scale, q[1] * scale, q[2] * scale, q[3] * scale


@njit(cache=True)
def quat_to_mat(q):
    """Rotation matrix ``(3, 3)`` (body → world) of a unit quaternion ``(4,)``."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    out = np.empty((3, 3))
    out[0, 0], out[0, 1], out[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    out[1, 0], out[1, 1], out[1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    out[2, 0], out[2, 1], out[2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    return out


@njit(cache=True)
def quat_rotate(q, v):
    """The vector ``v (3,)`` rotated by the unit quaternion ``q (4,)`` (body → world), ``(3,)``."""
    return quat_to_mat(q) @ np.array([v[0], v[1], v[2]])


@njit(cache=True)
def rotvec_to_quat(phi):
    """Unit quaternion ``exp(φ)`` of a rotation vector ``φ (3,)`` [rad], as a 4-tuple (``w ≥ 0`` for ``|φ| ≤ π``).

    Below :data:`SMALL_ANGLE` the ``sin(θ/2)/θ`` factor is its series ``1/2 - θ²/48``.
    """
    px, py, pz = phi[0], phi[1], phi[2]
    angle = math.sqrt(px * px + py * py + pz * pz)
    half = 0.5 * angle
    sinc = math.sin(half) / angle if angle > SMALL_ANGLE else 0.5 - angle * angle / 48.0
    return math.cos(half), px * sinc, py * sinc, pz * sinc


@njit(cache=True)
def quat_to_rotvec(q):
    """Rotation vector ``(3,)`` [rad] of a unit quaternion ``q (4,)``, angle in ``[0, π]`` (the sign of ``q`` is
    chosen so that ``w ≥ 0``). Below ``|sin(θ/2)| =`` :data:`SMALL_ANGLE` it is the first-order ``2 v / w``."""
    w = q[0]
    v = np.array([q[1], q[2], q[3]])
    if w < 0.0:
        w, v = -w, -v
    s = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if s > SMALL_ANGLE:
        return v * (2.0 * math.atan2(s, w) / s)
    return v * (2.0 / max(w, SMALL_ANGLE))


@njit(cache=True)
def product_rotvec(w1, x1, y1, z1, w2, x2, y2, z2):
    """Rotation vector ``(3,)`` [rad] of the product ``q1 ⊗ q2`` of unit quaternions given by their components,
    angle in ``[0, π]``: :func:`quat_to_rotvec` of :func:`quat_mul` (a rotation error in one call)."""
    return quat_to_rotvec(quat_mul((w1, x1, y1, z1), (w2, x2, y2, z2)))
