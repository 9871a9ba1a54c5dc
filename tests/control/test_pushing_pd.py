"""PD-only baseline (pushing paper eqs 14–15, Algorithm 1 lines 10–11): with the exact Jacobian of a planar
arm the IK joint velocities reproduce the desired end-effector velocity (and are the minimum-norm ones for a
redundant task), the torques equal the PD law computed by hand, and a singular arm is reported with finite,
bounded commands."""

import numpy as np
import pytest

from contactkit.control.pushing_pd import (
    MAX_DAMPING,
    SINGULAR_TOL,
    PDGains,
    damped_pinv,
    pd_torque,
    planar_task_jacobian,
)
from contactkit.errors import InvalidInputError

LINKS = np.array([0.4, 0.3, 0.2])  # [m]


def fk(q):
    """End-effector (x, y, φ) of a planar 3-link arm."""
    phi = np.cumsum(q)
    return np.array([LINKS @ np.cos(phi), LINKS @ np.sin(phi), phi[-1]])


def jacobian(q):
    """Exact (3, 3) Jacobian of :func:`fk`: column j moves every link from j on."""
    phi = np.cumsum(q)
    J = np.zeros((3, 3))
    for j in range(3):
        J[0, j] = -(LINKS[j:] * np.sin(phi[j:])).sum()
        J[1, j] = (LINKS[j:] * np.cos(phi[j:])).sum()
        J[2, j] = 1.0
    return J


GAINS = PDGains(kp=(40.0, 30.0, 20.0), kv=(4.0, 3.0, 2.0))


def test_jacobian_is_exact():
    q = np.array([0.3, -0.7, 1.1])
    eps = 1e-6
    fd = np.stack([(fk(q + eps * e) - fk(q - eps * e)) / (2 * eps) for e in np.eye(3)], -1)
    np.testing.assert_allclose(jacobian(q), fd, atol=1e-9)


def test_ik_reproduces_the_desired_velocity_square_and_redundant():
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.uniform(-2, 2, 3)
        q[1:] = np.sign(q[1:]) * np.clip(np.abs(q[1:]), 0.3, None)  # away from the stretched singularity
        v = rng.normal(size=3) * 0.1
        cmd = pd_torque(jacobian(q), v, q, np.zeros(3), GAINS, 0.01)
        assert not cmd.singular and cmd.damping == 0
        np.testing.assert_allclose(jacobian(q) @ cmd.qd_des, v, atol=1e-10)
        eps = 1e-6  # the arm moved along q̇_des moves its end-effector at v
        np.testing.assert_allclose((fk(q + eps * cmd.qd_des) - fk(q - eps * cmd.qd_des)) / (2 * eps), v, atol=1e-8)
        # position-only task: 2 rows, 3 joints (redundant): exact and minimum norm (no null-space motion)
        Jp = jacobian(q)[:2]
        red = pd_torque(Jp, v[:2], q, np.zeros(3), GAINS, 0.01)
        np.testing.assert_allclose(Jp @ red.qd_des, v[:2], atol=1e-10)
        null = np.linalg.svd(Jp)[2][-1]
        assert abs(null @ red.qd_des) < 1e-10
        np.testing.assert_allclose(red.qd_des, np.linalg.lstsq(Jp, v[:2], rcond=None)[0], atol=1e-10)


def test_torque_equals_the_pd_law_by_hand():
    q, qd, v, dt = np.array([0.1, 0.2, 0.3]), np.array([0.5, -0.5, 1.0]), np.array([1.0, 2.0, -1.0]), 0.01
    cmd = pd_torque(np.eye(3), v, q, qd, GAINS, dt)  # J = I: q̇_des = v, q_des = q + v dt
    # τ = K_p v dt + K_v (v − q̇): (40·0.01 + 4·0.5, 30·0.02 + 3·2.5, 20·(−0.01) + 2·(−2))
    np.testing.assert_allclose(cmd.tau, [2.4, 8.1, -4.2], atol=1e-12)
    np.testing.assert_allclose(cmd.q_des, q + v * dt, atol=1e-15)
    ref = pd_torque(np.eye(3), v, q, qd, GAINS, dt, q_des=q + [0.1, 0.0, -0.1])
    np.testing.assert_allclose(ref.tau, [40 * 0.1 + 2.0, 7.5, -20 * 0.1 - 4.0], atol=1e-12)
    lim = pd_torque(np.eye(3), v, q, qd, GAINS, dt, torque_limit=(3.0, 3.0, 3.0))
    np.testing.assert_allclose(lim.tau, [2.4, 3.0, -3.0])
    assert lim.saturated


def test_singular_arm_is_reported_with_finite_bounded_commands():
    q = np.zeros(3)  # stretched out: the x row of the position Jacobian vanishes
    Jp = jacobian(q)[:2]
    v = np.array([0.1, 0.0])  # asks for motion along the arm, impossible
    cmd = pd_torque(Jp, v, q, np.zeros(3), GAINS, 0.01)
    assert cmd.singular and cmd.sigma_min < 1e-12 and cmd.damping == pytest.approx(MAX_DAMPING)
    assert np.isfinite(cmd.tau).all()
    assert np.linalg.norm(cmd.qd_des) <= np.linalg.norm(v) / (2 * MAX_DAMPING) + 1e-12
    # just outside the tolerance the exact pseudo-inverse is used
    pinv, smin, lam = damped_pinv(np.diag([1.0, 2 * SINGULAR_TOL]))
    assert lam == 0 and smin == pytest.approx(2 * SINGULAR_TOL)
    np.testing.assert_allclose(pinv, np.diag([1.0, 1 / (2 * SINGULAR_TOL)]))
    _, _, lam_in = damped_pinv(np.diag([1.0, 0.5 * SINGULAR_TOL]))
    assert 0 < lam_in < MAX_DAMPING


def test_batch_equals_loop_and_planar_rows():
    rng = np.random.default_rng(1)
    qs = rng.uniform(-1.5, 1.5, (5, 3))
    Js = np.stack([jacobian(q) for q in qs])
    vs, qds = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    batch = pd_torque(Js, vs, qs, qds, GAINS, 0.01)
    for i in range(5):
        one = pd_torque(Js[i], vs[i], qs[i], qds[i], GAINS, 0.01)
        np.testing.assert_allclose(batch.tau[i], one.tau, atol=1e-12)
    jacp, jacr = rng.normal(size=(3, 7)), rng.normal(size=(3, 7))
    np.testing.assert_array_equal(planar_task_jacobian(jacp, jacr), np.stack([jacp[0], jacp[1], jacr[2]]))


def test_bad_input_is_refused():
    q = np.zeros(3)
    with pytest.raises(InvalidInputError, match="NaN"):
        pd_torque(np.eye(3), [np.nan, 0, 0], q, q, GAINS, 0.01)
    with pytest.raises(InvalidInputError, match="do not match"):
        pd_torque(np.eye(3), np.zeros(2), q, q, GAINS, 0.01)
    with pytest.raises(InvalidInputError, match="dt"):
        pd_torque(np.eye(3), np.zeros(3), q, q, GAINS, 0.0)
    with pytest.raises(InvalidInputError, match="finite"):
        damped_pinv(np.full((2, 3), np.inf))
    with pytest.raises(InvalidInputError, match="gains"):
        PDGains(kp=(1.0, -1.0), kv=(1.0, 1.0))
