"""Quaternion helpers against scipy's Rotation (an independent implementation)."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from contactkit import rotations as R


def _random_quats(n, seed=0):
    q = Rotation.random(n, random_state=seed).as_quat()  # (x, y, z, w)
    return R.quat_normalize(np.concatenate([q[:, 3:], q[:, :3]], axis=1))


def test_matrix_matches_scipy_and_back():
    q = _random_quats(50)
    ref = Rotation.from_quat(np.concatenate([q[:, 1:], q[:, :1]], axis=1)).as_matrix()
    assert R.quat_to_mat(q) == pytest.approx(ref, abs=1e-12)
    assert R.mat_to_quat(R.quat_to_mat(q)) == pytest.approx(q, abs=1e-12)


def test_product_composes_rotations():
    a, b = _random_quats(20, 1), _random_quats(20, 2)
    assert R.quat_to_mat(R.quat_mul(a, b)) == pytest.approx(R.quat_to_mat(a) @ R.quat_to_mat(b), abs=1e-12)


def test_rotvec_round_trip_including_tiny_angles():
    phi = np.concatenate([np.random.default_rng(0).normal(0, 1, (20, 3)), [[1e-14, 0, 0], [0, 0, 0]]])
    assert R.quat_to_rotvec(R.rotvec_to_quat(phi)) == pytest.approx(phi, abs=1e-12)
    ref = Rotation.from_rotvec(phi[:20]).as_matrix()
    assert R.quat_to_mat(R.rotvec_to_quat(phi[:20])) == pytest.approx(ref, abs=1e-12)


def test_cross_and_angle():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(10, 3)), rng.normal(size=(10, 3))
    assert R.cross(a, b) == pytest.approx(np.cross(a, b), abs=1e-14)
    q = _random_quats(5)
    turn = R.rotvec_to_quat(np.array([0.0, 0.3, 0.0]))
    assert R.quat_angle_between(q, R.quat_mul(turn, q)) == pytest.approx(np.full(5, 0.3), abs=1e-9)
