"""Integrators (tight-tolerance paper eq 1): PMI passivity and accuracy, semi-implicit Euler, position correction."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.reference import (
    Integrator,
    PositionCorrection,
    RigidBody,
    advance_pose,
    build_problem,
    correct_position,
    free_velocity,
    generalized_velocity,
    kinetic_energy,
)
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_angle_between, quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState

from ._scenes import box_body, box_corners, plane_contacts, random_body, random_state

PMI, SIE = Integrator.PASSIVE_MIDPOINT, Integrator.SEMI_IMPLICIT_EULER


def _fly(body, state, dt, steps, method, wrench=None, gravity=None):
    for _ in range(steps):
        v = free_velocity(body, state, dt, method, wrench, gravity)
        state = advance_pose(body, state, v, dt, method)
    return state


def test_pmi_free_flight_conserves_kinetic_energy_exactly():
    rng = np.random.default_rng(0)
    for _ in range(3):
        body = RigidBody(1.3, np.diag([0.01, 0.03, 0.035]), rng.normal(0, 0.02, 3))
        state = random_state(rng, speed=5.0)
        e0 = kinetic_energy(body, generalized_velocity(body, state))
        for _ in range(300):
            v = free_velocity(body, state, 1e-2, PMI)
            assert abs(kinetic_energy(body, v) - e0) <= 1e-12 * e0
            state = advance_pose(body, state, v, 1e-2, PMI)


def test_pmi_converges_to_torque_free_precession():
    # Axisymmetric body (I1 = I2 = It): body-frame (ω1, ω2) rotates at Ω = (I3 - It) ω3 / It. Eq 1 evaluates
    # the Coriolis matrix at ω_k (linear in ω_{k+1}), which makes PMI first-order accurate, energy-exact.
    it, i3, w3 = 0.02, 0.035, 4.0
    body = RigidBody(1.0, np.diag([it, it, i3]))
    w0 = np.array([1.0, 0.0, w3])
    t_end = 1.0
    omega = (i3 - it) * w3 / it
    exact = np.array([np.cos(omega * t_end), np.sin(omega * t_end), w3])
    errors = []
    for n in (200, 400):
        state = BodyState(np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3), w0)  # body = world at t = 0
        v = generalized_velocity(body, _fly(body, state, t_end / n, n, PMI))
        errors.append(np.linalg.norm(v[3:] - exact))
        assert np.isclose(v[3:] @ body.inertia_body @ v[3:], w0 @ body.inertia_body @ w0, rtol=1e-12)
    assert errors[1] < 0.02
    assert 1.8 < errors[0] / errors[1] < 2.2  # first order


@pytest.mark.parametrize("method", [PMI, SIE])
def test_rotation_about_a_principal_axis_is_steady(method):
    body = RigidBody(1.0, np.diag([0.01, 0.02, 0.025]))
    w = np.array([0.0, 3.0, 0.0])
    state = BodyState(np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3), w)
    out = _fly(body, state, 1e-3, 500, method)
    assert np.allclose(out.ang_vel, w, atol=1e-12)
    assert quat_angle_between(out.quat, rotvec_to_quat(w * 0.5)) < 1e-9


def test_ballistic_flight_closed_forms():
    g = np.array([0.0, 0.0, -9.81])
    body = box_body(2.0, [0.05, 0.05, 0.05], com=[0.01, 0.0, 0.0])
    state = BodyState(np.zeros(3), np.array([1.0, 0, 0, 0]), np.array([1.0, 0.0, 2.0]), np.zeros(3))
    dt, n = 1e-3, 400
    t = dt * n
    pmi = _fly(body, state, dt, n, PMI, gravity=g)
    assert np.allclose(pmi.pos, state.lin_vel * t + 0.5 * g * t * t, atol=1e-12)  # midpoint rule is exact
    sie = _fly(body, state, dt, n, SIE, gravity=g)
    assert np.allclose(sie.pos, state.lin_vel * t + 0.5 * g * t * t + 0.5 * g * dt * t, atol=1e-12)
    assert np.allclose(sie.lin_vel, pmi.lin_vel) and np.allclose(pmi.lin_vel, state.lin_vel + g * t)


def test_world_wrench_is_applied_about_the_com():
    body = RigidBody(2.0, np.eye(3) * 0.1, np.array([0.0, 0.1, 0.0]))
    state = BodyState.at_rest(np.zeros(3), rotvec_to_quat(np.array([0.3, -0.2, 0.5])))
    wrench = np.array([2.0, 0.0, 0.0, 0.0, 0.0, 0.05])
    v = free_velocity(body, state, 0.1, PMI, wrench)
    assert np.allclose(v[:3], [0.1, 0.0, 0.0])  # f/m·dt
    assert np.allclose(quat_to_mat(state.quat) @ v[3:], [0.0, 0.0, 0.05])  # τ·dt/I in the world frame


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"dt": 0.0}, "dt"),
        ({"dt": -1.0}, "dt"),
        ({"dt": np.nan}, "dt"),
        ({"wrench": np.array([np.nan, 0, 0, 0, 0, 0])}, "wrench"),
        ({"wrench": np.zeros(3)}, "wrench"),
        ({"gravity": np.array([0.0, np.inf, 0.0])}, "gravity"),
    ],
)
def test_free_velocity_rejects_bad_input(kwargs, word):
    args = {"dt": 1e-3, "method": PMI, "wrench": None, "gravity": None}
    args.update(kwargs)
    body = RigidBody(1.0, np.eye(3))
    with pytest.raises(InvalidInputError, match=word):
        free_velocity(body, BodyState.at_rest(np.zeros(3)), args["dt"], args["method"], args["wrench"], args["gravity"])


def test_bad_state_and_velocity_are_refused():
    body = RigidBody(1.0, np.eye(3))
    with pytest.raises(InvalidInputError, match="quat"):
        free_velocity(body, BodyState.at_rest(np.zeros(3), [1.0, 1.0, 0.0, 0.0]), 1e-3)
    with pytest.raises(InvalidInputError, match="ang_vel"):
        free_velocity(body, BodyState(np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3), np.full(3, np.nan)), 1e-3)
    with pytest.raises(InvalidInputError, match="v_next"):
        advance_pose(body, BodyState.at_rest(np.zeros(3)), np.full(6, np.nan), 1e-3)


@pytest.mark.parametrize("fraction", [1.0, 0.5])
def test_position_correction_removes_penetration_without_changing_the_velocity(fraction):
    half = np.array([0.1, 0.08, 0.03])
    body = box_body(1.0, half)
    rng = np.random.default_rng(1)
    tilt = rotvec_to_quat(np.array([0.0, 0.02, 0.0]))
    state = BodyState(np.array([0.0, 0.0, 0.03 - 2e-3]), tilt, rng.normal(0, 0.1, 3), rng.normal(0, 0.5, 3))
    contacts = plane_contacts(box_corners(half, state), [0.0, 0.0, 1.0], 0.0, 0.5)
    problem = build_problem(contacts, body, state, generalized_velocity(body, state), 1e-3)
    config = PositionCorrection(fraction=fraction, slop=1e-5)
    out = correct_position(body, state, problem, contacts.distances, config)
    touching = box_corners(half, state)[:, 2] <= 1e-3
    before, after = contacts.distances, box_corners(half, out)[touching, 2]
    target = before + fraction * np.maximum(-before - config.slop, 0.0)
    assert np.all(after >= target - 1e-7)  # every corner lifted to its target (first order in the tilt)
    assert after.min() < target.max() + 1e-7  # and no further than needed: some corner sits on its target
    assert np.allclose(generalized_velocity(body, out), generalized_velocity(body, state), rtol=1e-14, atol=0)
    assert kinetic_energy(body, generalized_velocity(body, out)) == pytest.approx(
        kinetic_energy(body, generalized_velocity(body, state)), rel=1e-12
    )


def test_position_correction_leaves_separated_contacts_alone():
    body = random_body(np.random.default_rng(2))
    state = BodyState.at_rest(np.zeros(3))
    contacts = plane_contacts(box_corners([0.1, 0.1, 0.1], state), [0.0, 0.0, 1.0], -0.1 - 1e-4, 0.5)
    problem = build_problem(contacts, body, state, np.zeros(6), 1e-3)
    assert correct_position(body, state, problem, contacts.distances) is state
    with pytest.raises(InvalidInputError, match="distances"):
        correct_position(body, state, problem, np.zeros(contacts.count + 1))
