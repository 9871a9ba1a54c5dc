"""Each numba kernel that stands in for a piece of the numpy reference engine equals it (differential tests).

The pairs not covered by ``test_world_kernels.py``: the free velocity, the position projection, the pose
update, a whole engine step (:func:`~contactkit.engine._kernels_step.advance` run by an ``EngineWorld`` of one
step per control period, against :func:`~contactkit.engine.step_rigid_body` on the contacts that step used) and
the differentiable model's active-set guess (:func:`contactkit.engine.diff.lcp_grad._pgs`) against
:class:`~contactkit.engine.BoxPGS`. Inputs are random but well conditioned (positive-definite ``W``: the
solution is unique, so solvers of different convergence tests must meet), from explicit seeds.
"""

import numpy as np
import pytest

from contactkit.engine import _kernels_dynamics as kd
from contactkit.engine._kernels_solve import project_positions
from contactkit.engine._kernels_step import Settings
from contactkit.engine.diff.lcp_grad import PGS_SWEEPS, _pgs
from contactkit.engine.params import EngineParams, SolverKind
from contactkit.engine.reference import (
    BoxPGS,
    ConeSOR,
    Integrator,
    PositionCorrection,
    RigidBody,
    build_problem,
    com_position,
    correct_position,
    displace,
    free_velocity,
    generalized_velocity,
    inverse_mass_matrix,
    step_rigid_body,
)
from contactkit.engine.world import EngineWorld
from contactkit.model import ActionMode
from contactkit.physics import WorldParams
from contactkit.rotations import cross, quat_mul, quat_normalize, quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState

from ._scenes import general_problem, random_body, random_contacts, random_state, well_posed_problem
from ._world_scenes import box_scene

ROUND_OFF = 1e-12
"""Relative agreement [-] of a kernel and its reference where both evaluate the same closed form or solve the
same small linear system directly (different operation order, 6×6 vs 3×3 solves of inertias with a condition
number up to ~1e2)."""
PROJECTION_TOL = 1e-14
"""Gauss-Seidel tolerance [m/s] of the kernel's position projection in these tests (the reference is Lemke,
exact), so that the two meet to round-off."""
POSITION_AGREEMENT = 1e-12
"""Kernel and reference poses after a projection agree to this [m] (a ``h·shift`` of ~1e-4 m, to round-off)."""
SOLVER_TOL = 1e-12
"""Convergence tolerance [m/s] of the kernel and reference contact solvers in the whole-step comparison."""
STEP_AGREEMENT = 1e-9
"""Kernel and reference end-of-step velocities [m/s, rad/s] and poses [m, -] agree to this: both solvers stop
within :data:`SOLVER_TOL` of the unique ``V⁺``, measured differently (velocity change per sweep vs residuals)."""


def _settings(h: float) -> Settings:
    """Kernel settings of one step ``h`` [s]; :func:`kd.free_velocity` reads only ``h``."""
    return Settings(n_steps=1, h=h, solver=0, integrator=0, max_iterations=1, tolerance=1.0, relaxation=1.0,
                    margin=0.0, speculative_factor=0.0, max_margin=1.0, max_contacts=1, cos_cluster=1.0,
                    per_cluster=1, correction_fraction=1.0, correction_slop=0.0, correction_iterations=1,
                    friction_scale=1.0, warm_start=False)


def _body_model(body: RigidBody, gravity: np.ndarray) -> kd.BodyModel:
    """The kernel's view of a reference body: no armature, no damping."""
    return kd.BodyModel(mass=body.mass, inertia=np.array(body.inertia_body), inertia_inv=np.array(body.inertia_inv),
                        gyro_inertia=np.array(body.inertia_body), com_local=np.array(body.com_body),
                        sensor_pos=np.zeros(3), sensor_rot=np.eye(3), gravity=gravity, linear_damping=0.0,
                        angular_damping=0.0, reach=1.0)


def _wrench_control(command: np.ndarray) -> kd.Control:
    """A commanded world wrench ``(6,)`` at the tool origin, no gravity compensation."""
    zero = np.zeros(3)
    return kd.Control(False, zero, np.array([1.0, 0.0, 0.0, 0.0]), zero, zero, zero, zero, np.inf, np.inf, 0.0,
                      command)


def _about_com(command: np.ndarray, origin: np.ndarray, com: np.ndarray) -> np.ndarray:
    """The wrench ``(6,)`` at the tool origin as the reference takes it: torque about the centre of mass."""
    return np.concatenate([command[:3], command[3:] + cross(origin - com, command[:3])])


def _close(got, want, tol) -> None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert np.abs(got - want).max() <= tol * max(1.0, np.abs(want).max()), f"{got} != {want}"


@pytest.mark.parametrize("seed", range(8))
def test_free_velocity_kernel_is_the_passive_midpoint_reference(seed):
    """The kernel always treats the gyroscopic term in passive-midpoint form (``EngineParams.integrator`` only
    changes the pose update), so it is the reference's ``PASSIVE_MIDPOINT`` free velocity; with no damping the
    effective mass is ``M``."""
    rng = np.random.default_rng(seed)
    body, state = random_body(rng), random_state(rng, speed=3.0)
    h, gravity, command = float(rng.uniform(5e-4, 5e-3)), rng.normal(0.0, 10.0, 3), rng.normal(0.0, 1.0, 6)
    rot = quat_to_mat(state.quat)
    m_eff_inv = np.empty((6, 6))
    v_free = kd.free_velocity(_body_model(body, gravity), _wrench_control(command), _settings(h), rot, state.quat,
                              generalized_velocity(body, state), np.asarray(state.pos), m_eff_inv)[0]
    wrench = _about_com(command, state.pos, com_position(body, state))
    _close(v_free, free_velocity(body, state, h, Integrator.PASSIVE_MIDPOINT, wrench, gravity), ROUND_OFF)
    _close(m_eff_inv, inverse_mass_matrix(body), ROUND_OFF)


@pytest.mark.parametrize("seed", range(8))
def test_rotate_body_is_the_reference_pose_update(seed):
    """``q ⊗ exp(φ)`` of the kernel equals the reference's :func:`displace` (and the numpy rotations), zero
    and tiny rotations included."""
    rng = np.random.default_rng(100 + seed)
    body, state = random_body(rng), random_state(rng)
    for phi in (np.zeros(3), 1e-14 * rng.normal(size=3), rng.normal(0.0, 1e-6, 3), rng.normal(0.0, 1.0, 3)):
        quat = np.array(state.quat, dtype=np.float64)
        kd.rotate_body(quat, *phi)
        reference = displace(body, state, np.concatenate([np.zeros(3), phi])).quat
        _close(quat, reference, ROUND_OFF)
        _close(quat, quat_normalize(quat_mul(state.quat, rotvec_to_quat(phi))), ROUND_OFF)


@pytest.mark.parametrize("seed", range(8))
def test_project_positions_is_the_reference_correct_position(seed):
    """Every contact deeper than the slop (where the kernel's targets equal the reference's clamped ones) and
    at most three of them (``J_n M⁻¹ J_nᵀ`` positive definite: one solution): Gauss-Seidel meets Lemke."""
    rng = np.random.default_rng(200 + seed)
    body, state = random_body(rng), random_state(rng)
    k = int(rng.integers(1, 4))
    found = random_contacts(rng, body, state, k, 0.5)
    depth = rng.uniform(1e-4, 1e-3, k)
    contacts = type(found)(found.points, found.normals, -depth, found.friction)
    h = 2e-3
    config = PositionCorrection(fraction=float(rng.uniform(0.2, 1.0)), slop=1e-6)
    problem = build_problem(contacts, body, state, np.zeros(6), h)
    reference = correct_position(body, state, problem, contacts.distances, config)
    target = config.fraction * (depth - config.slop) / h  # the kernel's rule (_kernels_step.correct_pose)
    shift = np.empty(6)
    sweeps = project_positions(k, problem.J[::3].copy(), problem.M_inv, target, 100_000, PROJECTION_TOL, shift)
    assert sweeps < 100_000
    quat = np.array(state.quat, dtype=np.float64)
    kd.rotate_body(quat, *(h * shift[3:]))
    _close(com_position(body, state) + h * shift[:3], com_position(body, reference), POSITION_AGREEMENT)
    _close(quat, reference.quat, ROUND_OFF)


def _one_step_world(solver: SolverKind, integrator: Integrator) -> EngineWorld:
    """An engine world of one 2 ms engine step per control period, with nothing the reference lacks (no wrist
    armature, no damping, no gravity compensation), solvers converged to :data:`SOLVER_TOL`, no warm start."""
    params = WorldParams(timestep=2e-3, n_substeps=1, wrist_armature=0.0, linear_damping=0.0, angular_damping=0.0)
    engine = EngineParams(solver=solver, integrator=integrator, max_step=None, max_iterations=100_000,
                          tolerance=SOLVER_TOL, correction_iterations=100_000, warm_start=False)
    world = EngineWorld(box_scene(height=0.0), params, engine=engine)
    assert world.n_steps == 1 and not world.scene.controller.gravity_compensation
    return world


BOX_HALF_HEIGHT = 0.015
"""Half the test box's height (``_world_scenes.BOX_SIZE``) [m]: its centre rests this high on the table."""

STEP_CASES = {
    # falling flat onto the table from 0.2 mm, spinning: four speculative corner contacts, no projection
    "falling-flat": (np.array([0.0, 0.0, BOX_HALF_HEIGHT + 2e-4]), np.zeros(3), [0.1, -0.2, -0.3], [0.5, -0.4, 2.0]),
    # tilted, one corner 50 µm into the table and sliding: one contact, friction, position projection
    "corner-in-table": (np.array([0.0, 0.0, 0.0]), np.array([0.3, -0.2, 0.0]), [0.2, 0.1, -0.05], [1.0, 0.5, -0.3]),
    # resting flat, pushed sideways: four contacts at zero gap, sticking or sliding
    "pushed-flat": (np.array([0.0, 0.0, BOX_HALF_HEIGHT]), np.zeros(3), [0.05, 0.0, 0.0], [0.0, 0.0, 0.4]),
}


def _start(world: EngineWorld, case: str, integrator: Integrator) -> BodyState:
    pos, rotvec, lin_vel, ang_vel = STEP_CASES[case]
    quat = rotvec_to_quat(rotvec)
    if case == "corner-in-table":  # lower the box until its lowest corner is 50 µm deep
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * [0.04, 0.03, 0.015]
        pos = pos - [0.0, 0.0, (corners @ quat_to_mat(quat).T)[:, 2].min() + 5e-5]
    if integrator is Integrator.SEMI_IMPLICIT_EULER:  # the kernel's free velocity is passive-midpoint: equal at ω = 0
        ang_vel = np.zeros(3)
    return BodyState(pos, quat, np.array(lin_vel, float), np.array(ang_vel, float))


@pytest.mark.parametrize("solver", [SolverKind.BOX_PGS, SolverKind.CONE_SOR], ids=lambda s: s.value)
@pytest.mark.parametrize("integrator", list(Integrator), ids=lambda i: i.value)
@pytest.mark.parametrize("case", list(STEP_CASES))
def test_advance_is_the_reference_step(case, integrator, solver):
    """One engine step (collide, solve, sense, integrate, project) of the kernel equals
    :func:`step_rigid_body` on the contacts the kernel found, with the same wrench and gravity: the new state
    and the F/T reading (converted from the reference's contact wrench about the centre of mass)."""
    world = _one_step_world(solver, integrator)
    start = _start(world, case, integrator)
    world.set_state(start)
    command = np.array([0.5, -0.3, -2.0, 0.01, -0.02, 0.005])
    result = world.step(command, ActionMode.WRENCH)
    contacts, _ = world.contacts()
    assert contacts.count >= 1
    b = world.body
    body = RigidBody(b.mass, b.inertia, b.com_local)
    reference_solver = (BoxPGS if solver is SolverKind.BOX_PGS else ConeSOR)(tol=SOLVER_TOL, max_iterations=100_000)
    engine = world.engine
    reference = step_rigid_body(body, start, contacts, world.step_dt, reference_solver, integrator,
                                _about_com(command, start.pos, com_position(body, start)), b.gravity,
                                PositionCorrection(engine.correction_fraction, engine.correction_slop))
    assert reference.solution.converged
    got, want = result.state, reference.state
    for name in ("pos", "quat", "lin_vel", "ang_vel"):
        _close(getattr(got, name), getattr(want, name), STEP_AGREEMENT)
    rot = quat_to_mat(start.quat)
    sensor_rot = rot @ b.sensor_rot
    force, torque_com = reference.wrench[:3], reference.wrench[3:]
    torque = torque_com + cross(com_position(body, start) - (start.pos + rot @ b.sensor_pos), force)
    _close(result.wrench, np.concatenate([sensor_rot.T @ force, sensor_rot.T @ torque]), STEP_AGREEMENT)


@pytest.mark.parametrize("sweeps", [1, 3, PGS_SWEEPS])
@pytest.mark.parametrize("k, mu", [(1, 0.3), (2, 0.8), (3, 0.2), (4, 0.5)])
def test_diff_pgs_iterates_are_the_box_pgs_iterates(k, mu, sweeps):
    """The differentiable model's active-set guess runs the reference's projected Gauss-Seidel (same row order,
    same projection, relaxation 1, cold start): the same impulses after the same number of sweeps."""
    rng = np.random.default_rng(300 + 10 * k + sweeps)
    for problem in (well_posed_problem(rng, min(k, 2), mu), general_problem(rng, k, mu)):
        reference = BoxPGS(tol=np.finfo(float).tiny, max_iterations=sweeps).solve(problem)
        assert reference.iterations == sweeps or reference.converged  # converged: a fixed point of the sweep
        lam = _pgs(problem.W[None], problem.b[None], problem.mu[None], sweeps)[0]
        _close(lam, reference.stacked, ROUND_OFF)
