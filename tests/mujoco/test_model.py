"""MuJoCo as a batched ContactModel agrees with the stepping world, element by element."""

import numpy as np
import pytest

from contactkit.model import ActionMode, ContactModel, rollout
from contactkit.mujoco import MujocoContactModel, MujocoWorld
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState, stack_states
from contactkit.tasks import peg_in_hole


@pytest.mark.parametrize("mode", [ActionMode.POSE_DELTA, ActionMode.WRENCH])
def test_batched_step_equals_world_step(mode):
    scene = peg_in_hole("square", 1e-3)
    model = MujocoContactModel(scene, action_mode=mode)
    assert isinstance(model, ContactModel)
    rng = np.random.default_rng(0)
    starts = [BodyState.at_rest(scene.target_pos + [*rng.uniform(-0.004, 0.004, 2), 0.03 + 0.01 * i],
                                rotvec_to_quat(rng.normal(0, 0.05, 3))) for i in range(4)]
    scale = np.array([0.01, 0.01, 0.02, 0.05, 0.05, 0.05]) if mode is ActionMode.POSE_DELTA else np.ones(6) * 0.5
    actions = rng.uniform(-1, 1, (4, 6)) * scale
    history = stack_states([stack_states([s]) for s in starts])  # (B=4, H=1)
    nxt, wrench = model.step(history, actions)
    assert nxt.pos.shape == (4, 3) and wrench.shape == (4, 6)
    world = MujocoWorld(scene)
    for i, s in enumerate(starts):
        world.reset(s)
        r = world.step(actions[i], mode)
        assert nxt.index(i).as_array() == pytest.approx(r.state.as_array(), abs=1e-12)
        assert wrench[i] == pytest.approx(r.wrench, abs=1e-9)


def test_open_loop_rollout_shapes_and_contact():
    scene = peg_in_hole("hexagon", 1e-3)
    model = MujocoContactModel(scene)
    start = stack_states([stack_states([BodyState.at_rest(scene.tool.init_pos)])] * 2)
    actions = np.tile(np.array([0.0, 0.0, -0.01, 0.0, 0.0, 0.0]), (2, 12, 1))
    states, wrenches = rollout(model, start, actions)
    assert states.pos.shape == (2, 12, 3) and wrenches.shape == (2, 12, 6)
    assert wrenches[0, -1, 2] > 1.0  # pressed onto the slot floor: contact pushes up along sensor z
