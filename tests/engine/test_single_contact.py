"""Exact single-contact Coulomb solver (tight-tolerance paper §III-C): opening / stick / slip, oracles, invariants."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.reference.solvers import ContactCase, SingleConeSolver, solve_single_contact
from contactkit.errors import InvalidInputError

from ._scenes import random_problem

TOL = 1e-12


def _random_spd(rng: np.random.Generator) -> np.ndarray:
    a = rng.normal(size=(3, 3))
    return a @ a.T + 0.05 * np.eye(3)


def test_opening_gives_zero_impulse():
    lam, case = solve_single_contact(np.eye(3), np.array([0.3, 5.0, -2.0]), 0.5)
    assert case is ContactCase.OPENING and np.all(lam == 0.0)


@pytest.mark.parametrize("w", [0.5, 2.0])
def test_isotropic_closed_form_stick_and_slip(w):
    # W = w·I (a point mass 1/w): stick iff ‖b_t‖ ≤ μ|b_n|; slip has λ_n = -b_n/w, λ_t = -μλ_n b_t/‖b_t‖.
    mu = 0.4
    W = w * np.eye(3)
    b = np.array([-1.0, 0.3, 0.2])  # ‖b_t‖ = 0.36 ≤ 0.4
    lam, case = solve_single_contact(W, b, mu)
    assert case is ContactCase.STICK and np.allclose(lam, -b / w, atol=TOL)
    b = np.array([-1.0, 0.6, -0.8])  # ‖b_t‖ = 1 > 0.4
    lam, case = solve_single_contact(W, b, mu)
    expected = np.array([1.0 / w, *(-mu / w * b[1:] / np.linalg.norm(b[1:]))])
    assert case is ContactCase.SLIP and np.allclose(lam, expected, atol=TOL)


def test_frictionless_contact():
    W = _random_spd(np.random.default_rng(0))
    lam, case = solve_single_contact(W, np.array([-1.0, 3.0, 1.0]), 0.0)
    assert case is ContactCase.SLIP and lam[1] == lam[2] == 0.0
    assert abs((W @ lam)[0] - 1.0) < TOL


def _check_coulomb(W, b, mu, lam, case):
    u = W @ lam + b
    scale = max(1.0, np.abs(b).max())
    assert lam[0] >= 0.0 and u[0] >= -TOL * scale
    assert abs(lam[0] * u[0]) <= TOL * scale * max(lam[0], 1.0)
    norm_t = np.linalg.norm(lam[1:])
    assert norm_t <= mu * lam[0] * (1 + 1e-12) + 1e-15
    if case is ContactCase.STICK:
        assert np.allclose(u, 0.0, atol=TOL * scale)
    if case is ContactCase.SLIP:
        # On the cone boundary, opposing the slip velocity (maximum dissipation) and u_n = 0.
        assert np.isclose(norm_t, mu * lam[0], rtol=1e-12)
        assert abs(u[0]) <= TOL * scale
        cos = -(lam[1:] @ u[1:]) / (norm_t * np.linalg.norm(u[1:]))
        assert cos > 1.0 - 1e-9


def test_random_anisotropic_problems_satisfy_all_conditions():
    rng = np.random.default_rng(1)
    cases = set()
    for _ in range(400):
        W = _random_spd(rng)
        b = rng.normal(size=3)
        mu = rng.uniform(0.0, 1.5)
        lam, case = solve_single_contact(W, b, mu)
        cases.add(case)
        _check_coulomb(W, b, mu, lam, case)
    assert cases == {ContactCase.OPENING, ContactCase.STICK, ContactCase.SLIP}


def test_slip_friction_minimises_energy_over_the_disk():
    # Maximum dissipation (tight-tolerance paper eq 7): for the solution's λ_n, the friction minimises the
    # end-of-step kinetic energy ½λᵀWλ + bᵀλ over the disk ‖λ_t‖ ≤ μλ_n (check on a fine polar grid).
    rng = np.random.default_rng(2)
    found = 0
    while found < 20:
        W, b, mu = _random_spd(rng), rng.normal(size=3), rng.uniform(0.1, 1.0)
        lam, case = solve_single_contact(W, b, mu)
        if case is not ContactCase.SLIP:
            continue
        found += 1
        angles, fractions = np.meshgrid(np.linspace(0.0, 2 * np.pi, 4001), np.linspace(0.0, 1.0, 41))
        radius = mu * lam[0] * fractions.ravel()
        angles = angles.ravel()
        trial = np.stack([np.full_like(angles, lam[0]), radius * np.cos(angles), radius * np.sin(angles)], 1)
        energy = 0.5 * np.einsum("ka,ab,kb->k", trial, W, trial) + trial @ b
        best = 0.5 * lam @ W @ lam + b @ lam
        assert best <= energy.min() + 1e-12 * max(1.0, abs(best))


def test_single_cone_solver_interface():
    rng = np.random.default_rng(3)
    p = random_problem(rng, 1, 0.5)
    sol = SingleConeSolver().solve(p)
    direct, _ = solve_single_contact(p.W, p.b, 0.5)
    assert sol.converged and sol.iterations == 1
    assert np.array_equal(sol.impulses[0], direct)
    with pytest.raises(InvalidInputError, match="exactly 1 contact"):
        SingleConeSolver().solve(random_problem(rng, 2, 0.5))


@pytest.mark.parametrize(
    "W, b, mu",
    [(np.eye(3), np.array([np.nan, 0, 0]), 0.3), (np.eye(3), np.zeros(3), -1.0), (-np.eye(3), -np.ones(3), 0.3)],
)
def test_single_contact_rejects_bad_input(W, b, mu):
    with pytest.raises(InvalidInputError):
        solve_single_contact(W, b, mu)
