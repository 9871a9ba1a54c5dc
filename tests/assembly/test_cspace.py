"""The learned C-space surface h(q): features, gradient, labels, training, files."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from contactkit.assembly.cspace import (
    HIDDEN,
    CSpaceData,
    CSpaceFeatures,
    CSpaceModel,
    TrainSettings,
    configurations,
    cspace_dataset,
    default_features,
    evaluate,
    feature_map,
    load_cspace,
    save_cspace,
    surface_function,
    train_cspace,
)
from contactkit.assembly.cspace_sampling import label_poses, sample_poses
from contactkit.assembly.task import bolting_task, peg_in_hole_task
from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.geometry.fasteners import screw_pose


@pytest.fixture(scope="module")
def peg():
    return peg_in_hole_task()


@pytest.fixture(scope="module")
def nut():
    return bolting_task()


def _random_model(spec, rng: np.random.Generator, task) -> CSpaceModel:
    k = spec.n_features
    shapes = ((HIDDEN, k), (HIDDEN,), (HIDDEN, HIDDEN), (HIDDEN,), (1, HIDDEN), (1,))
    weights = tuple(rng.normal(size=s) * 0.5 for s in shapes)
    return CSpaceModel(spec, -np.ones(k) * 0.05, np.ones(k) * 0.05, weights, task.kind.value, task.name)


def _queries(rng: np.random.Generator, n: int = 4) -> np.ndarray:
    return np.concatenate([rng.normal(size=(n, 3)) * 0.01 + [0.0, 0.0, 0.03], rng.normal(size=(n, 3)) * 0.2], 1)


def _central(fun, q: np.ndarray, eps: float) -> np.ndarray:
    out = []
    for i in range(6):
        dq = np.zeros(6)
        dq[i] = eps
        out.append((fun(q + dq) - fun(q - dq)) / (2 * eps))
    return np.stack(out, -1)


@pytest.mark.parametrize("kind", list(CSpaceFeatures))
def test_feature_jacobian_matches_finite_differences(peg, nut, kind):
    spec = default_features(nut if kind is CSpaceFeatures.SCREW else peg, kind)
    q = _queries(np.random.default_rng(0))
    f, jac = feature_map(spec, q)
    fd = _central(lambda x: feature_map(spec, x)[0], q, 1e-6)
    assert np.abs(fd - jac).max() < 1e-6 * max(1.0, np.abs(jac).max())


@pytest.mark.parametrize("logit", [False, True])
@pytest.mark.parametrize("kind", list(CSpaceFeatures))
def test_surface_function_gradient_matches_finite_differences(peg, nut, kind, logit):
    task = nut if kind is CSpaceFeatures.SCREW else peg
    model = _random_model(default_features(task, kind), np.random.default_rng(1), task)
    surface = surface_function(model, logit=logit)
    for q in _queries(np.random.default_rng(2)):
        fd = _central(lambda x: np.array(surface.value(x)), q, 1e-8)
        grad = surface.gradient(q)
        assert np.abs(fd - grad).max() < 1e-5 * max(1.0, np.abs(grad).max())
        h, g, z = evaluate(model, q[None])  # the batched numpy evaluation agrees with the numba point kernel
        assert abs(surface.value(q) - (z[0] if logit else h[0])) < 1e-12 * max(1.0, abs(z[0]))
        if not logit:
            assert np.abs(grad - g[0]).max() < 1e-10 * max(1.0, np.abs(g).max())


def test_screw_features_are_invariant_under_the_thread_screw_motion(nut):
    spec = default_features(nut)
    pos, quat = sample_poses(nut, 6, np.random.default_rng(3))
    theta = 1.3
    turn = np.array([math.cos(theta / 2), 0.0, 0.0, math.sin(theta / 2)])
    w1, v1 = turn[0], turn[1:]
    w2, v2 = quat[:, 0], quat[:, 1:]
    screwed_quat = np.concatenate([(w1 * w2 - v2 @ v1)[:, None], w1 * v2 + w2[:, None] * v1 + np.cross(v1, v2)], 1)
    rz = np.array([[math.cos(theta), -math.sin(theta), 0], [math.sin(theta), math.cos(theta), 0], [0, 0, 1]])
    screwed_pos = pos @ rz.T + [0.0, 0.0, nut.pitch * theta / (2 * math.pi)]
    f0, _ = feature_map(spec, configurations(nut, pos, quat))
    f1, _ = feature_map(spec, configurations(nut, screwed_pos, screwed_quat))
    keep = [0, 1, 3, 4, 5, 6]  # every feature but the height c_z
    assert np.abs(f0[:, keep] - f1[:, keep]).max() < 1e-9


def test_labels_of_the_nominal_fits_and_of_pushed_poses(peg, nut):
    free = label_poses(peg, np.array([[0.0, 0.0, 0.01]]), np.array([[1.0, 0.0, 0.0, 0.0]]))
    pushed = label_poses(peg, np.array([[1e-4, 0.0, 0.01]]), np.array([[1.0, 0.0, 0.0, 0.0]]))
    assert free[0] == 0.0 and abs(pushed[0] - (1e-4 - peg.clearance)) < 1e-6
    pos, quat = screw_pose(nut.pitch, 7.0)
    assert label_poses(nut, pos[None], quat[None])[0] == 0.0
    assert label_poses(nut, (pos + [4e-4, 0.0, 0.0])[None], quat[None])[0] > 1e-4


def test_trained_peg_classifier_beats_chance_on_held_out_configurations(peg):
    data = cspace_dataset(peg, 600, np.random.default_rng(0))
    majority = max(data.free.mean(), 1.0 - data.free.mean())
    assert 0.2 < data.free.mean() < 0.8  # samples concentrated near the boundary: both classes present
    model, report = train_cspace(peg, data, TrainSettings(steps=2000), torch.Generator().manual_seed(0))
    assert report.n_held_out == 120
    assert report.held_out_accuracy > majority + 0.1
    h, grad, _ = evaluate(model, data.q[:5])
    assert np.all(np.abs(h) <= 1.0) and np.all(np.isfinite(grad))


def test_save_load_round_trip_and_refusals(peg, nut, tmp_path):
    model = _random_model(default_features(peg), np.random.default_rng(4), peg)
    path = save_cspace(model, tmp_path / "peg.safetensors")
    back = load_cspace(path, peg)
    q = _queries(np.random.default_rng(5))
    assert np.array_equal(evaluate(back, q)[0], evaluate(model, q)[0]) and back.spec == model.spec
    with pytest.raises(CheckpointError, match="not .*bolting|trained for"):
        load_cspace(path, nut)
    data = path.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated|corrupt"):
        load_cspace(tmp_path / "cut.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError):
        load_cspace(tmp_path / "junk.safetensors")
    bad = CSpaceModel(model.spec, model.lo, model.hi, (model.weights[0] * np.nan, *model.weights[1:]),
                      model.task_kind, model.task_name)
    with pytest.raises(CheckpointError, match="non-finite"):
        load_cspace(save_cspace(bad, tmp_path / "nan.safetensors"))
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_cspace(tmp_path / "missing.safetensors")


def test_bad_inputs_are_refused(peg):
    with pytest.raises(InvalidInputError, match="n >= 1"):
        sample_poses(peg, 0, np.random.default_rng(0))
    with pytest.raises(InvalidInputError, match="held_out"):
        TrainSettings(held_out=1.5)
    tiny = CSpaceData(np.zeros((2, 6)), np.array([True, False]), np.zeros(2))
    with pytest.raises(InvalidInputError, match="at least"):
        train_cspace(peg, tiny, TrainSettings(steps=1), torch.Generator().manual_seed(0))


@pytest.mark.parametrize("which", ["peg", "nut"])
def test_labels_with_the_depth_net_shortcut_equal_exact_labels_at_every_node(peg, nut, which):
    import dataclasses

    from contactkit.assembly.cspace_sampling import COLLISION_TOL

    task = peg if which == "peg" else nut
    pos, quat = sample_poses(task, 24, np.random.default_rng(8))
    fast = label_poses(task, pos, quat)
    every = label_poses(dataclasses.replace(task, depth_net=None), pos, quat)
    assert np.array_equal(fast > COLLISION_TOL, every > COLLISION_TOL)
    assert 0 < np.sum(every > COLLISION_TOL) < len(every)
    assert np.all(fast <= every + 1e-15)
    assert np.array_equal(fast[every <= COLLISION_TOL], every[every <= COLLISION_TOL])


def test_numba_sqp_equals_the_python_sqp_on_a_trained_surface(peg):
    from contactkit.assembly.cspace_point import cspace_row, model_row
    from contactkit.state import BodyState

    model = _random_model(default_features(peg), np.random.default_rng(9), peg)
    zero = np.zeros(3)
    rows = 0
    for pos, quat in zip(*sample_poses(peg, 12, np.random.default_rng(10)), strict=True):
        state = BodyState(pos, quat, zero, zero)
        row, h = model_row(model, peg.body, state, activation=1.0)
        probe = surface_function(model, logit=True)
        q = configurations(peg, pos[None], quat[None])[0]
        scale = 1.0 / np.linalg.norm(probe.gradient(q))
        assert abs(h - evaluate(model, q[None])[0][0]) < 1e-12
        ref = cspace_row(peg.body, state, surface_function(model, logit=True, scale=scale))
        assert row.sqp_iterations == ref.sqp_iterations and row.converged == ref.converged
        assert np.abs(row.direction - ref.direction).max() < 1e-9 and abs(row.h - ref.h) < 1e-12
        rows += row.converged
    assert rows >= 6


def test_saturated_network_gives_an_inactive_row_reported_as_unconverged(peg):
    from contactkit.assembly.cspace_point import model_row
    from contactkit.assembly.nc_solver import solve_nc
    from contactkit.collision import Contacts
    from contactkit.state import BodyState

    model = _random_model(default_features(peg), np.random.default_rng(11), peg)
    w = list(model.weights)
    w[0], w[2], w[4], w[5] = w[0] * 0.0, w[2] * 0.0, np.zeros((1, HIDDEN)), np.array([-5.0])  # h ≡ 2σ(-5) - 1 < 0
    flat = CSpaceModel(model.spec, model.lo, model.hi, tuple(w), model.task_kind, model.task_name)
    zero = np.zeros(3)
    state = BodyState(np.array([0.0, 0.0, 0.01]), np.array([1.0, 0.0, 0.0, 0.0]), zero, zero)
    row, h = model_row(flat, peg.body, state)
    assert h < 0 and row is not None and not row.converged and np.array_equal(row.direction, np.zeros(6))
    none = Contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0))
    v = np.array([0.0, 0.0, -0.01, 0.0, 0.0, 0.0])
    assert np.array_equal(solve_nc(peg.body, state, none, v, 0.01, cspace_direction=row.direction).velocity, v)
