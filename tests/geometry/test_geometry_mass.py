"""Mass properties against closed forms, frame covariance, an independent implementation, bad input."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import trimesh

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry import MassProperties, box, load_mesh, mass_properties, matching_slot, peg, slot

MESHES = Path(__file__).resolve().parents[1] / "data" / "meshes"
RTOL = 1e-6


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def test_box_matches_closed_form():
    sx, sy, sz = 0.1, 0.2, 0.3
    for props, m in ((mass_properties(box((sx, sy, sz)), mass=2.5), 2.5),
                     (mass_properties(box((sx, sy, sz)), density=700.0), 700.0 * sx * sy * sz)):
        assert props.mass == pytest.approx(m, rel=1e-12)
        np.testing.assert_allclose(props.com, 0.0, atol=1e-15)
        expected = m / 12.0 * np.diag([sy**2 + sz**2, sx**2 + sz**2, sx**2 + sy**2])
        np.testing.assert_allclose(props.inertia, expected, rtol=RTOL, atol=RTOL * expected.max())


def test_regular_64gon_prism_matches_closed_form():
    """Regular n-gon of apothem a, half edge b = a tan(pi/n): polar moment per unit mass a^2/2 + b^2/6
    (integral over the n isosceles triangles); in-plane moments are half of it by symmetry."""
    a, length, n, density = 0.02, 0.07, 64, 7850.0
    props = mass_properties(peg("circle", a, length, circle_segments=n), density=density)
    b = a * math.tan(math.pi / n)
    m = density * n * a * b * length
    polar = a**2 / 2 + b**2 / 6
    assert props.mass == pytest.approx(m, rel=RTOL)
    np.testing.assert_allclose(props.com, [0, 0, length / 2], atol=1e-12)
    expected = m * np.diag([polar / 2 + length**2 / 12, polar / 2 + length**2 / 12, polar])
    np.testing.assert_allclose(props.inertia, expected, rtol=RTOL, atol=RTOL * expected.max())
    # and it is close to the solid cylinder it approximates
    cyl_zz = m * a**2 / 2
    assert props.inertia[2, 2] == pytest.approx(cyl_zz, rel=2e-3)


def test_rigid_motion_covariance():
    rng = np.random.default_rng(0)
    part = slot("hexagon", 0.01, 1e-3, 0.03)
    ref = mass_properties(part, density=1000.0)
    rot, shift = random_rotation(rng), np.array([0.3, -1.2, 0.7])
    moved = dataclasses.replace(part, vertices=part.vertices @ rot.T + shift)
    props = mass_properties(moved, density=1000.0)
    assert props.mass == pytest.approx(ref.mass, rel=1e-12)
    np.testing.assert_allclose(props.com, rot @ ref.com + shift, atol=1e-12)
    expected = rot @ ref.inertia @ rot.T
    np.testing.assert_allclose(props.inertia, expected, rtol=1e-9, atol=1e-12 * ref.inertia.max())


@pytest.mark.parametrize("make", [lambda: slot("triangle", 0.01, 5e-3, 0.02),
                                  lambda: matching_slot(peg("circle", 0.01, 0.05), 6.5e-5, 0.03,
                                                        slot_shape="square"),
                                  lambda: peg("pentagon", 0.01, 0.05, chamfer=0.003)])
def test_agrees_with_trimesh(make):
    part = make()
    props = mass_properties(part, density=1200.0)
    mesh = trimesh.Trimesh(part.vertices, part.faces, process=False)
    mesh.density = 1200.0
    assert props.mass == pytest.approx(mesh.mass, rel=1e-9)
    np.testing.assert_allclose(props.com, mesh.center_mass, atol=1e-12)
    np.testing.assert_allclose(props.inertia, mesh.moment_inertia, rtol=1e-8, atol=1e-9 * props.inertia.max())


@pytest.mark.parametrize("part", [box((1e-3, 0.2, 0.05)), peg("triangle", 0.004, 0.3),
                                  slot("square", 0.02, 1e-3, 0.1)])
def test_inertia_is_physical(part):
    inertia = mass_properties(part, mass=0.3).inertia
    np.testing.assert_array_equal(inertia, inertia.T)
    moments = np.linalg.eigvalsh(inertia)
    assert moments[0] > 0
    assert moments[0] + moments[1] >= moments[2]


def test_needle_has_sane_properties():
    props = mass_properties(load_mesh(MESHES / "needle_aspect_1000.obj"), mass=1e-3)
    np.testing.assert_allclose(props.com, [5e-3, 5e-6, 5e-6], rtol=1e-9)
    long, thin = 1e-3 * (0.01**2 + 1e-5**2) / 12, 1e-3 * (2 * 1e-5**2) / 12
    np.testing.assert_allclose(np.sort(np.diag(props.inertia)), [thin, long, long], rtol=1e-9)


@pytest.mark.parametrize("kwargs", [{}, {"mass": 1.0, "density": 1.0}, {"mass": 0.0}, {"mass": -1.0},
                                    {"density": float("nan")}, {"density": float("inf")}, {"mass": "heavy"}])
def test_rejects_bad_mass_or_density(kwargs):
    with pytest.raises(InvalidInputError):
        mass_properties(box((0.1, 0.1, 0.1)), **kwargs)


def test_rejects_open_and_inverted_meshes():
    open_box = load_mesh(MESHES / "open_box_not_watertight.obj", require_watertight=False)
    with pytest.raises(GeometryError, match="not watertight"):
        mass_properties(open_box, density=1000.0)
    b = box((0.1, 0.1, 0.1), name="inverted")
    with pytest.raises(GeometryError, match="inverted.*flipped winding"):
        mass_properties(dataclasses.replace(b, faces=b.faces[:, ::-1]), density=1000.0)


def test_mass_properties_dataclass_checks_its_fields():
    good = MassProperties(1.0, np.zeros(3), np.eye(3))
    assert not good.inertia.flags.writeable
    with pytest.raises(InvalidInputError, match="mass"):
        MassProperties(0.0, np.zeros(3), np.eye(3))
    with pytest.raises(InvalidInputError, match="com"):
        MassProperties(1.0, np.zeros(2), np.eye(3))
    with pytest.raises(InvalidInputError, match="symmetric"):
        MassProperties(1.0, np.zeros(3), np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]]))
    with pytest.raises(InvalidInputError, match="positive definite"):
        MassProperties(1.0, np.zeros(3), np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(InvalidInputError, match="triangle inequality"):
        MassProperties(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0]))
