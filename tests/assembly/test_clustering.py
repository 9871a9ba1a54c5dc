"""Learned contact clustering (paper eqs 4–6): weights, invariances, surface projection, normal rotation, files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contactkit.assembly import peg_in_hole_task
from contactkit.assembly.clustering import (
    ClusteringNet,
    LearnedClustering,
    SurfaceProjection,
    cluster_weights,
    contact_neighbours,
    default_ranges,
    init_params,
    n_params,
    neighbours,
    node_inputs,
    rotate_normals,
    unpack,
)
from contactkit.assembly.clustering_checkpoint import load_clustering, save_clustering, task_hashes
from contactkit.depth import NodeContacts, detect, save_depth_net
from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.geometry.signed_distance import signed_distance
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState

BAD_FILES = Path(__file__).resolve().parents[1] / "data" / "files"


@pytest.fixture(scope="module")
def task():
    return peg_in_hole_task()


@pytest.fixture(scope="module")
def scene(task):
    """A peg 20 µm off-axis and tilted 0.5 mrad in the bore, its node contacts (depth net) and a coupling wrench."""
    state = BodyState(np.array([20e-6, -5e-6, 0.012]), rotvec_to_quat(np.array([5e-4, 0.0, 0.0])),
                      np.array([1e-3, 0.0, -2e-3]), np.array([0.0, 0.05, 0.01]))
    contacts = detect(task.depth_net, np.zeros(3), np.array([1.0, 0, 0, 0]), task.nodes, state.pos, state.quat, 6e-5)
    wrench = np.array([2.0, -1.0, -10.0, 0.02, 0.01, -0.005])
    return state, contacts, wrench


@pytest.fixture(scope="module")
def net(task):
    return ClusteringNet(init_params(np.random.default_rng(3)), *default_ranges(task))


def test_parameter_count_follows_the_paper_sizes():
    # fR1 38-16-16-4, fO1 23-8-12, fR2 44-16-16-4, fO2 26-8-2 (§V-B)
    assert n_params(12) == (38 * 16 + 16 + 16 * 16 + 16 + 16 * 4 + 4) + (23 * 8 + 8 + 8 * 12 + 12) + \
        (44 * 16 + 16 + 16 * 16 + 16 + 16 * 4 + 4) + (26 * 8 + 8 + 8 * 2 + 2)
    p = np.arange(n_params(12), dtype=float)
    blocks = unpack(p, 12)
    assert blocks["fO1.W1"].shape == (12, 8) and blocks["fO2.b1"][-1] == p[-1]


def test_weights_sum_to_one_per_cluster(net):
    rng = np.random.default_rng(0)
    pts = rng.uniform(-0.02, 0.02, (300, 3))
    inputs = np.concatenate([pts, rng.uniform(-1, 1, (300, 16))], axis=1)
    w = cluster_weights(net, inputs, neighbours(pts, 10))
    assert w.shape == (12, 300) and (w >= 0).all()
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-12)


def test_node_inputs_are_the_eq4_quantities(task):
    state = BodyState(np.array([0.0, 0, 0.01]), np.array([-1.0, 0, 0, 0]), np.array([1.0, 2, 3]), np.array([0, 0, 1.0]))
    pts = np.array([[0.01, 0.0, 0.02]])
    x = node_inputs(task, pts, state, np.array([0, 0, -5.0, 0, 0, 0]))[0]
    com = state.pos + task.body.com_body  # identity rotation (q = −1 is the identity)
    np.testing.assert_allclose(x[3:7], [1, 0, 0, 0])  # sign fixed to w >= 0
    np.testing.assert_allclose(x[7:10], [1.0, 2.0 + 0.01, 3.0])  # v + ω × (x − p)
    np.testing.assert_allclose(x[16:19], np.cross(com - pts[0], [0, 0, -5.0]))  # moment about the node


def test_contact_neighbours_are_the_exact_k_nearest(task, scene):
    state, contacts, _ = scene
    fast, tree = contact_neighbours(task, contacts, state, 10), neighbours(contacts.points, 10)
    dist = lambda nb: np.sort(np.linalg.norm(contacts.points[nb] - contacts.points[:, None], axis=2), axis=1)  # noqa: E731
    np.testing.assert_allclose(dist(fast), dist(tree), atol=1e-15)
    assert not (fast == np.arange(len(fast))[:, None]).any()  # never itself


def test_few_contacts_come_back_unchanged_and_none_give_none(task, net, scene):
    state, contacts, wrench = scene
    few = NodeContacts(contacts.node_index[:12], contacts.points[:12], contacts.normals[:12], contacts.depth[:12])
    out = LearnedClustering(net).cluster(task, few, state, wrench)
    np.testing.assert_array_equal(out.points, few.points)
    np.testing.assert_array_equal(out.distances, few.depth)
    np.testing.assert_array_equal(out.normals, few.normals)
    empty = NodeContacts(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
    assert LearnedClustering(net).cluster(task, empty, state, wrench).count == 0


def test_clustering_is_invariant_to_the_order_of_the_contacts(task, net, scene):
    state, contacts, wrench = scene
    assert len(contacts.depth) > 100
    perm = np.random.default_rng(1).permutation(len(contacts.depth))
    shuffled = NodeContacts(contacts.node_index[perm], contacts.points[perm], contacts.normals[perm],
                            contacts.depth[perm])
    a = LearnedClustering(net).cluster(task, contacts, state, wrench)
    b = LearnedClustering(net).cluster(task, shuffled, state, wrench)
    assert a.count == 12
    np.testing.assert_allclose(b.points, a.points, atol=1e-12)
    np.testing.assert_allclose(b.normals, a.normals, atol=1e-12)
    np.testing.assert_allclose(b.distances, a.distances, atol=1e-15)


def test_clustered_points_lie_on_the_surface(task, net, scene):
    state, contacts, wrench = scene
    out = LearnedClustering(net, SurfaceProjection.DEPTH_NET).cluster(task, contacts, state, wrench)
    exact = signed_distance(task.static, out.points)
    # on the level set d = d̄ of the static part, to the depth net's accuracy at the peg (measured 2.2 µm; ≈ 5 µm)
    np.testing.assert_allclose(exact, out.distances, atol=8e-6)
    assert (out.distances <= 6e-5).all() and (out.distances >= contacts.depth.min()).all()
    # the plain weighted average is off the curved wall (what the projection is for)
    plain = LearnedClustering(net, SurfaceProjection.CONTACT_PATCH).cluster(task, contacts, state, wrench)
    w = cluster_weights(net, node_inputs(task, contacts.points, state, wrench),
                        contact_neighbours(task, contacts, state, net.k))
    off = np.abs(signed_distance(task.static, w @ contacts.points) - out.distances)
    assert off.max() > 1e-4
    # the contact patch alone: within the detection margin (60 µm) of the clustered distance
    assert np.abs(signed_distance(task.static, plain.points) - plain.distances).max() < 6e-5


def test_clustered_points_lie_on_the_thread():
    """The nut on the M48 bolt: contacts all round the helix, their average near the axis (cm off the thread)."""
    from contactkit.assembly import bolting_task
    from contactkit.geometry.fasteners import screw_pose

    bolt = bolting_task()
    pos, quat = screw_pose(bolt.pitch, 0.3, z0=2 * bolt.pitch)
    state = BodyState(pos + np.array([5e-5, 0.0, -5e-5]), quat, np.zeros(3), np.zeros(3))
    contacts = detect(bolt.depth_net, np.zeros(3), np.array([1.0, 0, 0, 0]), bolt.nodes, state.pos, state.quat, 1.5e-4)
    assert len(contacts.depth) > 1000
    wrench = np.array([0.0, 0.0, -5.0, 0.0, 0.0, 0.3])
    for seed in range(2):
        net = ClusteringNet(init_params(np.random.default_rng(seed)), *default_ranges(bolt))
        out = LearnedClustering(net).cluster(bolt, contacts, state, wrench)
        # the bolt net's accuracy at the nut's nodes: 30.5 µm max (model card); measured here 6-10 µm
        np.testing.assert_allclose(signed_distance(bolt.static, out.points), out.distances, atol=30e-6)


def test_normal_rotation_tilts_by_theta2_and_turns_by_theta1():
    n = np.array([[0.0, 0.0, 1.0], [0.6, 0.0, 0.8], [0.0, -1.0, 0.0]])
    tilted = rotate_normals(n, np.array([[0.0, 0.3]] * 3))
    np.testing.assert_allclose(np.sum(tilted * n, axis=1), np.cos(0.3), atol=1e-12)
    turned = rotate_normals(n, np.array([[1.1, 0.3]] * 3))
    np.testing.assert_allclose(np.sum(turned * n, axis=1), np.cos(0.3), atol=1e-12)  # θ1 turns about n
    assert np.abs(turned - tilted).max() > 0.1
    np.testing.assert_allclose(rotate_normals(n, np.array([[0.7, 0.0]] * 3)), n, atol=1e-12)


def test_zero_rotation_head_keeps_the_averaged_normals(task, net, scene):
    state, contacts, wrench = scene
    out = LearnedClustering(net).cluster(task, contacts, state, wrench)  # init_params: fO2 output = 0
    w = cluster_weights(net, node_inputs(task, contacts.points, state, wrench),
                        contact_neighbours(task, contacts, state, net.k))
    avg = w @ contacts.normals
    np.testing.assert_allclose(out.normals, avg / np.linalg.norm(avg, axis=1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(out.distances, w @ contacts.depth, atol=1e-15)


def test_bad_net_is_refused(task):
    lo, hi = default_ranges(task)
    with pytest.raises(InvalidInputError, match="finite values"):
        ClusteringNet(np.zeros(5), lo, hi)
    with pytest.raises(InvalidInputError, match="hi > lo"):
        ClusteringNet(np.zeros(n_params()), hi, lo)


def test_checkpoint_round_trip_and_task_check(tmp_path, task, net):
    tool, static = task_hashes(task)
    fitted = ClusteringNet(net.params, net.x_lo, net.x_hi, 12, 10, "peg-in-hole", tool, static, {"seed": 3})
    path = save_clustering(fitted, tmp_path / "c.safetensors")
    back = load_clustering(path, task)
    np.testing.assert_array_equal(back.params, fitted.params)
    assert back.meta == {"seed": 3} and back.tool_sha256 == tool
    other = ClusteringNet(net.params, net.x_lo, net.x_hi, 12, 10, "bolting", "a" * 64, "b" * 64)
    save_clustering(other, tmp_path / "o.safetensors")
    with pytest.raises(CheckpointError, match="fitted on 'bolting'"):
        load_clustering(tmp_path / "o.safetensors", task)


@pytest.mark.parametrize("name", ["random_bytes.safetensors", "huge_shape_header.safetensors",
                                  "truncated_payload.safetensors", "header_length_lies.safetensors",
                                  "code_running.pt", "zero_bytes.h5"])
def test_bad_files_are_refused_by_name(name):
    with pytest.raises(CheckpointError, match=name):
        load_clustering(BAD_FILES / name)


def test_a_depth_network_file_is_not_a_clustering(tmp_path, task):
    save_depth_net(task.depth_net.pieces[0], tmp_path / "d.safetensors")
    with pytest.raises(CheckpointError, match="not a contactkit clustering network"):
        load_clustering(tmp_path / "d.safetensors")
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_clustering(tmp_path / "missing.safetensors")
