"""Tared F/T labels for the graph networks: geometric free space, per-episode median offsets, the fallback."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from contactkit.data.label_tare import FREE_SPACE_MARGIN_M, free_space_steps, tare_labels
from contactkit.data.schema import DatasetMeta, Episode
from contactkit.data.training import training_data
from contactkit.data.writer import DatasetWriter
from contactkit.geometry.part import ConvexPiece, Part
from contactkit.model import ActionMode
from contactkit.rotations import rotvec_to_quat
from contactkit.scene import Scene, StaticBody, Tool

HALF = 0.02  # tool half extent [m]; the floor's top is at z = 0
DT = 0.02


def _box(half, name):
    hx, hy, hz = half
    v = np.array([[sx * hx, sy * hy, sz * hz] for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)], dtype=float)
    f = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                  [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]], dtype=np.int64)
    return Part(name, v, f, (ConvexPiece(v.copy(), f.copy()),))


def _scene() -> Scene:
    tool = Tool(_box((HALF,) * 3, "tool"), 0.5, np.zeros(3), np.eye(3) * 1e-4, friction=0.5,
                sensor_pos=np.array([0, 0, HALF]))
    return Scene("box on floor", tool, (StaticBody(_box((0.2, 0.2, 0.02), "floor"), np.array([0, 0, -0.02]),
                                                   np.array([1.0, 0, 0, 0]), 0.5),))


def _states(heights) -> np.ndarray:
    n = len(heights)
    return np.concatenate([np.zeros((n, 2)), np.asarray(heights)[:, None], np.tile([1.0, 0, 0, 0], (n, 1)),
                           np.zeros((n, 6))], axis=1)


def test_free_space_needs_the_margin_at_both_ends_of_the_step():
    scene, m = _scene(), FREE_SPACE_MARGIN_M
    heights = HALF + np.array([0.1, 0.1, m + 1e-4, m - 1e-4, 0.1, 0.1])
    assert free_space_steps(scene, _states(heights)).tolist() == [True, True, False, False, True]
    tilted = _states(np.full(2, HALF + m + 1e-4))
    tilted[:, 3:7] = rotvec_to_quat(np.array([0.3, 0.0, 0.0]))  # a corner dips below the bottom face
    assert not free_space_steps(scene, tilted).any()


def _episode(heights, readings) -> Episode:
    n = len(readings)
    states = _states(heights)
    return Episode(time=DT * np.arange(n + 1), pos=states[:, :3], quat=states[:, 3:7], lin_vel=states[:, 7:10],
                   ang_vel=states[:, 10:13], action=np.zeros((n, 6)), command=np.zeros((n, 6)),
                   wrench=readings, seed=None, scene=_scene().to_json())


def _write(path, episodes):
    meta = DatasetMeta(scene=_scene().to_json(), world=json.dumps({"gravity": True}),
                       policy=json.dumps({"name": "test"}), seed=0, action_mode=ActionMode.WRENCH, control_dt=DT,
                       backend="test")
    with DatasetWriter(path, meta=meta) as writer:
        for ep in episodes:
            writer.append_episode(ep)
    return path


BIAS = np.array([0.1, -0.2, 0.27, 0.01, -0.02, 0.003])


def test_training_labels_lose_exactly_the_episode_bias_and_short_episodes_fall_back(tmp_path):
    rng = np.random.default_rng(0)
    n_free, n_contact = 8, 12
    heights = np.r_[np.full(n_free + 1, 0.1), np.full(n_contact, HALF)]  # lands on the floor at step n_free
    contact = np.tile([0.0, 0.0, 4.9, 0.0, 0.0, 0.0], (n_contact, 1)) + rng.normal(0, 0.5, (n_contact, 6))
    first = _episode(heights, np.concatenate([np.tile(BIAS, (n_free, 1)), contact]) + 0.0)
    second_raw = rng.normal(0, 1.0, (10, 6)) + 3.0  # resting on the floor throughout: no free step
    second = _episode(np.full(11, HALF), second_raw)
    path = _write(tmp_path / "d.h5", [first, second])
    raw, tared = training_data(path, history=3), training_data(path, history=3, tare=True)
    assert raw.tare is None and raw.windows.labels == {"tared": False}
    assert tared.tare.free_steps.tolist() == [n_free, 0] and tared.tare.own.tolist() == [True, False]
    stored = BIAS.astype(np.float32)  # the windows hold float32 readings
    np.testing.assert_array_equal(tared.tare.offsets, np.stack([stored, stored]))  # the second takes the first's
    for i in range(len(raw.windows)):
        assert torch.equal(tared.windows[i]["wrench"], raw.windows[i]["wrench"] - torch.from_numpy(stored))
        assert torch.equal(tared.windows[i]["history"], raw.windows[i]["history"])
    summary = tared.windows.labels
    assert summary["tared"] and summary["episodes_with_own_offset"] == 1
    np.testing.assert_allclose(summary["median_offset"], BIAS, rtol=1e-6)
    assert summary["max_offset_force_N"] == pytest.approx(np.linalg.norm(BIAS[:3]), rel=1e-6)
    json.dumps(summary)


def test_tare_labels_refuses_mismatched_episodes():
    from contactkit.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="one of each per episode"):
        tare_labels([_scene()], [], [])
    with pytest.raises(InvalidInputError, match="readings of shape"):
        tare_labels([_scene()], [_states(np.full(3, 0.1))], [np.zeros((3, 6))])
