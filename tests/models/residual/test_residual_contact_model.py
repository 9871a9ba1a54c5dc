"""The residual ContactModel: the backbone bit for bit when the correction is zero, the previous command carried
through a rollout, and the history check that returns the backbone alone on the backbone's own world."""

import numpy as np
import pytest
import torch

from contactkit.data.logged import load_logged
from contactkit.model import ActionMode, rollout
from contactkit.models.residual import (
    FEATURE_DIM,
    HISTORY,
    TARGET_DIM,
    NetConfig,
    ResidualContactModel,
    ResidualNet,
    make_backbone,
)
from contactkit.physics import load_world
from contactkit.state import BodyState


def _net(constant: float):
    """A net whose correction is ``constant`` on every component (zero weights, the targets' mean set)."""
    net = ResidualNet(NetConfig(FEATURE_DIM, TARGET_DIM, hidden=8, members=2))
    with torch.no_grad():
        for w in net.weights:
            w.zero_()
        net.out_mean.fill_(constant)
        net.in_absmax.fill_(1e9)  # every input counts as covered
    return net.eval()


@pytest.fixture(scope="module")
def nominal_case(residual_logs):
    logs = load_logged([residual_logs["nominal"]])
    ep = logs.episodes[0]
    backbone = make_backbone("mujoco", ep.scene, load_world("nominal"), ActionMode.POSE_DELTA)
    return ep, backbone


def _window(ep, t):
    return BodyState.from_array(ep.states[t - HISTORY + 1:t + 1][None])


def test_zero_correction_is_the_backbone(nominal_case):
    ep, backbone = nominal_case
    model = ResidualContactModel(_net(0.0), backbone, ep.scene)
    history, actions = _window(ep, 5), ep.commands[None, 5:15]
    states, wrenches = rollout(model, history, actions)
    ref_states, ref_wrenches = rollout(backbone, BodyState.from_array(ep.states[None, 5:6]), actions)
    np.testing.assert_allclose(states.as_array(), ref_states.as_array(), atol=1e-12)
    np.testing.assert_allclose(wrenches, ref_wrenches, atol=1e-12)


def test_history_check_turns_an_unsupported_correction_off(nominal_case):
    """On the backbone's own world the backbone replays the history exactly; a correction of 1 mm cannot be
    supported, so a primed model returns the backbone — through the whole rollout — and an unprimed one does not."""
    ep, backbone = nominal_case
    t = 6
    ref, _ = backbone.step(BodyState.from_array(ep.states[None, t:t + 1]), ep.commands[None, t])
    model = ResidualContactModel(_net(1e-3), backbone, ep.scene)
    model.prime(ep.commands[None, t - 1])
    states, _ = rollout(model, _window(ep, t), ep.commands[None, t:t + 4])
    np.testing.assert_array_equal(states.pos[:, 0], ref.pos)  # the backbone's own arrays, bit for bit
    alone, _ = rollout(backbone, BodyState.from_array(ep.states[None, t:t + 1]), ep.commands[None, t:t + 4])
    np.testing.assert_array_equal(states.as_array(), alone.as_array())
    assert float(model.last_gate[0]) == 0.0
    unprimed, _ = model.step(_window(ep, t), ep.commands[None, t])
    assert np.linalg.norm(unprimed.pos - ref.pos) > 5e-4
    ungated = ResidualContactModel(_net(1e-3), backbone, ep.scene, gated=False)
    ungated.prime(ep.commands[None, t - 1])
    assert np.linalg.norm(ungated.step(_window(ep, t), ep.commands[None, t])[0].pos - ref.pos) > 5e-4


def test_the_previous_command_is_remembered_through_a_rollout(nominal_case):
    ep, backbone = nominal_case
    model = ResidualContactModel(_net(0.0), backbone, ep.scene)
    history = _window(ep, 4)
    nxt, _ = model.step(history, ep.commands[None, 4])
    window = BodyState.from_array(np.concatenate([history.as_array()[:, 1:], nxt.as_array()[:, None]], axis=1))
    prev, _ = model._previous(window.as_array(), ep.commands[None, 5])
    np.testing.assert_array_equal(prev, ep.commands[None, 4])
    other, _ = model._previous(history.as_array(), ep.commands[None, 5])
    np.testing.assert_array_equal(other, ep.commands[None, 5])  # a fresh history: the command held


def test_inference_threads_are_scoped_to_the_step(nominal_case):
    """The correction runs on the model's thread count and leaves torch's setting as it found it; the step's
    result does not depend on it (a random net, so the correction is not zero)."""
    ep, backbone = nominal_case
    net = ResidualNet(NetConfig(FEATURE_DIM, TARGET_DIM, hidden=8, members=2))
    with torch.no_grad():
        for w in net.weights:
            w.normal_(0.0, 0.1, generator=torch.Generator().manual_seed(3))
        net.in_absmax.fill_(1e9)
    net.eval()
    seen = []
    outside = torch.get_num_threads()
    torch.set_num_threads(2)
    before = torch.get_num_threads()
    original = net.members_normalised

    def spy(x):
        seen.append(torch.get_num_threads())
        return original(x)

    net.members_normalised = spy
    one = ResidualContactModel(net, backbone, ep.scene, gated=False, inference_threads=1)
    state_one, wrench_one = one.step(_window(ep, 5), ep.commands[None, 5])
    assert seen == [1] and torch.get_num_threads() == before
    untouched = ResidualContactModel(net, backbone, ep.scene, gated=False, inference_threads=None)
    state_any, wrench_any = untouched.step(_window(ep, 5), ep.commands[None, 5])
    assert seen[-1] == before
    np.testing.assert_allclose(state_one.as_array(), state_any.as_array(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(wrench_one, wrench_any, rtol=0, atol=1e-12)
    torch.set_num_threads(outside)


def test_bad_actions_are_refused(nominal_case):
    ep, backbone = nominal_case
    model = ResidualContactModel(_net(0.0), backbone, ep.scene)
    with pytest.raises(Exception, match="finite"):
        model.step(_window(ep, 4), np.full((1, 6), np.nan))


def test_a_turned_off_correction_keeps_the_engine_warm_start(residual_logs):
    """With the correction off, a rollout over the engine (which warm-starts from the state it returned) equals the
    engine's own rollout bit for bit: the residual hands back the backbone's arrays untouched."""
    ep = load_logged([residual_logs["nominal"]]).episodes[0]
    engine = make_backbone("engine", ep.scene, load_world("nominal"), ActionMode.POSE_DELTA)
    t = 6
    model = ResidualContactModel(_net(1e-3), engine, ep.scene)
    model.prime(ep.commands[None, t - 1])
    states, wrenches = rollout(model, _window(ep, t), ep.commands[None, t:t + 6])
    assert float(model.last_gate[0]) == 0.0
    alone = make_backbone("engine", ep.scene, load_world("nominal"), ActionMode.POSE_DELTA)
    start = BodyState.from_array(ep.states[None, t:t + 1])
    ref_states, ref_wrenches = rollout(alone, start, ep.commands[None, t:t + 6])
    np.testing.assert_array_equal(states.as_array(), ref_states.as_array())
    np.testing.assert_array_equal(wrenches, ref_wrenches)


def test_the_residual_refuses_absolute_pose_targets_by_name():
    from contactkit.errors import InvalidInputError
    from contactkit.tasks import peg_in_hole

    backbone = make_backbone("mujoco", peg_in_hole(), load_world("nominal"), ActionMode.POSE_TARGET)
    with pytest.raises(InvalidInputError, match="does not take 'pose-target' actions"):
        ResidualContactModel(_net(0.0), backbone, peg_in_hole())
