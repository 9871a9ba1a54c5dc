"""WorldOracle: the environment's own world as a planning model. Oracle: the world's own steps, with every hidden
state (latency queue, flange compliance, sensor filter) of the ``target`` world carried through a rollout."""

import dataclasses

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, rollout
from contactkit.mujoco.oracle import HiddenStart, WorldOracle
from contactkit.physics import load_world
from contactkit.state import BodyState
from contactkit.tasks.peg_env import PegEnvConfig, PegInsertionEnv

STEPS = 12


@pytest.fixture(scope="module")
def target():
    """The target world without F/T noise (the oracle's readings are clean; the bias is subtracted below)."""
    params = dataclasses.replace(load_world("target"), ft_noise_std=(0.0,) * 6)
    assert params.unmodelled_effects()  # the point: a world MujocoContactModel refuses
    env = PegInsertionEnv(PegEnvConfig(pairing="square", max_steps=20), params, observation_dtype=np.float64)
    return env, params


def _deltas(rng, n):
    """``(n, 6)`` pose deltas: downward with a random sideways and twisting part."""
    d = np.zeros((n, 6))
    d[:, :2] = rng.uniform(-2e-3, 2e-3, (n, 2))
    d[:, 2] = -3e-3
    d[:, 5] = rng.uniform(-0.02, 0.02, n)
    return d


def _world_steps(env, seed, deltas):
    """The followed world's own states ``(n, 13)`` and readings ``(n, 6)`` (bias removed) under ``deltas``."""
    env.reset(seed=seed)
    bias = np.asarray(env.world.params.ft_bias)
    out = [env.world.step(d, ActionMode.POSE_DELTA) for d in deltas]
    return np.stack([r.state.as_array() for r in out]), np.stack([r.wrench for r in out]) - bias


def test_a_rollout_is_the_world_itself(target):
    """Each batch element's rollout reproduces the world stepped with its commands: latency, compliance and filter
    included (the warm start is the one thing not carried, so equal to the solver's tolerance, not bit for bit)."""
    env, params = target
    rng = np.random.default_rng(4)
    deltas = np.stack([_deltas(rng, STEPS) for _ in range(3)])
    oracle = WorldOracle(env.scene, params)
    env.reset(seed=11)
    oracle.follow(env.world)
    start = env.world.state()
    history = BodyState.from_array(np.repeat(start.as_array()[None, None], 3, axis=0))
    states, readings = rollout(oracle, history, deltas)
    for i in range(3):
        truth, truth_ft = _world_steps(env, 11, deltas[i])
        np.testing.assert_allclose(states.as_array()[i], truth, rtol=0, atol=1e-7)
        np.testing.assert_allclose(readings[i], truth_ft, rtol=0, atol=1e-4)
    assert np.ptp(states.pos[:, -1, 0]) > 1e-4  # the elements' different commands took them apart
    assert np.abs(readings[..., :3]).max() > 0.5  # in contact: the readings are compared where they matter


def test_rollout_threads_do_not_change_the_result(target):
    env, params = target
    rng = np.random.default_rng(8)
    deltas = np.stack([_deltas(rng, 4) for _ in range(5)])
    out = []
    for threads in (0, 2):
        oracle = WorldOracle(env.scene, params, n_threads=threads)
        env.reset(seed=3)
        oracle.follow(env.world)
        history = BodyState.from_array(np.repeat(env.world.state().as_array()[None, None], 5, axis=0))
        out.append(rollout(oracle, history, deltas))
    np.testing.assert_array_equal(out[0][0].as_array(), out[1][0].as_array())
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_hidden_state_matters_here(target):
    """The same start state without the world's hidden state (its latency queue holding a past command) moves
    differently: what the oracle carries is not a no-op on this world."""
    env, params = target
    oracle = WorldOracle(env.scene, params)
    env.reset(seed=5)
    env.world.step(np.array([0.0, 0.0, -0.02, 0.0, 0.0, 0.0]), ActionMode.POSE_DELTA)  # a step still in the queue
    oracle.follow(env.world)
    now = env.world.state()
    hold = np.zeros((1, 1, 6))
    followed, _ = rollout(oracle, BodyState.from_array(now.as_array()[None, None]), hold)
    fresh = PegInsertionEnv(PegEnvConfig(pairing="square", max_steps=20), params, observation_dtype=np.float64)
    fresh.reset(seed=5)
    fresh.world.set_state(now)  # the same tool state, the queue holding this pose
    alone = fresh.world.step(np.zeros(6), ActionMode.POSE_DELTA).state
    assert np.linalg.norm(followed.pos[0, 0] - alone.pos) > 1e-5


def test_unknown_start_states_are_refused(target):
    env, params = target
    oracle = WorldOracle(env.scene, params)
    env.reset(seed=2)
    state = env.world.state().as_array()[None, None]
    with pytest.raises(InvalidInputError, match="follow"):
        oracle.step(BodyState.from_array(state), np.zeros((1, 6)))
    oracle.follow(env.world)
    moved = state.copy()
    moved[..., 0] += 1e-3
    with pytest.raises(InvalidInputError, match="hidden state"):
        oracle.step(BodyState.from_array(moved), np.zeros((1, 6)))
    with pytest.raises(InvalidInputError, match="finite"):
        oracle.step(BodyState.from_array(state), np.full((1, 6), np.nan))


def test_another_world_cannot_be_followed(target):
    env, params = target
    oracle = WorldOracle(env.scene, dataclasses.replace(params, linear_damping=params.linear_damping * 2 + 1.0))
    env.reset(seed=1)
    with pytest.raises(InvalidInputError, match="physics"):
        oracle.follow(env.world)


def test_at_rest_starts_any_state_as_a_reset_world_would(target):
    """``unknown=AT_REST``: a state of unknown hidden state starts as a world reset to it (no followed world)."""
    env, params = target
    env.reset(seed=6)
    for _ in range(3):
        env.world.step(np.array([0.0, 0.0, -0.01, 0.0, 0.0, 0.0]), ActionMode.POSE_DELTA)
    state = env.world.state()
    deltas = _deltas(np.random.default_rng(2), 4)
    model = WorldOracle(env.scene, params, unknown=HiddenStart.AT_REST)
    states, readings = rollout(model, BodyState.from_array(state.as_array()[None, None]), deltas[None])
    env.world.reset(state)
    bias = np.asarray(params.ft_bias)
    truth = [env.world.step(d, ActionMode.POSE_DELTA) for d in deltas]
    np.testing.assert_allclose(states.as_array()[0], np.stack([r.state.as_array() for r in truth]), rtol=0, atol=1e-7)
    np.testing.assert_allclose(readings[0], np.stack([r.wrench for r in truth]) - bias, rtol=0, atol=1e-4)


def test_a_failed_element_is_flagged_and_the_rest_stepped(target):
    """One element far outside the workspace: step_with_status flags it (input state kept, NaN reading) and steps
    the other as if alone; step raises for the batch."""
    from contactkit.errors import SimulationDiverged

    env, params = target
    env.reset(seed=4)
    good = env.world.state().as_array()
    away = good.copy()
    away[0] += 5.0  # metres beyond the scene's workspace
    history = BodyState.from_array(np.stack([good, away])[:, None])
    hold = np.zeros((2, 6))
    model = WorldOracle(env.scene, params, unknown=HiddenStart.AT_REST)
    state, wrench, diverged = model.step_with_status(history, hold)
    assert diverged.tolist() == [False, True]
    np.testing.assert_array_equal(state.as_array()[1], away)
    assert np.isnan(wrench[1]).all() and np.isfinite(wrench[0]).all()
    alone, _ = WorldOracle(env.scene, params, unknown=HiddenStart.AT_REST).step(history.index((slice(0, 1),)),
                                                                             hold[:1])
    np.testing.assert_allclose(state.as_array()[0], alone.as_array()[0], rtol=0, atol=1e-7)
    with pytest.raises(SimulationDiverged, match="workspace"):
        model.step(history, hold)
