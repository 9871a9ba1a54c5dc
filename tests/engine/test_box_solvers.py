"""Box-friction MLCP (pushing paper eqs 5, 7, 8): projected Gauss-Seidel against Lemke pivoting."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.reference.solvers import BoxPGS, LemkeBoxSolver, SolveStatus, box_friction_lcp, lemke, solve
from contactkit.errors import InvalidInputError

from ._scenes import general_problem, random_problem

TOL = 1e-12


def _assert_box_mlcp(problem, sol, tol=1e-9):
    lam, u = sol.impulses, sol.velocity.reshape(-1, 3)
    assert np.all(lam[:, 0] >= 0.0) and np.all(u[:, 0] >= -tol)
    assert np.all(np.abs(lam[:, 0] * u[:, 0]) <= tol * np.maximum(1.0, lam[:, 0]))
    bound = (problem.mu * lam[:, 0])[:, None]
    assert np.all(np.abs(lam[:, 1:]) <= bound * (1 + 1e-12) + 1e-15)
    inside = np.abs(lam[:, 1:]) < bound * (1 - 1e-9)
    assert np.all(np.abs(u[:, 1:][inside]) <= tol)  # interior: no slip
    upper = lam[:, 1:] >= bound * (1 - 1e-9)
    lower = lam[:, 1:] <= -bound * (1 - 1e-9)
    assert np.all(u[:, 1:][upper & ~lower] <= tol) and np.all(u[:, 1:][lower & ~upper] >= -tol)


def test_lemke_textbook_lcp_and_ray_termination():
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    res = lemke(M, q)
    assert res.solved and np.allclose(res.z, np.linalg.solve(M, -q))  # both active: w = 0
    res = lemke(np.array([[-1.0]]), np.array([-1.0]))  # w = -z - 1 ≥ 0 has no solution
    assert not res.solved and res.ray_termination
    assert lemke(M, np.array([1.0, 2.0])).pivots == 0


def test_lcp_transformation_round_trip():
    rng = np.random.default_rng(0)
    p = general_problem(rng, 2, 0.3)
    M, q, D = box_friction_lcp(p)
    res = lemke(M, q)
    w = M @ res.z + q
    assert res.solved and np.all(res.z >= 0) and np.all(w >= -1e-10) and abs(res.z @ w) < 1e-10
    assert D.shape == (6, 14)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_pgs_agrees_with_lemke_on_small_problems(k):
    rng = np.random.default_rng(10 + k)
    for _ in range(12):
        p = general_problem(rng, k, rng.uniform(0.0, 0.5))
        a = BoxPGS(tol=TOL, max_iterations=5000).solve(p)
        b = LemkeBoxSolver(tol=TOL).solve(p)
        assert a.converged and b.converged, (a.residuals, b.residuals)
        assert np.allclose(a.impulses, b.impulses, rtol=1e-7, atol=1e-9 * max(1.0, np.abs(b.impulses).max()))
        _assert_box_mlcp(p, a)
        _assert_box_mlcp(p, b)


def test_pgs_and_lemke_agree_on_floating_body_contacts():
    # Redundant contacts (W singular): the impulses may differ, the resulting motion must not.
    rng = np.random.default_rng(3)
    for k in (2, 4):
        for _ in range(5):
            p = random_problem(rng, k, rng.uniform(0.0, 0.6))
            a = BoxPGS(tol=TOL, max_iterations=20000).solve(p)
            b = LemkeBoxSolver(tol=TOL).solve(p)
            assert a.converged and b.converged
            dv = p.M_inv @ p.J.T
            assert np.allclose(dv @ a.stacked, dv @ b.stacked, atol=1e-8)


def test_iteration_cap_is_reported():
    p = general_problem(np.random.default_rng(4), 3, 0.3)
    sol = BoxPGS(max_iterations=1).solve(p)
    assert sol.status is SolveStatus.ITERATION_LIMIT and not sol.converged and sol.iterations == 1
    assert max(sol.residuals.values()) > BoxPGS().tol
    capped = LemkeBoxSolver(max_pivots=1).solve(p)
    assert capped.status is SolveStatus.ITERATION_LIMIT and capped.iterations == 1


def test_warm_start_from_solution_converges_in_one_sweep():
    p = general_problem(np.random.default_rng(5), 2, 0.3)
    exact = LemkeBoxSolver(tol=TOL).solve(p)
    again = solve(p, BoxPGS(), exact.stacked)
    assert again.converged and again.iterations == 1


def test_empty_problem_and_bad_settings():
    p = random_problem(np.random.default_rng(6), 0, 0.3)
    for solver in (BoxPGS(), LemkeBoxSolver()):
        sol = solver.solve(p)
        assert sol.converged and sol.impulses.shape == (0, 3)
    with pytest.raises(InvalidInputError, match="relaxation"):
        BoxPGS(relaxation=2.0)
    with pytest.raises(InvalidInputError, match="tol"):
        BoxPGS(tol=0.0)
    with pytest.raises(InvalidInputError, match="max_iterations"):
        BoxPGS(max_iterations=0)
    q = general_problem(np.random.default_rng(7), 1, 0.3)
    with pytest.raises(InvalidInputError, match="initial"):
        BoxPGS().solve(q, np.zeros(4))
    with pytest.raises(InvalidInputError, match="initial"):
        BoxPGS().solve(q, np.array([np.nan, 0.0, 0.0]))
