"""The C-space virtual contact constraint of the tight-tolerance paper, §IV-B/C.

The collision volume in configuration space is the set ``h(q) < 0`` of a surface function ``h`` of the
configuration ``q = [x_c; φ] ∈ R⁶`` (centre-of-mass position [m], XYZ Euler angles [rad] with
``R = Rx(φ₁) Ry(φ₂) Rz(φ₃)``); ``h > 0`` is collision free. Here ``h`` is an analytic callable with its
gradient (a learned ``h`` plugs in the same way).

C-space normal (§IV-B): the velocity ``V_C`` that reaches the surface with least kinetic energy,
``min ½ V_Cᵀ M V_C`` s.t. ``h(q + G(q) V_C) = 0`` (``G`` maps ``V = [v_com; ω_body]`` to ``q̇``, first-order
kinematics), is found by SQP: linearise ``h`` at the current iterate and take the closed-form minimiser
``V_C = ν M⁻¹ Gᵀ∇h``. The normal ``N_C`` satisfies ``N_Cᵀ M⁻¹ null(V_C) = 0``, i.e. ``N_C ∝ M V_C ∝ Gᵀ∇h``
at the surface point; it is oriented towards increasing ``h`` and normalised to unit Euclidean norm.

Velocity condition (eq 8): ``0 ≤ λ_C ⊥ v_C = N_Cᵀ V⁺ ≥ 0``, added to a contact problem as one
frictionless unilateral row (:func:`add_virtual_constraint`) and solved with the contacts by
:class:`~contactkit.engine.reference.solvers.cone_sor.ConeSOR` (Algorithm 1) or any other solver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contactkit.engine.reference.body import RigidBody, com_position, inverse_mass_matrix, rotation, single_state
from contactkit.engine.reference.problem import ContactProblem, with_unilateral_rows
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

GIMBAL_TOL = 1e-6
"""``|cos φ₂|`` below this is a gimbal lock of the XYZ Euler angles: refused."""

SQP_TOL = 1e-12
"""SQP stops when ``|h(q_C)|`` is below this."""

SQP_MAX_ITERATIONS = 50
"""Cap on SQP iterations for the nearest surface point."""

DEFAULT_ACTIVATION = 0.0
"""Default: the virtual constraint is active where ``h(q) ≤`` this value."""


@dataclass(frozen=True)
class SurfaceFunction:
    """C-space surface ``h(q)`` (``> 0`` free, ``< 0`` in collision) and its gradient.

    Attributes:
        value: ``q (6,) -> float``.
        gradient: ``q (6,) -> (6,)``, ``∂h/∂q`` (per metre for position, per radian for angles).
    """

    value: Callable[[np.ndarray], float]
    gradient: Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class CSpaceConstraint:
    """The virtual constraint of one step.

    Attributes:
        direction: ``(6,)`` unit C-space normal ``N_C`` in ``V = [v_com; ω_body]`` coordinates.
        h: ``h(q)`` at the current configuration.
        nearest_velocity: ``(6,)`` ``V_C``, the least-energy velocity reaching ``h = 0`` in unit time.
        sqp_iterations: SQP iterations used.
        converged: whether ``|h(q + G V_C)| ≤ SQP_TOL`` was reached.
    """

    direction: np.ndarray
    h: float
    nearest_velocity: np.ndarray
    sqp_iterations: int
    converged: bool


def euler_xyz(rot: np.ndarray) -> np.ndarray:
    """XYZ Euler angles ``(3,)`` [rad] of ``R = Rx(φ₁) Ry(φ₂) Rz(φ₃)`` ``(3, 3)``."""
    return np.array(
        [
            np.arctan2(-rot[1, 2], rot[2, 2]),
            np.arcsin(np.clip(rot[0, 2], -1.0, 1.0)),
            np.arctan2(-rot[0, 1], rot[0, 0]),
        ]
    )


def euler_rate_matrix(phi: np.ndarray) -> np.ndarray:
    """``E(φ)`` ``(3, 3)`` with ``ω_body = E(φ) φ̇`` for XYZ Euler angles; ``det E = cos φ₂``."""
    _, b, c = phi
    cb, sb, cc, sc = np.cos(b), np.sin(b), np.cos(c), np.sin(c)
    return np.array([[cb * cc, sc, 0.0], [-cb * sc, cc, 0.0], [sb, 0.0, 1.0]])


def configuration(body: RigidBody, state: BodyState) -> np.ndarray:
    """``q = [x_c; φ]`` ``(6,)``: world COM position [m] and XYZ Euler angles [rad] (tight-tolerance paper §II)."""
    single_state(state)
    return np.concatenate([com_position(body, state), euler_xyz(rotation(state))])


def velocity_to_rate(q: np.ndarray) -> np.ndarray:
    """``G(q)`` ``(6, 6)`` with ``q̇ = G V`` for ``V = [v_com_world; ω_body]``: ``diag(I, E(φ)⁻¹)``.

    Raises:
        InvalidInputError: at a gimbal lock (``|cos φ₂| < GIMBAL_TOL``).
    """
    if abs(np.cos(q[4])) < GIMBAL_TOL:
        raise InvalidInputError(f"XYZ Euler angles are at a gimbal lock (phi_2 = {q[4]:.6g} rad)")
    g = np.eye(6)
    g[3:, 3:] = np.linalg.inv(euler_rate_matrix(q[3:]))
    return g


def _surface_value(surface: SurfaceFunction, q: np.ndarray) -> tuple[float, np.ndarray]:
    value = float(surface.value(q))
    grad = np.asarray(surface.gradient(q), dtype=np.float64)
    if not np.isfinite(value) or grad.shape != (6,) or not np.all(np.isfinite(grad)):
        raise InvalidInputError(
            f"surface function gave h={value!r} and a gradient of shape {grad.shape} "
            "(need a finite value and a finite (6,) gradient)"
        )
    return value, grad


def cspace_normal(body: RigidBody, state: BodyState, surface: SurfaceFunction) -> CSpaceConstraint:
    """C-space normal ``N_C`` of the tight-tolerance paper §IV-B by SQP on ``min ½VᵀMV`` s.t. ``h(q + G V) = 0``.

    Each SQP step linearises ``h`` at ``q_j = q + G V_j`` and sets
    ``V_{j+1} = M⁻¹Gᵀg_j (g_jᵀG V_j - h_j) / (g_jᵀ G M⁻¹ Gᵀ g_j)`` with ``g_j = ∇h(q_j)``.
    """
    q = configuration(body, state)
    G = velocity_to_rate(q)
    M_inv = inverse_mass_matrix(body)
    h0, grad = _surface_value(surface, q)
    V = np.zeros(6)
    h_j, converged, iterations = h0, abs(h0) <= SQP_TOL, 0
    while not converged and iterations < SQP_MAX_ITERATIONS:
        a = G.T @ grad
        denom = float(a @ M_inv @ a)
        if denom <= 0.0:
            raise InvalidInputError("surface gradient vanishes: the C-space normal is undefined")
        V = M_inv @ a * (float(a @ V) - h_j) / denom
        iterations += 1
        h_j, grad = _surface_value(surface, q + G @ V)
        converged = abs(h_j) <= SQP_TOL
    direction = G.T @ grad
    norm = float(np.linalg.norm(direction))
    if norm == 0.0:
        raise InvalidInputError("surface gradient vanishes: the C-space normal is undefined")
    return CSpaceConstraint(direction / norm, h0, V, iterations, bool(converged))


def add_virtual_constraint(
    problem: ContactProblem, constraint: CSpaceConstraint, activation: float = DEFAULT_ACTIVATION
) -> ContactProblem:
    """``problem`` with the row ``0 ≤ λ_C ⊥ N_Cᵀ V⁺ ≥ 0`` (tight-tolerance paper eq 8) if ``h(q) ≤ activation``.

    The problem must be that of a floating body (``n = 6``, coordinates ``[v_com; ω_body]``).
    """
    if problem.n_dof != 6:
        raise InvalidInputError(f"the C-space constraint needs a 6-DoF body problem, got n = {problem.n_dof}")
    if constraint.h > activation:
        return problem
    return with_unilateral_rows(problem, constraint.direction[None, :])
