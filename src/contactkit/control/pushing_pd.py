"""PD-only pushing baseline: end-effector velocity → pseudo-inverse IK → joint PD torques (pushing paper
eqs 14–15, Algorithm 1 lines 9–11).

``q̇_des = J† v_e,des`` (eq 14; the null-space term is not used), ``q_des = q + q̇_des Δt`` (Algorithm 1, line 10;
or a reference ``q_des`` given by the caller) and ``τ = K_p (q_des − q) + K_v (q̇_des − q̇)`` (eq 15).
``J†`` is the Moore–Penrose pseudo-inverse, computed from the SVD ``J = U Σ Vᵀ`` as ``V Σ⁺ Uᵀ``. Near a
singularity (smallest singular value ``σ_min < SINGULAR_TOL``) it is replaced by the damped least-squares
inverse ``V diag(σ/(σ² + λ²)) Uᵀ`` with ``λ² = (1 − (σ_min/SINGULAR_TOL)²) MAX_DAMPING²`` (Nakamura–Hanafusa /
Chiaverini variable damping), so the command stays finite and bounded; the answer reports the singularity.
The Jacobian, ``q`` and ``q̇`` are plain arrays (e.g. from :mod:`contactkit.pushing.arm`); no MuJoCo here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError

SINGULAR_TOL = 1e-2
"""Smallest singular value of the task Jacobian [m/rad for linear rows] below which the arm counts as singular
and the damped least-squares inverse is used."""
MAX_DAMPING = 5e-2
"""Damping ``λ`` reached at an exact singularity (same units as the singular values)."""


@dataclass(frozen=True)
class PDGains:
    """Joint PD gains of eq 15: ``kp`` ``(n,)`` [N·m/rad], ``kv`` ``(n,)`` [N·m·s/rad], positive (diagonal
    ``K_p``, ``K_v``)."""

    kp: tuple[float, ...]
    kv: tuple[float, ...]

    def __post_init__(self):
        kp, kv = np.asarray(self.kp, dtype=np.float64), np.asarray(self.kv, dtype=np.float64)
        if kp.ndim != 1 or kp.shape != kv.shape or not (np.isfinite(kp).all() and np.isfinite(kv).all()) \
                or (kp <= 0).any() or (kv <= 0).any():
            raise InvalidInputError(f"PD gains must be two equal-length vectors of finite values > 0, got "
                                    f"kp={self.kp!r}, kv={self.kv!r}")


@dataclass(frozen=True)
class PDCommand:
    """One control step (batch dims ``B`` first).

    Attributes:
        tau: ``(*B, n)`` joint torques [N·m] (after the optional limit). qd_des: ``(*B, n)`` eq 14 [rad/s].
        q_des: ``(*B, n)`` [rad]. sigma_min: ``(*B,)`` smallest singular value of ``J``.
        singular: ``(*B,)`` ``sigma_min < SINGULAR_TOL`` (damped inverse used). damping: ``(*B,)`` ``λ`` used.
        saturated: ``(*B,)`` whether a torque limit clipped the command.
    """

    tau: np.ndarray
    qd_des: np.ndarray
    q_des: np.ndarray
    sigma_min: np.ndarray
    singular: np.ndarray
    damping: np.ndarray
    saturated: np.ndarray


def planar_task_jacobian(jacp, jacr) -> np.ndarray:
    """``(*B, 3, n)`` planar task Jacobian ``(ẋ, ẏ, ω_z)`` from the ``(*B, 3, n)`` linear and angular
    Jacobians of a point (world frame, as ``mj_jac`` gives them)."""
    jacp, jacr = np.asarray(jacp, dtype=np.float64), np.asarray(jacr, dtype=np.float64)
    if jacp.shape != jacr.shape or jacp.ndim < 2 or jacp.shape[-2] != 3:
        raise InvalidInputError(f"jacp and jacr must both be (*B, 3, n), got {jacp.shape} and {jacr.shape}")
    return np.concatenate([jacp[..., :2, :], jacr[..., 2:3, :]], -2)


def damped_pinv(J):
    """Pseudo-inverse of eq 14, damped near singularities (module doc).

    Args:
        J: ``(*B, m, n)`` task Jacobian, ``m ≤ n`` for a redundant arm.

    Returns:
        ``(J† (*B, n, m), sigma_min (*B,), damping λ (*B,))``; ``J†`` is the exact Moore–Penrose inverse when
        ``sigma_min ≥ SINGULAR_TOL``.
    """
    J = np.asarray(J, dtype=np.float64)
    if J.ndim < 2 or not np.isfinite(J).all():
        raise InvalidInputError(f"Jacobian must be a finite (*B, m, n) array, got shape {J.shape}")
    U, S, Vt = np.linalg.svd(J, full_matrices=False)
    smin = S[..., -1]
    lam2 = np.where(smin < SINGULAR_TOL, (1.0 - (smin / SINGULAR_TOL) ** 2) * MAX_DAMPING**2, 0.0)
    denom = S**2 + lam2[..., None]
    inv = np.where(denom > 0, S / np.where(denom > 0, denom, 1.0), 0.0)
    pinv = np.einsum("...ji,...j,...kj->...ik", Vt, inv, U)
    return pinv, smin, np.sqrt(lam2)


def pd_torque(J, v_des, q, qd, gains: PDGains, dt: float, q_des=None, torque_limit=None) -> PDCommand:
    """Eqs 14–15: joint torques that track a desired end-effector velocity.

    Args:
        J: ``(*B, m, n)`` task Jacobian at ``q`` (e.g. :func:`planar_task_jacobian`, world frame).
        v_des: ``(*B, m)`` desired end-effector velocity ``v_e,des`` (``v_e^H + v_e^θ`` of eq 16) in the rows' units.
        q, qd: ``(*B, n)`` joint positions [rad] and velocities [rad/s].
        gains: diagonal ``K_p``, ``K_v``. dt: control period ``Δt`` [s] (Algorithm 1 line 10).
        q_des: ``(*B, n)`` reference positions [rad]; default ``q + q̇_des Δt`` (Algorithm 1 line 10).
        torque_limit: ``(n,)`` symmetric limits [N·m] or None.

    Returns:
        :class:`PDCommand` (finite for any finite input, singular or not).

    Raises:
        InvalidInputError: shapes that do not match, non-finite input, ``dt ≤ 0``.
    """
    J = np.asarray(J, dtype=np.float64)
    v_des, q, qd = (np.asarray(a, dtype=np.float64) for a in (v_des, q, qd))
    n = J.shape[-1] if J.ndim >= 2 else -1
    kp, kv = np.asarray(gains.kp, dtype=np.float64), np.asarray(gains.kv, dtype=np.float64)
    if J.ndim < 2 or v_des.shape != J.shape[:-1] or q.shape != J.shape[:-2] + (n,) or qd.shape != q.shape \
            or kp.shape != (n,):
        raise InvalidInputError(f"pd_torque: J {J.shape}, v_des {v_des.shape}, q {q.shape}, qd {qd.shape}, gains "
                                f"{kp.shape} do not match (*B, m, n), (*B, m), (*B, n), (*B, n), (n,)")
    if not (np.isfinite(v_des).all() and np.isfinite(q).all() and np.isfinite(qd).all()):
        raise InvalidInputError("pd_torque: v_des, q or qd contains NaN or Inf")
    if not (np.isfinite(dt) and dt > 0):
        raise InvalidInputError(f"pd_torque: dt must be finite and > 0 [s], got {dt!r}")
    pinv, smin, lam = damped_pinv(J)
    qd_des = np.einsum("...ij,...j->...i", pinv, v_des)
    q_ref = q + qd_des * dt if q_des is None else np.asarray(q_des, dtype=np.float64)
    if q_ref.shape != q.shape or not np.isfinite(q_ref).all():
        raise InvalidInputError(f"pd_torque: q_des must be finite with shape {q.shape}, got {q_ref.shape}")
    tau = kp * (q_ref - q) + kv * (qd_des - qd)
    saturated = np.zeros(q.shape[:-1], dtype=bool)
    if torque_limit is not None:
        lim = np.broadcast_to(np.asarray(torque_limit, dtype=np.float64), (n,))
        if not np.isfinite(lim).all() or (lim <= 0).any():
            raise InvalidInputError(f"torque_limit must be finite and > 0 [N*m], got {torque_limit!r}")
        saturated = (np.abs(tau) > lim).any(-1)
        tau = np.clip(tau, -lim, lim)
    return PDCommand(tau, qd_des, q_ref, smin, smin < SINGULAR_TOL, lam, saturated)
