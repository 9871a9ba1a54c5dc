"""What one closed-loop pushing episode recorded, and its tracking errors (pushing paper Tables III–IV)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EpisodeLog:
    """One closed-loop episode (``N ≤ T`` steps done; arrays per step).

    Attributes:
        times ``(N,)`` [s]; obj_pose, desired_pose ``(N, 3)`` after/for each step; force ``(N, 2, 2)`` actual
        ``(λ_n, λ_t)`` per tip [N]; force_des ``(N, 2, 2)``; torque_z, torque_z_des ``(N, 2)`` [N m];
        ee_twist ``(N, 6)`` actual EE twist [m/s, rad/s]; action ``(N, 3)`` residual actions (0 when inactive);
        active ``(N,)`` bool; joint_torque ``(N, 7)`` [N m]; failure: None or why the episode stopped early.
    """

    times: np.ndarray
    obj_pose: np.ndarray
    desired_pose: np.ndarray
    force: np.ndarray
    force_des: np.ndarray
    torque_z: np.ndarray
    torque_z_des: np.ndarray
    ee_twist: np.ndarray
    action: np.ndarray
    active: np.ndarray
    joint_torque: np.ndarray
    failure: str | None


def make_log(plan, rows: list, failure: str | None) -> EpisodeLog:
    """The :class:`EpisodeLog` of ``rows`` = ``(PushStep, ee_twist (6,), action (3,), active)`` per step done of
    ``plan`` (a :class:`~contactkit.pushing.controller.PushPlan`), stopped early with ``failure`` if not None."""
    n = len(rows)
    des = np.stack([plan.f_n[:n], plan.f_t[:n]], -1)
    return EpisodeLog(
        plan.times[:n] + (plan.times[1] - plan.times[0] if len(plan.times) > 1 else 0.0),
        np.array([r[0].state.obj_pose for r in rows]).reshape(n, 3),
        np.vstack([plan.poses[1:], plan.goal[None]])[:n],
        np.array([r[0].contact_force for r in rows]).reshape(n, 2, 2), des,
        np.array([r[0].contact_torque for r in rows]).reshape(n, 2), plan.tau_z[:n],
        np.array([r[1] for r in rows]).reshape(n, 6), np.array([r[2] for r in rows]).reshape(n, 3),
        np.array([r[3] for r in rows], dtype=bool), np.array([r[0].torque for r in rows]).reshape(n, 7), failure)


def episode_errors(log: EpisodeLog, start, goal) -> dict[str, float]:
    """Tracking errors of one episode (Tables III–IV definitions, stated):

    * ``translation_pct``: mean over steps of ``|p − p_des|`` / ``|p_goal − p_start|`` × 100;
    * ``angle_pct``: mean of ``|θ − θ_des|`` / ``|Δθ|`` × 100 (NaN when ``Δθ = 0``);
    * ``force_N``: mean over steps of ``|Σ_i (F_i,des − λ_i)|`` (planar total, face frame);
    * ``torque_Nm``: mean of ``|Σ_i (τ_i,des − τ_i)|``.
    """
    start, goal = np.asarray(start, dtype=np.float64), np.asarray(goal, dtype=np.float64)
    if len(log.times) == 0:
        return dict(translation_pct=float("nan"), angle_pct=float("nan"), force_N=float("nan"),
                    torque_Nm=float("nan"))
    disp = float(np.hypot(*(goal[:2] - start[:2])))
    rot = abs(float(goal[2] - start[2]))
    pos_err = np.linalg.norm(log.obj_pose[:, :2] - log.desired_pose[:, :2], axis=1)
    ang_err = np.abs((log.obj_pose[:, 2] - log.desired_pose[:, 2] + np.pi) % (2 * np.pi) - np.pi)
    return dict(translation_pct=float(100 * pos_err.mean() / disp) if disp > 0 else float("nan"),
                angle_pct=float(100 * ang_err.mean() / rot) if rot > 0 else float("nan"),
                force_N=float(np.linalg.norm((log.force_des - log.force).sum(1), axis=1).mean()),
                torque_Nm=float(np.abs((log.torque_z_des - log.torque_z).sum(1)).mean()))
