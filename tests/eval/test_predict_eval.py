"""Evaluation on recorded data: replay oracles in the recording world, sampling, missing scenes."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from contactkit.data.collect import CollectSpec, collect, random_start, run_episode
from contactkit.data.schema import DatasetMeta
from contactkit.data.writer import DatasetWriter
from contactkit.errors import CheckpointError, DatasetError, InvalidInputError
from contactkit.eval.predict_eval import (
    ActionSource,
    AppliedWrenchReplay,
    EvalConfig,
    RecordedData,
    check_clean_twin,
    checkpoint_predictor,
    evaluate_predictors,
    gravity_compensation,
    load_recorded,
    mujoco_predictor,
    noise_free,
    report_row,
    resolve_checkpoint,
    sample_segments,
    sample_transitions,
)
from contactkit.model import ActionMode
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import load_world
from contactkit.tasks.scenes import peg_in_hole

REPLAY_STEP_TOL_M = 1e-5
"""One step replayed in the recording world: the same physics but for the contact solver's warm start, which
a model that is handed a state cannot know (the recording carried it over from the previous step) [m, rad]."""
REPLAY_FT_TOL = 1e-2
"""... and the same F/T reading up to that warm start [N, N·m] (measured: 2e-4 N in steady contact)."""
REPLAY_ROLLOUT_TOL_M = 1e-3
"""20 steps replayed in the recording world: warm-start differences grow in contact, but stay sub-millimetre."""
CONFIG = EvalConfig(horizon=20, history=3, max_segments=6, max_transitions=40)
ONE_STEP = EvalConfig(horizon=1, history=3, max_segments=40, max_transitions=40)


@pytest.fixture(scope="module")
def target_quiet():
    """The target world without F/T noise and bias: recorded readings are exactly the simulated ones."""
    return noise_free(load_world("target-parametric"))


@pytest.fixture(scope="module")
def pose_data(tmp_path_factory, target_quiet):
    """Two random-spline episodes of 40 steps (impedance control, ``POSE_DELTA``) in the quiet target world."""
    path = tmp_path_factory.mktemp("pose") / "d.h5"
    collect(CollectSpec(policy="random-spline", episodes=2, steps=40, seed=5, world=target_quiet), str(path))
    return load_recorded(path)


class RandomWrenches:
    """A ``WRENCH``-mode policy: random wrenches held for a step (what a force-controlled robot records)."""

    mode = ActionMode.WRENCH

    def reset(self, scene, state, rng):
        self.plan = rng.normal(0.0, [1.0, 1.0, 1.5, 0.01, 0.01, 0.01], size=(100, 6)) - [0, 0, 1.0, 0, 0, 0]

    def act(self, t, state, wrench):
        return self.plan[t]


def wrench_data(world) -> RecordedData:
    scene = peg_in_hole("hexagon", 1e-3)
    rng = np.random.default_rng(3)
    episodes = tuple(run_episode(MujocoWorld(scene, world, rng), RandomWrenches(), 30,
                                 random_start(scene, rng, 0.004, 0.02), rng) for _ in range(2))
    meta = DatasetMeta(scene.to_json(), world.to_json(), json.dumps({"name": "random-wrench"}), 0,
                       ActionMode.WRENCH, world.control_dt, "mujoco")
    return RecordedData("memory", meta, episodes, (scene.to_json(),) * 2)


def test_command_replay_in_the_recording_world_reproduces_the_data(pose_data, target_quiet):
    oracle = mujoco_predictor(target_quiet, "target", ActionSource.COMMAND)
    nominal = mujoco_predictor(load_world("nominal"), "nominal", ActionSource.COMMAND)
    step = evaluate_predictors([oracle], pose_data, ONE_STEP, np.random.default_rng(0))["target"]
    assert step.rollout.rmse_pos_m < REPLAY_STEP_TOL_M and step.rollout.rmse_rot_rad < REPLAY_STEP_TOL_M
    assert step.one_step.force_err_N < REPLAY_FT_TOL and step.one_step.torque_err_Nm < REPLAY_FT_TOL
    reports = evaluate_predictors([oracle, nominal], pose_data, CONFIG, np.random.default_rng(0))
    r = reports["target"]
    assert r.rollout.rmse_pos_m < REPLAY_ROLLOUT_TOL_M and r.rollout.rmse_rot_rad < REPLAY_ROLLOUT_TOL_M
    assert r.rollout.n_rollouts == 6 and r.one_step.n_transitions == 40
    # the nominal world (other friction, mass, softness, damping) does not: the baseline has work to do
    assert reports["nominal"].rollout.rmse_pos_m > 10 * r.rollout.rmse_pos_m
    assert reports["nominal"].one_step.force_err_N > REPLAY_FT_TOL


def test_applied_wrench_replay_is_exact_for_wrench_commands(target_quiet):
    data = wrench_data(target_quiet)
    preds = [mujoco_predictor(target_quiet, "applied", ActionSource.APPLIED),
             mujoco_predictor(target_quiet, "command", ActionSource.COMMAND)]
    for r in evaluate_predictors(preds, data, ONE_STEP, np.random.default_rng(1)).values():
        assert r.rollout.rmse_pos_m < REPLAY_STEP_TOL_M and r.one_step.force_err_N < REPLAY_FT_TOL
    for r in evaluate_predictors(preds, data, CONFIG, np.random.default_rng(1)).values():
        assert r.rollout.rmse_pos_m < REPLAY_ROLLOUT_TOL_M
    # applied = command + the nominal weight the world compensates, so replaying it must subtract exactly that
    ep = data.episodes[0]
    np.testing.assert_allclose(ep.action - ep.command, np.tile(gravity_compensation(
        peg_in_hole("hexagon", 1e-3), target_quiet), (ep.n_steps, 1)), atol=1e-9)


def test_applied_wrench_replay_drifts_under_impedance_control(pose_data, target_quiet):
    """Measured limitation (module docstring): the mean wrench of a control step is not its time profile."""
    applied = mujoco_predictor(target_quiet, "applied", ActionSource.APPLIED)
    r = evaluate_predictors([applied], pose_data, ONE_STEP, np.random.default_rng(0))["applied"]
    assert r.rollout.rmse_pos_m > 10 * REPLAY_STEP_TOL_M  # after a single step, in the recording world


def test_gravity_compensation_is_the_nominal_weight():
    scene = peg_in_hole("hexagon", 1e-3)
    heavy = dataclasses.replace(load_world("nominal"), mass_scale=2.0)
    np.testing.assert_allclose(gravity_compensation(scene, heavy), [0, 0, scene.tool.mass * 9.81, 0, 0, 0])
    assert not gravity_compensation(scene, dataclasses.replace(heavy, gravity=False)).any()
    assert AppliedWrenchReplay(scene, load_world("target-parametric")).history == 1  # noisy worlds are made noise-free


def test_segments_and_transitions_stay_inside_episodes():
    lengths = [30, 5, 12]
    seg = sample_segments(lengths, 10, 3, 1000, np.random.default_rng(0))
    assert len(seg) == (30 - 10 - 1) + (12 - 10 - 1)  # every valid start once
    for e, t0 in seg:
        assert t0 >= 2 and t0 + 10 <= lengths[e]
    few = sample_segments(lengths, 10, 3, 5, np.random.default_rng(0))
    assert len(few) == 5 and len({tuple(r) for r in few}) == 5
    np.testing.assert_array_equal(few, sample_segments(lengths, 10, 3, 5, np.random.default_rng(0)))
    steps = sample_transitions(lengths, 3, 10_000, np.random.default_rng(0))
    assert len(steps) == 28 + 3 + 10 and all(2 <= t < lengths[e] for e, t in steps)
    with pytest.raises(InvalidInputError, match="100-step rollout"):
        sample_segments(lengths, 100, 3, 10, np.random.default_rng(0))


def test_duplicate_predictor_names_are_refused(pose_data, target_quiet):
    p = mujoco_predictor(target_quiet, "same")
    with pytest.raises(InvalidInputError, match="unique"):
        evaluate_predictors([p, p], pose_data, CONFIG, np.random.default_rng(0))


def test_missing_scene_and_checkpoint_are_named(tmp_path, target_quiet):
    path = tmp_path / "log.h5"
    episode = wrench_data(target_quiet).episodes[0]
    meta = DatasetMeta("{}", "{}", json.dumps({"name": "log"}), 0, ActionMode.WRENCH, 0.05, "robot-log")
    with DatasetWriter(path, meta=meta) as writer:
        writer.append_episode(episode)
    with pytest.raises(DatasetError, match="no scene"):
        load_recorded(path)
    with pytest.raises(CheckpointError, match="holds no checkpoint"):
        resolve_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="No such file"):
        resolve_checkpoint(tmp_path / "nope.safetensors")
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointError, match="FIFO"):  # refused without opening (a FIFO would block)
        resolve_checkpoint(fifo)


def test_clean_twin_scores_against_noise_free_readings(tmp_path, target_quiet):
    """The noisy target sensor does not act on a random-spline episode: collected again without noise and bias
    it is the same trajectory, and the recording world replayed scores ~0 against its clean readings while
    the noisy readings stay a noise-and-bias floor away."""
    target = load_world("target-parametric")
    spec = CollectSpec(policy="random-spline", episodes=1, steps=30, seed=8, world=target)
    collect(spec, str(tmp_path / "noisy.h5"))
    collect(dataclasses.replace(spec, world=target_quiet), str(tmp_path / "clean.h5"))
    noisy, clean = load_recorded(tmp_path / "noisy.h5"), load_recorded(tmp_path / "clean.h5")
    assert check_clean_twin(noisy, clean) == 0.0
    oracle = mujoco_predictor(target_quiet, "oracle", ActionSource.COMMAND)
    r = evaluate_predictors([oracle], noisy, ONE_STEP, np.random.default_rng(0), clean)["oracle"]
    assert r.one_step_clean.force_err_N < REPLAY_FT_TOL and r.one_step_clean.torque_err_Nm < REPLAY_FT_TOL
    assert r.one_step.force_err_N > 10 * REPLAY_FT_TOL  # the noise floor of the recorded readings
    row = report_row("oracle", noisy.policy, r)
    assert row["force_err_clean_N"] == r.one_step_clean.force_err_N and row["force_err_N"] == r.one_step.force_err_N
    moved = dataclasses.replace(clean.episodes[0], pos=clean.episodes[0].pos + 1e-6)
    with pytest.raises(DatasetError, match="not a twin"):
        check_clean_twin(noisy, dataclasses.replace(clean, episodes=(moved,)))


def test_pose_delta_checkpoint_replays_commands(tmp_path, pose_data, target_quiet):
    """A pose-delta model is driven by the recorded commands and refuses data recorded with wrench commands."""
    import torch

    from contactkit.models.gnn import EncodeProcessDecode, GraphConfig, ModelConfig, StepSpec, save_checkpoint

    config = ModelConfig(GraphConfig(), latent_dim=8, hidden_dim=8, mlp_layers=1, message_passing_steps=1)
    net = EncodeProcessDecode(config, torch.Generator().manual_seed(0))
    save_checkpoint(tmp_path / "best.safetensors", net, StepSpec.from_world(target_quiet))
    predictor = checkpoint_predictor(tmp_path, "act-fignet")
    assert predictor.source is ActionSource.COMMAND
    small = EvalConfig(horizon=3, history=3, max_segments=2, max_transitions=4)
    r = evaluate_predictors([predictor], pose_data, small, np.random.default_rng(0))["act-fignet"]
    assert r.rollout.n_rollouts == 2 and np.isfinite(r.rollout.rmse_pos_m) and np.isfinite(r.one_step.force_err_N)
    with pytest.raises(CheckpointError, match="takes 'pose-delta' commands"):
        evaluate_predictors([predictor], wrench_data(target_quiet), small, np.random.default_rng(0))


def test_a_checkpoint_with_the_previous_command_is_primed_with_the_recorded_one(tmp_path, pose_data, target_quiet,
                                                                                 monkeypatch):
    """As the residual: each replayed segment and transition starts with the recorded command of the step before it
    (a graph network with ``GraphConfig.previous_command`` reads it)."""
    import torch

    from contactkit.eval import predict_eval
    from contactkit.models.gnn import (
        EncodeProcessDecode,
        GnnContactModel,
        GraphConfig,
        ModelConfig,
        StepSpec,
        save_checkpoint,
    )

    config = ModelConfig(GraphConfig(previous_command=True), latent_dim=8, hidden_dim=8, mlp_layers=1,
                         message_passing_steps=1)
    save_checkpoint(tmp_path / "best.safetensors", EncodeProcessDecode(config, torch.Generator().manual_seed(0)),
                    StepSpec.from_world(target_quiet))
    primed = []
    prime = GnnContactModel.prime
    monkeypatch.setattr(GnnContactModel, "prime", lambda self, prev: (primed.append(np.array(prev)), prime(self, prev)))
    small = EvalConfig(horizon=3, history=3, max_segments=2, max_transitions=4)
    evaluate_predictors([checkpoint_predictor(tmp_path, "act-fignet")], pose_data, small, np.random.default_rng(0))
    rng, lengths = np.random.default_rng(0), predict_eval._lengths(pose_data)
    segments = predict_eval.sample_segments(lengths, 3, 3, 2, rng)
    transitions = predict_eval.sample_transitions(lengths, 3, 4, rng)
    previous = [np.stack([pose_data.episodes[int(e)].command[int(t) - 1] for e, t in rows])
                for rows in (segments, transitions)]
    assert len(primed) == 2  # one scene: one rollout batch, one one-step batch
    for got, expected in zip(primed, previous, strict=True):
        np.testing.assert_array_equal(got, expected)
