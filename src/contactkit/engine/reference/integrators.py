"""Time integration of a floating rigid body with velocity-level contact (tight-tolerance paper, eqs 1–2).

A step composes as: free velocity (this module) → contact problem (:mod:`.problem`) → contact solve
(:mod:`.solvers`) → ``V⁺ = v_free + M⁻¹Jᵀλ`` → pose update (this module) → optional position correction.

Two integrators, coordinates ``V = [v_com_world; ω_body]``, ``M = diag(mI, J)``, ``C(ω) = diag(0, -S(Jω))``:

* semi-implicit (symplectic) Euler: ``M(v_free - V)/h = Q - [0; ω×Jω]``; pose moved with ``V⁺``;
* passive midpoint integration (PMI, tight-tolerance paper eq 1): ``M(v_free - V)/h + C(ω_k)(v_free + V)/2 = Q``,
  which conserves kinetic energy exactly when ``Q = 0`` (the Coriolis matrix is skew, so it does no work
  on the midpoint velocity); the pose is moved with the midpoint velocity ``(V⁺ + V)/2``.

Contact impulses enter as ``M(V⁺ - v_free) = Jᵀλ`` with the velocity-level Signorini condition
(eq 2) imposed on ``V⁺``. Applying them through the symmetric ``M`` (after the gyroscopic step) makes the
contact phase exactly dissipative: ``E(V⁺) - E(v_free) = λᵀ(JV⁺) - ½λᵀWλ ≤ 0``, since Signorini gives
``λ_n u_n = 0`` with a bias ``≥ 0`` and maximum dissipation ``λ_t·u_t ≤ 0``. (Solving eq 1 with the contact
impulse inside the Coriolis term would instead inject energy ``λ_n u_n,k/2`` at contacts that were
separating at step ``k``; the split differs from eq 1 by ``(h/2)M⁻¹C M⁻¹Jᵀλ``, i.e. ``O(h²)`` for bounded
contact forces.) Hence with PMI and no input the kinetic energy never increases through contact.

Position correction (:func:`correct_position`) moves the pose out of penetration by a pseudo-velocity
that is not kept in the state, so it cannot add kinetic energy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.collision.contact_set import Contacts
from contactkit.engine.params import Integrator
from contactkit.engine.reference.body import (
    RigidBody,
    com_position,
    generalized_force,
    generalized_velocity,
    rotation,
    single_state,
    state_with_velocity,
)
from contactkit.engine.reference.problem import ContactProblem, build_problem, contact_wrench, velocity_after
from contactkit.engine.reference.solvers.base import ContactSolution, ContactSolver
from contactkit.engine.reference.solvers.lemke import lemke
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.rotations import cross, quat_mul, quat_normalize, rotvec_to_quat
from contactkit.state import BodyState


@dataclass(frozen=True)
class PositionCorrection:
    """Settings of the energy-safe penetration correction (:func:`correct_position`).

    Attributes:
        fraction: share of the penetration beyond ``slop`` removed per step, in ``(0, 1]``.
        slop: penetration [m] left uncorrected (keeps resting contacts touching).
    """

    fraction: float = 1.0
    slop: float = 1e-5

    def __post_init__(self) -> None:
        if not 0.0 < self.fraction <= 1.0 or not self.slop >= 0.0:
            raise InvalidInputError(f"invalid PositionCorrection {self!r}")


def _check_dt(dt: float) -> float:
    dt = float(dt)
    if not np.isfinite(dt) or dt <= 0.0:
        raise InvalidInputError(f"time step dt must be finite and > 0 s, got {dt!r}")
    return dt


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def free_velocity(
    body: RigidBody,
    state: BodyState,
    dt: float,
    method: Integrator = Integrator.PASSIVE_MIDPOINT,
    wrench: np.ndarray | None = None,
    gravity: np.ndarray | None = None,
) -> np.ndarray:
    """Generalized velocity ``(6,)`` ``[v_com_world; ω_body]`` at the end of the step without contact.

    Args:
        body, state: the body and its state at step ``k`` (single body).
        dt: step ``h > 0`` [s].
        method: semi-implicit Euler, or PMI (tight-tolerance paper eq 1 with the gyroscopic term ``C(ω_k)``).
        wrench: ``(6,)`` external world wrench ``(f, τ)`` [N, N·m], torque about the COM; zero if None.
        gravity: ``(3,)`` gravitational acceleration [m/s²]; zero if None.
    """
    dt = _check_dt(dt)
    single_state(state)
    q = generalized_force(body, state, np.zeros(6) if wrench is None else wrench)
    if gravity is not None:
        g = np.asarray(gravity, dtype=np.float64)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise InvalidInputError(f"gravity must be a finite (3,) array, got shape {g.shape}")
        q[:3] += body.mass * g
    v = generalized_velocity(body, state)
    omega = v[3:]
    inertia = body.inertia_body
    lin = v[:3] + dt * q[:3] / body.mass
    if method is Integrator.SEMI_IMPLICIT_EULER:
        ang = omega + dt * body.inertia_inv @ (q[3:] - cross(omega, inertia @ omega))
    elif method is Integrator.PASSIVE_MIDPOINT:
        # J(ω⁺-ω)/h - S(Jω)(ω⁺+ω)/2 = τ  ⇔  (J - h/2 S(Jω)) ω⁺ = (J + h/2 S(Jω)) ω + h τ
        s = _skew(inertia @ omega) * (0.5 * dt)
        ang = np.linalg.solve(inertia - s, (inertia + s) @ omega + dt * q[3:])
    else:
        raise InvalidInputError(f"unknown integrator {method!r}")
    return np.concatenate([lin, ang])


def advance_pose(
    body: RigidBody,
    state: BodyState,
    v_next: np.ndarray,
    dt: float,
    method: Integrator = Integrator.PASSIVE_MIDPOINT,
) -> BodyState:
    """State at step ``k+1`` from the state at ``k`` and the end-of-step velocity ``v_next`` ``(6,)``.

    The COM moves by ``h·v`` and the orientation by ``R⁺ = R exp(h ω)`` (body-frame ``ω``), with
    ``(v, ω) = V⁺`` (semi-implicit Euler) or ``(V⁺ + V_k)/2`` (PMI, tight-tolerance paper).
    Velocities are set to ``v_next``.
    """
    dt = _check_dt(dt)
    v_next = np.asarray(v_next, dtype=np.float64)
    if v_next.shape != (6,) or not np.all(np.isfinite(v_next)):
        raise InvalidInputError(f"v_next must be a finite (6,) array, got shape {v_next.shape}")
    if method is Integrator.PASSIVE_MIDPOINT:
        v_pos = 0.5 * (v_next + generalized_velocity(body, state))
    elif method is Integrator.SEMI_IMPLICIT_EULER:
        v_pos = v_next
    else:
        raise InvalidInputError(f"unknown integrator {method!r}")
    moved = displace(body, state, dt * v_pos)
    return state_with_velocity(body, moved, v_next)


def displace(body: RigidBody, state: BodyState, delta: np.ndarray) -> BodyState:
    """Pose moved by ``delta = [Δx_com_world (m); Δφ_body (rad)]`` ``(6,)``, generalized velocity kept.

    ``R⁺ = R exp(Δφ)``, ``com⁺ = com + Δx``; the body origin follows: ``pos⁺ = com⁺ - R⁺ com_body``.
    ``V = [v_com; ω_body]`` (hence the kinetic energy) is unchanged; the state's world-frame velocity
    fields are recomputed from it.
    """
    delta = np.asarray(delta, dtype=np.float64)
    if delta.shape != (6,) or not np.all(np.isfinite(delta)):
        raise InvalidInputError(f"displacement must be a finite (6,) array, got shape {delta.shape}")
    velocity = generalized_velocity(body, state)
    com = com_position(body, state) + delta[:3]
    quat = quat_normalize(quat_mul(state.quat, rotvec_to_quat(delta[3:])))  # R⁺ = R exp(Δφ), w ≥ 0
    pos = com - rotation(state.replace(quat=quat)) @ body.com_body
    return state_with_velocity(body, state.replace(pos=pos, quat=quat), velocity)


def correct_position(
    body: RigidBody,
    state: BodyState,
    problem: ContactProblem,
    distances: np.ndarray,
    config: PositionCorrection = PositionCorrection(),
) -> BodyState:
    """Energy-safe penetration correction by a pseudo-velocity (split impulse); velocities unchanged.

    Solves the frictionless problem ``0 ≤ λ_p ⊥ (J_n M⁻¹ J_nᵀ λ_p - c) ≥ 0`` with
    ``c_i = fraction · max(-d_i - slop, 0) / dt`` exactly (Lemke; the normal rows of coplanar contacts
    are rank deficient, where Gauss-Seidel stalls) and moves the pose by ``dt · M⁻¹ J_nᵀ λ_p``.

    Args:
        body, state: the body and the state to correct (e.g. after :func:`advance_pose`).
        problem: a problem whose Jacobian is valid at ``state`` (the step's, to first order).
        distances: ``(K,)`` signed distances [m] at ``state`` (e.g. ``d + dt·u_n``, or re-detected).
        config: :class:`PositionCorrection`.
    """
    d = np.asarray(distances, dtype=np.float64)
    if d.shape != (problem.n_contacts,) or not np.all(np.isfinite(d)):
        raise InvalidInputError(f"distances must be a finite ({problem.n_contacts},) array, got {d.shape}")
    target = config.fraction * np.maximum(-d - config.slop, 0.0) / problem.dt
    if not np.any(target > 0.0):
        return state
    normal_rows = problem.J[: 3 * problem.n_contacts : 3]
    result = lemke(normal_rows @ problem.M_inv @ normal_rows.T, -target)
    if not result.solved:
        raise ContactkitError("position correction: the frictionless projection LCP has no solution")
    shift = problem.M_inv @ (normal_rows.T @ result.z) * problem.dt
    return displace(body, state, shift)


@dataclass(frozen=True)
class StepResult:
    """Outcome of :func:`step_rigid_body`.

    Attributes:
        state: state at step ``k+1``.
        problem: the contact problem of the step.
        solution: the solver's solution (check ``solution.converged``).
        wrench: ``(6,)`` mean contact wrench on the tool over the step, world frame, about the COM at
            step ``k`` [N, N·m].
    """

    state: BodyState
    problem: ContactProblem
    solution: ContactSolution
    wrench: np.ndarray


def step_rigid_body(
    body: RigidBody,
    state: BodyState,
    contacts: Contacts,
    dt: float,
    solver: ContactSolver,
    method: Integrator = Integrator.PASSIVE_MIDPOINT,
    wrench: np.ndarray | None = None,
    gravity: np.ndarray | None = None,
    correction: PositionCorrection | None = None,
    initial: np.ndarray | None = None,
) -> StepResult:
    """One step of a floating body against given contacts: free velocity → problem → solve → integrate.

    ``contacts`` are those at step ``k`` (from collision detection, or analytic). With ``correction``,
    the penetration predicted at the new pose (contact points carried by the body, surfaces taken as
    locally planar) is projected out by :func:`correct_position`.
    """
    v_free = free_velocity(body, state, dt, method, wrench, gravity)
    problem = build_problem(contacts, body, state, v_free, dt)
    solution = solver.solve(problem, initial)
    v_next = velocity_after(problem, solution.stacked)
    new_state = advance_pose(body, state, v_next, dt, method)
    if correction is not None and problem.n_contacts:
        # Distances after the step, assuming locally planar surfaces: d + n·(p' - p) with p' the contact
        # point carried rigidly by the body (exact in the rotation, unlike a first-order J·v·dt).
        local = (contacts.points - state.pos) @ rotation(state)
        moved = np.asarray(new_state.pos) + local @ rotation(new_state).T
        predicted = contacts.distances + np.sum(contacts.normals * (moved - contacts.points), axis=1)
        after = Contacts(moved, contacts.normals, predicted, contacts.friction, contacts.tangents)
        at_new = build_problem(after, body, new_state, np.zeros(6), dt)
        new_state = correct_position(body, new_state, at_new, predicted, correction)
    about = com_position(body, state)
    return StepResult(new_state, problem, solution, contact_wrench(problem, solution.impulses, about))
