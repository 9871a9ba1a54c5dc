"""Graph construction invariants (paper §III-C.1, appendix V-A): counts, dimensions, symmetry, radius."""

import numpy as np
import pytest
import torch

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn.face_edges import FACE_FEATURE_DIM, face_interaction_edges
from contactkit.models.gnn.graph import (
    GraphConfig,
    ModelVariant,
    batch_graphs,
    build_graph,
    feature_layouts,
    layout_dim,
)
from contactkit.models.gnn.kinematics import graph_inputs, prepare_scene
from contactkit.models.gnn.triangles import triangle_pair_closest_points

from ._gnn_synthetic import HALF, MASS, STEP, box_scene, flight_trajectory, slide_trajectory, windows_from

ACT = GraphConfig(ModelVariant.ACT_FIGNET, 3, 0.01, ActionMode.WRENCH)
PLUS = GraphConfig(ModelVariant.FIGNET_PLUS, 3, 0.01, ActionMode.WRENCH)


@pytest.fixture(scope="module")
def arrays():
    return prepare_scene(box_scene(), STEP)


def _sliding_inputs(arrays, seed=0):
    w = windows_from(*slide_trajectory(np.random.default_rng(seed), 3))[0]
    return graph_inputs(arrays, w["history"].numpy(), w["action"].numpy())


def test_counts_and_dimensions(arrays):
    inputs = _sliding_inputs(arrays)
    g = build_graph(arrays, inputs, ACT)
    n_tool, n_mesh, n_obj = 8, 16, 2
    assert g.mesh_x.shape[0] == n_mesh and g.object_x.shape[0] == n_obj
    assert g.world_x.shape[0] == 2 * n_obj  # a force and a torque node per body
    assert g.om_index.shape == g.mo_index.shape == (2, n_mesh)
    assert g.wm_index.shape == g.mw_index.shape == (2, 2 * n_mesh)
    assert g.tool_nodes.tolist() == list(range(n_tool))
    for name, layout in feature_layouts(ACT).items():
        assert getattr(g, name).shape[1] == layout_dim(layout), name
    assert g.face_x.shape[1] == FACE_FEATURE_DIM == 34
    assert g.mesh_x.shape[1] == 2 * 3 + 3  # h-1 displacements + [m, mu, b]
    assert g.face_senders.shape[0] > 0, "a tool resting on the floor must have face edges"


def test_object_mesh_edges_are_symmetric(arrays):
    g = build_graph(arrays, _sliding_inputs(arrays), ACT)
    assert torch.equal(g.mo_index, g.om_index.flip(0))
    torch.testing.assert_close(g.mo_x[:, :3], -g.om_x[:, :3])
    torch.testing.assert_close(g.mo_x[:, 3], g.om_x[:, 3])
    assert torch.equal(g.mw_index, g.wm_index.flip(0))
    # each mesh node belongs to exactly one object: tool vertices to object 0
    assert g.om_index[0, :8].eq(0).all() and g.om_index[0, 8:].eq(1).all()


def test_world_edges_carry_the_wrench_and_vanish_for_static_bodies(arrays):
    inputs = _sliding_inputs(arrays)
    g = build_graph(arrays, inputs, ACT)
    static = g.wm_index[1] >= 8
    assert static.sum() == 16 and g.wm_x[static].abs().max() == 0 and g.mw_x[g.mw_index[0] >= 8].abs().max() == 0
    force_rows, torque_rows = g.wm_x[:8], g.wm_x[16:24]
    w = torch.tensor(inputs.wrench, dtype=torch.float32)
    torch.testing.assert_close(force_rows[:, :3], w[:3].expand(8, 3))  # eq. 12
    torch.testing.assert_close(force_rows[:, 3], w[:3].norm().expand(8))
    torch.testing.assert_close(torque_rows[:, :3], w[3:].expand(8, 3))  # eq. 13
    torch.testing.assert_close(torque_rows[:, 4:7], g.om_x[:8, :3])  # vertex minus centre of mass
    torch.testing.assert_close(g.mw_x[:, :3], -g.wm_x[:, :3])
    # world node features are one-hot types
    assert g.world_x.tolist() == [[1, 0], [0, 1], [1, 0], [0, 1]]


def test_net_wrench_adds_the_weight(arrays):
    """A zero action on a tool at rest leaves only gravity: f = m g, τ = 0 about the centre of mass."""
    history = np.tile(np.r_[0, 0, HALF, 1, 0, 0, 0, np.zeros(6)], (3, 1))
    inputs = graph_inputs(arrays, history, np.zeros(6))
    np.testing.assert_allclose(inputs.wrench, [0, 0, -MASS * 9.81, 0, 0, 0])


def test_mesh_features_are_displacements(arrays):
    """Eq. 10 on a pure translation: every tool vertex has the body displacement, most recent first."""
    d1, d2 = np.array([1e-3, 2e-3, -1e-3]), np.array([4e-3, 0.0, 1e-3])
    history = np.tile(np.r_[0, 0, 0.1, 1, 0, 0, 0, np.zeros(6)], (3, 1))
    history[1, :3] += d1
    history[2, :3] += d1 + d2
    g = build_graph(arrays, graph_inputs(arrays, history, np.zeros(6)), ACT)
    np.testing.assert_allclose(g.mesh_x[:8, 0:3].numpy(), np.tile(d2, (8, 1)), atol=1e-7)
    np.testing.assert_allclose(g.mesh_x[:8, 3:6].numpy(), np.tile(d1, (8, 1)), atol=1e-7)
    np.testing.assert_allclose(g.mesh_x[8:, :6].numpy(), 0.0)  # the floor does not move
    np.testing.assert_allclose(g.mesh_x[:8, 6:9].numpy(), np.tile([MASS, 0.5, 1.0], (8, 1)), rtol=1e-6)
    np.testing.assert_allclose(g.mesh_x[8:, 6:9].numpy(), np.tile([0.0, 0.5, 0.0], (8, 1)), rtol=1e-6)
    assert g.face_senders.shape[0] == 0, "a tool 10 cm up has no face edges"


def test_face_edges_exactly_those_within_the_radius(arrays):
    rng = np.random.default_rng(5)
    for seed in range(4):
        inputs = _sliding_inputs(arrays, seed)
        pos = np.concatenate([inputs.tool_positions[-1], inputs.static_positions])
        pos[:8] += rng.normal(0, 3e-3, (8, 3))  # deform: some pairs just in, some just out
        radius = 0.004
        edges = face_interaction_edges(pos, arrays.tool_faces, arrays.static_faces + 8, radius)
        ta, tb = np.meshgrid(np.arange(12), np.arange(12), indexing="ij")
        dist, _, _ = triangle_pair_closest_points(pos[arrays.tool_faces[ta.ravel()]],
                                                  pos[arrays.static_faces[tb.ravel()] + 8])
        n_within = int((dist <= radius).sum())
        assert 0 < n_within < 144
        assert edges.num_edges == 2 * n_within  # both directions
        assert (edges.distance <= radius).all()
        half = edges.num_edges // 2
        np.testing.assert_array_equal(edges.senders[:half], edges.receivers[half:])
        assert (edges.senders[:half] < 8).all() and (edges.receivers[:half] >= 8).all()


def test_face_edge_vertices_ranked_and_features_consistent(arrays):
    inputs = _sliding_inputs(arrays, 1)
    pos = np.concatenate([inputs.tool_positions[-1], inputs.static_positions])
    e = face_interaction_edges(pos, arrays.tool_faces, arrays.static_faces + 8, 0.01)
    f = e.features
    d_s = f[:, 3:12].reshape(-1, 3, 3)
    n_s = np.linalg.norm(d_s, axis=-1)
    assert (np.diff(n_s, axis=1) >= -1e-9 * n_s.max()).all(), "sender vertices nearest first"
    p_s = pos[e.senders[:, 0]] - d_s[:, 0]  # closest point recovered from the nearest vertex
    np.testing.assert_allclose(pos[e.senders] - p_s[:, None], d_s, atol=1e-15)
    np.testing.assert_allclose(f[:, 27], np.linalg.norm(f[:, 0:3], axis=1), atol=1e-15)
    np.testing.assert_allclose(f[:, 27], e.distance, atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(f[:, 21:24], axis=1), 1.0)  # unit normals
    # the tool's bottom face normal points down, the floor's top face normal points up
    bottom = (e.senders[:, :, None] < 8).all(1).ravel() & (np.abs(f[:, 23] + 1) < 1e-6)
    assert bottom.any() and np.allclose(f[bottom, 24:27], [0, 0, 1], atol=1e-6)


def test_fignet_plus_puts_the_action_into_nodes(arrays):
    inputs = _sliding_inputs(arrays)
    g = build_graph(arrays, inputs, PLUS)
    assert g.world_x.shape[0] == 0 and g.wm_x.shape[0] == 0 and g.tool_mw_force.numel() == 0
    w = torch.tensor(inputs.wrench, dtype=torch.float32)
    torch.testing.assert_close(g.mesh_x[:8, -6:], w.expand(8, 6))
    torch.testing.assert_close(g.object_x[0, -6:], w)
    assert g.mesh_x[8:, -6:].abs().max() == 0 and g.object_x[1, -6:].abs().max() == 0


def test_batch_offsets(arrays):
    a = build_graph(arrays, _sliding_inputs(arrays, 0), ACT)
    w = windows_from(*flight_trajectory(np.random.default_rng(2), 3))[0]
    b = build_graph(arrays, graph_inputs(arrays, w["history"].numpy(), w["action"].numpy()), ACT)
    g = batch_graphs([a, b])
    assert g.num_graphs == 2 and g.mesh_x.shape[0] == 32
    assert torch.equal(g.om_index[:, 16:], b.om_index + torch.tensor([[2], [16]]))
    assert torch.equal(g.wm_index[:, 32:], b.wm_index + torch.tensor([[4], [16]]))
    assert torch.equal(g.tool_nodes, torch.cat([a.tool_nodes, b.tool_nodes + 16]))
    assert torch.equal(g.tool_mw_torque, torch.cat([a.tool_mw_torque, b.tool_mw_torque + 32]))
    assert g.tool_graph.tolist() == [0] * 8 + [1] * 8


def test_bad_inputs_are_refused(arrays):
    history = np.tile(np.r_[0, 0, 0.1, 1, 0, 0, 0, np.zeros(6)], (3, 1))
    with pytest.raises(InvalidInputError, match="action"):
        graph_inputs(arrays, history, np.array([0, 0, np.nan, 0, 0, 0]))
    bad = history.copy()
    bad[0, 3] = 2.0
    with pytest.raises(InvalidInputError, match="unit norm"):
        graph_inputs(arrays, bad, np.zeros(6))
    with pytest.raises(InvalidInputError, match="tool positions"):
        build_graph(arrays, graph_inputs(arrays, history[:2], np.zeros(6)), ACT)
    scene = box_scene()
    flipped = scene.tool.part.__class__(
        "flipped", scene.tool.part.vertices, scene.tool.part.faces[:, ::-1].copy(), scene.tool.part.pieces
    )
    from dataclasses import replace

    with pytest.raises(GeometryError, match="flipped"):
        prepare_scene(replace(scene, tool=replace(scene.tool, part=flipped)), STEP)


def test_broad_phase_culls_keep_every_pair_of_a_peg_in_its_hole():
    """The box and plane culls are exact: on the long thin faces of a hexagonal peg tilted in its slot, the
    pairs found equal those of the narrow phase run on all face pairs."""
    from contactkit.models.gnn.face_edges import face_pairs_within
    from contactkit.rotations import quat_mul, quat_rotate, rotvec_to_quat
    from contactkit.tasks.scenes import peg_in_hole

    scene = peg_in_hole("hexagon", 1e-3)
    arrays = prepare_scene(scene, STEP)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = quat_mul(rotvec_to_quat(np.r_[rng.normal(0, 0.05, 2), rng.uniform(-0.5, 0.5)]), scene.tool.init_quat)
        pos = np.asarray(scene.target_pos) + np.r_[rng.normal(0, 1e-3, 2), rng.uniform(0.0, 0.02)]
        tris_a = (quat_rotate(q, arrays.tool_vertices) + pos)[arrays.tool_faces]
        tris_b = arrays.static_vertices[arrays.static_faces]
        ia, ib, dist, _, _ = face_pairs_within(tris_a, tris_b, 0.01)
        ta, tb = np.meshgrid(np.arange(len(tris_a)), np.arange(len(tris_b)), indexing="ij")
        d_all, _, _ = triangle_pair_closest_points(tris_a[ta.ravel()], tris_b[tb.ravel()])
        within = np.nonzero(d_all <= 0.01)[0]
        assert len(within) > 0
        np.testing.assert_array_equal(ia, ta.ravel()[within])
        np.testing.assert_array_equal(ib, tb.ravel()[within])
        np.testing.assert_allclose(dist, d_all[within], atol=1e-15)


def test_build_graphs_equals_batching_single_graphs(arrays):
    """The vectorised construction of several windows (two scenes mixed) gives the batch of single graphs."""
    from contactkit.models.gnn.graph import build_graphs

    other = prepare_scene(box_scene(floor_pos=(0.0, 0.0, -0.021)), STEP)
    items = []
    for seed in range(5):
        a = arrays if seed % 2 else other
        items.append((a, _sliding_inputs(a, seed)))
    w = windows_from(*flight_trajectory(np.random.default_rng(9), 3))[0]
    items.append((arrays, graph_inputs(arrays, w["history"].numpy(), w["action"].numpy())))  # no face edges
    for config in (ACT, PLUS):
        fast = build_graphs([a for a, _ in items], [x for _, x in items], config)
        slow = batch_graphs([build_graph(a, x, config) for a, x in items])
        assert fast.face_senders.shape[0] > 0
        for name in slow.__dataclass_fields__:
            value = getattr(slow, name)
            if isinstance(value, torch.Tensor):
                assert torch.equal(getattr(fast, name), value), name
        assert fast.num_graphs == slow.num_graphs == len(items)
    with pytest.raises(InvalidInputError, match="at least one"):
        build_graphs(arrays, [], ACT)


def test_a_graph_model_refuses_absolute_pose_targets_by_name():
    with pytest.raises(InvalidInputError, match="do not take 'pose-target' actions"):
        GraphConfig(action_mode=ActionMode.POSE_TARGET)
