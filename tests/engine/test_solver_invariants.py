"""Physical invariants on every solver: energy through contact (PMI), contact order, rigid rotation."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.reference import (
    BoxPGS,
    ConeSOR,
    Integrator,
    LemkeBoxSolver,
    build_problem,
    contact_wrench,
    free_velocity,
    generalized_velocity,
    kinetic_energy,
    step_rigid_body,
    velocity_after,
)
from contactkit.engine.reference.solvers import residuals
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState

from ._scenes import box_body, box_corners, general_problem, plane_contacts

TOL = 1e-12
GRAVITY = np.array([0.0, 0.0, -9.81])
SOLVERS = [
    pytest.param(ConeSOR(tol=TOL, max_iterations=20000), id="cone_sor"),
    pytest.param(BoxPGS(tol=TOL, max_iterations=20000), id="box_pgs"),
    pytest.param(LemkeBoxSolver(tol=TOL), id="lemke"),
]
HALF = np.array([0.1, 0.08, 0.03])


def _box_scene(lin_vel, ang_vel, quat=(1.0, 0.0, 0.0, 0.0), tangent=None):
    body = box_body(1.0, HALF)
    state = BodyState(
        np.array([0.0, 0.0, HALF[2]]), np.asarray(quat, float), np.asarray(lin_vel, float), np.asarray(ang_vel, float)
    )
    contacts = plane_contacts(box_corners(HALF, state), [0.0, 0.0, 1.0], 0.0, 0.5, margin=0.01, tangent=tangent)
    return body, state, contacts


@pytest.mark.parametrize("solver", SOLVERS)
def test_kinetic_energy_never_increases_through_contact_with_pmi(solver):
    rng = np.random.default_rng(0)
    dt, decreased = 1e-3, 0
    for _ in range(4):
        half = rng.uniform(0.02, 0.1, 3)
        body = box_body(rng.uniform(0.2, 2.0), half, com=rng.normal(0.0, 0.005, 3))
        quat = rotvec_to_quat(rng.normal(0.0, 0.6, 3))
        corners = box_corners(half, BodyState.at_rest(np.zeros(3), quat), body.com_body)
        pos = np.array([0.0, 0.0, 1e-4 - corners[:, 2].min()])
        state = BodyState(pos, quat, rng.normal(0.0, 0.5, 3) - [0, 0, 1.0], rng.normal(0.0, 5.0, 3))
        mu = rng.uniform(0.0, 1.0)
        energy = kinetic_energy(body, generalized_velocity(body, state))
        for _ in range(40):
            contacts = plane_contacts(box_corners(half, state, body.com_body), [0.0, 0.0, 1.0], 0.0, mu, margin=0.02)
            out = step_rigid_body(body, state, contacts, dt, solver, Integrator.PASSIVE_MIDPOINT)
            assert out.solution.converged, out.solution.residuals
            new = kinetic_energy(body, generalized_velocity(body, out.state))
            assert new <= energy * (1.0 + 1e-9)
            decreased += new < energy * (1.0 - 1e-6)
            state, energy = out.state, new
    assert decreased >= 4  # contact did happen and dissipated


@pytest.mark.parametrize("solver", SOLVERS)
def test_unique_problems_are_invariant_to_contact_order(solver):
    rng = np.random.default_rng(1)
    for _ in range(6):
        p = general_problem(rng, 3, rng.uniform(0.0, 0.5))
        order = rng.permutation(3)
        rows = (3 * order[:, None] + np.arange(3)).reshape(-1)
        q = type(p)(
            p.J[rows],
            p.M_inv,
            p.W[np.ix_(rows, rows)],
            p.v_free,
            p.b[rows],
            p.mu[order],
            p.frames[order],
            p.points[order],
            p.dt,
        )
        a, b = solver.solve(p), solver.solve(q)
        assert a.converged and b.converged
        assert np.allclose(a.impulses[order], b.impulses, atol=1e-9 * max(1.0, np.abs(a.impulses).max()))


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(
    "lin_vel, ang_vel", [([1.0, 0.5, 0.0], [0, 0, 0]), ([0.3, 0.0, -0.5], [0, 0, 0]), ([0, 0, 0], [0, 0, 0])]
)
def test_box_on_plane_motion_is_invariant_to_contact_order(solver, lin_vel, ang_vel):
    body, state, contacts = _box_scene(lin_vel, ang_vel, tangent=[1.0, 0.0, 0.0])
    v_free = free_velocity(body, state, 1e-3, gravity=GRAVITY)
    rng = np.random.default_rng(2)
    results = []
    for order in (np.arange(contacts.count), rng.permutation(contacts.count), rng.permutation(contacts.count)):
        p = build_problem(contacts.permuted(order), body, state, v_free, 1e-3)
        sol = solver.solve(p)
        assert sol.converged
        results.append(
            np.concatenate([velocity_after(p, sol.stacked), contact_wrench(p, sol.impulses, state.pos) * 1e-3])
        )
    assert np.allclose(results[1:], results[0], atol=1e-9)


def test_spinning_box_cone_solutions_depend_on_order_but_all_are_valid():
    # Four coplanar corners make the Coulomb problem statically indeterminate; with spin, different normal
    # distributions give different friction torques, so Gauss-Seidel's order selects among valid solutions.
    body, state, contacts = _box_scene([1.0, 0.5, 0.0], [0.0, 0.0, 3.0])
    v_free = free_velocity(body, state, 1e-3, gravity=GRAVITY)
    rng = np.random.default_rng(3)
    solver = ConeSOR(tol=TOL, max_iterations=20000)
    for order in (np.arange(contacts.count), *(rng.permutation(contacts.count) for _ in range(4))):
        p = build_problem(contacts.permuted(order), body, state, v_free, 1e-3)
        sol = solver.solve(p)
        assert sol.converged and max(residuals(p, sol.stacked, solver.model).values()) <= TOL
        assert np.all(sol.velocity[::3] >= -1e-9)  # no corner moves into the plane


def _rotate_scene(rot_q, body, state, contacts):
    rot = quat_to_mat(rot_q)
    moved = BodyState(rot @ state.pos, quat_mul(rot_q, state.quat), rot @ state.lin_vel, rot @ state.ang_vel)
    tangents = None if contacts.tangents is None else contacts.tangents @ rot.T
    rotated = type(contacts)(
        contacts.points @ rot.T, contacts.normals @ rot.T, contacts.distances, contacts.friction, tangents
    )
    return moved, rotated


@pytest.mark.parametrize("solver", SOLVERS)
def test_results_are_invariant_to_a_rigid_rotation_of_the_whole_problem(solver):
    body, state, contacts = _box_scene(
        [1.0, 0.5, -0.2], [0.3, -0.2, 3.0], rotvec_to_quat([0.0, 0.0, 0.0]), [0.3, 1.0, 0.0]
    )
    rot_q = rotvec_to_quat(np.array([0.4, -1.1, 2.0]))
    rot = quat_to_mat(rot_q)
    moved, rotated = _rotate_scene(rot_q, body, state, contacts)
    a = step_rigid_body(body, state, contacts, 1e-3, solver, gravity=GRAVITY)
    b = step_rigid_body(body, moved, rotated, 1e-3, solver, gravity=rot @ GRAVITY)
    assert a.solution.converged and b.solution.converged
    assert np.allclose(a.solution.impulses, b.solution.impulses, atol=1e-9)
    assert np.allclose(rot @ a.state.pos, b.state.pos, atol=1e-12)
    assert np.allclose(rot @ a.state.lin_vel, b.state.lin_vel, atol=1e-9)
    assert np.allclose(rot @ a.state.ang_vel, b.state.ang_vel, atol=1e-9)
    assert np.allclose(np.concatenate([rot @ a.wrench[:3], rot @ a.wrench[3:]]), b.wrench, atol=1e-6)
