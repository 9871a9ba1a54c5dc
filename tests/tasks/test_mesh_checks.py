"""The checks of a scene from a user's meshes (issue 34, part 4): a part's size against its units, the fit's
clearance measured on the meshes, and the pieces' deviation against it."""

import dataclasses

import numpy as np
import pytest

from contactkit.geometry import box, peg, slot
from contactkit.tasks.mesh_checks import (
    PIECE_DEVIATION_FRACTION,
    PLAUSIBLE_EXTENT_M,
    PartDeviation,
    deviation_findings,
    fit_clearance,
    size_finding,
)
from contactkit.tasks.scenes import mesh_peg_in_hole, tip_frame


@pytest.mark.parametrize(("shape", "clearance"), [("square", 2e-3), ("hexagon", 5e-4)])
def test_fit_clearance_is_the_radial_gap_of_a_prismatic_fit(shape, clearance):
    s = slot(shape, 0.01, clearance, 0.025)
    scene = mesh_peg_in_hole(tip_frame(peg(shape, 0.01, 0.06)), s)
    assert fit_clearance(scene, np.random.default_rng(0), 2000) == pytest.approx(clearance, rel=1e-9)


def test_a_tool_wider_than_the_hole_has_no_clearance_and_says_so():
    scene = mesh_peg_in_hole(tip_frame(peg("square", 0.0125, 0.06)), slot("square", 0.01, 2e-3, 0.025))
    c = fit_clearance(scene, np.random.default_rng(0), 2000)
    assert c < 0
    (line,) = deviation_findings([], c)
    assert "does not fit" in line


def test_pieces_beyond_the_fraction_of_the_clearance_are_named():
    limit = PIECE_DEVIATION_FRACTION * 1e-3
    ok, out, bare = (PartDeviation("a", 0.9 * limit, 0.0), PartDeviation("b", 1.1 * limit, 0.0),
                     PartDeviation("c", 0.0, 1.1 * limit))
    assert deviation_findings([ok], 1e-3) == []
    lines = deviation_findings([ok, out, bare], 1e-3)
    assert len(lines) == 2 and lines[0].startswith("b: ") and "stick out of" in lines[0]
    assert lines[1].startswith("c: ") and "leave uncovered" in lines[1]


def test_a_part_in_the_wrong_units_is_named_with_the_units_that_fit():
    lo, hi = PLAUSIBLE_EXTENT_M
    part = box((0.06, 0.02, 0.02))
    assert size_finding(part, "--tool 'p.obj'", "mm") is None
    as_metres = dataclasses.replace(part, vertices=part.vertices * 1e3)  # millimetre CAD read as metres
    line = size_finding(as_metres, "--tool 'p.obj'", "m")
    assert line.startswith("--tool 'p.obj' is 60 m across") and "--units mm (0.06 m)" in line
    assert f"{hi:g} m" in line
    tiny = dataclasses.replace(part, vertices=part.vertices * 1e-3)  # 60 µm: too small in every unit here
    line = size_finding(tiny, "--slot 's.obj'", "m")
    assert line is not None and "plausible with" not in line and lo > 6e-5
