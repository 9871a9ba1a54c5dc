"""Algorithm 1 (LML) against closed forms: ridge solution of eq 6, batch MAP of eq 10, Joseph form."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.linear import (
    drift_process_noise,
    init_state,
    joseph_rank_one,
    predict,
    predict_wrench,
    sensor_noise,
    update,
)

CLOSED_FORM_RTOL = 1e-9
"""Required relative agreement of the filter (Q = 0) with the closed-form least-squares solution."""


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors on a shared 2-core machine: one intra-op thread avoids OpenMP oversubscription."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def random_spd(rng: np.random.Generator, n: int, cond: float) -> np.ndarray:
    """Random symmetric positive-definite matrix with condition number ``cond`` (correlated)."""
    Qm, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return (Qm * np.geomspace(1.0, 1.0 / cond, n)) @ Qm.T


def kron_closed_form(W, Y, R, b):
    """Minimiser of Σ‖G̃w−ỹ‖²_{R⁻¹} + ‖Lᵀ G̃ diag(b)‖² over vec(G̃) without decoupling (eqs 3, 6)."""
    n_w, n_y = W.shape[1], Y.shape[1]
    Rinv = np.linalg.inv(R)
    H = np.kron(W.T @ W + np.diag(b**2), Rinv)  # acts on column-major vec(G̃)
    rhs = (Rinv @ Y.T @ W).reshape(-1, order="F")
    return np.linalg.solve(H, rhs).reshape(n_y, n_w, order="F")


def run_filter(W, Y, R, b, Q=None):
    st = init_state(W.shape[-1], b=b, noise=sensor_noise(R), batch_shape=W.shape[:-2])
    for k in range(W.shape[-2]):
        st = update(predict(st, Q), W[..., k, :], Y[..., k, :])
    return st


def rel_err(A, B) -> float:
    return float(np.linalg.norm(np.asarray(A) - np.asarray(B)) / np.linalg.norm(np.asarray(B)))


@pytest.mark.parametrize(
    ("n_w", "m", "seed"), [(3, 40, 0), (19, 10, 1), (19, 300, 2), (60, 150, 3), (200, 300, 4)]
)
def test_filter_equals_closed_form_regularised_least_squares(n_w, m, seed):
    rng = np.random.default_rng(seed)
    R = random_spd(rng, 6, cond=1e3) * 0.01
    W = rng.normal(size=(m, n_w)) * rng.uniform(0.1, 3.0, n_w)
    Y = rng.normal(size=(m, 6)) * 5.0
    b = rng.uniform(0.05, 2.0, n_w)
    st = run_filter(W, Y, R, b)
    G_ref = kron_closed_form(W, Y, R, b)
    assert rel_err(st.G_wrench.numpy(), G_ref) < CLOSED_FORM_RTOL
    Sigma_ref = np.linalg.inv(W.T @ W + np.diag(b**2))
    assert rel_err(st.Sigma.numpy(), Sigma_ref) < CLOSED_FORM_RTOL
    w_new = rng.normal(size=n_w)
    assert rel_err(predict_wrench(st, w_new).numpy(), G_ref @ w_new) < CLOSED_FORM_RTOL


def test_batched_models_are_independent_closed_forms():
    rng = np.random.default_rng(5)
    B, m, n_w = 4, 50, 7
    R = np.stack([random_spd(rng, 6, 100.0) for _ in range(B)])
    W = rng.normal(size=(B, m, n_w))
    Y = rng.normal(size=(B, m, 6))
    b = rng.uniform(0.1, 1.0, (B, n_w))
    st = run_filter(W, Y, R, b)
    assert st.batch_shape == (B,)
    for i in range(B):
        assert rel_err(st.G_wrench[i].numpy(), kron_closed_form(W[i], Y[i], R[i], b[i])) < CLOSED_FORM_RTOL


def test_shared_samples_broadcast_over_a_batch_of_models_with_different_sensors():
    rng = np.random.default_rng(13)
    R = np.stack([random_spd(rng, 6, 10.0 ** (i + 1)) for i in range(3)])
    W, Y = rng.normal(size=(30, 5)), rng.normal(size=(30, 6))
    batch = init_state(5, b=0.5, noise=sensor_noise(R))
    singles = [init_state(5, b=0.5, noise=sensor_noise(R[i])) for i in range(3)]
    for k in range(30):
        batch = update(batch, W[k], Y[k])  # (n_w,), (n_y,) broadcast to the batch (3,)
        singles = [update(st, W[k], Y[k]) for st in singles]
    for i in range(3):
        assert rel_err(batch.G_wrench[i].numpy(), singles[i].G_wrench.numpy()) < 1e-12
        assert rel_err(batch.Sigma[i].numpy(), singles[i].Sigma.numpy()) < 1e-12
    with pytest.raises(InvalidInputError, match="batch"):
        update(batch, np.zeros((2, 5)), np.zeros((2, 6)))


def test_known_model_recovered_from_noise_free_data():
    rng = np.random.default_rng(6)
    n_w, m = 19, 400
    G_true = rng.normal(size=(6, n_w)) * 10.0
    W = rng.normal(size=(m, n_w))
    W[:, -1] = 1.0  # bias feature
    st = run_filter(W, W @ G_true.T, random_spd(rng, 6, 50.0), np.full(n_w, 1e-4))
    assert rel_err(st.G_wrench.numpy(), G_true) < 1e-9


def batch_map_last(W, Yw, Sigma0, Q):
    """Last mean of the batch MAP problem of eq 10 (random walk A = I, C = wᵀ, unit noise), by lstsq."""
    m, n_w = W.shape
    rows, rhs = [], []
    P0 = np.linalg.cholesky(np.linalg.inv(Sigma0)).T
    Pq = np.linalg.cholesky(np.linalg.inv(Q)).T
    block = np.zeros((n_w, (m + 1) * n_w))
    block[:, :n_w] = P0
    rows.append(block)
    rhs.append(np.zeros((n_w, Yw.shape[1])))
    for k in range(m):
        block = np.zeros((n_w, (m + 1) * n_w))
        block[:, k * n_w : (k + 1) * n_w] = -Pq
        block[:, (k + 1) * n_w : (k + 2) * n_w] = Pq
        rows.append(block)
        rhs.append(np.zeros((n_w, Yw.shape[1])))
        meas = np.zeros((1, (m + 1) * n_w))
        meas[0, (k + 1) * n_w : (k + 2) * n_w] = W[k]
        rows.append(meas)
        rhs.append(Yw[k : k + 1])
    sol = np.linalg.lstsq(np.vstack(rows), np.vstack(rhs), rcond=None)[0]
    return sol[m * n_w :].T  # (n_y, n_w)


def test_process_noise_filter_equals_batch_map_of_eq10():
    rng = np.random.default_rng(7)
    n_w, m = 4, 25
    R = random_spd(rng, 6, 20.0)
    W = rng.normal(size=(m, n_w))
    Y = rng.normal(size=(m, 6))
    b = rng.uniform(0.3, 1.0, n_w)
    Q = random_spd(rng, n_w, 10.0) * 0.05
    st = run_filter(W, Y, R, b, Q=torch.as_tensor(Q))
    L = np.linalg.cholesky(np.linalg.inv(R))  # independent whitening: R⁻¹ = L Lᵀ
    G_w = batch_map_last(W, Y @ L, np.diag(1.0 / b**2), Q)
    assert rel_err(st.G_wrench.numpy(), np.linalg.inv(L.T) @ G_w) < 1e-9
    st0 = run_filter(W, Y, R, b)
    assert rel_err(st.G.numpy(), st0.G.numpy()) > 1e-3  # Q really changes the estimate


def test_joseph_expansion_equals_product_form_for_any_gain():
    rng = np.random.default_rng(8)
    n = 9
    S = random_spd(rng, n, 1e3)
    Sigma = torch.as_tensor(0.5 * (S + S.T))
    w = torch.as_tensor(rng.normal(size=n))
    ell = torch.as_tensor(rng.normal(size=n))  # deliberately not the optimal gain
    a = Sigma @ w
    s = w @ a + 1.0
    out = joseph_rank_one(Sigma, a, ell, s * ell)
    M = torch.eye(n, dtype=torch.float64) - torch.outer(ell, w)
    ref = M @ Sigma @ M.T + torch.outer(ell, ell)
    assert torch.allclose(out, ref, rtol=1e-12, atol=1e-12 * float(ref.abs().max()))
    assert torch.equal(out, out.mT)


def test_covariance_symmetric_psd_and_exact_over_a_million_updates():
    """1000 independent models × 1000 updates; Q = 0 for half of them, so Σ has a closed form."""
    gen = torch.Generator().manual_seed(9)
    B, m, n_w = 1000, 1000, 4
    scale = torch.tensor([1.0, 1e-2, 1e2, 1.0], dtype=torch.float64)
    base = torch.randn(B, m, n_w, generator=gen, dtype=torch.float64)
    W = (base + 0.99 * base[..., :1]) * scale  # correlated features of very different magnitudes
    W[..., -1] = 1.0
    Y = torch.randn(B, m, 6, generator=gen, dtype=torch.float64)
    Q = torch.zeros(B, n_w, n_w, dtype=torch.float64)
    Q[B // 2 :] = drift_process_noise(1e-3, n_w)
    st = init_state(n_w, b=1e-3, batch_shape=(B,))
    for k in range(m):
        st = update(predict(st, Q), W[:, k], Y[:, k])
        if k % 100 == 99:
            assert torch.equal(st.Sigma, st.Sigma.mT)
            eig = torch.linalg.eigvalsh(st.Sigma)
            assert bool((eig[:, 0] > 0).all()), "covariance lost positive definiteness"
    half = slice(0, B // 2)
    info = W[half].mT @ W[half] + 1e-6 * torch.eye(n_w, dtype=torch.float64)
    ref = torch.linalg.inv(info)
    err = ((st.Sigma[half] - ref).norm(dim=(-2, -1)) / ref.norm(dim=(-2, -1))).max()
    assert float(err) < 1e-6


def test_nan_or_inf_is_rejected_and_state_untouched():
    rng = np.random.default_rng(10)
    st = run_filter(rng.normal(size=(2, 20, 5)), rng.normal(size=(2, 20, 6)), np.eye(6), np.ones(5))
    G0, S0 = st.G.clone(), st.Sigma.clone()
    w, y = rng.normal(size=(2, 5)), rng.normal(size=(2, 6))
    for bad_w, bad_y, name in [
        (np.nan, None, "feature"),
        (np.inf, None, "feature"),
        (None, -np.inf, "measurement"),
    ]:
        w2, y2 = w.copy(), y.copy()
        if bad_w is not None:
            w2[1, 3] = bad_w
        if bad_y is not None:
            y2[0, 2] = bad_y
        with pytest.raises(InvalidInputError, match=name):
            update(st, w2, y2)
        assert torch.equal(st.G, G0) and torch.equal(st.Sigma, S0)
    with pytest.raises(InvalidInputError, match="overflow"):
        update(st, np.full((2, 5), 1e200), y)
    with pytest.raises(InvalidInputError, match="w"):
        update(st, rng.normal(size=(2, 4)), y)
    assert torch.equal(st.G, G0) and torch.equal(st.Sigma, S0)


@pytest.mark.parametrize(
    ("R", "msg"),
    [
        (np.diag([1.0, 1.0, 1.0, 1.0, 1.0, 0.0]), "singular"),
        (np.diag([1.0, 1.0, 1.0, 1.0, 1.0, -1e-3]), "positive definite"),
        (np.ones((6, 6)), "singular"),
        (np.triu(np.ones((6, 6))), "symmetric"),
        (np.full((6, 6), np.nan), "NaN"),
        (np.eye(3)[:2], "square"),
    ],
)
def test_bad_sensor_covariance_is_a_clear_error(R, msg):
    with pytest.raises(InvalidInputError, match=msg):
        sensor_noise(R)


def test_whitening_factors_match_eqs_4_5():
    rng = np.random.default_rng(11)
    R = random_spd(rng, 6, 1e4)
    noise = sensor_noise(R)
    L_T, L_inv_T = noise.L_T.numpy(), noise.L_inv_T.numpy()
    assert np.allclose(np.tril(L_T, -1), 0.0)  # Lᵀ is upper triangular: L is the lower Cholesky factor
    assert rel_err(L_T.T @ L_T, np.linalg.inv(R)) < 1e-10  # R⁻¹ = L Lᵀ
    assert rel_err(L_inv_T @ L_inv_T.T, R) < 1e-10  # L⁻ᵀ L⁻¹ = R
    assert rel_err(L_inv_T @ L_T, np.eye(6)) < 1e-10


def test_bad_prior_and_process_noise_are_clear_errors():
    with pytest.raises(InvalidInputError, match="b"):
        init_state(3, b=[1.0, 0.0, 1.0])
    with pytest.raises(InvalidInputError, match="b"):
        init_state(3, b=[1.0, np.nan, 1.0])
    st = init_state(3)
    with pytest.raises(InvalidInputError, match="negative"):
        predict(st, -np.eye(3))
    with pytest.raises(InvalidInputError, match="fit"):
        predict(st, np.eye(4))
    with pytest.raises(InvalidInputError, match="symmetric"):
        predict(st, np.triu(np.ones((3, 3))))
    assert predict(st, None) is st


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_filter_on_gpu_equals_closed_form_batched_and_single():
    from contactkit.models.linear import regularize

    rng = np.random.default_rng(12)
    B, m, n_w = 16, 120, 19
    R = random_spd(rng, 6, 1e3)
    W = rng.normal(size=(B, m, n_w))
    Y = rng.normal(size=(B, m, 6))
    b, rho = rng.uniform(0.1, 1.0, n_w), rng.uniform(0.0, 2.0, n_w)
    noise = sensor_noise(R, device="cuda")
    st = init_state(n_w, b=b, noise=noise, batch_shape=(B,), device="cuda")
    one = init_state(n_w, b=b, noise=noise, device="cuda")
    Wc, Yc = torch.as_tensor(W, device="cuda"), torch.as_tensor(Y, device="cuda")
    for k in range(m):
        st = update(st, Wc[:, k], Yc[:, k])
        one = update(one, Wc[0, k], Yc[0, k])
    st = regularize(st, rho)
    assert st.G.device.type == "cuda" and st.G.dtype == torch.float64
    for i in range(B):
        ref = np.linalg.solve(W[i].T @ W[i] + np.diag(b**2 + rho**2), W[i].T @ Y[i]).T
        assert rel_err(st.G_wrench[i].cpu().numpy(), ref) < CLOSED_FORM_RTOL
    assert rel_err(one.G_wrench.cpu().numpy(), kron_closed_form(W[0], Y[0], R, b)) < CLOSED_FORM_RTOL
    with pytest.raises(InvalidInputError, match="feature"):
        update(one, torch.full((n_w,), float("nan"), device="cuda"), Yc[0, 0])
