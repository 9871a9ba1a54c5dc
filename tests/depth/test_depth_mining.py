"""Warm starts and hard-example mining of :mod:`contactkit.depth.mining`: a warm start with no steps returns its
initial network, a network of another domain is refused, the mined worst nodes are the worst-fitted ones, the
Adam phase's mate nodes are the sampler's nodes within the fit band and join the samples, and the nut sampler's
poses are screw motions within the play."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from contactkit.depth import TrainConfig, default_setup, make_frame, train_depth_net
from contactkit.depth.mining import ADAM_STREAM, mate_samples, mined_samples
from contactkit.depth.presets import SCREW_AXIAL, SCREW_BELOW, nut_nodes_screwed
from contactkit.depth.training import _scaled_inputs
from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.geometry import bolt, signed_distance
from contactkit.geometry.fasteners import nut

SMALL = TrainConfig(samples=2000, steps=30, batch=256, seed=5, fit_band=1e-3)
"""A network trained in a second (its accuracy does not matter here)."""


def _face_nodes(rng: np.random.Generator, poses: int) -> np.ndarray:
    """Points near the test cube's +x face (10 mm half-size), 50 per 'pose'."""
    n = 50 * poses
    return np.column_stack([0.01 + rng.uniform(-8e-4, 8e-4, n), rng.uniform(-0.009, 0.009, (n, 2))])


def test_warm_start_without_steps_returns_the_initial_network(cube):
    setup = default_setup(cube, make_frame("cartesian"))
    first = train_depth_net(cube, setup, SMALL)
    again = train_depth_net(cube, setup, dataclasses.replace(SMALL, steps=0), init=first)
    for a, b in zip(first.weights, again.weights, strict=True):
        np.testing.assert_array_equal(a, b)
    assert again.meta["init"]["steps"] == SMALL.steps
    with pytest.raises(InvalidInputError, match="steps must be >= 1, got 0"):
        train_depth_net(cube, setup, dataclasses.replace(SMALL, steps=0))
    wider = default_setup(cube, make_frame("cartesian"), pad=3e-3)
    with pytest.raises(CheckpointError, match="does not match"):
        train_depth_net(cube, wider, dataclasses.replace(SMALL, steps=0), init=first)


def test_mined_worst_nodes_are_the_worst_fitted(cube):
    setup = default_setup(cube, make_frame("cartesian"))
    net = train_depth_net(cube, setup, SMALL)
    params = [torch.as_tensor(w) for w in net.weights]
    scaled = lambda q: _scaled_inputs(setup, q)  # noqa: E731
    exact = lambda q: signed_distance(cube, q)  # noqa: E731
    worst, random = 100, 300
    p, d, stats = mined_samples(params, setup, cube, _face_nodes, 40, worst, random, 1e-3, 0, scaled, exact)
    assert len(p) == worst + random and stats["mate_candidates"] == 2000
    np.testing.assert_allclose(d, exact(p), rtol=0, atol=1e-12)
    err = _net_error(params, setup, p, d)
    assert err[:worst].min() >= err[worst:].max()
    assert err[:worst].max() * 1e6 == pytest.approx(stats["mate_max_err_before_um"], rel=1e-9)
    again = mined_samples(params, setup, cube, _face_nodes, 40, worst, random, 1e-3, 0, scaled, exact)
    np.testing.assert_array_equal(p, again[0])
    with pytest.raises(InvalidInputError, match="mate_poses"):
        mined_samples(params, setup, cube, None, 40, worst, random, 1e-3, 0, scaled, exact)


def test_adam_mate_nodes_are_the_samplers_nodes_in_the_band_and_join_the_samples(cube):
    setup = default_setup(cube, make_frame("cartesian"))
    exact = lambda q: signed_distance(cube, q)  # noqa: E731
    band, n = 5e-4, 300
    p, d = mate_samples(setup, cube, _face_nodes, 40, n, band, 0, exact)
    drawn = _face_nodes(np.random.default_rng([0, ADAM_STREAM]), 40)
    inside = drawn[np.abs(exact(drawn)) <= band]
    assert 0 < n < len(inside) < len(drawn)  # the band filter drops some of the face nodes (up to 0.8 mm off)
    assert len(p) == n and np.abs(d).max() <= band
    np.testing.assert_allclose(d, exact(p), rtol=0, atol=1e-12)
    assert all((inside == q).all(axis=1).any() for q in p)
    every, _ = mate_samples(setup, cube, _face_nodes, 40, 10**6, band, 0, exact)
    assert len(every) == len(inside)
    base = train_depth_net(cube, setup, SMALL)
    mixed = train_depth_net(cube, setup, dataclasses.replace(SMALL, adam_mate_poses=40, adam_mate_nodes=n),
                            mate=_face_nodes)
    assert mixed.meta["n_samples"] == base.meta["n_samples"] + n
    with pytest.raises(InvalidInputError, match="adam_mate_poses 40"):
        train_depth_net(cube, setup, dataclasses.replace(SMALL, adam_mate_poses=40, adam_mate_nodes=n))
    with pytest.raises(InvalidInputError, match="adam_mate_poses"):
        mate_samples(setup, cube, None, 40, n, band, 0, exact)


def _net_error(params, setup, p, d) -> np.ndarray:
    from contactkit.depth.network import mlp

    with torch.no_grad():
        return np.abs(mlp(params, torch.as_tensor(_scaled_inputs(setup, p)), setup.depth_scale).numpy() - d)


def test_screwed_nut_poses_are_screw_motions_within_the_play():
    part, tool = bolt(), nut()
    poses, v = 30, tool.vertices
    nodes = nut_nodes_screwed(np.random.default_rng(3), part, poses).reshape(poses, len(v), 3)
    p, h, play = part.meta["p"], tool.meta["thickness"], tool.meta["play"] / 2
    c0 = v.mean(axis=0)
    for q in nodes:
        rot, rssd = Rotation.align_vectors(q - q.mean(axis=0), v - c0)
        assert rssd / math.sqrt(len(v)) < 1e-8  # rigid (RMS over the vertices [m])
        shift = q.mean(axis=0) - rot.apply(c0)  # where the nut's frame origin (its bottom centre) went
        m = rot.as_matrix()
        tilt = math.acos(min(1.0, m[2, 2]))
        assert np.hypot(*shift[:2]) <= play * (1 + 1e-9) and tilt <= 2 * play / h * (1 + 1e-6)
        turn = math.atan2(m[1, 0] - m[0, 1], m[0, 0] + m[1, 1])
        lag = (shift[2] - part.meta["handedness"] * p * turn / (2 * math.pi) + p / 2) % p - p / 2
        assert abs(lag) <= SCREW_AXIAL + 1e-9, (shift, turn)
        assert -SCREW_BELOW - SCREW_AXIAL <= shift[2] <= part.meta["length"] + SCREW_AXIAL
