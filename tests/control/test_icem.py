"""iCEM: known optima (quadratic, LQ double integrator), bounds, infeasibility, memory, determinism."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from contactkit.control.colored_noise import NoiseBoundary
from contactkit.control.icem import ICEMConfig, ICEMState, initial_state, optimize, shift
from contactkit.errors import InvalidInputError

QUADRATIC_TOL = 0.05
"""Largest |a − a*| accepted on the quadratic. The target's entries reach 0.5, the start is 0; over 30
seeds the worst final error was 0.027 with β = 2 and 0.006 with β = 0 (10 calls x 10 iterations x 100)."""

LQ_RELATIVE_GAP = 0.12
"""Accepted relative excess of iCEM's cost over the exact LQ optimum on the double integrator. CEM is a
finite-sample, zeroth-order method and stops short of the optimum; over 20 seeds with these settings the
worst gap was 8 % (mean 5 %). Doing nothing costs 25x the optimum, a sign error or broken elite update
leaves a gap of order 1."""

LQ_OPTIMUM_SLACK = 1e-9
"""iCEM may not beat the global optimum of a convex quadratic by more than round-off."""


def _run(objective, config, seed, calls):
    """``calls`` replans without executing anything (shift by 0), as an MPC loop standing still would."""
    rng = np.random.default_rng(seed)
    state = initial_state(config)
    for _ in range(calls):
        plan, new_state, info = optimize(objective, state, config, rng)
        state = shift(new_state, 0, config)
    return plan, new_state, info


@pytest.mark.parametrize("beta", [0.0, 2.0])
def test_finds_maximum_of_a_quadratic(beta):
    horizon = 10
    target = np.stack(
        [0.5 * np.sin(np.linspace(0.0, 3.0, horizon)), -0.3 * np.cos(np.linspace(0.0, 2.0, horizon))], -1
    )
    config = ICEMConfig(
        lower=-np.ones(2), upper=np.ones(2), horizon=horizon, population=100, iterations=10, beta=beta
    )

    def objective(actions):
        return -np.sum((actions - target) ** 2, axis=(1, 2))

    plan, _, info = _run(objective, config, seed=0, calls=10)
    assert plan.shape == (horizon, 2)
    assert np.max(np.abs(plan - target)) < QUADRATIC_TOL
    assert info.best_value == pytest.approx(objective(plan[None])[0], abs=0.0)


def _double_integrator_lq(horizon, dt, effort_weight, terminal_weight):
    """Exact optimum of the min-effort reach-and-stop problem as a linear least-squares problem.

    ``x_{k+1} = x_k + dt v_k + dt²/2 u_k``, ``v_{k+1} = v_k + dt u_k`` from rest at 0;
    ``J(u) = r Σ u_k² + q_f ((x_H − 1)² + v_H²)`` is ``‖M u − b‖²`` with ``x_H = g_xᵀ u``, ``v_H = g_vᵀ u``.
    """
    j = np.arange(horizon)
    g_x = dt * dt * (horizon - 1 - j) + 0.5 * dt * dt
    g_v = np.full(horizon, dt)
    m = np.vstack(
        [
            np.sqrt(terminal_weight) * g_x,
            np.sqrt(terminal_weight) * g_v,
            np.sqrt(effort_weight) * np.eye(horizon),
        ]
    )
    b = np.concatenate([[np.sqrt(terminal_weight)], [0.0], np.zeros(horizon)])
    u_star = np.linalg.lstsq(m, b, rcond=None)[0]
    return u_star, float(np.sum((m @ u_star - b) ** 2))


def test_double_integrator_reaches_lq_optimum_cost():
    horizon, dt, effort, terminal = 30, 0.1, 1.0, 100.0
    u_star, cost_star = _double_integrator_lq(horizon, dt, effort, terminal)
    bound = 2.0
    assert (
        np.max(np.abs(u_star)) < bound
    )  # the box is inactive, so the unconstrained LQ optimum is the optimum

    def rollout_cost(actions):
        """Simulated cost of ``(N, H, 1)`` force sequences [m/s²] (independent of the LQ matrices)."""
        x = np.zeros(actions.shape[0])
        v = np.zeros(actions.shape[0])
        cost = np.zeros(actions.shape[0])
        for k in range(horizon):
            u = actions[:, k, 0]
            x, v = x + dt * v + 0.5 * dt * dt * u, v + dt * u
            cost += effort * u * u
        return cost + terminal * ((x - 1.0) ** 2 + v**2)

    assert rollout_cost(u_star[None, :, None])[0] == pytest.approx(cost_star, rel=1e-12)
    config = ICEMConfig(lower=[-bound], upper=[bound], horizon=horizon, population=100, iterations=10)
    plan, _, info = _run(lambda a: -rollout_cost(a), config, seed=3, calls=10)
    cost = rollout_cost(plan[None])[0]
    assert cost >= cost_star - LQ_OPTIMUM_SLACK
    assert cost <= cost_star * (1.0 + LQ_RELATIVE_GAP)
    assert -info.best_value == pytest.approx(cost, rel=1e-12)
    assert rollout_cost(np.zeros((1, horizon, 1)))[0] > 20.0 * cost_star


@pytest.mark.parametrize("bad_value", [-np.inf, np.nan])
def test_every_sample_infeasible_returns_clipped_mean(bad_value):
    lower, upper = np.array([-1.0, 0.0]), np.array([1.0, 0.5])
    config = ICEMConfig(lower=lower, upper=upper, horizon=6, init_mean=[1.0, 0.0], init_std=[5.0, 5.0])
    seen = []

    def objective(actions):
        seen.append(actions.copy())
        return np.full(actions.shape[0], bad_value)

    plan, state, info = optimize(objective, initial_state(config), config, np.random.default_rng(0))
    assert not info.feasible and info.best_value == -np.inf
    np.testing.assert_array_equal(plan, np.broadcast_to(config.init_mean, plan.shape))
    assert np.all(plan >= lower) and np.all(plan <= upper)
    for actions in seen:
        assert np.all(actions >= lower) and np.all(actions <= upper)
    assert np.any(np.stack(seen) == upper) and np.any(np.stack(seen) == lower)  # clipping was exercised
    assert state.kept_elites.shape[0] == 0


def test_constraint_via_minus_inf_is_respected():
    """Candidates with any action above 0.2 are infeasible; the unconstrained optimum lies at 0.5."""
    config = ICEMConfig(lower=[-1.0], upper=[1.0], horizon=5, population=50, iterations=8, beta=0.0)

    def objective(actions):
        value = -np.sum((actions - 0.5) ** 2, axis=(1, 2))
        return np.where(np.any(actions > 0.2, axis=(1, 2)), -np.inf, value)

    plan, _, info = _run(objective, config, seed=1, calls=3)
    assert info.feasible and np.all(plan <= 0.2)
    assert np.all(plan > 0.1)  # pushed towards the active constraint


def test_fewer_feasible_candidates_than_kept_elites():
    """Only the first two rows of each population are feasible: two elites, though three would be kept."""
    config = ICEMConfig(
        lower=[-1.0], upper=[1.0], horizon=4, population=40, elite_fraction=0.25, iterations=4
    )
    assert config.n_keep == 3

    def objective(actions):
        values = np.full(actions.shape[0], -np.inf)
        values[:2] = -np.sum(actions[:2] ** 2, axis=(1, 2))
        return values

    plan, state, info = optimize(objective, initial_state(config), config, np.random.default_rng(0))
    assert info.feasible and state.kept_elites.shape == (2, 4, 1)
    assert np.all(np.diff(info.best_per_iteration) >= 0.0)  # the best elite is carried forward
    assert info.best_value == pytest.approx(-np.sum(plan**2), abs=0.0)


def test_same_seed_gives_identical_result():
    config = ICEMConfig(lower=-np.ones(3), upper=np.ones(3), horizon=8)

    def objective(actions):
        return -np.sum(np.cos(3.0 * actions) + actions**2, axis=(1, 2))

    first = _run(objective, config, seed=11, calls=3)
    second = _run(objective, config, seed=11, calls=3)
    other = _run(objective, config, seed=12, calls=3)
    np.testing.assert_array_equal(first[0], second[0])
    for name in ("mean", "std", "kept_elites"):
        np.testing.assert_array_equal(getattr(first[1], name), getattr(second[1], name))
    assert not np.array_equal(first[0], other[0])


def test_mean_is_a_candidate_at_the_last_iteration():
    """With a huge std no sample comes near the optimum at the mean; only the mean candidate hits it."""
    config = ICEMConfig(lower=[-10.0], upper=[10.0], horizon=20, iterations=1, init_std=[5.0])
    plan, _, info = optimize(
        lambda a: -np.sum(a**2, axis=(1, 2)), initial_state(config), config, np.random.default_rng(0)
    )
    np.testing.assert_array_equal(plan, np.zeros((20, 1)))
    assert info.best_value == 0.0


def test_kept_elites_carry_the_best_value_into_the_next_replan():
    config = ICEMConfig(lower=-np.ones(2), upper=np.ones(2), horizon=12, population=20, iterations=3)

    def objective(actions):
        return -np.sum((actions - 0.3) ** 2 + 0.1 * np.sin(5.0 * actions), axis=(1, 2))

    rng = np.random.default_rng(5)
    _, state, info = optimize(objective, initial_state(config), config, rng)
    one_iteration = dataclasses.replace(config, iterations=1, population=20)
    _, _, again = optimize(objective, shift(state, 0, config), one_iteration, rng)
    assert again.best_value >= info.best_per_iteration[-1]


def test_shift_moves_mean_and_elites_and_resets_std():
    config = ICEMConfig(lower=-np.ones(2), upper=np.ones(2), horizon=10, init_mean=[0.1, -0.2])
    rng = np.random.default_rng(2)
    _, state, _ = optimize(lambda a: -np.sum((a - 0.5) ** 2, axis=(1, 2)), initial_state(config), config, rng)
    assert state.kept_elites.shape == (config.n_keep, 10, 2) and state.kept_steps == 10
    shifted = shift(state, 3, config)
    np.testing.assert_array_equal(shifted.mean[:7], state.mean[3:])
    np.testing.assert_array_equal(shifted.mean[7:], np.broadcast_to(config.init_mean, (3, 2)))
    np.testing.assert_array_equal(shifted.std, np.broadcast_to(config.init_std, (10, 2)))
    np.testing.assert_array_equal(shifted.kept_elites[:, :7], state.kept_elites[:, 3:])
    assert shifted.kept_steps == 7

    seen = []

    def recording(actions):
        seen.append(actions.copy())
        return -np.sum(actions**2, axis=(1, 2))

    optimize(recording, shifted, config, rng)
    np.testing.assert_array_equal(seen[0][: config.n_keep, :7], state.kept_elites[:, 3:])
    assert shift(state, 10, config).kept_elites.shape[0] == 0
    no_memory = dataclasses.replace(config, shift_elites=False)
    assert shift(state, 3, no_memory).kept_elites.shape[0] == 0


def test_population_decay_is_optional_and_floored_at_twice_the_elites():
    config = ICEMConfig(lower=[-1.0], upper=[1.0], horizon=4, population=40, iterations=5, decay=2.0)
    sizes = []

    def objective(actions):
        sizes.append(actions.shape[0])
        return -np.sum(actions**2, axis=(1, 2))

    optimize(objective, initial_state(config), config, np.random.default_rng(0))
    n_elites = 4  # ⌈0.1 · 40⌉
    assert sizes == [max(40 // 2**i, 2 * n_elites) for i in range(5)]
    fixed = dataclasses.replace(config, decay=1.0)
    sizes.clear()
    optimize(objective, initial_state(fixed), fixed, np.random.default_rng(0))
    assert sizes == [40] * 5


def test_counts_and_defaults():
    config = ICEMConfig(lower=[-1.0, -2.0], upper=[1.0, 2.0])
    assert (config.horizon, config.population, config.iterations, config.replan_every) == (50, 20, 5, 5)
    assert config.decay == 1.0 and config.noise_boundary is NoiseBoundary.CROPPED
    assert config.n_elites == 2 and config.n_keep == 1
    np.testing.assert_array_equal(config.init_std, [0.5, 1.0])
    np.testing.assert_array_equal(config.init_mean, [0.0, 0.0])
    assert dataclasses.replace(config, population=30).n_elites == 3  # 0.1 · 30 is 3.0000000000000004


def test_objective_receives_read_only_actions():
    config = ICEMConfig(lower=[-1.0], upper=[1.0], horizon=4)

    def mutating(actions):
        actions[:] = 0.0
        return np.zeros(actions.shape[0])

    with pytest.raises(ValueError, match="read-only"):
        optimize(mutating, initial_state(config), config, np.random.default_rng(0))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lower": [1.0], "upper": [1.0]},
        {"lower": [0.0, 0.0], "upper": [1.0]},
        {"lower": [np.nan], "upper": [1.0]},
        {"lower": [0.0], "upper": [1.0], "init_std": [0.0]},
        {"lower": [0.0], "upper": [1.0], "init_mean": [2.0]},
        {"lower": [0.0], "upper": [1.0], "elite_fraction": 0.6},
        {"lower": [0.0], "upper": [1.0], "alpha": 1.0},
        {"lower": [0.0], "upper": [1.0], "decay": 0.5},
        {"lower": [0.0], "upper": [1.0], "horizon": 0},
        {"lower": [0.0], "upper": [1.0], "population": 2.5},
        {"lower": [0.0], "upper": [1.0], "beta": -1.0},
    ],
)
def test_bad_config_is_refused(kwargs):
    with pytest.raises(InvalidInputError):
        ICEMConfig(**kwargs)


def test_bad_objective_and_state_are_refused():
    config = ICEMConfig(lower=[-1.0], upper=[1.0], horizon=4)
    state = initial_state(config)
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidInputError, match="shape"):
        optimize(lambda a: np.zeros(3), state, config, rng)
    with pytest.raises(InvalidInputError, match=r"\+inf"):
        optimize(lambda a: np.full(a.shape[0], np.inf), state, config, rng)
    with pytest.raises(InvalidInputError, match="config asks"):
        optimize(
            lambda a: np.zeros(a.shape[0]), initial_state(dataclasses.replace(config, horizon=5)), config, rng
        )
    with pytest.raises(InvalidInputError, match="steps"):
        shift(state, -1, config)
    with pytest.raises(InvalidInputError):
        ICEMState(mean=np.zeros((4, 1)), std=-np.ones((4, 1)), kept_elites=np.zeros((0, 4, 1)), kept_steps=0)
