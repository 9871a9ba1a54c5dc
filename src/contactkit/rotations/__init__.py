"""Quaternions and rotations, one module per backend, one set of conventions.

Quaternions are ``(w, x, y, z)`` of unit norm (MuJoCo's convention); a rotation vector (axis-angle) ``φ`` has
the rotation axis as direction and the angle [rad] as norm; ``R`` maps body coordinates to world coordinates.

* :mod:`contactkit.rotations.numpy` — the reference, float64, batch dimensions first; re-exported here, so
  ``from contactkit.rotations import quat_to_mat`` is the numpy function.
* :mod:`contactkit.rotations.numba` — the same maths compiled with numba for one quaternion at a time, for
  the engine's kernels and the MuJoCo sub-step summary.
* :mod:`contactkit.rotations.torch` — the same maths in torch, differentiable everywhere (the Taylor branches
  keep gradients finite at zero rotation), for :mod:`contactkit.engine.diff`.

All three switch to their series at the one threshold :data:`SMALL_ANGLE`; ``tests/test_rotations_backends.py``
checks that they agree.
"""

from contactkit.rotations.numpy import (
    SMALL_ANGLE,
    cross,
    mat_to_quat,
    norm,
    quat_angle_between,
    quat_conj,
    quat_integrate,
    quat_mul,
    quat_normalize,
    quat_rotate,
    quat_to_mat,
    quat_to_rotvec,
    rotvec_to_quat,
)

__all__ = [
    "SMALL_ANGLE",
    "cross",
    "mat_to_quat",
    "norm",
    "quat_angle_between",
    "quat_conj",
    "quat_integrate",
    "quat_mul",
    "quat_normalize",
    "quat_rotate",
    "quat_to_mat",
    "quat_to_rotvec",
    "rotvec_to_quat",
]
