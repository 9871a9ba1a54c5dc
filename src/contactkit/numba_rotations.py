"""Quaternion helpers compiled with numba, shared by the compiled kernels of the MuJoCo sub-step summary
(:mod:`contactkit.mujoco.substeps`) and the engine (:mod:`contactkit.engine._kernels_dynamics`).

Quaternions are ``(w, x, y, z)``; the numpy versions for everything else are in :mod:`contactkit.rotations`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

SMALL_ANGLE = 1e-12
"""Below this ``|sin(θ/2)|`` the rotation vector uses its first-order form ``2 v / w``."""


@njit(cache=True)
def product_rotvec(w1, x1, y1, z1, w2, x2, y2, z2):
    """Rotation vector ``(3,)`` [rad] of the quaternion product ``q1 ⊗ q2`` (unit quaternions given by their
    components), with the sign chosen so that the angle lies in ``[0, π]``."""
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    v = np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                  w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])
    if w < 0.0:
        w, v = -w, -v
    s = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if s > SMALL_ANGLE:
        return v * (2.0 * math.atan2(s, w) / s)
    return v * (2.0 / max(w, SMALL_ANGLE))
