"""Issue 35 part 5: one diverged element no longer fails a batch. A batched model flags it (state kept, reading NaN,
the others stepped as alone), the planner gives its rollout the worst cost, the particle filter weight 0 and
resamples it away; and the control period of data and model is checked where they meet."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from contactkit.control.icem import ICEMConfig, initial_state, optimize
from contactkit.control.mpc import ActionScale, make_objective
from contactkit.errors import InvalidInputError, SimulationDiverged
from contactkit.estimation.particle_filter import NoiseSpace, ParticleBelief, predict
from contactkit.estimation.tracking import RecordedEpisode
from contactkit.model import ActionMode, check_control_period, rollout_with_status, step_with_status
from contactkit.mujoco.model import MujocoContactModel
from contactkit.scene import CommandLimits
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

LIFTED = CommandLimits(force=1e13, torque=1e13, pos_step=1e3, rot_step=np.pi)
PUSH = np.array([0.0, 0.0, -1e12, 0.0, 0.0, 0.0])


def _model(mode=ActionMode.WRENCH):
    scene = dataclasses.replace(peg_in_hole("hexagon", 1e-3), command_limits=LIFTED)
    return MujocoContactModel(scene, action_mode=mode), scene


def _history(scene, n: int) -> BodyState:
    rest = BodyState.at_rest(scene.tool.init_pos, scene.tool.init_quat)
    return BodyState(*(np.repeat(np.asarray(a)[None, None], n, axis=0)
                       for a in (rest.pos, rest.quat, rest.lin_vel, rest.ang_vel)))


def test_mujoco_flags_the_diverged_element_keeps_its_state_and_steps_the_others():
    model, scene = _model()
    history = _history(scene, 3)
    actions = np.stack([np.zeros(6), PUSH, np.array([0.0, 0.0, 0.5, 0, 0, 0])])
    state, wrench, diverged = model.step_with_status(history, actions)
    assert diverged.tolist() == [False, True, False]
    assert np.array_equal(state.pos[1], history.pos[1, -1]) and np.all(np.isnan(wrench[1]))
    for i in (0, 2):  # the same as stepped alone
        alone, w = model.step(BodyState(*(a[i:i + 1] for a in (history.pos, history.quat, history.lin_vel,
                                                                history.ang_vel))), actions[i:i + 1])
        assert np.array_equal(alone.pos[0], state.pos[i]) and np.array_equal(w[0], wrench[i])
    with pytest.raises(SimulationDiverged, match=r"batch elements \[1\] were reset.*step_with_status"):
        model.step(history, actions)


class _OneByOne:
    """A model without step_with_status whose step raises for the whole batch when any action pushes 1e12 N."""

    action_mode, history, control_dt = ActionMode.WRENCH, 1, 0.05

    def step(self, history, action):
        if np.any(np.abs(np.asarray(action)) > 1e6):
            raise SimulationDiverged("boom")
        last = BodyState(*(np.asarray(a)[..., -1, :] for a in (history.pos, history.quat, history.lin_vel,
                                                                history.ang_vel)))
        return last.replace(pos=last.pos + 1e-3), np.ones(np.shape(action))


def test_a_model_without_status_is_stepped_one_by_one_after_it_refuses_a_batch():
    _, scene = _model()
    history = _history(scene, 3)
    state, wrench, diverged = step_with_status(_OneByOne(), history, np.stack([np.zeros(6), PUSH, np.zeros(6)]))
    assert diverged.tolist() == [False, True, False]
    assert np.allclose(state.pos[[0, 2]] - history.pos[[0, 2], -1], 1e-3) and np.isnan(wrench[1]).all()
    assert np.array_equal(state.pos[1], history.pos[1, -1])
    states, _, flagged = rollout_with_status(_OneByOne(), history, np.repeat(np.zeros((3, 1, 6)), 2, axis=1))
    assert states.pos.shape == (3, 2, 3) and not flagged.any()


class _Flagging:
    """A pose-delta model that moves by the action and flags every element whose action's z is below -0.5."""

    action_mode, history, control_dt = ActionMode.POSE_DELTA, 1, 0.05

    def step_with_status(self, history, action):
        last = BodyState(*(np.asarray(a)[..., -1, :] for a in (history.pos, history.quat, history.lin_vel,
                                                                history.ang_vel)))
        bad = np.asarray(action)[..., 2] < -0.5
        pos = np.where(bad[..., None], last.pos, last.pos + np.asarray(action)[..., :3])
        return last.replace(pos=pos), np.zeros(np.shape(action)), bad

    def step(self, history, action):
        state, wrench, bad = self.step_with_status(history, action)
        if bad.any():
            raise SimulationDiverged("flagged")
        return state, wrench


def test_the_mpc_objective_gives_a_diverged_rollout_minus_infinity_and_icem_drops_it():
    _, scene = _model()
    history = _history(scene, 1).index(0)
    objective = make_objective(_Flagging(), lambda s: -np.linalg.norm(s.pos, axis=-1), ActionScale(1.0, 1.0), history)
    actions = np.zeros((3, 2, 6))
    actions[1, 1, 2] = -1.0  # diverges at the second step
    values = objective(actions)
    assert np.isfinite(values[[0, 2]]).all() and values[1] == -np.inf
    config = ICEMConfig(lower=-np.ones(6), upper=np.ones(6), horizon=2, population=6, iterations=1, elite_fraction=0.5)
    plan, _, info = optimize(lambda a: np.where(np.arange(len(a)) == 0, -np.inf, -np.abs(a).sum(axis=(1, 2))),
                             initial_state(config), config, np.random.default_rng(0))
    assert info.feasible and info.n_infeasible == 1 and plan.shape == (2, 6)


def test_the_particle_filter_gives_a_flagged_particle_weight_zero():
    belief = ParticleBelief(np.zeros((4, 2)), np.full(4, -np.log(4)))
    flagged = np.array([False, True, False, False])
    moved = predict(belief, lambda p, a: (p + 1.0, flagged), np.zeros(1), np.zeros(2), np.random.default_rng(0),
                    NoiseSpace.EUCLIDEAN)
    assert moved.log_weights[1] == -np.inf and np.allclose(np.exp(moved.log_weights[[0, 2, 3]]), 1 / 3)
    assert np.array_equal(moved.particles[1], [0.0, 0.0]) and np.array_equal(moved.particles[0], [1.0, 1.0])
    with pytest.raises(InvalidInputError, match="every particle with weight diverged"):
        predict(belief, lambda p, a: (p, np.ones(4, bool)), np.zeros(1), np.zeros(2), np.random.default_rng(0))


def test_control_periods_of_data_and_model_must_match():
    check_control_period(0.1, 0.1 * (1 + 1e-12), "log")
    with pytest.raises(InvalidInputError, match=r"^log: control period 0\.1 s \(10 Hz\), but the model steps 0\.05 s "
                                                r"\(20 Hz\)"):
        check_control_period(0.05, 0.1, "log")
    model, scene = _model()
    states = BodyState(*(np.repeat(np.asarray(a)[None], 3, axis=0) for a in
                         (scene.tool.init_pos, scene.tool.init_quat, np.zeros(3), np.zeros(3))))
    episode = RecordedEpisode(states, np.zeros((2, 6)), np.zeros((2, 6)), control_dt=2 * model.control_dt)
    with pytest.raises(InvalidInputError, match="data and model must share the control rate"):
        episode.check_model(model)
    RecordedEpisode(states, np.zeros((2, 6)), np.zeros((2, 6)), control_dt=model.control_dt).check_model(model)
