"""Training data: windows over dataset files, each carrying the index of its episode's scene."""

from __future__ import annotations

import dataclasses

import pytest

from contactkit.data.collect import CollectSpec, collect
from contactkit.data.reader import open_dataset
from contactkit.data.training import training_data
from contactkit.data.writer import DatasetWriter
from contactkit.errors import DatasetError
from contactkit.physics import load_world

STEPS = 8
HISTORY = 3


@pytest.fixture(scope="module")
def world():
    return load_world("target-parametric")


def test_windows_index_per_episode_scenes(tmp_path, world):
    path = tmp_path / "scenes.h5"
    collect(CollectSpec(task="random-scene", episodes=2, steps=STEPS, seed=2, world=world), str(path))
    data = training_data(path, history=HISTORY)
    per_episode = STEPS - HISTORY + 1
    assert len(data.scenes) == 2 and len(data.windows) == 2 * per_episode
    first, last = per_episode - 1, per_episode
    assert [data.windows[i]["scene_index"] for i in (0, first, last, 2 * per_episode - 1)] == [0, 0, 1, 1]
    assert data.step.dt == pytest.approx(world.control_dt) and data.step.gravity[2] < 0
    only_second = training_data(path, history=HISTORY, episodes=[1])
    assert len(only_second.scenes) == 1 and only_second.windows[0]["scene_index"] == 0
    assert only_second.scenes[0].to_json() == data.scenes[1].to_json()
    assert training_data([path, path], history=HISTORY).windows[2 * per_episode]["scene_index"] == 0


def test_episode_without_scene_is_named(tmp_path, world):
    source, log = tmp_path / "d.h5", tmp_path / "log.h5"
    collect(CollectSpec(episodes=1, steps=STEPS, seed=1, world=world), str(source))
    with open_dataset(source) as ds:
        meta, episode = dataclasses.replace(ds.meta, scene="{}"), ds.episode(0)
    with DatasetWriter(log, meta=meta) as writer:
        writer.append_episode(dataclasses.replace(episode, scene=None))
    with pytest.raises(DatasetError, match="no scene"):
        training_data(log)
