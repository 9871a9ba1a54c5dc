"""Pose tracking with a particle filter over a recorded episode: exactness of the open-loop case, F/T
correction of a wrong initial pose, backward windows, and the MuJoCo model against its own world."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.estimation.particle_filter import NoiseSpace, PFConfig
from contactkit.estimation.tracking import (
    STD_FLOOR,
    RecordedEpisode,
    TrackingConfig,
    TrackingMode,
    calibrate_noise,
    constant_velocity_window,
    one_step_residuals,
    perturbed_pose,
    track,
)
from contactkit.model import ActionMode, rollout
from contactkit.mujoco.model import MujocoContactModel
from contactkit.mujoco.world import MujocoWorld
from contactkit.rotations import quat_angle_between, rotvec_to_quat
from contactkit.state import BodyState, stack_states
from contactkit.tasks.scenes import peg_in_hole

TETHER_STIFFNESS = 1000.0
"""[N/m] of the test model's tether: the F/T reading is −K·p, so it measures the position directly."""
FORCE_STD = 0.1
"""F/T noise of the test episodes [N]: 0.1 mm of position per reading through the tether."""
WARMSTART_TOL_M = 1e-6
"""The model restarts MuJoCo from a BodyState each step (no solver warm start), the world keeps its warm start:
identical in free flight, within 0.2 µm once in contact (measured), far below any tracking error."""
CONVERGED_TOL_M = 5e-4
"""After 15 readings of 0.1 mm precision each, the estimate is within 0.5 mm (sampling error of 30
particles and 0.2 mm of process noise per step included)."""


class TetherModel:
    """Exact test dynamics: the tool moves by the pose delta and a spring to the origin is read by the F/T.

    ``p ← p + δp``, orientation unchanged, reading ``(−K p', 0)`` (identity orientation: sensor = world).
    """

    action_mode = ActionMode.POSE_DELTA
    history = 1
    control_dt = 0.05

    def step(self, history: BodyState, action: np.ndarray):
        last = BodyState(*(a[..., -1, :] for a in (history.pos, history.quat, history.lin_vel, history.ang_vel)))
        pos = last.pos + np.asarray(action)[..., :3]
        wrench = np.concatenate([-TETHER_STIFFNESS * pos, np.zeros_like(pos)], axis=-1)
        return BodyState(pos, last.quat, (pos - last.pos) / self.control_dt, np.zeros_like(pos)), wrench


def _tether_episode(rng: np.random.Generator, steps: int = 20) -> RecordedEpisode:
    model = TetherModel()
    start = BodyState.at_rest([0.01, -0.005, 0.02])
    actions = np.zeros((steps, 6))
    actions[:, :3] = rng.normal(0.0, 0.002, (steps, 3))
    window = BodyState(*(a[None] for a in (start.pos, start.quat, start.lin_vel, start.ang_vel)))
    states, wrenches = rollout(model, window, actions)
    truth = stack_states([start, *(states.index(t) for t in range(steps))])
    return RecordedEpisode(truth, actions, wrenches + rng.normal(0.0, FORCE_STD, wrenches.shape) * [1, 1, 1, 0, 0, 0])


def _config(measurement_force_std: float = FORCE_STD, perturb_pos: float = 5e-3) -> TrackingConfig:
    pf = PFConfig(
        process_noise_std=np.array([2e-4] * 3 + [1e-4] * 3 + [0.0] * 6),
        measurement_std=np.array([measurement_force_std] * 3 + [1e-3] * 3),
        n_particles=30,
        noise_space=NoiseSpace.POSE13,
    )
    return TrackingConfig(pf=pf, init_std=np.array([1e-4] * 3 + [1e-4] * 3 + [0.0] * 6), perturb_pos=perturb_pos,
                          perturb_rot=0.02, perturbed_init_std=np.array([3e-3] * 3 + [1e-2] * 3 + [0.0] * 6))


def test_motion_only_with_the_generating_model_is_exact():
    episode = _tether_episode(np.random.default_rng(0))
    result = track(TetherModel(), episode, _config(), TrackingMode.MOTION_ONLY, np.random.default_rng(1))
    assert result.estimates.shape == (21, 13) and result.pos_err.shape == (21,)
    assert np.max(result.pos_err) < 1e-15 and np.max(result.rot_err) < 1e-6


def test_ft_updates_pull_a_perturbed_filter_onto_the_truth():
    episode = _tether_episode(np.random.default_rng(2))
    informed = track(TetherModel(), episode, _config(), TrackingMode.PERTURBED_INIT, np.random.default_rng(3))
    assert informed.pos_err[0] > 2e-3  # the perturbation is really there
    assert np.max(informed.pos_err[15:]) < CONVERGED_TOL_M
    assert np.all(informed.ess >= 1.0 - 1e-9) and np.all(informed.ess <= 30.0 + 1e-9)
    blind = track(TetherModel(), episode, _config(measurement_force_std=1e6), TrackingMode.PERTURBED_INIT,
                  np.random.default_rng(3))
    assert np.min(blind.pos_err[15:]) > 2e-3  # without informative readings the error stays


def test_known_initial_pose_is_tracked_throughout():
    episode = _tether_episode(np.random.default_rng(4))
    result = track(TetherModel(), episode, _config(), TrackingMode.KNOWN_INIT, np.random.default_rng(5))
    assert np.max(result.pos_err) < CONVERGED_TOL_M


def test_mujoco_model_tracks_its_own_world_exactly_open_loop():
    scene = peg_in_hole("hexagon", 1e-3)
    world = MujocoWorld(scene)
    states = [world.reset()]
    actions = np.tile([0.0, 0.0, -0.006, 0.0, 0.0, 0.0], (12, 1))
    readings = []
    for a in actions:
        result = world.step(a, ActionMode.POSE_DELTA)
        states.append(result.state)
        readings.append(result.wrench)
    episode = RecordedEpisode(stack_states(states), actions, np.array(readings))
    assert np.linalg.norm(episode.wrenches[-1, :3]) > 1.0  # the peg reached the slot: contact is tracked too
    result = track(MujocoContactModel(scene), episode, _config(), TrackingMode.MOTION_ONLY, np.random.default_rng(0))
    assert np.max(result.pos_err) < WARMSTART_TOL_M


def _noisy_tether_episode(rng: np.random.Generator, motion_std: float, steps: int):
    """Tether-world episode whose truth also drifts by ``w ~ N(0, motion_std²)`` per step; returns the episode
    and the drawn ``w`` ``(T, 3)`` and reading noise ``n`` ``(T, 3)``."""
    dt, pos = TetherModel.control_dt, [np.array([0.01, -0.005, 0.02])]
    actions = np.zeros((steps, 6))
    actions[:, :3] = rng.normal(0.0, 0.002, (steps, 3))
    drift, noise = rng.normal(0.0, motion_std, (steps, 3)), rng.normal(0.0, FORCE_STD, (steps, 3))
    for t in range(steps):
        pos.append(pos[-1] + actions[t, :3] + drift[t])
    pos = np.array(pos)
    vel = np.concatenate([np.zeros((1, 3)), np.diff(pos, axis=0) / dt])
    truth = BodyState(pos, np.tile([1.0, 0.0, 0.0, 0.0], (steps + 1, 1)), vel, np.zeros_like(pos))
    wrenches = np.concatenate([-TETHER_STIFFNESS * pos[1:] + noise, np.zeros((steps, 3))], axis=1)
    return RecordedEpisode(truth, actions, wrenches), drift, noise


def test_calibration_measures_the_drift_and_reading_noise_the_model_does_not_know():
    episode, drift, noise = _noisy_tether_episode(np.random.default_rng(8), 1e-4, 200)
    state_res, wrench_res = one_step_residuals(TetherModel(), episode)
    assert np.allclose(state_res[:, 0:3], drift, rtol=0, atol=1e-15)  # the model moves by the action alone
    assert np.allclose(wrench_res[:, 0:3], -TETHER_STIFFNESS * drift + noise, rtol=0, atol=1e-12)
    calibration = calibrate_noise(TetherModel(), [episode])
    rms = lambda r: np.sqrt(np.mean(r**2, axis=0))  # noqa: E731
    assert calibration.n_samples == 200
    assert calibration.process_std[0:3] == pytest.approx(rms(drift), rel=1e-9)
    assert calibration.process_std[6:9] == pytest.approx(rms(drift) / TetherModel.control_dt, rel=1e-9)
    assert calibration.measurement_std[0:3] == pytest.approx(rms(-TETHER_STIFFNESS * drift + noise), rel=1e-9)
    # orientation, angular velocity and torque are predicted exactly: only the floor remains
    assert np.all(calibration.process_std[[3, 4, 5, 9, 10, 11]] == STD_FLOOR)
    assert np.all(calibration.measurement_std[3:] == STD_FLOOR)


KALMAN_RMS_M = 1.7e-4
"""Steady-state error of the drifting tether test: a 0.1 mm random walk read with 0.14 mm precision has a
Kalman std of 0.1 mm per axis (P² + q²P − q²r² = 0), 0.17 mm RMS in 3-D."""
PF_OVERHEAD = 2.5
"""30 particles add Monte Carlo and resampling error to the Kalman bound (measured 1.1–2.1× over 24 runs)."""


def test_calibrated_noise_lets_the_filter_follow_a_drift_the_model_misses():
    calibration = calibrate_noise(TetherModel(), [_noisy_tether_episode(np.random.default_rng(9), 1e-4, 200)[0]])
    episode = _noisy_tether_episode(np.random.default_rng(10), 1e-4, 40)[0]
    pf = PFConfig(process_noise_std=calibration.process_std, measurement_std=calibration.measurement_std,
                  n_particles=30, noise_space=NoiseSpace.POSE13)
    config = TrackingConfig(pf=pf, init_std=_config().init_std, perturb_pos=0.0, perturb_rot=0.0,
                            perturbed_init_std=_config().perturbed_init_std)
    filtered = track(TetherModel(), episode, config, TrackingMode.KNOWN_INIT, np.random.default_rng(11))
    open_loop = track(TetherModel(), episode, config, TrackingMode.MOTION_ONLY, np.random.default_rng(11))
    rms = lambda err: float(np.sqrt(np.mean(err[10:] ** 2)))  # noqa: E731
    assert rms(filtered.pos_err) < PF_OVERHEAD * KALMAN_RMS_M
    assert rms(open_loop.pos_err) > 2.0 * rms(filtered.pos_err)  # the drift is followed, not ignored


def test_calibration_refuses_no_episodes():
    with pytest.raises(InvalidInputError, match="at least one"):
        calibrate_noise(TetherModel(), [])


def test_constant_velocity_window_extrapolates_backwards():
    state = BodyState(np.array([0.1, 0.0, 0.2]), rotvec_to_quat(np.array([0.0, 0.0, 0.3])),
                      np.array([0.02, -0.01, 0.0]), np.array([0.0, 0.0, 0.5])).as_array()[None]
    window = constant_velocity_window(state, 3, 0.05)
    assert window.pos.shape == (1, 3, 3)
    assert window.pos[0, -1] == pytest.approx(state[0, 0:3], abs=1e-15)
    assert window.pos[0, 0] == pytest.approx(state[0, 0:3] - 0.1 * state[0, 7:10], abs=1e-15)
    assert quat_angle_between(window.quat[0, 0], window.quat[0, -1]) == pytest.approx(0.05, abs=1e-12)
    assert constant_velocity_window(state, 1, 0.05).pos[0, 0] == pytest.approx(state[0, 0:3], abs=0)


def test_perturbed_pose_has_the_requested_errors():
    start = BodyState.at_rest([0.0, 0.0, 0.05])
    moved = perturbed_pose(start, 3e-3, 0.02, np.random.default_rng(7))
    assert np.linalg.norm(moved.pos - start.pos) == pytest.approx(3e-3, rel=1e-12)
    assert quat_angle_between(moved.quat, start.quat) == pytest.approx(0.02, rel=1e-9)


def test_bad_input_is_refused():
    episode = _tether_episode(np.random.default_rng(0), steps=3)
    with pytest.raises(InvalidInputError, match="actions"):
        RecordedEpisode(episode.states, episode.actions[:2], episode.wrenches)
    with pytest.raises(InvalidInputError, match="wrenches"):
        RecordedEpisode(episode.states, episode.actions, np.full((3, 6), np.nan))
    euclid = PFConfig(process_noise_std=np.zeros(13), measurement_std=np.ones(6))
    with pytest.raises(InvalidInputError, match="POSE13"):
        TrackingConfig(pf=euclid, init_std=np.zeros(12), perturb_pos=0.0, perturb_rot=0.0,
                       perturbed_init_std=np.zeros(12))
    with pytest.raises(InvalidInputError, match="init_std"):
        TrackingConfig(pf=_config().pf, init_std=np.zeros(6), perturb_pos=0.0, perturb_rot=0.0,
                       perturbed_init_std=np.zeros(12))
