"""Public slot builders (issue 20 part 1): any regular polygon, entry and tip chamfers by length and angle, a slot of
any convex hole section (``cup``), a hole read back from a slot's mesh (``probe_hole``), and a user's mesh file as a
part with convex pieces (``load_part``). Oracles: closed-form volumes (prisms and frustums of similar polygons),
pieces that tile the solid, the hole facts the builder was given."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trimesh

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry import (
    DecompositionSettings,
    cup,
    load_part,
    offset_convex,
    peg,
    polygon,
    probe_hole,
    save_obj,
    section,
    slot,
    validate_part,
)
from contactkit.geometry.part import Part

SIZE, DEPTH, WALL, FLOOR = 0.01, 0.03, 0.015, 0.008
BAD_MESHES = Path(__file__).resolve().parents[1] / "data" / "meshes"
QUICK = DecompositionSettings(resolution=500, n_samples=5000)
"""CoACD settings that keep the test short."""
PROBE_RTOL = 1e-6
"""Relative accuracy of a probed inradius and of a centred axis (Nelder-Mead to AXIS_XATOL = 10 nm)."""


def area(poly: np.ndarray) -> float:
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def frustum(a1: float, a2: float, h: float) -> float:
    """Volume of a frustum of similar polygons of areas a1, a2 and height h."""
    return h / 3.0 * (a1 + a2 + math.sqrt(a1 * a2))


def volume(part: Part) -> float:
    mesh = trimesh.Trimesh(part.vertices, part.faces, process=False)
    assert mesh.is_watertight and mesh.is_winding_consistent
    return float(mesh.volume)


def inside_mesh(points: np.ndarray, part: Part) -> np.ndarray:
    """Whether each point is inside the closed outward mesh (generalised winding number > 1/2)."""
    a, b, c = (part.vertices[part.faces[:, k]][None] - points[:, None] for k in range(3))
    la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
    det = np.einsum("pfk,pfk->pf", a, np.cross(b, c))
    den = la * lb * lc + np.einsum("pfk,pfk->pf", a, b) * lc + np.einsum("pfk,pfk->pf", b, c) * la + \
        np.einsum("pfk,pfk->pf", c, a) * lb
    return (2 * np.arctan2(det, den)).sum(axis=1) / (4 * np.pi) > 0.5


def assert_pieces_tile(part: Part, rng: np.random.Generator) -> None:
    """The convex pieces are disjoint and their union is the solid: volumes add up, and random points are inside
    one piece exactly when they are inside the mesh."""
    total = sum(volume(Part("p", p.vertices, p.faces, ())) for p in part.pieces)
    assert total == pytest.approx(volume(part), rel=1e-10)
    lo, hi = part.vertices.min(axis=0), part.vertices.max(axis=0)
    pts = rng.uniform(lo, hi, size=(1500, 3))
    inside = inside_mesh(pts, part)
    counts = np.zeros(len(pts), dtype=int)
    for p in part.pieces:
        v, f = p.vertices, p.faces
        n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        counts += (pts @ n.T - np.einsum("fk,fk->f", n, v[f[:, 0]]) <= 1e-12).all(axis=1)
    assert inside.sum() > 100 and (~inside).sum() > 100
    np.testing.assert_array_equal(counts > 0, inside)
    assert counts.max() == 1


@pytest.mark.parametrize("shape", ["triangle", "square", "7-gon", "circle"])
@pytest.mark.parametrize("angle_deg", [45.0, 30.0, 60.0])
def test_chamfered_slot_volume_pieces_and_hole(shape, angle_deg):
    chamfer, angle = 0.004, math.radians(angle_deg)
    s = slot(shape, SIZE, 1e-3, DEPTH, wall=WALL, floor=FLOOR, chamfer=chamfer, chamfer_angle=angle)
    assert validate_part(s) is s
    a_h, n = s.meta["hole_apothem"], s.meta["n_sides"]
    width = chamfer * math.tan(angle)
    hole, rim, outer = (area(polygon(shape, a, circle_segments=64)) for a in (a_h, a_h + width, a_h + WALL))
    expected = outer * (DEPTH + FLOOR) - hole * (DEPTH - chamfer) - frustum(hole, rim, chamfer)
    assert volume(s) == pytest.approx(expected, rel=1e-12)
    assert len(s.pieces) == n + 1
    assert_pieces_tile(s, np.random.default_rng(3))
    facts = probe_hole(s)
    np.testing.assert_allclose(facts.axis_xy, 0.0, atol=PROBE_RTOL * SIZE)
    assert facts.depth == pytest.approx(DEPTH, rel=1e-12) and facts.floor_z == pytest.approx(0.0, abs=1e-15)
    assert facts.inradius == pytest.approx(a_h, rel=PROBE_RTOL)  # the narrowest section, below the chamfer
    assert s.meta["chamfer"] == chamfer and s.meta["chamfer_angle"] == angle


@pytest.mark.parametrize("angle_deg", [20.0, 45.0, 70.0])
def test_peg_tip_chamfer_by_length_and_angle(angle_deg):
    chamfer, length, angle = 0.002, 0.05, math.radians(angle_deg)
    p = peg("9-gon", SIZE, length, chamfer=chamfer, chamfer_angle=angle)
    assert validate_part(p) is p and p.meta["shape"] == "9-gon" and p.meta["n_sides"] == 9
    full, tip = area(polygon("9-gon", SIZE)), area(polygon("9-gon", SIZE - chamfer * math.tan(angle)))
    assert volume(p) == pytest.approx(full * (length - chamfer) + frustum(tip, full, chamfer), rel=1e-12)
    assert ("chamfer_angle" in p.meta) == (angle_deg != 45.0)  # absent at 45°: earlier pegs' meta unchanged


@pytest.mark.parametrize("kwargs", [{"chamfer": DEPTH}, {"chamfer": 0.01, "chamfer_angle": math.radians(60)},
                                    {"chamfer": 1e-3, "chamfer_angle": 0.0}, {"chamfer": 1e-3, "chamfer_angle": 2.0},
                                    {"chamfer": -1e-3}, {"chamfer": float("nan")}, {"chamfer": "1mm"}])
def test_bad_chamfers_are_refused_by_name(kwargs):
    with pytest.raises(InvalidInputError, match="chamfer"):
        slot("square", SIZE, 1e-3, DEPTH, wall=WALL, **kwargs)


def test_peg_chamfer_wider_than_the_peg_is_refused():
    with pytest.raises(InvalidInputError, match="chamfer"):
        peg("square", SIZE, 0.05, chamfer=0.008, chamfer_angle=math.radians(60))  # 13.9 mm wide > 10 mm


IRREGULAR = np.array([[0.012, -0.004], [0.014, 0.006], [0.0, 0.013], [-0.011, 0.004], [-0.006, -0.009]])
"""A convex, counter-clockwise, irregular pentagon [m]."""


def test_offset_convex_moves_every_face_by_the_offset():
    t = 0.003
    out = offset_convex(IRREGULAR, t)
    for k in range(len(IRREGULAR)):
        a, b = IRREGULAR[k], IRREGULAR[(k + 1) % len(IRREGULAR)]
        normal = np.array([b[1] - a[1], a[0] - b[0]]) / np.linalg.norm(b - a)
        assert normal @ out[k] - normal @ a == pytest.approx(t, rel=1e-12)
        assert normal @ out[(k + 1) % len(out)] - normal @ a == pytest.approx(t, rel=1e-12)


@pytest.mark.parametrize("chamfer", [0.0, 0.003])
def test_cup_of_any_convex_section(chamfer):
    s = cup(IRREGULAR, DEPTH, wall=WALL, floor=FLOOR, chamfer=chamfer, name="pentagon cup")
    assert validate_part(s) is s and s.meta["n_sides"] == 5
    hole, outer = area(IRREGULAR), area(offset_convex(IRREGULAR, WALL))
    rim = area(offset_convex(IRREGULAR, chamfer))  # 45°: as wide as long; not similar to the hole, so sample it
    cavity_top = hole * (DEPTH - chamfer)
    if chamfer:
        zs = np.linspace(0.0, 1.0, 201)
        cavity_top += chamfer * np.trapezoid([area(offset_convex(IRREGULAR, chamfer * z)) for z in zs], zs)
        assert rim > hole
    expected = outer * (DEPTH + FLOOR) - cavity_top
    assert volume(s) == pytest.approx(expected, rel=1e-6 if chamfer else 1e-12)
    assert_pieces_tile(s, np.random.default_rng(5))
    edges = np.roll(IRREGULAR, -1, axis=0) - IRREGULAR
    inscribed = float(np.min((edges[:, 0] * IRREGULAR[:, 1] - edges[:, 1] * IRREGULAR[:, 0]) * -1.0
                             / np.linalg.norm(edges, axis=1)))  # distance from the origin to each edge's line
    assert probe_hole(s).inradius >= inscribed  # the widest cylinder beats the one around the origin


@pytest.mark.parametrize("hole", [IRREGULAR[::-1], IRREGULAR[[0, 2, 1, 3, 4]], IRREGULAR[:2],
                                  np.vstack([IRREGULAR, IRREGULAR[:1]]), np.full((4, 2), np.nan)])
def test_cup_refuses_a_hole_that_is_not_a_convex_counter_clockwise_polygon(hole):
    with pytest.raises(InvalidInputError, match="cup hole"):
        cup(hole, DEPTH)


def test_probe_hole_follows_the_hole_and_refuses_where_there_is_none():
    s = slot("7-gon", SIZE, 2e-3, DEPTH, wall=WALL)
    shift = np.array([0.031, -0.017, 0.2])
    moved = Part("moved", s.vertices + shift, s.faces, ())
    facts = probe_hole(moved)
    np.testing.assert_allclose(facts.axis_xy, shift[:2], atol=PROBE_RTOL * SIZE)
    assert facts.floor_z == pytest.approx(shift[2], rel=1e-12) and facts.top_z == pytest.approx(shift[2] + DEPTH)
    assert facts.inradius == pytest.approx(s.meta["hole_apothem"], rel=PROBE_RTOL)
    given = probe_hole(moved, axis_xy=shift[:2] + [0.001, 0.0])  # off-centre: the nearest wall is closer
    assert given.inradius < facts.inradius and given.depth == pytest.approx(DEPTH)
    with pytest.raises(GeometryError, match="no hole opening"):
        probe_hole(peg("square", SIZE, 0.05))
    with pytest.raises(GeometryError, match="misses the part"):
        probe_hole(s, axis_xy=(1.0, 1.0))


def test_load_part_scales_units_and_decomposes(tmp_path):
    s = slot("square", SIZE, 2e-3, DEPTH)
    path = save_obj(tmp_path / "slot_mm.obj", s.vertices * 1e3, s.faces)
    part, report = load_part(path, units="mm", settings=QUICK, cache_dir=tmp_path / "cache")
    np.testing.assert_allclose(part.vertices, s.vertices, rtol=0, atol=1e-15)
    assert report.method == "coacd" and len(part.pieces) == report.n_pieces > 1
    assert report.max_protrusion < 2e-3  # the pieces stay out of the 2 mm clearance
    assert validate_part(part) is part and part.name == "slot_mm"
    with pytest.raises(InvalidInputError, match="furlong"):
        load_part(path, units="furlong")


@pytest.mark.parametrize("name", ["open_box_not_watertight.obj", "nan_vertex.obj", "not_an_obj.obj", "empty.obj",
                                  "flipped_winding.obj"])
def test_load_part_refuses_bad_meshes_naming_the_file(name):
    with pytest.raises(GeometryError) as err:
        load_part(BAD_MESHES / name)
    assert name in str(err.value) and len(str(err.value).splitlines()) == 1


def test_section_is_canonical():
    assert section("6-gon") == section("hexagon") and section("Octagon")[1] == 8


def test_the_finest_circle_still_builds():
    """A 4096-gon turns by 1.5e-3 rad per corner: convex for the check (relative to the edges, not in m²)."""
    from contactkit.geometry.prism import MAX_CIRCLE_SEGMENTS

    s = slot("circle", SIZE, 1e-3, DEPTH, circle_segments=MAX_CIRCLE_SEGMENTS)
    assert s.meta["n_sides"] == MAX_CIRCLE_SEGMENTS and len(s.pieces) == MAX_CIRCLE_SEGMENTS + 1
    small = 1e-6 * IRREGULAR  # a micrometre-sized hole is as convex as a centimetre one
    assert len(cup(small, 1e-6, wall=1e-6, floor=1e-6).pieces) == len(IRREGULAR) + 1
