"""Cartesian impedance control of the tool: a pose target becomes a wrench.

The controller acts on the tool frame origin: ``f = K_p (p* − p) − D_p v + f_g`` and
``τ = K_r φ(q* q⁻¹) − D_r ω`` with ``φ`` the rotation vector of the orientation error (world frame),
``D = 2 ζ sqrt(K m)`` per axis and ``f_g`` the nominal weight (gravity compensation). Force and torque
are clipped to the gains' norm limits. This is the operational-space law of robosuite's OSC (Act-FIGNet paper,
footnote 3) without the arm: the tool is the only body (Act-FIGNet paper §III-B).
"""

from __future__ import annotations

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.rotations import norm, quat_conj, quat_mul, quat_to_rotvec, rotvec_to_quat
from contactkit.scene import ImpedanceGains

GRAVITY = 9.81
"""Standard gravity [m/s²] along −z."""


def _clip_norm(v: np.ndarray, limit: float) -> np.ndarray:
    n = norm(v, keepdims=True)
    return v * np.minimum(1.0, limit / np.maximum(n, 1e-300))


def pose_target(pos: np.ndarray, quat: np.ndarray, delta: np.ndarray, gains: ImpedanceGains):
    """Impedance target from the current pose and a clipped 6-D displacement.

    Args:
        pos: ``(*B, 3)`` current tool position [m, world].
        quat: ``(*B, 4)`` current orientation (w, x, y, z).
        delta: ``(*B, 6)`` displacement: position [m] and rotation vector [rad], both world frame.
        gains: limits ``max_pos_step`` and ``max_rot_step`` clip the two parts by norm.

    Returns:
        ``(target_pos (*B, 3), target_quat (*B, 4))``.
    """
    delta = np.asarray(delta, dtype=np.float64)
    if delta.shape[-1] != 6 or not np.all(np.isfinite(delta)):
        raise InvalidInputError(f"pose-delta action must be finite with 6 values, got {delta!r}")
    dp = _clip_norm(delta[..., :3], gains.max_pos_step)
    dphi = _clip_norm(delta[..., 3:], gains.max_rot_step)
    return pos + dp, quat_mul(rotvec_to_quat(dphi), quat)


def damping_gains(gains: ImpedanceGains, mass: float, inertia_diag: np.ndarray):
    """Critical-style damping ``D = 2 ζ sqrt(K m)`` [N·s/m] and ``2 ζ sqrt(K_r I)`` [N·m·s/rad], each ``(3,)``."""
    d_pos = 2.0 * gains.damping_ratio * np.sqrt(gains.stiffness_pos * mass)
    d_rot = 2.0 * gains.damping_ratio * np.sqrt(gains.stiffness_rot * np.asarray(inertia_diag))
    return d_pos, d_rot


def impedance_wrench(
    pos,
    quat,
    lin_vel,
    ang_vel,
    target_pos,
    target_quat,
    gains: ImpedanceGains,
    d_pos: np.ndarray,
    d_rot: np.ndarray,
    weight: float,
) -> np.ndarray:
    """Wrench ``(*B, 6)`` the controller applies at the tool origin, world frame [N, N·m].

    Args:
        pos, quat, lin_vel, ang_vel: tool state (``(*B,3)``, ``(*B,4)``, ``(*B,3)``, ``(*B,3)``; world frame).
        target_pos, target_quat: impedance target, ``(*B,3)`` [m] and ``(*B,4)``.
        gains: stiffness and limits.
        d_pos, d_rot: damping from :func:`damping_gains`.
        weight: nominal tool weight [N] compensated along +z (0 to disable).
    """
    err_rot = quat_to_rotvec(quat_mul(target_quat, quat_conj(quat)))
    force = gains.stiffness_pos * (target_pos - pos) - d_pos * lin_vel
    torque = gains.stiffness_rot * err_rot - d_rot * ang_vel
    force = _clip_norm(force, gains.max_force)
    torque = _clip_norm(torque, gains.max_torque)
    force = force + np.array([0.0, 0.0, weight])
    return np.concatenate([force, torque], axis=-1)
