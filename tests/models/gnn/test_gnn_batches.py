"""Batches drawn per step (:mod:`contactkit.models.gnn.batches`): worker processes build the same batches as the
training process, and a run stopped by its time budget resumes to the uninterrupted result."""

import dataclasses

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.gnn.batches import BatchSource, Windows, sample_batch
from contactkit.models.gnn.checkpoint import load_checkpoint
from contactkit.models.gnn.train import LAST_CHECKPOINT, train

from ._gnn_synthetic import STEP, box_scene, make_windows
from .test_gnn_train import CONFIG

RUN = dataclasses.replace(CONFIG, num_steps=5, val_every=2, checkpoint_every=2, log_every=1)


@pytest.fixture(scope="module")
def windows():
    rng = np.random.default_rng(0)
    return make_windows(rng, 4, 4), make_windows(rng, 2, 2)


def test_worker_batches_equal_the_in_process_ones(windows):
    data = Windows(windows[0], box_scene(), STEP, RUN.model.graph.action_mode)
    with BatchSource(data, RUN, workers=1) as source:
        got = [source.batch(k) for k in range(3)]
    for k, batch in enumerate(got):
        want = sample_batch(data, RUN, k)
        assert torch.equal(batch.accel, want.accel) and torch.equal(batch.wrench, want.wrench)
        assert torch.equal(batch.graph.face_senders, want.graph.face_senders)
        assert torch.equal(batch.graph.mesh_x, want.graph.mesh_x)
    assert not torch.equal(got[0].accel, got[1].accel)  # each step draws its own windows


def test_time_budget_stops_and_the_resumed_run_matches_the_uninterrupted_one(tmp_path, windows):
    full = train(RUN, *windows, tmp_path / "full", scene=box_scene(), step=STEP)
    assert full.step == 5 and not full.out_of_time
    cut = train(RUN, *windows, tmp_path / "cut", scene=box_scene(), step=STEP, time_budget_s=1e-9)
    assert cut.step == 1 and cut.out_of_time and [s for s, _ in cut.val_history] == [1]
    assert load_checkpoint(tmp_path / "cut" / LAST_CHECKPOINT).train_state["step"] == 1
    resumed = train(RUN, *windows, tmp_path / "cut", scene=box_scene(), step=STEP)
    assert resumed.step == 5 and len(resumed.losses) == 4
    np.testing.assert_allclose(cut.losses + resumed.losses, full.losses, rtol=1e-5)
    _, last = resumed.val_history[-1]
    _, want = full.val_history[-1]
    np.testing.assert_allclose([last[k] for k in want], [want[k] for k in want], rtol=1e-5)


def test_bad_budget_and_workers_are_refused(tmp_path, windows):
    with pytest.raises(InvalidInputError, match="time budget"):
        train(RUN, *windows, tmp_path, scene=box_scene(), step=STEP, time_budget_s=-1.0)
    with pytest.raises(InvalidInputError, match="workers"):
        train(RUN, *windows, tmp_path, scene=box_scene(), step=STEP, workers=-2)
