"""Invariants of the contact query: rigid motions, piece order, margins, normals, bad input."""

import dataclasses

import numpy as np
import pytest
from scipy.spatial import cKDTree

from contactkit.collision import CollisionWorld, contacts, contacts_batch, labelled_contacts
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat
from contactkit.tasks import peg_in_hole

MATCH_TOL = 1e-9
"""Two contact sets are equal when each (point [m], normal, distance [m]) row has a partner this close."""

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


def _rows(c) -> np.ndarray:
    return np.column_stack([c.points, c.normals, c.distances])


def _same_set(a: np.ndarray, b: np.ndarray, tol: float = MATCH_TOL) -> bool:
    """Rows of a and b pair up one to one, each partner within tol (max norm)."""
    if a.shape != b.shape:
        return False
    if len(a) == 0:
        return True
    dist, idx = cKDTree(b).query(a, p=np.inf)
    return bool(np.all(dist <= tol) and len(set(idx.tolist())) == len(a))


def _poses(scene, rng, n):
    """Tool poses inside and around a peg-in-hole slot: small tilts, offsets up to the clearance."""
    c = scene.meta["clearance"]
    for _ in range(n):
        pos = scene.target_pos + np.r_[rng.uniform(-1.5 * c, 1.5 * c, 2), rng.uniform(0.0, 0.03)]
        yield pos, rotvec_to_quat(rng.normal(scale=0.01, size=3))


@pytest.fixture(scope="module")
def scene():
    return peg_in_hole("hexagon", 1e-3, chamfer=1e-3)


@pytest.fixture(scope="module")
def world(scene):
    return CollisionWorld(scene)


def test_rigid_motion_of_the_whole_scene_moves_the_contacts(scene, world):
    rng = np.random.default_rng(3)
    q_g = rotvec_to_quat(np.array([0.4, -1.1, 0.7]))
    r_g, t_g = quat_to_mat(q_g), np.array([0.3, -0.2, 0.5])
    moved = dataclasses.replace(
        scene,
        statics=tuple(dataclasses.replace(s, pos=r_g @ s.pos + t_g, quat=quat_mul(q_g, s.quat)) for s in scene.statics),
    )
    moved_world = CollisionWorld(moved)
    seen = 0
    for pos, quat in _poses(scene, rng, 12):
        a = contacts(world, pos, quat, 1.5e-3)
        b = contacts(moved_world, r_g @ pos + t_g, quat_mul(q_g, quat), 1.5e-3)
        expected = np.column_stack([a.points @ r_g.T + t_g, a.normals @ r_g.T, a.distances])
        assert _same_set(expected, _rows(b)), (pos, quat)
        seen += a.count
    assert seen > 50  # the poses do touch


def test_order_of_bodies_and_pieces_does_not_change_the_contacts(scene, world):
    slot = scene.statics[1]
    shuffled_slot = dataclasses.replace(
        slot, part=dataclasses.replace(slot.part, pieces=tuple(reversed(slot.part.pieces)))
    )
    shuffled = CollisionWorld(dataclasses.replace(scene, statics=(shuffled_slot, scene.statics[0])))
    for pos, quat in _poses(scene, np.random.default_rng(4), 8):
        assert _same_set(_rows(contacts(world, pos, quat, 2e-3)), _rows(contacts(shuffled, pos, quat, 2e-3)))


def test_contacts_lie_within_the_margin_and_grow_with_it(scene, world):
    for pos, quat in _poses(scene, np.random.default_rng(5), 10):
        small, large = contacts(world, pos, quat, 3e-4), contacts(world, pos, quat, 2e-3)
        assert np.all(small.distances <= 3e-4) and np.all(large.distances <= 2e-3)
        # every contact within the small margin is also found with the large one
        rows = _rows(large)
        for row in _rows(small):
            assert np.abs(rows - row).max(axis=1).min() <= MATCH_TOL


def test_normals_are_unit_and_point_into_the_tool(scene, world):
    """Moving the tool by s along a pair's normal moves that pair's contacts by s n and adds s to each distance."""
    pos = scene.target_pos + [4e-4, -2e-4, 0.01]
    quat = rotvec_to_quat(np.array([0.0, 0.0, 0.05]))
    lc = labelled_contacts(world, pos, quat, 2e-3)
    assert lc.contacts.count > 0
    assert np.abs(np.linalg.norm(lc.contacts.normals, axis=1) - 1.0).max() <= 1e-12
    step = 1e-4
    for piece in np.unique(lc.env_piece):
        pair = lc.env_piece == piece
        n = lc.contacts.normals[pair][0]
        after = labelled_contacts(world, pos + step * n, quat, 2e-3 + step)
        moved = after.env_piece == piece
        before = _rows(lc.contacts)[pair]
        before[:, :3] += step * n
        before[:, 6] += step
        assert _same_set(before, _rows(after.contacts)[moved])


def test_a_peg_far_above_the_hole_has_no_contacts(scene, world):
    assert contacts(world, scene.target_pos + [0.0, 0.0, 0.06], IDENTITY, 1e-3).count == 0


@pytest.mark.parametrize(
    ("pos", "quat", "margin", "problem"),
    [
        ([np.nan, 0.0, 0.05], IDENTITY, 1e-3, "NaN or Inf"),
        ([0.0, 0.0, 0.05], [np.inf, 0.0, 0.0, 0.0], 1e-3, "NaN or Inf"),
        ([0.0, 0.0, np.inf], IDENTITY, 1e-3, "NaN or Inf"),
        ([0.0, 0.0, 0.05], [1.0, 0.1, 0.0, 0.0], 1e-3, "unit quaternion"),
        ([0.0, 0.0], IDENTITY, 1e-3, r"pos \(3,\)"),
        ([0.0, 0.0, 0.05], IDENTITY, -1e-3, "margin"),
        ([0.0, 0.0, 0.05], IDENTITY, np.nan, "margin"),
    ],
)
def test_bad_query_is_refused(world, pos, quat, margin, problem):
    with pytest.raises(InvalidInputError, match=problem):
        contacts(world, pos, quat, margin)


def test_a_nan_pose_inside_the_hole_is_refused_not_reported_as_touching(scene, world):
    """COAL answers distance 0 for a NaN pose; the query must refuse it instead."""
    pos = scene.target_pos + [0.0, 0.0, 0.01]
    with pytest.raises(InvalidInputError):
        contacts(world, pos, [1.0, np.nan, 0.0, 0.0], 1e-3)


def test_batch_equals_single_queries(scene, world):
    poses = list(_poses(scene, np.random.default_rng(6), 4))
    pos, quat = np.array([p for p, _ in poses]), np.array([q for _, q in poses])
    batch = contacts_batch(world, pos, quat, 1.5e-3)
    assert len(batch) == 4
    for b, (p, q) in zip(batch, poses, strict=True):
        assert np.array_equal(_rows(b), _rows(contacts(world, p, q, 1.5e-3)))
    with pytest.raises(InvalidInputError, match="batched"):
        contacts_batch(world, pos, quat[:3], 1e-3)


def test_world_needs_a_scene():
    with pytest.raises(InvalidInputError, match="Scene"):
        CollisionWorld("peg-in-hole")


def test_friction_is_the_larger_of_tool_and_body(scene):
    slippery = dataclasses.replace(scene, statics=tuple(dataclasses.replace(s, friction=0.9) for s in scene.statics))
    c = contacts(CollisionWorld(slippery), scene.target_pos + [0.0, 0.0, 1e-5], IDENTITY, 1e-4)
    assert c.count > 0 and np.all(c.friction == 0.9)
