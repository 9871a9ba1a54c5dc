"""The engine's numba kernels against the reference code they stand in for (differential tests).

Node contacts against COAL (:mod:`contactkit.collision`), the matrix-free solvers against
:class:`~contactkit.engine.reference.solvers.BoxPGS` / :class:`~contactkit.engine.reference.solvers.ConeSOR` and
:func:`~contactkit.engine.reference.solvers.solve_single_contact`, the impedance target and law against
:mod:`contactkit.control.impedance`, the F/T reading against :func:`contactkit.engine.reference.problem.contact_wrench`;
plus canonical order and the reduction rule."""

import numpy as np
import pytest

from contactkit.collision import CollisionWorld, labelled_contacts
from contactkit.control.impedance import damping_gains, impedance_wrench, pose_target
from contactkit.engine._kernels_contacts import node_contacts
from contactkit.engine._kernels_dynamics import Control, control_wrench, pose_delta_target
from contactkit.engine._kernels_geometry import INFO_MID, INFO_STOP, contact_geometry, raw_capacity
from contactkit.engine._kernels_reduce import reduce_contacts
from contactkit.engine._kernels_solve import build_rows, project_positions, single_contact, solve_box, solve_cone
from contactkit.engine.reference import (
    BoxPGS,
    ConeSOR,
    build_problem,
    contact_wrench,
    free_velocity,
    inverse_mass_matrix,
)
from contactkit.engine.reference.solvers import solve_single_contact
from contactkit.engine.sensing import contact_ft
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat
from contactkit.tasks import peg_in_hole

from ._scenes import random_body, random_contacts, random_state
from ._world_scenes import box_scene

NODE_GAP_TOL = 1e-9
"""Where the closest features are a vertex and a face (or parallel faces), node contacts and COAL agree on
the smallest gap to this [m] (both exact up to rounding)."""
SOLVER_TOL = 1e-12
"""Convergence tolerance of both kernel and reference in the differential solver tests [m/s]."""
VELOCITY_AGREEMENT = 1e-8
"""Kernel and reference end-of-step velocities agree to this [m/s, rad/s]."""


def _node_gaps(scene, pos, quat, margin=1e-3):
    geo = contact_geometry(CollisionWorld(scene), 2e-3)
    cache_t = np.full((len(geo.tool_verts), len(geo.env.info)), -1, np.int64)
    cache_e = np.full((len(geo.env_verts), len(geo.tool.info)), -1, np.int64)
    out = np.zeros((raw_capacity(geo), 9))
    rot = quat_to_mat(quat)
    k = node_contacts(geo, rot, pos, np.zeros((2, 6)), pos + rot @ scene.tool.com, margin, 0.0, 0.0, cache_t,
                      cache_e, out)
    return out[:k]


@pytest.mark.parametrize(
    "scene_name, offset, rotvec",
    [
        ("box", [0.0, 0.0, 3e-4], [0.0, 0.0, 0.3]),  # flat on the table, 0.3 mm up: four corners
        ("box", [0.0, 0.0, 2e-3], [0.05, -0.03, 0.0]),  # tilted: one corner lowest
        ("box", [0.0, 0.0, -1e-4], [0.0, 0.0, 0.0]),  # 0.1 mm into the table
        ("hexagon", [3e-4, 2e-4, 0.005], [0.0, 0.0, 0.0]),  # in the hole, off centre
        ("hexagon", [1.2e-3, 0.0, 0.005], [0.0, 0.0, 0.0]),  # 0.2 mm into the +x wall
        ("circle", [0.0, 4e-5, 0.0], [0.0, 0.0, 0.0]),  # on the floor of a 64-sided hole, near a wall
    ],
)
def test_node_contacts_find_the_gap_coal_finds(scene_name, offset, rotvec):
    if scene_name == "box":
        scene = box_scene(height=0.0)
        pos = scene.tool.init_pos + offset
    else:
        scene = peg_in_hole(scene_name, 1e-3 if scene_name == "hexagon" else 5e-5, circle_segments=64)
        pos = scene.target_pos + offset
    quat = rotvec_to_quat(np.array(rotvec, dtype=float))
    coal = labelled_contacts(CollisionWorld(scene), pos, quat, 1e-3).contacts
    rows = _node_gaps(scene, pos, quat)
    assert rows[:, 0].min() == pytest.approx(coal.distances.min(), abs=NODE_GAP_TOL)
    deepest = np.argmin(rows[:, 0])
    assert rows[deepest, 1:4] @ coal.normals[np.argmin(coal.distances)] > 1.0 - 1e-9


def test_internal_faces_of_a_slot_on_the_table():
    """Wall pieces: two sides against their neighbours and the bottom on the floor slab are internal; the
    floor slab's bottom sits on the table; the table and the hole's floor are external."""
    scene = peg_in_hole("hexagon", 1e-3)
    geo = contact_geometry(CollisionWorld(scene), 2e-3)
    internal = geo.env.info[:, INFO_STOP] - geo.env.info[:, INFO_MID]
    assert internal.tolist() == [0] + [3] * 6 + [1]  # table, six walls, floor slab


def _random_rows(rng, k):
    rows = np.zeros((k, 9))
    normals = rng.normal(size=(k, 3)) + [0.0, 0.0, 1.5]
    rows[:, 1:4] = normals / np.linalg.norm(normals, axis=1, keepdims=True)
    rows[:, 0] = np.round(rng.uniform(-1e-5, 1e-5, k), 7)  # repeated depths: ties broken by key
    rows[:, 4:7] = rng.normal(0.0, 0.02, (k, 3))
    rows[:, 7] = 0.5
    rows[:, 8] = rng.permutation(k) * 7.0 + 3.0
    return rows


@pytest.mark.parametrize("k, max_contacts", [(10, 48), (120, 24)])
def test_reduced_contacts_are_canonical_whatever_the_detection_order(k, max_contacts):
    rng = np.random.default_rng(1)
    rows = _random_rows(rng, k)
    results = []
    for order in (np.arange(k), rng.permutation(k), rng.permutation(k)):
        out = np.zeros((max_contacts, 9))
        n = reduce_contacts(rows[order].copy(), k, max_contacts, np.cos(0.35), 4, out)
        results.append(out[:n].copy())
    assert all(np.array_equal(results[0], r) for r in results[1:])
    assert np.all(np.diff(results[0][:, 8]) > 0)  # increasing key
    assert len(results[0]) == min(k, max_contacts)


def test_reduction_keeps_each_clusters_deepest_and_spread():
    """Two flat patches (floor and one wall): at most four points each, the deepest kept, extremes kept."""
    grid = np.stack(np.meshgrid(np.linspace(-0.01, 0.01, 6), np.linspace(-0.01, 0.01, 6)), -1).reshape(-1, 2)
    floor = np.zeros((36, 9))
    floor[:, 3], floor[:, 4:6], floor[:, 0] = 1.0, grid, 1e-6
    floor[7, 0] = -2e-6
    wall = np.zeros((36, 9))
    wall[:, 1], wall[:, 5:7], wall[:, 0] = 1.0, grid, 3e-6
    raw = np.concatenate([floor, wall])
    raw[:, 8] = np.arange(72, dtype=float)
    out = np.zeros((8, 9))
    n = reduce_contacts(raw.copy(), 72, 8, np.cos(0.35), 4, out)
    kept = set(out[:n, 8].astype(int).tolist())
    assert n == 8 and 7 in kept  # the deepest floor point
    assert sum(key < 36 for key in kept) == 4 and sum(key >= 36 for key in kept) == 4
    corners = {0, 5, 30, 35}
    assert len(corners & kept) >= 2  # farthest-point sampling reaches the patch's corners


def _kernel_problem(body, state, contacts, dt=1e-3):
    """Kernel inputs for the same problem as :func:`build_problem` (rows, Jacobians, blocks, bias)."""
    k = contacts.count
    rows = np.zeros((k, 9))
    rows[:, 0], rows[:, 1:4], rows[:, 4:7], rows[:, 7] = contacts.distances, contacts.normals, contacts.points, 0.0
    rot = quat_to_mat(state.quat)
    com = state.pos + rot @ body.com_body
    frames, jac, m_inv_jt, blocks = (np.zeros((k, 3, 3)), np.zeros((k, 3, 6)), np.zeros((k, 3, 6)),
                                     np.zeros((k, 3, 3)))
    build_rows(rows, k, com, rot, inverse_mass_matrix(body), frames, jac, m_inv_jt, blocks)
    return jac, m_inv_jt, blocks, np.maximum(contacts.distances, 0.0) / dt


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("mu", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("cone", [True, False])
def test_matrix_free_solvers_match_the_reference_solvers(k, mu, cone):
    rng = np.random.default_rng(10 * k + int(10 * mu))
    body, state = random_body(rng), random_state(rng)
    contacts = random_contacts(rng, body, state, k, mu)
    state = state.replace(lin_vel=state.lin_vel - 2.0 * contacts.normals.mean(axis=0))
    v_free = free_velocity(body, state, 1e-3)
    problem = build_problem(contacts, body, state, v_free, 1e-3)
    jac, m_inv_jt, blocks, bias = _kernel_problem(body, state, contacts)
    assert jac.reshape(-1, 6) == pytest.approx(problem.J, abs=1e-14)
    reference = (ConeSOR if cone else BoxPGS)(tol=SOLVER_TOL, max_iterations=100_000).solve(problem)
    lam, v = np.zeros((k, 3)), v_free.copy()
    kernel = solve_cone if cone else solve_box
    kernel(k, jac, m_inv_jt, blocks, bias, contacts.friction, lam, v, 100_000, SOLVER_TOL, 1.0, 1.0)
    v_ref = problem.v_free + problem.M_inv @ problem.J.T @ reference.stacked
    assert v == pytest.approx(v_ref, abs=VELOCITY_AGREEMENT)
    if k == 1:
        assert lam == pytest.approx(reference.impulses, abs=1e-10)


def test_single_contact_kernel_matches_the_reference():
    rng = np.random.default_rng(4)
    for _ in range(200):
        a = rng.normal(size=(3, 3))
        w = a @ a.T + 0.1 * np.eye(3)
        b = rng.normal(size=3)
        mu = float(rng.uniform(0.0, 1.5))
        expected, _ = solve_single_contact(w, b, mu)
        got = single_contact(w, np.linalg.inv(w), mu, *b)
        assert np.array(got) == pytest.approx(expected, rel=1e-8, abs=1e-12)


def test_position_projection_meets_every_target_with_complementarity():
    rng = np.random.default_rng(2)
    rows = rng.normal(size=(5, 6))
    rows[:, :3] /= np.linalg.norm(rows[:, :3], axis=1, keepdims=True)
    m_inv = np.diag([2.0, 2.0, 2.0, 30.0, 40.0, 50.0])
    target = np.array([1e-3, -2e-3, 0.0, 5e-4, -1e-4])
    shift = np.zeros(6)
    project_positions(5, rows, m_inv, target, 10_000, 1e-14, shift)
    assert np.all(rows @ shift >= target - 1e-10)
    lam = np.linalg.lstsq(rows.T, np.linalg.solve(m_inv, shift), rcond=None)[0]
    assert np.all(lam >= -1e-9) and np.abs(lam * (rows @ shift - target)).max() < 1e-10


def test_pose_delta_target_matches_pose_target():
    scene = peg_in_hole("hexagon", 1e-3)
    rng = np.random.default_rng(5)
    for _ in range(20):
        quat = rotvec_to_quat(rng.normal(0.0, 0.5, 3))
        com = rng.normal(0.0, 0.1, 3)
        state = np.concatenate([com, quat, np.zeros(6)])
        delta = rng.normal(0.0, 0.2, 6)  # often beyond the step limits: clipped
        pos, target = pose_delta_target(state, scene.tool.com, delta, scene.controller.max_pos_step,
                                        scene.controller.max_rot_step)
        ref_pos, ref_quat = pose_target(com - quat_to_mat(quat) @ scene.tool.com, quat, delta, scene.controller)
        assert pos == pytest.approx(ref_pos, abs=1e-15) and target == pytest.approx(ref_quat, abs=1e-15)


@pytest.mark.parametrize("scale", [1e-4, 1.0])
def test_control_wrench_is_the_impedance_law(scale):
    """Saturated (large errors), the explicit wrench is :func:`impedance_wrench`; below the limits it is its
    stiffness part, the damping being implicit in the step."""
    scene = peg_in_hole("hexagon", 1e-3)
    gains, tool = scene.controller, scene.tool
    d_pos, d_rot = damping_gains(gains, tool.mass, np.linalg.eigvalsh(tool.inertia))
    rng = np.random.default_rng(6)
    pos, quat = rng.normal(0.0, 0.1, 3), rotvec_to_quat(rng.normal(0.0, 0.5, 3))
    target_pos = pos + scale * rng.normal(0.0, 1.0, 3)
    target_quat = quat_mul(rotvec_to_quat(rng.normal(0.0, 3.0 * scale, 3)), quat)
    v, w = rng.normal(0.0, scale, 3), rng.normal(0.0, scale, 3)
    ctrl = Control(True, target_pos, target_quat, gains.stiffness_pos, gains.stiffness_rot, d_pos, d_rot,
                   gains.max_force, gains.max_torque, 2.5, np.zeros(6))
    force, torque, imp_f, imp_t = control_wrench(ctrl, pos, quat, v, w)
    law = impedance_wrench(pos, quat, v, w, target_pos, target_quat, gains, d_pos, d_rot, 2.5)
    assert imp_f == imp_t == (scale < 1.0)
    damping = np.concatenate([d_pos * v, d_rot * w]) if scale < 1.0 else np.zeros(6)
    assert np.concatenate([force, torque]) - damping == pytest.approx(law, abs=1e-12)


def test_contact_ft_is_the_contact_wrench_in_the_sensor_frame():
    rng = np.random.default_rng(8)
    body, state = random_body(rng), random_state(rng)
    contacts = random_contacts(rng, body, state, 4, 0.5)
    problem = build_problem(contacts, body, state, free_velocity(body, state, 2e-3), 2e-3)
    impulses = rng.normal(size=(4, 3))
    origin, sensor_rot = rng.normal(size=3), quat_to_mat(rotvec_to_quat(rng.normal(size=3)))
    rows = np.zeros((4, 9))
    rows[:, 4:7] = contacts.points
    reading = np.zeros(6)
    contact_ft(4, rows, problem.frames, impulses, problem.dt, origin, sensor_rot, reading)
    world = contact_wrench(problem, impulses, origin)
    assert reading == pytest.approx(np.concatenate([sensor_rot.T @ world[:3], sensor_rot.T @ world[3:]]), abs=1e-12)
