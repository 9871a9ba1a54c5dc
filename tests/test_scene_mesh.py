"""Scenes from any tool and slot parts (``mesh_peg_in_hole``, ``tip_frame``) and scene files (``load_scene``).

Oracle: the library's own peg and slot, moved off their frames and read back as meshes, make the same world as
``peg_in_hole`` builds from parameters (same goal, hole facts, start, and slot surface in the world)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry import Part, peg, slot
from contactkit.geometry.holes import AXIS_XATOL
from contactkit.geometry.part import ConvexPiece
from contactkit.rotations import quat_rotate
from contactkit.scene import Scene, load_scene
from contactkit.tasks.scenes import mesh_peg_in_hole, peg_in_hole, tip_frame

CLEARANCE, DEPTH = 2e-3, 0.025


def moved(part: Part, shift) -> Part:
    shift = np.asarray(shift, dtype=np.float64)
    return Part(part.name, part.vertices + shift, part.faces,
                tuple(ConvexPiece(p.vertices + shift, p.faces) for p in part.pieces), {})


def world_vertices(scene: Scene, k: int) -> np.ndarray:
    body = scene.statics[k]
    return quat_rotate(body.quat, body.part.vertices) + body.pos


@pytest.mark.parametrize("shape", ["triangle", "square", "7-gon"])
def test_moved_library_parts_make_the_parametric_world(shape):
    ref = peg_in_hole(shape, CLEARANCE, depth=DEPTH)
    tool = moved(ref.tool.part, (0.02, -0.01, 0.3))
    hole = moved(ref.statics[1].part, (0.05, 0.04, -0.2))
    scene = mesh_peg_in_hole(tip_frame(tool), hole)
    np.testing.assert_allclose(scene.target_pos, ref.target_pos, atol=1e-12)  # the axis is put on world z
    np.testing.assert_allclose(scene.tool.init_pos, ref.tool.init_pos, atol=1e-12)
    np.testing.assert_allclose(world_vertices(scene, 1), world_vertices(ref, 1), atol=AXIS_XATOL)  # where it was found
    np.testing.assert_allclose(scene.tool.part.vertices, ref.tool.part.vertices, atol=1e-12)
    np.testing.assert_allclose(scene.tool.sensor_pos, ref.tool.sensor_pos, atol=1e-12)
    assert scene.tool.mass == ref.tool.mass
    np.testing.assert_allclose(scene.tool.inertia, ref.tool.inertia, rtol=0, atol=1e-9 * ref.tool.inertia.max())
    for key in ("depth", "slot_top_z"):
        assert scene.meta[key] == pytest.approx(ref.meta[key], abs=1e-12)
    assert scene.meta["hole_apothem"] == pytest.approx(ref.meta["hole_apothem"], rel=1e-6)
    assert Scene.from_json(scene.to_json()).to_json() == scene.to_json()


def test_tip_frame_puts_the_tip_under_the_centre_of_mass():
    p = peg("triangle", 0.01, 0.05)  # its bounding box is off-centre: the centre of mass is not
    t = tip_frame(moved(p, (1.0, 2.0, 3.0)))
    np.testing.assert_allclose(t.vertices, p.vertices, atol=1e-12)
    np.testing.assert_allclose(t.meta["tip_offset"], [-1.0, -2.0, -3.0], atol=1e-12)


def test_a_part_without_a_hole_or_pieces_is_refused():
    p = peg("square", 0.01, 0.05)
    with pytest.raises(GeometryError, match="no hole"):
        mesh_peg_in_hole(p, p)
    hole = slot("square", 0.01, CLEARANCE, DEPTH)
    with pytest.raises(InvalidInputError, match="no convex collision pieces"):
        mesh_peg_in_hole(p, dataclasses.replace(hole, pieces=()))


def test_load_scene_names_the_file(tmp_path):
    good = tmp_path / "s.json"
    good.write_text(peg_in_hole("square", CLEARANCE).to_json())
    assert load_scene(good).name == peg_in_hole("square", CLEARANCE).name
    cases = {"missing.json": None, "binary.json": b"\xff\xfe\x00", "garbage.json": b"{not json",
             "array.json": b"[1, 2]", "partial.json": good.read_bytes()[:200]}
    for name, data in cases.items():
        path = tmp_path / name
        if data is not None:
            path.write_bytes(data)
        with pytest.raises(InvalidInputError) as err:
            load_scene(path)
        assert str(path) in str(err.value) and len(str(err.value).splitlines()) == 1, name


def test_load_scene_refuses_a_huge_file(tmp_path, monkeypatch):
    import contactkit.scene as scene_module

    path = tmp_path / "big.json"
    path.write_text(peg_in_hole().to_json())
    monkeypatch.setattr(scene_module, "MAX_SCENE_FILE_BYTES", 100)
    with pytest.raises(InvalidInputError, match="exceeds the 100-byte limit"):
        load_scene(path)


def plate_with_a_through_hole(hole_apothem: float, outer_apothem: float, height: float) -> Part:
    """A square plate on z = 0 .. height with a square hole through it (closed outward surface, no pieces)."""
    from contactkit.geometry.prism import polygon, side_faces

    hole, outer = polygon("square", hole_apothem), polygon("square", outer_apothem)
    ob, ot, it, ib = (np.arange(4) + 4 * i for i in range(4))
    v = np.concatenate([np.column_stack([p, np.full(4, z)]) for p, z in
                        ((outer, 0.0), (outer, height), (hole, height), (hole, 0.0))])
    f = np.concatenate([side_faces(ob, ot), side_faces(ot, it), side_faces(ib, it)[:, [0, 2, 1]], side_faces(ib, ob)])
    return Part("plate", v, f.astype(np.int64), ())


def test_a_hole_through_the_part_ends_on_the_table(tmp_path):
    from contactkit.geometry import decompose, probe_hole
    from contactkit.geometry.validate import check_solid

    plate = plate_with_a_through_hole(0.012, 0.03, 0.02)
    check_solid(plate.vertices, plate.faces, "plate")  # a closed, outward solid
    facts = probe_hole(plate)
    assert facts.through and facts.floor_z == 0.0 and facts.depth == pytest.approx(0.02)
    assert facts.inradius == pytest.approx(0.012, rel=1e-6)
    decomposed, _ = decompose(plate, cache_dir=tmp_path)
    scene = mesh_peg_in_hole(peg("square", 0.01, 0.06), moved(decomposed, (0.0, 0.0, 0.5)))
    assert scene.target_pos[2] == pytest.approx(0.0, abs=1e-12) and scene.meta["through_hole"]
    assert scene.meta["slot_top_z"] == pytest.approx(0.02)
