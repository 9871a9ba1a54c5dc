"""A training run interrupted and resumed keeps the validation history from before the interruption, and a
bad output folder or device is refused before any work."""

import dataclasses

import numpy as np
import pytest

from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.models.gnn.checkpoint import load_checkpoint, save_checkpoint
from contactkit.models.gnn.train import BEST_CHECKPOINT, LAST_CHECKPOINT, train

from ._gnn_synthetic import STEP, box_scene, make_windows
from .test_gnn_train import CONFIG

EVERY_STEP = dataclasses.replace(CONFIG, val_every=1, checkpoint_every=2, log_every=1)
"""Validation at every step, a checkpoint every second step: an interruption at an odd step loses one step."""


class Interrupted(Exception):
    pass


@pytest.fixture(scope="module")
def windows():
    rng = np.random.default_rng(0)
    return make_windows(rng, 4, 4), make_windows(rng, 2, 2)


def _stop_at(step: int):
    def report(p) -> None:
        if p.step == step:
            raise Interrupted
    return report


def test_resumed_run_keeps_the_validations_from_before_the_interruption(tmp_path, windows):
    full = train(EVERY_STEP, *windows, tmp_path / "full", scene=box_scene(), step=STEP)
    assert [s for s, _ in full.val_history] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(Interrupted):  # killed after the validation of step 3; the last checkpoint is step 2's
        train(EVERY_STEP, *windows, tmp_path / "cut", "cpu", _stop_at(3), scene=box_scene(), step=STEP)
    assert load_checkpoint(tmp_path / "cut" / LAST_CHECKPOINT).train_state["step"] == 2
    resumed = train(EVERY_STEP, *windows, tmp_path / "cut", scene=box_scene(), step=STEP)
    assert resumed.step == 6 and len(resumed.losses) == 4  # steps 3..6 run again
    assert [s for s, _ in resumed.val_history] == [1, 2, 3, 4, 5, 6]
    assert resumed.val_history[:2] == full.val_history[:2]  # restored from step 2's checkpoint
    for (_, got), (_, want) in zip(resumed.val_history[2:], full.val_history[2:], strict=True):
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[k] for k in want], [want[k] for k in want], rtol=1e-5)
    history = load_checkpoint(tmp_path / "cut" / LAST_CHECKPOINT).train_state["val_history"]
    assert [s for s, _ in history] == [1, 2, 3, 4, 5, 6]
    best = load_checkpoint(tmp_path / "cut" / BEST_CHECKPOINT).train_state
    assert [s for s, _ in best["val_history"]][-1] == best["step"]  # the best one's history ends at its step


def test_checkpoint_without_history_resumes_with_an_empty_one(tmp_path, windows):
    short = dataclasses.replace(EVERY_STEP, num_steps=2)
    train(short, *windows, tmp_path, scene=box_scene(), step=STEP)
    old = load_checkpoint(tmp_path / LAST_CHECKPOINT)
    state = {k: v for k, v in old.train_state.items() if k != "val_history"}  # as written before the history
    _resave(tmp_path / LAST_CHECKPOINT, old, state)
    resumed = train(dataclasses.replace(EVERY_STEP, num_steps=3), *windows, tmp_path, scene=box_scene(), step=STEP)
    assert [s for s, _ in resumed.val_history] == [3]
    _resave(tmp_path / LAST_CHECKPOINT, old, {**state, "val_history": "not a list of pairs"})
    with pytest.raises(CheckpointError, match="validation history is malformed"):
        train(dataclasses.replace(EVERY_STEP, num_steps=4), *windows, tmp_path, scene=box_scene(), step=STEP)


def _resave(path, ckpt, train_state) -> None:
    import torch

    from contactkit.models.gnn.checkpoint import restore_model, restore_optimizer

    model = restore_model(ckpt)
    optimizer = torch.optim.Adam(model.parameters(), foreach=True)
    restore_optimizer(ckpt, optimizer)
    save_checkpoint(path, model, ckpt.step_spec, optimizer, train_state)


def test_output_that_is_a_file_or_a_bad_device_is_refused_before_any_step(tmp_path, windows):
    taken = tmp_path / "a_file"
    taken.write_text("not a folder")
    with pytest.raises(InvalidInputError, match="a_file.*existing file, not a folder"):
        train(CONFIG, *windows, taken, scene=box_scene(), step=STEP)
    assert taken.read_text() == "not a folder"
    for device in ("quantum", "cuda:99"):
        with pytest.raises(InvalidInputError, match=f"device '{device}'"):
            train(CONFIG, *windows, tmp_path / "run", device, scene=box_scene(), step=STEP)
        assert not (tmp_path / "run" / LAST_CHECKPOINT).exists()
