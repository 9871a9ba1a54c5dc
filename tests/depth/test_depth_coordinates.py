"""Feature coordinates of the depth networks: the invariances they are chosen for."""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from contactkit.depth import R_EPS, Coordinates, make_frame
from contactkit.depth.coordinates import features_numpy
from contactkit.errors import InvalidInputError


def tilted_frame(coordinates, **kw):
    """A frame whose axis and reference are not the part frame's, off the origin."""
    rot = Rotation.from_rotvec([0.3, -0.5, 0.2])
    return make_frame(coordinates, origin=(0.01, -0.02, 0.005), axis=rot.apply([0, 0, 1]), ref=rot.apply([1, 0, 0]),
                      **kw)


def screw(frame, points, alpha, advance):
    """Rotate ``points`` by ``alpha`` about the frame's axis and shift them ``advance`` [m] along it."""
    rot = Rotation.from_rotvec(alpha * frame.axis)
    return frame.origin + rot.apply(points - frame.origin) + advance * frame.axis


@pytest.fixture
def points():
    return np.random.default_rng(0).uniform(-0.05, 0.05, (500, 3))


@pytest.mark.parametrize("hand", [1, -1])
def test_helical_features_invariant_under_the_screw_motion(points, hand):
    frame = tilted_frame("helical", pitch=0.005, handedness=hand)
    f = features_numpy(frame, points)
    for alpha in (0.3, -2.0, 7.5):
        moved = screw(frame, points, alpha, hand * frame.pitch * alpha / (2 * math.pi))
        np.testing.assert_allclose(features_numpy(frame, moved)[:, :3], f[:, :3], atol=1e-9)
    # the opposite hand's motion changes the phase: the features tell the two threads apart
    wrong = screw(frame, points, 1.0, -hand * frame.pitch / (2 * math.pi))
    assert np.abs(features_numpy(frame, wrong)[:, 1:3] - f[:, 1:3]).max() > 0.5


def test_cylindrical_features_invariant_under_rotation_about_the_axis(points):
    frame = tilted_frame("cylindrical")
    f = features_numpy(frame, points)
    for alpha in (0.1, 2.0, -3.0):
        np.testing.assert_allclose(features_numpy(frame, screw(frame, points, alpha, 0.0)), f, atol=1e-12)
    shifted = features_numpy(frame, screw(frame, points, 0.0, 0.003))
    np.testing.assert_allclose(shifted[:, 1] - f[:, 1], 0.003, atol=1e-12)


def test_feature_values_closed_form():
    frame = make_frame("helical", pitch=0.004)
    p = np.array([[0.0, 0.02, 0.001], [0.0, 0.0, 0.0]])
    f = features_numpy(frame, p)
    phi = 2 * math.pi * 0.001 / 0.004 - math.pi / 2
    np.testing.assert_allclose(f[0], [math.hypot(0.02, R_EPS), math.cos(phi), math.sin(phi), 0.001], atol=1e-12)
    assert f[1, 0] == pytest.approx(R_EPS)  # on the axis r stays > 0, so its gradient is finite
    np.testing.assert_allclose(features_numpy(make_frame("cartesian", origin=(1, 2, 3)), p), p - [1, 2, 3])
    assert features_numpy(make_frame("cylindrical"), p).shape == (2, 2)


def test_bad_frames_are_refused():
    with pytest.raises(InvalidInputError, match="choose one of"):
        make_frame("spherical")
    with pytest.raises(InvalidInputError, match="pitch"):
        make_frame(Coordinates.HELICAL)
    with pytest.raises(InvalidInputError, match="orthogonal unit"):
        make_frame("cylindrical", axis=(0, 0, 1), ref=(0, 1, 1))
    with pytest.raises(InvalidInputError, match="handedness"):
        make_frame("helical", pitch=0.005, handedness=0)
    with pytest.raises(InvalidInputError, match="finite"):
        make_frame("cartesian", origin=(np.nan, 0, 0))
