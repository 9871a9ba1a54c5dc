"""The compiled quaternion helper agrees with the numpy rotations module (the reference)."""

import numpy as np
import pytest

from contactkit.rotations import quat_mul, quat_to_rotvec, rotvec_to_quat
from contactkit.rotations.numba import product_rotvec


def _unit(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_product_rotvec_matches_quat_to_rotvec_of_the_product():
    rng = np.random.default_rng(3)
    for a, b in zip(_unit(rng, 200), _unit(rng, 200), strict=True):
        got = product_rotvec(*a, *b)
        want = quat_to_rotvec(quat_mul(a, b))
        np.testing.assert_allclose(got, want, atol=1e-12)
        assert np.linalg.norm(got) <= np.pi + 1e-12  # the shorter of the two equivalent rotations


@pytest.mark.parametrize("angle", [0.0, 1e-14, 1e-7, np.pi - 1e-9])
def test_small_and_half_turn_angles(angle):
    axis = np.array([0.6, -0.8, 0.0])
    q = rotvec_to_quat(angle * axis)
    np.testing.assert_allclose(product_rotvec(*q, 1.0, 0.0, 0.0, 0.0), angle * axis, atol=1e-12)
    np.testing.assert_allclose(product_rotvec(*-q, 1.0, 0.0, 0.0, 0.0), angle * axis, atol=1e-12)  # sign of q
