"""Triangle–triangle closest points: COAL as the oracle, plus closed-form cases."""

import coal
import numpy as np
import pytest

from contactkit.models.gnn.triangles import closest_point_on_triangle, triangle_pair_closest_points

COAL_TOL = 1e-9  # [m] on unit-size triangles


def _coal_distance(a: np.ndarray, b: np.ndarray) -> float:
    def shape(p):
        pts = coal.StdVec_Vec3s()
        for x in p:
            pts.append(np.asarray(x, dtype=float))
        tris = coal.StdVec_Triangle()
        tris.append(coal.Triangle(0, 1, 2))
        return coal.Convex(pts, tris)

    res = coal.DistanceResult()
    eye = coal.Transform3s()
    return max(coal.distance(shape(a), eye, shape(b), eye, coal.DistanceRequest(), res), 0.0)


def test_distance_matches_coal_on_random_pairs():
    rng = np.random.default_rng(3)
    a = rng.random((300, 3, 3))
    b = rng.random((300, 3, 3)) + rng.normal(0, 0.6, (300, 1, 3))
    dist, pa, pb = triangle_pair_closest_points(a, b)
    expected = np.array([_coal_distance(x, y) for x, y in zip(a, b, strict=True)])
    np.testing.assert_allclose(dist, expected, atol=COAL_TOL)
    np.testing.assert_allclose(np.linalg.norm(pa - pb, axis=1), dist, atol=1e-12)
    assert (dist == 0).sum() > 5, "the sample should contain intersecting pairs"


def test_points_lie_on_their_triangles():
    rng = np.random.default_rng(4)
    a, b = rng.random((100, 3, 3)), rng.random((100, 3, 3)) + 0.7
    _, pa, pb = triangle_pair_closest_points(a, b)
    np.testing.assert_allclose(closest_point_on_triangle(pa, a), pa, atol=1e-12)
    np.testing.assert_allclose(closest_point_on_triangle(pb, b), pb, atol=1e-12)


@pytest.mark.parametrize("gap", [0.0, 1e-4, 0.3])
def test_parallel_offset_triangles(gap):
    a = np.array([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]])
    b = a + [0.2, 0.1, gap]
    dist, pa, pb = triangle_pair_closest_points(a, b)
    assert dist[0] == pytest.approx(gap, abs=1e-15)
    np.testing.assert_allclose(pb - pa, [[0, 0, gap]], atol=1e-15)


def test_crossing_triangles_touch_at_the_piercing_point():
    a = np.array([[[-1.0, -1, 0], [1, -1, 0], [0, 1, 0]]])
    b = np.array([[[0.0, 0, -1], [0, 0.2, 1], [0.1, -0.5, 1]]])  # pierces a through its interior
    dist, pa, pb = triangle_pair_closest_points(a, b)
    assert dist[0] == 0.0
    np.testing.assert_array_equal(pa, pb)
    assert abs(pa[0, 2]) < 1e-15


def test_edge_edge_closest_points():
    a = np.array([[[0.0, 0, 0], [1, 0, 0], [0, -1, 0]]])  # edge along x at y = 0
    b = np.array([[[0.5, 0.3, 0.5], [0.5, 0.3, 1.5], [0.5, 1.0, 1.0]]])  # edge along z at x = 0.5
    dist, pa, pb = triangle_pair_closest_points(a, b)
    assert dist[0] == pytest.approx(np.hypot(0.3, 0.5))
    np.testing.assert_allclose(pa, [[0.5, 0, 0]], atol=1e-15)
    np.testing.assert_allclose(pb, [[0.5, 0.3, 0.5]], atol=1e-15)
