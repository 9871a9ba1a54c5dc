"""``piece_deviation``: how far convex pieces stick out of a mesh or leave it uncovered, against boxes whose answer
is known exactly (issue 34, part 4)."""

import dataclasses

import numpy as np
import pytest

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry import box, hull_piece
from contactkit.geometry.decomposition_error import piece_deviation

CUBE = 0.01


def _with_piece(lo, hi):
    """A 10 mm cube whose one piece is the box [lo, hi] [m]."""
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    return dataclasses.replace(box((CUBE, CUBE, CUBE)), pieces=(hull_piece(corners),))


def test_a_piece_grown_on_one_side_protrudes_by_the_growth():
    h = CUBE / 2
    part = _with_piece((-h, -h, -h), (h + 1e-3, h, h))
    protrusion, uncovered = piece_deviation(part, np.random.default_rng(0), 2000)
    assert protrusion == pytest.approx(1e-3, abs=1e-12)  # the piece's vertices are exact
    assert uncovered == pytest.approx(0.0, abs=1e-12)


def test_a_piece_cut_short_leaves_the_mesh_uncovered_by_the_cut():
    h = CUBE / 2
    part = _with_piece((-h, -h, -h), (h - 1e-3, h, h))
    protrusion, uncovered = piece_deviation(part, np.random.default_rng(0), 2000)
    assert protrusion == pytest.approx(0.0, abs=1e-12)
    assert uncovered == pytest.approx(1e-3, abs=1e-12)  # the mesh's +x corners lie 1 mm from the piece


def test_an_exact_piece_deviates_by_nothing_and_bad_input_is_refused():
    part = box((CUBE, CUBE, CUBE))
    assert max(piece_deviation(part, np.random.default_rng(0), 2000)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(GeometryError, match="no convex pieces"):
        piece_deviation(dataclasses.replace(part, pieces=()), np.random.default_rng(0))
    with pytest.raises(InvalidInputError, match="Generator"):
        piece_deviation(part, 0)
