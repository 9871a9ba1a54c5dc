"""Issue 17: the simulator's position-level projection (split impulse) over every detected node.

The velocity solve constrains only the clustered contacts and never pushes out (bias ``max(d, 0)/dt``); before the
projection the nut under random commands sank by millimetres (1 mm within 20 steps with the learned clustering).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from contactkit.assembly import clustering as C
from contactkit.assembly.coupling import default_gains, pose_error
from contactkit.assembly.detection import node_penetration
from contactkit.assembly.node_guard import PROJECTION_SLOP, guard_nodes, project_nodes
from contactkit.assembly.simulator import NodeGuard, SimConfig, step
from contactkit.assembly.task import SIM_DT, bolting_task
from contactkit.engine.reference import RigidBody, generalized_velocity, inverse_mass_matrix, kinetic_energy
from contactkit.errors import InvalidInputError
from contactkit.geometry.fasteners import screw_pose
from contactkit.rotations import quat_mul, rotvec_to_quat
from contactkit.state import BodyState

BODY = RigidBody(mass=0.5, inertia_body=np.diag([1e-3, 2e-3, 3e-3]), com_body=np.zeros(3))
AT_ORIGIN = BodyState.at_rest(np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))


@pytest.fixture(scope="module")
def nut():
    return bolting_task()


def test_one_node_under_the_com_is_lifted_to_the_slop():
    """Closed form: one node at the COM, gap -1 mm along +z: a pure translation of 1 mm - slop along +z."""
    proj = project_nodes(BODY, AT_ORIGIN, np.zeros((1, 3)), np.array([[0.0, 0.0, 1.0]]), np.array([-1e-3]))
    assert np.allclose(proj.displacement, [0.0, 0.0, 1e-3 - PROJECTION_SLOP, 0.0, 0.0, 0.0], atol=1e-12)


def test_projection_is_the_least_mass_weighted_move():
    """Random node rows (normals in a cone about +z, jointly feasible): the projection solves
    ``argmin ½δᵀMδ s.t. g + J δ ≥ 0`` (KKT certificate by NNLS on the active rows), every row ends feasible, and
    without violated rows ``δ = 0``."""
    from scipy.optimize import nnls

    rng = np.random.default_rng(4)
    pts = rng.normal(0.0, 0.02, (40, 3))
    nrm = rng.normal(size=(40, 3))
    nrm[:, 2] = np.abs(nrm[:, 2]) + 1.0
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    gaps = rng.uniform(-2e-4, 1e-4, 40)
    proj = project_nodes(BODY, AT_ORIGIN, pts, nrm, gaps, slop=0.0, tol=1e-10, max_sweeps=20000)
    jn = np.concatenate([nrm, np.cross(pts, nrm)], axis=1)  # COM at the origin, identity rotation
    assert proj.violation <= 1e-10 and (gaps + jn @ proj.displacement).min() >= -1e-10
    # KKT certificate of the convex QP: M δ = J_Aᵀ λ with λ ≥ 0 on the active rows (NNLS residual ~ 0)
    mass = np.linalg.inv(inverse_mass_matrix(BODY))
    active = gaps + jn @ proj.displacement < 1e-9
    lam, residual = nnls(jn[active].T * 1e3, mass @ proj.displacement * 1e3)
    assert active.sum() >= 1 and residual < 1e-6 * np.linalg.norm(mass @ proj.displacement * 1e3)
    idle = project_nodes(BODY, AT_ORIGIN, pts, nrm, np.abs(gaps), slop=0.0)
    assert np.all(idle.displacement == 0.0)


def test_bad_rows_are_refused():
    with pytest.raises(InvalidInputError, match="points and normals"):
        project_nodes(BODY, AT_ORIGIN, np.zeros((2, 3)), np.zeros((1, 3)), np.zeros(2))
    with pytest.raises(InvalidInputError, match="gaps"):
        project_nodes(BODY, AT_ORIGIN, np.zeros((1, 3)), np.array([[0.0, 0.0, 1.0]]), np.array([np.nan]))
    with pytest.raises(InvalidInputError, match="slop"):
        project_nodes(BODY, AT_ORIGIN, np.zeros((1, 3)), np.array([[0.0, 0.0, 1.0]]), np.zeros(1), slop=-1.0)


def _sideways(nut, shift: float) -> BodyState:
    pos, quat = screw_pose(nut.pitch, 0.0, z0=nut.pitch)
    return BodyState.at_rest(pos + np.array([shift, 0.0, 0.0]), quat)


def test_a_penetrating_nut_is_pushed_out_and_its_velocity_kept(nut):
    """The nut shifted 0.3 mm sideways (play 0.2 mm): its nodes are inside the bolt. Without the projection (the
    paper's velocity-level rows) the penetration stays; with it, a few steps remove it. The wrench and the
    velocity of a step are those of the velocity solve (no kinetic energy added)."""
    gains, cl = default_gains(nut), C.LearnedClustering(C.ClusteringNet(C.init_params(np.random.default_rng(7)),
                                                                        *C.default_ranges(nut)))
    start = _sideways(nut, 3e-4)
    before = node_penetration(nut, start)
    assert before > 5e-5
    results = {}
    for mode in NodeGuard:
        state, cfg = start, SimConfig(node_guard=mode)
        for k in range(4):
            r = step(nut, state, state.pos, state.quat, gains, cl, cfg)
            results[mode, k] = r
            state = r.state
        results[mode] = node_penetration(nut, state)
    assert results[NodeGuard.NONE] > 0.8 * before
    assert results[NodeGuard.NODES] < 3e-5
    first, plain = results[NodeGuard.NODES, 0], results[NodeGuard.NONE, 0]
    assert first.projected > 5e-5 and plain.projected == 0.0
    assert np.array_equal(first.wrench, plain.wrench)
    assert np.allclose(generalized_velocity(nut.body, first.state), generalized_velocity(nut.body, plain.state),
                       atol=1e-15)


def _commands(nut, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random arbitrary setpoints about the nut's screwed pose: OU spin (3 rad/s), offsets (2 mm), tilts (0.03 rad),
    correlation time 0.5 s (the robustness experiment's generator, inline)."""
    a, x, angle = math.exp(-SIM_DT / 0.5), np.zeros(6), 0.0
    scale = np.array([3.0, 2e-3, 2e-3, 2e-3, 0.03, 0.03])
    pos, quat = np.zeros((n, 3)), np.zeros((n, 4))
    for t in range(n):
        x = a * x + math.sqrt(1 - a * a) * scale * rng.standard_normal(6)
        angle = abs(angle + x[0] * SIM_DT)
        p, q = screw_pose(nut.pitch, angle, z0=nut.pitch)
        pos[t], quat[t] = p + x[1:4], quat_mul(rotvec_to_quat(np.array([x[4], x[5], 0.0])), q)
    return pos, quat


def test_random_commands_keep_the_nut_within_the_play(nut):
    """40 steps (0.4 s) of random commands, learned clustering: the exact node penetration stays far below the
    0.2 mm play (the paper's step, ``NodeGuard.NONE``: 1.7 mm), no NaN, and the energy (kinetic + coupling springs,
    each step against its own setpoint) does not grow."""
    gains = default_gains(nut)
    cl = C.LearnedClustering(C.ClusteringNet(C.init_params(np.random.default_rng(7)), *C.default_ranges(nut)))
    pos, quat = _commands(nut, 40, np.random.default_rng([0, 3]))
    state, worst, growth = BodyState.at_rest(*screw_pose(nut.pitch, 0.0, z0=nut.pitch)), 0.0, 0.0
    for t in range(len(pos)):
        new = step(nut, state, pos[t], quat[t], gains, cl, SimConfig()).state
        assert np.isfinite(new.as_array()).all()
        growth += _energy(nut, gains, new, pos[t], quat[t]) - _energy(nut, gains, state, pos[t], quat[t])
        worst, state = max(worst, node_penetration(nut, new)), new
    assert worst < 1e-4
    assert growth < 0.0


def _energy(nut, gains, state, sp_pos, sp_quat) -> float:
    e, phi = pose_error(nut.body, state, sp_pos, sp_quat)
    return (kinetic_energy(nut.body, generalized_velocity(nut.body, state)) + 0.5 * gains.stiffness * float(e @ e)
            + 0.5 * gains.angular_stiffness * float(phi @ phi))


def test_velocity_guard_only_removes_approach_velocity():
    """Random node rows and velocity: after :func:`guard_nodes` no row approaches faster than its gap allows
    (``n·J V + max(d, 0)/dt ≥ 0``), the impulses push only (``λ ≥ 0``, zero where a row is left open), and the
    kinetic energy ``½ VᵀM V`` does not rise."""
    from scipy.optimize import nnls

    rng = np.random.default_rng(11)
    pts, nrm = rng.normal(0.0, 0.02, (30, 3)), rng.normal(size=(30, 3))
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    depth, v0, dt = rng.uniform(-1e-4, 1e-4, 30), rng.normal(0.0, 0.05, 6), 0.01
    v, impulse = guard_nodes(BODY, AT_ORIGIN, pts, nrm, depth, v0, dt, tol=1e-12, max_sweeps=100000)
    jn = np.concatenate([nrm, np.cross(pts, nrm)], axis=1)
    rows = jn @ v + np.maximum(depth, 0.0) / dt
    assert rows.min() >= -1e-10
    mass = np.linalg.inv(inverse_mass_matrix(BODY))
    assert np.allclose(mass @ (v - v0), impulse, atol=1e-12)
    active = rows < 1e-9
    lam, residual = nnls(jn[active].T, impulse)  # the impulse is J_Aᵀλ with λ ≥ 0 on the closed rows only
    assert active.any() and residual < 1e-8 * np.linalg.norm(impulse)
    assert 0.5 * v @ mass @ v <= 0.5 * v0 @ mass @ v0

