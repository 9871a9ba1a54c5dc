"""Inputs and targets of the learned residual over a physics backbone, in the tool's own frame (torch).

The residual model (:mod:`contactkit.models.residual`) predicts the difference between what really happens in one
control step and what a physics backbone (nominal MuJoCo or the contactkit engine) predicts from the same state and
command. Everything it reads and writes is expressed in the frame of the tool at the start of the step (rotation
``R_t = R(q_t)``, origin ``p_t``), and the pose against the static geometry is taken relative to the scene's target
frame (the slot), so that one network serves every slot pose and, through the backbone's own prediction, every tool
shape of the task. Flat state rows are ``[pos(3), quat(4), lin_vel(3), ang_vel(3)]`` (world frame, SI units,
quaternions ``(w, x, y, z)``).

Input features ``(B, FEATURE_DIM)`` for a history of ``H = HISTORY`` states ``s_{t-H+1} .. s_t``:

* past poses relative to the current one: ``R_tᵀ (p_{t-k} − p_t)`` [m] and ``log(q_t⁻¹ ⊗ q_{t-k})`` [rad], k = 1..H-1;
* every history state's velocities in the tool frame: ``R_tᵀ v``, ``R_tᵀ ω`` [m/s, rad/s];
* the pose against the static geometry: ``R_refᵀ (p_t − p_ref)`` [m] and the first two columns of
  ``R_refᵀ R_t``;
* the command and the previous command in the tool frame (a pose-target displacement [m, rad], or a wrench [N, N·m]);
  the previous one makes a command latency observable;
* the backbone's prediction: ``R_tᵀ (p̂ − p_t)``, ``log(q_t⁻¹ ⊗ q̂)``, ``R_tᵀ v̂``, ``R_tᵀ ω̂`` and its F/T reading ŵ
  (sensor frame [N, N·m]).

Targets ``(B, TARGET_DIM)``: ``R_tᵀ (p − p̂)``, ``R_tᵀ log(q ⊗ q̂⁻¹)`` (a world-frame rotation vector expressed in the
tool frame), ``R_tᵀ (v − v̂)``, ``R_tᵀ (ω − ω̂)``, and the tared reading minus the backbone's ``w − ŵ``.
:func:`apply_correction` inverts them. This is a learned correction of a simulator (residual physics: Zeng et al.
2020; Ajay et al. 2018), with the Act-FIGNet paper's inputs (pose history and commands, §III-A) and outputs (next
state and F/T reading).
"""

from __future__ import annotations

import torch

from contactkit.rotations.torch import quat_conj, quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat

__all__ = ["FEATURE_DIM", "HISTORY", "TARGET_DIM", "TARGET_GROUPS", "apply_correction", "features", "targets"]

HISTORY = 3
"""States read per step (the Act-FIGNet paper's history, §III-A)."""
TARGET_DIM = 18
"""Correction of position (3), rotation (3), linear (3) and angular velocity (3), F/T reading (6)."""
TARGET_GROUPS = {"pos": slice(0, 3), "rot": slice(3, 6), "lin_vel": slice(6, 9), "ang_vel": slice(9, 12),
                 "force": slice(12, 15), "torque": slice(15, 18)}
"""Where each corrected quantity sits in a target row."""
FEATURE_DIM = 6 * (HISTORY - 1) + 6 * HISTORY + 3 + 6 + 12 + 12 + 6
"""Length of a feature row (see the module docstring)."""


def _split(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return x[..., 0:3], x[..., 3:7], x[..., 7:10], x[..., 10:13]


def _to_tool(rot_t: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``R_tᵀ v`` for ``rot_t (B, 3, 3)`` and ``v (B, 3)``."""
    return (rot_t.transpose(-1, -2) @ v[..., None])[..., 0]


def features(history: torch.Tensor, command: torch.Tensor, prev_command: torch.Tensor, backbone: torch.Tensor,
             backbone_wrench: torch.Tensor, ref_pos: torch.Tensor, ref_quat: torch.Tensor) -> torch.Tensor:
    """Input features of one step (see the module docstring), differentiable in ``history``.

    Args:
        history: ``(B, H, 13)`` flat states ``s_{t-H+1} .. s_t``, oldest first, world frame.
        command, prev_command: ``(B, 6)`` the step's command and the previous step's, world frame.
        backbone: ``(B, 13)`` the backbone's next state from ``s_t`` under ``command``.
        backbone_wrench: ``(B, 6)`` its F/T reading during the step, sensor frame [N, N·m].
        ref_pos, ref_quat: ``(B, 3)``, ``(B, 4)`` the static geometry's reference frame (the scene's target).

    Returns:
        ``(B, FEATURE_DIM)`` features, float dtype of ``history``.
    """
    pos, quat, lin, ang = _split(history)
    n, h = history.shape[0], history.shape[1]
    p_t, q_t = pos[:, -1], quat[:, -1]
    rot_t = quat_to_mat(q_t)
    b_pos, b_quat, b_lin, b_ang = _split(backbone)
    # every vector the tool frame reads, rotated by one batched product (row vectors: v R = (R^T v)^T)
    vecs = torch.cat([pos[:, :-1] - p_t[:, None], lin, ang, command.reshape(n, 2, 3), prev_command.reshape(n, 2, 3),
                      (b_pos - p_t)[:, None], b_lin[:, None], b_ang[:, None]], dim=1) @ rot_t
    rots = quat_to_rotvec(quat_mul(quat_conj(q_t)[:, None], torch.cat([quat[:, :-1], b_quat[:, None]], dim=1)))
    rot_ref = quat_to_mat(ref_quat)
    rel_pos = _to_tool(rot_ref, p_t - ref_pos)
    rel_rot = (rot_ref.transpose(-1, -2) @ rot_t)[..., :, :2].reshape(-1, 6)
    k = h - 1  # past poses
    v, c = k + 2 * h, k + 2 * h + 4  # where the velocities end, where the commands end
    pred = [vecs[:, c], rots[:, k], vecs[:, c + 1], vecs[:, c + 2]]
    return torch.cat([vecs[:, :k].reshape(n, -1), rots[:, :k].reshape(n, -1), vecs[:, k:v].reshape(n, -1), rel_pos,
                      rel_rot, vecs[:, v:c].reshape(n, -1), *pred, backbone_wrench], dim=-1)


def targets(current: torch.Tensor, backbone: torch.Tensor, backbone_wrench: torch.Tensor, truth: torch.Tensor,
            reading: torch.Tensor) -> torch.Tensor:
    """What the residual should add: ``(B, TARGET_DIM)`` in the frame of ``current`` (see the module docstring).

    Args:
        current: ``(B, 13)`` the state ``s_t`` the step starts from; backbone: ``(B, 13)`` the backbone's next state;
        backbone_wrench: ``(B, 6)``; truth: ``(B, 13)`` the recorded next state; reading: ``(B, 6)`` the recorded
        (tared) F/T reading, sensor frame.
    """
    rot_t = quat_to_mat(current[:, 3:7])
    p, q, v, w = _split(truth)
    b_p, b_q, b_v, b_w = _split(backbone)
    d_rot = quat_to_rotvec(quat_mul(q, quat_conj(b_q)))
    return torch.cat([_to_tool(rot_t, p - b_p), _to_tool(rot_t, d_rot), _to_tool(rot_t, v - b_v),
                      _to_tool(rot_t, w - b_w), reading - backbone_wrench], dim=-1)


def apply_correction(current: torch.Tensor, backbone: torch.Tensor, backbone_wrench: torch.Tensor,
                     correction: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The corrected next state ``(B, 13)`` and reading ``(B, 6)``: the inverse of :func:`targets`.

    The orientation is renormalised; a zero ``correction`` returns the backbone's prediction exactly.
    """
    n = correction.shape[0]
    world = (correction[:, :12].reshape(n, 4, 3) @ quat_to_mat(current[:, 3:7]).transpose(-1, -2)).unbind(1)
    b_p, b_q, b_v, b_w = _split(backbone)
    q = quat_mul(rotvec_to_quat(world[1]), b_q)
    q = q / q.norm(dim=-1, keepdim=True)
    state = torch.cat([b_p + world[0], q, b_v + world[2], b_w + world[3]], dim=-1)
    return state, backbone_wrench + correction[:, 12:18]
