"""The paper's peg and hole (data-driven simulation paper §V-A): watertight, exact diameters, 32.5 µm gap."""

import math

import igl
import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.geometry import validate_part
from contactkit.geometry.assembly_parts import (
    MAX_SAGITTA,
    PAPER_HOLE_DIAMETER,
    PAPER_PEG_DIAMETER,
    paper_hole,
    paper_peg,
)
from contactkit.geometry.validate import check_self_intersections, is_convex, signed_volume


@pytest.fixture(scope="module")
def peg():
    return paper_peg()


@pytest.fixture(scope="module")
def hole():
    return paper_hole()


def test_parts_are_valid_solids_near_the_paper_counts(peg, hole):
    for part, paper in ((peg, 4786), (hole, 5324)):
        validate_part(part)
        check_self_intersections(part.vertices, part.faces, part.name)
        assert signed_volume(part.vertices, part.faces) > 0
        assert abs(len(part.faces) - paper) / paper < 0.1
        assert part.meta["n_triangles"] == len(part.faces)
        assert part.meta["sagitta"] <= MAX_SAGITTA
    assert len(peg.pieces) == 1 and is_convex(peg.vertices, peg.faces)
    assert len(hole.pieces) == hole.meta["circle_segments"] + 1


def test_pieces_fill_the_hole_block_exactly(hole):
    total = sum(signed_volume(p.vertices, p.faces) for p in hole.pieces)
    assert total == pytest.approx(signed_volume(hole.vertices, hole.faces), rel=1e-9)


def test_peg_volume_is_the_polygon_prism_minus_the_chamfer(peg):
    m = peg.meta
    n, a, c, length = m["circle_segments"], m["radius"], m["chamfer"], m["length"]
    area = lambda apo: n * apo**2 * math.tan(math.pi / n)  # noqa: E731
    frustum = c / 3 * (area(a - c) + area(a) + math.sqrt(area(a - c) * area(a)))
    expect = area(a) * (length - c) + frustum
    assert signed_volume(peg.vertices, peg.faces) == pytest.approx(expect, rel=1e-9)


def test_diameters_are_the_inscribed_circles(peg, hole):
    n = peg.meta["circle_segments"]
    side = peg.vertices[peg.vertices[:, 2] > peg.meta["chamfer"] + 1e-9]
    r = np.hypot(side[:, 0], side[:, 1])
    r = r[r > 0]
    assert np.allclose(r, PAPER_PEG_DIAMETER / 2 / math.cos(math.pi / n), rtol=0, atol=1e-12)
    rim = hole.vertices[np.isclose(hole.vertices[:, 2], 0.0)]
    rh = np.hypot(rim[:, 0], rim[:, 1])
    rh = rh[rh > 0]
    assert np.allclose(rh, PAPER_HOLE_DIAMETER / 2 / math.cos(math.pi / n), rtol=0, atol=1e-12)


def test_centred_peg_leaves_the_radial_clearance_all_round(peg, hole):
    """Peg lifted 5 mm off the floor, centred: the exact signed distance of its side vertices to the hole mesh
    is the radial clearance (32.5 µm) to within the faceting, and never below it."""
    clearance = (PAPER_HOLE_DIAMETER - PAPER_PEG_DIAMETER) / 2
    lift = 0.005
    v = peg.vertices + [0.0, 0.0, lift]
    inside = v[(v[:, 2] > lift + peg.meta["chamfer"] + 1e-6) & (v[:, 2] < hole.meta["depth"] - 1e-6)]
    inside = inside[np.hypot(inside[:, 0], inside[:, 1]) > 0]
    d = igl.signed_distance(inside, hole.vertices, hole.faces)[0]
    assert len(d) >= peg.meta["circle_segments"]
    assert d.min() == pytest.approx(clearance, abs=1e-9)
    assert d.max() <= clearance / math.cos(math.pi / peg.meta["circle_segments"]) + 1e-9
    rim = np.isclose(hole.vertices[:, 2], hole.meta["depth"])  # the hole's mouth, beside the peg's side
    hv = hole.vertices[rim & (np.hypot(hole.vertices[:, 0], hole.vertices[:, 1]) < hole.meta["diameter"] / 2 + 1e-4)]
    assert len(hv) == hole.meta["circle_segments"]
    dh = igl.signed_distance(hv - [0.0, 0.0, lift], peg.vertices, peg.faces)[0]
    assert dh.min() == pytest.approx(clearance, abs=1e-9)


def test_peg_shifted_sideways_by_more_than_the_clearance_intersects(peg, hole):
    v = peg.vertices + [5e-5, 0.0, 0.005]
    d = igl.signed_distance(v, hole.vertices, hole.faces)[0]
    assert d.min() < 0


def test_bad_arguments_are_refused():
    with pytest.raises(InvalidInputError, match="sagitta"):
        paper_peg(circle_segments=64)
    with pytest.raises(InvalidInputError, match="must exceed"):
        paper_hole(diameter=0.049)
    with pytest.raises(InvalidInputError, match="chamfer"):
        paper_peg(chamfer=0.1)
    with pytest.raises(InvalidInputError, match="side_bands"):
        paper_peg(side_bands=0)


def test_paper_peg_and_hole_pieces_are_accepted_by_coal():
    """COAL builds every convex piece of the paper's peg (as the tool) and hole (as a static): their 640-gon
    caps are strips, not fans ("Too many neighbors" before)."""
    from contactkit.collision import CollisionWorld
    from contactkit.geometry import mass_properties
    from contactkit.scene import Scene, StaticBody, Tool

    peg = paper_peg()
    props = mass_properties(peg, density=2700.0)
    scene = Scene("paper peg-in-hole", Tool(peg, props.mass, props.com, props.inertia, init_pos=(0.0, 0.0, 0.05)),
                  (StaticBody(paper_hole()),))
    world = CollisionWorld(scene)
    assert len(world.tool_pieces) == 1 and len(world.env_pieces) == len(paper_hole().pieces)
