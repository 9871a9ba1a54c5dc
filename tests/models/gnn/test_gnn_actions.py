"""Pose-delta actions: the controller's wrench a model computes from a command, checked against the
impedance law of ``control/impedance.py``; its rotation equivariance; that steps and rollouts feed it to the
graph at the model's own state; and that a checkpoint of the other action mode is refused."""

import dataclasses

import numpy as np
import pytest
import torch

from contactkit.control.impedance import damping_gains, impedance_wrench, pose_target
from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn import population as population_module
from contactkit.models.gnn.actions import command_wrench, finite_difference_twist, impedance_law
from contactkit.models.gnn.checkpoint import load_checkpoint, save_checkpoint
from contactkit.models.gnn.contact_model import GnnContactModel
from contactkit.models.gnn.graph import GraphConfig, ModelVariant
from contactkit.models.gnn.kinematics import StepSpec, graph_inputs, net_external_wrench, prepare_scene
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.samples import prepare_window
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole

from ._gnn_synthetic import STEP, box_scene

GRAVITY = 9.81
TOL = 1e-9
POSE = ModelConfig(GraphConfig(ModelVariant.ACT_FIGNET, 3, 0.01, ActionMode.POSE_DELTA),
                   latent_dim=8, hidden_dim=8, mlp_layers=1, message_passing_steps=1)


def _histories(rng, n, h=3, dt=STEP.dt):
    """``(n, h, 13)`` tool states moving and turning at random (velocity fields arbitrary: the law ignores them)."""
    out = np.zeros((n, h, 13))
    for i in range(n):
        pos, q = rng.uniform(-0.05, 0.05, 3) + [0, 0, 0.1], rotvec_to_quat(rng.normal(0, 0.5, 3))
        v, w = rng.normal(0, 0.05, 3), rng.normal(0, 0.5, 3)
        for k in range(h):
            out[i, k, :3] = pos + v * dt * k
            out[i, k, 3:7] = quat_mul(rotvec_to_quat(w * dt * k), q)
            out[i, k, 7:] = rng.normal(size=6)
    return out


def _commands(rng, n):
    return np.concatenate([rng.uniform(-0.02, 0.02, (n, 3)), rng.uniform(-0.2, 0.2, (n, 3))], axis=1)


def test_command_wrench_is_the_impedance_law_at_the_finite_difference_state():
    """Oracle: impedance_wrench of pose_target (control/impedance.py) with the scene's gains and weight."""
    scene = peg_in_hole("hexagon", 1e-3)
    rng = np.random.default_rng(0)
    hist, cmd = _histories(rng, 5), _commands(rng, 5)
    law = impedance_law(scene, (0.0, 0.0, -GRAVITY))
    got = command_wrench(law, hist, cmd, STEP.dt)
    d_pos, d_rot = damping_gains(scene.controller, scene.tool.mass, np.linalg.eigvalsh(scene.tool.inertia))
    for i in range(5):
        p0, p1 = hist[i, -2, :3], hist[i, -1, :3]
        q0, q1 = hist[i, -2, 3:7], hist[i, -1, 3:7]
        v = (p1 - p0) / STEP.dt
        # independent angular velocity: rotation matrix logarithm of R1 R0^T
        rel = quat_to_mat(q1) @ quat_to_mat(q0).T
        angle = np.arccos(np.clip((np.trace(rel) - 1) / 2, -1, 1))
        axis = np.array([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]]) / (2 * np.sin(angle))
        w = axis * angle / STEP.dt
        tp, tq = pose_target(p1, q1, cmd[i], scene.controller)
        want = impedance_wrench(p1, q1, v, w, tp, tq, scene.controller, d_pos, d_rot, scene.tool.mass * GRAVITY)
        np.testing.assert_allclose(got[i], want, atol=TOL)
    lin, ang = finite_difference_twist(hist, STEP.dt)
    np.testing.assert_allclose(lin, (hist[:, -1, :3] - hist[:, -2, :3]) / STEP.dt, atol=TOL)


def test_at_rest_with_no_command_only_gravity_is_compensated():
    """Physical invariant: a tool at rest at its target gets its weight back; the net wrench on it is zero."""
    scene = box_scene()
    arrays = prepare_scene(scene, STEP)
    state = np.r_[0.0, 0.0, 0.1, rotvec_to_quat(np.array([0.3, -0.2, 0.5])), np.zeros(6)]
    hist = np.stack([state] * 3)
    w = command_wrench(arrays.law, hist, np.zeros(6), STEP.dt)
    np.testing.assert_allclose(w, [0, 0, scene.tool.mass * GRAVITY, 0, 0, 0], atol=TOL)
    np.testing.assert_allclose(net_external_wrench(arrays, hist[-1, :3], hist[-1, 3:7], w), 0.0, atol=TOL)


def test_rotating_the_scene_rotates_the_action_wrench():
    """History, command and gravity rotated by R: the net external wrench fed to the graph is rotated by R
    (isotropic gains and inertia of the box tool)."""
    rng = np.random.default_rng(1)
    hist, cmd = _histories(rng, 1)[0], _commands(rng, 1)[0]
    rot_q = rotvec_to_quat(np.array([0.9, -1.7, 0.4]))
    rot = quat_to_mat(rot_q)
    moved = np.array([np.r_[rot @ s[:3], quat_mul(rot_q, s[3:7]), rot @ s[7:10], rot @ s[10:]] for s in hist])
    cmd_moved = np.r_[rot @ cmd[:3], rot @ cmd[3:]]
    step_moved = StepSpec(STEP.dt, tuple(rot @ np.asarray(STEP.gravity)))
    scene = box_scene()
    a, b = prepare_scene(scene, STEP), prepare_scene(scene, step_moved)
    window = {"history": hist, "command": cmd, "wrench": np.zeros(6), "next_state": hist[-1]}
    window_moved = {"history": moved, "command": cmd_moved, "wrench": np.zeros(6), "next_state": moved[-1]}
    net = prepare_window(a, window)[0].wrench
    net_moved = prepare_window(b, window_moved)[0].wrench
    np.testing.assert_allclose(net_moved, np.r_[rot @ net[:3], rot @ net[3:]], atol=1e-9)
    assert np.linalg.norm(net[:3]) > 1.0  # not a trivial zero


def test_bad_commands_are_refused():
    law = prepare_scene(box_scene(), STEP).law
    hist = _histories(np.random.default_rng(2), 2)
    with pytest.raises(InvalidInputError, match="shape"):
        command_wrench(law, hist, np.zeros((2, 5)), STEP.dt)
    with pytest.raises(InvalidInputError, match="h >= 2"):
        command_wrench(law, hist[:, -1:], np.zeros((2, 6)), STEP.dt)
    with pytest.raises(InvalidInputError, match="finite"):
        command_wrench(law, hist, np.full((2, 6), np.nan), STEP.dt)


@pytest.fixture(scope="module")
def pose_model():
    return GnnContactModel(EncodeProcessDecode(POSE, torch.Generator().manual_seed(0)), box_scene(), STEP)


def test_protocol_attributes(pose_model):
    """What exp_mpc_insertion checks for: action_mode, history, control_dt."""
    assert pose_model.action_mode is ActionMode.POSE_DELTA
    assert pose_model.history == 3 and pose_model.control_dt == STEP.dt


def test_steps_feed_the_controller_wrench_at_the_models_own_state(pose_model, monkeypatch):
    """Batched rollout: each step's graph gets the impedance wrench of the command at the current (predicted)
    history — closed loop — not a recorded wrench."""
    seen = []
    real = population_module.net_wrenches

    def spy(*args):
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr("contactkit.models.gnn.population.net_wrenches", spy)
    rng = np.random.default_rng(3)
    hist = _histories(rng, 4).reshape(2, 2, 3, 13)
    cmds = np.stack([_commands(rng, 4) for _ in range(3)], axis=1).reshape(2, 2, 3, 6)
    states, wrenches = pose_model.rollout(BodyState.from_array(hist), cmds)
    assert states.pos.shape == (2, 2, 3, 3) and wrenches.shape == (2, 2, 3, 6)
    arrays = pose_model.arrays
    window = hist.reshape(4, 3, 13)
    for k in range(3):
        applied = command_wrench(arrays.law, window, cmds.reshape(4, 3, 6)[:, k], STEP.dt)
        want = [graph_inputs(arrays, window[i], applied[i]).wrench for i in range(4)]
        np.testing.assert_allclose(seen[k], want, atol=1e-12)
        nxt = states.as_array().reshape(4, 3, 13)[:, k]
        window = np.concatenate([window[:, 1:], nxt[:, None]], axis=1)


def test_checkpoint_of_the_other_action_mode_is_refused(tmp_path):
    pose = EncodeProcessDecode(POSE, torch.Generator().manual_seed(0))
    wrench_cfg = dataclasses.replace(POSE, graph=dataclasses.replace(POSE.graph, action_mode=ActionMode.WRENCH))
    wrench = EncodeProcessDecode(wrench_cfg, torch.Generator().manual_seed(0))
    save_checkpoint(tmp_path / "pose.safetensors", pose, STEP)
    save_checkpoint(tmp_path / "wrench.safetensors", wrench, STEP)
    assert load_checkpoint(tmp_path / "pose.safetensors").model_config.graph.action_mode is ActionMode.POSE_DELTA
    with pytest.raises(CheckpointError, match="takes 'wrench' actions, but 'pose-delta'"):
        GnnContactModel.from_checkpoint(tmp_path / "wrench.safetensors", box_scene())
    with pytest.raises(CheckpointError, match="takes 'pose-delta' actions, but 'wrench'"):
        GnnContactModel.from_checkpoint(tmp_path / "pose.safetensors", box_scene(), action_mode=ActionMode.WRENCH)
    model = GnnContactModel.from_checkpoint(tmp_path / "pose.safetensors", box_scene())
    assert model.action_mode is ActionMode.POSE_DELTA


def test_config_without_action_mode_reads_as_wrench():
    """Checkpoints written before the key existed were trained on applied wrenches."""
    d = POSE.to_dict()
    assert d["graph"]["action_mode"] == "pose-delta"
    del d["graph"]["action_mode"]
    assert ModelConfig.from_dict(d).graph.action_mode is ActionMode.WRENCH
