"""features_from_episode: eq 18 features of a recorded episode (pose targets → r_des, φ in the tool frame), and an
imported robot log (mapped CSV with pose targets) trains the online linear model (LML) to its linear readings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contactkit.data import load_robot_log, mapping_from_dict
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.linear import LinearForceModel, PoseCommandFeatures, attitude_error, features_from_episode
from contactkit.rotations import quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat


class _Ep:
    def __init__(self, pos, quat, command, wrench):
        self.pos, self.quat, self.command, self.wrench = pos, quat, command, wrench


def _random_poses(rng, n):
    return rng.normal(scale=0.05, size=(n, 3)), rotvec_to_quat(rng.normal(scale=0.5, size=(n, 3)))


def test_pose_delta_command_gives_the_target_and_its_tool_frame_attitude_error():
    rng = np.random.default_rng(0)
    pos, quat = _random_poses(rng, 6)
    r_des, q_des = _random_poses(rng, 5)
    rel = quat_mul(q_des, quat[:-1] * np.array([1, -1, -1, -1]))  # q_des ⊗ q*: the world-frame rotation delta
    command = np.hstack([r_des - pos[:-1], quat_to_rotvec(rel * np.sign(rel[:, :1]))])
    wrench = rng.normal(size=(5, 6))
    W, Y = features_from_episode(_Ep(pos, quat, command, wrench))
    R = quat_to_mat(quat[:-1])
    want = PoseCommandFeatures()(pos[:-1], R, r_des, attitude_error(R, quat_to_mat(q_des)))
    assert W.shape == (5, 19) and np.abs(W - want).max() < 1e-12
    assert np.array_equal(Y, wrench)


def test_wrench_commands_and_bad_shapes_are_refused():
    rng = np.random.default_rng(1)
    pos, quat = _random_poses(rng, 4)
    ep = _Ep(pos, quat, np.zeros((3, 6)), np.zeros((3, 6)))
    with pytest.raises(InvalidInputError, match="needs pose-delta commands"):
        features_from_episode(ep, ActionMode.WRENCH)
    with pytest.raises(InvalidInputError, match=r"expects pos \(T\+1, 3\)"):
        features_from_episode(_Ep(pos[:3], quat[:3], np.zeros((3, 6)), np.zeros((3, 6))))


def test_an_imported_log_trains_the_linear_model(tmp_path):
    """Readings made linear in the eq-18 features of the step's start (y_{k+1} = G w_k) are learned from the
    imported CSV (pose targets, ms and mm units, xyzw) to round-off: the import pairs states, targets and readings
    as LML does."""
    rng = np.random.default_rng(2)
    n = 80
    pos, quat = _random_poses(rng, n)
    r_des = pos + rng.normal(scale=0.003, size=(n, 3))
    q_des = quat_mul(rotvec_to_quat(rng.normal(scale=0.05, size=(n, 3))), quat)
    R = quat_to_mat(quat)
    w = PoseCommandFeatures()(pos, R, r_des, attitude_error(R, quat_to_mat(q_des)))
    G = rng.normal(size=(6, 19))
    y = np.vstack([np.zeros((1, 6)), w[:-1] @ G.T])  # the reading at sample k + 1 answers the command of sample k
    xyzw = [1, 2, 3, 0]
    rows = np.hstack([np.arange(n)[:, None] * 10.0, pos * 1e3, quat[:, xyzw], r_des * 1e3, q_des[:, xyzw], y])
    cols = "t,x,y,z,qx,qy,qz,qw,px,py,pz,rx,ry,rz,rw,fx,fy,fz,tx,ty,tz".split(",")
    (tmp_path / "log.csv").write_text(",".join(cols) + "\n" + "\n".join(",".join(map(repr, r)) for r in rows.tolist()))
    mapping = {"units": {"time": "ms", "position": "mm"}, "quaternion_order": "xyzw", "ft_sampling": "end",
               "streams": {"pose": {"columns": {"position": cols[1:4], "quaternion": cols[4:8]}},
                           "command_pose": {"columns": {"position": cols[8:11], "quaternion": cols[11:15]}},
                           "wrench": {"columns": {"force": cols[15:18], "torque": cols[18:21]}}}}
    log = load_robot_log("csv", tmp_path / "log.csv", mapping_from_dict(json.loads(json.dumps(mapping))),
                         checks=False)  # random orientations, 57° apart per sample: the jump check would refuse
    W, Y = features_from_episode(log.episode, log.action_mode)
    assert W.shape == (n - 1, 19) and np.abs(W - w[:-1]).max() < 1e-9
    model = LinearForceModel.fit(W, Y, b=1e-9)
    residual = np.abs(np.asarray(model.predict(W)) - Y).max()
    assert residual < 1e-6 * np.abs(Y).max()
