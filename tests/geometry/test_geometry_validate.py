"""validate_part: accepts the parametric parts, refuses malformed surfaces and pieces by name."""

import dataclasses
import json

import numpy as np
import pytest

from contactkit.errors import GeometryError
from contactkit.geometry import (
    ConvexPiece,
    Part,
    box,
    hull_piece,
    is_convex,
    matching_slot,
    peg,
    signed_volume,
    slot,
    validate_part,
)

CUBE = box((0.01, 0.01, 0.01), name="cube")


@pytest.mark.parametrize("part", [
    CUBE, peg("triangle", 0.01, 0.05, chamfer=1e-3), slot("circle", 0.01, 6.5e-5, 0.03),
    matching_slot(peg("circle", 0.01, 0.05), 1e-3, 0.03, slot_shape="square"),
], ids=lambda p: p.name)
def test_parametric_parts_are_valid(part):
    assert validate_part(part) is part
    for piece in part.pieces:
        assert is_convex(piece.vertices, piece.faces)


def test_parts_survive_a_json_round_trip():
    for part in (peg("hexagon", 0.01, 0.05, name="hex peg"), slot("pentagon", 0.01, 1e-3, 0.02)):
        back = Part.from_dict(json.loads(json.dumps(part.to_dict())))
        validate_part(back)
        assert back.name == part.name and back.meta == part.meta and len(back.pieces) == len(part.pieces)
        np.testing.assert_array_equal(back.vertices, part.vertices)
        np.testing.assert_array_equal(back.faces, part.faces)


def with_vertices(part, v):
    return dataclasses.replace(part, vertices=np.asarray(v, dtype=np.float64))


@pytest.mark.parametrize(("mutate", "problem"), [
    (lambda p: with_vertices(p, np.where(np.arange(8)[:, None] == 3, np.nan, p.vertices)), "non-finite"),
    (lambda p: with_vertices(p, p.vertices + 5e3), "huge coordinates"),
    (lambda p: dataclasses.replace(p, faces=np.where(p.faces == 7, 8, p.faces)), "bad face index"),
    (lambda p: dataclasses.replace(p, faces=p.faces[:, ::-1]), "flipped winding"),
    (lambda p: dataclasses.replace(p, faces=p.faces[:-1]), "not watertight"),
    (lambda p: dataclasses.replace(p, faces=np.concatenate([p.faces, p.faces[:1]])), "duplicate faces"),
    (lambda p: dataclasses.replace(p, faces=p.faces.astype(np.float64)), "integers"),
    (lambda p: dataclasses.replace(p, faces=np.zeros((0, 3), dtype=np.int64)), "empty"),
    (lambda p: with_vertices(p, np.concatenate([p.vertices, [[0.0, 0.0, 0.0]]])), "used by no face"),
    (lambda p: with_vertices(p, p.vertices * [1.0, 1.0, 0.0]), "coplanar"),
    (lambda p: dataclasses.replace(p, faces=np.concatenate([p.faces[:1, [0, 0, 1]], p.faces[1:]])),
     "repeated"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_malformed_surface_is_refused_by_name(mutate, problem):
    with pytest.raises(GeometryError, match=f"part 'cube'.*{problem}"):
        validate_part(mutate(CUBE))


def test_inconsistent_winding_is_named():
    faces = CUBE.faces.copy()
    faces[0] = faces[0, ::-1]  # one face flipped: its edges now run the same way as their neighbours'
    with pytest.raises(GeometryError, match="inconsistent winding"):
        validate_part(dataclasses.replace(CUBE, faces=faces))


def test_bad_pieces_are_refused_with_their_index():
    s = slot("square", 0.01, 1e-3, 0.02, name="sq")
    flipped = ConvexPiece(s.pieces[2].vertices, s.pieces[2].faces[:, ::-1])
    with pytest.raises(GeometryError, match="part 'sq' piece 2: flipped winding"):
        validate_part(dataclasses.replace(s, pieces=(*s.pieces[:2], flipped, *s.pieces[3:])))
    cup = ConvexPiece(s.vertices, s.faces)  # the whole cup: closed and outward, but not convex
    with pytest.raises(GeometryError, match="part 'sq' piece 0: not convex"):
        validate_part(dataclasses.replace(s, pieces=(cup,)))
    with pytest.raises(GeometryError, match="expected a ConvexPiece"):
        validate_part(dataclasses.replace(s, pieces=("piece",)))
    with pytest.raises(GeometryError, match="expected a Part"):
        validate_part("sq")


def test_hull_piece_of_the_cup_is_its_outer_prism():
    s = slot("hexagon", 0.01, 1e-3, 0.02, wall=0.01, floor=0.005)
    piece = hull_piece(s.vertices)
    assert validate_part(Part("hull", piece.vertices, piece.faces, (piece,))).name == "hull"
    n, a = 6, s.meta["outer_apothem"]
    expected = n * a**2 * np.tan(np.pi / n) * (0.02 + 0.005)
    assert signed_volume(piece.vertices, piece.faces) == pytest.approx(expected, rel=1e-12)
    assert len(piece.vertices) == 12  # the outer corners only
    with pytest.raises(GeometryError, match="convex hull failed"):
        hull_piece(np.zeros((4, 3)), "flat")
