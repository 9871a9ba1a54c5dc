"""The batched box-friction LCP: exact against the engine's Lemke solver, closed forms of one contact, and the
implicit derivative at the active set against central differences (re-solving at every probe)."""

import numpy as np
import pytest
import torch

from contactkit.engine.diff.lcp_grad import RowStatus, active_set_solve, solve_batch
from contactkit.engine.reference.problem import ContactProblem
from contactkit.engine.reference.solvers.base import FrictionModel, max_residual
from contactkit.engine.reference.solvers.lemke import LemkeBoxSolver


def random_problems(rng: np.random.Generator, n: int, k: int, cfm: float = 1e-2):
    """``n`` box-friction problems of ``k`` contacts: ``W = J M⁻¹ Jᵀ + cfm·max(diag)·I`` of a 6-DoF body."""
    J = rng.normal(size=(n, 3 * k, 6))
    m_inv = np.diag([2.0, 2.0, 2.0, 50.0, 50.0, 50.0])
    W = J @ m_inv @ J.transpose(0, 2, 1)
    W += cfm * np.einsum("bii->b", W)[:, None, None] / (3 * k) * np.eye(3 * k)
    b = rng.normal(scale=0.5, size=(n, 3 * k))
    b[:, ::3] -= 0.3  # most contacts pressed
    return W, b, rng.uniform(0.2, 0.8, size=(n, k))


def _problem(W, b, mu) -> ContactProblem:
    k = len(mu)
    return ContactProblem(J=np.zeros((3 * k, 0)), M_inv=np.zeros((0, 0)), W=W, v_free=np.zeros(0), b=b, mu=mu,
                          frames=np.tile(np.eye(3), (k, 1, 1)), points=np.zeros((k, 3)), dt=1.0)


def test_solutions_satisfy_every_complementarity_condition():
    rng = np.random.default_rng(0)
    W, b, mu = random_problems(rng, 40, 3)
    lam, status, ok = solve_batch(W, b, mu)
    assert ok.all()
    for i in range(len(b)):  # natural-map residuals of the engine (zero exactly at a solution)
        assert max_residual(_problem(W[i], b[i], mu[i]), lam[i], FrictionModel.BOX) < 1e-9
    assert {RowStatus.ZERO, RowStatus.EQUAL} <= set(np.unique(status).tolist())
    assert np.isin(status, [RowStatus.UPPER, RowStatus.LOWER]).any()


@pytest.mark.parametrize("friction", [0.0, 0.2])
def test_equals_lemke_where_the_solution_is_unique(friction):
    # frictionless with W positive definite, or friction on a strongly diagonally dominant W: one solution only
    rng = np.random.default_rng(1)
    W, b, mu = random_problems(rng, 30, 3)
    if friction:
        noise = rng.normal(scale=0.02, size=W.shape)
        W = np.eye(9) + noise @ noise.transpose(0, 2, 1)
    mu = np.full_like(mu, friction)
    lam, _, ok = solve_batch(W, b, mu)
    assert ok.all()
    for i in range(len(b)):
        reference = LemkeBoxSolver(tol=1e-10).solve(_problem(W[i], b[i], mu[i])).stacked
        np.testing.assert_allclose(lam[i], reference, atol=1e-9 * max(1.0, np.abs(reference).max()))


@pytest.mark.parametrize(("b_n", "b_t", "expected"), [
    (0.2, -0.5, (0.0, 0.0)),  # separating: no impulse at all
    (-1.0, 0.1, (0.5, -0.025)),  # sticking: λ_n = -b_n / w_n, λ_t = -b_t / w_t
    (-1.0, 2.0, (0.5, -0.25)),  # sliding: λ_t = -μ λ_n opposing the tangential velocity
])
def test_single_decoupled_contact_has_its_closed_form(b_n, b_t, expected):
    W = np.diag([2.0, 4.0, 4.0])[None]
    lam, status, ok = solve_batch(W, np.array([[b_n, b_t, 0.0]]), np.array([[0.5]]))
    assert ok.all()
    np.testing.assert_allclose(lam[0, :2], expected, atol=1e-14)
    kinds = {0.0: RowStatus.ZERO, -0.025: RowStatus.EQUAL, -0.25: RowStatus.LOWER}
    assert status[0, 1] == kinds[expected[1]]


def test_active_set_derivative_matches_central_differences():
    rng = np.random.default_rng(3)
    W, b, mu = random_problems(rng, 6, 3)
    lam, status, ok = solve_batch(W, b, mu)
    assert ok.all() and np.isin(status, [RowStatus.UPPER, RowStatus.LOWER]).any()
    W_t = torch.tensor(W, requires_grad=True)
    b_t = torch.tensor(b, requires_grad=True)
    value = active_set_solve(W_t, b_t, torch.tensor(mu), status)
    np.testing.assert_allclose(value.detach().numpy(), lam, atol=1e-12)
    weights = torch.tensor(rng.normal(size=lam.shape))
    grad_W, grad_b = torch.autograd.grad((value * weights).sum(), (W_t, b_t))
    h = 1e-7
    for _ in range(12):
        i, r, c = rng.integers(6), rng.integers(9), rng.integers(9)
        dW = np.zeros_like(W)
        dW[i, r, c] = dW[i, c, r] = h  # W stays symmetric
        fd = ((solve_batch(W + dW, b, mu)[0] - solve_batch(W - dW, b, mu)[0]) * weights.numpy()).sum() / (2 * h)
        analytic = grad_W[i, r, c] + (grad_W[i, c, r] if r != c else 0.0)
        assert analytic.item() == pytest.approx(fd, rel=1e-5, abs=1e-7)
        db = np.zeros_like(b)
        db[i, r] = h
        fd = ((solve_batch(W, b + db, mu)[0] - solve_batch(W, b - db, mu)[0]) * weights.numpy()).sum() / (2 * h)
        assert grad_b[i, r].item() == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_redundant_coplanar_contacts_settle_without_lemke():
    # four identical-normal contacts of a resting box: W is rank deficient without the regularisation
    rng = np.random.default_rng(5)
    corners = np.array([[sx, sy, 0.0] for sx in (-0.02, 0.02) for sy in (-0.02, 0.02)])
    frames = np.tile(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), (4, 1, 1))
    jac = np.zeros((4, 3, 6))
    jac[:, :, :3] = np.eye(3)
    jac[:, :, 3:] = -np.array([[[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]] for c in corners])
    J = np.einsum("kab,kbn->kan", frames, jac).reshape(12, 6)
    W = J @ np.diag([2.5] * 3 + [400.0] * 3) @ J.T
    W += 1e-2 * W.diagonal().max() * np.eye(12)
    b = (J @ np.r_[rng.normal(scale=0.01, size=2), -0.05, rng.normal(scale=0.1, size=3)])[None]
    lam, _, ok = solve_batch(W[None], b, np.full((1, 4), 0.5))
    assert ok.all()
    assert (lam[0, ::3] > 0).all() and (W @ lam[0] + b[0])[::3].min() > -1e-12
