"""Convex decomposition (CoACD), its cache and its error report, on small meshes (each CoACD run < ~2 s)."""

import json
from pathlib import Path

import numpy as np
import pytest

from contactkit.errors import GeometryError, InvalidInputError
from contactkit.geometry import (
    DecompositionSettings,
    box,
    decompose,
    decomposition_errors,
    hull_piece,
    load_mesh,
    mesh_sha256,
    peg,
    slot,
    validate_part,
)

MESHES = Path(__file__).resolve().parents[1] / "data" / "meshes"
FAST = DecompositionSettings(resolution=500, n_samples=5000)
"""Low CoACD resolution and few report samples: keeps each run short."""


@pytest.fixture(scope="module")
def ell():
    """The catalog's L: a 20 x 20 x 10 mm block without its 10 x 10 mm corner (volume 3e-6 m^3)."""
    return load_mesh(MESHES / "nonconvex_L.obj", name="L")


@pytest.fixture(scope="module")
def ell_decomposed(ell):
    return decompose(ell, FAST)


def _inside_any(points, pieces, tol=1e-9):
    inside = np.zeros(len(points), dtype=bool)
    for p in pieces:
        v, f = p.vertices, p.faces
        n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        inside |= ((points @ n.T) - np.einsum("ij,ij->i", n, v[f[:, 0]]) <= tol).all(axis=1)
    return inside


def test_convex_part_is_its_hull_without_running_coacd(monkeypatch):
    import coacd

    monkeypatch.setattr(coacd, "run_coacd", lambda *a, **k: pytest.fail("CoACD ran on a convex part"))
    part = peg("hexagon", 0.01, 0.03)
    out, report = decompose(part, FAST)
    assert report.method == "convex-hull" and report.n_pieces == 1 and not report.cached
    assert report.volume_error < 1e-3 and report.hausdorff < 1e-9 and report.max_protrusion < 1e-9
    assert report.mesh_sha256 == mesh_sha256(part.vertices, part.faces)
    validate_part(out)


def test_nonconvex_L_is_covered_by_its_pieces_and_only_by_them(ell, ell_decomposed):
    out, report = ell_decomposed
    assert report.method == "coacd" and report.n_pieces == len(out.pieces) >= 2
    assert validate_part(out) is out and not out.meta["convex_pieces_missing"]
    assert out.meta["decomposition"]["n_pieces"] == report.n_pieces
    np.testing.assert_array_equal(out.vertices, ell.vertices)
    rng = np.random.default_rng(1)
    inner = rng.uniform([0.0005, 0.0005, 0.0005], [0.0195, 0.0095, 0.0095], (2000, 3))  # the L's long leg
    assert _inside_any(inner, out.pieces).all()
    notch = rng.uniform([0.0105, 0.0105, 0.0005], [0.0195, 0.0195, 0.0095], (2000, 3))  # the cut-away corner
    assert not _inside_any(notch, out.pieces).any()
    volume = sum(_volume(p) for p in out.pieces)  # CoACD cuts: disjoint pieces
    assert volume == pytest.approx(3e-6, rel=0.02)
    assert report.volume_error < 0.02 and report.hausdorff < 2e-4 and report.max_protrusion < 2e-4


def _volume(piece) -> float:
    v, f = piece.vertices, piece.faces
    return float(np.einsum("ij,ij->", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]])) / 6.0)


def test_error_report_of_the_L_by_its_convex_hull_matches_geometry(ell):
    """Oracle: the hull adds the notch's triangle (half of 1 cm^2 x 1 cm on 3 cm^3: volume error 1/6); its
    slanted face passes 5 mm from the L (at (15, 15) mm), and the notch's corner edge (10, 10) mm lies 7.07 mm
    inside the slanted face but 5 mm from the top and bottom faces at mid-height: both distances are 5 mm."""
    vol_err, hausdorff, protrusion = decomposition_errors(ell, (hull_piece(ell.vertices),),
                                                          np.random.default_rng(0), 20000)
    assert vol_err == pytest.approx(1 / 6, abs=0.02)
    assert protrusion == pytest.approx(0.005, abs=1e-4)
    assert 0.005 - 1e-4 <= hausdorff <= 0.005 + 5e-4  # sampled from below, the kd-tree bound from above


def test_exact_pieces_of_slot_have_no_error():
    part = slot("square", 0.01, 1e-3, 0.02)
    vol_err, hausdorff, protrusion = decomposition_errors(part, part.pieces, np.random.default_rng(0), 5000)
    assert vol_err < 1e-3 and hausdorff < 1e-8 and protrusion < 1e-9


def test_cache_hit_corrupt_and_foreign_entries(ell, ell_decomposed, tmp_path):
    out, report = decompose(ell, FAST, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.json")
    assert not report.cached and not list(tmp_path.glob("*.tmp"))
    again, hit = decompose(ell, FAST, cache_dir=tmp_path)
    assert hit.cached and hit.n_pieces == report.n_pieces and hit.hausdorff == report.hausdorff
    for a, b in zip(again.pieces, out.pieces, strict=True):
        np.testing.assert_array_equal(a.vertices, b.vertices)
    good = entry.read_text()
    d = json.loads(good)
    bad_piece = {"vertices": ell.vertices.tolist(), "faces": ell.faces.tolist()}  # the L itself: not convex
    far = [{"vertices": (np.asarray(p["vertices"]) + 1.0).tolist(), "faces": p["faces"]} for p in d["pieces"]]
    for corrupt in ("{not json", good[: len(good) // 2], json.dumps(d | {"mesh_sha256": "0" * 64}),
                    json.dumps(d | {"pieces": [bad_piece]}), json.dumps(d | {"pieces": []}), "[]",
                    json.dumps(d | {"pieces": far})):
        entry.write_text(corrupt)
        rebuilt, r = decompose(ell, FAST, cache_dir=tmp_path)
        assert not r.cached and r.n_pieces == report.n_pieces
        assert json.loads(entry.read_text())["mesh_sha256"] == report.mesh_sha256  # rewritten whole
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    assert decompose(ell, FAST, cache_dir=blocked)[1].n_pieces == report.n_pieces  # cannot cache: still decomposes
    other = DecompositionSettings(resolution=400, n_samples=5000)
    decompose(ell, other, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 2  # the settings are part of the key
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("kwargs", [{"threshold": 0.0}, {"threshold": 1.5}, {"threshold": "0.1"},
                                    {"resolution": 0}, {"resolution": 2.5}, {"preprocess": "sometimes"},
                                    {"max_convex_hull": 0}, {"seed": -1}, {"merge": 1}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(InvalidInputError, match=next(iter(kwargs))):
        DecompositionSettings(**kwargs)


def test_bad_parts_are_refused(ell):
    nan = ell.vertices.copy()
    nan[3, 1] = np.nan
    with pytest.raises(GeometryError, match="non-finite"):
        decompose(type(ell)("L", nan, ell.faces, ()), FAST)
    with pytest.raises(GeometryError, match="not watertight"):
        decompose(type(ell)("open", ell.vertices, ell.faces[:-1], ()), FAST)
    two = box((0.02, 0.02, 0.02))
    crossed = type(ell)("crossed", np.concatenate([two.vertices, two.vertices + 0.005]),
                        np.concatenate([two.faces, two.faces + 8]), ())
    with pytest.raises(GeometryError, match="'crossed': self-intersecting"):
        decompose(crossed, FAST)
    with pytest.raises(InvalidInputError, match="settings"):
        decompose(box((0.01, 0.01, 0.01)), {"threshold": 0.1})


def test_coacd_prints_nothing(ell, capfd):
    import coacd

    coacd.set_log_level("info")  # CoACD's default: a table of settings and progress on stdout
    decompose(ell, DecompositionSettings(resolution=500, n_samples=1000, seed=3))
    out, err = capfd.readouterr()
    assert out == "" and err == ""
