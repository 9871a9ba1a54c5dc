"""COAL pieces: half-space form of convex pieces, caching, refusal of bad pieces; crossed edges."""

import numpy as np
import pytest

from contactkit.collision import CollisionWorld, coal_piece, contacts, face_planes, placed_piece
from contactkit.errors import GeometryError
from contactkit.geometry import box, peg
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.scene import Scene, StaticBody
from contactkit.tasks.scenes import make_tool


def test_box_piece_has_six_planes_bounding_it():
    piece = box((0.04, 0.03, 0.02)).pieces[0]
    planes = face_planes(piece.vertices, piece.faces, "box")
    assert planes.shape == (6, 4)
    assert np.abs(np.linalg.norm(planes[:, :3], axis=1) - 1.0).max() <= 1e-15
    assert sorted(planes[:, 3].round(12).tolist()) == [0.01, 0.01, 0.015, 0.015, 0.02, 0.02]


def test_prism_planes_match_its_polygon():
    part = peg("hexagon", 0.01, 0.05)
    planes = face_planes(part.pieces[0].vertices, part.pieces[0].faces, "peg")
    assert len(planes) == 8  # six sides and two caps
    sides = planes[np.abs(planes[:, 2]) < 0.5]
    assert np.allclose(sides[:, 3], 0.01, atol=1e-15)  # every side at the apothem


def test_pieces_are_cached_by_content():
    piece = box((0.01, 0.01, 0.01)).pieces[0]
    a = coal_piece(piece.vertices, piece.faces, "a")
    assert coal_piece(piece.vertices.copy(), piece.faces.copy(), "a") is a
    assert coal_piece(piece.vertices + 1e-3, piece.faces, "a") is not a
    assert not a.vertices.flags.writeable and not a.planes.flags.writeable


def test_placed_piece_moves_vertices_and_planes():
    piece = box((0.02, 0.01, 0.01)).pieces[0]
    quat = rotvec_to_quat(np.array([0.3, 0.2, -0.5]))
    pos = np.array([0.1, -0.2, 0.3])
    placed = placed_piece(piece.vertices, piece.faces, pos, quat, "moved")
    assert np.allclose(placed.vertices, piece.vertices @ quat_to_mat(quat).T + pos, atol=1e-15)
    inside = placed.vertices @ placed.planes[:, :3].T - placed.planes[:, 3]
    assert inside.max() <= 1e-15 and np.allclose(placed.lo, placed.vertices.min(axis=0))


def test_inward_wound_piece_is_refused():
    piece = box((0.01, 0.01, 0.01)).pieces[0]
    with pytest.raises(GeometryError, match="not convex"):
        face_planes(piece.vertices, piece.faces[:, ::-1], "flipped box")


def test_non_convex_piece_is_refused():
    piece = box((0.02, 0.02, 0.02)).pieces[0]
    dented = piece.vertices.copy()
    dented[0] *= 0.2  # pull one corner towards the centre
    with pytest.raises(GeometryError, match="not convex"):
        coal_piece(dented, piece.faces, "dented")


def test_nan_vertex_is_refused():
    piece = box((0.01, 0.01, 0.01)).pieces[0]
    v = piece.vertices.copy()
    v[2, 1] = np.nan
    with pytest.raises(GeometryError, match="non-finite"):
        face_planes(v, piece.faces, "nan box")


def test_crossed_edges_touch_at_one_point():
    """A bar lying on a ridge at right angles: one contact where the edges cross (no vertex is near)."""
    side = 0.01
    tool_part = box((side, 0.06, side), name="bar")
    ridge = StaticBody(
        box((0.06, side, side), name="ridge"), pos=(0.0, 0.0, 0.0), quat=rotvec_to_quat(np.array([np.pi / 4, 0, 0]))
    )
    scene = Scene("crossed edges", make_tool(tool_part, 0.1, 0.5, (0.0, 0.0, 0.1)), (ridge,))
    half_diagonal = side / np.sqrt(2.0)
    gap = 3e-5
    quat = rotvec_to_quat(np.array([0.0, np.pi / 4, 0.0]))
    c = contacts(CollisionWorld(scene), [0.0, 0.0, 2 * half_diagonal + gap], quat, 1e-3)
    assert c.count == 1
    assert np.allclose(c.points[0], [0.0, 0.0, half_diagonal + gap], atol=1e-12)
    assert np.allclose(c.normals[0], [0.0, 0.0, 1.0], atol=1e-9)
    assert c.distances[0] == pytest.approx(gap, abs=1e-12)
