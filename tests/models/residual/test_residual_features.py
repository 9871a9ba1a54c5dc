"""Residual features and targets: exact inverse, zero correction, invariance to rotating the whole scene."""

import numpy as np
import torch

from contactkit.models.residual.features import FEATURE_DIM, HISTORY, TARGET_DIM, apply_correction, features, targets
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat


def _states(rng, n, shape=()):
    q = rotvec_to_quat(rng.normal(0, 0.4, (*shape, n, 3)))
    return np.concatenate([rng.normal(0, 0.02, (*shape, n, 3)), q, rng.normal(0, 0.05, (*shape, n, 3)),
                           rng.normal(0, 0.3, (*shape, n, 3))], axis=-1)


def _case(seed=0, n=7):
    rng = np.random.default_rng(seed)
    hist = np.stack([_states(rng, n) for _ in range(HISTORY)], axis=1)
    cmd, prev, bbw, reading = (rng.normal(0, 0.01, (n, 6)) for _ in range(4))
    bb, truth = _states(rng, n), _states(rng, n)
    ref_pos, ref_quat = rng.normal(0, 0.05, (n, 3)), rotvec_to_quat(rng.normal(0, 1.0, (n, 3)))
    return hist, cmd, prev, bb, bbw, truth, reading, ref_pos, ref_quat


def _t(*xs):
    return [torch.as_tensor(x, dtype=torch.float64) for x in xs]


def test_apply_correction_inverts_targets():
    hist, cmd, prev, bb, bbw, truth, reading, _, _ = _case()
    y = targets(*_t(hist[:, -1], bb, bbw, truth, reading))
    assert y.shape == (7, TARGET_DIM)
    state, wrench = apply_correction(*_t(hist[:, -1], bb, bbw), y)
    sign = np.sign(state[:, 3].numpy() * truth[:, 3])[:, None]  # q and -q are one rotation
    np.testing.assert_allclose(state[:, :3].numpy(), truth[:, :3], atol=1e-12)
    np.testing.assert_allclose(state[:, 3:7].numpy() * sign, truth[:, 3:7], atol=1e-12)
    np.testing.assert_allclose(state[:, 7:].numpy(), truth[:, 7:], atol=1e-12)
    np.testing.assert_allclose(wrench.numpy(), reading, atol=1e-12)


def test_zero_correction_is_the_backbone_bit_for_bit():
    hist, _, _, bb, bbw, _, _, _, _ = _case(1)
    state, wrench = apply_correction(*_t(hist[:, -1], bb, bbw), torch.zeros(7, TARGET_DIM, dtype=torch.float64))
    kept = [0, 1, 2, 7, 8, 9, 10, 11, 12]  # position and velocities: added to zero, exactly the backbone's
    np.testing.assert_array_equal(state.numpy()[:, kept], bb[:, kept])
    np.testing.assert_allclose(state.numpy()[:, 3:7], bb[:, 3:7], atol=1e-15)
    np.testing.assert_array_equal(wrench.numpy(), bbw)


def _rotate_world(rot_q, hist, cmd, prev, bb, truth, ref_pos, ref_quat):
    """Every world-frame quantity turned by ``rot_q`` (sensor-frame readings are unchanged)."""
    R = quat_to_mat(rot_q)

    def state(s):
        out = s.copy()
        for sl in (slice(0, 3), slice(7, 10), slice(10, 13)):
            out[..., sl] = s[..., sl] @ R.T
        out[..., 3:7] = quat_mul(np.broadcast_to(rot_q, s[..., 3:7].shape), s[..., 3:7])
        return out

    def wrench(c):
        return np.concatenate([c[:, :3] @ R.T, c[:, 3:] @ R.T], axis=-1)

    return (state(hist), wrench(cmd), wrench(prev), state(bb), state(truth), ref_pos @ R.T,
            quat_mul(np.broadcast_to(rot_q, ref_quat.shape), ref_quat))


def test_features_and_targets_do_not_change_when_the_whole_scene_is_rotated():
    hist, cmd, prev, bb, bbw, truth, reading, ref_pos, ref_quat = _case(2)
    x = features(*_t(hist, cmd, prev, bb, bbw, ref_pos, ref_quat))
    y = targets(*_t(hist[:, -1], bb, bbw, truth, reading))
    assert x.shape == (7, FEATURE_DIM)
    q = rotvec_to_quat(np.array([0.3, -1.1, 2.0]))
    h2, c2, p2, b2, t2, rp2, rq2 = _rotate_world(q, hist, cmd, prev, bb, truth, ref_pos, ref_quat)
    np.testing.assert_allclose(features(*_t(h2, c2, p2, b2, bbw, rp2, rq2)).numpy(), x.numpy(), atol=1e-10)
    np.testing.assert_allclose(targets(*_t(h2[:, -1], b2, bbw, t2, reading)).numpy(), y.numpy(), atol=1e-10)


def test_features_see_a_change_of_the_tool_relative_to_the_geometry():
    hist, cmd, prev, bb, bbw, _, _, ref_pos, ref_quat = _case(3)
    x = features(*_t(hist, cmd, prev, bb, bbw, ref_pos, ref_quat))
    moved = features(*_t(hist, cmd, prev, bb, bbw, ref_pos + 0.001, ref_quat))
    assert not torch.allclose(x, moved)
