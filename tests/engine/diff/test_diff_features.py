"""Contact features as torch functions of pose and geometry: topology, analytic manifolds, COAL, and gradients.

Oracles: the overlap of two parallel squares has the analytic corners (a tool corner, a pillar corner and two edge
crossings); crossed edges have the analytic distance; the smallest gap equals COAL's (an independent narrow phase)
on random poses; ``∂gap/∂h = -1`` for a plane raised by ``h``; and ``∂(Jᵀz)/∂θ`` equals the closed form of
paper §IV-D built from ``∂p/∂θ`` and ``∂n/∂θ``.
"""

import numpy as np
import pytest
import torch

from contactkit.collision import CollisionWorld, labelled_contacts
from contactkit.engine.diff.features import NormalKind, PointKind, contact_features, param_piece
from contactkit.engine.diff.query import EDGE_PREFERENCE
from contactkit.engine.diff.step import DiffScene, StepConfig, prepare_geometry
from contactkit.errors import GeometryError
from contactkit.geometry import Part, box, mass_properties
from contactkit.geometry.validate import check_solid, is_convex
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.scene import Scene, StaticBody, Tool

from ._scenes import N_PARAMS, PILLAR_HEIGHT, PILLAR_TOP, TOOL_X, box_vertices, piece, pillar, scene, table, tool_box

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


def features(diff_scene: DiffScene, pos, quat, theta, margin=1e-3):
    """Feature index and (points, normals, gaps) of one configuration; ``theta`` may require grad."""
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=float))[None]  # noqa: E731
    theta = theta if isinstance(theta, torch.Tensor) else t(theta)
    pos, quat = t(pos), t(quat)
    geo = prepare_geometry(diff_scene, StepConfig(margin=margin), pos, quat, theta)
    from contactkit.engine.diff.features import face_planes_torch, world_tool_vertices
    from contactkit.engine.diff.step import concatenated_loops

    tool_w = world_tool_vertices(geo.tool_local, pos, quat)
    planes = face_planes_torch(tool_w, *concatenated_loops(diff_scene.tool_pieces))
    return geo.index, contact_features(geo.index, tool_w, planes, geo.env_verts, geo.env_planes)


def test_box_topology_and_outward_planes():
    p = tool_box()
    assert p.loops.shape == (6, 4) and np.all(p.loop_len == 4) and p.edges.shape == (12, 2)
    theta = np.array([1e-3, 2e-3, 0.0, 0.0])
    from contactkit.engine.diff.features import face_planes_np

    planes = face_planes_np(p.vertices(theta)[None], p.loops, p.loop_len)[0]
    centre = p.vertices(theta).mean(0)
    assert np.all(planes[:, :3] @ centre < planes[:, 3])  # the centre is inside every face
    mesh = p.piece(theta)
    _, _, volume = check_solid(mesh.vertices, mesh.faces, "box")
    assert volume == pytest.approx(0.04 * 0.04 * 0.022) and is_convex(mesh.vertices, mesh.faces)


def test_basis_that_bends_a_face_is_refused():
    hull = box((0.02, 0.02, 0.02)).pieces[0]
    basis = np.zeros((1, 8, 3))
    basis[0, 0, 2] = 1.0  # one corner alone moves: its three faces stop being planar
    with pytest.raises(GeometryError, match="bends a face"):
        param_piece(hull, basis, name="bent")


def test_overlap_of_parallel_squares_has_the_analytic_corners():
    s = scene(tool_box(), (pillar(),))
    gap = 3e-4
    pos = np.array([0.01, 0.01, PILLAR_TOP + 0.02 + gap])
    index, (points, normals, gaps) = features(s, pos, IDENTITY, np.zeros(N_PARAMS))
    live = index.mask[0]
    got = points[0][torch.as_tensor(live)].numpy()
    expected = np.array([[-0.01, -0.01], [0.015, 0.015], [0.015, -0.01], [-0.01, 0.015]])
    assert len(got) == 4
    for corner in expected:
        assert np.min(np.linalg.norm(got[:, :2] - corner, axis=1)) < 1e-12
    np.testing.assert_allclose(got[:, 2], PILLAR_TOP + gap, atol=1e-12)
    np.testing.assert_allclose(gaps[0][torch.as_tensor(live)].numpy(), gap, atol=1e-12)
    np.testing.assert_allclose(normals[0][torch.as_tensor(live)].numpy(), [[0, 0, 1]] * 4, atol=1e-12)
    assert sorted(index.point_kind[0][live].tolist()) == sorted([PointKind.TOOL_VERTEX, PointKind.ENV_VERTEX,
                                                                 PointKind.CROSSING, PointKind.CROSSING])


def test_crossed_edges_give_one_edge_contact_at_the_analytic_distance():
    # a ridge along y (a box turned 45° about y) under a tool box turned 45° about x: their edges cross at x = y = 0
    ridge_half = 0.01
    ridge = box_vertices([-ridge_half] * 3, [ridge_half] * 3)
    c = np.cos(np.pi / 4)
    turn_y = np.array([[c, 0, c], [0, 1, 0], [-c, 0, c]])
    env = piece(ridge @ turn_y.T, "ridge")
    tool = piece(box_vertices([-0.01] * 3, [0.01] * 3), "tool")
    s = scene(tool, (env,))
    top = ridge_half * np.sqrt(2)
    gap = 4e-4
    quat = rotvec_to_quat(np.array([np.pi / 4, 0.0, 0.0]))
    index, (points, normals, gaps) = features(s, [0.0, 0.0, top + gap + 0.01 * np.sqrt(2)], quat, np.zeros(N_PARAMS))
    assert index.mask[0].sum() == 1 and index.normal_kind[0, 0] == NormalKind.EDGE_CROSS
    assert gaps[0, 0].item() == pytest.approx(gap, abs=1e-12)
    np.testing.assert_allclose(normals[0, 0].numpy(), [0.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(points[0, 0].numpy(), [0.0, 0.0, top + gap], atol=1e-12)


def _coal_scene(tool_part: Part, env_part: Part) -> Scene:
    props = mass_properties(tool_part, mass=0.3)
    return Scene("coal-check", Tool(tool_part, props.mass, props.com, props.inertia), (StaticBody(env_part),))


def test_smallest_gap_matches_coal_on_random_poses():
    rng = np.random.default_rng(4)
    tool_mesh, env_mesh = tool_box().piece(np.zeros(N_PARAMS)), pillar().piece(np.zeros(N_PARAMS))
    world = CollisionWorld(_coal_scene(Part("tool", tool_mesh.vertices, tool_mesh.faces, (tool_mesh,)),
                                       Part("pillar", env_mesh.vertices, env_mesh.faces, (env_mesh,))))
    s = scene(tool_box(), (pillar(),))
    margin, compared, exact = 1e-3, 0, 0
    for _ in range(40):
        quat = rotvec_to_quat(rng.uniform(-0.3, 0.3, 3))
        pos = np.r_[rng.uniform(-0.008, 0.008, 2), 0.0]
        pos[2] = PILLAR_TOP - (tool_mesh.vertices @ quat_to_mat(quat).T)[:, 2].min() + rng.uniform(5e-5, 8e-4)
        coal = labelled_contacts(world, pos, quat, margin).contacts
        index, (_, _, gaps) = features(s, pos, quat, np.zeros(N_PARAMS), margin)
        ours = gaps[0][torch.as_tensor(index.mask[0])].numpy()
        if coal.count and 2 * EDGE_PREFERENCE < coal.distances.min() < margin - 1e-6:  # separated: the distance
            compared += 1  # ours is a gap between surface points (never below the distance); where an edge pair is
            # within EDGE_PREFERENCE of a face axis the face manifold is preferred, a gap at most that much larger
            assert ours.size and coal.distances.min() - 1e-9 <= ours.min() <= coal.distances.min() + 2 * EDGE_PREFERENCE
            exact += bool(abs(ours.min() - coal.distances.min()) <= 1e-9)
    assert compared >= 12 and exact >= 0.75 * compared


def test_gap_gradients_have_their_analytic_values():
    s = scene(tool_box(), (pillar(),))
    theta = torch.zeros((1, N_PARAMS), dtype=torch.float64, requires_grad=True)
    index, (points, _, gaps) = features(s, [0.003, 0.002, PILLAR_TOP + 0.02 + 2e-4], IDENTITY, theta)
    live = torch.as_tensor(index.mask[0])
    grad_gap = torch.autograd.grad(gaps[0][live].sum(), theta, retain_graph=True)[0][0].numpy()
    k = int(live.sum())
    assert grad_gap[PILLAR_HEIGHT] == pytest.approx(-k)  # every contact closes as the pillar rises
    tool_points = index.point_kind[0][index.mask[0]] == PointKind.TOOL_VERTEX
    x_of_tool_points = points[0][live][torch.as_tensor(tool_points), 0].sum()
    grad_x = torch.autograd.grad(x_of_tool_points, theta)[0][0].numpy()
    assert grad_x[TOOL_X] == pytest.approx(tool_points.sum())  # tool corners move with the in-hand offset


def test_wrench_map_gradient_is_the_closed_form_of_section_4d():
    # the tool's face normal depends on θ here: a wedge-shaped tool whose bottom tilts with TOOL_HEIGHT only on one side
    def tilt(v):
        out = np.zeros((N_PARAMS, len(v), 3))
        out[1, (v[:, 2] < -0.01) & (v[:, 0] > 0), 2] = -1.0
        out[TOOL_X, :, 0] = 1.0
        return out

    tool = piece(box_vertices([-0.02, -0.02, -0.02], [0.02, 0.02, 0.0]), "wedge", tilt)
    s = scene(tool, (pillar(half=0.005),))
    theta = torch.tensor([[1e-3, 2e-3, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    quat = rotvec_to_quat(np.array([0.0, -0.02, 0.0]))
    index, (p, n, _) = features(s, [0.001, 0.001, PILLAR_TOP + 0.0215], quat, theta)
    live = torch.as_tensor(index.mask[0])
    assert int(live.sum()) >= 1 and index.normal_kind[0][index.mask[0]][0] == NormalKind.TOOL_FACE
    p, n = p[0][live], n[0][live]
    z = torch.linspace(0.5, 1.5, len(p), dtype=torch.float64)
    wrench = torch.cat([(n * z[:, None]).sum(0), (torch.linalg.cross(p, n) * z[:, None]).sum(0)])
    auto = torch.stack([torch.autograd.grad(wrench[i], theta, retain_graph=True)[0][0] for i in range(6)])
    dp = torch.stack([torch.stack([torch.autograd.grad(p[k, i], theta, retain_graph=True)[0][0] for i in range(3)])
                      for k in range(len(p))])  # (K, 3, P)
    dn = torch.stack([torch.stack([torch.autograd.grad(n[k, i], theta, retain_graph=True)[0][0] for i in range(3)])
                      for k in range(len(p))])
    assert dn.abs().max() > 1e-3  # the normal does depend on θ
    closed_f = (dn * z[:, None, None]).sum(0)
    closed_t = sum(z[k] * (torch.linalg.cross(dp[k].T, n[k].expand(N_PARAMS, 3)) + torch.linalg.cross(
        p[k].expand(N_PARAMS, 3), dn[k].T)).T for k in range(len(p)))
    np.testing.assert_allclose(auto.numpy(), torch.cat([closed_f, closed_t]).detach().numpy(), atol=1e-12)


def test_table_contact_of_a_resting_box_is_its_four_corners():
    s = scene(tool_box(), (table(),))
    index, (points, _, gaps) = features(s, [0.0, 0.0, 0.02], IDENTITY, np.zeros(N_PARAMS))
    assert index.mask[0].sum() == 4
    np.testing.assert_allclose(np.abs(points[0, :4, :2].numpy()), 0.02, atol=1e-12)
    np.testing.assert_allclose(gaps[0, :4].numpy(), 0.0, atol=1e-12)
