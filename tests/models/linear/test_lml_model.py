"""LinearForceModel: fit/predict from arrays against the closed form; backends agree; bad logs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.linear import (
    Backend,
    LinearForceModel,
    drift_process_noise,
    init_state,
    predict,
    update,
)

CLOSED_FORM_RTOL = 1e-9
"""Required relative agreement with the closed-form least-squares solution."""


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors on a shared 2-core machine: one intra-op thread avoids OpenMP oversubscription."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def log(seed: int, m: int, n_w: int, batch=()):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(6, 6))
    W = rng.normal(size=(*batch, m, n_w))
    Y = rng.normal(size=(*batch, m, 6)) * 4.0
    return A @ A.T + 0.05 * np.eye(6), W, Y, rng.uniform(0.1, 1.0, n_w), rng.uniform(0.0, 2.0, n_w)


def rel_err(A, B) -> float:
    return float(np.linalg.norm(np.asarray(A) - np.asarray(B)) / np.linalg.norm(np.asarray(B)))


@pytest.mark.parametrize("backend", [Backend.TORCH, Backend.NUMPY, Backend.AUTO])
def test_fit_then_predict_equals_closed_form(backend):
    R, W, Y, b, rho = log(0, 120, 19)
    model = LinearForceModel.fit(W, Y, R=R, b=b, rho=rho, backend=backend)
    G_ref = np.linalg.solve(W.T @ W + np.diag(b**2 + rho**2), W.T @ Y).T
    assert rel_err(model.G.numpy(), G_ref) < CLOSED_FORM_RTOL
    pred = model.predict(W[:7])
    assert isinstance(pred, np.ndarray) and pred.shape == (7, 6)
    assert rel_err(pred, W[:7] @ G_ref.T) < CLOSED_FORM_RTOL
    pred_t = model.predict(torch.as_tensor(W[0]))
    assert isinstance(pred_t, torch.Tensor) and pred_t.shape == (6,)


def test_batched_fit_and_predict():
    R, W, Y, b, _ = log(1, 60, 5, batch=(3,))
    model = LinearForceModel.fit(W, Y, R=R, b=b)
    pred = model.predict(W)
    assert pred.shape == (3, 60, 6)
    for i in range(3):
        G_ref = np.linalg.solve(W[i].T @ W[i] + np.diag(b**2), W[i].T @ Y[i]).T
        assert rel_err(model.G[i].numpy(), G_ref) < CLOSED_FORM_RTOL
    with pytest.raises(InvalidInputError, match="NUMPY"):
        LinearForceModel.fit(W, Y, backend=Backend.NUMPY)


def test_online_update_with_process_noise_matches_functions_on_both_backends():
    R, W, Y, b, _ = log(2, 50, 7)
    Q = drift_process_noise(0.01, 7)
    model = LinearForceModel.create(7, R=R, b=b, Q=Q)
    from_log = model.update_many(W, Y, backend=Backend.NUMPY)
    st = model.state
    for k in range(50):
        model = model.update(W[k], Y[k])
        st = update(predict(st, Q), W[k], Y[k])
    assert torch.equal(model.state.G, st.G)
    assert rel_err(from_log.state.G.numpy(), st.G.numpy()) < 1e-12
    assert rel_err(from_log.state.Sigma.numpy(), st.Sigma.numpy()) < 1e-12


def test_bad_log_is_rejected_naming_the_sample_and_model_untouched():
    R, W, Y, b, _ = log(3, 40, 4)
    model = LinearForceModel.fit(W[:20], Y[:20], R=R, b=b)
    G0 = model.state.G.clone()
    Y_bad = Y[20:].copy()
    Y_bad[7, 2] = np.nan
    for backend in (Backend.TORCH, Backend.NUMPY):
        with pytest.raises(InvalidInputError, match="sample 7"):
            model.update_many(W[20:], Y_bad, backend=backend)
    with pytest.raises(InvalidInputError, match="NaN"):
        model.update(W[0], Y_bad[7])
    assert torch.equal(model.state.G, G0)
    with pytest.raises(InvalidInputError, match="equal"):
        LinearForceModel.fit(W, Y[:10])
    with pytest.raises(InvalidInputError, match="singular"):
        LinearForceModel.fit(W, Y, R=np.zeros((6, 6)))
    with pytest.raises(InvalidInputError, match="n_w"):
        model.predict(np.zeros((2, 5)))


def test_create_matches_init_state():
    model = LinearForceModel.create(5, b=0.5, batch_shape=(2,))
    ref = init_state(5, b=0.5, batch_shape=(2,))
    assert torch.equal(model.state.Sigma, ref.Sigma) and torch.equal(model.state.G, ref.G)
