"""Contact problem construction: validation, frames, Jacobians, Delassus operator, wrench helper."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.reference import (
    Contacts,
    RigidBody,
    body_point_jacobians,
    build_problem,
    build_problem_general,
    contact_frames,
    contact_wrench,
    displace,
    generalized_velocity,
    inverse_mass_matrix,
    speculative_bias,
    state_with_velocity,
    velocity_after,
    with_unilateral_rows,
    wrench_from_generalized,
)
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_to_mat
from contactkit.state import BodyState

from ._scenes import random_body, random_state


def _one_contact(**over):
    args = dict(points=[[0.0, 0.0, 0.0]], normals=[[0.0, 0.0, 1.0]], distances=[0.0], friction=[0.5])
    args.update(over)
    return Contacts(**args)


@pytest.mark.parametrize(
    "over, word",
    [
        ({"points": [[np.nan, 0.0, 0.0]]}, "points"),
        ({"normals": [[0.0, 0.0, 2.0]]}, "normals"),
        ({"distances": [np.inf]}, "distances"),
        ({"friction": [-0.1]}, "friction"),
        ({"friction": [0.1, 0.2]}, "friction"),
        ({"points": [0.0, 0.0, 0.0]}, "points"),
        ({"tangents": [[0.0, 0.0, 1.0]]}, "parallel"),
    ],
)
def test_contacts_reject_bad_input(over, word):
    with pytest.raises(InvalidInputError, match=word):
        _one_contact(**over)


@pytest.mark.parametrize(
    "mass, inertia, word",
    [
        (0.0, np.eye(3), "mass"),
        (-1.0, np.eye(3), "mass"),
        (np.nan, np.eye(3), "mass"),
        (1.0, np.diag([1.0, 1.0, -1.0]), "positive definite"),
        (1.0, np.zeros((3, 3)), "positive definite"),
        (1.0, np.array([[1.0, 0.5, 0], [0.0, 1, 0], [0, 0, 1]]), "symmetric"),
        (1.0, np.diag([1.0, 1.0, 3.0]), "triangle"),
        (1.0, np.full((3, 3), np.nan), "finite"),
    ],
)
def test_rigid_body_rejects_bad_mass_properties(mass, inertia, word):
    with pytest.raises(InvalidInputError, match=word):
        RigidBody(mass, inertia)


def test_frames_are_right_handed_orthonormal_and_follow_given_tangents():
    rng = np.random.default_rng(1)
    n = rng.normal(size=(50, 3))
    n[0] = [0.0, 0.0, -1.0 + 1e-12]
    n[1] = [0.0, 0.0, 1.0]
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    for frames in (contact_frames(n), contact_frames(n, rng.normal(size=(50, 3)))):
        assert np.allclose(frames @ frames.transpose(0, 2, 1), np.eye(3), atol=1e-12)
        assert np.allclose(np.linalg.det(frames), 1.0)
        assert np.allclose(frames[:, 0], n)
    t = rng.normal(size=(50, 3))
    t1 = contact_frames(n, t)[:, 1]
    assert np.all(np.sum(t1 * t, axis=1) > 0.0)  # t1 is the projection of t, not its opposite
    assert np.allclose(np.cross(t1, t - np.sum(t * n, 1, keepdims=True) * n), 0.0, atol=1e-12)


def test_point_jacobians_match_finite_differences_of_the_motion():
    rng = np.random.default_rng(2)
    body, state = random_body(rng), random_state(rng)
    points = state.pos + rng.normal(0.0, 0.2, (5, 3))
    rot = quat_to_mat(state.quat)
    local = (points - state.pos) @ rot  # body-frame coordinates of the body-fixed points
    jac = body_point_jacobians(body, state, points)
    h = 1e-7
    for j in range(6):
        delta = np.zeros(6)
        delta[j] = h
        plus, minus = displace(body, state, delta), displace(body, state, -delta)
        moved = (plus.pos + local @ quat_to_mat(plus.quat).T - minus.pos - local @ quat_to_mat(minus.quat).T) / (2 * h)
        assert np.allclose(moved, jac[:, :, j], atol=1e-7)


def test_generalized_velocity_round_trip_with_offset_com():
    rng = np.random.default_rng(3)
    body, state = random_body(rng), random_state(rng)
    v = generalized_velocity(body, state)
    back = state_with_velocity(body, state, v)
    assert np.allclose(back.lin_vel, state.lin_vel) and np.allclose(back.ang_vel, state.ang_vel)
    # v_com is the velocity of the COM point: compare with the point Jacobian at the COM.
    com = state.pos + quat_to_mat(state.quat) @ body.com_body
    assert np.allclose(body_point_jacobians(body, state, com[None])[0] @ v, v[:3])


def test_delassus_is_symmetric_psd_and_reproduces_the_velocity_change():
    rng = np.random.default_rng(4)
    body, state = random_body(rng), random_state(rng)
    k = 5
    contacts = Contacts(
        state.pos + rng.normal(0, 0.1, (k, 3)),
        np.tile([0.0, 0.0, 1.0], (k, 1)),
        rng.uniform(-1e-3, 1e-3, k),
        np.full(k, 0.3),
    )
    v_free = rng.normal(size=6)
    p = build_problem(contacts, body, state, v_free, 1e-3)
    assert p.J.shape == (3 * k, 6) and p.W.shape == (3 * k, 3 * k)
    assert np.allclose(p.W, p.W.T) and np.linalg.eigvalsh(p.W).min() > -1e-12
    lam = rng.normal(size=3 * k)
    assert np.allclose(
        p.J @ velocity_after(p, lam),
        p.W @ lam + p.b - np.repeat(speculative_bias(contacts.distances, 1e-3), 3) * np.tile([1, 0, 0], k),
    )
    # Each contact block of W is the inverse effective mass of the point: J_i M⁻¹ J_iᵀ in the frame.
    jac = body_point_jacobians(body, state, contacts.points)
    block = (
        contact_frames(contacts.normals)[0]
        @ jac[0]
        @ inverse_mass_matrix(body)
        @ jac[0].T
        @ contact_frames(contacts.normals)[0].T
    )
    assert np.allclose(p.W[:3, :3], block)


def test_speculative_bias_only_for_positive_gaps():
    assert np.allclose(speculative_bias(np.array([-1e-3, 0.0, 2e-3]), 1e-3), [0.0, 0.0, 2.0])


def test_general_form_with_a_point_mass_jacobian():
    # A 3-DoF point mass (n = 3, J_p = I): a single contact is the textbook particle-on-plane problem.
    m, dt = 2.0, 1e-2
    p = build_problem_general(
        points=np.zeros((1, 3)),
        frames=contact_frames(np.array([[0.0, 0.0, 1.0]])),
        point_jacobians=np.eye(3)[None],
        M_inv=np.eye(3) / m,
        v_free=np.array([1.0, 0.0, -3.0]),
        mu=np.array([0.2]),
        dt=dt,
    )
    assert np.allclose(p.W, np.eye(3) / m)
    assert np.allclose(p.b[0], -3.0)


@pytest.mark.parametrize("dt", [0.0, -1e-3, np.nan])
def test_bad_time_step_is_refused(dt):
    with pytest.raises(InvalidInputError, match="dt"):
        build_problem(_one_contact(), RigidBody(1.0, np.eye(3)), BodyState.at_rest([0.0, 0.0, 0.0]), np.zeros(6), dt)


def test_bad_state_and_velocity_are_refused():
    body = RigidBody(1.0, np.eye(3))
    bad = BodyState.at_rest([0.0, 0.0, np.nan])
    with pytest.raises(InvalidInputError, match="pos"):
        build_problem(_one_contact(), body, bad, np.zeros(6), 1e-3)
    with pytest.raises(InvalidInputError, match="v_free"):
        build_problem(_one_contact(), body, BodyState.at_rest([0.0, 0.0, 0.0]), np.full(6, np.nan), 1e-3)
    batch = BodyState.at_rest(np.zeros((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1)))
    with pytest.raises(InvalidInputError, match="batch"):
        build_problem(_one_contact(), body, batch, np.zeros(6), 1e-3)


def test_unilateral_rows_extend_the_problem():
    body = RigidBody(2.0, np.eye(3) * 0.1)
    p = build_problem(_one_contact(), body, BodyState.at_rest([0.0, 0.0, 0.05]), np.array([0, 0, -1.0, 0, 0, 0]), 1e-3)
    row = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    q = with_unilateral_rows(p, row)
    assert q.n_virtual == 1 and q.n_contacts == 1 and q.W.shape == (4, 4)
    assert np.isclose(q.W[3, 3], 0.5) and np.isclose(q.b[3], -1.0)


def test_contact_wrench_is_sum_of_point_forces_and_moments():
    rng = np.random.default_rng(5)
    body, state = random_body(rng), random_state(rng)
    k = 3
    contacts = Contacts(rng.normal(size=(k, 3)), np.tile([0.0, 0.0, 1.0], (k, 1)), np.zeros(k), np.full(k, 1.0))
    dt = 2e-3
    p = build_problem(contacts, body, state, np.zeros(6), dt)
    lam = rng.normal(size=(k, 3))
    about = rng.normal(size=3)
    forces = np.einsum("kab,ka->kb", p.frames, lam) / dt
    w = contact_wrench(p, lam, about)
    assert np.allclose(w[:3], forces.sum(0))
    assert np.allclose(w[3:], sum(np.cross(contacts.points[i] - about, forces[i]) for i in range(k)))
    # The same wrench from the generalized impulse Jᵀλ (checks the Jacobian's torque convention).
    assert np.allclose(wrench_from_generalized(body, state, p.J.T @ lam.reshape(-1) / dt, about), w)
