"""Quaternion and rotation helpers in torch (batch dimensions first), differentiable everywhere: the torch
backend of :mod:`contactkit.rotations`, used by the differentiable contact step :mod:`contactkit.engine.diff`.

Conventions of :mod:`contactkit.rotations.numpy` (the reference): quaternions ``(w, x, y, z)`` of unit norm,
rotation vectors in radians, ``R`` maps body coordinates to world coordinates. The small-angle branches switch
at the same :data:`~contactkit.rotations.numpy.SMALL_ANGLE` and use Taylor series whose gradients stay finite
at zero rotation (``torch.where`` evaluates both branches, so the closed form's ``sqrt`` and division are fed a
safe ``1`` there: no ``0/0`` in the backward pass). float64 and float32 alike: the threshold's square (1e-24)
is a normal float32, and near it the closed forms are exact to round-off in either precision.
"""

from __future__ import annotations

import torch

from contactkit.rotations.numpy import SMALL_ANGLE


def skew(a: torch.Tensor) -> torch.Tensor:
    """Cross-product matrices ``S(a)`` ``(*B, 3, 3)`` with ``S(a) x = a × x``, for ``a (*B, 3)``."""
    zero = torch.zeros_like(a[..., 0])
    rows = [
        torch.stack([zero, -a[..., 2], a[..., 1]], dim=-1),
        torch.stack([a[..., 2], zero, -a[..., 0]], dim=-1),
        torch.stack([-a[..., 1], a[..., 0], zero], dim=-1),
    ]
    return torch.stack(rows, dim=-2)


def quat_to_mat(q: torch.Tensor) -> torch.Tensor:
    """Rotation matrices ``(*B, 3, 3)`` of quaternions ``(*B, 4)`` (normalised first)."""
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    w, x, y, z = q.unbind(-1)
    rows = [
        torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], dim=-1),
        torch.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], dim=-1),
        torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], dim=-1),
    ]
    return torch.stack(rows, dim=-2)


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product ``a ⊗ b`` ``(*B, 4)``."""
    w1, x1, y1, z1 = a.unbind(-1)
    w2, x2, y2, z2 = b.unbind(-1)
    return torch.stack(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ],
        dim=-1,
    )


def quat_conj(q: torch.Tensor) -> torch.Tensor:
    """Conjugate ``(w, -x, -y, -z)`` (the inverse of a unit quaternion)."""
    return q * q.new_tensor([1.0, -1.0, -1.0, -1.0])


def rotvec_to_quat(phi: torch.Tensor) -> torch.Tensor:
    """Unit quaternions ``(*B, 4)`` of rotation vectors ``(*B, 3)`` [rad]; smooth at ``φ = 0``."""
    angle2 = (phi * phi).sum(-1, keepdim=True)
    small = angle2 < SMALL_ANGLE**2
    angle = torch.sqrt(torch.where(small, torch.ones_like(angle2), angle2))
    sinc = torch.where(small, 0.5 - angle2 / 48.0, torch.sin(0.5 * angle) / angle)
    cos = torch.where(small, 1.0 - angle2 / 8.0, torch.cos(0.5 * angle))
    return torch.cat([cos, phi * sinc], dim=-1)


def quat_to_rotvec(q: torch.Tensor) -> torch.Tensor:
    """Rotation vectors ``(*B, 3)`` [rad] of unit quaternions ``(*B, 4)``, angle in ``[0, π]`` (w ≥ 0 branch)."""
    q = torch.where(q[..., :1] < 0.0, -q, q)
    v = q[..., 1:]
    s2 = (v * v).sum(-1, keepdim=True)
    small = s2 < SMALL_ANGLE**2
    s = torch.sqrt(torch.where(small, torch.ones_like(s2), s2))
    w = q[..., :1]
    scale = torch.where(small, 2.0 / w.clamp_min(SMALL_ANGLE) * (1.0 - s2 / (3.0 * w * w)), 2.0 * torch.atan2(s, w) / s)
    return v * scale


def rotate_by(phi: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``exp(φ) ⊗ q``: the orientation ``q (*B, 4)`` turned by a world-frame rotation vector ``φ (*B, 3)``."""
    return quat_mul(rotvec_to_quat(phi), q)


def quat_rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Vectors ``v (*B, 3)`` rotated by quaternions ``q (*B, 4)`` (body → world), ``(*B, 3)``."""
    return (quat_to_mat(q) @ v[..., None])[..., 0]
