"""The velocity-level contact problem: contact frames, Jacobians, Delassus operator and free velocity.

Conventions (all solvers share them):

* A contact ``i`` has a world point ``p_i``, a unit normal ``n_i`` pointing from the environment INTO the
  tool (the direction of the normal force the environment exerts on the tool, and the direction in
  which the tool moves to separate), and a signed distance ``d_i`` (< 0: penetration) [m].
* Its contact frame has the rows ``[n_i; t1_i; t2_i]`` (right-handed: ``t2 = n × t1``) in world
  coordinates; impulses ``λ_i = (λ_n, λ_t1, λ_t2)`` [N·s] and relative velocities
  ``u_i = (u_n, u_t1, u_t2)`` [m/s] (velocity of the tool point relative to the environment) are in it.
* The problem is ``u = W λ + b`` with ``W = J M⁻¹ Jᵀ`` (Delassus operator) and ``b = J v_free + bias``;
  the generalized velocity after the step is ``v⁺ = v_free + M⁻¹ Jᵀ λ``. This is the pushing paper's eq 7
  with the impulse ``hλ`` as unknown, and the contact-space form of the tight-tolerance paper's eq 1.
* Rows ``3K … 3K+E-1`` of ``J`` are optional frictionless unilateral rows (the C-space virtual constraint
  of the tight-tolerance paper's eq 8), ``0 ≤ λ_C ⊥ u_C ≥ 0``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from contactkit.collision.contact_set import NORMAL_UNIT_TOL, Contacts, contact_frames
from contactkit.collision.contact_set import finite_array as _finite
from contactkit.engine.reference.body import RigidBody, com_position, inverse_mass_matrix, rotation, single_state
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

INV_MASS_SYMMETRY_TOL = 1e-9
"""Largest accepted ``|M⁻¹ - M⁻ᵀ|`` relative to ``|M⁻¹|`` in :func:`build_problem_general`."""


def _check_dt(dt: float) -> float:
    dt = float(dt)
    if not np.isfinite(dt) or dt <= 0.0:
        raise InvalidInputError(f"time step dt must be finite and > 0 s, got {dt!r}")
    return dt


@dataclass(frozen=True)
class ContactProblem:
    """The contact problem ``u = W λ + b`` of one time step (see the module docstring).

    Attributes:
        J: ``(3K+E, n)`` contact-frame Jacobian, rows ``[n; t1; t2]`` per contact then ``E`` unilateral rows.
        M_inv: ``(n, n)`` inverse generalized mass matrix.
        W: ``(3K+E, 3K+E)`` Delassus operator ``J M⁻¹ Jᵀ`` [m/s per N·s].
        v_free: ``(n,)`` generalized velocity at the end of the step without contact impulses.
        b: ``(3K+E,)`` free contact velocity ``J v_free + bias`` [m/s].
        mu: ``(K,)`` friction coefficients.
        frames: ``(K, 3, 3)`` contact frames, rows ``[n; t1; t2]`` in world coordinates.
        points: ``(K, 3)`` world contact points [m].
        dt: time step [s] (impulse / dt = mean force).
    """

    J: np.ndarray
    M_inv: np.ndarray
    W: np.ndarray
    v_free: np.ndarray
    b: np.ndarray
    mu: np.ndarray
    frames: np.ndarray
    points: np.ndarray
    dt: float

    @property
    def n_contacts(self) -> int:
        """Number of point contacts ``K``."""
        return int(self.mu.shape[0])

    @property
    def n_virtual(self) -> int:
        """Number of extra frictionless unilateral rows ``E``."""
        return int(self.J.shape[0] - 3 * self.n_contacts)

    @property
    def n_dof(self) -> int:
        """Number of generalized velocities ``n``."""
        return int(self.J.shape[1])


def body_point_jacobians(body: RigidBody, state: BodyState, points: np.ndarray) -> np.ndarray:
    """Point Jacobians ``(K, 3, 6)`` of a floating body: world velocity of ``points`` ``(K, 3)`` [m].

    With ``V = [v_com_world; ω_body]`` (tight-tolerance paper eq 1), the velocity of a body-fixed point at world
    position ``p`` is ``v + R(ω × Rᵀr) = v - S(r) R ω`` with ``r = p - com``; hence ``J_p = [I₃, -S(r)R]``.
    """
    r = np.asarray(points, dtype=np.float64) - com_position(body, state)
    rot = rotation(state)
    jac = np.zeros((r.shape[0], 3, 6))
    jac[:, :, :3] = np.eye(3)
    # -S(r) R: column j is -(r × R[:, j]) = R[:, j] × r.
    jac[:, :, 3:] = np.cross(rot.T[None, :, :], r[:, None, :]).transpose(0, 2, 1)
    return jac


def speculative_bias(distances: np.ndarray, dt: float) -> np.ndarray:
    """Normal bias ``max(d, 0)/dt`` ``(K,)`` [m/s], velocity-level Signorini condition (tight-tolerance paper eq 2).

    With it, ``u_n = (J v⁺)_n + max(d,0)/dt ≥ 0`` lets a contact that is ``d > 0`` apart close that gap
    within the step and no more. It is non-negative, so it never adds energy (a penetration ``d < 0`` is
    not pushed out by the velocity; :func:`contactkit.engine.reference.integrators.correct_position` does that).
    """
    return np.maximum(np.asarray(distances, dtype=np.float64), 0.0) / _check_dt(dt)


def build_problem_general(
    points: np.ndarray,
    frames: np.ndarray,
    point_jacobians: np.ndarray,
    M_inv: np.ndarray,
    v_free: np.ndarray,
    mu: np.ndarray,
    dt: float,
    bias: np.ndarray | None = None,
) -> ContactProblem:
    """Contact problem of any ``n``-DoF system (an arm later) from supplied point Jacobians.

    Args:
        points: ``(K, 3)`` world contact points [m].
        frames: ``(K, 3, 3)`` contact frames (rows ``n, t1, t2``; see :func:`contact_frames`).
        point_jacobians: ``(K, 3, n)`` world velocity of each tool point relative to the environment
            per unit generalized velocity.
        M_inv: ``(n, n)`` symmetric positive (semi-)definite inverse mass matrix.
        v_free: ``(n,)`` generalized velocity at the end of the step without contact.
        mu: ``(K,)`` friction coefficients.
        dt: time step [s].
        bias: ``(3K,)`` velocity bias [m/s] added to ``J v_free`` (e.g. :func:`speculative_bias` on the
            normal rows); zero if ``None``.

    Returns:
        ContactProblem with ``J = frames · point_jacobians`` stacked
        (tight-tolerance paper eq 1: rows ``n_iᵀ J_i``, ``t_iᵀ J_i``).
    """
    dt = _check_dt(dt)
    frames = np.asarray(frames, dtype=np.float64)
    k = frames.shape[0] if frames.ndim == 3 else -1
    jac_pts = np.asarray(point_jacobians, dtype=np.float64)
    n = jac_pts.shape[2] if jac_pts.ndim == 3 else 0
    frames = _finite("frames", frames, (k, 3, 3))
    if k and np.abs(frames @ frames.transpose(0, 2, 1) - np.eye(3)).max() > NORMAL_UNIT_TOL:
        raise InvalidInputError("contact frames must be orthonormal (rows n, t1, t2)")
    jac_pts = _finite("point_jacobians", jac_pts, (k, 3, n))
    M_inv = _finite("M_inv", M_inv, (n, n))
    if np.abs(M_inv - M_inv.T).max(initial=0.0) > INV_MASS_SYMMETRY_TOL * max(np.abs(M_inv).max(initial=0.0), 1e-300):
        raise InvalidInputError("M_inv is not symmetric")
    bias = np.zeros(3 * k) if bias is None else _finite("bias", bias, (3 * k,))
    J = np.einsum("kab,kbn->kan", frames, jac_pts).reshape(3 * k, n)
    v_free = _finite("v_free", v_free, (n,))
    W = J @ M_inv @ J.T
    return ContactProblem(
        J=J,
        M_inv=M_inv,
        W=0.5 * (W + W.T),
        v_free=v_free,
        b=J @ v_free + bias,
        mu=_finite("mu", mu, (k,)),
        frames=frames,
        points=_finite("points", points, (k, 3)),
        dt=dt,
    )


def build_problem(
    contacts: Contacts,
    body: RigidBody,
    state: BodyState,
    v_free: np.ndarray,
    dt: float,
    extra_bias: np.ndarray | None = None,
) -> ContactProblem:
    """Contact problem of a floating rigid body (3×6 Jacobians per contact; tight-tolerance paper eqs 1–3).

    Args:
        contacts: the ``K`` contacts at the start of the step.
        body: mass properties.
        state: pose at the start of the step (velocities unused).
        v_free: ``(6,)`` free generalized velocity ``[v_com_world; ω_body]`` at the end of the step
            (:func:`contactkit.engine.reference.integrators.free_velocity`).
        dt: time step [s].
        extra_bias: ``(3K,)`` optional bias [m/s] added to the speculative normal bias.
    """
    single_state(state)
    dt = _check_dt(dt)
    k = contacts.count
    bias = np.zeros((k, 3))
    bias[:, 0] = speculative_bias(contacts.distances, dt)
    bias = bias.reshape(-1)
    if extra_bias is not None:
        bias = bias + _finite("extra_bias", extra_bias, (3 * k,))
    frames = contact_frames(contacts.normals, contacts.tangents)
    jac = body_point_jacobians(body, state, contacts.points)
    return build_problem_general(
        contacts.points, frames, jac, inverse_mass_matrix(body), v_free, contacts.friction, dt, bias
    )


def with_unilateral_rows(problem: ContactProblem, rows: np.ndarray, bias: np.ndarray | None = None) -> ContactProblem:
    """``problem`` with ``E`` extra frictionless unilateral rows ``(E, n)`` appended (tight-tolerance paper eq 8).

    Each row ``N`` adds ``0 ≤ λ_C ⊥ u_C = Nᵀ v⁺ + bias ≥ 0``; ``W`` and ``b`` are extended accordingly.
    """
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    e = rows.shape[0]
    rows = _finite("unilateral rows", rows, (e, problem.n_dof))
    bias = np.zeros(e) if bias is None else _finite("unilateral bias", bias, (e,))
    J = np.vstack([problem.J, rows])
    W = J @ problem.M_inv @ J.T
    return dataclasses.replace(
        problem, J=J, W=0.5 * (W + W.T), b=np.concatenate([problem.b, rows @ problem.v_free + bias])
    )


def velocity_after(problem: ContactProblem, impulses: np.ndarray) -> np.ndarray:
    """Generalized velocity ``v⁺ = v_free + M⁻¹ Jᵀ λ`` ``(n,)`` for stacked impulses ``(3K+E,)`` [N·s]."""
    return problem.v_free + problem.M_inv @ (problem.J.T @ np.asarray(impulses, dtype=np.float64))


def contact_wrench(problem: ContactProblem, impulses: np.ndarray, about: np.ndarray) -> np.ndarray:
    """Mean world wrench ``(6,)`` [N, N·m] of the contact impulses over the step, about a world point.

    ``f_i = frames_iᵀ λ_i / dt`` is the force the environment exerts on the tool at ``points_i``;
    the wrench is ``(Σ f_i, Σ (p_i - about) × f_i)``. ``impulses`` is ``(K, 3)`` [N·s] in contact frames
    (virtual C-space rows are not point forces; use :func:`contactkit.engine.reference.body.wrench_from_generalized`).
    """
    impulses = np.asarray(impulses, dtype=np.float64).reshape(problem.n_contacts, 3)
    forces = np.einsum("kab,ka->kb", problem.frames, impulses) / problem.dt
    lever = problem.points - np.asarray(about, dtype=np.float64)
    return np.concatenate([forces.sum(axis=0), np.cross(lever, forces).sum(axis=0)])
