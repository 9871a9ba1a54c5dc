"""Logs for the residual and the calibration are checked against each other and the model world: one line naming
the file for another control rate or action mode, a missing scene, or NaN."""

import dataclasses

import h5py
import numpy as np
import pytest

from contactkit.data.collect import CollectSpec, collect
from contactkit.data.logged import load_logged
from contactkit.errors import DatasetError
from contactkit.model import ActionMode
from contactkit.physics import load_world


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("logged")
    nominal = load_world("nominal")
    out = {"a": str(root / "a.h5"), "slow": str(root / "slow.h5"), "wrench": str(root / "wrench.h5")}
    collect(CollectSpec(episodes=2, steps=10, seed=1, world=nominal), out["a"])
    collect(CollectSpec(episodes=1, steps=10, seed=2, world=dataclasses.replace(nominal, n_substeps=50)), out["slow"])
    return out


def test_episodes_are_read_with_their_scene(logs):
    got = load_logged([logs["a"]])
    assert len(got.episodes) == 2 and got.action_mode is ActionMode.POSE_DELTA
    assert got.episodes[0].states.shape == (11, 13) and got.episodes[0].commands.shape == (10, 6)
    assert got.episodes[0].scene is got.episodes[1].scene  # parsed once
    assert got.sources == ((logs["a"], 2),)


def test_another_control_rate_names_the_file(logs):
    with pytest.raises(DatasetError, match="slow.h5.*control period 0.1 s.*0.05 s"):
        load_logged([logs["a"], logs["slow"]])
    with pytest.raises(DatasetError, match="slow.h5"):
        load_logged([logs["slow"]], control_dt=load_world("nominal").control_dt)


def test_another_action_mode_names_the_file(logs):
    with pytest.raises(DatasetError, match="a.h5.*'pose-delta'.*'wrench'"):
        load_logged([logs["a"]], action_mode=ActionMode.WRENCH)


def test_nan_in_a_log_names_the_file(logs, tmp_path):
    bad = tmp_path / "nan.h5"
    bad.write_bytes(open(logs["a"], "rb").read())
    with h5py.File(bad, "r+") as f:
        f["steps/wrench"][3, 0] = np.nan
    with pytest.raises(DatasetError, match="nan.h5"):
        load_logged([str(bad)])
