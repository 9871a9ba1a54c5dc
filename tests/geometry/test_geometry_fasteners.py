"""Bolts and nuts with the ISO 68-1 basic profile (data-driven simulation paper §V-A, Table II): watertight,
exact diameters and profile, helical invariance, and a nut that fits the bolt only in phase."""

import math

import igl
import numpy as np
import pytest
from scipy.spatial import cKDTree

from contactkit.errors import InvalidInputError
from contactkit.geometry import validate_part
from contactkit.geometry.fasteners import (
    GENERALISATION_PAIRS,
    M48_DIAMETER,
    M48_PITCH,
    PAPER_PLAY,
    bolt,
    fastener_pair,
    nut,
    screw_pose,
    thread_profile,
)
from contactkit.geometry.prism import cap_faces
from contactkit.geometry.threads import helical_tube, phase, profile_radius
from contactkit.geometry.validate import check_self_intersections, check_solid, signed_volume

D, P = M48_DIAMETER, M48_PITCH
CHAMFER_TOL = 25e-6
"""Measured worst departure of the bolt mesh from the ideal chamfered thread: 21 µm (module docstring of
contactkit.geometry.fasteners)."""


@pytest.fixture(scope="module")
def m48_bolt():
    return bolt()


@pytest.fixture(scope="module")
def m48_nut():
    return nut()


def _radius(v):
    return np.hypot(v[:, 0], v[:, 1])


def _thread_region(part):
    """Vertices of the bolt's thread, one pitch away from the bottom and from the chamfer."""
    z = part.vertices[:, 2]
    return part.vertices[(z > P) & (z < part.meta["chamfer_start_z"] - P)]


def test_iso_68_1_basic_profile_dimensions():
    prof = thread_profile(D, P)
    assert prof.height == pytest.approx(0.866025 * P, rel=1e-6)
    assert prof.minor_diameter == pytest.approx(D - 2 * 5 / 8 * math.sqrt(3) / 2 * P, abs=1e-15)
    assert prof.minor_diameter == pytest.approx(D - 1.0825 * P, abs=1e-4 * P)
    assert prof.pitch_diameter == pytest.approx(D - 0.6495 * P, abs=1e-4 * P)
    u = np.linspace(0.0, P, 100001)
    r = profile_radius(prof, u)
    du = u[1] - u[0]
    assert np.sum(np.isclose(r, D / 2, rtol=0, atol=1e-12)) * du == pytest.approx(P / 8, abs=2 * du)
    assert np.sum(np.isclose(r, prof.minor_diameter / 2, rtol=0, atol=1e-12)) * du == pytest.approx(P / 4, abs=2 * du)
    # the pitch line cuts the profile into equal thread and groove widths (p / 2 each)
    assert np.mean(r > prof.pitch_diameter / 2) == pytest.approx(0.5, abs=1e-4)


def test_bolt_and_nut_are_valid_solids(m48_bolt, m48_nut):
    for part in (m48_bolt, m48_nut):
        validate_part(part)
        check_self_intersections(part.vertices, part.faces, part.name)
        assert part.pieces == () and part.meta["convex_pieces_missing"] is True
        assert part.meta["n_triangles"] == len(part.faces)
        assert part.meta["sagitta"] < 8e-6  # well under the 40 µm accuracy bar of the helical depth network
        assert signed_volume(part.vertices, part.faces) > 0


def test_bolt_radii_are_the_major_and_minor_diameters(m48_bolt):
    r = _radius(_thread_region(m48_bolt))
    assert r.max() == pytest.approx(D / 2, abs=1e-12)
    assert r.min() == pytest.approx(m48_bolt.meta["D1"] / 2, abs=1e-12)
    top = m48_bolt.vertices[np.isclose(m48_bolt.vertices[:, 2], m48_bolt.meta["length"])]
    rt = _radius(top)
    assert np.allclose(rt[rt > 0], m48_bolt.meta["chamfer_top_radius"], rtol=0, atol=1e-12)
    assert m48_bolt.meta["chamfer_top_radius"] < m48_bolt.meta["D1"] / 2
    assert _radius(m48_bolt.vertices).max() == pytest.approx(D / 2, abs=1e-12)


def test_nut_bore_radii_are_the_bolts_plus_half_the_play(m48_nut):
    r = _radius(m48_nut.vertices)
    bore = r[r < D / 2 + PAPER_PLAY]
    assert bore.max() == pytest.approx(D / 2 + PAPER_PLAY / 2, abs=1e-12)
    assert bore.min() == pytest.approx(m48_nut.meta["D1"] / 2 + PAPER_PLAY / 2, abs=1e-12)
    hexa = m48_nut.vertices[r > D / 2 + PAPER_PLAY]
    assert len(hexa) == 12
    assert np.allclose(_radius(hexa), 0.075 / 2 / math.cos(math.pi / 6), rtol=0, atol=1e-12)


def _axial_section(part):
    """Vertices in the half plane theta = 0 (column 0), thread region, sorted by z: ``(z, r)``."""
    v = _thread_region(part)
    sec = v[(np.abs(v[:, 1]) < 1e-12) & (v[:, 0] > 0)]
    sec = sec[np.argsort(sec[:, 2])]
    return sec[:, 2], sec[:, 0]


def test_flank_angle_and_flat_widths_from_an_axial_section(m48_bolt):
    z, r = _axial_section(m48_bolt)
    assert len(z) >= 4 * 8
    dz, dr = np.diff(z), np.diff(r)
    flank = np.abs(dr) > 1e-9
    half_angles = np.degrees(np.arctan2(dz[flank], np.abs(dr[flank])))  # flank vs the radial direction
    down, up = half_angles[dr[flank] < 0], half_angles[dr[flank] > 0]
    assert len(down) >= 8 and len(up) >= 8
    k = min(len(down), len(up))
    assert np.allclose(down[:k] + up[:k], 60.0, atol=1e-7)  # included angle between the two flanks
    assert np.allclose(half_angles, 30.0, atol=1e-7)
    crest = ~flank & (np.abs(r[:-1] - D / 2) < 1e-12)
    root = ~flank & (np.abs(r[:-1] - m48_bolt.meta["D1"] / 2) < 1e-12)
    assert np.allclose(dz[crest], P / 8, atol=1e-12) and crest.sum() >= 8
    assert np.allclose(dz[root], P / 4, atol=1e-12) and root.sum() >= 8


@pytest.mark.parametrize("hand", [1, -1])
def test_thread_vertices_are_invariant_under_the_discrete_screw(hand):
    b = bolt(handedness=hand) if hand == 1 else validate_part(bolt(handedness=-1, length=0.03))
    n = b.meta["segments_per_turn"]
    v = _thread_region(b)
    a = 2 * math.pi / n
    rot = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    moved = v @ rot.T + [0.0, 0.0, hand * P / n]
    dist, where = cKDTree(b.vertices).query(moved)
    assert dist.max() < 1e-10
    assert len(np.unique(where)) == len(v)
    # a shift that is not the screw's (wrong handedness) does not map the thread onto itself
    wrong = v @ rot.T - [0.0, 0.0, hand * P / n]
    assert cKDTree(b.vertices).query(wrong)[0].max() > 1e-5


def test_nut_fits_the_bolt_in_phase_with_the_designed_gap(m48_bolt, m48_nut):
    """Nominal pose (nut raised by whole pitches, or screwed: turned by a and raised by p a / 2 pi): exact signed
    distances >= 0 both ways, smallest ~ the flank gap play / 4 (0.1 mm) within the faceting."""
    sag = max(m48_bolt.meta["sagitta"], m48_nut.meta["sagitta"])
    for turn in (0.0, 0.3):
        shift, quat = screw_pose(P, 2 * math.pi * turn, z0=2 * P)
        assert shift == pytest.approx([0.0, 0.0, 2 * P + P * turn])
        a = 2 * math.atan2(quat[3], quat[0])
        assert quat[1:3] == pytest.approx([0.0, 0.0]) and math.isclose(a % (2 * math.pi), 2 * math.pi * turn)
        rot = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
        d_nut = igl.signed_distance(m48_nut.vertices @ rot.T + shift, m48_bolt.vertices, m48_bolt.faces)[0]
        q = (m48_bolt.vertices - shift) @ rot
        d_bolt = igl.signed_distance(q, m48_nut.vertices, m48_nut.faces)[0]
        assert d_nut.min() == pytest.approx(PAPER_PLAY / 4, abs=sag)
        assert d_bolt.min() == pytest.approx(PAPER_PLAY / 4, abs=sag)


def test_nut_out_of_phase_or_of_the_wrong_hand_intersects_the_bolt(m48_bolt, m48_nut):
    shifted = m48_nut.vertices + [0.0, 0.0, 2 * P + P / 2]
    assert igl.signed_distance(shifted, m48_bolt.vertices, m48_bolt.faces)[0].min() < -1e-3
    left = nut(handedness=-1)
    d = igl.signed_distance(left.vertices + [0.0, 0.0, 2 * P], m48_bolt.vertices, m48_bolt.faces)[0]
    assert d.min() < -1e-3


def test_volumes_match_the_analytic_thread(m48_bolt, m48_nut):
    """Averaged over a turn, a thread's cross-section area is the mean of pi R(u)^2 over a pitch (the phase
    covers the pitch uniformly as theta goes round); the mesh differs by at most area x sagitta."""
    prof = thread_profile(D, P)
    u = (np.arange(4000) + 0.5) / 4000 * P
    m = m48_bolt.meta
    z = (np.arange(2000) + 0.5) / 2000 * m["length"]
    r = np.minimum(profile_radius(prof, u)[None, :], (m["chamfer_top_radius"] + m["length"] - z)[:, None])
    bolt_v = np.pi * np.mean(r**2) * m["length"]
    area = 2 * np.pi * D / 2 * m["length"]
    assert signed_volume(m48_bolt.vertices, m48_bolt.faces) == pytest.approx(bolt_v, abs=area * m["sagitta"])
    t, af = m48_nut.meta["thickness"], m48_nut.meta["across_flats"]
    bore = np.pi * np.mean((profile_radius(prof, u) + PAPER_PLAY / 2) ** 2) * t
    nut_v = 6 * (af / 2) ** 2 * math.tan(math.pi / 6) * t - bore
    assert signed_volume(m48_nut.vertices, m48_nut.faces) == pytest.approx(nut_v, abs=area * m["sagitta"])


@pytest.mark.slow
def test_the_ten_generalisation_pairs_are_valid_and_fit():
    assert [(s.group, round(s.diameter * 1e3, 1), round(s.pitch * 1e3, 1)) for s in GENERALISATION_PAIRS] == [
        ("narrow", 47.2, 5.0), ("narrow", 47.6, 5.0), ("narrow", 48.5, 5.0), ("narrow", 49.0, 5.0),
        ("broad", 39.0, 4.0), ("broad", 42.0, 4.5), ("broad", 45.0, 4.5), ("broad", 52.0, 5.0),
        ("broad", 56.0, 5.5), ("broad", 60.0, 5.5),
    ]
    for spec in GENERALISATION_PAIRS:
        b, n = fastener_pair(spec.diameter, spec.pitch)
        validate_part(b)
        validate_part(n)
        assert b.meta["D"] == spec.diameter and n.meta["p"] == spec.pitch
        assert _radius(b.vertices).max() == pytest.approx(spec.diameter / 2, abs=1e-12)
        assert n.meta["across_flats"] == pytest.approx(0.075 * spec.diameter / D)
        assert n.meta["minor_radius"] == pytest.approx(b.meta["minor_radius"] + PAPER_PLAY / 2)
        d = igl.signed_distance(n.vertices + [0.0, 0.0, 2 * spec.pitch], b.vertices, b.faces)[0]
        assert d.min() > 0


def test_bad_arguments_are_refused():
    with pytest.raises(InvalidInputError, match="too short"):
        bolt(length=0.01)
    with pytest.raises(InvalidInputError, match="across_flats"):
        nut(across_flats=0.049)
    with pytest.raises(InvalidInputError, match="handedness"):
        bolt(handedness=0)
    with pytest.raises(InvalidInputError, match="segments"):
        nut(segments=8)
    with pytest.raises(InvalidInputError, match="play"):
        nut(play=0.0)
    with pytest.raises(InvalidInputError, match="minor"):
        thread_profile(0.004, 0.005)


def _param_orientation(part):
    """Signed areas of the faces: in the (theta, z) plane for thread-tube faces (vertices at distinct heights),
    in the xy plane for the flat end faces (all three vertices at one height)."""
    v = part.vertices[part.faces]  # (F, 3, 3)
    flat = np.ptp(v[:, :, 2], axis=1) == 0.0
    th = np.arctan2(v[:, :, 1], v[:, :, 0])
    dth = np.mod(th[:, 1:] - th[:, :1] + np.pi, 2 * np.pi) - np.pi
    dz = v[:, 1:, 2] - v[:, :1, 2]
    tube = dth[:, 0] * dz[:, 1] - dth[:, 1] * dz[:, 0]
    e1, e2 = v[:, 1, :2] - v[:, 0, :2], v[:, 2, :2] - v[:, 0, :2]
    cap = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    return flat, tube, cap, v


def test_thread_surfaces_are_graphs_over_theta_z_so_they_cannot_fold(m48_bolt, m48_nut):
    """Each tube triangle is counter-clockwise in (theta, z) (clockwise for the nut's bore, whose normals face
    the axis): the surface r(theta, z) is a single-valued graph, hence not self-intersecting. End faces are
    flat, with normals -z at the bottom and +z at the top."""
    flat, tube, cap, v = _param_orientation(m48_bolt)
    assert (tube[~flat] > 0).all()
    z = v[:, 0, 2]
    assert (cap[flat & (z == 0)] < 0).all() and (cap[flat & (z > 0)] > 0).all()
    flat, tube, cap, v = _param_orientation(m48_nut)
    r = np.hypot(v[:, :, 0], v[:, :, 1]).max(axis=1)
    bore = ~flat & (r < D / 2 + PAPER_PLAY)
    assert bore.sum() == len(v) - 12 - flat.sum()  # all but the hexagon's walls and the end faces
    assert (tube[bore] < 0).all()
    z = v[:, 0, 2]
    assert (cap[flat & (z == 0)] < 0).all() and (cap[flat & (z > 0)] > 0).all()


@pytest.mark.parametrize("hand", [1, -1])
def test_rims_pass_through_the_profile_corners_at_any_end_height(hand):
    """Cut by a plane z = z_e, the ideal thread's rim r(theta) = R(u(theta, z_e)) is piecewise linear in theta
    with kinks where a corner row crosses the plane: the mesh's rim (sorted by theta, linear in between) must
    equal it, kinks included, at both ends, for ends that fall anywhere in the phase."""
    prof = thread_profile(D, P)
    n, z0, z1 = 64, 0.00123, 0.0171
    tube = helical_tube(prof, n, z0, z1, handedness=hand)
    nv = len(tube.vertices)
    verts = np.concatenate([tube.vertices, [[0.0, 0.0, z0], [0.0, 0.0, z1]]])
    faces = np.concatenate([tube.faces, cap_faces(tube.bottom, nv, up=False), cap_faces(tube.top, nv + 1, up=True)])
    check_solid(verts, faces, "tube")
    theta = np.linspace(0.0, 2 * np.pi, 20001)
    for ring, angle, z_e in ((tube.bottom, tube.bottom_angle, z0), (tube.top, tube.top_angle, z1)):
        assert len(ring) == n + 4  # four corner rows cross each end plane once per turn, none on a column here
        assert np.allclose(verts[ring, 2], z_e, rtol=0, atol=0)
        r_mesh = np.hypot(verts[ring, 0], verts[ring, 1])
        ideal = profile_radius(prof, phase(prof, theta, z_e, hand))
        rim = np.interp(theta, np.append(angle, 2 * np.pi), np.append(r_mesh, r_mesh[0]))
        assert np.abs(rim - ideal).max() < 1e-12


def _ideal_points(prof, z, theta, hand=1, clip=None, offset=0.0):
    r = profile_radius(prof, phase(prof, theta, z, hand)) + offset
    if clip is not None:
        r = np.minimum(r, clip(z))
    return np.column_stack([r * np.cos(theta), r * np.sin(theta), z])


def test_meshes_follow_the_ideal_thread_within_the_faceting(m48_bolt, m48_nut):
    """Random points of the ideal surfaces r = min(R(u), c(z)) (bolt) and R(u) + play / 2 (nut bore), signed
    distance to the mesh: the chords lie inside the bolt by at most the sagitta, and the nut's bore chords
    reach into the bore by at most its sagitta; where the bolt's thread runs into its chamfer cone, within
    CHAMFER_TOL (kinks between columns near the root circle)."""
    rng = np.random.default_rng(7)
    prof, m = thread_profile(D, P), m48_bolt.meta
    clip = lambda z: m["chamfer_top_radius"] + m["length"] - z  # noqa: E731
    theta = rng.uniform(0.0, 2 * np.pi, 20000)
    z = rng.uniform(0.0, m["chamfer_start_z"], 20000)
    d = igl.signed_distance(_ideal_points(prof, z, theta, clip=clip), m48_bolt.vertices, m48_bolt.faces)[0]
    assert d.min() > -1e-9 and d.max() <= m["sagitta"] + 1e-9
    z = rng.uniform(m["chamfer_start_z"], m["length"], 20000)
    d = igl.signed_distance(_ideal_points(prof, z, theta, clip=clip), m48_bolt.vertices, m48_bolt.faces)[0]
    assert np.abs(d).max() <= CHAMFER_TOL
    z = rng.uniform(0.0, m48_nut.meta["thickness"], 20000)
    ideal = _ideal_points(prof, z, theta, offset=PAPER_PLAY / 2)
    d = igl.signed_distance(ideal, m48_nut.vertices, m48_nut.faces)[0]
    assert d.max() < 1e-9 and d.min() >= -m48_nut.meta["sagitta"] - 1e-9


def test_thread_sizes_outside_iso_261_are_refused_with_the_metre_value_to_give():
    """Issue 35 part 7: a diameter given in millimetres where metres are meant (48 for an M48) is refused, naming
    the range and the value in metres; a Table II pair in metres passes."""
    from contactkit.errors import InvalidInputError
    from contactkit.geometry.fasteners import check_thread_size

    check_thread_size(0.039, 0.004)
    with pytest.raises(InvalidInputError, match=r"thread diameter 48 m is outside .* if 48 is millimetres, give "
                                                r"0.048 \[m\]"):
        check_thread_size(48.0, 0.005)
    with pytest.raises(InvalidInputError, match=r"thread pitch 5 m .* give 0.005 \[m\]"):
        check_thread_size(0.048, 5.0)
    with pytest.raises(InvalidInputError, match=r"thread diameter 4.8e-05 m is outside ISO 261 metric threads "
                                                r"\(0.001 to 0.3 m\)$"):
        check_thread_size(0.048e-3, 0.005e-3)
