"""Logged pose targets imported as the robot ran them (``command_mode: pose-target``) or as pose deltas, both of the
scene controller's tool centre point. Oracle: the controller's own reading of either command
(:func:`contactkit.control.impedance.command_target`) is the logged target's TCP pose."""

import dataclasses

import numpy as np
import pytest

from contactkit.control.impedance import command_target
from contactkit.data import load_robot_log, mapping_from_dict
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.rotations import quat_mul, quat_rotate, rotvec_to_quat
from contactkit.tasks.scenes import peg_in_hole

RATE = 50.0
TCP = np.array([0.0, 0.01, 0.04])
"""The cell's tool centre point [m, tool frame]: 40 mm down the tool, 10 mm aside."""


def _scene():
    scene = peg_in_hole("square", 1e-3)
    gains = dataclasses.replace(scene.controller, tcp_offset=TCP, max_pos_step=1.0, max_rot_step=3.0)
    return dataclasses.replace(scene, controller=gains)


def _log(path):
    """A tool turning about z and x while it descends, commanded to a target 2 mm ahead and 3° further turned."""
    t = np.arange(60) / RATE
    rot = np.stack([0.1 * np.sin(t), 0 * t, 0.4 * np.sin(0.7 * t)], 1)
    q = rotvec_to_quat(rot)
    pos = np.stack([0.01 * t, 0 * t, 0.08 - 0.01 * t], 1)
    q_d = quat_mul(rotvec_to_quat(np.array([0.0, 0.0, np.deg2rad(3.0)])), q)
    p_d = pos + np.array([0.002, 0.0, -0.002])
    force = np.tile([0.1, 0.0, -2.9], (len(t), 1))
    rows = np.column_stack([t, pos, q, force, np.zeros((len(t), 3)), p_d, q_d])
    cols = "t,x,y,z,qw,qx,qy,qz,fx,fy,fz,tx,ty,tz,px,py,pz,dw,dx,dy,dz".split(",")
    path.write_text(",".join(cols) + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in rows) + "\n")
    return pos, q, p_d, q_d


def _mapping(**extra):
    return mapping_from_dict({
        "control_rate": RATE, **extra,
        "streams": {"pose": {"columns": {"position": ["x", "y", "z"], "quaternion": ["qw", "qx", "qy", "qz"]}},
                    "wrench": {"columns": {"force": ["fx", "fy", "fz"], "torque": ["tx", "ty", "tz"]}},
                    "command_pose": {"columns": {"position": ["px", "py", "pz"],
                                                 "quaternion": ["dw", "dx", "dy", "dz"]}}}})


@pytest.mark.parametrize("mode", [ActionMode.POSE_TARGET, ActionMode.POSE_DELTA])
def test_both_command_modes_are_the_logged_targets_tcp(tmp_path, mode):
    _, _, p_d, q_d = _log(tmp_path / "log.csv")
    scene = _scene()
    log = load_robot_log("csv", tmp_path / "log.csv", _mapping(command_mode=mode.value), scene=scene, checks=False)
    ep = log.episode
    assert log.action_mode is mode
    target = command_target(ep.pos[:-1], ep.quat[:-1], ep.command, scene.controller, mode)
    k = len(ep.command)
    np.testing.assert_allclose(target.pos, p_d[:k] + quat_rotate(q_d[:k], TCP), atol=1e-9)
    dots = np.abs(np.sum(target.quat * q_d[:k], axis=-1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-9)


def test_the_default_stays_pose_delta_and_a_bad_mode_names_the_key():
    assert _mapping().command_mode is ActionMode.POSE_DELTA
    with pytest.raises(InvalidInputError, match="command_mode"):
        _mapping(command_mode="wrench")
