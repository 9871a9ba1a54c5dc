"""ICR planning (pushing paper §II-B1, §III): the arc passes through start and goal about the closed-form centre,
the object turns rigidly with it, every profile integrates to the goal angle, velocities and accelerations are
the derivatives of the poses, pure translation is the straight-line limit, and bad goals are refused."""

import numpy as np
import pytest

from contactkit.control.icr import (
    AngularProfile,
    ArcMode,
    PlanarWorkspace,
    ProfileKind,
    body_point_twist,
    icr_acceleration,
    icr_arc,
    icr_trajectory,
    profile_progress,
)
from contactkit.errors import InvalidInputError

PROFILES = [AngularProfile(k) for k in ProfileKind]


def random_pair(rng):
    start = np.array([*rng.uniform(-0.2, 0.2, 2), rng.uniform(-1, 1)])
    goal = start + np.array([*rng.uniform(-0.3, 0.3, 2), rng.choice([-1, 1]) * rng.uniform(0.05, 1.5)])
    return start, goal


def test_centre_matches_perpendicular_bisector_closed_form():
    rng = np.random.default_rng(0)
    for _ in range(50):
        start, goal = random_pair(rng)
        arc = icr_arc(start, goal)
        d = goal[:2] - start[:2]
        chord = np.linalg.norm(d)
        dth = goal[2] - start[2]
        # rotating CCW by dth about c maps p0 to p1: c lies left of p0→p1 at (chord/2)/tan(dth/2) from the midpoint
        c = 0.5 * (start[:2] + goal[:2]) + (chord / 2) / np.tan(dth / 2) * np.array([-d[1], d[0]]) / chord
        assert arc.mode is ArcMode.ROTATION
        np.testing.assert_allclose(arc.centre, c, atol=1e-12)
        assert arc.radius == pytest.approx(np.linalg.norm(start[:2] - c), rel=1e-12)
        assert arc.length == pytest.approx(arc.radius * abs(dth), rel=1e-12)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.kind.value)
def test_trajectory_is_a_rigid_rotation_about_the_icr(profile):
    rng = np.random.default_rng(1)
    for _ in range(10):
        start, goal = random_pair(rng)
        arc = icr_arc(start, goal)
        poses, _ = icr_trajectory(start, goal, profile, 4.0, 0.01)
        assert poses.shape == (401, 3)
        np.testing.assert_allclose(poses[0], start, atol=1e-12)
        np.testing.assert_allclose(poses[-1], goal, atol=1e-12)
        rel = poses[:, :2] - arc.centre
        np.testing.assert_allclose(np.linalg.norm(rel, axis=1), arc.radius, rtol=1e-10)
        # the angle swept about the centre equals the object's turn (rigid motion about the ICR)
        r0 = start[:2] - arc.centre
        swept = np.arctan2(r0[0] * rel[:, 1] - r0[1] * rel[:, 0], r0 @ rel.T)
        np.testing.assert_allclose(np.unwrap(swept), poses[:, 2] - start[2], atol=1e-10)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.kind.value)
def test_profiles_integrate_to_the_goal_angle_and_never_reverse(profile):
    start, goal = np.array([0.1, -0.05, 0.3]), np.array([0.35, 0.1, 1.2])
    dt, T = 1e-3, 5.0
    poses, tw = icr_trajectory(start, goal, profile, T, dt)
    angle = dt * (tw[:, 2].sum() - 0.5 * (tw[0, 2] + tw[-1, 2]))  # trapezoidal rule
    assert angle == pytest.approx(goal[2] - start[2], abs=1e-5)
    assert (tw[:, 2] >= 0).all()
    # velocities are the time derivatives of the poses
    fd = (poses[2:] - poses[:-2]) / (2 * dt)
    np.testing.assert_allclose(tw[1:-1], fd, atol=2e-3 * np.abs(tw).max())
    acc = icr_acceleration(start, goal, profile, T, dt)
    fd2 = (tw[2:] - tw[:-2]) / (2 * dt)
    smooth = np.abs(acc[2:] - acc[:-2]).max(-1) < 1e-2 * (np.abs(acc).max() + 1e-9)  # skip trapezoid corners
    np.testing.assert_allclose(acc[1:-1][smooth], fd2[smooth], atol=1e-3 * (np.abs(acc).max() + 1e-9))


def test_profile_shapes():
    T = 10.0
    t = np.linspace(0, T, 10001)
    _, sd, _ = profile_progress(AngularProfile(ProfileKind.CONSTANT), t, T)
    np.testing.assert_allclose(sd, 1 / T)
    _, sd, sdd = profile_progress(AngularProfile(ProfileKind.TRAPEZOIDAL, ramp_fraction=0.2), t, T)
    assert sd[0] == 0 and sd[-1] == 0
    np.testing.assert_allclose(sd[(t > 2.0) & (t < 8.0)], 1 / (T * 0.8))
    chirp = AngularProfile(ProfileKind.CHIRP, chirp_amplitude=0.6, chirp_f0=0.2, chirp_f1=1.5)
    s, sd, _ = profile_progress(chirp, t, T)
    assert s[0] == pytest.approx(0, abs=1e-15) and s[-1] == pytest.approx(1, abs=1e-12)
    assert sd.min() > 0
    peaks = np.flatnonzero((sd[1:-1] > sd[:-2]) & (sd[1:-1] > sd[2:])) + 1
    assert (t[peaks] > T / 2).sum() > (t[peaks] < T / 2).sum()  # the rate oscillates faster over time


def test_pure_translation_is_the_straight_line_limit():
    start, goal = np.array([0.0, 0.0, 0.4]), np.array([0.2, 0.1, 0.4])
    arc = icr_arc(start, goal)
    assert arc.mode is ArcMode.TRANSLATION and arc.centre is None and arc.radius == np.inf
    poses, tw = icr_trajectory(start, goal, AngularProfile(ProfileKind.TRAPEZOIDAL), 2.0, 0.01)
    cross = (poses[:, 0] - start[0]) * (goal[1] - start[1]) - (poses[:, 1] - start[1]) * (goal[0] - start[0])
    np.testing.assert_allclose(cross, 0, atol=1e-15)
    np.testing.assert_allclose(poses[:, 2], 0.4)
    assert np.isfinite(tw).all() and (tw[:, 2] == 0).all()
    # a tiny turn stays within O(Δθ · chord) of the line: the formula is continuous through Δθ = 0
    near, _ = icr_trajectory(start, goal + [0, 0, 1e-7], AngularProfile(ProfileKind.TRAPEZOIDAL), 2.0, 0.01)
    np.testing.assert_allclose(near[:, :2], poses[:, :2], atol=1e-7)


def test_bad_goals_are_refused():
    ws = PlanarWorkspace(-0.3, 0.3, -0.3, 0.3, max_rotation=np.pi / 2)
    start = np.zeros(3)
    with pytest.raises(InvalidInputError, match="outside the workspace"):
        icr_trajectory(start, [0.5, 0.0, 0.2], AngularProfile(), 1.0, 0.01, ws)
    with pytest.raises(InvalidInputError, match="more than"):
        icr_arc(start, [0.1, 0.0, 2.0], ws)
    with pytest.raises(InvalidInputError, match="more than"):
        icr_arc(start, [0.1, 0.0, 4.0])
    # start and goal inside, but the arc bulges out of the box
    with pytest.raises(InvalidInputError, match="trajectory position"):
        narrow = PlanarWorkspace(-0.05, 0.05, -0.3, 0.3)
        icr_trajectory([0.0, -0.29, 0.0], [0.0, 0.29, 1.5], AngularProfile(), 1.0, 0.01, narrow)
    with pytest.raises(InvalidInputError, match="whole number"):
        icr_trajectory(start, [0.1, 0.0, 0.2], AngularProfile(), 1.0, 0.3)
    with pytest.raises(InvalidInputError, match="pose"):
        icr_arc(start, [np.nan, 0.0, 0.2])
    with pytest.raises(InvalidInputError, match="chirp_amplitude"):
        AngularProfile(ProfileKind.CHIRP, chirp_amplitude=1.0)


def test_body_point_twist_is_the_derivative_of_the_carried_point():
    start, goal, dt = np.array([0.0, 0.0, 0.2]), np.array([0.2, 0.1, 1.0]), 1e-3
    poses, tw = icr_trajectory(start, goal, AngularProfile(ProfileKind.CHIRP), 2.0, dt)
    r = np.array([-0.05, 0.02])
    c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    pts = poses[:, :2] + np.stack([c * r[0] - s * r[1], s * r[0] + c * r[1]], -1)
    v = body_point_twist(poses, tw, r)
    np.testing.assert_allclose(v[1:-1, :2], (pts[2:] - pts[:-2]) / (2 * dt), atol=1e-5)
    np.testing.assert_array_equal(v[:, 2], tw[:, 2])
