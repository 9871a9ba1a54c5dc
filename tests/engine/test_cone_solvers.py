"""Coulomb-cone nonlinear block SOR (tight-tolerance paper Algorithm 1): conditions, agreement, relaxation, caps."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.reference.solvers import (
    BoxPGS,
    ConeSOR,
    LemkeBoxSolver,
    SingleConeSolver,
    SolveStatus,
    residuals,
)
from contactkit.errors import InvalidInputError

from ._scenes import general_problem, random_problem

TOL = 1e-12


def _assert_coulomb(problem, sol, tol=1e-9):
    lam, u = sol.impulses, sol.velocity.reshape(-1, 3)
    assert np.all(lam[:, 0] >= 0.0) and np.all(u[:, 0] >= -tol)
    assert np.all(np.abs(lam[:, 0] * u[:, 0]) <= tol * np.maximum(1.0, lam[:, 0]))
    norm_t = np.linalg.norm(lam[:, 1:], axis=1)
    bound = problem.mu * lam[:, 0]
    assert np.all(norm_t <= bound * (1 + 1e-12) + 1e-15)
    slip = np.linalg.norm(u[:, 1:], axis=1)
    stick = norm_t < bound * (1 - 1e-9)
    assert np.all(slip[stick] <= tol)
    sliding = slip > tol
    # Maximum dissipation: friction on the boundary, opposite to the slip velocity.
    assert np.allclose(norm_t[sliding], bound[sliding], rtol=1e-8)
    cos = -np.sum(lam[sliding, 1:] * u[sliding, 1:], axis=1) / np.maximum(norm_t[sliding] * slip[sliding], 1e-300)
    assert np.all(cos[bound[sliding] > 0] > 1 - 1e-6)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_sor_satisfies_signorini_cone_and_max_dissipation(k):
    rng = np.random.default_rng(20 + k)
    for _ in range(10):
        p = general_problem(rng, k, rng.uniform(0.0, 1.0))
        sol = ConeSOR(tol=TOL, max_iterations=5000).solve(p)
        assert sol.converged, sol.residuals
        assert max(residuals(p, sol.stacked, ConeSOR.model).values()) <= TOL
        _assert_coulomb(p, sol)


def test_single_contact_sor_is_the_exact_solution():
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = random_problem(rng, 1, rng.uniform(0.0, 1.0))
        a, b = ConeSOR().solve(p), SingleConeSolver().solve(p)
        assert a.converged and a.iterations <= 2
        assert np.allclose(a.impulses, b.impulses, atol=1e-14)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_box_and_cone_agree_when_frictionless(k):
    rng = np.random.default_rng(30 + k)
    for _ in range(8):
        p = general_problem(rng, k, 0.0)
        cone = ConeSOR(tol=TOL, max_iterations=5000).solve(p)
        box = BoxPGS(tol=TOL, max_iterations=5000).solve(p)
        ref = LemkeBoxSolver(tol=TOL).solve(p)
        assert cone.converged and box.converged and ref.converged
        scale = max(1.0, np.abs(ref.impulses).max())
        assert np.allclose(cone.impulses, box.impulses, atol=1e-9 * scale)
        assert np.allclose(cone.impulses, ref.impulses, atol=1e-9 * scale)
        assert np.all(cone.impulses[:, 1:] == 0.0)


def test_box_and_cone_agree_when_frictionless_on_redundant_body_contacts():
    rng = np.random.default_rng(4)
    for _ in range(5):
        p = random_problem(rng, 4, 0.0)
        cone = ConeSOR(tol=TOL, max_iterations=20000).solve(p)
        box = BoxPGS(tol=TOL, max_iterations=20000).solve(p)
        assert cone.converged and box.converged
        dv = p.M_inv @ p.J.T
        assert np.allclose(dv @ cone.stacked, dv @ box.stacked, atol=1e-8)


@pytest.mark.parametrize("alpha", [0.6, 1.3])
def test_relaxation_converges_to_the_same_solution(alpha):
    rng = np.random.default_rng(5)
    for _ in range(5):
        p = general_problem(rng, 2, 0.3)
        ref = ConeSOR(tol=TOL, max_iterations=5000).solve(p)
        relaxed = ConeSOR(tol=TOL, max_iterations=5000, relaxation=alpha).solve(p)
        assert ref.converged and relaxed.converged
        assert np.allclose(relaxed.impulses, ref.impulses, atol=1e-9 * max(1.0, np.abs(ref.impulses).max()))


def test_iteration_cap_is_reported_and_warm_start_helps():
    p = general_problem(np.random.default_rng(6), 3, 0.5)
    capped = ConeSOR(max_iterations=1).solve(p)
    assert capped.status is SolveStatus.ITERATION_LIMIT and not capped.converged and capped.iterations == 1
    assert max(capped.residuals.values()) > ConeSOR().tol
    full = ConeSOR(tol=TOL, max_iterations=5000).solve(p)
    assert full.converged and full.iterations > 1
    warm = ConeSOR(tol=TOL).solve(p, full.stacked)
    assert warm.converged and warm.iterations == 1


def test_warm_start_outside_the_cone_is_projected():
    p = general_problem(np.random.default_rng(7), 2, 0.3)
    start = np.array([-1.0, 5.0, 5.0, 1.0, 5.0, 5.0])
    sol = ConeSOR(tol=TOL, max_iterations=5000).solve(p, start)
    ref = ConeSOR(tol=TOL, max_iterations=5000).solve(p)
    assert sol.converged and np.allclose(sol.impulses, ref.impulses, atol=1e-9 * max(1.0, np.abs(ref.impulses).max()))


def test_bad_settings_are_refused():
    for kwargs in ({"relaxation": 0.0}, {"relaxation": 2.0}, {"tol": -1.0}, {"max_iterations": 0}):
        with pytest.raises(InvalidInputError):
            ConeSOR(**kwargs)
