"""The training loop: checkpoints, progress reports, resumption, determinism, learning-rate decay."""

import numpy as np
import pytest

from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn.checkpoint import load_checkpoint
from contactkit.models.gnn.graph import GraphConfig, ModelVariant
from contactkit.models.gnn.model import ModelConfig
from contactkit.models.gnn.train import TrainConfig, learning_rate, train

from ._gnn_synthetic import STEP, box_scene, make_windows

MODEL = ModelConfig(GraphConfig(ModelVariant.ACT_FIGNET, 3, 0.01, ActionMode.WRENCH),
                    latent_dim=16, hidden_dim=16, mlp_layers=1,
                    message_passing_steps=1)
CONFIG = TrainConfig(MODEL, batch_size=4, num_steps=6, lr_init=1e-3, lr_final=1e-5, lr_decay_steps=4,
                     noise_std=1e-4, norm_accumulation_steps=2, val_every=3, checkpoint_every=3, log_every=2,
                     val_max_windows=4, seed=3)


@pytest.fixture(scope="module")
def windows():
    rng = np.random.default_rng(0)
    return make_windows(rng, 4, 4), make_windows(rng, 2, 2)


def test_train_writes_checkpoints_and_reports(tmp_path, windows):
    reports = []
    result = train(CONFIG, *windows, tmp_path, "cpu", reports.append, scene=box_scene(), step=STEP)
    assert result.step == 6 and len(result.losses) == 6 and np.isfinite(result.losses).all()
    assert result.last_checkpoint.exists() and result.best_checkpoint.exists()
    assert [r.step for r in reports] == [2, 3, 4, 6]  # every log_every steps and after each validation
    assert reports[1].val is not None and {"loss", "pos_rmse", "force_err", "torque_err"} <= set(reports[1].val)
    assert [s for s, _ in result.val_history] == [3, 6]
    ckpt = load_checkpoint(result.last_checkpoint, expected_config=MODEL)
    assert ckpt.train_state["step"] == 6 and ckpt.step_spec == STEP
    assert ckpt.model_state["norm.accel.count"].item() == 2 * 4 * 8  # 2 accumulation steps, 4 windows, 8 vertices


def test_same_seed_same_losses_and_resume_continues(tmp_path, windows):
    full = train(CONFIG, *windows, tmp_path / "full", scene=box_scene(), step=STEP)
    again = train(CONFIG, *windows, tmp_path / "again", scene=box_scene(), step=STEP)
    assert full.losses == again.losses
    short = TrainConfig(**{**CONFIG.__dict__, "num_steps": 3})
    first = train(short, *windows, tmp_path / "resumed", scene=box_scene(), step=STEP)
    rest = train(CONFIG, *windows, tmp_path / "resumed", scene=box_scene(), step=STEP)
    assert first.step == 3 and rest.step == 6
    np.testing.assert_allclose(first.losses + rest.losses, full.losses, rtol=1e-5)


def test_resume_with_other_settings_is_refused(tmp_path, windows):
    train(CONFIG, *windows, tmp_path, scene=box_scene(), step=STEP)
    other = TrainConfig(**{**CONFIG.__dict__, "lr_init": 5e-4})
    with pytest.raises(CheckpointError, match="lr_init"):
        train(other, *windows, tmp_path, scene=box_scene(), step=STEP)
    bigger = TrainConfig(**{**CONFIG.__dict__, "model": ModelConfig(MODEL.graph, latent_dim=32)})
    with pytest.raises(CheckpointError, match="mismatch"):
        train(bigger, *windows, tmp_path, scene=box_scene(), step=STEP)


def test_learning_rate_decays_tenfold_per_decay_interval():
    assert learning_rate(CONFIG, 0) == pytest.approx(1e-3)
    assert learning_rate(CONFIG, 4) == pytest.approx(1e-5 + (1e-3 - 1e-5) * 0.1)
    assert learning_rate(CONFIG, 10_000) == pytest.approx(1e-5)


def test_presets_and_config_round_trip():
    small, paper = TrainConfig.preset("small"), TrainConfig.preset("paper")
    assert (small.model.latent_dim, small.model.message_passing_steps) == (64, 5)
    assert (paper.model.latent_dim, paper.model.message_passing_steps, paper.model.mlp_layers) == (128, 10, 2)
    assert (paper.loss_position, paper.loss_force, paper.loss_torque) == (1.0, 0.1, 0.1)
    assert TrainConfig.from_dict(small.to_dict()) == small
    assert TrainConfig.preset("small", num_steps=7).num_steps == 7
    with pytest.raises(InvalidInputError, match="preset"):
        TrainConfig.preset("huge")


def test_bad_windows_are_refused(tmp_path):
    bad = make_windows(np.random.default_rng(0), 1, 0)
    bad[0]["action"][2] = float("nan")
    with pytest.raises(InvalidInputError, match="action"):
        train(CONFIG, bad, [], tmp_path, scene=box_scene(), step=STEP)
    with pytest.raises(InvalidInputError, match="empty"):
        train(CONFIG, [], [], tmp_path, scene=box_scene(), step=STEP)


class _RecordedWindows(list):
    """Windows that say what their ``command`` means, as TrajectoryWindows do."""

    def __init__(self, items, action_mode):
        super().__init__(items)
        self.action_mode = action_mode


def test_pose_delta_model_refuses_wrench_commands(tmp_path, windows):
    pose = TrainConfig(**{**CONFIG.__dict__, "model": ModelConfig(
        GraphConfig(ModelVariant.ACT_FIGNET, 3, 0.01, ActionMode.POSE_DELTA), latent_dim=16, hidden_dim=16)})
    recorded = _RecordedWindows(windows[0], ActionMode.WRENCH)
    with pytest.raises(InvalidInputError, match="needs pose-delta commands"):
        train(pose, recorded, windows[1], tmp_path, scene=box_scene(), step=STEP)
    with pytest.raises(InvalidInputError, match="lacks the key 'command'"):  # synthetic windows carry none
        train(pose, windows[0], windows[1], tmp_path, scene=box_scene(), step=STEP)
