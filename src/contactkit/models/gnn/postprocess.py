"""Post-processing Φ_post of Act-FIGNet (paper §III-C.3): vertices → pose → velocities, in torch.

1. Euler integration of the predicted vertex accelerations: ``p̂_{t+1} = â_t + 2 p_t − p_{t−1}``.
2. Rigid alignment ``x̂_{t+1} = T^{-1}(p̂_{t+1}, p_ref)``: the rotation and translation that best map the
   reference (body-frame) vertices onto the predicted ones (Kabsch/Umeyama SVD via ``roma``; the paper
   uses PyTorch3D's equivalent).
3. Velocities by finite difference ``(x̂_{t+1} − x_t) / dt``; the angular velocity is the rotation vector
   of ``q_{t+1} q_t^{-1}`` over ``dt`` (world frame).

Quaternions are ``(w, x, y, z)`` as everywhere in contactkit (roma uses ``(x, y, z, w)`` internally).
"""

from __future__ import annotations

import roma
import torch


def integrate_positions(accel: torch.Tensor, p_t: torch.Tensor, p_prev: torch.Tensor) -> torch.Tensor:
    """Next vertex positions (*B, V, 3) [m] from per-step accelerations ``accel`` [m] and ``p_t``, ``p_{t-1}``."""
    return accel + 2.0 * p_t - p_prev


def _to_xyzw(q: torch.Tensor) -> torch.Tensor:
    return torch.cat([q[..., 1:], q[..., :1]], dim=-1)


def _to_wxyz(q: torch.Tensor) -> torch.Tensor:
    return torch.cat([q[..., 3:], q[..., :3]], dim=-1)


def align_pose(reference: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rigid pose (``pos`` (*B, 3) [m], ``quat`` (*B, 4) w,x,y,z, w >= 0) minimising
    ``Σ |R p_ref + pos − p|²`` over the vertices; ``reference`` (*B, V, 3) body frame, ``positions``
    (*B, V, 3) world frame."""
    rot, pos = roma.rigid_points_registration(reference, positions)
    quat = _to_wxyz(roma.rotmat_to_unitquat(rot))
    quat = torch.where(quat[..., :1] < 0, -quat, quat)
    return pos, quat


def finite_difference_velocity(
    pos0: torch.Tensor, quat0: torch.Tensor, pos1: torch.Tensor, quat1: torch.Tensor, dt: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Linear (*B, 3) [m/s] and angular (*B, 3) [rad/s] world-frame velocity taking pose 0 to pose 1 in ``dt`` [s]."""
    dq = roma.quat_product(_to_xyzw(quat1), roma.quat_conjugation(_to_xyzw(quat0)))
    dq = torch.where(dq[..., 3:] < 0, -dq, dq)  # shortest rotation
    return (pos1 - pos0) / dt, roma.unitquat_to_rotvec(dq) / dt


def same_hemisphere(quat: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """``quat`` (*B, 4) or ``-quat``, whichever is closer to ``reference`` (keeps a trajectory continuous)."""
    return torch.where((quat * reference).sum(-1, keepdim=True) < 0, -quat, quat)
