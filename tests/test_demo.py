"""The demo repeats and shows work: fixed-iteration training of its residual is bit-identical, and the spiral
insertions start misaligned so that the search has to find the hole."""

import numpy as np
import pytest
from safetensors import safe_open

from contactkit.control.policies import CONTACT_FORCE_N
from contactkit.data.collect import CollectSpec, collect
from contactkit.demo import SPIRAL_OFFSET_M, SUCCESS_DISTANCE_M, spiral_trial, train_demo_model
from contactkit.models.residual import ResidualTrainConfig
from contactkit.physics import load_world
from contactkit.tasks.scenes import peg_in_hole

TINY = ResidualTrainConfig(hidden=16, members=2, one_step_iters=6, batch=16, rollout_iters=2, rollout_batch=3,
                           rollout_steps=2)
"""A residual budget of a second: enough to tell two seeds apart."""


@pytest.fixture(scope="module")
def touch(tmp_path_factory):
    """Four short target-world episodes: two train, one calibrates the gate (the last is the demo's held-out one)."""
    path = tmp_path_factory.mktemp("tiny") / "touch.h5"
    collect(CollectSpec(policy="contact-spline", episodes=4, steps=16, seed=3, world=load_world("target")), str(path))
    return path


def _weights(path):
    with safe_open(path, framework="pt") as f:
        return f.metadata()["net_config"], {k: f.get_tensor(k).numpy().tobytes() for k in f.keys()}


def test_fixed_iteration_training_is_bit_identical_in_the_same_folder(touch, tmp_path):
    """A second run into the folder of the first (``make demo`` twice) starts afresh and writes the same weights."""
    first, rec1 = train_demo_model(touch, 4, tmp_path / "model" / "r.safetensors", seed=0, config=TINY)
    first_weights = _weights(first)
    second, rec2 = train_demo_model(touch, 4, tmp_path / "model" / "r.safetensors", seed=0, config=TINY)
    assert rec1["one_step_loss"] == rec2["one_step_loss"] and rec1["rollout_loss"] == rec2["rollout_loss"]
    assert first_weights == _weights(second)


def test_another_seed_trains_another_model(touch, tmp_path):
    """The comparison above can fail: a different seed changes the losses and the weights."""
    a, rec_a = train_demo_model(touch, 4, tmp_path / "a" / "r.safetensors", seed=0, config=TINY)
    b, rec_b = train_demo_model(touch, 4, tmp_path / "b" / "r.safetensors", seed=1, config=TINY)
    assert rec_a["one_step_loss"] != rec_b["one_step_loss"]
    assert _weights(a)[1] != _weights(b)[1]


def test_spiral_trial_starts_misaligned_and_searches():
    scene = peg_in_hole("square", 1e-3)
    episode, row = spiral_trial(scene, np.random.default_rng([0, 1]))
    offset = np.hypot(*row["offset_mm"]) * 1e-3
    assert SPIRAL_OFFSET_M[0] <= offset <= SPIRAL_OFFSET_M[1]
    # at the first touch the tip is still about the offset away from the hole's axis: out of the 1 mm clearance
    touch = int(np.flatnonzero(np.linalg.norm(episode.wrench[:, :3], axis=1) > CONTACT_FORCE_N)[0]) + 1
    off_axis = np.linalg.norm(episode.pos[touch, :2] - scene.target_pos[:2])
    assert off_axis > 1.5e-3
    assert episode.pos[touch, 2] - scene.target_pos[2] > SUCCESS_DISTANCE_M
    assert row["contact_s"] == pytest.approx(episode.time[touch])
    # the search found the hole and took time to do it
    assert row["inserted"] and row["search_s"] is not None and row["search_s"] > 0.5
    found = int(round((row["contact_s"] + row["search_s"]) / (episode.time[1] - episode.time[0])))
    assert episode.pos[found, 2] - scene.target_pos[2] < SUCCESS_DISTANCE_M
    assert episode.pos[found - 1, 2] - scene.target_pos[2] >= SUCCESS_DISTANCE_M
    assert row["tip_height_mm"] == pytest.approx((episode.pos[-1, 2] - scene.target_pos[2]) * 1e3)


def test_spiral_trial_repeats_bit_for_bit():
    scene = peg_in_hole("triangle", 1e-3)
    first_episode, first = spiral_trial(scene, np.random.default_rng([0, 0]), steps=60)
    second_episode, second = spiral_trial(scene, np.random.default_rng([0, 0]), steps=60)
    assert first == second
    assert np.array_equal(first_episode.pos, second_episode.pos)
    assert np.array_equal(first_episode.wrench, second_episode.wrench)
