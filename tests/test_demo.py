"""The demo repeats and shows work (issue 15, item 10): fixed-step training is bit-identical, and the spiral
insertions start misaligned so that the search has to find the hole."""

import numpy as np
import pytest
from safetensors import safe_open

from contactkit.control.policies import CONTACT_FORCE_N
from contactkit.data.collect import CollectSpec, collect
from contactkit.data.training import training_data
from contactkit.demo import SPIRAL_OFFSET_M, SUCCESS_DISTANCE_M, spiral_trial, train_demo_model
from contactkit.physics import load_world
from contactkit.tasks.scenes import peg_in_hole

TINY_STEPS = 3
"""Optimisation steps of the determinism test (each small-preset step is a fraction of a second)."""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two short target-world episodes: the first trains, the second validates."""
    path = tmp_path_factory.mktemp("tiny") / "touch.h5"
    collect(CollectSpec(episodes=2, steps=12, seed=3, world=load_world("target-parametric")), str(path))
    return training_data(path, episodes=[0]), training_data(path, episodes=[1])


def _files(result) -> dict[str, tuple[dict, dict[str, bytes]]]:
    """Each checkpoint's metadata and tensor bytes (safetensors writes the metadata keys in an arbitrary order, so
    whole files are not compared byte for byte)."""
    out = {}
    for path in {result.last_checkpoint, result.best_checkpoint} - {None}:
        with safe_open(path, framework="pt") as f:
            tensors = {k: f.get_tensor(k).numpy().tobytes() for k in f.keys()}
            out[path.name] = (f.metadata(), tensors)
    return out


def test_fixed_step_training_is_bit_identical_in_the_same_folder(tiny, tmp_path):
    """A second run into the folder of the first (``make demo`` twice) starts afresh and writes the same bytes."""
    data, val = tiny
    first = train_demo_model(data, val, tmp_path / "model", seed=0, steps=TINY_STEPS)
    first_files = _files(first)
    second = train_demo_model(data, val, tmp_path / "model", seed=0, steps=TINY_STEPS)
    assert first.step == second.step == TINY_STEPS
    assert first.losses == second.losses
    assert first.val_history == second.val_history
    assert first_files == _files(second)
    assert set(first_files) == {"last.safetensors", "best.safetensors"}


def test_another_seed_trains_another_model(tiny, tmp_path):
    """The comparison above can fail: a different seed changes the losses and the checkpoint."""
    data, val = tiny
    a = train_demo_model(data, val, tmp_path / "a", seed=0, steps=TINY_STEPS)
    b = train_demo_model(data, val, tmp_path / "b", seed=1, steps=TINY_STEPS)
    assert a.losses != b.losses
    assert _files(a)["last.safetensors"] != _files(b)["last.safetensors"]


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
