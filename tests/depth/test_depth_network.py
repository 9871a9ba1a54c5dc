"""Depth-network queries: training reaches its accuracy, the autograd normal, far points, detect vs brute force."""

import time

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from contactkit.depth import TrainConfig, accuracy, default_setup, detect, make_frame, network, query, train_depth_net
from contactkit.depth.network import features
from contactkit.errors import InvalidInputError
from contactkit.geometry import paper_hole, paper_peg, signed_distance

from .conftest import BOX_CONFIG, BOX_SIZE


def test_small_cube_net_trains_in_seconds_to_a_stated_accuracy(cube, cube_net, rng):
    t0 = time.perf_counter()
    acc = accuracy(cube_net, cube, rng, n=5000)
    assert time.perf_counter() - t0 < 5
    assert acc["n"] > 4000 and acc["n_far"] == 0
    # measured 2026-11-26: RMS ~40 um, max ~300 um after 3000 steps of batch 1024 (a few seconds)
    assert acc["rms_um"] < 100 and acc["max_um"] < 600
    assert cube_net.meta["steps"] == BOX_CONFIG.steps and cube_net.meta["n_samples"] > 20_000


def test_training_is_reproducible_from_its_seed(cube):
    setup = default_setup(cube, make_frame("cartesian"))
    cfg = TrainConfig(samples=2000, steps=20, batch=256, seed=3)
    a, b = train_depth_net(cube, setup, cfg), train_depth_net(cube, setup, cfg)
    for wa, wb in zip(a.weights, b.weights, strict=True):
        np.testing.assert_array_equal(wa, wb)


@pytest.mark.parametrize(("dtype", "h", "tol"), [(torch.float64, 1e-7, 1e-6), (torch.float32, 1e-6, 1e-2)])
def test_autograd_normal_is_the_finite_difference_of_query(cube_net, rng, monkeypatch, dtype, h, tol):
    monkeypatch.setattr(network, "QUERY_DTYPE", dtype)
    p = rng.uniform(-0.011, 0.011, (200, 3))
    d, n = query(cube_net, p)
    g = np.stack([(query(cube_net, p + h * e)[0] - query(cube_net, p - h * e)[0]) / (2 * h) for e in np.eye(3)], 1)
    fd = g / np.linalg.norm(g, axis=1, keepdims=True)
    close = np.linalg.norm(fd - n, axis=1) < tol
    assert close.mean() > 0.95  # the rest straddle a ReLU kink within ±h
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-12)


def test_normal_agrees_with_the_exact_gradient_near_a_flat_face(cube, cube_net, rng):
    # near the middle of the +z face the exact signed distance is z - BOX_SIZE/2, its gradient +z
    p = np.column_stack([rng.uniform(-0.005, 0.005, (300, 2)), BOX_SIZE / 2 + rng.uniform(-3e-4, 3e-4, 300)])
    np.testing.assert_allclose(signed_distance(cube, p), p[:, 2] - BOX_SIZE / 2, atol=1e-12)
    _, n = query(cube_net, p)
    assert np.min(n[:, 2]) > 0.98
    assert np.max(np.linalg.norm(n[:, :2], axis=1)) < 0.2


def test_far_points_get_infinite_depth_and_zero_normal(cube_net):
    d, n = query(cube_net, np.array([[0.0, 0, 0.5], [0.0, 0.0, 0.0]]))
    assert d[0] == np.inf and not n[0].any()
    assert np.isfinite(d[1]) and d[1] < 0


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_points_are_refused(cube_net, bad):
    with pytest.raises(InvalidInputError, match="NaN or Inf"):
        query(cube_net, np.array([[0.0, 0.0, bad]]))
    with pytest.raises(InvalidInputError, match="NaN or Inf"):
        features(cube_net, np.array([[bad, 0.0, 0.0]]))


def test_bad_device_is_refused(cube_net):
    with pytest.raises(InvalidInputError, match="device"):
        query(cube_net, np.zeros((1, 3)), device="tpu")


@pytest.fixture(scope="module")
def hole_net():
    hole = paper_hole()
    frame = make_frame("cylindrical")
    setup = default_setup(hole, frame, r_range=(0.0, 0.028), z_range=(-0.003, 0.043))
    return hole, train_depth_net(hole, setup, TrainConfig(samples=20_000, steps=300, batch=1024))


def _peg_nodes():
    peg = paper_peg()
    return peg.vertices


def test_detect_peg_in_hole_equals_brute_force(hole_net):
    hole, net = hole_net
    nodes = _peg_nodes()
    static_rot = Rotation.from_rotvec([0.2, -0.1, 0.4])
    static_pos = np.array([0.3, -0.2, 0.1])
    tool_local_rot = Rotation.from_rotvec([0.004, -0.002, 1.0])
    tool_local_pos = np.array([2e-5, -1e-5, 0.0004])  # the tip 0.4 mm above the floor, off-centre, tilted
    tool_rot = static_rot * tool_local_rot
    tool_pos = static_pos + static_rot.apply(tool_local_pos)
    sq, tq = static_rot.as_quat(scalar_first=True), tool_rot.as_quat(scalar_first=True)
    margin = 2e-4
    c = detect(net, static_pos, sq, nodes, tool_pos, tq, margin)
    local = tool_local_rot.apply(nodes) + tool_local_pos
    d_all, n_all = query(net, local)
    want = np.flatnonzero(d_all < margin)
    assert 0 < len(want) < len(nodes)
    np.testing.assert_array_equal(c.node_index, want)
    np.testing.assert_allclose(c.depth, d_all[want], atol=1e-12)
    assert (c.depth < margin).all()
    np.testing.assert_allclose(c.points, tool_rot.apply(nodes[want]) + tool_pos, atol=1e-12)
    np.testing.assert_allclose(c.normals, static_rot.apply(n_all[want]), atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(c.normals, axis=1), 1.0, atol=1e-9)


def test_detect_broad_phase_and_bad_poses(hole_net):
    _, net = hole_net
    nodes = _peg_nodes()
    q0 = np.array([1.0, 0, 0, 0])
    far = detect(net, np.zeros(3), q0, nodes, np.array([0, 0, 1.0]), q0, 1e-3)
    assert far.node_index.shape == (0,) and far.points.shape == (0, 3)
    for pos, quat in (((np.nan, 0, 0), q0), ((0, 0, 0), (np.nan, 0, 0, 0)), ((0, 0, 0), (2.0, 0, 0, 0))):
        with pytest.raises(InvalidInputError, match="tool"):
            detect(net, np.zeros(3), q0, nodes, np.array(pos, float), np.array(quat, float), 1e-3)
        with pytest.raises(InvalidInputError, match="static"):
            detect(net, np.array(pos, float), np.array(quat, float), nodes, np.zeros(3), q0, 1e-3)
