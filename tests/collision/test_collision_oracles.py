"""Contacts against closed-form geometry: a box on a plane, a peg in a hole (offset, tilted, on the floor)."""

import dataclasses

import numpy as np
import pytest

from contactkit.collision import CollisionWorld, contacts, labelled_contacts
from contactkit.errors import InvalidInputError
from contactkit.geometry import box
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.scene import Scene, StaticBody
from contactkit.tasks import peg_in_hole
from contactkit.tasks.scenes import make_tool, table

DIST_TOL = 1e-12
"""Signed distances of flat contacts agree with the exact gap to this [m] (float64 rounding at 0.1 m)."""
POINT_TOL = 1e-12
"""Contact points agree with the exact corners to this [m]."""
NORMAL_TOL = 1e-9
"""Normals agree with the exact face normals to this (COAL GJK/EPA converged to 1e-12)."""

BOX = (0.04, 0.03, 0.02)
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def box_world() -> CollisionWorld:
    tool = make_tool(box(BOX), 1.0, 0.5, (0.0, 0.0, 0.1))
    return CollisionWorld(Scene("box on table", tool, (table(friction=0.3),)))


def _bottom_corners(pos, quat) -> np.ndarray:
    hx, hy, hz = np.array(BOX) / 2
    local = np.array([[sx * hx, sy * hy, -hz] for sx in (-1, 1) for sy in (-1, 1)])
    return local @ quat_to_mat(quat).T + pos


def _same_rows(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    """Whether the rows of ``a`` and ``b`` are the same set (each row of a within tol of a distinct row of b)."""
    if a.shape != b.shape:
        return False
    gap = np.abs(a[:, None, :] - b[None, :, :]).max(axis=2)
    return bool(np.all(gap.min(axis=1) <= tol) and len(set(gap.argmin(axis=1).tolist())) == len(a))


@pytest.mark.parametrize("gap", [1e-4, -1e-4, 0.0])
def test_box_resting_on_plane_gives_its_four_corners(box_world, gap):
    yaw = rotvec_to_quat(np.array([0.0, 0.0, 0.7]))
    pos = np.array([0.013, -0.021, BOX[2] / 2 + gap])
    c = contacts(box_world, pos, yaw, margin=1e-3)
    assert c.count == 4
    assert _same_rows(c.points, _bottom_corners(pos, yaw), POINT_TOL)
    assert np.abs(c.normals - [0.0, 0.0, 1.0]).max() <= NORMAL_TOL
    assert np.abs(c.distances - gap).max() <= DIST_TOL
    assert np.all(c.friction == 0.5)  # max(tool 0.5, table 0.3)


def test_tilted_box_corners_carry_their_own_heights(box_world):
    quat = rotvec_to_quat(np.array([0.0, 0.01, 0.0]))
    corners = _bottom_corners(np.zeros(3), quat)
    lift = 2e-5 - corners[:, 2].min()  # lowest corner 20 µm above the table
    pos = np.array([0.0, 0.0, lift])
    margin = 1e-3  # more than the tilt's height difference (0.04 m x 0.01 = 4e-4 m)
    c = contacts(box_world, pos, quat, margin)
    assert c.count == 4
    assert _same_rows(c.points, corners + pos, POINT_TOL)
    assert np.abs(c.distances - c.points[:, 2]).max() <= DIST_TOL  # the table top is z = 0


def test_only_contacts_within_the_margin(box_world):
    quat = rotvec_to_quat(np.array([0.0, 0.01, 0.0]))
    corners = _bottom_corners(np.zeros(3), quat)
    pos = np.array([0.0, 0.0, 1e-5 - corners[:, 2].min()])
    heights = np.sort(corners[:, 2] + pos[2])
    between = 0.5 * (heights[1] + heights[2])  # two low corners (same height) below, two high above
    c = contacts(box_world, pos, quat, between)
    assert c.count == 2 and np.all(c.distances <= between)
    assert contacts(box_world, pos + [0, 0, 2e-3], quat, margin=1e-3).count == 0


def test_peg_offset_in_hexagonal_hole_wall_distances():
    """Offset δ along +x: the wall with face normal at angle φ_k is c - δ cos φ_k away (every face parallel)."""
    clearance, delta = 1e-3, 3e-4
    scene = peg_in_hole("hexagon", clearance)
    world = CollisionWorld(scene)
    top, depth = scene.meta["slot_top_z"], scene.meta["depth"]
    tip = scene.target_pos + [delta, 0.0, 0.01]  # tip 10 mm above the hole floor, inside the hole
    lc = labelled_contacts(world, tip, IDENTITY, margin=2e-3)
    c = lc.contacts
    walls = lc.env_body == 1
    assert np.all(walls) and set(lc.env_piece.tolist()) == set(range(6))  # floor 10 mm away, table far
    for k in range(6):  # n points into the tool: minus the wall's outward (towards the axis) face normal
        pair = lc.env_piece == k
        n = c.normals[pair][0]
        assert np.abs(c.normals[pair] - n).max() == 0.0  # one normal per pair
        assert c.distances[pair].min() == pytest.approx(clearance + delta * n[0], abs=DIST_TOL)
    assert np.abs(c.normals[:, 2]).max() <= NORMAL_TOL
    assert c.distances.min() == pytest.approx(clearance - delta, abs=DIST_TOL)
    # rim corners of the hole (wider than the peg's face) add farther contacts; the overlap is at the minimum
    near = np.flatnonzero(
        (np.abs(c.normals - [-1.0, 0.0, 0.0]).max(axis=1) <= NORMAL_TOL) & (c.distances <= clearance - delta + DIST_TOL)
    )
    # the near face overlap: the peg face (x = a + δ, |y| ≤ a tan 30°) from its tip up to the rim
    a = scene.tool.part.meta["apothem"]
    half = a * np.tan(np.pi / 6)
    expected = np.array([[a + delta, y, z] for y in (-half, half) for z in (tip[2], top)])
    assert top == pytest.approx(scene.target_pos[2] + depth)
    assert len(near) == 4 and _same_rows(c.points[near], expected, POINT_TOL)


def test_peg_tilted_in_square_hole_touches_tip_and_rim():
    """Tilt θ about y: the tip's -x edge touches the -x wall, the +x face leans on the +x rim (both exactly)."""
    clearance, theta = 1e-3, 0.1
    scene = peg_in_hole("square", clearance)
    world = CollisionWorld(scene)
    a, a_h, top = scene.tool.part.meta["apothem"], scene.meta["hole_apothem"], scene.meta["slot_top_z"]
    px = -a_h + a * np.cos(theta)  # tip edge (-a, ±a, 0) lands on x = -a_h
    # the +x face (normal (cos θ, 0, -sin θ), offset n·p + a) passes through the rim (a_h, y, top)
    pz = top + (np.cos(theta) * (px - a_h) + a) / np.sin(theta)
    quat = rotvec_to_quat(np.array([0.0, theta, 0.0]))
    assert pz - a * np.sin(theta) > scene.target_pos[2] + 1e-3  # the tip is clear of the floor
    lc = labelled_contacts(world, [px, 0.0, pz], quat, margin=1e-4)
    c = lc.contacts
    tip = c.normals[:, 0] > 0.99999
    rim = ~tip
    assert c.count == 4 and tip.sum() == 2
    tip_z = pz + a * np.sin(theta)
    assert _same_rows(c.points[tip], np.array([[-a_h, y, tip_z] for y in (-a, a)]), POINT_TOL)
    assert _same_rows(c.points[rim], np.array([[a_h, y, top] for y in (-a, a)]), POINT_TOL)
    assert np.abs(c.normals[rim] - [-np.cos(theta), 0.0, np.sin(theta)]).max() <= NORMAL_TOL
    assert np.abs(c.distances).max() <= DIST_TOL


def test_round_peg_on_hole_floor_gives_its_tip_polygon():
    scene = peg_in_hole("circle", 1e-3, circle_segments=64)
    world = CollisionWorld(scene)
    gap = 2e-5
    lc = labelled_contacts(world, scene.target_pos + [0.0, 0.0, gap], IDENTITY, margin=1e-4)
    c = lc.contacts
    floor = len(scene.statics[1].part.pieces) - 1
    assert np.all(lc.env_body == 1) and np.all(lc.env_piece == floor)
    tip = scene.tool.part.pieces[0].vertices
    tip = tip[tip[:, 2] == 0.0] + scene.target_pos + [0.0, 0.0, gap]
    assert c.count == 64 and _same_rows(c.points, tip, POINT_TOL)
    assert np.abs(c.distances - gap).max() <= DIST_TOL


def test_plate_on_a_pedestal_touches_at_the_pedestal_corners():
    """Flat-on-flat where the environment face is the smaller one: the contacts are its corners, on the plate."""
    pedestal = StaticBody(box((0.01, 0.02, 0.03), name="pedestal"), pos=(0.0, 0.0, 0.015))
    plate = make_tool(box((0.1, 0.08, 0.004), name="plate"), 0.2, 0.5, (0.0, 0.0, 0.1))
    world = CollisionWorld(Scene("plate on pedestal", plate, (pedestal,)))
    gap = -3e-5
    pos = np.array([0.004, -0.003, 0.03 + 0.002 + gap])
    c = contacts(world, pos, IDENTITY, margin=1e-4)
    expected = np.array([[x, y, 0.03 + gap] for x in (-0.005, 0.005) for y in (-0.01, 0.01)])
    assert c.count == 4 and _same_rows(c.points, expected, POINT_TOL)
    assert np.abs(c.distances - gap).max() <= DIST_TOL
    assert np.abs(c.normals - [0.0, 0.0, 1.0]).max() <= NORMAL_TOL


def test_static_without_convex_pieces_is_refused():
    part = box((0.01, 0.01, 0.01), name="unsplit mesh")
    with pytest.raises(InvalidInputError, match="unsplit mesh.*decompose"):  # refused by the scene already
        StaticBody(dataclasses.replace(part, pieces=()))
