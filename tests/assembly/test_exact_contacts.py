"""Exact node contacts: the grid-accelerated distance equals libigl's exact signed distance; normals and poses."""

import numpy as np
import pytest

from contactkit.assembly import bolting_task, peg_in_hole_task
from contactkit.assembly.exact_contacts import REACH, exact_node_contacts, mesh_index, signed_distance_with_normals
from contactkit.errors import InvalidInputError
from contactkit.geometry.signed_distance import signed_distance
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState


@pytest.fixture(scope="module")
def peg():
    return peg_in_hole_task(depth_net=None)


def _near_surface(part, rng, n, spread):
    v, f = part.vertices, part.faces
    fi = rng.integers(0, len(f), n)
    w = rng.dirichlet([1.0, 1.0, 1.0], n)
    return np.einsum("nk,nkd->nd", w, v[f[fi]]) + rng.normal(0.0, spread, (n, 3))


@pytest.mark.parametrize("make", [lambda: peg_in_hole_task(depth_net=None), lambda: bolting_task(depth_net=None)])
def test_distances_equal_libigl_signed_distance(make):
    task = make()
    rng = np.random.default_rng(0)
    v = task.static.vertices
    pts = np.vstack([_near_surface(task.static, rng, 2000, 2e-4), _near_surface(task.static, rng, 300, 2e-3),
                     rng.uniform(v.min(0) - 1e-3, v.max(0) + 1e-3, (1000, 3))])
    d, closest, normals = signed_distance_with_normals(mesh_index(v, task.static.faces), pts)
    ref = signed_distance(task.static, pts)
    np.testing.assert_allclose(d, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-9)
    # the node is its closest point moved by d along the normal (normal out of the static part)
    np.testing.assert_allclose(closest + d[:, None] * normals, pts, atol=1e-12)
    assert np.abs(signed_distance(task.static, closest)).max() < 1e-12
    # reach_only: the side of far points comes from the precomputed cell signs (flood fill + winding number)
    d_reach, _, _ = signed_distance_with_normals(mesh_index(v, task.static.faces), pts, reach_only=True)
    near = ref < REACH
    assert (~near).sum() > 100 and (ref < -REACH).sum() > 100  # far points on both sides were tested
    np.testing.assert_allclose(d_reach[near], ref[near], atol=1e-12)
    assert np.all(np.isposinf(d_reach[~near]))


def test_reach_only_marks_far_outside_points(peg):
    index = mesh_index(peg.static.vertices, peg.static.faces)
    far = np.array([[0.0, 0.0, 0.02], [0.0, 0.0, 0.2]])  # centre of the bore, far above the block
    d, _, _ = signed_distance_with_normals(index, far, reach_only=True)
    assert np.all(np.isinf(d)) and np.all(d > 0)
    d, _, _ = signed_distance_with_normals(index, far)
    np.testing.assert_allclose(d, signed_distance(peg.static, far), atol=1e-12)


def test_centred_peg_touches_the_bore_at_the_clearance(peg):
    contacts = exact_node_contacts(peg, BodyState.at_rest([0.0, 0.0, 0.02]), 5e-5)
    # the ring at the end of the tip chamfer (full radius) is the only one inside the bore
    ring = np.flatnonzero(np.isclose(peg.nodes[:, 2], peg.tool.meta["chamfer"]))
    np.testing.assert_array_equal(contacts.node_index, ring)
    assert np.all(np.diff(contacts.node_index) > 0)
    np.testing.assert_allclose(contacts.depth, peg.clearance, rtol=1e-6)
    radial = contacts.points[:, :2] / np.linalg.norm(contacts.points[:, :2], axis=1, keepdims=True)
    # out of the wall toward the axis: a face normal of the 640-gon, within half a segment of the node's radius
    angle = np.arccos(np.clip(np.sum(contacts.normals[:, :2] * -radial, axis=1), -1.0, 1.0))
    assert angle.max() <= np.pi / 640 + 1e-9
    np.testing.assert_allclose(contacts.normals[:, 2], 0.0, atol=1e-9)


def test_contacts_agree_with_signed_distance_at_a_tilted_pose(peg):
    state = BodyState.at_rest([1e-4, 0.0, 1e-5], rotvec_to_quat(np.array([0.0, 2e-3, 0.0])))
    contacts = exact_node_contacts(peg, state, REACH)
    world = peg.nodes @ np.asarray(__import__("contactkit").rotations.quat_to_mat(state.quat)).T + state.pos
    d = signed_distance(peg.static, world)
    expected = np.flatnonzero(d < REACH)
    np.testing.assert_array_equal(contacts.node_index, expected)
    np.testing.assert_allclose(contacts.depth, d[expected], atol=1e-12)
    assert contacts.depth.min() < 0  # the tilted tip penetrates the floor


def test_bad_margin_is_refused(peg):
    with pytest.raises(InvalidInputError, match="margin"):
        exact_node_contacts(peg, BodyState.at_rest([0.0, 0.0, 0.02]), 2 * REACH)
