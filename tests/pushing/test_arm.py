"""Arm quantities from MuJoCo (pushing paper eqs 1, 14): M(q), c(q, q̇), Jacobians, IK, singularity check."""

import numpy as np
import pytest

from contactkit.pushing.arm import (
    Arm,
    ArmSingularityError,
    JointPD,
    check_singularity,
    pd_from_ee_velocity,
    pushing_rotation,
)
from contactkit.pushing.scene import PushScene

CANDLE = np.array([0.0, np.pi, 0.0, np.pi, 0.0, np.pi, 0.0])
"""Arm stretched straight up: a singular configuration."""


@pytest.fixture(scope="module")
def arm():
    return Arm(PushScene())


def _random_q(rng):
    return np.array(PushScene().home_q) + rng.normal(scale=0.5, size=7)


def test_mass_matrix_spd_and_equal_to_inverse_dynamics_columns(arm):
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, qd = _random_q(rng), rng.normal(size=7)
        M = arm.mass_matrix(q)
        assert np.abs(M - M.T).max() < 1e-14
        assert np.linalg.eigvalsh(M).min() > 0.0
        c = arm.bias(q, qd)
        # mj_rne is linear in q̈: column j of M is rne(q, q̇, e_j) - rne(q, q̇, 0) (exact difference).
        cols = np.column_stack([arm.inverse_dynamics(q, qd, e) - c for e in np.eye(7)])
        assert np.abs(M - cols).max() < 1e-12 * max(1.0, np.abs(M).max())


def test_bias_is_gravity_plus_quadratic_velocity_terms(arm):
    rng = np.random.default_rng(1)
    q, qd = _random_q(rng), rng.normal(size=7)
    g = arm.bias(q, np.zeros(7))
    assert np.abs(arm.bias(q, 2 * qd) - g - 4 * (arm.bias(q, qd) - g)).max() < 1e-10


def test_tip_jacobians_match_finite_differences(arm):
    rng = np.random.default_rng(2)
    q, eps = _random_q(rng), 1e-6
    jac = arm.tip_jacobians(q)
    fd = np.stack([(arm.tip_positions(q + eps * e) - arm.tip_positions(q - eps * e)) / (2 * eps) for e in np.eye(7)],
                  axis=-1)
    assert np.abs(jac - fd).max() < 1e-8


def test_singularity_check_fires_at_the_stretched_arm(arm):
    with pytest.raises(ArmSingularityError, match="singular"):
        check_singularity(arm.ee_jacobian(CANDLE))
    with pytest.raises(ArmSingularityError):
        pd_from_ee_velocity(arm, CANDLE, np.array([0.01, 0, 0, 0, 0, 0]), 0.01, 10.0, 1.0)
    assert check_singularity(arm.ee_jacobian(np.array(PushScene().home_q))) > 0.1


def test_ik_reaches_a_pushing_pose_and_eq14_tracks_the_twist(arm):
    q0 = np.array(PushScene().home_q)
    target = arm.ee_pose(q0)[0] + np.array([0.03, 0.02, 0.0])
    q = arm.solve_ik(q0, target, pushing_rotation(0.2))
    pos, rot = arm.ee_pose(q)
    assert np.abs(pos - target).max() < 1e-6 and np.abs(rot - pushing_rotation(0.2)).max() < 1e-5
    v = np.array([0.02, -0.01, 0.0, 0.0, 0.0, 0.1])
    assert np.abs(arm.ee_jacobian(q) @ arm.ik_velocity(q, v) - v).max() < 1e-12


def test_joint_pd_refuses_negative_gains():
    with pytest.raises(Exception, match="gains"):
        JointPD(-np.ones(7), np.ones(7), np.zeros(7), np.zeros(7))
