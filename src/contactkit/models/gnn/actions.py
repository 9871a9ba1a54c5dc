"""Action features of Act-FIGNet / FIGNet+ from pose-delta commands: the impedance controller's wrench.

The data are collected under Cartesian impedance control: the policy sends a pose-target displacement
(``ActionMode.POSE_DELTA``), and the controller turns it into a wrench from the tool's state
(:mod:`contactkit.control.impedance`). A model conditioned on the wrench the controller *recorded* can
only replay it open loop, so its rollouts never correct their errors. Conditioned on the *command*
instead, the model computes the wrench the controller applies at the start of the control period from
its own current state,

    target = (p_t + Δp, exp(Δφ) ⊗ q_t),   f = K_p (p* − p_t) − D_p v_t + f_c,   τ = K_r φ(q* q_t⁻¹) − D_r ω_t,

(world frame, torque about the tool origin, norm-clipped as in ``impedance_wrench``; ``f_c = −m g`` the
gravity compensation of the scene's nominal tool weight when the controller has it), and feeds that wrench
to the graph (eqs. 12–13 for Act-FIGNet, the node features for FIGNet+). In training the state is the
recorded one; in a rollout it is the predicted one, so a rollout is closed loop like a simulator running
the same controller. The velocities ``v_t``, ``ω_t`` are the finite differences of the last two poses of
the history over the control period — what a rollout of the model produces itself — in training and in
rollouts alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.control.impedance import damping_gains, impedance_wrench, pose_target
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.rotations import quat_conj, quat_mul, quat_to_rotvec
from contactkit.scene import ImpedanceGains, Scene

__all__ = ["ActionMode", "ImpedanceLaw", "action_wrench", "command_wrench", "finite_difference_twist", "impedance_law"]


@dataclass(frozen=True)
class ImpedanceLaw:
    """The scene's Cartesian impedance controller, as the learned models evaluate it.

    Attributes:
        gains: stiffness, damping ratio and limits (the scene's :class:`~contactkit.scene.ImpedanceGains`).
        d_pos: ``(3,)`` translational damping [N·s/m]; d_rot: ``(3,)`` rotational damping [N·m·s/rad]
            (:func:`~contactkit.control.impedance.damping_gains` of the nominal mass and principal inertia).
        compensation: ``(3,)`` feed-forward force [N], world frame: ``−m g`` with the nominal tool mass when
            the controller compensates gravity, else zero (MuJoCo's feed-forward, ``xfrc_applied``).
    """

    gains: ImpedanceGains
    d_pos: np.ndarray
    d_rot: np.ndarray
    compensation: np.ndarray


def impedance_law(scene: Scene, gravity) -> ImpedanceLaw:
    """The impedance law of ``scene``'s controller under ``gravity`` ``(3,)`` [m/s², world frame]."""
    tool, gains = scene.tool, scene.controller
    d_pos, d_rot = damping_gains(gains, tool.mass, np.linalg.eigvalsh(tool.inertia))
    g = np.asarray(gravity, dtype=np.float64)
    comp = -tool.mass * g if gains.gravity_compensation else np.zeros(3)
    return ImpedanceLaw(gains, np.asarray(d_pos, dtype=np.float64), np.asarray(d_rot, dtype=np.float64), comp)


def finite_difference_twist(history: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Linear [m/s] and angular [rad/s] velocity ``(..., 3)`` each, world frame, over the last step of a history.

    ``history`` ``(..., h, 13)`` flat states (h >= 2, oldest first): ``v = (p_t − p_{t−1}) / dt`` and
    ``ω = φ(q_t q_{t−1}⁻¹) / dt`` (rotation vector of the world-frame rotation between the two poses).
    """
    p0, p1 = history[..., -2, 0:3], history[..., -1, 0:3]
    q0, q1 = history[..., -2, 3:7], history[..., -1, 3:7]
    rel = quat_mul(q1, quat_conj(q0))
    rel = rel * np.where(rel[..., :1] < 0.0, -1.0, 1.0)  # shortest rotation
    return (p1 - p0) / dt, quat_to_rotvec(rel) / dt


def command_wrench(law: ImpedanceLaw, history: np.ndarray, command: np.ndarray, dt: float) -> np.ndarray:
    """Wrench ``(..., 6)`` the impedance controller applies at the start of the control period [N, N·m].

    Args:
        law: the scene's controller (:func:`impedance_law`).
        history: ``(..., h, 13)`` tool states, world frame, oldest first (h >= 2); the pose is the last
            one's, the velocities the finite differences of the last two (:func:`finite_difference_twist`).
        command: ``(..., 6)`` pose-target displacement: position [m] and rotation vector [rad], world frame.
        dt: control period [s].

    Returns:
        ``(..., 6)``: force [N] (compensation included) and torque [N·m] about the tool origin, world frame —
        :func:`~contactkit.control.impedance.impedance_wrench` of the target
        :func:`~contactkit.control.impedance.pose_target` at that state.

    Raises:
        InvalidInputError: shapes that do not match, a history shorter than 2, NaN.
    """
    history = np.asarray(history, dtype=np.float64)
    command = np.asarray(command, dtype=np.float64)
    if history.ndim < 2 or history.shape[-1] != 13 or history.shape[-2] < 2:
        raise InvalidInputError(f"history must have shape (..., h >= 2, 13), got {history.shape}")
    if command.shape != (*history.shape[:-2], 6):
        raise InvalidInputError(f"pose-delta command must have shape {(*history.shape[:-2], 6)}, got {command.shape}")
    pos = history[..., -1, 0:3]
    quat = history[..., -1, 3:7] / np.linalg.norm(history[..., -1, 3:7], axis=-1, keepdims=True)
    lin, ang = finite_difference_twist(history, dt)
    t_pos, t_quat = pose_target(pos, quat, command, law.gains)
    wrench = impedance_wrench(pos, quat, lin, ang, t_pos, t_quat, law.gains, law.d_pos, law.d_rot, 0.0)
    wrench[..., :3] += law.compensation
    return wrench


def action_wrench(mode: ActionMode, law: ImpedanceLaw, history: np.ndarray, action: np.ndarray,
                  dt: float) -> np.ndarray:
    """The wrench ``(..., 6)`` a model feeds its graph: ``action`` itself (``WRENCH``: the applied wrench, world
    frame, about the tool origin) or :func:`command_wrench` of a pose-delta ``action`` (``POSE_DELTA``)."""
    mode = ActionMode(mode)
    if mode is ActionMode.WRENCH:
        return np.asarray(action, dtype=np.float64)
    return command_wrench(law, history, action, dt)
