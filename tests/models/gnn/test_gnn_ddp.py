"""Data-parallel training (:mod:`contactkit.models.gnn.ddp`): the ranks' shards make up the serial batch, and two
gloo processes train to the serial run's losses and weights (within float32 tolerance); rank 0 writes the
checkpoints."""

import dataclasses

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.models.gnn.batches import Windows, sample_batch
from contactkit.models.gnn.checkpoint import load_checkpoint
from contactkit.models.gnn.ddp import shard_batch, spawn_training, train_distributed
from contactkit.models.gnn.train import BEST_CHECKPOINT, LAST_CHECKPOINT, train

from ._gnn_synthetic import STEP, box_scene, make_windows
from .test_gnn_train import CONFIG

RUN = dataclasses.replace(CONFIG, num_steps=4, val_every=2, checkpoint_every=2, log_every=1)
LOSS_RTOL = 1e-4
"""float32 sums in another order (two half-batch means, averaged) against one whole-batch mean."""
WEIGHT_ATOL = 1e-5


@pytest.fixture(scope="module")
def windows():
    rng = np.random.default_rng(0)
    return make_windows(rng, 4, 4), make_windows(rng, 2, 2)


def test_the_shards_make_up_the_serial_batch(windows):
    data = Windows(windows[0], box_scene(), STEP, RUN.model.graph.action_mode)
    for step in (0, 3):
        whole = sample_batch(data, RUN, step)
        shards = [shard_batch(data, RUN, step, rank, 2) for rank in range(2)]
        assert torch.equal(torch.cat([s.accel for s in shards]), whole.accel)
        assert torch.equal(torch.cat([s.wrench for s in shards]), whole.wrench)
    with pytest.raises(InvalidInputError, match="multiple"):
        shard_batch(data, RUN, 0, 0, 3)


def test_two_processes_train_as_the_serial_run(tmp_path, windows):
    serial = train(RUN, *windows, tmp_path / "serial", scene=box_scene(), step=STEP)
    ddp = spawn_training(2, RUN, *windows, tmp_path / "ddp", scene=box_scene(), step=STEP)
    assert ddp.step == serial.step == RUN.num_steps
    np.testing.assert_allclose(ddp.losses, serial.losses, rtol=LOSS_RTOL)
    assert [s for s, _ in ddp.val_history] == [s for s, _ in serial.val_history]
    for name in (LAST_CHECKPOINT, BEST_CHECKPOINT):
        want = load_checkpoint(tmp_path / "serial" / name).model_state
        got = load_checkpoint(tmp_path / "ddp" / name).model_state
        assert want.keys() == got.keys()
        for key in want:  # normaliser sums summed over the ranks: the serial statistics
            np.testing.assert_allclose(got[key].double().numpy(), want[key].double().numpy(), atol=WEIGHT_ATOL,
                                       rtol=LOSS_RTOL, err_msg=key)
    assert sorted(p.name for p in (tmp_path / "ddp").iterdir()) == sorted([LAST_CHECKPOINT, BEST_CHECKPOINT])


def test_without_a_process_group_or_with_a_bad_count_it_refuses(tmp_path, windows):
    with pytest.raises(InvalidInputError, match="process group"):
        train_distributed(RUN, *windows, tmp_path, scene=box_scene(), step=STEP)
    with pytest.raises(InvalidInputError, match="--ddp"):
        spawn_training(0, RUN, *windows, tmp_path, scene=box_scene(), step=STEP)
