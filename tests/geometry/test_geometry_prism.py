"""Pegs, boxes and cross-sections: exact dimensions, closed outward meshes, convex pieces."""

import math

import numpy as np
import pytest
import trimesh
from scipy.spatial import ConvexHull

from contactkit.errors import InvalidInputError
from contactkit.geometry import Shape, apothem, box, n_sides, parse_shape, peg, polygon, section_name, validate_part

SIDES = {"triangle": 3, "square": 4, "pentagon": 5, "hexagon": 6, "circle": 32, "7-gon": 7, "heptagon": 7, "octagon": 8,
         "13-gon": 13}


def polygon_area(apo: float, n: int) -> float:
    """Closed form: regular n-gon of apothem ``apo`` has area n apo^2 tan(pi/n)."""
    return n * apo**2 * math.tan(math.pi / n)


def assert_closed_outward(vertices, faces):
    mesh = trimesh.Trimesh(vertices, faces, process=False)
    assert mesh.is_watertight
    assert mesh.is_winding_consistent
    assert mesh.volume > 0


def assert_piece_convex(piece):
    """A piece is convex when every vertex is a hull vertex and its volume is the hull's."""
    hull = ConvexHull(piece.vertices)
    assert len(hull.vertices) == len(piece.vertices)
    assert_closed_outward(piece.vertices, piece.faces)
    vol = trimesh.Trimesh(piece.vertices, piece.faces, process=False).volume
    assert vol == pytest.approx(hull.volume, rel=1e-12)


NAMED = [s for s in Shape if s is not Shape.POLYGON]
"""The shapes named by their value; ``Shape.POLYGON`` is named by its sides ("7-gon")."""


def test_parse_shape_accepts_names_and_members():
    for s in NAMED:
        assert parse_shape(s) is s
        assert parse_shape(f"  {s.value.upper()} ") is s
    assert parse_shape("7-gon") is parse_shape("Heptagon") is Shape.POLYGON


def test_unknown_shape_lists_valid_names():
    with pytest.raises(InvalidInputError) as err:
        parse_shape("star")
    for s in NAMED:
        assert s.value in str(err.value)
    assert "star" in str(err.value) and "<n>-gon" in str(err.value)
    with pytest.raises(InvalidInputError):
        peg("star", 0.01, 0.05)
    for bad in (3, "2-gon", "0-gon", "polygon", Shape.POLYGON, "5000-gon"):
        with pytest.raises(InvalidInputError):
            parse_shape(bad)


def test_n_sides():
    for name, n in SIDES.items():
        assert n_sides(name) == n
    assert n_sides("circle", 48) == 48
    assert n_sides("square", 48) == 4
    for bad in (4, 5000, 12.0, True):
        with pytest.raises(InvalidInputError):
            n_sides("circle", bad)


@pytest.mark.parametrize("shape", list(SIDES))
def test_polygon_is_regular_with_apothem_size(shape):
    size = 0.0137
    poly = polygon(shape, size)
    n = SIDES[shape]
    assert poly.shape == (n, 2)
    assert apothem(shape, size) == size
    edges = np.roll(poly, -1, axis=0) - poly
    # counter-clockwise: positive shoelace area equal to the closed form
    area = 0.5 * np.sum(poly[:, 0] * np.roll(poly[:, 1], -1) - np.roll(poly[:, 0], -1) * poly[:, 1])
    assert area == pytest.approx(polygon_area(size, n), rel=1e-12)
    # distance from the centre to every edge line is the apothem
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1) / np.linalg.norm(edges, axis=1)[:, None]
    dist = np.einsum("ij,ij->i", normals, poly)
    np.testing.assert_allclose(dist, size, rtol=1e-13)
    np.testing.assert_allclose(np.linalg.norm(edges, axis=1), 2 * size * math.tan(math.pi / n), rtol=1e-12)
    # orientation convention: one face normal along +x
    assert np.isclose(normals, [1.0, 0.0], atol=1e-12).all(axis=1).any()


@pytest.mark.parametrize("shape", list(SIDES))
def test_peg_mesh_frame_volume_and_piece(shape):
    size, length = 0.01, 0.05
    p = peg(shape, size, length)
    assert validate_part(p) is p
    assert_closed_outward(p.vertices, p.faces)
    n = SIDES[shape]
    vol = trimesh.Trimesh(p.vertices, p.faces, process=False).volume
    assert vol == pytest.approx(polygon_area(size, n) * length, rel=1e-12)
    assert p.vertices[:, 2].min() == 0.0 and p.vertices[:, 2].max() == length
    top = p.vertices[(p.vertices[:, 2] == length) & (np.linalg.norm(p.vertices[:, :2], axis=1) > 0)]
    np.testing.assert_allclose(np.sort(top[:, :2], axis=0), np.sort(polygon(shape, size), axis=0), atol=1e-15)
    assert len(p.pieces) == 1
    assert_piece_convex(p.pieces[0])
    assert trimesh.Trimesh(p.pieces[0].vertices, p.pieces[0].faces).volume == pytest.approx(vol, rel=1e-12)
    assert p.meta["kind"] == "peg" and p.meta["shape"] == section_name(shape) and p.meta["size"] == size
    assert p.meta["apothem"] == size and p.meta["length"] == length and p.meta["n_sides"] == n


@pytest.mark.parametrize("shape", ["square", "hexagon", "circle"])
def test_chamfer_is_a_frustum_at_the_tip(shape):
    size, length, ch = 0.01, 0.04, 0.002
    p = peg(shape, size, length, chamfer=ch)
    validate_part(p)
    assert_piece_convex(p.pieces[0])
    n = SIDES[shape]
    a1, a2 = polygon_area(size - ch, n), polygon_area(size, n)
    frustum = ch / 3.0 * (a1 + a2 + math.sqrt(a1 * a2))
    vol = trimesh.Trimesh(p.vertices, p.faces, process=False).volume
    assert vol == pytest.approx(frustum + a2 * (length - ch), rel=1e-12)
    tip = p.vertices[(p.vertices[:, 2] == 0.0) & (np.linalg.norm(p.vertices[:, :2], axis=1) > 0)]
    tip_apothem = np.max(tip[:, 0])  # a face normal lies along +x
    assert tip_apothem == pytest.approx(size - ch, rel=1e-12)


@pytest.mark.parametrize("bad", [0.0, -0.01, float("nan"), float("inf"), "big", None])
def test_peg_rejects_bad_size_and_length(bad):
    with pytest.raises(InvalidInputError, match="size"):
        peg("square", bad, 0.05)
    with pytest.raises(InvalidInputError, match="length"):
        peg("square", 0.01, bad)


@pytest.mark.parametrize("chamfer", [-1e-3, 0.01, 0.02, float("nan")])
def test_peg_rejects_bad_chamfer(chamfer):
    with pytest.raises(InvalidInputError, match="chamfer"):
        peg("square", 0.01, 0.05, chamfer=chamfer)


def test_box_is_eight_vertices_twelve_faces_one_piece():
    b = box((0.1, 0.2, 0.3))
    assert b.vertices.shape == (8, 3) and b.faces.shape == (12, 3) and len(b.pieces) == 1
    validate_part(b)
    assert_closed_outward(b.vertices, b.faces)
    assert_piece_convex(b.pieces[0])
    np.testing.assert_allclose(b.vertices.min(axis=0), [-0.05, -0.1, -0.15])
    np.testing.assert_allclose(b.vertices.max(axis=0), [0.05, 0.1, 0.15])
    assert trimesh.Trimesh(b.vertices, b.faces).volume == pytest.approx(0.1 * 0.2 * 0.3, rel=1e-12)
    assert b.name == "box" and b.meta == {"kind": "box", "size": [0.1, 0.2, 0.3]}


@pytest.mark.parametrize("size", [(0.1, 0.2), (0.1, 0.2, 0.0), (0.1, -0.2, 0.3), (0.1, float("nan"), 1), 3.0])
def test_box_rejects_bad_size(size):
    with pytest.raises(InvalidInputError, match="box size"):
        box(size)


@pytest.mark.parametrize("n", [3, 4, 7, 200, 640])
def test_strip_caps_close_a_convex_prism_with_few_neighbours_per_vertex(n):
    """A many-sided convex prism (the paper's 640-gon peg) closed by zigzag strips: watertight, outward, the
    exact prism volume, and no vertex with over 255 neighbours (COAL's limit; a fan gives n - 1)."""
    from contactkit.geometry.prism import FAN_CAP_MAX_SIDES, convex_prism, loft
    from contactkit.geometry.validate import check_solid, signed_volume

    poly = polygon(Shape.CIRCLE, 0.025, n) if n > 8 else np.array(
        [[np.cos(a), np.sin(a)] for a in np.linspace(0, 2 * np.pi, n, endpoint=False)]) * 0.01
    v, f = loft([(0.0, poly), (0.02, poly)], centre_caps=False, strip_caps=True)
    check_solid(v, f, "strip prism")
    x, y = poly[:, 0], poly[:, 1]
    area = 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
    assert signed_volume(v, f) == pytest.approx(area * 0.02, rel=1e-12)
    assert _max_degree(f) <= 6
    assert _max_degree(convex_prism(poly, 0.0, 0.02).faces) <= (6 if n > FAN_CAP_MAX_SIDES else n + 1)


def _max_degree(faces: np.ndarray) -> int:
    """Most edges at one vertex of a triangle mesh."""
    edges = {tuple(sorted(e)) for tri in faces for e in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0]))}
    return int(np.bincount(np.array(sorted(edges)).ravel()).max())
