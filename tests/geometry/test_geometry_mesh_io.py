"""load_mesh on the bad-input catalog (copied from shared/badinputs/meshes) and on well-formed files."""

from pathlib import Path

import numpy as np
import pytest
import trimesh

from contactkit.errors import GeometryError
from contactkit.geometry import box, load_mesh, peg, read_obj, save_obj, validate_part, weld

MESHES = Path(__file__).resolve().parents[1] / "data" / "meshes"

BAD = {
    "nan_vertex.obj": "non-finite",
    "inf_vertex.obj": "non-finite",
    "open_box_not_watertight.obj": "not watertight",
    "flipped_winding.obj": "flipped winding",
    "coplanar_zero_volume.obj": "zero volume",
    "collinear.obj": "collinear",
    "bad_face_index.obj": "bad face index",
    "empty.obj": "empty",
    "duplicate_vertices.obj": "duplicate faces",
    "huge_coordinates.obj": "huge coordinates",
    "not_an_obj.obj": "not a text OBJ",
}


@pytest.mark.parametrize(("filename", "problem"), sorted(BAD.items()))
def test_bad_mesh_raises_geometry_error_naming_file_and_problem(filename, problem):
    with pytest.raises(GeometryError) as err:
        load_mesh(MESHES / filename)
    assert filename in str(err.value)
    assert problem in str(err.value)


def test_catalog_is_fully_covered():
    accepted = {"valid_cube_10mm.obj", "needle_aspect_1000.obj", "nonconvex_L.obj"}
    assert {p.name for p in MESHES.glob("*.obj")} == set(BAD) | accepted


def test_valid_cube_loads_with_its_hull_as_piece():
    part = load_mesh(MESHES / "valid_cube_10mm.obj")
    assert part.name == "valid_cube_10mm"
    assert validate_part(part) is part
    assert part.meta["volume"] == pytest.approx(1e-6, rel=1e-12)
    assert part.meta["convex"] and not part.meta["convex_pieces_missing"]
    (piece,) = part.pieces
    assert len(piece.vertices) == 8
    piece_volume = trimesh.Trimesh(piece.vertices, piece.faces, process=False).volume
    assert piece_volume == pytest.approx(1e-6, rel=1e-12)


def test_needle_is_a_valid_tiny_mesh():
    part = load_mesh(MESHES / "needle_aspect_1000.obj", require_convex=True)
    assert part.meta["volume"] == pytest.approx(1e-12, rel=1e-9)
    assert len(part.pieces) == 1


def test_nonconvex_mesh_loads_without_pieces_unless_convexity_required():
    part = load_mesh(MESHES / "nonconvex_L.obj", name="L")
    assert part.name == "L" and part.pieces == () and part.meta["convex_pieces_missing"]
    assert part.meta["volume"] == pytest.approx(3e-6, rel=1e-12)
    validate_part(part)
    with pytest.raises(GeometryError, match=r"nonconvex_L\.obj.*not convex"):
        load_mesh(MESHES / "nonconvex_L.obj", require_convex=True)


def test_open_mesh_loads_only_when_watertightness_is_waived():
    part = load_mesh(MESHES / "open_box_not_watertight.obj", require_watertight=False)
    assert part.pieces == () and not part.meta["watertight"]
    validate_part(part, need_volume=False)
    with pytest.raises(GeometryError, match="not watertight"):
        validate_part(part)
    with pytest.raises(GeometryError, match="not convex"):
        load_mesh(MESHES / "open_box_not_watertight.obj", require_watertight=False, require_convex=True)
    # waiving watertightness does not waive the other checks
    with pytest.raises(GeometryError, match="non-finite"):
        load_mesh(MESHES / "nan_vertex.obj", require_watertight=False)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(GeometryError, match="nowhere.obj.*cannot be read"):
        load_mesh(tmp_path / "nowhere.obj")
    with pytest.raises(GeometryError, match="is a directory, expected a regular file"):
        load_mesh(tmp_path)


def test_save_and_read_obj_round_trip_exactly(tmp_path):
    part = peg("hexagon", 0.0123456789, 0.0456, chamfer=1e-3)
    path = save_obj(tmp_path / "peg.obj", part.vertices, part.faces, comment="hexagon peg")
    v, f = read_obj(path)
    np.testing.assert_array_equal(v, part.vertices)
    np.testing.assert_array_equal(f, part.faces)
    loaded = load_mesh(path)
    assert loaded.meta["convex"] and len(loaded.pieces) == 1
    volume = trimesh.Trimesh(part.vertices, part.faces, process=False).volume
    assert loaded.meta["volume"] == pytest.approx(volume, rel=1e-12)


def test_obj_syntax_quads_slashes_and_negative_indices(tmp_path):
    text = "\n".join([
        "# unit cube written with quads, v/vt/vn references and relative indices",
        "mtllib cube.mtl", "o cube",
        *[f"v {x} {y} {z}" for z in (0, 1) for y in (0, 1) for x in (0, 1)],
        "vn 0 0 1", "vt 0 0", "s off",
        "f 1/1/1 3/1/1 4/1/1 2/1/1", "f 5//1 6//1 8//1 7//1",
        "f -8 -7 -3 -4", "f 2 4 8 6", "f 4 3 7 8", "f 3 1 5 7",
    ])
    path = tmp_path / "cube.obj"
    path.write_text(text)
    part = load_mesh(path)
    assert part.faces.shape == (12, 3)
    assert part.meta["volume"] == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize(("line", "problem"), [
    ("f 1 2", "at least 3"), ("f 1 2 0", "bad face index"), ("f 1 2 -9", "bad face index"),
    ("f 1 2 x", "bad face index"), ("v 1 2", "3 coordinates"), ("v 1 2 abc", "not numbers"),
    ("vertex 1 2 3", "not an OBJ statement"),
])
def test_obj_syntax_errors_name_the_line(tmp_path, line, problem):
    path = tmp_path / "bad.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n" + line + "\n")
    with pytest.raises(GeometryError, match=rf"bad\.obj' line 5: .*{problem}"):
        read_obj(path)


def test_duplicate_vertices_are_merged_and_unused_dropped():
    b = box((1.0, 2.0, 3.0))
    # every face with its own three corners (as in STL), plus one vertex no face uses
    v = np.concatenate([b.vertices[b.faces].reshape(-1, 3), [[9.0, 9.0, 9.0]]])
    f = np.arange(36).reshape(12, 3)
    wv, wf, merged, unused = weld(v, f)
    assert (merged, unused) == (28, 1)
    np.testing.assert_array_equal(wv[wf], b.vertices[b.faces])
    assert len(wv) == 8


@pytest.mark.parametrize("fmt", ["stl", "ply", "off"])
def test_other_formats_through_trimesh(tmp_path, fmt):
    part = peg("square", 0.01, 0.03)
    path = tmp_path / f"peg.{fmt}"
    trimesh.Trimesh(part.vertices, part.faces, process=False).export(path)
    loaded = load_mesh(path)
    assert loaded.meta["volume"] == pytest.approx((2 * 0.01) ** 2 * 0.03, rel=1e-6)
    assert len(loaded.pieces) == 1


def test_garbage_in_other_formats(tmp_path):
    data = (MESHES / "not_an_obj.obj").read_bytes()
    for fmt in ("stl", "ply", "off"):
        path = tmp_path / f"junk.{fmt}"
        path.write_bytes(data)
        with pytest.raises(GeometryError, match=rf"junk\.{fmt}"):
            load_mesh(path)


def test_mesh_sha256_follows_the_geometry_not_the_file():
    """The same mesh gives the same hash; a one-ulp move of one vertex or a swapped face changes it."""
    from contactkit.geometry import box, mesh_sha256

    part = box((0.1, 0.2, 0.3))
    h = mesh_sha256(part.vertices, part.faces)
    assert h == mesh_sha256(part.vertices.copy(order="F"), part.faces.astype(np.int32))
    moved = part.vertices.copy()
    moved[0, 0] = np.nextafter(moved[0, 0], np.inf)
    assert mesh_sha256(moved, part.faces) != h
    assert mesh_sha256(part.vertices, part.faces[::-1]) != h


@pytest.mark.parametrize(("line", "problem"), [("hello world 1 2", "not an OBJ statement"),
                                               ("f 1 2", "at least 3"), ("f 1 2 0", "bad face index")])
def test_strict_obj_reader_refuses_what_trimesh_silently_takes(tmp_path, line, problem):
    """Why OBJ keeps its own reader (module docstring): trimesh 5.2 loads each of these without an error."""
    import io

    tet = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
    text = tet + line + "\n"
    trimesh.load_mesh(io.BytesIO(text.encode()), file_type="obj", process=False)  # no exception
    path = tmp_path / "tet.obj"
    path.write_text(text)
    with pytest.raises(GeometryError, match=rf"tet\.obj' line 9: .*{problem}"):
        load_mesh(path)


def _two_boxes(shift):
    a, b = box((0.02, 0.02, 0.02)), box((0.02, 0.02, 0.02))
    return np.concatenate([a.vertices, b.vertices + shift]), np.concatenate([a.faces, b.faces + 8])


def _corner_pushed_through():
    """A 20 mm cube whose (+,+,+) corner is pulled down through its bottom face to (10, 10, -15) mm: every edge is
    still shared by two faces with opposite directions and the signed volume stays positive."""
    b = box((0.02, 0.02, 0.02))
    v = b.vertices.copy()
    k = int(np.argmax(v.sum(axis=1)))
    v[k] = [0.01, 0.01, -0.015]
    return v, b.faces


SELF_INTERSECTING = {
    "boxes": lambda: _two_boxes([0.01, 0.005, 0.003]),  # overlapping volumes
    "glued": lambda: _two_boxes([0.02, 0.005, 0.003]),  # face to face: coplanar faces overlap, no vertex shared
    "corner": _corner_pushed_through,
}


@pytest.mark.parametrize(("fmt", "mesh"), [("obj", "boxes"), ("stl", "boxes"), ("obj", "corner"), ("obj", "glued")])
def test_self_intersecting_mesh_is_refused(tmp_path, fmt, mesh):
    from contactkit.geometry.validate import check_solid

    v, f = SELF_INTERSECTING[mesh]()
    check_solid(v, f, "mesh")  # closed, outward, non-degenerate: only the new check can tell
    path = tmp_path / f"bad.{fmt}"
    if fmt == "obj":
        save_obj(path, v, f)
    else:
        trimesh.Trimesh(v, f, process=False).export(path)
    with pytest.raises(GeometryError, match=rf"bad\.{fmt}.*self-intersecting: faces \d+ and \d+ intersect"):
        load_mesh(path)


def test_touching_but_separate_solids_are_not_self_intersecting(tmp_path):
    """Two boxes 1 µm apart, a cube with a corner dented inwards (and a slot, a circular peg, random convex hulls)
    pass."""
    from scipy.spatial import ConvexHull

    from contactkit.geometry import slot
    from contactkit.geometry.validate import check_self_intersections, hull_piece

    v, f = _two_boxes([0.020001, 0.0, 0.0])
    load_mesh(save_obj(tmp_path / "apart.obj", v, f))
    v, f = _corner_pushed_through()
    v[np.argmin(v[:, 2])] = [-0.005, -0.005, -0.005]
    load_mesh(save_obj(tmp_path / "dented.obj", v, f))
    for part in (slot("circle", 0.01, 1e-4, 0.02), peg("circle", 0.01, 0.03)):
        check_self_intersections(part.vertices, part.faces, part.name)
    rng = np.random.default_rng(0)
    for _ in range(20):
        piece = hull_piece(rng.normal(size=(40, 3)))
        assert len(ConvexHull(piece.vertices).simplices) == len(piece.faces)
        check_self_intersections(piece.vertices, piece.faces, "hull")


@pytest.mark.parametrize(("c", "d", "crosses"), [
    ((1, 0, -1), (1, 0, 1), True), ((-1, 0, -1), (-1, 0, 1), False),  # across each other's planes
    ((2, -0.5, 0), (2, 0.5, 0), True), ((-1, 1, 0), (-1, -1, 0), False),  # in one plane
])
def test_faces_sharing_a_vertex_cross_only_beyond_it(c, d, crosses):
    from contactkit.geometry.validate import check_self_intersections

    v = np.array([[0, 0, 0], [1, -1, 0], [1, 1, 0], c, d], dtype=float)
    f = np.array([[0, 1, 2], [0, 3, 4]])
    if crosses:
        with pytest.raises(GeometryError, match="faces 0 and 1 intersect"):
            check_self_intersections(v, f, "pair")
    else:
        check_self_intersections(v, f, "pair")


@pytest.mark.parametrize(("apex", "folded"), [((0.5, 1.0, 0.0), True), ((0.5, -1.0, 0.0), False)])
def test_faces_sharing_an_edge_cross_only_when_folded_flat(apex, folded):
    from contactkit.geometry.validate import check_self_intersections

    v = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], apex], dtype=float)
    f = np.array([[0, 1, 2], [1, 0, 3]])  # opposite normals when the apex is on the same side
    if folded:
        with pytest.raises(GeometryError, match="self-intersecting"):
            check_self_intersections(v, f, "pair")
    else:
        check_self_intersections(v, f, "pair")


@pytest.mark.parametrize("fmt", ["stl", "ply", "off"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_coordinates_in_other_formats_are_refused(tmp_path, fmt, bad):
    """trimesh reads NaN and Inf through; the loader refuses them: an error, never a part."""
    part = box((0.01, 0.01, 0.01))
    v = part.vertices.copy()
    v[3, 2] = bad
    path = tmp_path / f"bad.{fmt}"
    with np.errstate(invalid="ignore"):  # trimesh's STL writer computes normals
        trimesh.Trimesh(v, part.faces, process=False).export(path)
    with pytest.raises(GeometryError, match=rf"bad\.{fmt}.*non-finite"):
        load_mesh(path)
