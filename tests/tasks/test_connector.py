"""Connector task: plug and socket are valid convex decompositions whose volumes match closed forms,
the clearance, entry chamfer and pin holes are exactly where the variant puts them, the 8 variants
span the factorial design, misalignments stay in bounds, and in MuJoCo the socket walls guide a
misaligned plug into its seat while the F/T reading balances the impedance spring."""

import dataclasses
import math

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from contactkit.errors import InvalidInputError
from contactkit.geometry import signed_volume, validate_part
from contactkit.model import ActionMode
from contactkit.mujoco import MujocoWorld
from contactkit.physics import WorldParams
from contactkit.tasks.connector import (
    SOCKET_VARIANTS,
    ConnectorGeometry,
    Misalignment,
    MisalignmentRange,
    SocketVariant,
    connector_insertion,
    insertion_depth,
    offset_polygon,
    plug,
    sample_misalignment,
    socket,
)

GEOM = ConnectorGeometry()
VOLUME_RTOL = 1e-10
EPS = 1e-7  # [m] probe distance either side of a face
PENETRATION_TOL = 1.5e-4  # [m] soft-contact penetration + tilt play allowed beyond the clearance
BALANCE_TOL = 0.1  # [N] quasi-static |F/T − K (r − r_des)|
SQUARE_NORMALS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
WORLD = WorldParams(timestep=0.005, n_substeps=10, solref=(0.01, 1.0))

# Steiner's formula for the keyed section (a W×D rectangle, two corners cut by k at 45°) offset by t:
# A(t) = A0 + P0 t + κ t², κ = Σ tan(exterior angle / 2) = 4 tan(22.5°) + 2 tan(45°).
A0 = GEOM.width * GEOM.depth - GEOM.key_chamfer**2
P0 = 2 * GEOM.width + 2 * GEOM.depth - 4 * GEOM.key_chamfer + 2 * math.sqrt(2) * GEOM.key_chamfer
KAPPA = 4 * math.tan(math.pi / 8) + 2.0


def area(t: float) -> float:
    return A0 + P0 * t + KAPPA * t**2


def volume(part) -> float:
    return sum(signed_volume(p.vertices, p.faces) for p in part.pieces)


def inside_any(part, points: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """Whether each point (N, 3) lies strictly inside some convex piece."""
    hit = np.zeros(len(points), dtype=bool)
    for piece in part.pieces:
        eq = ConvexHull(piece.vertices).equations
        hit |= np.all(points @ eq[:, :3].T + eq[:, 3] < -tol, axis=1)
    return hit


def section_faces() -> tuple[np.ndarray, np.ndarray]:
    """Outward normals (6, 2) and face midpoints (6, 2) of the plug housing section, read from the mesh."""
    housing = plug().pieces[0].vertices
    top = housing[np.isclose(housing[:, 2], GEOM.length), :2]
    hull = ConvexHull(top)
    normals = hull.equations[:, :2]
    mids = top[hull.simplices].mean(axis=1)
    return normals, mids


@pytest.mark.parametrize("variant", SOCKET_VARIANTS, ids=lambda v: v.name)
def test_socket_is_valid_and_tiles_its_closed_form_volume(variant):
    part = validate_part(socket(variant))
    c, ch, h = variant.clearance, variant.chamfer, GEOM.hole_depth + GEOM.base + GEOM.cavity_depth
    t_out = c + ch + GEOM.wall
    bevel = (P0 + 2 * KAPPA * c) * ch**2 / 2 + KAPPA * ch**3 / 3  # ∫ A(c + s) − A(c) ds, s ∈ [0, ch]
    walls = (area(t_out) - area(c)) * h - bevel
    holes = len(GEOM.pin_centres) * np.prod(np.add(GEOM.pin_size, 2 * (c + GEOM.pin_hole_margin)))
    expected = walls + (area(c) - holes) * GEOM.hole_depth + area(c) * GEOM.base
    assert volume(part) == pytest.approx(expected, rel=VOLUME_RTOL)


def test_plug_is_valid_and_matches_its_closed_form_volume():
    part = validate_part(plug())
    e, b = GEOM.edge_bevel, GEOM.pin_tip_bevel
    housing = area(0.0) * GEOM.length - (P0 * e**2 / 2 - KAPPA * e**3 / 3)
    px, py = GEOM.pin_size
    pin = px * py * (GEOM.pin_length - b) + px * py * b - (px + py) * b**2 + 4 * b**3 / 3
    assert volume(part) == pytest.approx(housing + len(GEOM.pin_centres) * pin, rel=VOLUME_RTOL)
    assert len(part.pieces) == 1 + len(GEOM.pin_centres)


@pytest.mark.parametrize("variant", SOCKET_VARIANTS[::3], ids=lambda v: v.name)
def test_clearance_chamfer_and_pin_holes_are_exact(variant):
    part = socket(variant)
    normals, mids = section_faces()
    c, ch = variant.clearance, variant.chamfer
    knee = GEOM.cavity_depth - ch
    for z, gap in ((knee / 2, c), (knee + 0.25 * ch, c + 0.25 * ch), (knee + 0.75 * ch, c + 0.75 * ch)):
        free = np.column_stack([mids + (gap - EPS) * normals, np.full(len(mids), z)])
        wall = np.column_stack([mids + (gap + EPS) * normals, np.full(len(mids), z)])
        assert not inside_any(part, free).any(), f"a wall enters the cavity at z = {z}"
        assert inside_any(part, wall).all(), f"the cavity is wider than asked at z = {z}"
    m = c + GEOM.pin_hole_margin
    z = -GEOM.hole_depth / 2
    for cx, cy in GEOM.pin_centres:
        hx, hy = GEOM.pin_size[0] / 2 + m, GEOM.pin_size[1] / 2 + m
        probes = np.array([[cx + hx, cy], [cx - hx, cy], [cx, cy + hy], [cx, cy - hy]])
        out = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], dtype=float)
        assert not inside_any(part, np.column_stack([probes - EPS * out, np.full(4, z)])).any()
        assert inside_any(part, np.column_stack([probes + EPS * out, np.full(4, z)])).all()
        assert inside_any(part, np.array([[cx, cy, -GEOM.hole_depth - GEOM.base / 2]])).all()  # closed below


def test_offset_polygon_of_a_square_is_the_grown_square():
    corners = offset_polygon(SQUARE_NORMALS, np.full(4, 0.01), 0.002)
    np.testing.assert_allclose(np.abs(corners), 0.012, rtol=1e-12)
    x, y = corners[:, 0], corners[:, 1]
    assert 0.5 * (x @ np.roll(y, -1) - y @ np.roll(x, -1)) == pytest.approx(0.024**2)  # counter-clockwise


def test_eight_variants_span_tolerance_friction_and_chamfer():
    assert len(SOCKET_VARIANTS) == 8
    assert len({v.name for v in SOCKET_VARIANTS}) == 8
    combos = {(v.clearance, v.friction, v.chamfer) for v in SOCKET_VARIANTS}
    levels = [sorted({x[i] for x in combos}) for i in range(3)]
    assert all(len(lv) == 2 for lv in levels)
    assert len(combos) == 8  # full 2×2×2 factorial


def test_misalignment_is_reproducible_and_within_bounds():
    bounds = MisalignmentRange(lateral=2e-3, tilt=0.05, yaw=0.03)
    draws = [sample_misalignment(np.random.default_rng(s), bounds) for s in range(200)]
    again = sample_misalignment(np.random.default_rng(7), bounds)
    np.testing.assert_array_equal(again.offset, draws[7].offset)
    off = np.array([d.offset for d in draws])
    rot = np.array([d.rotvec for d in draws])
    assert np.all(np.abs(off[:, :2]) <= bounds.lateral) and np.all(off[:, 2] == 0.0)
    assert np.all(np.abs(rot[:, :2]) <= bounds.tilt) and np.all(np.abs(rot[:, 2]) <= bounds.yaw)
    assert np.abs(off[:, :2]).max() > 0.8 * bounds.lateral  # actually spreads over the range


def test_scene_places_socket_at_the_misalignment():
    mis = Misalignment(np.array([1e-3, -5e-4, 0.0]), np.array([0.01, -0.02, 0.03]))
    scene = connector_insertion(SOCKET_VARIANTS[2], mis)
    np.testing.assert_allclose(scene.statics[0].pos, mis.offset)
    np.testing.assert_allclose(scene.statics[0].quat, mis.quat)
    assert scene.statics[0].friction == SOCKET_VARIANTS[2].friction == scene.tool.friction
    height, lateral, tilt = insertion_depth(scene, mis.offset + [0, 0, 0.004], np.array([1.0, 0, 0, 0]))
    assert tilt == pytest.approx(np.linalg.norm(mis.rotvec[:2]), rel=1e-3)
    assert lateral == pytest.approx(0.004 * np.linalg.norm(mis.rotvec[:2]), rel=2e-2)
    assert height == pytest.approx(0.004, rel=1e-3)


@pytest.mark.parametrize("bad", [
    lambda: SocketVariant("x", -1e-4, 0.5, 1e-3),
    lambda: SocketVariant("x", 1e-4, float("nan"), 1e-3),
    lambda: ConnectorGeometry(pin_length=0.02),
    lambda: ConnectorGeometry(hole_depth=0.007),
    lambda: Misalignment(np.array([0.0, np.inf, 0.0])),
    lambda: Misalignment(np.zeros(2)),
    lambda: offset_polygon(SQUARE_NORMALS, np.full(4, 0.01), -0.011),  # shrunk past its centre
    lambda: offset_polygon(np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]), np.ones(3), 0.0),  # parallel
])
def test_bad_input_is_refused(bad):
    with pytest.raises(InvalidInputError):
        bad()


def _scripted_insertion(scene, n_steps=60):
    world = MujocoWorld(scene, WORLD)
    st, z0 = world.state(), world.state().pos[2]
    goal = GEOM.seated_height - 0.002
    for k in range(n_steps):
        target = np.array([0.0, 0.0, max(goal, z0 - 0.012 * WORLD.control_dt * (k + 1))])
        res = world.step(np.concatenate([target - st.pos, np.zeros(3)]), ActionMode.POSE_DELTA)
        st = res.state
    return st, res.wrench, target


@pytest.mark.parametrize("variant", [SOCKET_VARIANTS[0], SOCKET_VARIANTS[7]], ids=lambda v: v.name)
def test_walls_guide_an_offset_plug_into_its_seat(variant):
    offset = np.array([1.5e-3, -0.8e-3, 0.0])  # several clearances off, inside the chamfer's reach
    scene = connector_insertion(variant, Misalignment(offset, np.zeros(3)))
    st, wrench, target = _scripted_insertion(scene)
    height, lateral, _ = insertion_depth(scene, st.pos, st.quat)
    assert height == pytest.approx(GEOM.seated_height, abs=2e-4)
    assert lateral <= variant.clearance + PENETRATION_TOL
    # quasi-static: the contact wrench balances the impedance spring (upright plug, sensor ≈ world axes)
    spring = scene.controller.stiffness_pos * (st.pos - target)
    np.testing.assert_allclose(wrench[:3], spring, atol=BALANCE_TOL)
    assert np.hypot(*wrench[:2]) > 0.5 * np.linalg.norm(scene.controller.stiffness_pos[0] * offset[:2])


def test_aligned_plug_seats_without_lateral_force():
    scene = connector_insertion(dataclasses.replace(SOCKET_VARIANTS[4]))
    st, wrench, _ = _scripted_insertion(scene)
    height, lateral, tilt = insertion_depth(scene, st.pos, st.quat)
    assert height == pytest.approx(GEOM.seated_height, abs=2e-4)
    assert lateral < 1e-4 and tilt < 1e-3
    assert np.hypot(*wrench[:2]) < 0.05
