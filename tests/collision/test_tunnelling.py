"""Tunnelling oracles on the peg-in-hole scene: the table is the box 0.5 × 0.5 × 0.02 m whose top is z = 0, the
peg's probe (the centroid of its one convex piece) sits 30 mm above its tip."""

import math

import numpy as np
import pytest

from contactkit.collision.tunnelling import CHORD_TOL, TunnelGuard, find_tunnel
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.scene import StaticBody
from contactkit.tasks import peg_in_hole
from contactkit.tasks.scenes import TABLE_SIZE

SCENE = peg_in_hole("hexagon", 1e-3)
GUARD = TunnelGuard.of(SCENE)
UP = np.eye(3)
OFF_SLOT = np.array([0.15, 0.0, 0.0])
"""A tool origin (tip) over the table, beside the slot [m]."""
PROBE_HEIGHT = 0.03
TABLE = TABLE_SIZE[2]


def tip_at(z, xy=OFF_SLOT):
    return np.array([xy[0], xy[1], z])


def test_probe_is_the_tool_piece_centroid():
    assert GUARD.probes.shape == (1, 3) and GUARD.probes[0] == pytest.approx([0.0, 0.0, PROBE_HEIGHT], abs=1e-12)
    assert len(GUARD.labels) == 1 + len(SCENE.statics[1].part.pieces)
    assert GUARD.thickness[0][np.isfinite(GUARD.thickness[0])].min() == pytest.approx(TABLE, rel=1e-12)


@pytest.mark.parametrize("z_end", [0.001, -0.001, -0.02, -PROBE_HEIGHT - 0.4 * TABLE, -PROBE_HEIGHT - 0.499 * TABLE])
def test_resting_pressing_or_sinking_short_of_the_middle_is_not_tunnelling(z_end):
    assert find_tunnel(GUARD, tip_at(0.001), UP, tip_at(z_end), UP) is None


def test_a_probe_past_the_middle_of_the_table_has_tunnelled():
    found = find_tunnel(GUARD, tip_at(0.001), UP, tip_at(-PROBE_HEIGHT - 0.6 * TABLE), UP)
    assert found is not None and "static 0 'table' piece 0" in found and "past its middle" in found
    # a probe already inside drifts past the middle over a later step
    inside = tip_at(-PROBE_HEIGHT - 0.4 * TABLE)
    assert find_tunnel(GUARD, inside, UP, inside - [0, 0, 0.2 * TABLE], UP) is not None
    assert find_tunnel(GUARD, inside, UP, inside + [0, 0, 0.2 * TABLE], UP) is None


def test_passing_through_in_one_step_is_tunnelling_and_names_the_first_piece():
    found = find_tunnel(GUARD, tip_at(0.001), UP, tip_at(-1.0), UP)
    assert "static 0 'table' piece 0" in found and "passed through it (20 mm inside)" in found
    found = find_tunnel(GUARD, tip_at(0.045, (0, 0)), UP, tip_at(-1.0, (0, 0)), UP)  # down the hole: the floor first
    assert f"static 1 '{SCENE.statics[1].part.name}'" in found


def test_fast_motion_clear_of_every_body_and_a_grazing_chord_are_not_tunnelling():
    assert find_tunnel(GUARD, tip_at(0.01, (-0.2, 0)), UP, tip_at(0.01, (0.2, 0.1)), UP) is None
    assert find_tunnel(GUARD, tip_at(0.045, (0, 0)), UP, tip_at(0.0, (0, 0)), UP) is None  # into the hole


@pytest.mark.parametrize("back, chord", [(0.5, 0.4 * math.sqrt(2)), (2.0, 0.76 * 2.5 * math.sqrt(2))])
def test_cutting_the_table_edge_counts_only_beyond_the_chord_tolerance(back, chord):
    """The probe's path starts ``back`` CHORD_TOL inside the edge x = 0.25, 0.1 CHORD_TOL above the top, and
    leaves through the side; ``chord`` (in CHORD_TOL) of it runs inside the table."""
    edge, tol = TABLE_SIZE[0] / 2, CHORD_TOL
    probe0 = np.array([edge - back * tol, 0.0, 0.1 * tol])
    probe1 = probe0 + np.array([back + 0.5, 0.0, -(back + 0.5)]) * tol
    lift = np.array([0.0, 0.0, PROBE_HEIGHT])
    found = find_tunnel(GUARD, probe0 - lift, UP, probe1 - lift, UP)
    assert (found is not None) == (chord > 1.0)
    if found:
        assert f"({chord * tol * 1e3:.3g} mm inside)" in found


def test_rotation_moves_the_probe():
    """Tip on the table, peg turned upside down: its probe is 30 mm below the tip, inside and past the middle."""
    flipped = quat_to_mat(rotvec_to_quat(np.array([math.pi, 0.0, 0.0])))
    assert find_tunnel(GUARD, tip_at(0.001), UP, tip_at(0.001), flipped) is not None


def test_rotated_statics_are_placed_in_the_world():
    table = SCENE.statics[0]
    tilted = StaticBody(table.part, pos=table.pos, quat=rotvec_to_quat(np.array([0.0, 0.0, math.pi / 4])))
    guard = TunnelGuard.of(type(SCENE)(SCENE.name, SCENE.tool, (tilted,)))
    corner = np.array([0.24, 0.24, 0.0])  # inside the square table, outside the table turned by 45°
    assert find_tunnel(GUARD, corner + [0, 0, 0.01], UP, corner - [0, 0, 1.0], UP) is not None
    assert find_tunnel(guard, corner + [0, 0, 0.01], UP, corner - [0, 0, 1.0], UP) is None


def _core_guard() -> TunnelGuard:
    """A probe 35 mm off the tool axis (a nut's piece centroid) around a static 40 mm square core (a bolt)."""
    normals = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=np.float64)
    offsets = np.array([0.02, 0.02, 0.02, 0.02, 0.05, 0.05])
    planes = np.column_stack([normals, offsets])[None]
    thickness = np.array([[0.04, 0.04, 0.04, 0.04, 0.1, 0.1]])
    return TunnelGuard(np.array([[0.035, 0.0, 0.0]]), planes, thickness, ("static 0 'core' piece 0",))


def test_a_tool_spinning_around_a_core_follows_the_arc_not_the_chord():
    """Turning 2 rad in one step, the probe's chord cuts the core (its middle is 18.9 mm from the axis) but its
    arc stays 35 mm away: not tunnelling. Turning 2.94 rad, the arc crosses a 10 mm wide plate at 30–40 mm from
    the axis (near 90°) that the chord (never above y = 17.5 mm) misses: tunnelling."""
    guard = _core_guard()
    spun = quat_to_mat(rotvec_to_quat(np.array([0.0, 0.0, 2.0])))
    assert find_tunnel(guard, np.zeros(3), UP, np.zeros(3), spun) is None
    plate = np.array([[[1, 0, 0, 0.005], [-1, 0, 0, 0.005], [0, 1, 0, 0.04], [0, -1, 0, -0.03],
                       [0, 0, 1, 0.05], [0, 0, -1, 0.05]]], dtype=np.float64)
    plate_guard = TunnelGuard(guard.probes, plate, np.array([[0.01, 0.01, 0.01, 0.01, 0.1, 0.1]]), ("plate",))
    spun = quat_to_mat(rotvec_to_quat(np.array([0.0, 0.0, 2.94])))
    found = find_tunnel(plate_guard, np.zeros(3), UP, np.zeros(3), spun)
    assert found is not None and "passed through it (10 mm inside)" in found


def test_passing_through_while_spinning_is_still_tunnelling():
    """A step cut into 30 parts by a 3 rad spin about the peg's axis still sums the 20 mm through the table."""
    spun = quat_to_mat(rotvec_to_quat(np.array([0.0, 0.0, 3.0])))
    found = find_tunnel(GUARD, tip_at(0.001), UP, tip_at(-1.0), spun)
    assert "static 0 'table' piece 0" in found and "passed through it (20 mm inside)" in found
