"""Robot CSV logs: the control log imports exactly, every bad log is refused naming file, line and column,
and finite-difference velocities are exact for constant-velocity motion."""

import json
import shutil

import numpy as np
import pytest

from contactkit.data.reader import open_dataset
from contactkit.data.robot_log import (
    ACTION_COLUMNS,
    FT_COLUMNS,
    MAX_PLAUSIBLE_FORCE,
    QUAT_RENORM_TOL,
    REQUIRED_COLUMNS,
    LogLimits,
    finite_difference_velocities,
    import_log,
    load_log,
)
from contactkit.errors import DatasetError
from contactkit.rotations import quat_angle_between, quat_integrate, quat_mul, rotvec_to_quat

EXACT = 1e-12
"""Tolerance [m/s, rad/s] for finite differences that are exact up to rounding."""


def _csv(path, columns, rows):
    lines = [",".join(columns)] + [",".join(repr(float(v)) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _line_of(path, fragment):
    """1-based line number of the first line of ``path`` that contains ``fragment``."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if fragment in line)


def test_control_log_imports_exactly(tmp_path, files_dir, assert_identical):
    src = files_dir / "log_ok.csv"
    raw = np.loadtxt(src, delimiter=",", skiprows=1)
    ep = load_log(src)
    assert ep.n_steps == raw.shape[0] - 1 and ep.seed is None
    assert np.array_equal(ep.time, raw[:, 0]) and np.array_equal(ep.pos, raw[:, 1:4])
    assert np.array_equal(ep.quat, raw[:, 4:8])
    assert np.array_equal(ep.wrench, raw[1:, 8:14])  # the reading at the end of each step
    assert not ep.lin_vel.any() and not ep.ang_vel.any()  # the logged tool is at rest
    assert not ep.action.any() and not ep.command.any()
    out = tmp_path / "log.h5"
    written = import_log(src, out, scene_json={"name": "bench"})
    assert_identical(written, ep)
    with open_dataset(out) as ds:
        assert len(ds) == 1
        assert_identical(ds.episode(0), ep)
        assert ds.meta.backend == "robot-log" and json.loads(ds.meta.scene) == {"name": "bench"}
        assert json.loads(ds.meta.policy) == {"name": "robot-log", "has_action": False}
        assert ds.meta.control_dt == float(np.median(np.diff(raw[:, 0])))


def _nan_line(path):
    return _line_of(path, "nan")


def _first_repeat_line(path):
    times = [line.split(",")[0] for line in path.read_text().splitlines()]
    return next(i for i in range(2, len(times)) if float(times[i]) <= float(times[i - 1])) + 1


@pytest.mark.parametrize("name,problem,line", [
    ("log_nan_row.csv", r"column 'z': value 'nan' is not finite", _nan_line),
    ("log_time_backwards.csv", r"column 't': time 0\.05 s goes backwards from 0\.06 s", _first_repeat_line),
    ("log_duplicate_timestamp.csv", r"column 't': time 0\.06 s repeats 0\.06 s", _first_repeat_line),
    ("log_missing_column.csv", r"missing column\(s\) \['tz'\]", lambda p: 1),
    ("log_quaternion_not_unit.csv", r"columns qw, qx, qy, qz: \|q\| = 1\.249 deviates from 1", lambda p: 2),
    ("log_force_in_millinewtons.csv", r"column 'fz': \|fz\| = 2000 N exceeds the plausibility bound 1000 N; "
                                      r"the log looks like it is in millinewtons",
     lambda p: _line_of(p, "-2000.0")),
    ("log_garbage.csv", r"missing column\(s\) \['t', 'x'", lambda p: 1),
])
def test_bad_logs_name_file_line_and_column(tmp_path, files_dir, name, problem, line):
    src = files_dir / name
    with pytest.raises(DatasetError, match=problem) as info:
        load_log(src)
    message = str(info.value)
    assert message.startswith(f"{src}: line {line(src)}")
    out = tmp_path / "out.h5"
    with pytest.raises(DatasetError, match=problem):
        import_log(src, out)
    assert not out.exists()


@pytest.mark.parametrize("name", ["random_bytes.h5", "zero_bytes.h5", "truncated.h5"])
def test_binary_or_empty_input_is_refused(files_dir, name):
    with pytest.raises(DatasetError, match=rf"{name}: (not a readable CSV text file|no header row|line \d+)"):
        load_log(files_dir / name)


def test_missing_log(tmp_path):
    with pytest.raises(DatasetError, match="no such log file"):
        load_log(tmp_path / "absent.csv")


def _rows_at_rest(n, quat=(1.0, 0.0, 0.0, 0.0)):
    return [[0.01 * i, 0.0, 0.0, 0.05, *quat, 0.1, 0.0, -2.0, 0.0, 0.0, 0.0] for i in range(n)]


def test_small_quaternion_deviation_is_renormalised(tmp_path):
    scale = 1.0 + 0.5 * QUAT_RENORM_TOL
    q = np.array([0.6, 0.0, 0.8, 0.0]) * scale
    ep = load_log(_csv(tmp_path / "q.csv", REQUIRED_COLUMNS, _rows_at_rest(4, q)))
    assert np.allclose(np.linalg.norm(ep.quat, axis=-1), 1.0, rtol=0, atol=1e-15)
    assert np.allclose(ep.quat, q / scale, rtol=0, atol=1e-15)
    too_long = q / scale * (1 + 2 * QUAT_RENORM_TOL)
    path = _csv(tmp_path / "q2.csv", REQUIRED_COLUMNS, _rows_at_rest(4, too_long))
    with pytest.raises(DatasetError, match="line 2, columns qw, qx, qy, qz"):
        load_log(path)


def test_force_bound_is_a_named_limit(tmp_path):
    rows = _rows_at_rest(3)
    rows[2][FT_COLUMNS.index("fy") + 8] = 1.5 * MAX_PLAUSIBLE_FORCE
    path = _csv(tmp_path / "f.csv", REQUIRED_COLUMNS, rows)
    with pytest.raises(DatasetError, match="line 4, column 'fy'"):
        load_log(path)
    ep = load_log(path, limits=LogLimits(max_force=2 * MAX_PLAUSIBLE_FORCE))
    assert ep.wrench[1, 1] == 1.5 * MAX_PLAUSIBLE_FORCE
    rows[2][FT_COLUMNS.index("fy") + 8] = 0.0
    rows[1][FT_COLUMNS.index("tz") + 8] = 500.0
    with pytest.raises(DatasetError, match="line 3, column 'tz'.*newton-millimetres"):
        load_log(_csv(tmp_path / "t.csv", REQUIRED_COLUMNS, rows))


def test_action_columns_and_step_convention(tmp_path):
    rng = np.random.default_rng(3)
    n = 6
    rows = np.array(_rows_at_rest(n))
    rows[:, 8:14] = rng.normal(size=(n, 6))
    actions = rng.normal(size=(n, 6))
    columns = (*REQUIRED_COLUMNS, *ACTION_COLUMNS, "gripper")  # an unknown column is ignored
    path = _csv(tmp_path / "a.csv", columns, np.hstack([rows, actions, np.ones((n, 1))]))
    ep = load_log(path)
    assert np.array_equal(ep.action, actions[:-1]) and np.array_equal(ep.command, actions[:-1])
    assert np.array_equal(ep.wrench, rows[1:, 8:14])
    out = tmp_path / "a.h5"
    import_log(path, out)
    with open_dataset(out) as ds:
        assert json.loads(ds.meta.policy)["has_action"] is True


def test_partial_action_columns_are_refused(tmp_path):
    columns = (*REQUIRED_COLUMNS, "ax", "ay")
    path = _csv(tmp_path / "p.csv", columns, [r + [0.0, 0.0] for r in _rows_at_rest(3)])
    with pytest.raises(DatasetError, match=r"line 1: action columns must be all of .* missing \['az'"):
        load_log(path)


def test_malformed_rows_are_named(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(",".join(REQUIRED_COLUMNS) + "\n# a comment\n\n" + "0,0,0,0,1,0,0,0,0,0,0,0,0,0\n"
                    + "0.01,0,0,abc,1,0,0,0,0,0,0,0,0,0\n")
    with pytest.raises(DatasetError, match=r"line 5, column 'z': 'abc' is not a number"):
        load_log(path)
    path.write_text(",".join(REQUIRED_COLUMNS) + "\n0,0,0,0,1,0,0,0,0,0,0,0,0,0\n0.01,0,0\n")
    with pytest.raises(DatasetError, match="line 3: 3 fields"):
        load_log(path)
    path.write_text(",".join(REQUIRED_COLUMNS) + "\n0,0,0,0,1,0,0,0,0,0,0,0,0,0\n")
    with pytest.raises(DatasetError, match="1 sample"):
        load_log(path)


def test_several_logs_into_one_file(tmp_path, files_dir):
    out = tmp_path / "logs.h5"
    for _ in range(2):
        import_log(files_dir / "log_ok.csv", out, control_dt=0.01)
    with open_dataset(out) as ds:
        assert len(ds) == 2
    foreign = tmp_path / "foreign.h5"
    shutil.copyfile(files_dir / "unrelated_valid.h5", foreign)
    with pytest.raises(DatasetError, match="refusing to write"):
        import_log(files_dir / "log_ok.csv", foreign)


def _constant_twist_motion(time, v, omega, p0, q0):
    pos = p0 + time[:, None] * v
    quat = np.stack([quat_integrate(q0, omega, t) for t in time])
    return pos, quat


def test_finite_differences_are_exact_for_constant_velocity():
    rng = np.random.default_rng(5)
    time = np.cumsum(rng.uniform(0.002, 0.02, size=12))  # irregular sampling
    v, omega = np.array([0.1, -0.2, 0.05]), np.array([0.3, 1.1, -0.7])
    q0 = rotvec_to_quat(np.array([0.2, -0.4, 0.9]))
    pos, quat = _constant_twist_motion(time, v, omega, np.array([0.3, 0.1, 0.2]), q0)
    quat[::3] *= -1.0  # the sign of a logged quaternion is arbitrary
    lin_vel, ang_vel = finite_difference_velocities(time, pos, quat)
    assert np.abs(lin_vel - v).max() < EXACT
    assert np.abs(ang_vel - omega).max() < EXACT


def test_finite_differences_are_second_order_on_uniform_sampling():
    """Interior error of the central difference shrinks 4x when the step halves (circular motion)."""
    errors = []
    for dt in (0.02, 0.01):
        time = np.arange(0.0, 1.0, dt)
        radius, rate = 0.1, 2.0
        pos = radius * np.stack([np.cos(rate * time), np.sin(rate * time), 0 * time], -1)
        angle = 0.5 * rate**2 * time**2  # accelerating spin about z
        quat = np.stack([np.cos(angle / 2), 0 * time, 0 * time, np.sin(angle / 2)], -1)
        lin_vel, ang_vel = finite_difference_velocities(time, pos, quat)
        v_true = radius * rate * np.stack([-np.sin(rate * time), np.cos(rate * time), 0 * time], -1)
        errors.append((np.abs(lin_vel - v_true)[1:-1].max(),
                       np.abs(ang_vel[:, 2] - rate**2 * time)[1:-1].max()))
    ratio = np.array(errors[0]) / np.maximum(np.array(errors[1]), 1e-300)
    assert ratio[0] == pytest.approx(4.0, rel=0.05)
    assert errors[1][1] < EXACT  # a quadratic angle is differentiated exactly by the central difference


def test_imported_velocities_integrate_back_to_the_poses(tmp_path):
    """Physical consistency: integrating the estimated twist over each step recovers the next pose."""
    time = np.linspace(0.0, 0.5, 26)
    v, omega = np.array([0.02, 0.0, -0.01]), np.array([0.0, 0.0, 0.8])
    pos, quat = _constant_twist_motion(time, v, omega, np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
    rows = np.hstack([time[:, None], pos, quat, np.zeros((len(time), 6))])
    ep = load_log(_csv(tmp_path / "m.csv", REQUIRED_COLUMNS, rows))
    dt = np.diff(ep.time)[:, None]
    assert np.abs(ep.pos[:-1] + ep.lin_vel[:-1] * dt - ep.pos[1:]).max() < EXACT
    q_next = quat_mul(rotvec_to_quat(ep.ang_vel[:-1] * dt), ep.quat[:-1])
    assert quat_angle_between(q_next, ep.quat[1:]).max() < 1e-7
