"""Feature maps: the layout of eq 18, the attitude error, the FeatureMap protocol, end to end learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.linear import (
    POSE_FEATURE_DIM,
    FeatureMap,
    LinearForceModel,
    PoseCommandFeatures,
    attitude_error,
)
from contactkit.rotations import quat_to_mat, rotvec_to_quat


def random_rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return quat_to_mat(q / np.linalg.norm(q, axis=-1, keepdims=True))


def test_pose_features_layout_of_eq18():
    rng = np.random.default_rng(0)
    r, r_des, phi = rng.normal(size=(3, 5, 3))
    R = random_rotations(rng, 5)
    w = PoseCommandFeatures()(r, R, r_des, phi)
    assert w.shape == (5, 19) and PoseCommandFeatures().dim == POSE_FEATURE_DIM == 19
    np.testing.assert_array_equal(w[:, 0:3], r)
    for col in range(3):  # vec(R) stacks the columns of R
        np.testing.assert_array_equal(w[:, 3 + 3 * col : 6 + 3 * col], R[:, :, col])
    np.testing.assert_array_equal(w[:, 12:15], r_des)
    np.testing.assert_array_equal(w[:, 15:18], phi)
    np.testing.assert_array_equal(w[:, 18], 1.0)
    wt = PoseCommandFeatures()(*(torch.as_tensor(x) for x in (r, R, r_des, phi)))
    assert isinstance(wt, torch.Tensor)
    np.testing.assert_array_equal(wt.numpy(), w)


def test_pose_features_reject_wrong_shapes():
    with pytest.raises(InvalidInputError, match="R"):
        PoseCommandFeatures()(np.zeros(3), np.zeros((3, 4)), np.zeros(3), np.zeros(3))
    with pytest.raises(InvalidInputError, match="phi"):
        PoseCommandFeatures()(np.zeros((2, 3)), np.zeros((2, 3, 3)), np.zeros((2, 3)), np.zeros((3, 3)))


def test_attitude_error_inverts_R_exp_phi():
    rng = np.random.default_rng(1)
    R = random_rotations(rng, 20)
    phi = rng.normal(size=(20, 3))
    phi *= (rng.uniform(0.0, 3.0, 20) / np.linalg.norm(phi, axis=-1))[:, None]  # angles below π
    R_des = R @ quat_to_mat(rotvec_to_quat(phi))
    np.testing.assert_allclose(attitude_error(R, R_des), phi, atol=1e-9)
    out = attitude_error(torch.as_tensor(R), torch.as_tensor(R_des))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), phi, atol=1e-9)
    np.testing.assert_allclose(attitude_error(R, R), 0.0, atol=1e-12)


class Quadratic:
    """A user feature map: position, its squares and a bias (any callable with ``dim``)."""

    dim = 7

    def __call__(self, r, R, r_des, phi):
        return np.concatenate([r, r**2, np.ones_like(r[..., :1])], axis=-1)


def test_feature_map_protocol_accepts_user_maps():
    assert isinstance(PoseCommandFeatures(), FeatureMap)
    assert isinstance(Quadratic(), FeatureMap)
    assert not isinstance(lambda r, R, r_des, phi: r, FeatureMap)  # no dim


@pytest.mark.parametrize("fmap", [PoseCommandFeatures(), Quadratic()], ids=["eq18", "user"])
def test_contact_model_linear_in_features_is_learned_exactly(fmap):
    """Noise-free wrenches that are linear in the features: the learned model predicts them exactly."""
    rng = np.random.default_rng(2)
    n = 300
    r = rng.normal(size=(n, 3)) * 0.01
    r_des = r + rng.normal(size=(n, 3)) * 0.005
    R = random_rotations(rng, n)
    phi = attitude_error(R, random_rotations(rng, n))
    W = fmap(r, R, r_des, phi)
    G_true = rng.normal(size=(6, fmap.dim)) * 50.0
    model = LinearForceModel.fit(W, W @ G_true.T, R=np.diag([1e-2] * 3 + [1e-4] * 3), b=1e-6)
    W_test = fmap(r[:10] * 2.0, R[:10], r_des[:10], phi[:10])
    pred = model.predict(W_test)
    np.testing.assert_allclose(pred, W_test @ G_true.T, rtol=1e-7, atol=1e-7 * np.abs(pred).max())
