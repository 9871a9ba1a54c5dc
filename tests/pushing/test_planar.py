"""Planar geometry of the pushed object: signed face distance and point Jacobians (pushing paper eq 12)."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.pushing.planar import (
    face_distance,
    mean_radius,
    point_jacobian,
    rotation_2d,
    support_points,
    world_polygon,
)

SQUARE = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])


@pytest.mark.parametrize("point, distance, normal", [((-1.5, 0.2), 0.5, (-1, 0)), ((-0.75, 0.2), -0.25, (-1, 0)),
                                                     ((0.1, 1.3), 0.3, (0, 1)), ((0.0, 0.0), -1.0, None)])
def test_signed_distance_and_face_normal_of_a_square(point, distance, normal):
    fd = face_distance(SQUARE, np.array(point))
    assert fd.distance == pytest.approx(distance)
    if normal is not None:
        assert fd.normal == pytest.approx(normal)
    assert np.linalg.norm(fd.closest - np.array(point)) == pytest.approx(abs(distance))


def test_distance_is_invariant_to_a_rigid_motion():
    rng = np.random.default_rng(0)
    pose = np.array([0.3, -0.2, 0.7])
    poly = world_polygon(SQUARE, pose)
    for p in rng.uniform(-2, 2, size=(20, 2)):
        moved = p @ rotation_2d(pose[2]).T + pose[:2]
        assert face_distance(poly, moved).distance == pytest.approx(face_distance(SQUARE, p).distance)


def test_point_jacobian_is_the_rigid_velocity_field():
    pose, point, twist = np.array([0.1, 0.2, 0.3]), np.array([0.4, -0.1]), np.array([0.5, -0.2, 1.5])
    r = point - pose[:2]
    assert point_jacobian(pose, point) @ twist == pytest.approx(twist[:2] + twist[2] * np.array([-r[1], r[0]]))


def test_bad_polygon_is_refused():
    with pytest.raises(InvalidInputError):
        face_distance(SQUARE[:2], np.zeros(2))


def test_mean_radius_closed_forms_and_support_torque():
    # Square of side 2: ρ = 2 (√2 + ln(1 + √2)) / 6; disc-like regular 64-gon of radius 1: ρ → 2/3.
    assert mean_radius(SQUARE) == pytest.approx(2.0 * (np.sqrt(2.0) + np.log(1.0 + np.sqrt(2.0))) / 6.0, rel=1e-14)
    ang = np.linspace(0.0, 2.0 * np.pi, 64, endpoint=False)
    assert mean_radius(np.c_[np.cos(ang), np.sin(ang)]) == pytest.approx(2.0 / 3.0, rel=2e-3)
    tri = np.array([[0.0, 0.0], [0.14, 0.0], [0.0, 0.085]])
    tri = tri - tri.mean(axis=0)
    for poly in (SQUARE, tri):
        sup = support_points(poly)
        assert np.mean(np.abs(sup).sum(axis=1)) == pytest.approx(mean_radius(poly), rel=1e-14)
        assert np.abs(sup.mean(axis=0)).max() < 1e-15  # loads m g / V keep the centre of pressure at the COM
