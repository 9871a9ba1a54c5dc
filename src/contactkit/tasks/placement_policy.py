"""The placement policy of the placement paper (eq 3, §VI-B/C): interpolate the impedance reference
toward the closest goal of ``G(θ̂)`` — align, then press — and the trigger heuristic's straight descent.

Tasks, goals and geometry are in :mod:`contactkit.tasks.placement`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.rotations import quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat
from contactkit.tasks.placement import PlacementTask, goal_pose


@dataclass(frozen=True)
class PolicyConfig:
    """The interpolating policy (eq 3): align, then press.

    Attributes:
        pos_step: largest move of the reference position per control step [m].
        rot_step: largest turn of the reference orientation per control step [rad].
        press: depth of the reference below the goal [m] (a contact force ``K·press`` at the goal).
        align_tol: the reference is aligned when within this horizontal distance of the goal [m] ...
        align_rot_tol: ... and within this angle of the goal orientation [rad].
        unload: while not aligned a reference below the tool is raised this far above the measured tool height [m],
            so that the object is not pressed (friction would stall the correction) and does not descend.
    """

    pos_step: float = 1e-3
    rot_step: float = 0.01
    press: float = 5e-3
    align_tol: float = 5e-4
    align_rot_tol: float = 5e-3
    unload: float = 5e-4


def _clip(v: np.ndarray, limit: float) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v if n <= limit else v * (limit / n)


def closest_goal(task: PlacementTask, theta, tool_pos, tool_quat) -> tuple[np.ndarray, np.ndarray]:
    """The goal ``(pos (3,) [m], quat (4,))`` of ``G(θ)`` closest to the measured tool pose (§VI-B).

    For ``shape``, whose goal set leaves the position on the table free, the object's reference point (the bottom
    face's centre) keeps its measured horizontal position ``tool_pos + R(tool_quat) ref(θ)``; the other goal sets
    hold a single pose (:func:`goal_pose`).
    """
    pos, quat = goal_pose(task, theta)
    if task.angle_error:
        ref = task.ref_base + np.asarray(theta, dtype=np.float64) @ task.ref_basis
        point = np.asarray(tool_pos, dtype=np.float64) + quat_to_mat(np.asarray(tool_quat, dtype=np.float64)) @ ref
        pos[:2] = point[:2] - (quat_to_mat(quat) @ ref)[:2]
    return pos, quat


def policy(task: PlacementTask, ref_pos, ref_quat, tool_pos, tool_quat, theta_hat,
           config: PolicyConfig = PolicyConfig()):
    """``u_t = π(x_t, θ̂)`` (eq 3): the reference pose interpolated toward the closest goal in ``G(θ̂)``
    (:func:`closest_goal` of the measured tool pose ``tool_pos (3,)`` [m], ``tool_quat (4,)``).

    The reference moves horizontally and turns toward the goal by at most ``pos_step`` and ``rot_step`` per step.
    It descends toward the goal pressed ``press`` down once aligned: the measured tool position
    horizontally within ``align_tol`` of the goal's (so that friction holding the tool short of its reference counts
    as misaligned) and the reference orientation within ``align_rot_tol`` of the goal's (the measured one hangs off
    it under the weight's torque). While not aligned, a reference below the tool is raised to ``unload`` above the
    measured height, and a reference above it is held.
    Returns the new reference ``(pos (3,) [m], quat (4,))``.
    """
    goal_pos, goal_quat = closest_goal(task, theta_hat, tool_pos, tool_quat)
    ref_pos, ref_quat = np.asarray(ref_pos, dtype=np.float64), np.asarray(ref_quat, dtype=np.float64)
    turn = quat_to_rotvec(quat_mul(goal_quat, ref_quat * np.array([1.0, -1.0, -1.0, -1.0])))
    aligned = (np.linalg.norm(goal_pos[:2] - np.asarray(tool_pos)[:2]) <= config.align_tol
               and np.linalg.norm(turn) <= config.align_rot_tol)
    if aligned:
        z = ref_pos[2] + float(np.clip(goal_pos[2] - config.press - ref_pos[2], -config.pos_step, config.pos_step))
    elif ref_pos[2] < tool_pos[2]:  # pressing (or leading the tool down): hold just above the tool instead
        z = float(tool_pos[2]) + config.unload
    else:
        z = ref_pos[2]
    pos = np.array([*(ref_pos[:2] + _clip(goal_pos[:2] - ref_pos[:2], config.pos_step)), z])
    return pos, quat_mul(rotvec_to_quat(_clip(turn, config.rot_step)), ref_quat)


def descend(ref_pos, ref_quat, config: PolicyConfig = PolicyConfig()):
    """The trigger heuristic's reference (§VI-C): straight down by ``pos_step`` per step, orientation kept."""
    return np.asarray(ref_pos, dtype=np.float64) - np.array([0.0, 0.0, config.pos_step]), np.asarray(ref_quat)
