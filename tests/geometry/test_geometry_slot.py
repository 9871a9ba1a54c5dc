"""Slots: the requested clearance is met exactly (measured on the mesh vertices), the cup surface is
closed and outward, and the convex pieces are convex, disjoint, cover the solid and avoid the cavity."""

import itertools
import math

import numpy as np
import pytest
import trimesh
from scipy.spatial import ConvexHull

from contactkit.errors import InvalidInputError
from contactkit.geometry import Shape, box, matching_slot, peg, slot, validate_part
from contactkit.tasks import peg_in_hole

SHAPES = [s.value for s in Shape if s is not Shape.POLYGON] + ["7-gon", "11-gon"]
"""Every named shape, and regular polygons named by their sides."""
CLEARANCES = [5e-3, 1e-3, 6.5e-5]
CLEARANCE_TOL = 1e-9  # [m]
SIZE, LENGTH, DEPTH = 0.01, 0.05, 0.03


def ring(vertices: np.ndarray, z: float) -> np.ndarray:
    """Corners (k, 2) of the mesh ring at height z (centre vertex excluded), sorted by angle."""
    pts = vertices[(vertices[:, 2] == z) & (np.linalg.norm(vertices[:, :2], axis=1) > 0), :2]
    return pts[np.argsort(np.arctan2(pts[:, 1], pts[:, 0]))]


def hole_of(slot_part) -> np.ndarray:
    return ring(slot_part.vertices, 0.0)  # the cavity floor ring is the hole polygon


def peg_section(peg_part) -> np.ndarray:
    return ring(peg_part.vertices, peg_part.meta["length"])


def point_segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances (P, S) from points p (P, 2) to segments a-b (S, 2)."""
    ab = b - a
    t = np.clip(np.einsum("psk,sk->ps", p[:, None] - a[None], ab) / np.einsum("sk,sk->s", ab, ab), 0, 1)
    closest = a[None] + t[..., None] * ab[None]
    return np.linalg.norm(p[:, None] - closest, axis=-1)


def min_gap(inner: np.ndarray, outer: np.ndarray) -> float:
    """Smallest distance between the boundaries of two polygons, after checking inner lies inside outer.

    For non-crossing segments the distance is attained at an endpoint, so the minimum over endpoints
    to segments in both directions is the segment-segment distance."""
    o1 = np.roll(outer, -1, axis=0)
    cross = (o1[None, :, 0] - outer[None, :, 0]) * (inner[:, None, 1] - outer[None, :, 1]) - \
        (o1[None, :, 1] - outer[None, :, 1]) * (inner[:, None, 0] - outer[None, :, 0])
    assert (cross > 0).all(), "peg section is not strictly inside the hole"
    i1 = np.roll(inner, -1, axis=0)
    return float(min(point_segment_distance(inner, outer, o1).min(),
                     point_segment_distance(outer, inner, i1).min()))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("clearance", CLEARANCES)
def test_matching_slot_clearance_is_exact_and_faces_parallel(shape, clearance):
    p = peg(shape, SIZE, LENGTH)
    s = matching_slot(p, clearance, DEPTH)
    assert abs(min_gap(peg_section(p), hole_of(s)) - clearance) < CLEARANCE_TOL
    assert abs((s.meta["hole_apothem"] - p.meta["apothem"]) - clearance) < CLEARANCE_TOL
    hole, sec = hole_of(s), peg_section(p)
    assert len(hole) == len(sec)
    e_h = np.roll(hole, -1, axis=0) - hole
    e_p = np.roll(sec, -1, axis=0) - sec
    cross = e_h[:, 0] * e_p[:, 1] - e_h[:, 1] * e_p[:, 0]
    sin_angle = cross / (np.linalg.norm(e_h, axis=1) * np.linalg.norm(e_p, axis=1))
    np.testing.assert_allclose(sin_angle, 0, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_slot_with_default_arguments_fits_default_peg(shape):
    """slot(shape, size, ...) alone (as a caller who never built the peg would) fits peg(shape, size)."""
    for clearance in CLEARANCES:
        s = slot(shape, SIZE, clearance, DEPTH)
        gap = min_gap(peg_section(peg(shape, SIZE, LENGTH)), hole_of(s))
        assert abs(gap - clearance) < CLEARANCE_TOL
        if shape != "circle":
            assert abs(s.meta["hole_apothem"] - SIZE - clearance) < CLEARANCE_TOL


@pytest.mark.parametrize("clearance", CLEARANCES)
def test_circle_peg_in_square_slot_half_width_is_radius_plus_clearance(clearance):
    p = peg("circle", SIZE, LENGTH)
    for s in (matching_slot(p, clearance, DEPTH, slot_shape="square"),
              slot("square", SIZE, clearance, DEPTH, peg_shape="circle")):
        hole = hole_of(s)
        assert abs(np.abs(hole).max() - (SIZE + clearance)) < CLEARANCE_TOL
        assert abs(min_gap(peg_section(p), hole) - clearance) < CLEARANCE_TOL


@pytest.mark.parametrize(("peg_shape", "slot_shape"), list(itertools.product(SHAPES, SHAPES)))
def test_every_pairing_leaves_exactly_the_clearance(peg_shape, slot_shape):
    p = peg(peg_shape, SIZE, LENGTH, circle_segments=24)
    for clearance in CLEARANCES:
        s = matching_slot(p, clearance, DEPTH, slot_shape=slot_shape)
        assert abs(min_gap(peg_section(p), hole_of(s)) - clearance) < CLEARANCE_TOL
        assert s.meta["peg_shape"] == peg_shape and s.meta["shape"] == slot_shape


@pytest.mark.parametrize("shape", SHAPES)
def test_cup_surface_frame_and_volume(shape):
    wall, floor = 0.015, 0.008
    s = slot(shape, SIZE, 1e-3, DEPTH, wall=wall, floor=floor)
    assert validate_part(s) is s
    mesh = trimesh.Trimesh(s.vertices, s.faces, process=False)
    assert mesh.is_watertight and mesh.is_winding_consistent
    assert s.vertices[:, 2].min() == -floor and s.vertices[:, 2].max() == DEPTH
    n = s.meta["n_sides"]
    a_h = s.meta["hole_apothem"]

    def area(a):
        return n * a**2 * math.tan(math.pi / n)

    expected = area(a_h + wall) * (DEPTH + floor) - area(a_h) * DEPTH
    assert mesh.volume == pytest.approx(expected, rel=1e-12)
    assert s.meta["kind"] == "slot" and s.meta["clearance"] == 1e-3 and s.meta["depth"] == DEPTH
    assert s.meta["outer_apothem"] == pytest.approx(a_h + wall, rel=1e-15)


def winding_number(points: np.ndarray, vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Generalised winding number (P,) of a closed outward mesh: ~1 inside, ~0 outside."""
    a, b, c = (vertices[faces[:, k]][None] - points[:, None] for k in range(3))
    la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
    det = np.einsum("pfk,pfk->pf", a, np.cross(b, c))
    den = la * lb * lc + np.einsum("pfk,pfk->pf", a, b) * lc + np.einsum("pfk,pfk->pf", b, c) * la + \
        np.einsum("pfk,pfk->pf", c, a) * lb
    return (2 * np.arctan2(det, den)).sum(axis=1) / (4 * np.pi)


def inside_piece(points: np.ndarray, piece) -> np.ndarray:
    """Whether each point lies inside the convex piece (on the inner side of every face plane)."""
    v, f = piece.vertices, piece.faces
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    d = np.einsum("fk,fk->f", n, v[f[:, 0]])
    return (points @ n.T - d <= 1e-12).all(axis=1)


@pytest.mark.parametrize("shape", SHAPES)
def test_pieces_convex_disjoint_cover_solid_and_avoid_cavity(shape):
    s = slot(shape, SIZE, 6.5e-5, DEPTH, circle_segments=24, peg_shape=shape, peg_circle_segments=24)
    a_h = s.meta["hole_apothem"]
    assert len(s.pieces) == s.meta["n_sides"] + 1
    hole = hole_of(s)
    edges = np.roll(hole, -1, axis=0) - hole
    edge_normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1) / np.linalg.norm(edges, axis=1)[:, None]
    edge_offsets = np.einsum("ij,ij->i", edge_normals, hole)
    total = 0.0
    for piece in s.pieces:
        hull = ConvexHull(piece.vertices)
        vol = trimesh.Trimesh(piece.vertices, piece.faces, process=False).volume
        assert len(hull.vertices) == len(piece.vertices) and vol == pytest.approx(hull.volume, rel=1e-12)
        total += vol
        # a plane separates it from the cavity: the line of a hole edge, or the floor's top z = 0
        beyond_edge = (piece.vertices[:, :2] @ edge_normals.T >= edge_offsets - 1e-12).all(axis=0)
        assert beyond_edge.any() or (piece.vertices[:, 2] <= 0).all()
    mesh_volume = trimesh.Trimesh(s.vertices, s.faces, process=False).volume
    assert total == pytest.approx(mesh_volume, rel=1e-12)  # disjoint pieces, union = solid

    rng = np.random.default_rng(7)
    lo, hi = s.vertices.min(axis=0), s.vertices.max(axis=0)
    pts = rng.uniform(lo, hi, size=(1500, 3))
    inside_mesh = winding_number(pts, s.vertices, s.faces) > 0.5
    in_pieces = np.stack([inside_piece(pts, p) for p in s.pieces], axis=1)
    assert inside_mesh.sum() > 100 and (~inside_mesh).sum() > 100
    np.testing.assert_array_equal(in_pieces.any(axis=1), inside_mesh)
    assert (in_pieces.sum(axis=1) <= 1).all()

    r = a_h * rng.uniform(0, 1, 500) ** 0.5  # points in the cavity: inside the inscribed circle of the hole
    t = rng.uniform(0, 2 * np.pi, 500)
    cavity = np.column_stack([r * np.cos(t), r * np.sin(t), rng.uniform(0, DEPTH, 500)])
    assert not np.stack([inside_piece(cavity, p) for p in s.pieces]).any()
    assert (winding_number(cavity, s.vertices, s.faces) < 0.5).all()


@pytest.mark.parametrize("clearance", [0.0, -1e-3, float("nan"), float("inf")])
def test_slot_rejects_bad_clearance(clearance):
    with pytest.raises(InvalidInputError, match="clearance"):
        slot("square", SIZE, clearance, DEPTH)
    with pytest.raises(InvalidInputError, match="clearance"):
        matching_slot(peg("square", SIZE, LENGTH), clearance, DEPTH)


@pytest.mark.parametrize("clearance", [SIZE, 1.5 * SIZE, 1.0])
def test_slot_rejects_a_clearance_that_does_not_fit_the_part(clearance):
    """Issue 15: a gap as wide as the peg's apothem (or radius) is refused by every builder taking a clearance."""
    with pytest.raises(InvalidInputError, match="does not fit"):
        slot("square", SIZE, clearance, DEPTH)
    with pytest.raises(InvalidInputError, match="does not fit"):
        matching_slot(peg("circle", SIZE, LENGTH), clearance, DEPTH)
    with pytest.raises(InvalidInputError, match="does not fit"):
        peg_in_hole("hexagon", clearance, size=SIZE)
    s = slot("square", SIZE, math.nextafter(SIZE, 0.0), DEPTH)  # just below the bound is a (loose) slot
    assert s.meta["hole_apothem"] == pytest.approx(2 * SIZE, rel=1e-12)


@pytest.mark.parametrize("key", ["depth", "wall", "floor", "peg_size"])
@pytest.mark.parametrize("bad", [0.0, -0.01, float("nan")])
def test_slot_rejects_bad_dimensions(key, bad):
    kwargs = {"shape": "hexagon", "peg_size": SIZE, "clearance": 1e-3, "depth": DEPTH, key: bad}
    with pytest.raises(InvalidInputError, match=key):
        slot(**kwargs)


def test_slot_rejects_unknown_shapes_and_non_pegs():
    with pytest.raises(InvalidInputError, match="triangle"):
        slot("oval", SIZE, 1e-3, DEPTH)
    with pytest.raises(InvalidInputError, match="oval"):
        slot("square", SIZE, 1e-3, DEPTH, peg_shape="oval")
    with pytest.raises(InvalidInputError, match="not a peg"):
        matching_slot(box((0.1, 0.1, 0.1)), 1e-3, DEPTH)
