"""EngineContactModel: a batched step equals EngineWorld stepping each element, threads change nothing, and a
rollout keeps each element's warm start exactly as an uninterrupted world does."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.model import EngineContactModel
from contactkit.engine.world import EngineWorld
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, ContactModel, rollout
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole

STEPS = 4
"""Control steps of the rollout comparisons (the peg reaches the slot's walls within them)."""


def _setup(batch: int = 3):
    scene = peg_in_hole("hexagon", 1e-3)
    start = BodyState.at_rest(scene.target_pos + [0.0, 0.0, 0.002])
    rng = np.random.default_rng(4)
    actions = np.zeros((batch, STEPS, 6))
    actions[..., :2] = rng.uniform(-2e-3, 2e-3, (batch, STEPS, 2))
    actions[..., 2] = -0.01
    actions[..., 3:] = rng.uniform(-0.02, 0.02, (batch, STEPS, 3))
    history = BodyState(*(np.broadcast_to(np.asarray(a)[None, None], (batch, 1, a.shape[-1])).copy()
                          for a in (start.pos, start.quat, start.lin_vel, start.ang_vel)))
    return scene, start, history, actions


def _world_rollout(scene, start: BodyState, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(states (T, 13), readings (T, 6))`` of one EngineWorld stepped without interruption."""
    world = EngineWorld(scene)
    world.set_state(start)
    results = [world.step(a, ActionMode.POSE_DELTA) for a in actions]
    return np.stack([r.state.as_array() for r in results]), np.stack([r.wrench for r in results])


def test_rollout_equals_an_uninterrupted_world_per_element():
    scene, start, history, actions = _setup()
    model = EngineContactModel(scene)
    assert isinstance(model, ContactModel) and model.history == 1 and model.action_mode is ActionMode.POSE_DELTA
    states, readings = rollout(model, history, actions)
    for i in range(actions.shape[0]):
        ref_states, ref_readings = _world_rollout(scene, start, actions[i])
        assert np.array_equal(states.as_array()[i], ref_states)
        assert np.array_equal(readings[i], ref_readings)
    assert np.any(np.abs(readings) > 1.0)  # the comparison covers contact, not only free motion


def test_threads_give_the_serial_result_bit_for_bit():
    scene, _, history, actions = _setup(batch=5)
    serial = rollout(EngineContactModel(scene), history, actions)
    threaded = rollout(EngineContactModel(scene, n_threads=2), history, actions)
    assert np.array_equal(serial[0].as_array(), threaded[0].as_array())
    assert np.array_equal(serial[1], threaded[1])


def test_a_step_from_a_given_history_does_not_depend_on_earlier_calls():
    scene, _, history, actions = _setup()
    model = EngineContactModel(scene)
    first = model.step(history, actions[:, 0])
    rollout(model, history, actions)  # leaves warm starts behind
    again = model.step(history, actions[:, 0])
    assert np.array_equal(first[0].as_array(), again[0].as_array()) and np.array_equal(first[1], again[1])


def test_batch_shape_is_kept():
    scene, _, history, actions = _setup(batch=4)
    nested = BodyState(*(a.reshape(2, 2, 1, a.shape[-1]) for a in
                         (history.pos, history.quat, history.lin_vel, history.ang_vel)))
    nxt, wrench = EngineContactModel(scene).step(nested, actions[:, 0].reshape(2, 2, 6))
    assert nxt.pos.shape == (2, 2, 3) and nxt.quat.shape == (2, 2, 4) and wrench.shape == (2, 2, 6)


def test_bad_input_is_refused_with_a_reason():
    scene, start, history, actions = _setup()
    model = EngineContactModel(scene)
    bad = actions[:, 0].copy()
    bad[1, 2] = np.nan
    with pytest.raises(InvalidInputError, match="finite"):
        model.step(history, bad)
    with pytest.raises(InvalidInputError, match="shape"):
        model.step(history, actions[:2, 0])
    with pytest.raises(InvalidInputError, match="n_threads"):
        EngineContactModel(scene, n_threads=-1)
    deep = BodyState(history.pos - [0.0, 0.0, 0.02], history.quat, history.lin_vel, history.ang_vel)
    with pytest.raises(InvalidInputError, match="deep"):
        model.step(deep, actions[:, 0])
