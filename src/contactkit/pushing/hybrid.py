"""The hybrid contact model of the pushing paper (eqs 1–8, 11–12): arm + planar object, box-friction MLCP.

Generalised velocity ``v = [q̇ (7); v_x, v_y, ω (object, world); s (S support rows)]``. One step of ``h``:

* arm (eq 1): ``M(q)``, ``c(q, q̇)`` from MuJoCo (:class:`contactkit.pushing.arm.Arm`), viscous joint damping
  ``D`` treated implicitly, ``M̃ = M + hD`` (and ``+ hK_v + h²K_p`` when the joint PD of eq 15 is implicit);
* object (eq 11): ``M_ob = diag(m, m, I_z)``, ``c_ob = 0`` (planar COM coordinates);
* pusher contacts (eqs 2–5): each tip whose signed distance to the object's plan is below
  :data:`CONTACT_MARGIN` is a contact with normal ``n`` (the face's outward normal: the force on the pusher),
  tangent ``t = e_z × n`` (eq 3's ``λ_t``) and the vertical tangent ``e_z``;
* ground friction ``f`` of eq 11: ``V`` support points (the plan's vertices scaled towards the centre of
  mass, :func:`contactkit.pushing.planar.support_points`) with a normal load of ``m g / V`` each and box
  friction ``μ_ground`` along the object's x and y axes (so the model is invariant to the object's yaw). The
  total friction force is bounded by ``μ m g`` per axis and the torque in pure spin by ``μ m g ρ``, the value of
  a uniformly pressed base (ρ: mean distance of the base from the centre of mass).
  Each support's normal row acts on its own virtual vertical degree of freedom of mass ``m / V`` (a
  unilateral support under gravity), so the normal impulse the MLCP finds is exactly ``m g h / V``;
* the MLCP of eq 7 with complementarity eq 8 is the engine's :class:`ContactProblem` (impulse ``hλ`` as
  unknown, Delassus ``W = A M̃⁻¹ Aᵀ``) solved by :class:`BoxPGS` (Lemke is the tests' oracle);
* first-order stepping (eq 6): ``v⁺`` from the MLCP, then ``q⁺ = q + h q̇⁺`` and ``p⁺ = p + h v_ob⁺``.

Departures, stated: the engine's contacts have two tangents; the second (vertical) tangent of a pusher contact
is kept with the same box bound (eq 3 omits it: with the tips at the object's mid-height it only carries the
arm's vertical drift), and it is not reported in :class:`PushStep`. Arm–table and arm–object contacts other
than the two tips are not modelled.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from contactkit.engine.reference.problem import ContactProblem, build_problem_general, velocity_after
from contactkit.engine.reference.solvers import BoxPGS, ContactSolution, ContactSolver, LemkeBoxSolver
from contactkit.errors import InvalidInputError, SimulationDiverged
from contactkit.pushing.arm import Arm, JointPD
from contactkit.pushing.planar import face_distance, point_jacobian, shift_body_point, support_points, world_polygon
from contactkit.pushing.scene import GRAVITY_MPS2, N_ARM_JOINTS, PushScene, com_polygon, object_inertia_z

CONTACT_MARGIN = 0.01
"""Tip–face signed distance [m] below which a tip enters the MLCP (speculative: ``max(d, 0)/h`` bias)."""

PGS_TOL = 1e-6
"""Residual tolerance [m/s] of the in-loop :class:`BoxPGS`."""

PGS_MAX_ITERATIONS = 150
"""Sweep cap of the in-loop :class:`BoxPGS`; a step that reaches it is re-solved by Lemke (see ``fallbacks``)."""

PGS_RELAXATION = 1.3
"""Over-relaxation ω of the in-loop :class:`BoxPGS` (measured: about half the sweeps of ω = 1 on pushing steps)."""

N_TIPS = 2

DEFAULT_FALLBACK = LemkeBoxSolver()
"""Solver of the steps where the in-loop PGS reached its sweep cap."""


@dataclass(frozen=True)
class PushState:
    """State of the arm and the object.

    Attributes:
        q: ``(7,)`` joint angles [rad]. qd: ``(7,)`` joint velocities [rad/s].
        obj_pose: ``(3,)`` planar pose ``(x, y, θ)`` of the object frame [m, m, rad]: its geometric centre, what
            the pose tracking sees (the centre of mass unless the scene has a ``com_offset``).
        obj_vel: ``(3,)`` planar twist ``(v_x, v_y, ω)`` of that frame, world frame [m/s, m/s, rad/s].
    """

    q: np.ndarray
    qd: np.ndarray
    obj_pose: np.ndarray
    obj_vel: np.ndarray


@dataclass(frozen=True)
class PushStep:
    """What one control step produced (both worlds).

    Attributes:
        state: state after the step.
        contact_force: ``(2, 2)`` per tip ``(λ_n, λ_t)`` [N], mean over the step: the force the tip exerts ON
            the object, ``λ_n`` along the face normal pointing into the object, ``λ_t`` along
            ``e_t = e_z × e_n`` (eq 3; the paper's Fig. 2 convention).
        contact_world: ``(2, 2)`` the same forces as world ``(F_x, F_y)`` [N].
        contact_torque: ``(2,)`` z-torque of each tip force about the object's centre of mass [N m] (eq 17's τ_z).
        in_contact: ``(2,)`` bool, tip touched the object during the step.
        torque: ``(7,)`` joint torque applied (after the torque limits) [N m], mean over the step.
    """

    state: PushState
    contact_force: np.ndarray
    contact_world: np.ndarray
    contact_torque: np.ndarray
    in_contact: np.ndarray
    torque: np.ndarray


@dataclass(frozen=True)
class ContactLayout:
    """Which rows of a step's MLCP are what: ``tips`` lists the tip index of each pusher contact (in order),
    the remaining ``supports`` contacts are ground supports. ``inward``: ``(len(tips), 2)`` face normals into
    the object; ``points``: ``(len(tips), 2)`` world contact points [m]."""

    tips: tuple[int, ...]
    supports: int
    inward: np.ndarray
    points: np.ndarray


def _check_vec(name: str, value, n: int) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (n,) or not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} must be {n} finite numbers, got {value!r}")
    return arr


def _tip_contacts(scene: PushScene, arm: Arm, state: PushState, h: float):
    """Active tip contacts: points (3-D), frames, arm point Jacobians, object Jacobians, biases, layout data."""
    tips, jac_arm = arm.tip_positions(state.q), arm.tip_jacobians(state.q)
    poly = world_polygon(com_polygon(scene), state.obj_pose)
    rows = []
    for i in range(N_TIPS):
        fd = face_distance(poly, tips[i, :2])
        gap = fd.distance - scene.tip_radius
        if gap >= CONTACT_MARGIN:
            continue
        n2 = fd.normal
        point = np.array([*(tips[i, :2] - scene.tip_radius * n2), tips[i, 2]])
        n = np.array([n2[0], n2[1], 0.0])
        frame = np.array([n, [-n[1], n[0], 0.0], [0.0, 0.0, 1.0]])  # n, e_z × n, e_z
        rows.append((i, point, frame, jac_arm[i], point_jacobian(state.obj_pose, point[:2]), max(gap, 0.0) / h))
    return rows, poly


@functools.lru_cache(maxsize=64)
def _supports(scene: PushScene) -> np.ndarray:
    """The scene's ground support points about its centre of mass (object frame), computed once per scene."""
    out = support_points(com_polygon(scene))
    out.flags.writeable = False
    return out


def assemble_problem(
    scene: PushScene, arm: Arm, state: PushState, torque: np.ndarray, pd: JointPD | None = None
) -> tuple[ContactProblem, ContactLayout]:
    """The MLCP of eq 7 for one step of ``scene.dt`` from ``state`` under joint ``torque`` ``(7,)`` [N m].

    ``state.obj_pose``/``obj_vel`` are those of the true centre of mass (the object frame shifted by
    ``scene.com_offset``); the ground's friction coefficient at each support point is ``mu_ground`` × the scene's
    friction patch there (:class:`~contactkit.pushing.patches.FrictionPatches`).

    With ``pd`` (eq 15), ``torque`` is a feed-forward added to ``K_p(q_des - q⁺) + K_v(q̇_des - q̇⁺)``, the PD
    terms taken at the end of the step (implicit, stable at any gain). Returns the problem (unknowns: the
    impulses ``hλ`` [N s]) and its :class:`ContactLayout`.
    """
    h = scene.dt
    q, qd = state.q, state.qd
    mass = arm.mass_matrix(q)
    m_eff = mass + h * np.diag(arm.damping)
    force = torque - arm.bias(q, qd)
    if pd is not None:
        m_eff = m_eff + h * np.diag(pd.kv) + h * h * np.diag(pd.kp)
        force = force + pd.kp * (pd.q_des - q) + pd.kv * pd.qd_des
    rows, _ = _tip_contacts(scene, arm, state, h)
    poly = world_polygon(_supports(scene), state.obj_pose)
    n_sup = poly.shape[0]
    patches = scene.friction_patches
    mu_sup = scene.mu_ground * (np.ones(n_sup) if patches is None else patches.scale_at(poly))
    n = N_ARM_JOINTS + 3 + n_sup
    m_sup = scene.object_mass / n_sup
    m_inv = np.zeros((n, n))
    arm_inv = np.linalg.inv(m_eff)
    m_inv[:N_ARM_JOINTS, :N_ARM_JOINTS] = 0.5 * (arm_inv + arm_inv.T)
    obj_diag = [1.0 / scene.object_mass, 1.0 / scene.object_mass, 1.0 / object_inertia_z(scene)]
    m_inv[N_ARM_JOINTS:, N_ARM_JOINTS:] = np.diag(obj_diag + [1.0 / m_sup] * n_sup)
    v_free = np.concatenate([
        np.linalg.solve(m_eff, mass @ qd + h * force), state.obj_vel, np.full(n_sup, -GRAVITY_MPS2 * h)])
    k = len(rows) + n_sup
    points, frames, jac = np.zeros((k, 3)), np.zeros((k, 3, 3)), np.zeros((k, 3, n))
    bias, mu = np.zeros(3 * k), np.zeros(k)
    for j, (_, point, frame, j_arm, j_obj, b) in enumerate(rows):
        points[j], frames[j], bias[3 * j], mu[j] = point, frame, b, scene.mu_contact
        jac[j, :, :N_ARM_JOINTS] = j_arm
        jac[j, :2, N_ARM_JOINTS:N_ARM_JOINTS + 3] = -j_obj
    c, si = np.cos(state.obj_pose[2]), np.sin(state.obj_pose[2])
    support_frame = np.array([[0.0, 0.0, 1.0], [c, si, 0.0], [-si, c, 0.0]])  # n = e_z, t1/t2 = object x/y
    for s in range(n_sup):
        j = len(rows) + s
        points[j] = [poly[s, 0], poly[s, 1], 0.0]
        frames[j] = support_frame
        jac[j, :2, N_ARM_JOINTS:N_ARM_JOINTS + 3] = point_jacobian(state.obj_pose, poly[s])
        jac[j, 2, N_ARM_JOINTS + 3 + s] = 1.0
        mu[j] = mu_sup[s]
    problem = build_problem_general(points, frames, jac, m_inv, v_free, mu, h, bias)
    layout = ContactLayout(tuple(r[0] for r in rows), n_sup,
                           np.array([-r[2][0, :2] for r in rows]).reshape(-1, 2),
                           np.array([r[1][:2] for r in rows]).reshape(-1, 2))
    return problem, layout


def tip_forces(layout: ContactLayout, solution: ContactSolution, obj_pose: np.ndarray, dt: float):
    """Per-tip forces on the object from a solved MLCP: ``(contact_force (2,2), world (2,2), torque (2,), active)``.

    ``λ`` on the pusher along its contact frame ``[n, t, e_z]``; the object receives the opposite force, whose
    components along the inward normal ``-n`` and ``e_t = e_z × (-n) = -t`` are ``(λ_n, λ_t)``.
    """
    force, world, torque = np.zeros((N_TIPS, 2)), np.zeros((N_TIPS, 2)), np.zeros(N_TIPS)
    active = np.zeros(N_TIPS, dtype=bool)
    for j, tip in enumerate(layout.tips):
        lam = solution.impulses[j] / dt
        inward = layout.inward[j]
        e_t = np.array([-inward[1], inward[0]])
        world[tip] = lam[0] * inward + lam[1] * e_t
        force[tip] = (lam[0], lam[1])
        r = layout.points[j] - np.asarray(obj_pose)[:2]
        torque[tip] = r[0] * world[tip][1] - r[1] * world[tip][0]
        active[tip] = lam[0] > 0.0
    return force, world, torque, active


class HybridPushWorld:
    """The paper's model as a world: ``reset``, ``step(torque)`` and ``step_pd`` → :class:`PushStep`.

    Attributes:
        scene: the :class:`PushScene` (``scene.dt`` is one step).
        arm: the :class:`Arm` used for ``M``, ``c`` and the Jacobians.
        solver: any box-friction :class:`ContactSolver` (default :class:`BoxPGS` at :data:`PGS_TOL`).
        fallback: solver for steps where ``solver`` did not converge (default :class:`LemkeBoxSolver`; ``None``
            raises :class:`SimulationDiverged` instead). The ground supports make ``W`` singular (friction at
            four corners is statically indeterminate) and PGS then converges slowly; Lemke does not mind.
        steps, fallbacks: counts of steps and of steps the fallback solved.
        last_problem, last_layout, last_solution: the most recent step's MLCP, for inspection and tests.
    """

    def __init__(self, scene: PushScene, solver: ContactSolver | None = None, arm: Arm | None = None,
                 fallback: ContactSolver | None = DEFAULT_FALLBACK):
        self.scene = scene
        self.arm = arm if arm is not None else Arm(scene)
        self.solver = solver if solver is not None else BoxPGS(
            tol=PGS_TOL, max_iterations=PGS_MAX_ITERATIONS, relaxation=PGS_RELAXATION)
        self.fallback = fallback
        self.steps = 0
        self.fallbacks = 0
        self.last_problem: ContactProblem | None = None
        self.last_layout: ContactLayout | None = None
        self.last_solution: ContactSolution | None = None
        self._warm: tuple[tuple[int, ...], np.ndarray] | None = None
        self.state = self.reset()

    def reset(self, state: PushState | None = None) -> PushState:
        """Reset to ``state`` (default: ``scene.home_q`` at rest, object at ``scene.object_pose`` at rest)."""
        if state is None:
            state = PushState(np.array(self.scene.home_q, dtype=np.float64), np.zeros(N_ARM_JOINTS),
                              np.array(self.scene.object_pose, dtype=np.float64), np.zeros(3))
        self.state = PushState(_check_vec("q", state.q, 7), _check_vec("qd", state.qd, 7),
                               _check_vec("obj_pose", state.obj_pose, 3), _check_vec("obj_vel", state.obj_vel, 3))
        self._warm = None
        return self.state

    def step(self, torque: np.ndarray) -> PushStep:
        """One step of ``scene.dt`` under joint torques ``(7,)`` [N m], clipped to the arm's torque limits."""
        tau = np.clip(_check_vec("torque", torque, 7), -self.arm.torque_limit, self.arm.torque_limit)
        return self._commit(*self._solve(tau, None))

    def step_pd(self, pd: JointPD, torque_ff: np.ndarray | None = None) -> PushStep:
        """One step under the joint PD of eq 15 (implicit in the MLCP) plus an optional feed-forward ``(7,)``.

        The reported torque is the PD law evaluated at the end of the step. If it exceeds the arm's torque limits,
        the step is redone with that torque clipped to the limits and held constant (saturated actuators).
        """
        ff = np.zeros(N_ARM_JOINTS) if torque_ff is None else _check_vec("torque_ff", torque_ff, 7)
        trial = self._solve(ff, pd)
        if np.all(np.abs(trial[0].torque) <= self.arm.torque_limit):
            return self._commit(*trial)
        return self.step(trial[0].torque)

    def _solve(self, torque: np.ndarray, pd: JointPD | None):
        """Solve one step from ``self.state`` without changing the world.

        Returns:
            ``(PushStep, problem, layout, solution, fell_back)``.
        """
        h, s, offset = self.scene.dt, self.state, self.scene.com_offset
        s = PushState(s.q, s.qd, *shift_body_point(s.obj_pose, s.obj_vel, offset))  # the centre of mass's
        problem, layout = assemble_problem(self.scene, self.arm, s, torque, pd)
        warm = None
        if self._warm is not None and self._warm[0] == layout.tips and self._warm[1].shape == (problem.W.shape[0],):
            warm = self._warm[1]
        solution = self.solver.solve(problem, warm)
        fell_back = not solution.converged
        if fell_back:
            if self.fallback is None:
                raise SimulationDiverged(f"contact solver did not converge: {solution.status.value}, "
                                         f"residuals {solution.residuals}")
            solution = self.fallback.solve(problem)
        v = velocity_after(problem, solution.stacked)
        if not np.all(np.isfinite(v)):
            raise SimulationDiverged(f"hybrid pushing model produced a non-finite velocity at q={s.q.tolist()}")
        qd, obj_vel = v[:N_ARM_JOINTS], v[N_ARM_JOINTS:N_ARM_JOINTS + 3]
        new = PushState(s.q + h * qd, qd, *shift_body_point(s.obj_pose + h * obj_vel, obj_vel, offset, -1.0))
        force, world, torque_z, active = tip_forces(layout, solution, s.obj_pose, h)
        applied = torque if pd is None else torque + pd.kp * (pd.q_des - new.q) + pd.kv * (pd.qd_des - qd)
        return PushStep(new, force, world, torque_z, active, applied), problem, layout, solution, fell_back

    def _commit(self, step: PushStep, problem: ContactProblem, layout: ContactLayout, solution: ContactSolution,
                fell_back: bool) -> PushStep:
        self.steps += 1
        self.fallbacks += int(fell_back)
        self.last_problem, self.last_layout, self.last_solution = problem, layout, solution
        self._warm = (layout.tips, solution.stacked)
        self.state = step.state
        return step
