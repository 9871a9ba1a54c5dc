"""Planar geometry of the pushed object: signed face distance and point Jacobians (pushing paper eq 12)."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.pushing.planar import face_distance, point_jacobian, rotation_2d, world_polygon

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
