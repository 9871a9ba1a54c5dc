"""Human-like setpoint trajectories: reproducible, smooth, starting at a collision-free engaged pose."""

import numpy as np
import pytest

from contactkit.assembly import bolting_task, peg_in_hole_task
from contactkit.assembly.exact_contacts import exact_node_contacts
from contactkit.assembly.trajectories import KINDS, TrajectoryKind, colored_noise, min_jerk, random_trajectory
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_angle_between

TASKS = {"peg": peg_in_hole_task(depth_net=None), "nut": bolting_task(depth_net=None)}
ALL = [(name, kind) for name, task in TASKS.items() for kind in KINDS[task.kind]]


@pytest.mark.parametrize(("name", "kind"), ALL)
def test_reproducible_from_the_seed(name, kind):
    task = TASKS[name]
    a = random_trajectory(task, kind, 150, np.random.default_rng(7))
    b = random_trajectory(task, kind, 150, np.random.default_rng(7))
    c = random_trajectory(task, kind, 150, np.random.default_rng(8))
    np.testing.assert_array_equal(a.setpoint_pos, b.setpoint_pos)
    np.testing.assert_array_equal(a.setpoint_quat, b.setpoint_quat)
    np.testing.assert_array_equal(a.initial.pos, b.initial.pos)
    assert not np.allclose(a.setpoint_pos, c.setpoint_pos)


@pytest.mark.parametrize(("name", "kind"), ALL)
def test_smooth_and_starting_at_a_collision_free_pose(name, kind):
    task = TASKS[name]
    tr = random_trajectory(task, kind, 200, np.random.default_rng(3))
    dt = tr.dt
    assert tr.setpoint_pos.shape == (200, 3) and tr.setpoint_quat.shape == (200, 4)
    np.testing.assert_allclose(np.linalg.norm(tr.setpoint_quat, axis=1), 1.0, atol=1e-12)
    # smooth: bounded setpoint speed and acceleration (a hand, not a jump)
    vel = np.diff(np.vstack([tr.initial.pos, tr.setpoint_pos]), axis=0) / dt
    acc = np.diff(vel, axis=0) / dt
    assert np.abs(vel).max() < 0.1 and np.abs(acc).max() < 5.0
    ang = quat_angle_between(tr.setpoint_quat[1:], tr.setpoint_quat[:-1]) / dt
    assert ang.max() < 15.0
    # the first setpoint is the initial pose, up to one row of motion
    assert np.abs(tr.setpoint_pos[0] - tr.initial.pos).max() < 1e-4
    contacts = exact_node_contacts(task, tr.initial, 5e-5)
    assert len(contacts.depth) == 0 or contacts.depth.min() >= 0.0


def test_peg_and_nut_start_engaged():
    peg = TASKS["peg"]
    tr = random_trajectory(peg, TrajectoryKind.INSERT, 10, np.random.default_rng(0))
    assert 0.0 < tr.initial.pos[2] < peg.axis_height  # tip inside the bore
    nut = TASKS["nut"]
    for seed in range(5):
        tr = random_trajectory(nut, TrajectoryKind.SCREW_IN, 10, np.random.default_rng(seed))
        engaged = (nut.axis_height - tr.initial.pos[2]) / nut.pitch
        assert 1.0 <= engaged <= 3.0


def test_screwing_follows_the_pitch():
    nut = TASKS["nut"]
    tr = random_trajectory(nut, TrajectoryKind.SCREW_IN, 200, np.random.default_rng(2))
    assert tr.setpoint_pos[-1, 2] < tr.initial.pos[2] - 0.2 * nut.pitch  # advanced down by the turns
    tr = random_trajectory(nut, TrajectoryKind.SCREW_OUT, 200, np.random.default_rng(2))
    assert tr.setpoint_pos[-1, 2] > tr.initial.pos[2] + 0.2 * nut.pitch


def test_min_jerk_passes_its_waypoints_at_rest():
    wp = np.array([[0.0], [1.0], [-2.0]])
    times = np.array([0.0, 1.0, 3.0])
    t = np.linspace(0.0, 3.0, 3001)
    x = min_jerk(wp, times, t)[:, 0]
    np.testing.assert_allclose(x[[0, 1000, 3000]], wp[:, 0], atol=1e-12)
    assert x[500] == pytest.approx(0.5)  # symmetric profile
    v = np.gradient(x, t)
    np.testing.assert_allclose(v[[1, 1000, 2999]], 0.0, atol=1e-2)


def test_colored_noise_has_the_requested_deviation():
    x = colored_noise(np.random.default_rng(0), 200_000, 2, 1e-3, 0.01)
    assert x[0].tolist() == [0.0, 0.0]
    assert np.std(x[1000:], axis=0) == pytest.approx([1e-3, 1e-3], rel=0.1)


def test_other_tasks_kind_is_refused():
    with pytest.raises(InvalidInputError, match="screw-in"):
        random_trajectory(TASKS["peg"], TrajectoryKind.SCREW_IN, 10, np.random.default_rng(0))
