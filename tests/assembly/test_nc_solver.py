"""Algorithm 1 (N/C-space block SOR) and the box-PGS baseline: oracles and physical invariants."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.assembly.nc_solver import FrictionKind, solve_nc
from contactkit.collision import Contacts
from contactkit.engine.reference import ConeSOR, RigidBody, SolveStatus, build_problem, kinetic_energy
from contactkit.engine.reference.solvers.virtual_constraint import SurfaceFunction, configuration, cspace_normal
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

BODY = RigidBody(0.3, np.diag([1.0e-4, 1.2e-4, 0.8e-4]), np.array([0.0, 0.0, 0.03]))
DT = 1e-2


def _state(quat=(1.0, 0.0, 0.0, 0.0)) -> BodyState:
    return BodyState(pos=np.zeros(3), quat=np.asarray(quat, float), lin_vel=np.zeros(3), ang_vel=np.zeros(3))


def _contacts(rng: np.random.Generator, k: int, mu: float = 0.3, gap: bool = False) -> Contacts:
    n = rng.normal(size=(k, 3))
    n[:, 2] = np.abs(n[:, 2]) + 1.0
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    d = rng.uniform(-1e-5, 1e-4, k) if gap else rng.uniform(-1e-5, 0.0, k)
    return Contacts(points=rng.normal(size=(k, 3)) * 0.02, normals=n, distances=d, friction=np.full(k, mu))


def _v_free(rng: np.random.Generator) -> np.ndarray:
    return np.concatenate([rng.normal(size=3) * 0.02 - [0, 0, 0.03], rng.normal(size=3) * 0.3])


@pytest.mark.parametrize("seed", range(6))
def test_equals_reference_cone_sor_without_cspace_row(seed):
    rng = np.random.default_rng(seed)
    c, vf = _contacts(rng, 1 + seed % 3, gap=True), _v_free(rng)
    problem = build_problem(c, BODY, _state(), vf, DT)
    ref = ConeSOR(tol=1e-13, max_iterations=20000).solve(problem)
    assert ref.converged
    v_ref = problem.v_free + problem.M_inv @ problem.J.T @ ref.stacked
    # the kernel's slip bisection stops at 2^-36 (engine BISECTION_STEPS): its residual floor is ~1e-12 m/s
    sol = solve_nc(BODY, _state(), c, vf, DT, tol=1e-11, max_iterations=20000)
    assert sol.status is SolveStatus.CONVERGED
    assert np.abs(sol.velocity - v_ref).max() < 1e-9
    assert np.abs(sol.impulses - ref.impulses).max() < 1e-9 * max(1.0, np.abs(ref.impulses).max())


def _half_space(normal: np.ndarray, offset: float) -> SurfaceFunction:
    """``h(q) = n·q - offset``: a half-space of the configuration space (free where ``h > 0``)."""
    return SurfaceFunction(value=lambda q: float(normal @ q - offset), gradient=lambda q: normal.copy())


@pytest.mark.parametrize("into", [True, False])
def test_cspace_row_stops_motion_into_half_space_and_is_inactive_moving_away(into):
    normal = np.array([0.3, -0.2, 1.0, 0.5, 0.0, -0.4])
    state = _state()
    q = configuration(BODY, state)
    surface = _half_space(normal, float(normal @ q) + 1e-6)  # just inside the collision side: h(q) < 0
    row = cspace_normal(BODY, state, surface)
    assert row.h < 0
    vf = -0.05 * row.direction if into else 0.05 * row.direction
    vf = vf + np.array([0.01, 0.0, 0.0, 0.0, 0.02, 0.0])
    sol = solve_nc(BODY, state, Contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0)), vf, DT,
                   cspace_direction=row.direction, tol=1e-12)
    assert sol.status is SolveStatus.CONVERGED
    v_c = float(row.direction @ sol.velocity)
    assert v_c >= -1e-12
    assert sol.cspace_impulse >= 0.0
    assert abs(sol.cspace_impulse * v_c) < 1e-12  # complementarity 0 ≤ λ_C ⊥ v_C ≥ 0
    if into:
        assert sol.cspace_impulse > 0.0 and abs(v_c) < 1e-12
    else:
        assert sol.cspace_impulse == 0.0 and np.array_equal(sol.velocity, vf)


@pytest.mark.parametrize("friction", list(FrictionKind))
@pytest.mark.parametrize("seed", range(4))
def test_no_energy_gain_and_friction_law(friction, seed):
    rng = np.random.default_rng(100 + seed)
    c, vf = _contacts(rng, 5, mu=0.4), _v_free(rng)
    nc = rng.normal(size=6)
    nc /= np.linalg.norm(nc)
    sol = solve_nc(BODY, _state(), c, vf, DT, friction=friction, cspace_direction=nc, tol=1e-10,
                   max_iterations=5000)
    assert kinetic_energy(BODY, sol.velocity) <= kinetic_energy(BODY, vf) * (1 + 1e-12)
    lam = sol.impulses
    assert np.all(lam[:, 0] >= 0.0) and sol.cspace_impulse >= 0.0
    if friction is FrictionKind.CONE:
        assert np.all(np.linalg.norm(lam[:, 1:], axis=1) <= 0.4 * lam[:, 0] * (1 + 1e-9) + 1e-15)
    else:
        assert np.all(np.abs(lam[:, 1:]) <= 0.4 * lam[:, :1] * (1 + 1e-12) + 1e-15)
    assert float(nc @ sol.velocity) >= -1e-9


def test_pgs_box_solution_is_complementary():
    rng = np.random.default_rng(7)
    c, vf = _contacts(rng, 3, mu=0.5), _v_free(rng)
    sol = solve_nc(BODY, _state(), c, vf, DT, friction=FrictionKind.BOX, tol=1e-11, max_iterations=20000)
    assert sol.status is SolveStatus.CONVERGED
    jac = np.einsum("kab,kbn->kan", sol.frames, _point_jacobians(c))
    u = np.einsum("kan,n->ka", jac, sol.velocity)
    assert np.all(u[:, 0] >= -1e-9) and np.all(np.abs(sol.impulses[:, 0] * u[:, 0]) < 1e-12)
    slipping = np.abs(u[:, 1:]) > 1e-8  # a slipping direction is at its bound, opposing the slip
    bound = 0.5 * sol.impulses[:, :1] * np.ones((1, 2))
    assert np.allclose(np.abs(sol.impulses[:, 1:])[slipping], bound[slipping], rtol=1e-6)
    assert np.all(sol.impulses[:, 1:][slipping] * u[:, 1:][slipping] <= 0.0)


def _point_jacobians(c: Contacts) -> np.ndarray:
    from contactkit.engine.reference import body_point_jacobians

    return body_point_jacobians(BODY, _state(), c.points)


def test_contact_order_does_not_change_the_motion():
    rng = np.random.default_rng(3)
    c, vf = _contacts(rng, 2), _v_free(rng)
    perm = np.array([1, 0])
    swapped = Contacts(c.points[perm], c.normals[perm], c.distances[perm], c.friction[perm])
    a = solve_nc(BODY, _state(), c, vf, DT, tol=1e-11, max_iterations=20000)
    b = solve_nc(BODY, _state(), swapped, vf, DT, tol=1e-11, max_iterations=20000)
    assert np.abs(a.velocity - b.velocity).max() < 1e-9
    assert np.abs(a.wrench - b.wrench).max() < 1e-6 * max(1.0, np.abs(a.wrench).max())


def test_iteration_cap_is_reported():
    rng = np.random.default_rng(11)
    c, vf = _contacts(rng, 6), _v_free(rng)
    sol = solve_nc(BODY, _state(), c, vf, DT, max_iterations=1, tol=1e-14)
    assert sol.status is SolveStatus.ITERATION_LIMIT and sol.iterations == 1 and sol.residual > 1e-14


def test_wrench_is_the_momentum_change():
    rng = np.random.default_rng(5)
    c, vf = _contacts(rng, 4), _v_free(rng)
    nc = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    sol = solve_nc(BODY, _state(), c, vf, DT, cspace_direction=nc)
    force = BODY.mass * (sol.velocity[:3] - vf[:3]) / DT  # identity orientation: body = world torques
    torque = BODY.inertia_body @ (sol.velocity[3:] - vf[3:]) / DT
    assert np.allclose(sol.wrench, np.concatenate([force, torque]), rtol=1e-9, atol=1e-9)


def test_newton_single_contact_equals_the_engine_bisection():
    from contactkit.assembly.nc_solver import single_contact_newton
    from contactkit.engine._kernels_solve import invert3, single_contact

    rng = np.random.default_rng(21)
    cases = {"opening": 0, "stick": 0, "slip": 0}
    for _ in range(3000):
        a = rng.normal(size=(3, 3))
        w = a @ a.T + 0.05 * np.eye(3)
        wi = np.empty((3, 3))
        invert3(w, wi)
        mu = rng.uniform(0.05, 1.0)
        b = rng.normal(size=3) * [1.0, 2.0, 2.0]
        ref = np.array(single_contact(w, wi, mu, *b))
        got = np.array(single_contact_newton(w, wi, mu, *b))
        assert np.abs(got - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max())
        stick = -wi @ b
        case = "opening" if b[0] >= 0 else ("stick" if np.allclose(ref, stick) else "slip")
        cases[case] += 1
    assert min(cases.values()) > 100


@pytest.mark.parametrize("friction", list(FrictionKind))
def test_warm_start_from_the_solution_stops_at_once_and_keeps_it(friction):
    """Started from its own converged impulses the solve is already converged (one sweep) and returns them;
    from any other start it converges to a solution within the tolerance of the zero-start one."""
    rng = np.random.default_rng(3)
    body = BODY
    contacts, v_free = _contacts(rng, 6), _v_free(rng)
    cold = solve_nc(body, _state(), contacts, v_free, DT, friction=friction, tol=1e-10, max_iterations=20000)
    assert cold.status is SolveStatus.CONVERGED
    warm = solve_nc(body, _state(), contacts, v_free, DT, friction=friction, tol=1e-10, max_iterations=20000,
                    initial=cold.impulses)
    assert warm.iterations == 1
    np.testing.assert_allclose(warm.impulses, cold.impulses, atol=1e-12)
    np.testing.assert_allclose(warm.velocity, cold.velocity, atol=1e-12)
    other = solve_nc(body, _state(), contacts, v_free, DT, friction=friction, tol=1e-10, max_iterations=20000,
                     initial=np.abs(rng.normal(0.0, 0.01, (6, 3))))
    assert other.status is SolveStatus.CONVERGED
    np.testing.assert_allclose(other.velocity, cold.velocity, atol=1e-8)


def test_bad_warm_start_is_refused():
    rng = np.random.default_rng(4)
    body = BODY
    with pytest.raises(InvalidInputError, match="initial impulses"):
        solve_nc(body, _state(), _contacts(rng, 3), _v_free(rng), DT, initial=np.zeros((2, 3)))
    with pytest.raises(InvalidInputError, match="initial_cspace"):
        solve_nc(body, _state(), _contacts(rng, 3), _v_free(rng), DT, initial_cspace=float("nan"))
