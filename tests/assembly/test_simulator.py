"""The data-driven simulator step: force balance at rest, free motion, the C-space row, detection, penetration."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.assembly.coupling import CouplingGains, coupled_free_velocity, default_gains
from contactkit.assembly.detection import detect_nodes, node_penetration
from contactkit.assembly.simulator import (
    STAGES,
    IdentityClustering,
    SimConfig,
    SolverKind,
    simulate,
    step,
)
from contactkit.assembly.task import peg_in_hole_task
from contactkit.depth import detect
from contactkit.engine.reference import SolveStatus, advance_pose, com_position
from contactkit.engine.reference.solvers.virtual_constraint import SurfaceFunction
from contactkit.state import BodyState

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def peg():
    return peg_in_hole_task()


def _rest(pos) -> BodyState:
    return BodyState(pos=np.asarray(pos, float), quat=IDENTITY.copy(), lin_vel=np.zeros(3), ang_vel=np.zeros(3))


@pytest.mark.parametrize("solver", list(SolverKind))
def test_peg_on_the_floor_balances_the_coupling_push(peg, solver):
    """Peg resting on the hole's floor, pressed down by the coupling (gravity is off): at rest the contact wrench
    cancels the coupling wrench, and the push is about k × setpoint depth."""
    gains = default_gains(peg)
    config = SimConfig(solver=solver, tol=1e-8, max_iterations=400)
    state, depth = _rest([0.0, 0.0, 0.0]), 1e-3
    for _ in range(8):
        result = step(peg, state, np.array([0.0, 0.0, -depth]), IDENTITY, gains, IdentityClustering(), config)
        state = result.state
    push = gains.stiffness * depth
    assert result.n_nodes == result.n_clustered > 100
    assert abs(result.applied[2] + push) < 0.02 * push
    assert np.abs(result.wrench + result.applied).max() < 1e-3 * push
    assert np.abs(result.wrench[:2]).max() < 1e-3 * push
    assert np.linalg.norm(state.lin_vel) < 1e-4
    assert set(result.stage_s) == set(STAGES) and all(v >= 0.0 for v in result.stage_s.values())


def test_free_motion_is_the_coupled_pmi_step(peg):
    gains = CouplingGains(1e3, 1.0, 5.0, 0.01)
    state = _rest([0.0, 0.0, 0.08])
    target = np.array([0.001, 0.0, 0.081])
    quat = np.array([np.cos(0.05), 0.0, np.sin(0.05), 0.0])
    result = step(peg, state, target, quat, gains, IdentityClustering(), SimConfig())
    v_free, applied = coupled_free_velocity(peg.body, state, target, quat, gains, 1e-2)
    expected = advance_pose(peg.body, state, v_free, 1e-2)
    assert result.n_nodes == 0 and result.status is SolveStatus.CONVERGED
    assert np.array_equal(result.wrench, np.zeros(6))
    assert np.allclose(result.applied, applied, atol=1e-12)
    assert np.allclose(result.state.pos, expected.pos, atol=1e-15)
    assert np.allclose(result.state.quat, expected.quat, atol=1e-15)


def test_cspace_row_holds_the_tool_on_an_analytic_surface(peg):
    """Far from any node contact, an analytic C-space half-space ``h = z_com - z0`` stops a tool pushed into it:
    it comes to rest with the virtual wrench balancing the push, and lets it go when pulled away."""
    gains = default_gains(peg)
    state = _rest([0.0, 0.0, 0.08])
    z0 = float(com_position(peg.body, state)[2])
    normal = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    surface = SurfaceFunction(value=lambda q: float(q[2] - z0), gradient=lambda q: normal.copy())
    down = np.array([0.0, 0.0, 0.08 - 1e-3])
    for _ in range(5):
        result = step(peg, state, down, IDENTITY, gains, IdentityClustering(), SimConfig(), cspace=surface)
        state = result.state
    assert result.cspace_active and result.cspace_impulse > 0.0 and result.n_nodes == 0
    assert abs(float(com_position(peg.body, state)[2]) - z0) < 1e-9
    assert np.abs(result.wrench + result.applied).max() < 1e-6 * gains.stiffness * 1e-3
    up = step(peg, state, np.array([0.0, 0.0, 0.081]), IDENTITY, gains, IdentityClustering(), SimConfig(),
              cspace=surface)
    assert up.cspace_active and up.cspace_impulse == 0.0 and up.state.pos[2] > state.pos[2]


def test_detection_matches_the_torch_depth_query(peg):
    state = BodyState(pos=np.array([2e-5, -1e-5, 5e-3]), quat=np.array([np.cos(5e-4), np.sin(5e-4), 0.0, 0.0]),
                      lin_vel=np.zeros(3), ang_vel=np.zeros(3))
    ours = detect_nodes(peg, state, 1e-4)
    ref = detect(peg.depth_net, np.zeros(3), IDENTITY, peg.nodes, state.pos, state.quat, 1e-4)
    assert len(ours.depth) > 100
    common, a, b = np.intersect1d(ours.node_index, ref.node_index, return_indices=True)
    assert len(common) >= 0.99 * max(len(ours.depth), len(ref.depth))  # torch queries in float32
    assert np.abs(ours.depth[a] - ref.depth[b]).max() < 1e-7
    assert np.abs(ours.normals[a] - ref.normals[b]).max() < 1e-4
    assert np.allclose(ours.points[a], ref.points[b], atol=1e-15)


def test_node_penetration_of_a_peg_pushed_into_the_wall(peg):
    inside = _rest([0.0, 0.0, 0.01])
    assert node_penetration(peg, inside) == 0.0
    shift = 1e-4
    pushed = _rest([shift, 0.0, 0.01])
    expected = shift - peg.clearance  # the 640-gon's sagitta (0.3 µm) aside
    assert abs(node_penetration(peg, pushed) - expected) < 1e-6
    assert abs(node_penetration(peg, pushed, exact=False) - expected) < 1.2e-5  # the hole net's measured error


def test_simulate_runs_every_setpoint(peg):
    calls = []
    t = 3
    pos = np.tile([0.0, 0.0, 0.08], (t, 1))
    out = simulate(peg, _rest([0.0, 0.0, 0.08]), pos, np.tile(IDENTITY, (t, 1)), default_gains(peg),
                   IdentityClustering(), SimConfig(), progress=lambda i, n: calls.append((i, n)))
    assert len(out) == t and calls == [(1, t), (2, t), (3, t)]
    assert np.isnan(out[0].cspace_h) and not out[0].cspace_active


def test_radial_broad_phase_skips_only_nodes_that_cannot_touch():
    from contactkit.assembly.detection import _detector, _world_nodes
    from contactkit.assembly.task import bolting_task
    from contactkit.engine._kernels_depthnet import evaluate
    from contactkit.geometry.fasteners import screw_pose
    from contactkit.geometry.signed_distance import signed_distance

    nut = bolting_task()
    pos, quat = screw_pose(nut.pitch, 25.0)
    state = BodyState(pos=pos + [1e-4, 0.0, -5e-5], quat=quat, lin_vel=np.zeros(3), ang_vel=np.zeros(3))
    margin = 1e-4
    found = detect_nodes(nut, state, margin)
    world = np.ascontiguousarray(_world_nodes(nut, state))
    ds = _detector(nut).ds
    depth = np.full(len(world), np.inf)
    for s in range(len(ds.kind)):  # every node through every piece of the set, no broad phase
        d, grad = np.empty(len(world)), np.empty((len(world), 3))
        evaluate(ds, s, world, d, grad, margin)
        depth = np.where(np.isfinite(d), d, depth)
    everything = np.flatnonzero(depth < margin)
    skipped = np.setdiff1d(everything, found.node_index)
    assert len(found.depth) > 100 and np.all(np.isin(found.node_index, everything))
    assert np.all(signed_distance(nut.static, world[skipped]) >= margin)


@pytest.mark.parametrize("solver", list(SolverKind))
def test_no_energy_gain_without_drive(peg, solver):
    """No coupling (zero gains): a peg thrown sideways and down into the bore's floor and wall only loses
    kinetic energy in the contact step."""
    from contactkit.engine.reference import generalized_velocity, kinetic_energy

    zero = CouplingGains(0.0, 0.0, 0.0, 0.0)
    state = BodyState(pos=np.array([1e-5, 0.0, 2e-5]), quat=IDENTITY.copy(), lin_vel=np.array([0.004, 0.001, -0.01]),
                      ang_vel=np.array([0.05, -0.02, 0.3]))
    before = kinetic_energy(peg.body, generalized_velocity(peg.body, state))
    result = step(peg, state, state.pos, state.quat, zero, IdentityClustering(), SimConfig(solver=solver, tol=1e-9,
                                                                                             max_iterations=2000))
    after = kinetic_energy(peg.body, generalized_velocity(peg.body, result.state))
    assert result.n_nodes > 100 and np.linalg.norm(result.wrench[:3]) > 0.1
    assert after <= before * (1 + 1e-9)


@pytest.mark.parametrize("margin", [None, 1e-4])
def test_speculative_cspace_row_stops_a_free_tool_before_the_surface(peg, margin):
    """Analytic C-space half-space 20 µm below a resting tool, pushed down hard: the paper's row (active only
    once in collision) lets it cross in one step; the speculative row (``cspace_margin``) stops it short."""
    gains = default_gains(peg)
    state = _rest([0.0, 0.0, 0.08])
    z0 = float(com_position(peg.body, state)[2]) - 2e-5
    normal = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    surface = SurfaceFunction(value=lambda q: float(q[2] - z0), gradient=lambda q: normal.copy())
    config = SimConfig(cspace_margin=margin)
    result = step(peg, state, np.array([0.0, 0.0, 0.079]), IDENTITY, gains, IdentityClustering(), config,
                  cspace=surface)
    h_after = float(com_position(peg.body, result.state)[2]) - z0
    if margin is None:
        assert not result.cspace_active and h_after < -1e-5
    else:
        assert result.cspace_active and result.cspace_impulse > 0.0 and -1e-12 <= h_after < 2e-5


@pytest.mark.parametrize("bad", [{"dt": 0.0}, {"margin": np.nan}, {"cspace_margin": -1e-4}, {"relaxation": 2.0},
                                 {"max_iterations": 0}, {"tol": 0.0}, {"solver": "lemke"}])
def test_bad_settings_are_refused(bad):
    from contactkit.errors import InvalidInputError

    with pytest.raises((InvalidInputError, ValueError)):
        SimConfig(**bad)


def test_warm_start_keeps_the_result_and_saves_sweeps(peg):
    """The peg pressed onto the floor (K-means 12 with a fixed seed: the same clusters at rest): starting
    each solve from the previous step's impulses gives the cold-start trajectory within the solver's tolerance in
    fewer sweeps."""
    from contactkit.assembly.kmeans import KMeansClustering

    gains = default_gains(peg)
    n = 10
    pos, quat = np.tile([0.0, 0.0, -1e-3], (n, 1)), np.tile(IDENTITY, (n, 1))
    runs = {}
    for warm in (False, True):
        config = SimConfig(tol=1e-8, max_iterations=400, warm_start=warm)
        runs[warm] = simulate(peg, _rest([0.0, 0.0, 0.0]), pos, quat, gains, KMeansClustering(), config)
    cold, warm = runs[False], runs[True]
    settled = cold[2:] + warm[2:]  # the first two steps (the impact on the floor) end on the cap in both runs
    sweeps = [[r.iterations for r in run] for run in (cold, warm)]
    assert all(r.status is SolveStatus.CONVERGED for r in settled), sweeps
    assert sum(sweeps[1][2:]) < 0.7 * sum(sweeps[0][2:]), sweeps  # measured 36 vs 136
    push = gains.stiffness * 1e-3
    for a, b in zip(cold, warm, strict=True):
        assert np.abs(a.state.pos - b.state.pos).max() < 1e-9
        assert np.abs(a.wrench[:3] - b.wrench[:3]).max() < 1e-3 * push
