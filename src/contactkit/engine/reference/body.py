"""A floating rigid body: its static description and the generalized velocity of the tight-tolerance paper's eq 1.

The engine works in the coordinates of the tight-tolerance paper (eq 1): the generalized velocity of a
floating body is ``V = [v; ω] ∈ R⁶`` where ``v`` is the velocity of the centre of mass in the world
frame [m/s] and ``ω`` the angular velocity in the *body* frame [rad/s]. The mass matrix is then the
constant ``M = diag(m·I₃, J)`` with ``J`` the inertia about the centre of mass in the body frame, and the
Coriolis matrix is ``C(ω) = diag(0, -S(Jω))``. A generalized force ``Q = [F; τ_b]`` pairs with ``V``:
``F`` is the world-frame force [N] and ``τ_b`` the torque about the centre of mass in the body frame
[N·m], so that ``Qᵀ V`` is a power [W].

:class:`~contactkit.state.BodyState` (the public state) holds the body *origin* velocity and the world
angular velocity; :func:`generalized_velocity` and :func:`state_with_velocity` convert.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.rotations import cross, quat_to_mat
from contactkit.state import BodyState

INERTIA_SYMMETRY_TOL = 1e-9
"""Largest accepted ``|J - Jᵀ|`` relative to ``|J|`` for an inertia matrix."""

INERTIA_TRIANGLE_TOL = 1e-9
"""Relative slack allowed in the triangle inequality ``I₁ + I₂ ≥ I₃`` of the principal moments."""


@dataclass(frozen=True)
class RigidBody:
    """Static description of a floating rigid body (the dynamic pose lives in a :class:`BodyState`).

    Attributes:
        mass: ``m > 0`` [kg].
        inertia_body: ``(3, 3)`` symmetric positive-definite inertia about the centre of mass, body
            frame [kg·m²]; its principal moments must satisfy the triangle inequality.
        com_body: ``(3,)`` centre of mass in the body frame [m] (the body frame origin need not be it).
        name: what error messages call the body.
        inertia_inv: ``(3, 3)`` inverse of ``inertia_body`` [1/(kg·m²)], derived, not an argument.

    Raises:
        InvalidInputError: on a non-finite, zero or negative mass, or an inertia that is not symmetric
            positive definite (or violates the triangle inequality).
    """

    mass: float
    inertia_body: np.ndarray
    com_body: np.ndarray = field(default_factory=lambda: np.zeros(3))
    name: str = "body"
    inertia_inv: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        mass = float(self.mass)
        if not np.isfinite(mass) or mass <= 0.0:
            raise InvalidInputError(f"{self.name}: mass must be finite and > 0 kg, got {self.mass!r}")
        inertia = np.array(self.inertia_body, dtype=np.float64)
        com = np.array(self.com_body, dtype=np.float64)
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise InvalidInputError(f"{self.name}: inertia_body must be a finite (3, 3) array, got {inertia.shape}")
        if com.shape != (3,) or not np.all(np.isfinite(com)):
            raise InvalidInputError(f"{self.name}: com_body must be a finite (3,) array, got {com.shape}")
        scale = max(float(np.abs(inertia).max()), np.finfo(float).tiny)
        if np.abs(inertia - inertia.T).max() > INERTIA_SYMMETRY_TOL * scale:
            raise InvalidInputError(f"{self.name}: inertia_body is not symmetric")
        moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
        if moments[0] <= 0.0:
            raise InvalidInputError(
                f"{self.name}: inertia_body is not positive definite (principal moments {moments.tolist()})"
            )
        if moments[0] + moments[1] < moments[2] * (1.0 - INERTIA_TRIANGLE_TOL):
            raise InvalidInputError(
                f"{self.name}: principal moments {moments.tolist()} violate the triangle inequality"
            )
        inertia = 0.5 * (inertia + inertia.T)
        inertia.flags.writeable = False
        com.flags.writeable = False
        inv = np.linalg.inv(inertia)
        inv.flags.writeable = False
        object.__setattr__(self, "mass", mass)
        object.__setattr__(self, "inertia_body", inertia)
        object.__setattr__(self, "com_body", com)
        object.__setattr__(self, "inertia_inv", inv)


def mass_matrix(body: RigidBody) -> np.ndarray:
    """``M = diag(m·I₃, J)`` ``(6, 6)`` [kg, kg·m²] of tight-tolerance paper eq 1, ``V = [v_com_world; ω_body]``."""
    m = np.zeros((6, 6))
    m[:3, :3] = body.mass * np.eye(3)
    m[3:, 3:] = body.inertia_body
    return m


def inverse_mass_matrix(body: RigidBody) -> np.ndarray:
    """``M⁻¹ = diag(I₃/m, J⁻¹)`` ``(6, 6)`` [1/kg, 1/(kg·m²)] of the tight-tolerance paper's eq 1."""
    m_inv = np.zeros((6, 6))
    m_inv[:3, :3] = np.eye(3) / body.mass
    m_inv[3:, 3:] = body.inertia_inv
    return m_inv


def single_state(state: BodyState, name: str = "state") -> BodyState:
    """Return ``state`` after checking it is one body (no batch dimensions), finite, unit quaternion.

    Raises:
        InvalidInputError: naming the offending field.
    """
    state.validated(name)
    if state.batch_shape != ():
        raise InvalidInputError(f"{name}: the engine steps one body, got batch shape {state.batch_shape}")
    return state


def rotation(state: BodyState) -> np.ndarray:
    """Body-to-world rotation matrix ``R`` ``(3, 3)`` of a single state (unit quaternion ``(w, x, y, z)``)."""
    return quat_to_mat(state.quat)


def com_position(body: RigidBody, state: BodyState) -> np.ndarray:
    """World position ``(3,)`` [m] of the centre of mass: ``pos + R·com_body``."""
    return np.asarray(state.pos, dtype=np.float64) + rotation(state) @ body.com_body


def generalized_velocity(body: RigidBody, state: BodyState) -> np.ndarray:
    """``V = [v_com (world, m/s); ω (body, rad/s)]`` ``(6,)`` of a single :class:`BodyState`.

    ``v_com = lin_vel + ω_world × (R·com_body)`` and ``ω_body = Rᵀ ω_world`` (tight-tolerance paper eq 1 coordinates).
    """
    rot = rotation(state)
    omega_w = np.asarray(state.ang_vel, dtype=np.float64)
    v_com = np.asarray(state.lin_vel, dtype=np.float64) + cross(omega_w, rot @ body.com_body)
    return np.concatenate([v_com, rot.T @ omega_w])


def state_with_velocity(body: RigidBody, state: BodyState, velocity: np.ndarray) -> BodyState:
    """``state`` (pose kept) with velocities set from a generalized velocity ``V`` ``(6,)``.

    Inverse of :func:`generalized_velocity`: ``ang_vel = R ω_body``, ``lin_vel = v_com - ang_vel × (R·com)``.
    """
    velocity = np.asarray(velocity, dtype=np.float64)
    if velocity.shape != (6,) or not np.all(np.isfinite(velocity)):
        raise InvalidInputError(f"generalized velocity must be a finite (6,) array, got {velocity.shape}")
    rot = rotation(state)
    omega_w = rot @ velocity[3:]
    lin = velocity[:3] - cross(omega_w, rot @ body.com_body)
    return state.replace(lin_vel=lin, ang_vel=omega_w)


def kinetic_energy(body: RigidBody, velocity: np.ndarray) -> float:
    """Kinetic energy ``E_k = ½ Vᵀ M V`` [J] of a generalized velocity ``V`` ``(6,)`` (tight-tolerance paper §III-C)."""
    v = np.asarray(velocity, dtype=np.float64)
    return 0.5 * (body.mass * float(v[:3] @ v[:3]) + float(v[3:] @ body.inertia_body @ v[3:]))


def generalized_force(body: RigidBody, state: BodyState, wrench: np.ndarray) -> np.ndarray:
    """``Q = [F; Rᵀ τ]`` ``(6,)`` of a world wrench ``(fx, fy, fz, tx, ty, tz)`` [N, N·m] about the COM."""
    wrench = np.asarray(wrench, dtype=np.float64)
    if wrench.shape != (6,) or not np.all(np.isfinite(wrench)):
        raise InvalidInputError(f"wrench must be a finite (6,) array, got shape {wrench.shape}")
    return np.concatenate([wrench[:3], rotation(state).T @ wrench[3:]])


def wrench_from_generalized(body: RigidBody, state: BodyState, force: np.ndarray, about: np.ndarray) -> np.ndarray:
    """World wrench ``(6,)`` [N, N·m] about the world point ``about`` ``(3,)`` of a generalized force.

    Inverse of :func:`generalized_force` followed by a shift of the torque from the COM to ``about``:
    ``τ_about = R τ_b + (com - about) × F``. Applied to impulses [N·s] it returns an impulsive wrench.
    """
    force = np.asarray(force, dtype=np.float64)
    f = force[:3]
    tau_com = rotation(state) @ force[3:6]
    lever = com_position(body, state) - np.asarray(about, dtype=np.float64)
    return np.concatenate([f, tau_com + cross(lever, f)])
