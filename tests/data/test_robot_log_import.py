"""Mapped robot logs: a ROS 2 bag (MCAP and sqlite3, written here with rosbags' writer) and the equivalent mapped
CSV import to the same arrays; units, quaternion order and frames against hand-converted values; logged
velocities kept; pose targets become pose-delta commands; resampling oracles; bad logs refused by name."""

from __future__ import annotations

import decimal
import json
import re

import numpy as np
import pytest

from contactkit.data.reader import open_dataset
from contactkit.data.robot_log import finite_difference_velocities
from contactkit.data.robot_log_import import LogFormat, import_robot_log, load_robot_log
from contactkit.data.robot_log_mapping import load_mapping, mapping_from_dict, rpy_to_quat
from contactkit.data.robot_log_resample import interpolate_slerp, interval_means
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.model import ActionMode
from contactkit.rotations import cross, quat_angle_between, quat_integrate, quat_mul, quat_rotate, rotvec_to_quat

SAME = 1e-9
"""The bar: a bag and the equivalent CSV import to the same arrays within this (absolute, SI units)."""
EXACT = 1e-12
"""Round-off tolerance [SI] for conversions that are exact in exact arithmetic."""

T0_NS = 1_700_000_000_123_456_789
"""An epoch stamp: times must survive the 64-bit round trip (float seconds would lose 200 ns here)."""
V = np.array([0.02, -0.01, 0.005])
OMEGA = np.array([0.1, -0.2, 0.3])
Q0 = rotvec_to_quat(np.array([0.1, 0.2, -0.3]))


def motion(t: np.ndarray):
    """Tool pose at ``t`` [s] (constant twist V, OMEGA): positions (N, 3), quaternions (N, 4)."""
    return np.array([0.3, 0.1, 0.2]) + t[:, None] * V, np.stack([quat_integrate(Q0, OMEGA, float(s)) for s in t])


def ft(t: np.ndarray) -> np.ndarray:
    """A smooth F/T signal (N, 6) [N, N·m]."""
    return np.stack([np.sin(3 * t + k) * (5.0 if k < 3 else 0.2) for k in range(6)], axis=-1)


def log_samples():
    """Streams on their own clocks: pose 100 Hz, F/T 250 Hz (phase-shifted), twist 50 Hz, pose targets 10 Hz."""
    ns = {"pose": np.arange(0, 1_010_000_000, 10_000_000), "wrench": np.arange(1_000_000, 1_020_000_000, 4_000_000),
          "twist": np.arange(0, 1_020_000_000, 20_000_000), "target": np.arange(0, 1_000_000_000, 100_000_000)}
    t = {k: v * 1e-9 for k, v in ns.items()}
    pos, quat = motion(t["pose"])
    tpos, tquat = motion(t["target"] + 0.1)
    twist = np.hstack([np.tile(V, (len(t["twist"]), 1)), np.tile(OMEGA, (len(t["twist"]), 1))])
    return ns, {"pose": np.hstack([pos, quat]), "wrench": ft(t["wrench"]), "twist": twist,
                "target": np.hstack([tpos, tquat])}


TOPICS = {"pose": "/tool_pose", "wrench": "/ft/wrench", "twist": "/tool_twist", "target": "/target_pose"}


def write_bag(path, storage: str):
    """The samples as a ROS 2 bag (PoseStamped, WrenchStamped, TwistStamped, pose targets as TransformStamped)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    types = {"pose": "geometry_msgs/msg/PoseStamped", "wrench": "geometry_msgs/msg/WrenchStamped",
             "twist": "geometry_msgs/msg/TwistStamped", "target": "geometry_msgs/msg/TransformStamped"}
    ns, values = log_samples()
    messages = []
    with Writer(path, version=9, storage_plugin=StoragePlugin[storage.upper()]) as w:
        conns = {k: w.add_connection(TOPICS[k], types[k], typestore=ts) for k in types}
        for k in types:
            for stamp, v in zip(ns[k] + T0_NS, values[k], strict=True):
                time = T["builtin_interfaces/msg/Time"](int(stamp // 10**9), int(stamp % 10**9))
                hdr = T["std_msgs/msg/Header"](time, "base")
                vec = T["geometry_msgs/msg/Vector3"]
                if k in ("pose", "target"):
                    q = T["geometry_msgs/msg/Quaternion"](v[4], v[5], v[6], v[3])
                    if k == "pose":
                        msg = T[types[k]](hdr, T["geometry_msgs/msg/Pose"](T["geometry_msgs/msg/Point"](*v[:3]), q))
                    else:
                        msg = T[types[k]](hdr, "tool", T["geometry_msgs/msg/Transform"](vec(*v[:3]), q))
                elif k == "wrench":
                    msg = T[types[k]](hdr, T["geometry_msgs/msg/Wrench"](vec(*v[:3]), vec(*v[3:])))
                else:
                    msg = T[types[k]](hdr, T["geometry_msgs/msg/Twist"](vec(*v[:3]), vec(*v[3:])))
                messages.append((int(stamp) + 500_000, conns[k], ts.serialize_cdr(msg, types[k])))
        for stamp, conn, raw in sorted(messages, key=lambda m: m[0]):  # written in receive order
            w.write(conn, stamp, raw)
    return path


BAG_MAPPING = {"control_rate": 20, "streams": {k if k != "target" else "command_pose": {"topic": v}
                                               for k, v in TOPICS.items()}}


def write_csv(path, units=("ms", "mm", "mN", "N*mm", "deg")):
    """The same samples as one CSV (blank cells where a stream has no sample) in other units, xyzw quaternions."""
    ns, values = log_samples()
    scale = {"mm": 1e3, "m": 1.0, "mN": 1e3, "N": 1.0, "N*mm": 1e3, "N*m": 1.0, "deg": 180 / np.pi, "rad": 1.0}
    u_t, u_p, u_f, u_tq, u_a = units
    per_unit = {"s": 10**9, "ms": 10**6, "ns": 1}[u_t]
    cols = {"pose": ["x", "y", "z", "qx", "qy", "qz", "qw"], "wrench": ["fx", "fy", "fz", "tx", "ty", "tz"],
            "twist": ["vx", "vy", "vz", "wx", "wy", "wz"], "target": ["px", "py", "pz", "rx", "ry", "rz", "rw"]}
    sc = {"pose": [scale[u_p]] * 3 + [1.0] * 4, "wrench": [scale[u_f]] * 3 + [scale[u_tq]] * 3,
          "twist": [scale[u_p]] * 3 + [scale[u_a]] * 3, "target": [scale[u_p]] * 3 + [1.0] * 4}
    rows = {}
    for k in cols:
        v = values[k].copy()
        if v.shape[1] == 7:
            v[:, 3:] = v[:, [4, 5, 6, 3]]  # xyzw
        for stamp, row in zip(ns[k], v * np.array(sc[k]), strict=True):
            rows.setdefault(int(stamp), {})[k] = row
    header = ["stamp", "gripper"] + [c for k in cols for c in cols[k]]
    lines = [",".join(header)]
    for stamp in sorted(rows):
        text = str(decimal.Decimal(T0_NS + stamp) / per_unit)
        cells = [text, "0"]
        for k in cols:
            cells += [repr(float(x)) for x in rows[stamp][k]] if k in rows[stamp] else [""] * len(cols[k])
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    mapping = {"control_rate": 20, "time_column": "stamp", "quaternion_order": "xyzw",
               "units": dict(zip(("time", "position", "force", "torque", "angle"), units, strict=True)),
               "streams": {"pose": {"columns": {"position": cols["pose"][:3], "quaternion": cols["pose"][3:]}},
                           "wrench": {"columns": {"force": cols["wrench"][:3], "torque": cols["wrench"][3:]}},
                           "twist": {"columns": {"linear": cols["twist"][:3], "angular": cols["twist"][3:]}},
                           "command_pose": {"columns": {"position": cols["target"][:3],
                                                        "quaternion": cols["target"][3:]}}}}
    return path, mapping


def _assert_same(a, b, tol):
    for name, x in a.arrays().items():
        assert np.abs(x - getattr(b, name)).max() <= tol, name


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_bag_and_equivalent_csv_import_to_the_same_arrays(tmp_path, storage):
    bag = load_robot_log(LogFormat.BAG, write_bag(tmp_path / "bag", storage), mapping_from_dict(BAG_MAPPING))
    csv_path, mapping = write_csv(tmp_path / "log.csv")
    csv = load_robot_log(LogFormat.CSV, csv_path, mapping_from_dict(mapping, "log.csv"))
    _assert_same(bag.episode, csv.episode, SAME)
    ep = bag.episode
    assert ep.n_steps == 19 and np.array_equal(ep.time, np.arange(20) * 0.05)  # 20 Hz over the common 0.001..0.96 s
    assert bag.action_mode is ActionMode.POSE_DELTA and bag.logged_velocity and not bag.has_action
    t_abs = 0.001 + ep.time
    pos, quat = motion(t_abs)
    assert np.abs(ep.pos - pos).max() < EXACT  # linear motion: interpolation is exact
    assert quat_angle_between(ep.quat, quat).max() < 1e-9  # slerp of a constant-rate rotation is exact
    assert np.abs(ep.lin_vel - V).max() < EXACT and np.abs(ep.ang_vel - OMEGA).max() < EXACT  # logged, kept


def test_unknown_log_format_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match=r"log format 'rosbag1' is not one of \['csv', 'bag'\]"):
        load_robot_log("rosbag1", tmp_path / "x.bag", mapping_from_dict(BAG_MAPPING))


def test_single_mcap_storage_file_is_read(tmp_path):
    bag = write_bag(tmp_path / "bag", "mcap")
    (storage,) = bag.glob("*.mcap")
    a = load_robot_log("bag", storage, mapping_from_dict(BAG_MAPPING)).episode
    b = load_robot_log("bag", bag, mapping_from_dict(BAG_MAPPING)).episode
    _assert_same(a, b, 0.0)


def test_pose_targets_become_pose_deltas_held_from_the_last_target(tmp_path):
    log = load_robot_log("bag", write_bag(tmp_path / "bag", "mcap"), mapping_from_dict(BAG_MAPPING))
    ep = log.episode
    t_grid = 0.001 + ep.time[:-1]
    held = np.floor(np.round(t_grid * 1e9) / 1e8) * 0.1  # the last 10 Hz target at or before each grid time
    p_d, q_d = motion(held + 0.1)
    assert np.abs(ep.command[:, :3] - (p_d - ep.pos[:-1])).max() < EXACT
    back = quat_mul(rotvec_to_quat(ep.command[:, 3:]), ep.quat[:-1])  # the controller's composition
    assert np.abs(np.abs(np.sum(back * q_d, axis=-1)) - 1.0).max() < 1e-12
    assert not ep.action.any()


def test_ft_mean_and_end_sampling():
    times = np.array([0, 10, 20, 40], dtype=np.int64) * 10**6
    values = np.array([[0.0], [1.0], [1.0], [3.0]])
    grid = np.array([0, 10, 30, 40], dtype=np.int64) * 10**6
    means = interval_means(times, values, grid)
    # hand integrals of the piecewise-linear signal: 0.5 over [0, 10]; (1*10 + 1.5*10)/20; (2.5 over [30, 40])
    assert np.allclose(means[:, 0], [0.5, 1.25, 2.5], rtol=0, atol=EXACT)
    mapping = {"control_rate": 20, "ft_sampling": "end", "streams": BAG_MAPPING["streams"]}
    assert mapping_from_dict(mapping).ft_sampling.value == "end"


def test_slerp_is_the_constant_rate_rotation():
    times = np.array([0, 10**9], dtype=np.int64)
    q = np.stack([Q0, -quat_integrate(Q0, OMEGA, 1.0)])  # the sign of a sample does not matter
    grid = np.array([0, 250_000_000, 10**9], dtype=np.int64)
    out = interpolate_slerp(times, q, grid)
    want = np.stack([quat_integrate(Q0, OMEGA, s) for s in (0.0, 0.25, 1.0)])
    assert np.abs(np.abs(np.sum(out * want, axis=-1)) - 1.0).max() < 1e-12


def _mini_csv(path, rows, columns="t,x,y,z,qw,qx,qy,qz,fx,fy,fz,tx,ty,tz"):
    path.write_text(columns + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in rows) + "\n")
    return path


MINI = {"streams": {"pose": {"columns": {"position": ["x", "y", "z"], "quaternion": ["qw", "qx", "qy", "qz"]}},
                    "wrench": {"columns": {"force": ["fx", "fy", "fz"], "torque": ["tx", "ty", "tz"]}}}}


def test_units_and_quaternion_order_against_hand_converted_values(tmp_path):
    q = np.array([0.6, 0.0, 0.8, 0.0])  # w x y z
    rows = [[t, 10.0, -20.0, 30.0, q[1], q[2], q[3], q[0], 1000.0, -2000.0, 500.0, 100.0, -200.0, 300.0]
            for t in (0.0, 10.0, 20.0)]
    path = _mini_csv(tmp_path / "u.csv", rows, "t,x,y,z,qx,qy,qz,qw,fx,fy,fz,tx,ty,tz")
    m = {"units": {"time": "ms", "position": "mm", "force": "mN", "torque": "N·mm"}, "quaternion_order": "xyzw",
         "ft_sampling": "end", "streams": {"pose": {"columns": {"position": ["x", "y", "z"],
                                                                "quaternion": ["qx", "qy", "qz", "qw"]}},
                                           "wrench": MINI["streams"]["wrench"]}}
    ep = load_robot_log("csv", path, mapping_from_dict(m)).episode
    assert np.array_equal(ep.time, [0.0, 0.01, 0.02])  # median interval: 10 ms
    assert np.allclose(ep.pos, [0.01, -0.02, 0.03], rtol=0, atol=EXACT)
    assert np.allclose(ep.quat, q, rtol=0, atol=EXACT)
    assert np.allclose(ep.wrench, [1.0, -2.0, 0.5, 0.1, -0.2, 0.3], rtol=0, atol=EXACT)


def test_frames_sensor_tool_and_base_against_hand_values(tmp_path):
    rows = [[t, 0.1, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0] for t in (0.0, 0.1, 0.2)]
    m = {**MINI, "ft_sampling": "end", "units": {"angle": "deg"},
         "frames": {"sensor": {"rpy": [0, 0, 90], "offset": [0, 0, 0.5]}, "tool": {"offset": [0, 0, 0.2]},
                    "base": {"rpy": [0, 0, 90], "offset": [1.0, 0, 0]}}}
    ep = load_robot_log("csv", _mini_csv(tmp_path / "f.csv", rows), mapping_from_dict(m)).episode
    # F/T: x force turned 90° about z is +y; torque = p_s × f = (0, 0, 0.5) × (0, 1, 0) = (-0.5, 0, 0)
    assert np.allclose(ep.wrench, [0, 1, 0, -0.5, 0, 0], rtol=0, atol=EXACT)
    # pose: base turns (0.1, 0, 0) to (0, 0.1, 0) and shifts by (1, 0, 0); the tool is 0.2 up along the body z
    assert np.allclose(ep.pos, [1.0, 0.1, 0.2], rtol=0, atol=EXACT)
    assert np.allclose(ep.quat, rpy_to_quat(np.array([0, 0, np.pi / 2])), rtol=0, atol=EXACT)


def test_body_twist_with_tool_offset_is_the_tool_velocity(tmp_path):
    """A body-frame twist of the flange, a tool 0.1 m along the flange x: v_tool = R v + ω × R t (world)."""
    q = rotvec_to_quat(np.array([0.0, 0.0, np.pi / 2]))
    cols = "t,x,y,z,qw,qx,qy,qz,fx,fy,fz,tx,ty,tz,vx,vy,vz,wx,wy,wz"
    rows = [[t, 0, 0, 0, *q, 0, 0, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, 2.0] for t in (0.0, 0.1, 0.2)]
    m = {"frames": {"tool": {"offset": [0.1, 0, 0]}},
         "streams": {**MINI["streams"], "twist": {"columns": {"linear": ["vx", "vy", "vz"],
                                                              "angular": ["wx", "wy", "wz"]}, "frame": "body"}}}
    # the twist is made up (the pose does not turn): the twist check would refuse it
    log = load_robot_log("csv", _mini_csv(tmp_path / "b.csv", rows, cols), mapping_from_dict(m), checks=False)
    lever = quat_rotate(q, np.array([0.1, 0, 0]))
    want = quat_rotate(q, np.array([0.5, 0, 0])) + cross(np.array([0, 0, 2.0]), lever)
    assert log.logged_velocity and np.allclose(log.episode.lin_vel, want, rtol=0, atol=EXACT)
    assert np.allclose(log.episode.ang_vel, [0, 0, 2.0], rtol=0, atol=EXACT)


def test_joint_states_with_forward_kinematics(tmp_path):
    """A gantry whose joints are the x, y, z positions: sensor_msgs/JointState → pose by the given kinematics."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    with Writer(tmp_path / "j", version=9, storage_plugin=StoragePlugin.MCAP) as w:
        cj = w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ts)
        cw = w.add_connection("/ft", "geometry_msgs/msg/WrenchStamped", typestore=ts)
        for i in range(5):
            hdr = T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](i, 0), "")
            js = T["sensor_msgs/msg/JointState"](hdr, ["gripper", "z", "x", "y"], np.array([9.0, 0.3, 0.1 * i, 0.2]),
                                                 np.zeros(4), np.zeros(4))
            vec = T["geometry_msgs/msg/Vector3"]
            wr = T["geometry_msgs/msg/WrenchStamped"](hdr, T["geometry_msgs/msg/Wrench"](vec(0, 0, -1.0), vec(0, 0, 0)))
            w.write(cj, i * 10**9, ts.serialize_cdr(js, "sensor_msgs/msg/JointState"))
            w.write(cw, i * 10**9, ts.serialize_cdr(wr, "geometry_msgs/msg/WrenchStamped"))
    m = mapping_from_dict({"streams": {"joints": {"topic": "/joint_states", "names": ["x", "y", "z"]},
                                       "wrench": {"topic": "/ft"}}})
    with pytest.raises(InvalidInputError, match="forward kinematics"):
        load_robot_log("bag", tmp_path / "j", m)

    def gantry(q):
        return q, np.tile([1.0, 0, 0, 0], (len(q), 1))

    ep = load_robot_log("bag", tmp_path / "j", m, forward_kinematics=gantry).episode
    assert np.allclose(ep.pos, np.stack([0.1 * np.arange(5), np.full(5, 0.2), np.full(5, 0.3)], -1), atol=EXACT)
    assert np.allclose(ep.lin_vel, [0.1, 0, 0], atol=EXACT)  # no twist logged: finite differences


def test_import_writes_an_appendable_dataset(tmp_path):
    csv_path, mapping = write_csv(tmp_path / "log.csv")
    out = tmp_path / "logs.h5"
    for k in range(2):  # the second import of the same log is asked for
        log = import_robot_log("csv", csv_path, mapping_from_dict(mapping), out, scene_json={"name": "s"},
                               allow_duplicate=k == 1)
    with open_dataset(out) as ds:
        assert len(ds) == 2 and ds.meta.action_mode is ActionMode.POSE_DELTA and ds.meta.control_dt == 0.05
        assert json.loads(ds.meta.policy) == {"name": "robot-log", "has_action": False, "logged_velocity": True}
        _assert_same(ds.episode(1), log.episode, 0.0)


def test_mapping_files_yaml_and_json(tmp_path):
    (tmp_path / "m.yaml").write_text("control_rate: 20\nstreams:\n  pose: {topic: /p}\n  wrench: {topic: /w}\n")
    assert load_mapping(tmp_path / "m.yaml").control_rate == 20.0
    (tmp_path / "m.json").write_text(json.dumps(BAG_MAPPING))
    assert load_mapping(tmp_path / "m.json").streams.keys() == mapping_from_dict(BAG_MAPPING).streams.keys()


@pytest.mark.parametrize("mapping,problem", [
    ({"streams": {"pose": {"topic": "/p"}}}, r"'streams': needs a wrench stream"),
    ({"streams": {"wrench": {"topic": "/w"}}}, r"needs a pose or a joints stream"),
    ({**BAG_MAPPING, "units": {"force": "kN"}}, r"'units.force': 'kN' is not one of"),
    ({**BAG_MAPPING, "quaternion_order": "zyxw"}, r"'quaternion_order'"),
    ({**BAG_MAPPING, "control_rate": -1}, r"'control_rate': needs a number > 0"),
    ({**BAG_MAPPING, "colour": 1}, r"'colour': unknown key"),
    ({"streams": {"pose": {"topic": "/p"}, "wrench": {"topic": "/w"}, "speed": {}}}, r"'streams.speed'"),
    ({**BAG_MAPPING, "frames": {"tool": {"quat_wxyz": [1, 1, 0, 0]}}}, r"'frames.tool.quat_wxyz': not a unit"),
])
def test_bad_mappings_name_the_key(tmp_path, mapping, problem):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(mapping))
    with pytest.raises(InvalidInputError, match=problem) as info:
        load_mapping(path)
    assert str(info.value).startswith(str(path))


def test_mapping_file_that_is_not_a_mapping(tmp_path, files_dir):
    for name in ("random_bytes.h5", "log_garbage.csv"):
        with pytest.raises(InvalidInputError, match=name):
            load_mapping(files_dir / name)
    (tmp_path / "tag.yaml").write_text("!!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(InvalidInputError, match="not a valid YAML"):
        load_mapping(tmp_path / "tag.yaml")


LEGACY = mapping_from_dict({"streams": {"pose": {"columns": {"position": ["x", "y", "z"],
                                                             "quaternion": ["qw", "qx", "qy", "qz"]}},
                                        "wrench": {"columns": {"force": ["fx", "fy", "fz"],
                                                               "torque": ["tx", "ty", "tz"]}}}})


@pytest.mark.parametrize("name,problem", [
    ("log_nan_row.csv", r"line \d+, column 'z': value 'nan' is not finite"),
    ("log_time_backwards.csv", r"line \d+, columns [^:]*: time 0\.05 s goes backwards from 0\.06 s"),
    ("log_duplicate_timestamp.csv", r"line \d+, columns [^:]*: time 0\.06 s repeats"),
    ("log_missing_column.csv", r"missing column\(s\) \['tz'\] named by the mapping"),
    ("log_quaternion_not_unit.csv", r"line 2, columns [^:]*: quaternion \|q\| = 1\.249"),
    ("log_force_in_millinewtons.csv", r"exceeds the plausibility bound 1000 N.*units: \{force: mN\}"),
    ("log_garbage.csv", r"missing column\(s\)"),
    ("random_bytes.h5", r"not a readable CSV text file|missing column|no header"),
])
def test_bad_logs_are_refused_by_the_mapped_csv_import(tmp_path, files_dir, name, problem):
    out = tmp_path / "out.h5"
    with pytest.raises(DatasetError, match=problem) as info:
        import_robot_log("csv", files_dir / name, LEGACY, out)
    assert str(info.value).startswith(str(files_dir / name)) and not out.exists()


def test_control_log_imports_with_the_legacy_mapping(files_dir):
    raw = np.loadtxt(files_dir / "log_ok.csv", delimiter=",", skiprows=1)
    ep = load_robot_log("csv", files_dir / "log_ok.csv", LEGACY).episode
    assert np.allclose(ep.pos, raw[0, 1:4], rtol=0, atol=EXACT)  # the control log is at rest
    assert np.allclose(ep.wrench, raw[1:, 8:14].mean(axis=0), atol=1.0)


def test_bad_bags_are_refused(tmp_path, files_dir):
    m = mapping_from_dict(BAG_MAPPING)
    for name in ("random_bytes.h5", "zero_bytes.h5", "log_ok.csv"):
        with pytest.raises(DatasetError, match=rf"{name}: not a readable ROS 2 bag"):
            load_robot_log("bag", files_dir / name, m)
    with pytest.raises(DatasetError, match="no such bag"):
        load_robot_log("bag", tmp_path / "absent.mcap", m)
    bag = write_bag(tmp_path / "bag", "mcap")
    wrong = {**BAG_MAPPING, "streams": {**BAG_MAPPING["streams"], "wrench": {"topic": "/tool_pose"}}}
    with pytest.raises(DatasetError, match=r"topic '/tool_pose' holds geometry_msgs/msg/PoseStamped, but the wrench"):
        load_robot_log("bag", bag, mapping_from_dict(wrong))
    absent = {**BAG_MAPPING, "streams": {**BAG_MAPPING["streams"], "wrench": {"topic": "/nope"}}}
    with pytest.raises(DatasetError, match=r"no topic '/nope' \(streams.wrench\); the bag has"):
        load_robot_log("bag", bag, mapping_from_dict(absent))


def test_logged_velocities_are_kept_where_finite_differences_are_off(tmp_path):
    """x = A sin(2π f t) logged at 100 Hz with its true velocity, imported at 10 Hz: the episode's velocities are the
    logged ones, where finite differences of the 10 Hz poses are off by mm/s (the issue's 3-5 mm/s)."""
    t = np.arange(0, 201) * 0.01
    amp, freq = 0.01, 1.0
    x, v = amp * np.sin(2 * np.pi * freq * t), amp * 2 * np.pi * freq * np.cos(2 * np.pi * freq * t)
    zero = np.zeros_like(t)
    rows = np.stack([t, x, zero, zero + 0.1, zero + 1, zero, zero, zero, *[zero] * 6, v, *[zero] * 5], -1)
    cols = "t,x,y,z,qw,qx,qy,qz,fx,fy,fz,tx,ty,tz,vx,vy,vz,wx,wy,wz"
    m = {"control_rate": 10, "streams": {**MINI["streams"], "twist": {"columns": {"linear": ["vx", "vy", "vz"],
                                                                                  "angular": ["wx", "wy", "wz"]}}}}
    ep = load_robot_log("csv", _mini_csv(tmp_path / "v.csv", rows, cols), mapping_from_dict(m)).episode
    assert ep.n_steps == 20
    assert np.abs(ep.lin_vel[:, 0] - v[::10]).max() < EXACT  # the grid falls on logged samples
    fd, _ = finite_difference_velocities(ep.time, ep.pos, ep.quat)
    rms = np.sqrt(np.mean((fd[:, 0] - v[::10]) ** 2))
    assert rms > 1e-3  # what finite differences would have stored (2.9 mm/s here)


@pytest.mark.parametrize("folder", ["files", "meshes"])
def test_every_catalog_file_through_the_new_loaders(folder, files_dir):
    """The bad-input catalog through the bag, mapping and mapped-CSV loaders: each file refused naming it, except
    the control log as a mapped CSV (its control cases are no bags or mappings)."""
    for path in sorted((files_dir.parent / folder).iterdir()):
        with pytest.raises(DatasetError, match=re.escape(str(path))):
            load_robot_log("bag", path, mapping_from_dict(BAG_MAPPING))
        with pytest.raises(InvalidInputError, match=re.escape(str(path))):
            load_mapping(path)
        if path.name == "log_ok.csv":
            assert load_robot_log("csv", path, LEGACY).episode.n_steps >= 1
            continue
        with pytest.raises(DatasetError, match=re.escape(str(path))):
            load_robot_log("csv", path, LEGACY)


def test_zero_header_stamps_point_to_receive_times(tmp_path):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    hdr = T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](0, 0), "")  # a driver that never stamps
    vec, point = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Point"]
    with Writer(tmp_path / "z", version=9, storage_plugin=StoragePlugin.MCAP) as w:
        cp = w.add_connection("/p", "geometry_msgs/msg/PoseStamped", typestore=ts)
        cw = w.add_connection("/w", "geometry_msgs/msg/WrenchStamped", typestore=ts)
        for i in range(4):
            pose = T["geometry_msgs/msg/Pose"](point(0.01 * i, 0, 0), T["geometry_msgs/msg/Quaternion"](0, 0, 0, 1))
            w.write(cp, i * 10**8, ts.serialize_cdr(T["geometry_msgs/msg/PoseStamped"](hdr, pose),
                                                    "geometry_msgs/msg/PoseStamped"))
            wrench = T["geometry_msgs/msg/Wrench"](vec(0, 0, -1.0), vec(0, 0, 0))
            w.write(cw, i * 10**8, ts.serialize_cdr(T["geometry_msgs/msg/WrenchStamped"](hdr, wrench),
                                                    "geometry_msgs/msg/WrenchStamped"))
    m = {"streams": {"pose": {"topic": "/p"}, "wrench": {"topic": "/w"}}}
    with pytest.raises(DatasetError, match=r"every header stamp is zero.*stamp: receive"):
        load_robot_log("bag", tmp_path / "z", mapping_from_dict(m))
    ep = load_robot_log("bag", tmp_path / "z", mapping_from_dict({**m, "stamp": "receive"})).episode
    assert ep.n_steps == 3 and np.allclose(ep.lin_vel, [0.1, 0, 0], rtol=0, atol=EXACT)


def test_commanded_wrench_is_moved_to_the_tool_origin(tmp_path):
    """A force (1, 0, 0) N commanded at the flange, the tool origin 0.1 m above it: about the tool origin the
    torque is (flange − tool) × f = (0, 0, −0.1) × (1, 0, 0) = (0, −0.1, 0) N·m (by hand)."""
    cols = "t,x,y,z,qw,qx,qy,qz,fx,fy,fz,tx,ty,tz,cfx,cfy,cfz,ctx,cty,ctz"
    rows = [[t, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 0] for t in (0.0, 0.1, 0.2)]
    m = {"frames": {"tool": {"offset": [0, 0, 0.1]}},
         "streams": {**MINI["streams"], "command_wrench": {"columns": {"force": ["cfx", "cfy", "cfz"],
                                                                       "torque": ["ctx", "cty", "ctz"]}}}}
    log = load_robot_log("csv", _mini_csv(tmp_path / "c.csv", rows, cols), mapping_from_dict(m))
    assert log.has_action and log.action_mode is ActionMode.WRENCH
    assert np.allclose(log.episode.action, [1, 0, 0, 0, -0.1, 0], rtol=0, atol=EXACT)
    assert np.array_equal(log.episode.command, log.episode.action)


def test_tf_messages_give_the_named_child_frame(tmp_path):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    vec, quat = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    with Writer(tmp_path / "tf", version=9, storage_plugin=StoragePlugin.SQLITE3) as w:
        ctf = w.add_connection("/tf", "tf2_msgs/msg/TFMessage", typestore=ts)
        cw = w.add_connection("/w", "geometry_msgs/msg/WrenchStamped", typestore=ts)
        for i in range(3):
            hdr = T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](i, 0), "base")
            tfs = [T["geometry_msgs/msg/TransformStamped"](hdr, child, T["geometry_msgs/msg/Transform"](
                vec(x, 0.5 * i, 0), quat(0, 0, 0, 1))) for child, x in (("camera", 9.0), ("tool0", 0.2))]
            w.write(ctf, i * 10**9, ts.serialize_cdr(T["tf2_msgs/msg/TFMessage"](tfs), "tf2_msgs/msg/TFMessage"))
            force = T["geometry_msgs/msg/Wrench"](vec(0, 0, 1), vec(0, 0, 0))
            wrench = T["geometry_msgs/msg/WrenchStamped"](hdr, force)
            w.write(cw, i * 10**9, ts.serialize_cdr(wrench, "geometry_msgs/msg/WrenchStamped"))
    m = {"streams": {"pose": {"topic": "/tf"}, "wrench": {"topic": "/w"}}}
    with pytest.raises(InvalidInputError, match=r"'streams.pose.child_frame': the topic '/tf' holds TFMessage"):
        load_robot_log("bag", tmp_path / "tf", mapping_from_dict(m))
    m["streams"]["pose"]["child_frame"] = "tool0"
    ep = load_robot_log("bag", tmp_path / "tf", mapping_from_dict(m)).episode
    assert np.allclose(ep.pos, [[0.2, 0, 0], [0.2, 0.5, 0], [0.2, 1.0, 0]], rtol=0, atol=EXACT)
