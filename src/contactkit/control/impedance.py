"""Cartesian impedance control of the tool: a pose target becomes a wrench.

The controller acts on the tool centre point (TCP), ``r = ImpedanceGains.tcp_offset`` in the tool frame (the tool
origin by default): with ``p_t = p + R r`` and ``v_t = v + ω × R r``,
``f = K_p (p* − p_t) − D_p v_t`` and ``τ_t = K_r φ(q* q⁻¹) − D_r ω`` with ``φ`` the rotation vector of the
orientation error (world frame), ``D = 2 ζ sqrt(K m)`` per axis (or the gains' damping values) and ``f_g`` the
nominal weight (gravity compensation, at the tool origin). Force and torque are clipped to the gains' norm limits;
the wrench about the tool origin is ``(f + f_g, τ_t + R r × f)``. This is the operational-space law of robosuite's
OSC (Act-FIGNet paper, footnote 3) without the arm: the tool is the only body (Act-FIGNet paper §III-B).

A pose command becomes the target ``(p*, q*)`` of the TCP (:func:`command_target`): a displacement from the current
TCP pose (``POSE_DELTA``) or an absolute target (``POSE_TARGET``); either is clipped to ``max_pos_step`` /
``max_rot_step`` from the current pose, and the clip is reported, never silent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.gains import ImpedanceGains
from contactkit.model import ActionMode
from contactkit.rotations import cross, norm, quat_conj, quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat

GRAVITY = 9.81
"""Standard gravity [m/s²] along −z."""
POSE_MODES = (ActionMode.POSE_DELTA, ActionMode.POSE_TARGET)
"""Action modes read through the impedance controller (a pose target); ``WRENCH`` bypasses it."""


def _clip_norm(v: np.ndarray, limit: float) -> np.ndarray:
    n = norm(v, keepdims=True)
    return v * np.minimum(1.0, limit / np.maximum(n, 1e-300))


def tcp_lever(quat: np.ndarray, gains: ImpedanceGains) -> np.ndarray:
    """``R r`` ``(*B, 3)`` [m, world]: the tool centre point from the tool origin, orientation ``quat`` ``(*B, 4)``."""
    return quat_to_mat(quat) @ gains.tcp_offset


def tcp_position(pos: np.ndarray, quat: np.ndarray, gains: ImpedanceGains) -> np.ndarray:
    """``(*B, 3)`` world position of the tool centre point of a tool at ``pos`` ``(*B, 3)`` [m], ``quat`` ``(*B, 4)``
    (``pos`` itself, bit for bit, when ``tcp_offset`` is zero)."""
    return pos + tcp_lever(quat, gains) if gains.has_tcp else pos


@dataclass(frozen=True)
class Target:
    """The TCP's impedance target of a pose command, and whether a limit bound.

    Attributes:
        pos: ``(*B, 3)`` target position of the TCP [m, world]; quat: ``(*B, 4)`` target orientation (w, x, y, z).
        pos_clipped: ``(*B,)`` the target was farther than ``max_pos_step`` from the TCP and was pulled in.
        rot_clipped: ``(*B,)`` the target turned more than ``max_rot_step`` from the tool and was pulled in.
    """

    pos: np.ndarray
    quat: np.ndarray
    pos_clipped: np.ndarray
    rot_clipped: np.ndarray

    def clipped(self) -> frozenset[str]:
        """The gains' limits that bound for any batch element (``max_pos_step``, ``max_rot_step``)."""
        return frozenset(name for name, hit in (("max_pos_step", self.pos_clipped), ("max_rot_step", self.rot_clipped))
                         if np.any(hit))


def command_target(pos: np.ndarray, quat: np.ndarray, command: np.ndarray, gains: ImpedanceGains,
                   mode: ActionMode = ActionMode.POSE_DELTA) -> Target:
    """The TCP's impedance target of a pose command, clipped to the gains' step limits (module docstring).

    Args:
        pos: ``(*B, 3)`` current tool origin [m, world]; quat: ``(*B, 4)`` current orientation (w, x, y, z).
        command: ``(*B, 6)``: ``POSE_DELTA``: displacement of the TCP, position [m] and rotation vector [rad],
            world frame; ``POSE_TARGET``: the TCP's absolute target, position [m, world] and the rotation vector
            of its orientation [rad, world].
        gains: ``tcp_offset`` and the limits ``max_pos_step`` [m], ``max_rot_step`` [rad] (norms).
        mode: ``POSE_DELTA`` or ``POSE_TARGET``.

    Raises:
        InvalidInputError: a command that is not 6 finite numbers, or a mode that is not a pose mode.
    """
    command = np.asarray(command, dtype=np.float64)
    mode = ActionMode(mode)
    if command.shape[-1] != 6 or not np.all(np.isfinite(command)):
        raise InvalidInputError(f"{mode.value} action must be finite with 6 values, got {command!r}")
    if mode not in POSE_MODES:
        raise InvalidInputError(f"a {mode.value} action has no pose target (pose modes: "
                                f"{[m.value for m in POSE_MODES]})")
    tcp = tcp_position(pos, quat, gains)
    if mode is ActionMode.POSE_DELTA:
        dp, dphi = command[..., :3], command[..., 3:]
    else:
        goal_quat = rotvec_to_quat(command[..., 3:])
        dp, dphi = command[..., :3] - tcp, quat_to_rotvec(quat_mul(goal_quat, quat_conj(quat)))
    pos_clipped, rot_clipped = norm(dp) > gains.max_pos_step, norm(dphi) > gains.max_rot_step
    target_pos = tcp + _clip_norm(dp, gains.max_pos_step)
    target_quat = quat_mul(rotvec_to_quat(_clip_norm(dphi, gains.max_rot_step)), quat)
    if mode is ActionMode.POSE_TARGET:  # tracked as given where no limit binds
        target_pos = np.where(pos_clipped[..., None], target_pos, command[..., :3])
        target_quat = np.where(rot_clipped[..., None], target_quat, goal_quat)
    return Target(target_pos, target_quat, pos_clipped, rot_clipped)


def pose_target(pos: np.ndarray, quat: np.ndarray, delta: np.ndarray, gains: ImpedanceGains,
                mode: ActionMode = ActionMode.POSE_DELTA):
    """Impedance target ``(target_pos (*B, 3), target_quat (*B, 4))`` of the TCP from the current tool pose and a
    pose command (:func:`command_target`, without its clip report).

    Args:
        pos: ``(*B, 3)`` current tool position [m, world].
        quat: ``(*B, 4)`` current orientation (w, x, y, z).
        delta: ``(*B, 6)`` displacement (``POSE_DELTA``): position [m] and rotation vector [rad], both world frame;
            or the absolute target (``POSE_TARGET``).
        gains: limits ``max_pos_step`` and ``max_rot_step`` clip the two parts by norm.
        mode: how ``delta`` is read.
    """
    target = command_target(pos, quat, delta, gains, mode)
    return target.pos, target.quat


def damping_gains(gains: ImpedanceGains, mass: float, inertia_diag: np.ndarray):
    """Damping ``(d_pos (3,) [N·s/m], d_rot (3,) [N·m·s/rad])``: the gains' values when given, else critical-style
    ``D = 2 ζ sqrt(K m)`` and ``2 ζ sqrt(K_r I)`` (``mass`` [kg], ``inertia_diag`` ``(3,)`` [kg·m²])."""
    if gains.damping_pos is not None:
        return np.array(gains.damping_pos, dtype=np.float64), np.array(gains.damping_rot, dtype=np.float64)
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
    """Wrench ``(*B, 6)`` the controller applies, world frame, about the tool origin [N, N·m] (module docstring).

    Args:
        pos, quat, lin_vel, ang_vel: tool state (``(*B,3)``, ``(*B,4)``, ``(*B,3)``, ``(*B,3)``; world frame, origin).
        target_pos, target_quat: the TCP's impedance target, ``(*B,3)`` [m] and ``(*B,4)``.
        gains: stiffness, ``tcp_offset`` and limits.
        d_pos, d_rot: damping from :func:`damping_gains`.
        weight: nominal tool weight [N] compensated along +z at the tool origin (0 to disable).
    """
    err_rot = quat_to_rotvec(quat_mul(target_quat, quat_conj(quat)))
    if gains.has_tcp:
        lever = tcp_lever(quat, gains)
        pos, lin_vel = pos + lever, lin_vel + cross(ang_vel, lever)
    force = gains.stiffness_pos * (target_pos - pos) - d_pos * lin_vel
    torque = gains.stiffness_rot * err_rot - d_rot * ang_vel
    force = _clip_norm(force, gains.max_force)
    torque = _clip_norm(torque, gains.max_torque)
    if gains.has_tcp:
        torque = torque + cross(lever, force)
    force = force + np.array([0.0, 0.0, weight])
    return np.concatenate([force, torque], axis=-1)
