"""`contactkit import csv|bag` end to end: an MCAP bag written here with rosbags' writer and a mapped CSV are imported
(with and without --scene), the imported file trains a few steps, and bad inputs are one clear error line."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from contactkit.cli import app
from contactkit.data import open_dataset
from contactkit.model import ActionMode
from contactkit.models.gnn import load_checkpoint
from contactkit.rotations import quat_integrate
from contactkit.tasks.scenes import peg_in_hole

runner = CliRunner()
DT_NS = 10_000_000  # 100 Hz logging
MAPPING = """\
control_rate: 25            # Hz
streams:
  pose: {topic: /tool_pose}
  wrench: {topic: /ft}
  command_pose: {topic: /target}
"""


def _motion(n: int, seed: int):
    """A slow random drift above the peg-in-hole slot: times [ns], poses (n, 7), F/T (n, 6), targets (n, 7)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) * DT_NS
    pos = np.array([0.0, 0.0, 0.05]) + np.cumsum(rng.normal(scale=2e-4, size=(n, 3)), axis=0)
    quat = np.stack([quat_integrate(np.array([1.0, 0, 0, 0]), np.array([0, 0, 0.2]), k * 0.01) for k in range(n)])
    ft = rng.normal(scale=0.5, size=(n, 6))
    target = np.hstack([pos + np.array([0, 0, -0.002]), quat])
    return t, np.hstack([pos, quat]), ft, target


def write_bag(path, seed: int):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    t, pose, ft, target = _motion(60, seed)
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        c = {k: w.add_connection(topic, typ, typestore=ts) for k, topic, typ in (
            ("pose", "/tool_pose", "geometry_msgs/msg/PoseStamped"), ("ft", "/ft", "geometry_msgs/msg/WrenchStamped"),
            ("target", "/target", "geometry_msgs/msg/PoseStamped"))}
        vec, point = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Point"]
        quat = T["geometry_msgs/msg/Quaternion"]
        for k in range(len(t)):
            hdr = T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](100, int(t[k])), "world")
            for key, v in (("pose", pose[k]), ("target", target[k])):
                msg = T["geometry_msgs/msg/PoseStamped"](hdr, T["geometry_msgs/msg/Pose"](point(*v[:3]),
                                                                                          quat(v[4], v[5], v[6], v[3])))
                w.write(c[key], 100 * 10**9 + int(t[k]), ts.serialize_cdr(msg, "geometry_msgs/msg/PoseStamped"))
            wrench = T["geometry_msgs/msg/Wrench"](vec(*ft[k, :3]), vec(*ft[k, 3:]))
            msg = T["geometry_msgs/msg/WrenchStamped"](hdr, wrench)
            w.write(c["ft"], 100 * 10**9 + int(t[k]), ts.serialize_cdr(msg, "geometry_msgs/msg/WrenchStamped"))
    return path


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-import")
    (root / "mapping.yaml").write_text(MAPPING)
    (root / "scene.json").write_text(peg_in_hole().to_json())
    return root, [write_bag(root / f"bag{i}", seed=i) for i in range(2)]


def test_import_bags_and_train_on_them(logs, tmp_path):
    root, bags = logs
    out = tmp_path / "logs.h5"
    r = runner.invoke(app, ["import", "bag", *map(str, bags), "--mapping", str(root / "mapping.yaml"),
                            "--out", str(out), "--scene", str(root / "scene.json")])
    assert r.exit_code == 0, r.output
    assert "wrote 2 episode(s)" in r.output and "pose targets (pose-delta)" in r.output
    with open_dataset(out) as ds:
        assert len(ds) == 2 and ds.meta.action_mode is ActionMode.POSE_DELTA and ds.meta.control_dt == 0.04
        assert json.loads(ds.meta.scene)["name"] == peg_in_hole().name
        assert ds.episode(0).n_steps == 14  # 0.59 s of 100 Hz samples on a 25 Hz grid
    run = tmp_path / "run"
    r = runner.invoke(app, ["train", "--data", str(out), "--out", str(run), "--steps", "2"])
    assert r.exit_code == 0, r.output
    assert "done at step 2" in r.output
    assert load_checkpoint(run / "last.safetensors").model_config.graph.action_mode is ActionMode.POSE_DELTA
    r = runner.invoke(app, ["train", "--data", str(out), "--out", str(tmp_path / "w"), "--action-mode", "wrench"])
    assert r.exit_code == 2 and "without wrench commands" in r.output


def test_train_needs_the_scene_of_a_log_imported_without_one(logs, tmp_path):
    root, bags = logs
    out = tmp_path / "bare.h5"
    r = runner.invoke(app, ["import", "bag", *map(str, bags), "--mapping", str(root / "mapping.yaml"),
                            "--out", str(out)])
    assert r.exit_code == 0 and "no --scene" in r.output, r.output
    r = runner.invoke(app, ["train", "--data", str(out), "--out", str(tmp_path / "a"), "--steps", "1"])
    assert r.exit_code == 2 and "has no scene description" in r.output and "--scene" in r.output
    r = runner.invoke(app, ["train", "--data", str(out), "--out", str(tmp_path / "b"), "--steps", "1",
                            "--scene", str(root / "scene.json")])
    assert r.exit_code == 0, r.output


def test_import_csv_with_the_legacy_columns(tmp_path, files_dir):
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"streams": {
        "pose": {"columns": {"position": ["x", "y", "z"], "quaternion": ["qw", "qx", "qy", "qz"]}},
        "wrench": {"columns": {"force": ["fx", "fy", "fz"], "torque": ["tx", "ty", "tz"]}}}}))
    out = tmp_path / "o.h5"
    r = runner.invoke(app, ["import", "csv", str(files_dir / "log_ok.csv"), "--mapping", str(mapping),
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    with open_dataset(out) as ds:
        assert ds.meta.action_mode is ActionMode.WRENCH and json.loads(ds.meta.policy)["has_action"] is False


@pytest.mark.parametrize("args,problem", [
    (["csv", "{files}/log_nan_row.csv"], "line 7, column 'z': value 'nan' is not finite"),
    (["csv", "{files}/log_force_in_millinewtons.csv"], "units: {force: mN}"),
    (["bag", "{files}/random_bytes.h5"], "not a readable ROS 2 bag"),
    (["bag", "{root}/bag0", "--scene", "{files}/log_ok.csv"], "--scene"),
    (["bag", "{root}/bag0", "--fk", "nowhere_module:fk"], "--fk 'nowhere_module:fk'"),
    (["bag", "{root}/bag0", "--rate", "0"], "--rate must be > 0"),
])
def test_bad_inputs_are_one_error_line(logs, tmp_path, files_dir, args, problem):
    root, _ = logs
    legacy = tmp_path / "m.yaml"
    legacy.write_text("streams:\n  pose: {columns: {position: [x, y, z], quaternion: [qw, qx, qy, qz]}}\n"
                      "  wrench: {columns: {force: [fx, fy, fz], torque: [tx, ty, tz]}}\n")
    mapping = legacy if args[0] == "csv" else root / "mapping.yaml"
    args = [a.format(files=files_dir, root=root) for a in args]
    out = tmp_path / "o.h5"
    r = runner.invoke(app, ["import", *args, "--mapping", str(mapping), "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert "error:" in r.output and problem in " ".join(r.output.split()) and "Traceback" not in r.output
    assert not out.exists()


@pytest.fixture
def files_dir(tmp_path):
    from pathlib import Path

    src = Path(__file__).parent / "data" / "files"
    dst = tmp_path / "files"
    shutil.copytree(src, dst)
    return dst


def test_wrench_commands_train_a_wrench_model(logs, tmp_path):
    """A CSV with commanded wrenches (command_wrench) imports as wrench data and trains with --action-mode wrench."""
    root, _ = logs
    t, pose, ft, _ = _motion(40, seed=3)
    command = np.random.default_rng(4).normal(scale=2.0, size=(40, 6))
    cols = ["t", "x", "y", "z", "qw", "qx", "qy", "qz", "fx", "fy", "fz", "tx", "ty", "tz",
            "cfx", "cfy", "cfz", "ctx", "cty", "ctz"]
    rows = np.hstack([t[:, None] * 1e-9, pose, ft, command])
    (tmp_path / "w.csv").write_text(",".join(cols) + "\n" + "\n".join(",".join(map(repr, r)) for r in rows.tolist()))
    (tmp_path / "m.json").write_text(json.dumps({"control_rate": 25, "streams": {
        "pose": {"columns": {"position": cols[1:4], "quaternion": cols[4:8]}},
        "wrench": {"columns": {"force": cols[8:11], "torque": cols[11:14]}},
        "command_wrench": {"columns": {"force": cols[14:17], "torque": cols[17:20]}}}}))
    out = tmp_path / "w.h5"
    for _ in range(2):
        r = runner.invoke(app, ["import", "csv", str(tmp_path / "w.csv"), "--mapping", str(tmp_path / "m.json"),
                                "--out", str(out), "--scene", str(root / "scene.json"), "--allow-duplicate"])
        assert r.exit_code == 0 and "commanded wrenches" in r.output, r.output
    r = runner.invoke(app, ["train", "--data", str(out), "--out", str(tmp_path / "run"), "--steps", "1",
                            "--action-mode", "wrench"])
    assert r.exit_code == 0, r.output
    assert load_checkpoint(tmp_path / "run" / "last.safetensors").model_config.graph.action_mode is ActionMode.WRENCH
    r = runner.invoke(app, ["train", "--data", str(out), "--out", str(tmp_path / "p"), "--action-mode", "pose-delta"])
    assert r.exit_code == 2 and "needs pose-delta commands" in " ".join(r.output.split()), r.output
