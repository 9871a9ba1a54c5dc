"""Piecewise depth networks (:class:`contactkit.depth.DepthNetSet`) and their manifests
(:mod:`contactkit.depth.netset`): each point is answered by the piece whose axial window holds it, exactly as that
piece alone answers it; manifests round-trip and refuse what does not match."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from contactkit.depth import (
    DepthNet,
    DepthNetSet,
    depth_net_files,
    detect,
    load_depth_nets,
    query,
    save_depth_net,
    save_depth_net_set,
)
from contactkit.depth.coordinates import Coordinates
from contactkit.errors import CheckpointError, InvalidInputError

SHA = "ab" * 32


def piece(z_lo: float, z_hi: float, seed: int, coordinates: Coordinates = Coordinates.HELICAL,
          sha: str = SHA) -> DepthNet:
    """A random helical (or other) network on the axial window ``[z_lo, z_hi]`` [m] of one test part."""
    rng = np.random.default_rng(seed)
    k = {Coordinates.CARTESIAN: 3, Coordinates.CYLINDRICAL: 2, Coordinates.HELICAL: 4}[coordinates]
    lo = {Coordinates.CARTESIAN: [-0.03, -0.03, z_lo], Coordinates.CYLINDRICAL: [0.0, z_lo],
          Coordinates.HELICAL: [0.0, -1.0, -1.0, z_lo]}[coordinates]
    hi = {Coordinates.CARTESIAN: [0.03, 0.03, z_hi], Coordinates.CYLINDRICAL: [0.03, z_hi],
          Coordinates.HELICAL: [0.03, 1.0, 1.0, z_hi]}[coordinates]
    shapes = [(64, k), (64,), (64, 64), (64,), (1, 64), (1,)]
    fan = [k, k, 64, 64, 64, 64]
    weights = tuple(rng.normal(size=s) / math.sqrt(f) for s, f in zip(shapes, fan, strict=True))
    return DepthNet("test-part", sha, coordinates, np.zeros(3), np.array([0.0, 0.0, 1.0]),
                    np.array([1.0, 0.0, 0.0]), 0.005, 1, np.array(lo, float), np.array(hi, float), 2e-3, weights,
                    {"seed": seed})


def three() -> tuple[DepthNet, ...]:
    return piece(0.0, 0.01, 1), piece(0.01, 0.025, 2), piece(0.025, 0.03, 3)


def test_each_point_is_answered_by_the_piece_that_holds_it():
    pieces = three()
    net_set = DepthNetSet(pieces[::-1])  # any order: sorted along the axis
    assert [p.meta["seed"] for p in net_set.pieces] == [1, 2, 3]
    rng = np.random.default_rng(0)
    pts = np.column_stack([rng.uniform(-0.02, 0.02, 600), rng.uniform(-0.02, 0.02, 600),
                           rng.uniform(-0.005, 0.035, 600)])
    pts[:3, 2] = [0.01, 0.025, 0.03]  # on the shared ends and the top
    d, n = query(net_set, pts)
    z = pts[:, 2]
    owner = np.select([z < 0.0, z <= 0.01, z <= 0.025, z <= 0.03], [-1, 0, 1, 2], default=-1)
    for k, p in enumerate(pieces):
        mine = owner == k
        d_k, n_k = query(p, pts[mine])
        np.testing.assert_array_equal(d[mine], d_k)
        np.testing.assert_array_equal(n[mine], n_k)
    assert np.all(np.isinf(d[owner < 0])) and np.all(n[owner < 0] == 0.0)
    assert np.isfinite(d[:3]).all(), "points on a shared end or the top belong to a piece"


def test_detect_on_a_set_is_the_union_of_its_pieces():
    pieces = three()
    net_set = DepthNetSet(pieces)
    rng = np.random.default_rng(1)
    nodes = rng.uniform(-0.015, 0.015, size=(400, 3)) + [0.0, 0.0, 0.015]
    pose = (np.array([0.1, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]))
    found = detect(net_set, *pose, nodes, np.array([0.1, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]), 1e-3)
    parts = [detect(p, *pose, nodes, np.array([0.1, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]), 1e-3)
             for p in pieces]
    index = np.concatenate([c.node_index for c in parts])
    order = np.argsort(index)
    assert len(found.node_index) > 10
    np.testing.assert_array_equal(found.node_index, index[order])
    np.testing.assert_array_equal(found.depth, np.concatenate([c.depth for c in parts])[order])


@pytest.mark.parametrize("bad, message", [
    (lambda: (piece(0.0, 0.02, 1), piece(0.01, 0.03, 2)), "overlap"),
    (lambda: (piece(0.0, 0.01, 1), piece(0.01, 0.03, 2, sha="cd" * 32)), "do not make one set"),
    (lambda: (piece(0.0, 0.01, 1), dataclasses.replace(piece(0.01, 0.03, 2), pitch=0.004)), "frames"),
    (lambda: (piece(0.0, 0.01, 1, Coordinates.CARTESIAN), piece(0.01, 0.03, 2, Coordinates.CARTESIAN)),
     "cylindrical or helical"),
    (lambda: (), "at least one"),
])
def test_pieces_that_do_not_make_one_set_are_refused(bad, message):
    with pytest.raises(InvalidInputError, match=message):
        DepthNetSet(bad())


def _write(tmp_path, pieces) -> list:
    paths = []
    for k, p in enumerate(pieces):
        paths.append(save_depth_net(p, tmp_path / f"p{k}" / "part.safetensors"))
    return paths


def test_manifest_round_trip_and_the_files_it_names(tmp_path):
    paths = _write(tmp_path, three())
    manifest = save_depth_net_set(paths[::-1], tmp_path / "part.json")
    doc = json.loads(manifest.read_text())
    assert [e["path"] for e in doc["pieces"]] == ["p0/part.safetensors", "p1/part.safetensors", "p2/part.safetensors"]
    loaded = load_depth_nets(manifest)
    assert [p.meta["seed"] for p in loaded.pieces] == [1, 2, 3]
    pts = np.random.default_rng(2).uniform(-0.01, 0.03, size=(200, 3))
    np.testing.assert_array_equal(query(loaded, pts)[0], query(DepthNetSet(three()), pts)[0])
    assert depth_net_files(manifest) == [manifest, *(tmp_path / f"p{k}" / "part.safetensors" for k in range(3))]
    single = load_depth_nets(paths[0])  # one network file: a set of one piece, its meta as before
    assert len(single.pieces) == 1 and single.meta == {"seed": 1}


def test_manifest_refuses_a_changed_piece_an_escape_and_a_stranger(tmp_path):
    paths = _write(tmp_path / "set", three())
    manifest = save_depth_net_set(paths, tmp_path / "set" / "part.json")
    save_depth_net(piece(0.0, 0.01, 9), paths[0])  # retrained after the manifest was written
    with pytest.raises(CheckpointError, match="sha256"):
        load_depth_nets(manifest)
    doc = json.loads(manifest.read_text())
    doc["pieces"][0]["path"] = "../elsewhere.safetensors"
    manifest.write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match="outside"):
        load_depth_nets(manifest)
    with pytest.raises(InvalidInputError, match="outside"):
        save_depth_net_set([paths[1], _write(tmp_path / "other", [piece(0.025, 0.03, 3)])[0]],
                           tmp_path / "set" / "x.json")
    for text, message in [("{}", "format"), ('{"format": "contactkit.depth-set", "format_version": "1"}', "pieces"),
                          ("[" * 10_000, "not a JSON manifest"), ("x" * 70_000, "70000 bytes exceeds the 65536")]:
        manifest.write_text(text)
        with pytest.raises(CheckpointError, match=message):
            load_depth_nets(manifest)


def test_a_manifest_of_overlapping_pieces_is_refused_when_written(tmp_path):
    paths = _write(tmp_path, (piece(0.0, 0.02, 1), piece(0.01, 0.03, 2)))
    with pytest.raises(CheckpointError, match="overlap"):
        save_depth_net_set(paths, tmp_path / "part.json")


def test_a_manifest_for_another_part_is_refused(tmp_path):
    from contactkit.geometry import box

    manifest = save_depth_net_set(_write(tmp_path, three()), tmp_path / "part.json")
    with pytest.raises(CheckpointError, match="trained on mesh"):
        load_depth_nets(manifest, box((0.01, 0.01, 0.01)))


def test_an_axial_window_replaces_only_the_axial_bounds_and_refuses_what_it_cannot_be():
    from contactkit.cli.learn_depth import _pair
    from contactkit.depth.coordinates import make_frame
    from contactkit.depth.presets import axial_window
    from contactkit.depth.training import DepthSetup

    helical = DepthSetup(make_frame(Coordinates.HELICAL, pitch=0.005), np.array([0.02, -1.0, -1.0, 0.0]),
                         np.array([0.026, 1.0, 1.0, 0.063]), 0.01)
    window = axial_window(helical, (0.054, 0.063))
    np.testing.assert_array_equal(window.feature_lo, [0.02, -1.0, -1.0, 0.054])
    np.testing.assert_array_equal(window.feature_hi, helical.feature_hi)
    cartesian = DepthSetup(make_frame(Coordinates.CARTESIAN), np.zeros(3), np.ones(3), 0.01)
    with pytest.raises(InvalidInputError, match="cylindrical or helical"):
        axial_window(cartesian, (0.0, 0.01))
    for bad in ((0.01, 0.01), (0.0, float("nan"))):
        with pytest.raises(InvalidInputError, match="lo < hi"):
            axial_window(helical, bad)
    assert _pair("0.0,0.006", "--z-range") == (0.0, 0.006)
    with pytest.raises(InvalidInputError, match="--z-range takes LO,HI"):
        _pair("6mm", "--z-range")
