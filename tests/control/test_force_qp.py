"""Force-minimising controller (eq 19): OSQP's answer equals the exact optimum found by enumerating
active sets, satisfies the KKT conditions and the bounds; the clip variant equals it when no bound is
active and never beats it; on an impedance-law model the optimum has its closed form."""

import itertools

import numpy as np
import pytest

from contactkit.control.force_qp import (
    COMMAND_SLICE,
    PAPER_MAX_POS_DEV,
    PAPER_MAX_ROT,
    ForceQPConfig,
    qp_terms,
    solve_force_clip,
    solve_force_qp,
)
from contactkit.errors import InvalidInputError
from contactkit.models.linear import PoseCommandFeatures

FEATURES = PoseCommandFeatures()
U_TOL = 1e-7  # [m, rad]
KKT_TOL = 1e-5  # relative to the gradient scale
COST_RTOL = 1e-9


def random_problem(rng, scale=300.0):
    """A random model G (6, 19) in wrench units and features at a random upright-ish pose."""
    G = rng.normal(size=(6, 19)) * scale
    G[:, COMMAND_SLICE] *= rng.uniform(0.2, 3.0, size=6)
    r = rng.normal(size=3) * 0.01
    w = FEATURES(r, np.eye(3), r, np.zeros(3))
    return G, w


def enumerate_optimum(H, g, lo, hi):
    """Exact box-QP minimiser: try every assignment of each coordinate to lower / free / upper."""
    best, best_cost = None, np.inf
    n = len(g)
    for assign in itertools.product((-1, 0, 1), repeat=n):
        a = np.array(assign)
        fixed = a != 0
        u = np.where(a < 0, lo, np.where(a > 0, hi, 0.0))
        free = ~fixed
        if free.any():
            rhs = -(g[free] + H[np.ix_(free, fixed)] @ u[fixed])
            u[free] = np.linalg.solve(H[np.ix_(free, free)], rhs)
        if np.all(u >= lo - 1e-12) and np.all(u <= hi + 1e-12):
            cost = 0.5 * u @ H @ u + g @ u
            if cost < best_cost:
                best, best_cost = u, cost
    return best, best_cost


@pytest.mark.parametrize("seed", range(6))
def test_qp_matches_exact_enumeration_and_kkt(seed):
    rng = np.random.default_rng(seed)
    G, w = random_problem(rng)
    cfg = ForceQPConfig(lam=float(rng.uniform(1e2, 1e5)), mu=float(rng.uniform(0.1, 10.0)))
    H, g, lo, hi, _ = qp_terms(G, w, cfg)
    u_star, cost_star = enumerate_optimum(H, g, lo, hi)
    sol = solve_force_qp(G, w, cfg)
    np.testing.assert_allclose(sol.u, u_star, atol=U_TOL)
    assert sol.cost == pytest.approx(cost_star, rel=COST_RTOL, abs=1e-12)
    # KKT: stationarity H u + g + y = 0, y ≥ 0 on upper bounds, ≤ 0 on lower, 0 when inactive
    scale = np.abs(g).max() + np.abs(H).max() * np.abs(sol.u).max()
    np.testing.assert_allclose(H @ sol.u + g + sol.dual, 0.0, atol=KKT_TOL * scale)
    at_lo, at_hi = sol.u <= lo + 1e-9, sol.u >= hi - 1e-9
    assert np.all(sol.dual[at_hi] >= -KKT_TOL * scale) and np.all(sol.dual[at_lo] <= KKT_TOL * scale)
    assert np.all(np.abs(sol.dual[~(at_lo | at_hi)]) <= KKT_TOL * scale)
    assert sol.active.any(), "this problem family should hit a bound; the test would not exercise it"


@pytest.mark.parametrize("seed", range(6))
def test_bounds_hold_and_clip_never_beats_qp(seed):
    rng = np.random.default_rng(100 + seed)
    G, w = random_problem(rng, scale=3e3)
    r = w[0:3]
    for sol in (solve_force_qp(G, w), solve_force_clip(G, w)):
        assert np.abs(sol.r_des - r).max() <= PAPER_MAX_POS_DEV + 1e-12
        assert np.abs(sol.phi).max() <= PAPER_MAX_ROT + 1e-12
        np.testing.assert_allclose(sol.y_pred, G @ FEATURES(r, np.eye(3), sol.r_des, sol.phi), rtol=1e-10,
                                   atol=1e-9)
    assert solve_force_clip(G, w).cost >= solve_force_qp(G, w).cost - COST_RTOL * abs(solve_force_qp(G, w).cost)


def impedance_model(K: float, K_rot: float, f_ext: np.ndarray, tau_ext: np.ndarray) -> np.ndarray:
    """G of ``y = K (r − r_des) + f_ext``, ``τ = −K_rot φ + τ_ext`` (a quasi-static impedance law)."""
    G = np.zeros((6, 19))
    G[0:3, 0:3] = K * np.eye(3)
    G[0:3, 12:15] = -K * np.eye(3)
    G[3:6, 15:18] = -K_rot * np.eye(3)
    G[:, 18] = np.concatenate([f_ext, tau_ext])
    return G


def test_impedance_law_has_the_closed_form_optimum_and_clip_agrees_inside_the_bounds():
    K, K_rot, lam, mu = 1000.0, 10.0, 1e4, 1.0
    f_ext, tau_ext = np.array([1.5, -0.8, 3.0]), np.array([0.05, -0.02, 0.01])
    G = impedance_model(K, K_rot, f_ext, tau_ext)
    r = np.array([0.002, -0.001, 0.001])
    w = FEATURES(r, np.eye(3), np.zeros(3), np.zeros(3))
    offset = np.array([0.0, 0.0, -0.002])
    cfg = ForceQPConfig(lam=lam, mu=mu)
    qp, clip = solve_force_qp(G, w, cfg, offset=offset), solve_force_clip(G, w, cfg, offset=offset)
    # per axis: min (f − K d)² + λ d²  ⇒  d = K f / (K² + λ); fz is not penalised ⇒ d_z = offset_z
    d = K * f_ext / (K**2 + lam)
    d[2] = offset[2]
    np.testing.assert_allclose(qp.r_des - r, d, atol=U_TOL)
    np.testing.assert_allclose(qp.phi, K_rot * tau_ext / (K_rot**2 + mu), atol=U_TOL)
    assert not qp.active.any()
    np.testing.assert_allclose(clip.u, qp.u, atol=U_TOL)
    # the predicted lateral force drops from f_ext to λ f / (K² + λ)
    np.testing.assert_allclose(qp.y_pred[:2], lam * f_ext[:2] / (K**2 + lam), atol=1e-4)


def test_clip_is_suboptimal_when_a_bound_binds():
    # τx wants φx beyond 3°; fx also depends on φx, so once φx is clipped r_des_x should compensate
    G = impedance_model(1000.0, 10.0, np.array([5.0, -3.0, 0.0]), np.array([5.0, 0.0, 0.0]))
    G[0, 15] = 50.0
    w = FEATURES(np.zeros(3), np.eye(3), np.zeros(3), np.zeros(3))
    qp, clip = solve_force_qp(G, w), solve_force_clip(G, w)
    assert qp.active[3] and clip.active[3] and not qp.active[0]
    H, g, lo, hi, _ = qp_terms(G, w, ForceQPConfig())
    u_star, cost_star = enumerate_optimum(H, g, lo, hi)
    np.testing.assert_allclose(qp.u, u_star, atol=U_TOL)
    assert clip.cost > cost_star + 1e-3 * abs(cost_star)


def test_warm_start_reaches_the_same_solution():
    rng = np.random.default_rng(5)
    G, w = random_problem(rng)
    cold = solve_force_qp(G, w)
    w2 = w.copy()
    w2[0:3] += 1e-4
    np.testing.assert_allclose(solve_force_qp(G, w2, warm=cold).u, solve_force_qp(G, w2).u, atol=U_TOL)


@pytest.mark.parametrize("bad", [
    lambda: solve_force_qp(np.zeros((6, 18)), np.zeros(19)),
    lambda: solve_force_qp(np.zeros((6, 19)), np.full(19, np.nan)),
    lambda: solve_force_clip(np.zeros((6, 19)), np.zeros(19), offset=np.zeros(2)),
    lambda: ForceQPConfig(lam=-1.0),
    lambda: ForceQPConfig(selection=(1.0, 1.0, 0.0)),
    lambda: ForceQPConfig(max_rot=0.0),
])
def test_bad_input_is_refused(bad):
    with pytest.raises(InvalidInputError):
        bad()


def test_feature_layout_matches_the_linear_models_eq18_features():
    """force_qp keeps its own copy of the eq-18 layout (control does not import models): the two agree."""
    from contactkit.control.force_qp import BIAS_INDEX, COMMAND_SLICE, POSE_FEATURE_DIM, STATE_SLICE
    from contactkit.models.linear import POSE_FEATURE_DIM as MODEL_DIM

    rng = np.random.default_rng(0)
    r, r_des, phi = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    w = PoseCommandFeatures()(r, R, r_des, phi)
    assert POSE_FEATURE_DIM == MODEL_DIM == w.shape[-1]
    np.testing.assert_allclose(w[COMMAND_SLICE], np.concatenate([r_des, phi]))
    np.testing.assert_allclose(w[STATE_SLICE][:3], r)
    assert w[BIAS_INDEX] == 1.0
