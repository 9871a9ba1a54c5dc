"""C-space virtual constraint (tight-tolerance paper §IV-B/C, eq 8, Algorithm 1 lines 7-13) with analytic h(q)."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.reference import (
    BoxPGS,
    ConeSOR,
    Contacts,
    LemkeBoxSolver,
    RigidBody,
    build_problem,
    build_problem_general,
    free_velocity,
    inverse_mass_matrix,
    velocity_after,
)
from contactkit.engine.reference.solvers import (
    SurfaceFunction,
    add_virtual_constraint,
    configuration,
    cspace_normal,
    euler_rate_matrix,
    euler_xyz,
    velocity_to_rate,
)
from contactkit.errors import InvalidInputError
from contactkit.rotations import mat_to_quat
from contactkit.state import BodyState

from ._scenes import box_body, box_corners, plane_contacts

GRAVITY = np.array([0.0, 0.0, -9.81])


def _rot_xyz(phi):
    a, b, c = phi
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    return rx @ ry @ rz


def _state(pos, phi, lin_vel=(0.0, 0.0, 0.0), ang_vel_body=(0.0, 0.0, 0.0)):
    rot = _rot_xyz(phi)
    return BodyState(
        np.asarray(pos, float), mat_to_quat(rot), np.asarray(lin_vel, float), rot @ np.asarray(ang_vel_body)
    )


def test_euler_angles_round_trip_and_rate_matrix():
    rng = np.random.default_rng(0)
    for _ in range(20):
        phi = rng.uniform([-3, -1.4, -3], [3, 1.4, 3])
        assert np.allclose(euler_xyz(_rot_xyz(phi)), phi)
        rate = rng.normal(size=3)
        h = 1e-6
        d_rot = (_rot_xyz(phi + h * rate) - _rot_xyz(phi - h * rate)) / (2 * h)
        omega_hat = _rot_xyz(phi).T @ d_rot  # Rᵀ Ṙ = S(ω_body)
        omega = np.array([omega_hat[2, 1], omega_hat[0, 2], omega_hat[1, 0]])
        assert np.allclose(euler_rate_matrix(phi) @ rate, omega, atol=1e-8)


def test_configuration_is_com_and_euler_angles():
    body = RigidBody(1.0, np.eye(3) * 0.01, np.array([0.0, 0.0, 0.05]))
    phi = np.array([0.2, -0.3, 0.5])
    q = configuration(body, _state([1.0, 2.0, 3.0], phi))
    assert np.allclose(q[:3], np.array([1.0, 2.0, 3.0]) + _rot_xyz(phi) @ [0, 0, 0.05])
    assert np.allclose(q[3:], phi)


def test_plane_for_the_com_gives_vertical_normal_and_exact_nearest_velocity():
    body = box_body(2.0, [0.05, 0.05, 0.05])
    surface = SurfaceFunction(lambda q: q[2] - 0.1, lambda q: np.array([0, 0, 1.0, 0, 0, 0]))
    c = cspace_normal(body, _state([0.0, 0.0, 0.097], [0.1, 0.2, 0.3]), surface)
    assert np.allclose(c.direction, [0, 0, 1, 0, 0, 0]) and c.h == pytest.approx(-3e-3)
    assert np.allclose(c.nearest_velocity, [0, 0, 3e-3, 0, 0, 0]) and c.converged and c.sqp_iterations == 1


def test_curved_surface_sqp_reaches_a_kkt_point():
    # h mixes position and orientation: a ball around the origin whose radius shrinks with roll.
    body = box_body(1.0, [0.05, 0.03, 0.02])

    def value(q):
        return q[:3] @ q[:3] - (0.2 - 0.1 * q[3] ** 2) ** 2

    def gradient(q):
        return np.concatenate([2 * q[:3], [0.4 * q[3] * (0.2 - 0.1 * q[3] ** 2), 0.0, 0.0]])

    state = _state([0.1, 0.05, 0.12], [0.4, -0.2, 0.1])
    c = cspace_normal(body, state, SurfaceFunction(value, gradient))
    q = configuration(body, state)
    G = velocity_to_rate(q)
    q_c = q + G @ c.nearest_velocity
    assert c.converged and abs(value(q_c)) <= 1e-12
    a = G.T @ gradient(q_c)
    mv = np.linalg.solve(inverse_mass_matrix(body), c.nearest_velocity)  # M V_C ∥ Gᵀ∇h (stationarity)
    assert abs(abs(mv @ a) - np.linalg.norm(mv) * np.linalg.norm(a)) <= 1e-6 * np.linalg.norm(mv) * np.linalg.norm(a)
    assert np.allclose(c.direction, a / np.linalg.norm(a))
    # The direction measures ḣ: N_Cᵀ V ‖Gᵀ∇h‖ = ∇hᵀ G V at the surface point, for any V.
    v = np.random.default_rng(1).normal(size=6)
    assert c.direction @ v * np.linalg.norm(a) == pytest.approx(gradient(q_c) @ G @ v)


def _falling_problem(body, state, dt=1e-3):
    p = build_problem(
        Contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0)),
        body,
        state,
        free_velocity(body, state, dt, gravity=GRAVITY),
        dt,
    )
    return p


@pytest.mark.parametrize(
    "solver", [ConeSOR(tol=1e-12), BoxPGS(tol=1e-12), LemkeBoxSolver(tol=1e-12)], ids=["sor", "pgs", "lemke"]
)
def test_virtual_constraint_stops_motion_into_the_collision_volume(solver):
    body = box_body(1.5, [0.05, 0.04, 0.03])
    # h = roll angle limit: φ₁ ≤ 0.3 rad, currently violated and rolling further with a sideways drift.
    surface = SurfaceFunction(lambda q: 0.3 - q[3], lambda q: np.array([0, 0, 0, -1.0, 0, 0]))
    state = _state([0.0, 0.0, 1.0], [0.31, 0.1, 0.2], lin_vel=[0.1, 0, 0], ang_vel_body=[2.0, 0.5, -0.3])
    constraint = cspace_normal(body, state, surface)
    p = add_virtual_constraint(_falling_problem(body, state), constraint)
    assert p.n_virtual == 1
    sol = solver.solve(p)
    assert sol.converged and sol.virtual_impulses[0] > 0.0
    v_next = velocity_after(p, sol.stacked)
    assert abs(constraint.direction @ v_next) <= 1e-10  # eq 8: v_C = 0 while λ_C > 0
    rate = velocity_to_rate(configuration(body, state)) @ v_next
    assert abs(rate[3]) <= 1e-10  # the roll rate is stopped, the rest moves freely
    assert np.allclose(v_next[:3], p.v_free[:3])


def test_virtual_constraint_is_inactive_when_free_or_separating():
    body = box_body(1.5, [0.05, 0.04, 0.03])
    surface = SurfaceFunction(lambda q: 0.3 - q[3], lambda q: np.array([0, 0, 0, -1.0, 0, 0]))
    moving_out = _state([0.0, 0.0, 1.0], [0.31, 0.0, 0.0], ang_vel_body=[-1.0, 0, 0])
    p = add_virtual_constraint(_falling_problem(body, moving_out), cspace_normal(body, moving_out, surface))
    sol = ConeSOR().solve(p)
    assert sol.converged and sol.virtual_impulses[0] == 0.0
    free = _state([0.0, 0.0, 1.0], [0.2, 0.0, 0.0], ang_vel_body=[1.0, 0, 0])
    c = cspace_normal(body, free, surface)
    base = _falling_problem(body, free)
    assert add_virtual_constraint(base, c) is base
    assert add_virtual_constraint(base, c, activation=0.2).n_virtual == 1


def test_virtual_constraint_with_contacts_all_solvers_agree():
    half = np.array([0.1, 0.08, 0.03])
    body = box_body(1.0, half)
    state = BodyState(
        np.array([0.0, 0.0, 0.03]), np.array([1.0, 0, 0, 0]), np.array([0.5, 0.0, -0.2]), np.array([0.0, 0.0, 2.0])
    )
    contacts = plane_contacts(box_corners(half, state), [0.0, 0.0, 1.0], 0.0, 0.0)
    # Yaw limited to φ₃ ≤ -1e-3: h = -1e-3 - φ₃ < 0 is violated slightly, and the box yaws further.
    surface = SurfaceFunction(lambda q: -1e-3 - q[5], lambda q: np.array([0, 0, 0, 0, 0, -1.0]))
    p = build_problem(contacts, body, state, free_velocity(body, state, 1e-3, gravity=GRAVITY), 1e-3)
    p = add_virtual_constraint(p, cspace_normal(body, state, surface))
    results = []
    for solver in (
        ConeSOR(tol=1e-12, max_iterations=5000),
        BoxPGS(tol=1e-12, max_iterations=5000),
        LemkeBoxSolver(tol=1e-12),
    ):
        sol = solver.solve(p)
        assert sol.converged and "virtual_signorini" in sol.residuals
        results.append(velocity_after(p, sol.stacked))
    assert np.allclose(results[1:], results[0], atol=1e-9)
    assert abs(results[0][5]) <= 1e-9 and abs(results[0][2]) <= 1e-9  # yaw stopped, no sinking


def test_bad_input_is_refused():
    body = box_body(1.0, [0.05, 0.04, 0.03])
    surface = SurfaceFunction(lambda q: -1.0, lambda q: np.zeros(6) + 1.0)
    with pytest.raises(InvalidInputError, match="gimbal"):
        cspace_normal(body, _state([0, 0, 0], [0.0, np.pi / 2, 0.0]), surface)
    bad = SurfaceFunction(lambda q: np.nan, lambda q: np.ones(6))
    with pytest.raises(InvalidInputError, match="surface"):
        cspace_normal(body, _state([0, 0, 0], [0.1, 0.1, 0.1]), bad)
    flat = SurfaceFunction(lambda q: -1.0, lambda q: np.zeros(6))
    with pytest.raises(InvalidInputError, match="gradient"):
        cspace_normal(body, _state([0, 0, 0], [0.1, 0.1, 0.1]), flat)
    arm = build_problem_general(
        np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 3, 4)), np.eye(4), np.zeros(4), np.zeros(0), 1e-3
    )
    constraint = cspace_normal(body, _state([0, 0, 0], [0.1, 0.1, 0.1]), surface)
    with pytest.raises(InvalidInputError, match="6-DoF"):
        add_virtual_constraint(arm, constraint)
