"""The numpy fast path equals the torch path; RLS and re-solve equal their closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.linear import (
    fast_predict,
    fast_predict_wrench,
    fast_update,
    from_fast,
    init_state,
    predict,
    predict_wrench,
    resolve_init,
    resolve_update,
    rls_init,
    rls_update,
    sensor_noise,
    to_fast,
    update,
)

PATH_RTOL = 1e-12
"""Relative agreement required between the torch and numpy paths (same arithmetic, other kernels)."""

CLOSED_FORM_RTOL = 1e-9
"""Required relative agreement with the closed-form least-squares solution."""


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors on a shared 2-core machine: one intra-op thread avoids OpenMP oversubscription."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def problem(seed: int, m: int, n_w: int):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(6, 6))
    R = A @ A.T + 0.05 * np.eye(6)
    W = rng.normal(size=(m, n_w))
    Y = rng.normal(size=(m, 6)) * 3.0
    b = rng.uniform(0.1, 1.0, n_w)
    return R, W, Y, b


def rel_err(A, B) -> float:
    return float(np.linalg.norm(np.asarray(A) - np.asarray(B)) / np.linalg.norm(np.asarray(B)))


@pytest.mark.parametrize("n_w", [1, 19, 64])
def test_fast_path_equals_torch_path_with_process_noise(n_w):
    R, W, Y, b = problem(n_w, 200, n_w)
    Q = np.diag(np.random.default_rng(0).uniform(0.0, 1e-3, n_w))
    st = init_state(n_w, b=b, noise=sensor_noise(R))
    fast = to_fast(st)
    Qt = torch.as_tensor(Q)
    for k in range(W.shape[0]):
        st = update(predict(st, Qt), W[k], Y[k])
        fast = fast_update(fast_predict(fast, Q), W[k], Y[k])
    assert rel_err(fast.G, st.G.numpy()) < PATH_RTOL
    assert rel_err(fast.Sigma, st.Sigma.numpy()) < PATH_RTOL
    np.testing.assert_array_equal(fast.Sigma, fast.Sigma.T)
    assert (
        rel_err(fast_predict_wrench(fast, W[:5]), predict_wrench(st, torch.as_tensor(W[:5])).numpy())
        < PATH_RTOL
    )
    back = from_fast(fast)
    assert rel_err(back.G_wrench.numpy(), fast.G_wrench) < PATH_RTOL
    assert torch.equal(back.Sigma, torch.as_tensor(fast.Sigma))


def test_fast_path_rejects_nan_and_leaves_state_untouched():
    R, W, Y, b = problem(1, 30, 5)
    fast = to_fast(init_state(5, b=b, noise=sensor_noise(R)))
    for k in range(30):
        fast = fast_update(fast, W[k], Y[k])
    G0, S0 = fast.G.copy(), fast.Sigma_upper.copy()
    with pytest.raises(InvalidInputError, match="feature"):
        fast_update(fast, np.array([0.0, np.nan, 0.0, 0.0, 0.0]), Y[0])
    with pytest.raises(InvalidInputError, match="measurement"):
        fast_update(fast, W[0], np.array([0.0, 0.0, np.inf, 0.0, 0.0, 0.0]))
    with pytest.raises(InvalidInputError, match="expects"):
        fast_update(fast, W[0][:4], Y[0])
    np.testing.assert_array_equal(fast.G, G0)
    np.testing.assert_array_equal(fast.Sigma_upper, S0)
    with pytest.raises(InvalidInputError, match="one model"):
        to_fast(init_state(5, batch_shape=(2,)))


def test_rls_and_resolve_equal_the_closed_form():
    R, W, Y, b = problem(2, 150, 19)
    noise = sensor_noise(R)
    rls, res = rls_init(19, noise, b=b), resolve_init(19, noise, b=b)
    for k in range(W.shape[0]):
        rls, res = rls_update(rls, W[k], Y[k]), resolve_update(res, W[k], Y[k])
    G_ref = np.linalg.solve(W.T @ W + np.diag(b**2), W.T @ Y).T
    assert rel_err(res.G_wrench, G_ref) < CLOSED_FORM_RTOL
    assert rel_err(rls.G_wrench, G_ref) < CLOSED_FORM_RTOL


def test_rls_forgetting_equals_exponentially_weighted_closed_form():
    R, W, Y, b = problem(3, 80, 6)
    lam = 0.95
    rls = rls_init(6, sensor_noise(R), b=b, forgetting=lam)
    for k in range(W.shape[0]):
        rls = rls_update(rls, W[k], Y[k])
    m = W.shape[0]
    wts = lam ** np.arange(m - 1, -1, -1)
    G_ref = np.linalg.solve((W.T * wts) @ W + lam**m * np.diag(b**2), (W.T * wts) @ Y).T
    assert rel_err(rls.G_wrench, G_ref) < CLOSED_FORM_RTOL


def test_baselines_reject_bad_input():
    noise = sensor_noise(None)
    with pytest.raises(InvalidInputError, match="forgetting"):
        rls_init(3, noise, forgetting=1.5)
    with pytest.raises(InvalidInputError, match="NaN"):
        rls_update(rls_init(3, noise), [np.nan, 0.0, 0.0], np.zeros(6))
    with pytest.raises(InvalidInputError, match="NaN"):
        resolve_update(resolve_init(3, noise), [0.0, 0.0, 0.0], [np.inf] + [0.0] * 5)
    with pytest.raises(InvalidInputError, match="expected"):
        resolve_update(resolve_init(3, noise), [0.0, 0.0], np.zeros(6))
