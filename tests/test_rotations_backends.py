"""The three rotation backends (numpy reference, numba, torch) agree on random inputs, tiny and zero angles.

Each numba function runs on one rotation at a time (quaternions come back as tuples); torch runs batched in
float64 (where it must match numpy to round-off) and in float32 (to its own round-off)."""

import numpy as np
import pytest
import torch

from contactkit import rotations as R
from contactkit.rotations import numba as nb
from contactkit.rotations import torch as tr

F64_AGREEMENT = 16 * np.finfo(np.float64).eps
"""Backends agree to this, relative to the size of the result [-]: the same closed forms, evaluated in a
different order (einsum vs matmul, a normalisation in torch's ``quat_to_mat``), differ by a few ulps."""
F32_AGREEMENT = 16 * np.finfo(np.float32).eps
"""torch in float32 agrees with the float64 reference to this, relative [-] (a few float32 ulps)."""
ANGLES = (0.0, 1e-14, 0.5 * R.SMALL_ANGLE, 2.0 * R.SMALL_ANGLE, 1e-8, 1e-3, 1.0, np.pi - 1e-6)
"""Rotation angles [rad] tested along random axes: zero, both sides of SMALL_ANGLE, and up to a half turn."""


def _quats(rng, n):
    q = rng.normal(size=(n, 4))
    return R.quat_normalize(q)


def _rotvecs(rng, n):
    """``len(ANGLES)`` rotation vectors of the listed angles along random axes, then ``n`` random ones."""
    axes = rng.normal(size=(len(ANGLES), 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    return np.concatenate([axes * np.array(ANGLES)[:, None], rng.normal(0.0, 1.0, (n, 3))])


def _numba_rows(fn, *arrays):
    return np.array([np.asarray(fn(*row), dtype=np.float64) for row in zip(*arrays, strict=True)])


def _torch(fn, *arrays, dtype=torch.float64):
    return fn(*(torch.as_tensor(a, dtype=dtype) for a in arrays)).double().numpy()


def _agree(got, want, tol):
    """``got`` equals ``want`` row by row to ``tol`` relative to each row's largest entry (so the tiny
    vector part of a tiny rotation is compared to its own size, not to 1)."""
    scale = np.abs(want).reshape(len(want), -1).max(axis=1)
    error = np.abs(got - want).reshape(len(want), -1).max(axis=1)
    assert np.all(error <= tol * scale), f"worst relative error {np.max(error / np.maximum(scale, 1e-300)):.3g}"


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(20261126)
    phi = _rotvecs(rng, 30)
    n = len(phi)
    return {"a": _quats(rng, n), "b": _quats(rng, n), "v": rng.normal(size=(n, 3)), "phi": phi,
            "q_phi": R.rotvec_to_quat(phi)}


def test_quat_to_mat(inputs):
    a = inputs["a"]
    want = R.quat_to_mat(a)
    _agree(_numba_rows(nb.quat_to_mat, a), want, F64_AGREEMENT)
    _agree(_torch(tr.quat_to_mat, a), want, F64_AGREEMENT)
    _agree(_torch(tr.quat_to_mat, a, dtype=torch.float32), want, F32_AGREEMENT)


def test_quat_mul(inputs):
    a, b = inputs["a"], inputs["b"]
    want = R.quat_mul(a, b)
    _agree(_numba_rows(nb.quat_mul, a, b), want, F64_AGREEMENT)
    _agree(_torch(tr.quat_mul, a, b), want, F64_AGREEMENT)
    _agree(_torch(tr.quat_mul, a, b, dtype=torch.float32), want, F32_AGREEMENT)


def test_rotate_vector(inputs):
    a, v = inputs["a"], inputs["v"]
    want = R.quat_rotate(a, v)
    _agree(_numba_rows(nb.quat_rotate, a, v), want, F64_AGREEMENT)
    _agree(_torch(tr.quat_rotate, a, v), want, F64_AGREEMENT)
    _agree(_torch(tr.quat_rotate, a, v, dtype=torch.float32), want, F32_AGREEMENT)


def test_exp_of_rotation_vectors(inputs):
    """``exp(φ)``: the quaternion of a rotation vector, including exactly zero and tiny angles."""
    phi = inputs["phi"]
    want = R.rotvec_to_quat(phi)
    _agree(_numba_rows(nb.rotvec_to_quat, phi), want, F64_AGREEMENT)
    _agree(_torch(tr.rotvec_to_quat, phi), want, F64_AGREEMENT)
    _agree(_torch(tr.rotvec_to_quat, phi, dtype=torch.float32), want, F32_AGREEMENT)
    vec = want[:, 1:]
    nonzero = np.abs(vec).max(axis=1) > 0
    assert nonzero.sum() == len(phi) - 1 and np.array_equal(want[~nonzero], [[1.0, 0.0, 0.0, 0.0]])
    backends = ((_numba_rows(nb.rotvec_to_quat, phi), F64_AGREEMENT), (_torch(tr.rotvec_to_quat, phi), F64_AGREEMENT),
                (_torch(tr.rotvec_to_quat, phi, dtype=torch.float32), F32_AGREEMENT))
    for got, tol in backends:
        _agree(got[nonzero, 1:], vec[nonzero], tol)  # the vector part to its own size, however tiny
        assert np.array_equal(got[~nonzero], want[~nonzero])  # exactly zero: exactly the identity


def test_log_of_quaternions(inputs):
    """``log(q)``: the rotation vector of a quaternion, back to the rotation vectors we started from."""
    q, phi = inputs["q_phi"], inputs["phi"]
    want = R.quat_to_rotvec(q)
    small = np.linalg.norm(phi, axis=1) <= np.pi
    _agree(want[small], phi[small], F64_AGREEMENT)  # the reference inverts exp (angles in [0, π])
    for got in (_numba_rows(nb.quat_to_rotvec, q), _torch(tr.quat_to_rotvec, q)):
        nonzero = np.abs(want).max(axis=1) > 0
        _agree(got[nonzero], want[nonzero], F64_AGREEMENT)
        assert np.array_equal(got[~nonzero], want[~nonzero])  # exactly zero stays exactly zero
    got32 = _torch(tr.quat_to_rotvec, q.astype(np.float32), dtype=torch.float32)
    want32 = R.quat_to_rotvec(q.astype(np.float32).astype(np.float64))  # the same rounded input in float64
    nonzero = np.abs(want32).max(axis=1) > 0
    _agree(got32[nonzero], want32[nonzero], F32_AGREEMENT)


@pytest.mark.parametrize("angle", [0.0, 1e-14, 1e-7, 1.0])
def test_torch_exp_and_log_have_exact_gradients_at_tiny_angles(angle):
    """The series branches keep gradients finite and right: torch's autograd matches central differences."""
    axis = np.array([0.6, -0.8, 0.0])
    phi = torch.tensor(angle * axis, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(tr.rotvec_to_quat, (phi,))
    q = tr.rotvec_to_quat(phi).detach().requires_grad_(True)
    assert torch.autograd.gradcheck(tr.quat_to_rotvec, (q,))
    jac = torch.autograd.functional.jacobian(tr.rotvec_to_quat, phi)
    if angle == 0.0:  # d exp(φ)/dφ at zero: [0; I/2]
        assert torch.equal(jac, torch.cat([torch.zeros(1, 3), 0.5 * torch.eye(3)]).double())

