"""Algorithm 2 (adaptive regularisation) against the closed form with ``diag(ρ²)`` added."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.linear import init_state, regularize, sensor_noise, update

CLOSED_FORM_RTOL = 1e-9
"""Required relative agreement with the closed-form regularised least-squares solution."""


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors on a shared 2-core machine: one intra-op thread avoids OpenMP oversubscription."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def problem(seed: int, m: int, n_w: int, batch=()):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(6, 6))
    R = A @ A.T + 0.05 * np.eye(6)  # correlated sensor noise
    W = rng.normal(size=(*batch, m, n_w))
    Y = rng.normal(size=(*batch, m, 6)) * 3.0
    b = rng.uniform(0.1, 1.0, (*batch, n_w))
    rho = rng.uniform(0.0, 3.0, (*batch, n_w))
    return R, W, Y, b, rho


def closed_form(W, Y, precision):
    """G̃ = Ỹᵀ W (WᵀW + diag(precision))⁻¹ (eq 6 in wrench units; independent of R, see kalman)."""
    return np.linalg.solve(W.T @ W + np.diag(precision), W.T @ Y).T


def feed(st, W, Y):
    for k in range(W.shape[-2]):
        st = update(st, W[..., k, :], Y[..., k, :])
    return st


def rel_err(A, B) -> float:
    return float(np.linalg.norm(np.asarray(A) - np.asarray(B)) / np.linalg.norm(np.asarray(B)))


@pytest.mark.parametrize(("m", "n_w", "split"), [(60, 19, 60), (60, 19, 0), (120, 50, 37), (30, 80, 12)])
def test_algorithm2_equals_adding_rho_squared_to_the_closed_form(m, n_w, split):
    """Applied after ``split`` samples (before, in the middle, or after all data): with Q = 0 the order
    of the scalar measurements does not matter, so the result is the closed form with b² + ρ²."""
    R, W, Y, b, rho = problem(m + n_w, m, n_w)
    st = init_state(n_w, b=b, noise=sensor_noise(R))
    st = feed(regularize(feed(st, W[:split], Y[:split]), rho), W[split:], Y[split:])
    assert rel_err(st.G_wrench.numpy(), closed_form(W, Y, b**2 + rho**2)) < CLOSED_FORM_RTOL
    Sigma_ref = np.linalg.inv(W.T @ W + np.diag(b**2 + rho**2))
    assert rel_err(st.Sigma.numpy(), Sigma_ref) < CLOSED_FORM_RTOL
    assert torch.equal(st.Sigma, st.Sigma.mT)


def test_algorithm2_batched_with_per_model_rho():
    R, W, Y, b, rho = problem(1, 40, 8, batch=(3,))
    st = regularize(feed(init_state(8, b=b, noise=sensor_noise(R)), W, Y), rho)
    for i in range(3):
        assert (
            rel_err(st.G_wrench[i].numpy(), closed_form(W[i], Y[i], b[i] ** 2 + rho[i] ** 2))
            < CLOSED_FORM_RTOL
        )


def test_zero_rho_leaves_state_unchanged_and_partial_rho_regularises_only_its_features():
    R, W, Y, b, rho = problem(2, 50, 6)
    st = feed(init_state(6, b=b, noise=sensor_noise(R)), W, Y)
    same = regularize(st, np.zeros(6))
    assert torch.equal(same.G, st.G) and torch.equal(same.Sigma, st.Sigma)
    rho[[1, 4]] = 0.0
    part = regularize(st, rho)
    assert rel_err(part.G_wrench.numpy(), closed_form(W, Y, b**2 + rho**2)) < CLOSED_FORM_RTOL


def test_repeated_regularisation_accumulates():
    R, W, Y, b, rho = problem(3, 40, 5)
    st = feed(init_state(5, b=b, noise=sensor_noise(R)), W, Y)
    twice = regularize(regularize(st, rho), rho)
    assert rel_err(twice.G_wrench.numpy(), closed_form(W, Y, b**2 + 2.0 * rho**2)) < CLOSED_FORM_RTOL


def test_bad_rho_is_a_clear_error():
    st = init_state(4)
    for bad in ([1.0, -1.0, 0.0, 0.0], [np.nan, 0.0, 0.0, 0.0], [1.0, 1.0], np.ones((3, 4))):
        with pytest.raises(InvalidInputError, match="rho"):
            regularize(st, bad)
