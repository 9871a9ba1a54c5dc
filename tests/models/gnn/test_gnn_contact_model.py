"""The learned model as a ContactModel: shapes of single/batched steps and rollouts, bad input, and the
post-processing chain checked with an oracle network that returns the true labels."""

import numpy as np
import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn.contact_model import GnnContactModel
from contactkit.models.gnn.graph import GraphConfig, ModelVariant
from contactkit.models.gnn.kinematics import graph_inputs, graph_targets, prepare_scene
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.samples import acceleration_target
from contactkit.state import BodyState

from ._gnn_synthetic import STEP, box_scene, flight_trajectory, slide_trajectory

CFG = ModelConfig(GraphConfig(ModelVariant.ACT_FIGNET, 3, 0.01, ActionMode.WRENCH),
                  latent_dim=16, hidden_dim=16, mlp_layers=1,
                  message_passing_steps=1)


class OracleNetwork(EncodeProcessDecode):
    """Returns preset accelerations and wrenches: a perfect network, to test everything around it."""

    answers: tuple[torch.Tensor, torch.Tensor] = (torch.zeros(0), torch.zeros(0))

    def predict(self, g):
        return self.answers


@pytest.fixture(scope="module")
def model():
    return GnnContactModel(EncodeProcessDecode(CFG, torch.Generator().manual_seed(0)), box_scene(), STEP)


def _history(batch, h=4):
    rng = np.random.default_rng(0)
    states = np.stack([flight_trajectory(rng, h)[0][:h] for _ in range(int(np.prod(batch, dtype=int)))])
    return BodyState.from_array(states.reshape(*batch, h, 13))


@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_step_shapes(model, batch):
    history = _history(batch)
    state, wrench = model.step(history, np.zeros((*batch, 6)))
    assert state.pos.shape == (*batch, 3) and state.quat.shape == (*batch, 4)
    assert state.lin_vel.shape == (*batch, 3) and state.ang_vel.shape == (*batch, 3)
    assert wrench.shape == (*batch, 6) and np.isfinite(wrench).all()
    np.testing.assert_allclose(np.linalg.norm(state.quat, axis=-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_rollout_shapes_and_history_feedback(model, batch):
    history = _history(batch)
    actions = np.random.default_rng(1).normal(size=(*batch, 5, 6))
    states, wrenches = model.rollout(history, actions)
    assert states.pos.shape == (*batch, 5, 3) and wrenches.shape == (*batch, 5, 6)
    # the first rollout step is a plain step; the second reads that step's output as its newest state
    s1, w1 = model.step(history, actions[..., 0, :])
    np.testing.assert_allclose(states.pos[..., 0, :], s1.pos, atol=1e-12)
    np.testing.assert_allclose(wrenches[..., 0, :], w1, atol=1e-9)
    merged = np.concatenate([history.as_array()[..., 1:, :], s1.as_array()[..., None, :]], axis=-2)
    s2, _ = model.step(BodyState.from_array(merged), actions[..., 1, :])
    np.testing.assert_allclose(states.pos[..., 1, :], s2.pos, atol=1e-12)


def test_bad_input_is_refused(model):
    history = _history(())
    with pytest.raises(InvalidInputError, match="at least 3"):
        model.step(BodyState.from_array(history.as_array()[-2:]), np.zeros(6))
    with pytest.raises(InvalidInputError, match="NaN"):
        model.step(history, np.array([0, 0, np.nan, 0, 0, 0]))
    with pytest.raises(InvalidInputError, match="shape"):
        model.step(history, np.zeros(5))


@pytest.mark.parametrize("trajectory", [flight_trajectory, slide_trajectory])
def test_perfect_network_reproduces_the_data(trajectory):
    """Given exact accelerations and wrenches, the wrapper returns the true next state and F/T reading."""
    rng = np.random.default_rng(4)
    trajs = [trajectory(rng, 4) for _ in range(3)]
    scene = box_scene()
    arrays = prepare_scene(scene, STEP)
    net = OracleNetwork(CFG)
    wrapper = GnnContactModel(net, scene, STEP)
    history = np.stack([s[:3] for s, _, _ in trajs])  # (3, 3, 13): predict s_3 from s_0..s_2
    actions = np.stack([a[2] for _, a, _ in trajs])
    accels, wrenches = [], []
    for (states, acts, readings), hist in zip(trajs, history, strict=True):
        inputs = graph_inputs(arrays, hist, acts[2])
        targets = graph_targets(arrays, hist, readings[2], states[3])
        accels.append(acceleration_target(inputs, targets))
        wrenches.append(targets.wrench)
    net.answers = (torch.tensor(np.concatenate(accels)), torch.tensor(np.stack(wrenches)))
    state, reading = wrapper.step(BodyState.from_array(history), actions)
    truth = np.stack([s[3] for s, _, _ in trajs])
    np.testing.assert_allclose(state.pos, truth[:, :3], atol=1e-12)
    np.testing.assert_allclose(np.abs((state.quat * truth[:, 3:7]).sum(-1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(state.lin_vel, truth[:, 7:10], atol=1e-9)
    np.testing.assert_allclose(state.ang_vel, truth[:, 10:13], atol=1e-8)
    np.testing.assert_allclose(reading, np.stack([r[2] for _, _, r in trajs]), atol=1e-9)
