"""K-means clustering baseline (paper §V-C): blob oracle, determinism, cluster contacts."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.assembly import peg_in_hole_task
from contactkit.assembly.kmeans import KMeansClustering, kmeans
from contactkit.depth import NodeContacts
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

CENTRES = np.array([[0.0, 0, 0], [0.05, 0, 0], [0, 0.05, 0], [0, 0, 0.05]])


def _blobs(rng, n=50, spread=1e-3):
    labels = np.repeat(np.arange(len(CENTRES)), n)
    return CENTRES[labels] + rng.normal(0, spread, (len(labels), 3)), labels


@pytest.fixture(scope="module")
def task():
    return peg_in_hole_task(depth_net=None)


def test_well_separated_blobs_are_found():
    pts, truth = _blobs(np.random.default_rng(0))
    for seed in range(5):
        labels, centres = kmeans(pts, 4, np.random.default_rng(seed))
        # each found cluster is exactly one true blob (a bijection), its centroid the blob's sample mean
        pairs = {(int(a), int(b)) for a, b in zip(labels, truth, strict=True)}
        assert len(pairs) == 4 and len({a for a, _ in pairs}) == 4
        for a, b in pairs:
            np.testing.assert_allclose(centres[a], pts[truth == b].mean(axis=0), atol=1e-15)


def test_same_seed_same_clusters_and_bad_sizes_refused():
    pts, _ = _blobs(np.random.default_rng(1), spread=2e-2)
    a = kmeans(pts, 7, np.random.default_rng(3))
    b = kmeans(pts, 7, np.random.default_rng(3))
    np.testing.assert_array_equal(a[0], b[0])
    with pytest.raises(InvalidInputError, match="mc=0"):
        kmeans(pts, 0, np.random.default_rng(0))
    with pytest.raises(InvalidInputError, match="N=200"):
        kmeans(pts, 201, np.random.default_rng(0))


def test_cluster_contacts_are_centroid_mean_normal_and_deepest_depth(task):
    rng = np.random.default_rng(2)
    pts, truth = _blobs(rng)
    normals = np.tile([0.0, 0.0, 1.0], (len(pts), 1))
    normals[truth == 1] = [1.0, 0.0, 0.0]
    depth = rng.uniform(-3e-5, 1e-5, len(pts))
    contacts = NodeContacts(np.arange(len(pts)), pts, normals, depth)
    out = KMeansClustering(mc=4, seed=0).cluster(task, contacts, BodyState.at_rest([0, 0, 0]), np.zeros(6))
    assert out.count == 4
    for b in range(4):
        j = int(np.argmin(np.linalg.norm(out.points - CENTRES[b], axis=1)))
        np.testing.assert_allclose(out.points[j], pts[truth == b].mean(axis=0), atol=1e-15)
        np.testing.assert_allclose(out.normals[j], normals[truth == b][0], atol=1e-15)
        assert out.distances[j] == depth[truth == b].min()
    again = KMeansClustering(mc=4, seed=0).cluster(task, contacts, BodyState.at_rest([0, 0, 0]), np.zeros(6))
    np.testing.assert_array_equal(again.points, out.points)


def test_few_contacts_unchanged_and_repeated_points(task):
    pts = np.array([[0.0, 0, 0], [1e-3, 0, 0], [0, 1e-3, 0]])
    few = NodeContacts(np.arange(3), pts, np.tile([0, 0, 1.0], (3, 1)), np.array([-1e-5, 0, 1e-5]))
    out = KMeansClustering().cluster(task, few, BodyState.at_rest([0, 0, 0]), np.zeros(6))
    np.testing.assert_array_equal(out.points, pts)
    # 20 contacts on 3 distinct points: 12 clusters cannot all be filled; the empty ones give no contact
    rep = NodeContacts(np.arange(20), pts[np.arange(20) % 3], np.tile([0, 0, 1.0], (20, 1)), np.zeros(20))
    out = KMeansClustering(mc=12, seed=1).cluster(task, rep, BodyState.at_rest([0, 0, 0]), np.zeros(6))
    assert 1 <= out.count <= 3
    assert {tuple(p) for p in out.points} <= {tuple(p) for p in pts}
