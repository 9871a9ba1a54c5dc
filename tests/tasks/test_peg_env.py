"""Peg-insertion environment and eq-9 reward: gymnasium API, closed-form rewards, physical success."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from contactkit.control.impedance import pose_target
from contactkit.control.mpc import ActionScale
from contactkit.errors import InvalidInputError
from contactkit.mujoco.model import MujocoContactModel
from contactkit.rotations import quat_angle_between, rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks.peg_env import (
    INSERTION_PAIRINGS,
    OBS_DIM,
    PegEnvConfig,
    PegInsertionEnv,
    split_observation,
)
from contactkit.tasks.reward import (
    SUCCESS_BONUS,
    SUCCESS_RADIUS_M,
    InsertionGoal,
    insertion_reward,
    is_halfway,
    is_success,
    rotation_error,
)
from contactkit.tasks.scenes import peg_in_hole, random_training_scene

ROUNDOFF = 1e-12
"""Slack for closed-form comparisons in float64."""
STATE_Z_FORCE = 13 + 2
"""Index of the F/T reading's z force in the observation (sensor z is the tool axis, pointing up)."""


@pytest.fixture(scope="module")
def goal():
    return InsertionGoal.from_scene(peg_in_hole("square", 5e-3))


def test_reward_is_twelve_at_the_goal_and_eq9_elsewhere(goal):
    assert insertion_reward(goal.target_pos, goal.target_quat, goal) == pytest.approx(12.0, abs=ROUNDOFF)
    offset, angle = 0.03, 0.4
    pos = goal.target_pos + [offset, 0.0, 0.0]
    quat = rotvec_to_quat(np.array([0.0, angle, 0.0]))
    assert rotation_error(quat, goal) == pytest.approx(angle, abs=1e-12)
    assert insertion_reward(pos, quat, goal) == pytest.approx(np.exp(-offset) + np.exp(-angle), abs=ROUNDOFF)


def test_success_bonus_switches_at_epsilon(goal):
    inside = goal.target_pos + [0.0, 0.0, SUCCESS_RADIUS_M * (1 - 1e-9)]
    outside = goal.target_pos + [0.0, 0.0, SUCCESS_RADIUS_M * (1 + 1e-9)]
    jump = insertion_reward(inside, goal.target_quat, goal) - insertion_reward(outside, goal.target_quat, goal)
    assert jump == pytest.approx(SUCCESS_BONUS, abs=1e-6)
    assert is_success(np.stack([inside, outside]), goal).tolist() == [True, False]


def test_reward_decreases_with_distance_in_a_batch(goal):
    distances = np.linspace(0.003, 0.05, 7)
    pos = goal.target_pos + distances[:, None] * np.array([0.6, 0.0, 0.8])
    rewards = insertion_reward(pos, np.broadcast_to(goal.target_quat, (7, 4)), goal)
    assert rewards.shape == (7,) and np.all(np.diff(rewards) < 0)


def test_halfway_needs_depth_and_the_hole_footprint(goal):
    half = goal.slot_top_z - 0.5 * goal.depth
    deep_inside = goal.target_pos + [0.0, 0.0, half - goal.target_pos[2] - 1e-4]
    shallow = deep_inside + [0.0, 0.0, 2e-4]
    beside = deep_inside + [goal.hole_apothem + 0.01, 0.0, 0.0]
    assert is_halfway(np.stack([deep_inside, shallow, beside]), goal).tolist() == [True, False, False]


def test_goal_refuses_a_scene_without_a_slot():
    with pytest.raises(InvalidInputError, match="not a peg-in-hole scene"):
        InsertionGoal.from_scene(random_training_scene(np.random.default_rng(0)))


def test_action_scale_keeps_box_corners_inside_the_controller_limits():
    gains = peg_in_hole("hexagon", 5e-3).controller
    scale = ActionScale.from_gains(gains)
    corner = scale.to_pose_delta(np.ones(6))
    assert np.linalg.norm(corner[:3]) == pytest.approx(gains.max_pos_step, rel=1e-12)
    assert np.linalg.norm(corner[3:]) <= gains.max_rot_step
    target, _ = pose_target(np.zeros(3), np.array([1.0, 0, 0, 0]), corner, gains)
    assert target == pytest.approx(corner[:3], abs=ROUNDOFF)  # no clipping
    assert scale.to_normalized(corner) == pytest.approx(np.ones(6), abs=ROUNDOFF)


@pytest.mark.parametrize("pairing", ["triangle", "circle-in-square"])
def test_gymnasium_and_sb3_env_checkers_pass_without_a_warning(pairing):
    env = PegInsertionEnv(PegEnvConfig(pairing=pairing))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float32 spaces, finite bounds: nothing to warn about
        check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=True)


def test_initial_states_are_near_the_slot_and_reproducible():
    config = PegEnvConfig(pairing="hexagon")
    env = PegInsertionEnv(config)
    goal = env.goal
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        state, wrench = split_observation(obs)
        assert obs.shape == (OBS_DIM,) and np.all(wrench == 0.0)
        assert np.linalg.norm(state.pos[:2] - goal.target_pos[:2]) <= config.init_xy_radius
        gap = state.pos[2] - goal.slot_top_z
        assert config.init_gap[0] <= gap <= config.init_gap[1]
        assert quat_angle_between(state.quat, goal.target_quat) <= config.init_yaw + 1e-12
        assert not info["success"] and not info["halfway"]
        again, _ = env.reset(seed=seed)
        assert np.array_equal(obs, again)


def test_straight_descent_on_the_axis_succeeds_and_terminates():
    env = PegInsertionEnv(PegEnvConfig(pairing="square"))
    obs, _ = env.reset(seed=3)
    for _ in range(40):
        state, _ = split_observation(obs)
        delta = np.zeros(6)
        delta[:2] = env.goal.target_pos[:2] - state.pos[:2]
        delta[2] = -0.008
        obs, reward, terminated, truncated, info = env.step(np.clip(env.scale.to_normalized(delta), -1, 1))
        if terminated:
            break
    assert terminated and not truncated and info["success"] and info["halfway"]
    assert info["distance"] <= SUCCESS_RADIUS_M and reward >= SUCCESS_BONUS
    assert obs[STATE_Z_FORCE] > 0.0  # the floor pushes the tip up: the sensor reads a contact force


def test_truncates_after_max_steps():
    env = PegInsertionEnv(PegEnvConfig(pairing="circle", max_steps=3))
    env.reset(seed=0)
    flags = [env.step(np.zeros(6))[3] for _ in range(3)]
    assert flags == [False, False, True]


def test_a_contact_model_can_drive_the_env_like_the_world():
    config = PegEnvConfig(pairing="triangle")
    world_env = PegInsertionEnv(config)
    model_env = PegInsertionEnv(config, dynamics=MujocoContactModel(config.scene()), scene=world_env.scene)
    a, _ = world_env.reset(seed=1)
    b, _ = model_env.reset(seed=1)
    assert np.array_equal(a, b)
    action = np.array([0.3, -0.2, -0.5, 0.1, 0.0, -0.1])
    for _ in range(3):
        a = world_env.step(action)[0]
        b = model_env.step(action)[0]
    assert a == pytest.approx(b, abs=1e-9)


def test_bad_input_is_refused():
    env = PegInsertionEnv()
    with pytest.raises(InvalidInputError, match="reset"):
        env.step(np.zeros(6))
    env.reset(seed=0)
    with pytest.raises(InvalidInputError, match="6 finite"):
        env.step(np.array([np.nan, 0, 0, 0, 0, 0]))
    with pytest.raises(InvalidInputError, match="unknown pairing"):
        PegEnvConfig(pairing="octagon")
    with pytest.raises(InvalidInputError, match="observation"):
        split_observation(np.zeros(13))
    state = BodyState.at_rest([0.0, 0.0, 0.05], [2.0, 0.0, 0.0, 0.0])
    with pytest.raises(InvalidInputError, match="unit norm"):
        env.reset(options={"state": state})


def test_every_pairing_builds_its_scene():
    for pairing, (shape, slot) in INSERTION_PAIRINGS.items():
        scene = PegEnvConfig(pairing=pairing).scene()
        assert scene.meta["shape"] == shape and scene.meta["slot_shape"] == (slot or shape)
        assert scene.meta["clearance"] == pytest.approx(5e-3)


def test_env_steps_any_world_and_both_simulators_are_worlds():
    """The env takes any World: the engine in place of MuJoCo gives the same first observation (a tool at rest
    out of contact reads zero) and moves the tool the way the action asks."""
    from contactkit.engine.world import EngineWorld
    from contactkit.model import World
    from contactkit.mujoco.world import MujocoWorld

    config = PegEnvConfig()
    scene = config.scene()
    engine_world = EngineWorld(scene)
    assert isinstance(engine_world, World) and isinstance(MujocoWorld(scene), World)
    with pytest.raises(InvalidInputError, match="not both"):
        PegInsertionEnv(config, world=engine_world, scene=scene)
    on_engine, on_mujoco = PegInsertionEnv(config, world=engine_world), PegInsertionEnv(config)
    obs_e, _ = on_engine.reset(seed=3)
    obs_m, _ = on_mujoco.reset(seed=3)
    np.testing.assert_array_equal(obs_e[:13], obs_m[:13])
    action = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    after_e, *_ = on_engine.step(action)
    after_m, *_ = on_mujoco.step(action)
    assert after_e[2] > obs_e[2] and after_m[2] > obs_m[2]
