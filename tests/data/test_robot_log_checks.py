"""Issue 35 part 4: robot logs that cannot be imported wrong silently. Each mistake a mapping can make on a log written
here (a peg lowered into a turned square slot, an F/T sensor on the flange) is refused in one line or named in a
warning, with the likely mistake and the mapping key; the correct mapping imports the same log cleanly."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from contactkit.data import load_robot_log, mapping_from_dict
from contactkit.data.reader import open_dataset
from contactkit.data.robot_log_checks import RobotLogWarning, ft_lag
from contactkit.data.robot_log_import import import_robot_log
from contactkit.data.robot_log_mapping import FtSampling, StreamKind, euler_to_quat
from contactkit.data.robot_log_resample import make_stream
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.rotations import quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat
from contactkit.tasks.scenes import peg_in_hole

YAW = np.deg2rad(30.0)
RATE = 100.0
COLS = ["t", "x", "y", "z", "qw", "qx", "qy", "qz", "fx", "fy", "fz", "tx", "ty", "tz", "wx", "wy", "wz"]
STREAMS = {"pose": {"columns": {"position": ["x", "y", "z"], "quaternion": ["qw", "qx", "qy", "qz"]}},
           "wrench": {"columns": {"force": ["fx", "fy", "fz"], "torque": ["tx", "ty", "tz"]}}}
TWIST = {"columns": {"linear": ["vx", "vy", "vz"], "angular": ["wx", "wy", "wz"]}}


def scene():
    return peg_in_hole("square", 1e-3, yaw=YAW)


def motion(n: int = 200, depth: bool = True):
    """``(t [s], pos, quat in the robot base (turned -30° about z from the world), ang_vel base, lin_vel base)``: the
    peg lowered from 60 mm into the slot (to 30 mm) with a ±2° wobble about x, aligned with the slot's yaw."""
    t = np.arange(n) / RATE
    z = 0.06 - (0.03 if depth else 0.005) * (1 - np.cos(np.pi * t / t[-1])) / 2
    pos = np.stack([np.zeros(n), np.zeros(n), z], axis=1)
    wobble = np.deg2rad(2.0) * np.sin(2 * np.pi * 1.0 * t)
    q_world = quat_mul(rotvec_to_quat(np.array([0, 0, YAW])), rotvec_to_quat(np.stack([wobble, 0 * t, 0 * t], 1)))
    q_base = quat_mul(rotvec_to_quat(np.array([0, 0, -YAW])), q_world)  # the base frame is the world turned by YAW
    ang_world = np.stack([np.deg2rad(2.0) * 2 * np.pi * np.cos(2 * np.pi * t), 0 * t, 0 * t], 1)
    ang_world = np.einsum("ij,nj->ni", _rz(YAW), ang_world)  # the wobble's axis turns with the slot
    ang_base = np.einsum("ij,nj->ni", _rz(-YAW), ang_world)
    lin = np.gradient(pos, t, axis=0)
    return t, pos, q_base, ang_base, lin


def _rz(a):
    return np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])


FLIP = rotvec_to_quat(np.array([np.pi, 0.0, 0.0]))
"""A robot's TCP points down: its logged orientation is the tool's turned 180° about x (``frames.tool`` undoes it)."""


def write_log(path, *, order="wxyz", torque_scale=1.0, time_scale=1.0, twist=False, depth=True, t0=0.0,
              tcp_down=False):
    t, pos, q, ang, lin = motion(depth=depth)
    if tcp_down:
        q = quat_mul(q, FLIP)
    rng = np.random.default_rng(0)
    force = np.array([0.3, -0.2, -2.9]) + 0.05 * rng.standard_normal((len(t), 3))
    torque = (np.array([0.01, 0.02, 0.0]) + 0.002 * rng.standard_normal((len(t), 3))) * torque_scale
    quat = q if order == "wxyz" else q[:, [1, 2, 3, 0]]
    cols = ["t", "x", "y", "z", "q1", "q2", "q3", "q4", "fx", "fy", "fz", "tx", "ty", "tz"]
    data = [(t0 + t) * time_scale, pos, quat, force, torque]
    if twist:
        cols += ["vx", "vy", "vz", "wx", "wy", "wz"]
        data += [lin, ang]
    rows = np.column_stack(data)
    path.write_text(",".join(cols) + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in rows) + "\n")
    return path


def mapping(*, order="wxyz", base_yaw=True, twist=False, tcp_down=False, **extra):
    m = {"control_rate": RATE, "quaternion_order": order,
         "streams": {"pose": {"columns": {"position": ["x", "y", "z"], "quaternion": ["q1", "q2", "q3", "q4"]}},
                     "wrench": STREAMS["wrench"]}}
    if base_yaw:
        m["frames"] = {"base": {"rpy": [0.0, 0.0, float(YAW)]}}
    if tcp_down:
        m.setdefault("frames", {})["tool"] = {"rpy": [float(np.pi), 0.0, 0.0]}
    if twist:
        m["streams"]["twist"] = TWIST
    m.update(extra)
    return mapping_from_dict(m)


def _load(path, m, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = load_robot_log("csv", path, m, scene=scene(), **kw)
    return log, [str(w.message) for w in caught if issubclass(w.category, RobotLogWarning)]


def test_the_right_mapping_imports_the_log_cleanly(tmp_path):
    path = write_log(tmp_path / "log.csv", order="xyzw", twist=True)
    log, found = _load(path, mapping(order="xyzw", twist=True))
    assert found == [] and log.warnings == ()
    assert log.episode.n_steps == 199 and log.ft_sampling is FtSampling.END  # at the control rate: no blur


def test_a_forgotten_quaternion_order_with_a_twist_is_refused_naming_the_key(tmp_path):
    path = write_log(tmp_path / "log.csv", order="xyzw", twist=True)
    with pytest.raises(DatasetError, match=r"^twist-mismatch: .*angular velocity.*quaternion_order") as info:
        _load(path, mapping(order="wxyz", twist=True))
    assert "\n" not in str(info.value)


def test_a_forgotten_quaternion_order_without_a_twist_is_a_named_warning(tmp_path):
    path = write_log(tmp_path / "log.csv", order="xyzw", depth=False, tcp_down=True)
    assert _load(path, mapping(order="xyzw", tcp_down=True))[1] == []
    log, found = _load(path, mapping(order="wxyz", tcp_down=True))
    assert any(w.startswith("tool-tilt: ") and "quaternion_order" in w for w in found), found
    assert log.warnings and all("\n" not in w for w in log.warnings)


def test_torques_in_newton_millimetres_declared_newton_metres_are_refused(tmp_path):
    path = write_log(tmp_path / "log.csv", torque_scale=1000.0)
    with pytest.raises(DatasetError, match=r"^torque-lever: .*0\.3 kg.*units\.torque: N\*mm"):
        _load(path, mapping())
    _load(path, mapping(units={"torque": "N*mm"}))  # the fix


def test_a_mapping_without_the_slots_yaw_warns_of_penetration(tmp_path):
    path = write_log(tmp_path / "log.csv")
    _, found = _load(path, mapping(base_yaw=False))
    assert any(w.startswith("penetration: ") and "frames.base" in w and "deepest 2." in w for w in found), found
    assert _load(path, mapping())[1] == []


def test_a_millisecond_unit_on_a_nanosecond_log_is_one_line(tmp_path):
    path = write_log(tmp_path / "log.csv", time_scale=1e9, t0=1.7e9)
    with pytest.raises(DatasetError, match=r"past the year 2100.*units\.time") as info:
        _load(path, mapping(units={"time": "ms"}))
    assert "\n" not in str(info.value)
    assert _load(path, mapping(units={"time": "ns"}))[0].start_ns == int(1.7e18)


def test_a_wrong_orientation_group_is_a_rotation_jump(tmp_path):
    """Rotation vectors of 90-180° read as degrees of Euler angles turn the tool by tens of degrees per sample."""
    t = np.arange(50) / RATE
    rv = np.stack([np.pi * 0.9 * (-1) ** np.arange(50), 0 * t, 0 * t], 1)
    path = tmp_path / "rv.csv"
    rows = np.column_stack([t, np.zeros((50, 3)), rv, np.tile([0, 0, -2.9, 0, 0, 0], (50, 1))])
    path.write_text("t,x,y,z,rx,ry,rz,fx,fy,fz,tx,ty,tz\n" + "\n".join(",".join(map(repr, r)) for r in rows.tolist()))
    m = {"control_rate": RATE, "units": {"angle": "rad"}, "streams": {
        "pose": {"columns": {"position": ["x", "y", "z"], "rotvec": ["rx", "ry", "rz"]}}, "wrench": STREAMS["wrench"]}}
    with pytest.raises(DatasetError, match=r"^rotation-jump: .*line 3.*the orientation group"):
        load_robot_log("csv", path, mapping_from_dict(m))


def test_rotation_vectors_and_euler_angles_give_the_quaternions(tmp_path):
    """A UR controller's TCP pose (rotation vector) and stated Euler angles import to the same orientation."""
    t, pos, q, _, _ = motion(n=40)
    rv = quat_to_rotvec(q)
    rpy_deg = np.rad2deg(np.stack([np.arctan2(2 * (q[:, 0] * q[:, 1] + q[:, 2] * q[:, 3]),
                                              1 - 2 * (q[:, 1] ** 2 + q[:, 2] ** 2)),
                                   np.arcsin(np.clip(2 * (q[:, 0] * q[:, 2] - q[:, 3] * q[:, 1]), -1, 1)),
                                   np.arctan2(2 * (q[:, 0] * q[:, 3] + q[:, 1] * q[:, 2]),
                                              1 - 2 * (q[:, 2] ** 2 + q[:, 3] ** 2))], 1))
    assert np.allclose(np.abs(np.sum(euler_to_quat(np.deg2rad(rpy_deg), "xyz") * q, axis=1)), 1.0)
    ft = np.tile([0, 0, -2.9, 0, 0, 0], (len(t), 1))
    out = {}
    for group, values, extra in (("rotvec", rv, {}), ("euler", rpy_deg, {"euler": "xyz", "units": {"angle": "deg"}}),
                                 ("quaternion", q, {})):
        cols = {"rotvec": ["a", "b", "c"], "euler": ["a", "b", "c"], "quaternion": ["a", "b", "c", "d"]}[group]
        path = tmp_path / f"{group}.csv"
        rows = np.column_stack([t, pos, values, ft])
        path.write_text(",".join(["t", "x", "y", "z", *cols, "fx", "fy", "fz", "tx", "ty", "tz"]) + "\n"
                        + "\n".join(",".join(map(repr, r)) for r in rows.tolist()))
        m = {"control_rate": RATE, **extra, "streams": {
            "pose": {"columns": {"position": ["x", "y", "z"], group: cols}}, "wrench": STREAMS["wrench"]}}
        out[group] = load_robot_log("csv", path, mapping_from_dict(m)).episode.quat
    for group in ("rotvec", "euler"):
        assert np.allclose(np.abs(np.sum(out[group] * out["quaternion"], axis=1)), 1.0, atol=1e-12)


def test_euler_angles_need_a_stated_convention():
    m = {"streams": {"pose": {"columns": {"position": ["x", "y", "z"], "euler": ["a", "b", "c"]}},
                     "wrench": STREAMS["wrench"]}}
    with pytest.raises(InvalidInputError, match=r"mapping key 'euler': .*state their convention"):
        mapping_from_dict(m)
    for bad in ("xxy", "xYz", "abc", 3):
        with pytest.raises(InvalidInputError, match=r"mapping key 'euler'"):
            mapping_from_dict({**m, "euler": bad})
    assert mapping_from_dict({**m, "euler": "ZYX"}).euler == "ZYX"


def test_offsets_are_bounded_and_shift_the_stream(tmp_path):
    path = write_log(tmp_path / "log.csv")
    base = load_robot_log("csv", path, mapping(), checks=False)
    m = mapping(streams={"pose": {"columns": {"position": ["x", "y", "z"], "quaternion": ["q1", "q2", "q3", "q4"]}},
                         "wrench": {**STREAMS["wrench"], "offset_s": 0.05}})
    shifted = load_robot_log("csv", path, m, checks=False)
    assert shifted.episode.n_steps == base.episode.n_steps - 5  # the streams overlap 50 ms less
    with pytest.raises(InvalidInputError, match=r"streams\.wrench\.offset_s.*±60"):
        mapping(streams={"pose": STREAMS["pose"], "wrench": {**STREAMS["wrench"], "offset_s": 1e3}})


def test_ft_sampling_auto_takes_the_mean_only_for_a_faster_sensor():
    m = mapping_from_dict({"streams": STREAMS})
    assert m.ft_sampling is FtSampling.AUTO
    from contactkit.data.robot_log_resample import resolve_ft_sampling

    assert resolve_ft_sampling(FtSampling.AUTO, np.arange(100) * 10**7, 10**7) is FtSampling.END
    assert resolve_ft_sampling(FtSampling.AUTO, np.arange(100) * 10**6, 10**7) is FtSampling.MEAN
    assert resolve_ft_sampling(FtSampling.MEAN, np.arange(100) * 10**7, 10**7) is FtSampling.MEAN


def _spring_streams(skew_s: float):
    """A tool bouncing on a spring (F = -k z) logged at 500 Hz, the F/T stamped ``skew_s`` late."""
    t = np.arange(0, 4.0, 0.002)
    z = 0.01 * np.sin(2 * np.pi * 3.1 * t) + 0.006 * np.sin(2 * np.pi * 5.3 * t + 1.0)
    pose = np.column_stack([0 * t, 0 * t, z, np.ones_like(t), 0 * t, 0 * t, 0 * t])
    ft = np.column_stack([0 * t, 0 * t, -300 * z, 0 * t, 0 * t, 0 * t])
    ns = (t * 1e9).astype(np.int64)
    ids = np.arange(len(t))
    return (make_stream(StreamKind.POSE, ns, pose, ids, "pose {id}"),
            make_stream(StreamKind.WRENCH, ns + int(skew_s * 1e9), ft, ids, "ft {id}"))


def test_the_lag_search_finds_a_skew_between_clocks():
    lag, best, zero = ft_lag(*_spring_streams(0.03))
    assert lag == pytest.approx(0.03, abs=0.0025) and best > 0.99 and best - zero > 0.05
    lag, best, zero = ft_lag(*_spring_streams(0.0))
    assert abs(lag) <= 0.002 and best == pytest.approx(zero, abs=1e-3)


def test_each_episode_records_its_source_and_a_second_import_is_refused_unless_asked(tmp_path):
    path = write_log(tmp_path / "log.csv")
    out = tmp_path / "logs.h5"
    log = import_robot_log("csv", path, mapping(), out, scene_json=scene().to_json())
    with open_dataset(out) as ds:
        source = ds.source(0)
    assert source["file"] == str(path) and len(source["sha256"]) == 64 and source["stamp"] == "csv:t"
    assert source["start_ns"] == log.start_ns == 0 and source["ft_sampling"] == "end"
    with pytest.raises(DatasetError, match=r"already imported into .* as episode 0 .*--allow-duplicate"):
        import_robot_log("csv", path, mapping(), out, scene_json=scene().to_json())
    import_robot_log("csv", path, mapping(), out, scene_json=scene().to_json(), allow_duplicate=True)
    with open_dataset(out) as ds:
        assert len(ds) == 2 and ds.sources()[1]["sha256"] == source["sha256"]
    assert json.loads(json.dumps(source)) == source


def _turning_log(path, *, order: str, follows: bool, tilt_deg: float = 10.0):
    """A peg above the slot turning ±35° about its axis and tilting ``±tilt_deg`` about x (100 Hz, 3 s); its forces
    turn with its weight (``follows``) or stay constant (a wrench compensated for the tool's load). Written with
    quaternions in ``order``; no frames (the base is the world)."""
    t = np.arange(300) / RATE
    yaw = np.deg2rad(35.0) * np.sin(2 * np.pi * 0.5 * t)
    tilt = np.deg2rad(tilt_deg) * np.sin(2 * np.pi * 0.3 * t)
    q = quat_mul(rotvec_to_quat(np.stack([0 * t, 0 * t, yaw], 1)), rotvec_to_quat(np.stack([tilt, 0 * t, 0 * t], 1)))
    pos = np.stack([0 * t, 0 * t, 0.07 + 0 * t], 1)
    weight = float(scene().tool.mass) * 9.80665
    down = np.einsum("nji,j->ni", quat_to_mat(q), np.array([0.0, 0.0, -weight]))  # R_kᵀ (0, 0, -m g)
    force = np.array([0.2, -0.1, 0.1]) + (down if follows else np.broadcast_to([0.0, 0.0, -weight], down.shape))
    quat = q if order == "wxyz" else q[:, [1, 2, 3, 0]]
    rows = np.column_stack([t, pos, quat, force, np.zeros((len(t), 3))])
    cols = ["t", "x", "y", "z", "q1", "q2", "q3", "q4", "fx", "fy", "fz", "tx", "ty", "tz"]
    path.write_text(",".join(cols) + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in rows) + "\n")
    return path


def test_a_forgotten_quaternion_order_that_still_looks_upright_is_a_gravity_warning(tmp_path):
    """xyzw read as wxyz turns a yawing tool 180° about an axis near its own: the tool looks upright (no tool-tilt),
    but the weight it implies swings in the sensor frame while the readings do not; the right order is silent."""
    path = _turning_log(tmp_path / "log.csv", order="xyzw", follows=True)
    assert _load(path, mapping(order="xyzw", base_yaw=False))[1] == []
    _, found = _load(path, mapping(order="wxyz", base_yaw=False))
    assert any(w.startswith("gravity: ") and "quaternion_order" in w for w in found), found
    assert not any(w.startswith("tool-tilt: ") for w in found)


def test_a_wrench_compensated_for_the_tool_load_is_named(tmp_path):
    """A tool tilting ±30° swings its weight by about 1 N in the sensor frame; readings that stay put are named."""
    path = _turning_log(tmp_path / "log.csv", order="wxyz", follows=False, tilt_deg=30.0)
    _, found = _load(path, mapping(order="wxyz", base_yaw=False))
    assert any(w.startswith("gravity: ") and "compensated" in w for w in found), found


def test_torques_in_newton_millimetres_without_a_scene_are_a_named_warning(tmp_path):
    """No scene, no tool size: the torque-over-force lever (22 m here) still names the unit."""
    path = write_log(tmp_path / "log.csv", torque_scale=1000.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = load_robot_log("csv", path, mapping())
    assert any(w.startswith("torque-scale: ") and "units.torque" in w for w in log.warnings), log.warnings
    assert any(issubclass(w.category, RobotLogWarning) for w in caught)
    right = load_robot_log("csv", write_log(tmp_path / "ok.csv"), mapping())
    assert not any(w.startswith("torque-scale") for w in right.warnings)
