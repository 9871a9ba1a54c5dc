"""Training the residual: transitions and tare, a fit that beats its backbone on a world with a known difference,
and checkpoints that round-trip and refuse to be used over another backbone, world, mode or task."""

import dataclasses

import numpy as np
import pytest
import torch

from contactkit.data.logged import load_logged
from contactkit.errors import CheckpointError
from contactkit.eval.prediction_models import RESIDUAL_QUICK, fit_residual
from contactkit.model import ActionMode
from contactkit.models.residual import (
    FEATURE_DIM,
    HISTORY,
    build_transitions,
    check_compatible,
    load_residual,
    make_backbone,
)
from contactkit.models.residual.features import features
from contactkit.models.residual.transitions import FREE_SPACE_N, MIN_TARE_STEPS
from contactkit.physics import load_world


def _backbones(world):
    cache = {}

    def get(scene):
        return cache.setdefault(scene.to_json(), make_backbone("mujoco", scene, world, ActionMode.POSE_DELTA))

    return get


def test_transitions_cover_every_step_with_a_history_and_tare_the_sensor_bias(residual_logs):
    logs = load_logged([residual_logs["target-random"], residual_logs["target-train"]])
    rows, offsets = build_transitions(logs.episodes, _backbones(load_world("nominal")))
    assert len(rows) == sum(len(ep.commands) - HISTORY + 1 for ep in logs.episodes)
    target = load_world("target")
    bias, sigma = np.array(target.ft_bias[:3]), np.array(target.ft_noise_std[:3])
    free = np.linalg.norm(rows.backbone_wrench[:, :3], axis=-1) <= FREE_SPACE_N
    counts = np.array([int(np.sum(free & (rows.episode == e))) for e in range(len(offsets))])
    own = counts >= MIN_TARE_STEPS
    assert own[:2].all()  # random-spline episodes spend enough steps in free space
    for e in np.flatnonzero(own):
        # the median of n noisy readings: standard error 1.2533 sigma / sqrt(n); four of them
        assert np.all(np.abs(offsets[e, :3] - bias) <= 4 * 1.2533 * sigma / np.sqrt(counts[e])), (e, offsets[e])
    for e in np.flatnonzero(~own):  # an episode always in contact takes the others' median offset
        np.testing.assert_allclose(offsets[e], np.median(offsets[own], axis=0))
    np.testing.assert_allclose(rows.reading + offsets[rows.episode], np.stack(
        [logs.episodes[e].readings[t] for e, t in zip(rows.episode, rows.step, strict=True)]))


def test_a_trained_residual_beats_its_backbone_on_held_out_target_steps(residual_logs, tmp_path):
    config = dataclasses.replace(RESIDUAL_QUICK, hidden=64, one_step_iters=400, rollout_iters=10, batch=128)
    path, record = fit_residual([residual_logs["target-train"]], [residual_logs["target-val"]], "mujoco",
                                load_world("nominal"), config, tmp_path / "r.safetensors")
    val = record["val"]
    assert val["pos_err_m"] < 0.8 * val["pos_err_backbone_m"], val
    assert np.isfinite(record["one_step_loss"]).all() and record["u_cal"] > 0


def test_checkpoint_round_trips_and_refuses_other_backbones(residual_logs, tmp_path):
    nominal = load_world("nominal")
    path, _ = fit_residual([residual_logs["target-train"]], [residual_logs["target-val"]], "mujoco", nominal,
                           RESIDUAL_QUICK, tmp_path / "r.safetensors")
    net, ckpt = load_residual(path)
    x = torch.randn(5, FEATURE_DIM)
    net2, _ = load_residual(path)
    torch.testing.assert_close(net(x)[0], net2(x)[0])
    assert ckpt.backbone == "mujoco" and ckpt.backbone_world == nominal and ckpt.task == "peg-in-hole"
    check_compatible(ckpt, "mujoco", nominal, ActionMode.POSE_DELTA, "peg-in-hole")
    for args, match in [(("engine", nominal, ActionMode.POSE_DELTA, "peg-in-hole"), "mujoco backbone"),
                        (("mujoco", load_world("target-parametric"), ActionMode.POSE_DELTA, "peg-in-hole"),
                         "friction_scale"),
                        (("mujoco", nominal, ActionMode.WRENCH, "peg-in-hole"), "pose-delta"),
                        (("mujoco", nominal, ActionMode.POSE_DELTA, "bolting"), "peg-in-hole")]:
        with pytest.raises(CheckpointError, match=match):
            check_compatible(ckpt, *args)


@pytest.mark.parametrize("damage", ["truncate", "foreign", "garbage"])
def test_damaged_checkpoints_are_one_line_errors(residual_logs, tmp_path, damage):
    import safetensors.torch

    path, _ = fit_residual([residual_logs["target-train"]], [residual_logs["target-val"]], "mujoco",
                           load_world("nominal"), RESIDUAL_QUICK, tmp_path / "r.safetensors")
    data = path.read_bytes()
    bad = tmp_path / "bad.safetensors"
    if damage == "truncate":
        bad.write_bytes(data[:len(data) // 2])
    elif damage == "foreign":
        bad.write_bytes(safetensors.torch.save({"w": torch.zeros(2)}, metadata={"format": "pt"}))
    else:
        bad.write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match="bad.safetensors"):
        load_residual(bad)


def test_features_of_the_transitions_are_finite(residual_logs):
    logs = load_logged([residual_logs["nominal"]])
    rows, _ = build_transitions(logs.episodes, _backbones(load_world("nominal")))
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    x = features(t(rows.history), t(rows.command), t(rows.prev_command), t(rows.backbone), t(rows.backbone_wrench),
                 t(rows.ref_pos), t(rows.ref_quat))
    assert torch.isfinite(x).all() and x.shape == (len(rows), FEATURE_DIM)
