"""Exact signed distance (libigl) against closed forms: a box and a 64-gon prism (cylinder-like)."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.geometry import SignMethod, box, face_normals, peg, signed_distance


def box_sdf(p: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Closed form of an axis-aligned box centred at 0: |max(q, 0)| + min(max_i q_i, 0), q = |p| - half."""
    q = np.abs(p) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)


@pytest.mark.parametrize("sign", list(SignMethod))
def test_box_matches_closed_form_everywhere(sign):
    size = np.array([0.04, 0.02, 0.01])
    rng = np.random.default_rng(0)
    p = rng.uniform(-0.04, 0.04, size=(3000, 3))
    d = signed_distance(box(tuple(size)), p, sign=sign)
    np.testing.assert_allclose(d, box_sdf(p, size / 2), atol=1e-12)
    assert (d < 0).any() and (d > 0).any()


def test_prism_inside_is_max_of_face_planes_and_outside_over_face_centres():
    n, a, length = 64, 0.025, 0.03
    part = peg("circle", a, length, circle_segments=n)  # faces at distance a from the axis, z in [0, length]
    rng = np.random.default_rng(1)
    normals = face_normals(n)
    # inside a convex solid the distance to the boundary is the smallest distance to a face plane
    r = a * np.sqrt(rng.uniform(0, 0.99, 2000))
    t = rng.uniform(0, 2 * np.pi, 2000)
    p = np.column_stack([r * np.cos(t), r * np.sin(t), rng.uniform(0.001, length - 0.001, 2000)])
    planes = np.column_stack([p[:, :2] @ normals.T - a, -p[:, 2], p[:, 2] - length])
    np.testing.assert_allclose(signed_distance(part, p), planes.max(axis=1), atol=1e-12)
    # outside, radially off a face centre within the height: exactly r - a
    k = rng.integers(0, n, 500)
    rr = a + rng.uniform(1e-6, 5e-3, 500)
    q = np.column_stack([rr * normals[k, 0], rr * normals[k, 1], rng.uniform(0.002, length - 0.002, 500)])
    np.testing.assert_allclose(signed_distance(part, q), rr - a, atol=1e-12)


def test_sign_inside_outside_and_vf_pair():
    part = box((0.01, 0.01, 0.01))
    d = signed_distance((part.vertices, part.faces), np.array([[0.0, 0, 0], [0.0, 0, 0.02], [0.005, 0, 0]]))
    assert d[0] == pytest.approx(-0.005) and d[1] == pytest.approx(0.015) and abs(d[2]) < 1e-15


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_point_is_refused(bad):
    with pytest.raises(InvalidInputError, match="row 1"):
        signed_distance(box((0.01, 0.01, 0.01)), np.array([[0.0, 0, 0], [0.0, bad, 0]]))


def test_wrong_shapes_are_refused():
    part = box((0.01, 0.01, 0.01))
    with pytest.raises(InvalidInputError, match=r"\(N, 3\)"):
        signed_distance(part, np.zeros((4, 2)))
    with pytest.raises(InvalidInputError, match="faces index"):
        signed_distance((part.vertices, part.faces + 100), np.zeros((1, 3)))
    with pytest.raises(InvalidInputError, match="Part or"):
        signed_distance("mesh.obj", np.zeros((1, 3)))
