"""The impedance law (control/impedance.py): absolute pose targets, the TCP offset, damping values, clip reports."""

import warnings

import numpy as np
import pytest

from contactkit.control.clipping import ClipTally, CommandsClipped
from contactkit.control.impedance import command_target, damping_gains, impedance_wrench, pose_target, tcp_position
from contactkit.errors import InvalidInputError
from contactkit.gains import ImpedanceGains
from contactkit.model import ActionMode
from contactkit.rotations import cross, quat_angle_between, quat_mul, quat_to_mat, quat_to_rotvec, rotvec_to_quat

TCP = np.array([0.02, -0.01, 0.15])


def _pose(rng):
    return rng.normal(0.0, 0.1, 3), rotvec_to_quat(rng.normal(0.0, 0.5, 3))


def test_an_absolute_target_within_the_limits_is_tracked_as_given():
    gains = ImpedanceGains(tcp_offset=TCP)
    pos, quat = _pose(np.random.default_rng(0))
    goal = tcp_position(pos, quat, gains) + [0.01, 0.0, -0.005]
    goal_rot = quat_to_rotvec(quat_mul(rotvec_to_quat(np.array([0.0, 0.1, 0.0])), quat))
    target = command_target(pos, quat, np.concatenate([goal, goal_rot]), gains, ActionMode.POSE_TARGET)
    assert target.clipped() == frozenset()
    assert np.array_equal(target.pos, goal) and np.allclose(target.quat, rotvec_to_quat(goal_rot), atol=0)


def test_a_far_absolute_target_is_pulled_to_the_limits_and_reported():
    gains = ImpedanceGains(tcp_offset=TCP)
    pos, quat = _pose(np.random.default_rng(1))
    tcp = tcp_position(pos, quat, gains)
    far = np.concatenate([tcp + [0.2, 0.0, 0.0], quat_to_rotvec(quat_mul(rotvec_to_quat(np.array([1.0, 0, 0])),
                                                                         quat))])
    target = command_target(pos, quat, far, gains, ActionMode.POSE_TARGET)
    assert target.clipped() == {"max_pos_step", "max_rot_step"}
    assert np.linalg.norm(target.pos - tcp) == pytest.approx(gains.max_pos_step, rel=1e-12)
    assert float(quat_angle_between(target.quat, quat)) == pytest.approx(gains.max_rot_step, rel=1e-9)
    # the same displacement given as a pose delta of the TCP gives the same target
    delta = np.concatenate([far[:3] - tcp, quat_to_rotvec(quat_mul(rotvec_to_quat(far[3:]), quat * [1, -1, -1, -1]))])
    by_delta = command_target(pos, quat, delta, gains, ActionMode.POSE_DELTA)
    assert np.allclose(by_delta.pos, target.pos, atol=1e-15) and by_delta.clipped() == target.clipped()


def test_a_batch_of_commands_reports_each_element():
    gains = ImpedanceGains()
    pos, quat = np.zeros((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1))
    delta = np.array([[0.01, 0, 0, 0, 0, 0], [0.05, 0, 0, 0, 0, 0]])
    target = command_target(pos, quat, delta, gains)
    assert target.pos_clipped.tolist() == [False, True] and not target.rot_clipped.any()
    assert np.array_equal(pose_target(pos, quat, delta, gains)[0], target.pos)


def test_the_wrench_of_a_tcp_spring_is_applied_at_the_tcp_and_moved_to_the_origin():
    """Oracle: with the TCP at r, the spring pulls the TCP by K d; about the tool origin that is (K d, R r × K d)."""
    gains = ImpedanceGains(tcp_offset=TCP, max_force=1e6, max_torque=1e6)
    rng = np.random.default_rng(2)
    pos, quat = _pose(rng)
    d = np.array([0.003, -0.002, 0.001])
    zero = np.zeros(3)
    d_pos, d_rot = damping_gains(gains, 0.3, np.full(3, 1e-4))
    w = impedance_wrench(pos, quat, zero, zero, tcp_position(pos, quat, gains) + d, quat, gains, d_pos, d_rot, 0.0)
    force = gains.stiffness_pos * d
    assert np.allclose(w[:3], force, rtol=1e-12) and np.allclose(w[3:], cross(quat_to_mat(quat) @ TCP, force),
                                                                 rtol=1e-9, atol=1e-15)
    # damping acts on the TCP's velocity: a spin about the origin moves the TCP by ω × R r
    omega = np.array([0.0, 0.0, 0.5])
    still = impedance_wrench(pos, quat, zero, omega, tcp_position(pos, quat, gains), quat, gains, d_pos, d_rot, 0.0)
    assert np.allclose(still[:3], -d_pos * cross(omega, quat_to_mat(quat) @ TCP), rtol=1e-12)


def test_damping_values_replace_the_ratio():
    ratio = ImpedanceGains(damping_ratio=0.6)
    d_pos, d_rot = damping_gains(ratio, 0.3, np.array([1e-4, 2e-4, 3e-4]))
    values = ImpedanceGains(damping_pos=d_pos, damping_rot=d_rot)
    got = damping_gains(values, 123.0, np.ones(3))  # values do not depend on the mass
    assert np.array_equal(got[0], d_pos) and np.array_equal(got[1], d_rot)


def test_a_wrench_has_no_pose_target():
    with pytest.raises(InvalidInputError, match="a wrench action has no pose target"):
        command_target(np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(6), ImpedanceGains(), ActionMode.WRENCH)


def test_the_tally_warns_once_with_the_fraction_of_clipped_steps():
    tally = ClipTally()
    for clipped in (frozenset(), {"max_pos_step"}, {"max_pos_step", "max_force"}, frozenset()):
        tally.add(frozenset(clipped))
    assert tally.fractions()["max_pos_step"] == 0.5 and tally.fractions()["max_force"] == 0.25
    with pytest.warns(CommandsClipped, match=r"max_pos_step in 2 of 4 \(50.0 %\); max_force in 1 of 4 \(25.0 %\)"):
        tally.warn("episode 0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ClipTally(steps=3).warn("nothing clipped")  # silent
