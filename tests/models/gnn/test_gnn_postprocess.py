"""Post-processing (paper §III-C.3): Euler integration, rigid alignment, finite-difference velocities."""

import numpy as np
import pytest
import torch

from contactkit.models.gnn.postprocess import (
    align_pose,
    finite_difference_velocity,
    integrate_positions,
    same_hemisphere,
)
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat


def test_euler_integration_is_exact_for_constant_acceleration():
    rng = np.random.default_rng(0)
    p0, v, a, dt = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), 0.05

    def p(t):
        return torch.tensor(p0 + v * t + 0.5 * a * t * t)

    nxt = integrate_positions(torch.tensor(a * dt * dt), p(dt), p(0.0))
    torch.testing.assert_close(nxt, p(2 * dt), rtol=0, atol=1e-14)


def test_alignment_recovers_a_rigid_pose():
    rng = np.random.default_rng(1)
    ref = rng.normal(size=(4, 10, 3))
    q = rng.normal(size=(4, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    t = rng.normal(size=(4, 3))
    world = np.einsum("bij,bvj->bvi", quat_to_mat(q), ref) + t[:, None]
    pos, quat = align_pose(torch.tensor(ref), torch.tensor(world))
    np.testing.assert_allclose(pos.numpy(), t, atol=1e-12)
    canonical = np.where(q[:, :1] < 0, -q, q)
    np.testing.assert_allclose(quat.numpy(), canonical, atol=1e-12)


def test_alignment_is_least_squares_under_symmetric_noise():
    """Noise ±e on mirrored vertices cancels: the fitted pose is the noiseless one."""
    rng = np.random.default_rng(2)
    ref = rng.normal(size=(6, 3))
    ref = np.concatenate([ref, ref])  # each point twice
    e = rng.normal(scale=1e-3, size=(6, 3))
    rot = quat_to_mat(rotvec_to_quat(np.array([0.2, -0.4, 0.1])))
    world = ref @ rot.T + [0.1, 0.2, 0.3] + np.concatenate([e, -e])
    pos, quat = align_pose(torch.tensor(ref), torch.tensor(world))
    np.testing.assert_allclose(quat_to_mat(quat.numpy()), rot, atol=1e-12)
    np.testing.assert_allclose(pos.numpy(), [0.1, 0.2, 0.3], atol=1e-12)


@pytest.mark.parametrize("omega", [[0.0, 0.0, 0.0], [0.3, -1.2, 2.0], [0.0, 30.0, 0.0]])
def test_finite_difference_recovers_a_constant_twist(omega):
    dt = 0.05
    q0 = rotvec_to_quat(np.array([0.5, 0.1, -0.3]))
    q1 = quat_mul(rotvec_to_quat(np.asarray(omega) * dt), q0)
    f64 = torch.float64
    lin, ang = finite_difference_velocity(torch.tensor([1.0, 2.0, 3.0], dtype=f64), torch.tensor(q0),
                                          torch.tensor([1.1, 2.0, 2.9], dtype=f64), torch.tensor(-q1), dt)
    np.testing.assert_allclose(lin.numpy(), [2.0, 0.0, -2.0], atol=1e-12)
    np.testing.assert_allclose(ang.numpy(), omega, atol=1e-10)


def test_same_hemisphere():
    q = torch.tensor([[0.1, 0.7, 0.7, 0.1], [0.5, 0.5, 0.5, 0.5]])
    ref = torch.tensor([[-0.1, -0.7, -0.7, -0.1], [0.5, 0.5, 0.5, 0.5]])
    torch.testing.assert_close(same_hemisphere(q, ref), torch.stack([-q[0], q[1]]))
