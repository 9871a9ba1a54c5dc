"""Rotating the whole world (meshes, states, action, gravity) rotates every vector feature and target.

This is the invariance the SO(3) augmentation of paper §III-D.a relies on: the augmentation itself
(:func:`rotate_sample`) must give the same graph as building it in the rotated world.
"""

import numpy as np
import pytest

from contactkit.model import ActionMode
from contactkit.models.gnn.graph import GraphConfig, ModelVariant, build_graph, feature_layouts
from contactkit.models.gnn.kinematics import StepSpec, graph_inputs, graph_targets, prepare_scene
from contactkit.models.gnn.samples import acceleration_target, rotate_sample
from contactkit.rotations import quat_mul, quat_rotate, quat_to_mat, rotvec_to_quat

from ._gnn_synthetic import HALF, STEP, box_scene

TOL = 2e-6  # float32 features of magnitude <= ~10


def _tilted_history():
    """A tilted tool whose lowest corner is 3 mm above the floor, moving and turning slowly."""
    q = rotvec_to_quat(np.array([0.35, -0.2, 0.1]))
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * HALF
    z = 0.003 - quat_rotate(q, corners)[:, 2].min()
    states = []
    for k in (2, 1, 0):  # oldest first
        qk = quat_mul(rotvec_to_quat(np.array([0.0, 0.02, 0.03]) * -k), q)
        pos = np.array([0.01, -0.02, z]) - k * np.array([1e-3, -5e-4, -2e-3])
        states.append(np.r_[pos, qk, 0.05, -0.02, -0.1, 0.0, 0.4, 0.6])
    nxt = states[-1].copy()
    nxt[:3] += [1e-3, 0, -1e-3]
    return np.array(states), nxt


def _rotate_world(rot_q):
    rot = quat_to_mat(rot_q)
    scene = box_scene()
    floor = scene.statics[0]
    moved = box_scene(floor_pos=rot @ floor.pos, floor_quat=quat_mul(rot_q, floor.quat))
    step = StepSpec(STEP.dt, tuple(rot @ np.asarray(STEP.gravity)))
    history, nxt = _tilted_history()

    def rot_state(s):
        return np.r_[rot @ s[:3], quat_mul(rot_q, s[3:7]), rot @ s[7:10], rot @ s[10:13]]

    return (scene, STEP, history, nxt), (moved, step, np.array([rot_state(s) for s in history]), rot_state(nxt))


@pytest.mark.parametrize("previous", [False, True])
@pytest.mark.parametrize("variant", list(ModelVariant))
def test_rotating_the_world_rotates_features_and_targets(variant, previous):
    """With ``previous_command`` the previous action's channels (world↔mesh edges, FIGNet+ node features) rotate
    as vectors too and their norms stay."""
    rot_q = rotvec_to_quat(np.array([0.9, -1.7, 0.4]))
    rot = quat_to_mat(rot_q)
    action = np.array([1.0, -2.0, 3.0, 0.05, 0.02, -0.01])
    prev_action = np.array([-0.5, 1.5, 2.0, -0.03, 0.04, 0.02])
    reading = np.array([0.3, -0.1, 4.0, 0.01, 0.02, 0.0])
    config = GraphConfig(variant, 3, 0.01, ActionMode.WRENCH, previous)
    graphs, targets = [], []
    for scene, step, history, nxt in _rotate_world(rot_q):
        arrays = prepare_scene(scene, step)
        turn = (lambda a: a) if step is STEP else (lambda a: np.r_[rot @ a[:3], rot @ a[3:]])
        inputs = graph_inputs(arrays, history, turn(action), turn(prev_action) if previous else None)
        tgt = graph_targets(arrays, history, reading, nxt)  # the sensor reading is body-fixed: unchanged
        graphs.append(build_graph(arrays, inputs, config))
        targets.append((acceleration_target(inputs, tgt), tgt.wrench))
    g0, g1 = graphs
    assert g0.face_senders.shape[0] > 0, "the scene must exercise face edges"
    assert any(block.startswith("prev_") for layout in feature_layouts(config).values()
               for block, _, _ in layout) == previous
    for name in ("om_index", "mo_index", "wm_index", "mw_index", "face_senders", "face_receivers"):
        np.testing.assert_array_equal(getattr(g0, name).numpy(), getattr(g1, name).numpy(), err_msg=name)
    for name, layout in feature_layouts(config).items():
        x0, x1 = getattr(g0, name).numpy().astype(float), getattr(g1, name).numpy().astype(float)
        col = 0
        for block, width, is_vector in layout:
            a, b = x0[:, col : col + width], x1[:, col : col + width]
            expected = a @ rot.T if is_vector else a
            np.testing.assert_allclose(b, expected, atol=TOL, err_msg=f"{name}.{block}")
            col += width
    (acc0, w0), (acc1, w1) = targets
    np.testing.assert_allclose(acc1, acc0 @ rot.T, atol=1e-12)
    np.testing.assert_allclose(w1, np.r_[rot @ w0[:3], rot @ w0[3:]], atol=1e-12)


def test_augmentation_equals_the_rotated_world():
    rot_q = rotvec_to_quat(np.array([-0.3, 2.2, 1.1]))
    (s0, st0, h0, n0), (s1, st1, h1, n1) = _rotate_world(rot_q)
    rot = quat_to_mat(rot_q)
    action = np.array([0.5, 0.2, 6.0, 0.0, 0.01, 0.0])
    prev = np.array([0.1, -0.4, 5.0, 0.02, 0.0, -0.01])
    reading = np.array([0.0, 0.1, 2.0, 0.0, 0.0, 0.01])
    a0, a1 = prepare_scene(s0, st0), prepare_scene(s1, st1)

    def turn(a):
        return np.r_[rot @ a[:3], rot @ a[3:]]

    i0, t0 = graph_inputs(a0, h0, action, prev), graph_targets(a0, h0, reading, n0)
    i1, t1 = graph_inputs(a1, h1, turn(action), turn(prev)), graph_targets(a1, h1, reading, n1)
    ia, ta = rotate_sample(i0, t0, rot)
    for field in ("tool_positions", "tool_centers", "static_positions", "static_centers", "wrench", "prev_wrench"):
        np.testing.assert_allclose(getattr(ia, field), getattr(i1, field), atol=1e-12, err_msg=field)
    np.testing.assert_allclose(ta.next_positions, t1.next_positions, atol=1e-12)
    np.testing.assert_allclose(ta.wrench, t1.wrench, atol=1e-12)
