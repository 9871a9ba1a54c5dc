"""Depth-network files: round trip, mesh hash, and every malformed or foreign file refused by name."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

from contactkit.depth import load_depth_net, query, save_depth_net
from contactkit.depth.checkpoint import FORMAT, FORMAT_VERSION, WEIGHT_NAMES
from contactkit.errors import CheckpointError
from contactkit.geometry import box

DATA = Path(__file__).resolve().parents[1] / "data"
BAD_FILES = ("code_running.pt", "header_length_lies.safetensors", "huge_shape_header.safetensors",
             "random_bytes.safetensors", "truncated_payload.safetensors", "random_bytes.h5", "zero_bytes.h5",
             "truncated.h5", "unrelated_valid.h5", "log_ok.csv")


def test_round_trip_keeps_everything(cube, cube_net, tmp_path):
    path = save_depth_net(cube_net, tmp_path / "sub" / "cube.safetensors")
    back = load_depth_net(path, cube)
    for a, b in zip(cube_net.weights, back.weights, strict=True):
        np.testing.assert_array_equal(a, b)
    for name in ("origin", "axis", "ref", "feature_lo", "feature_hi"):
        np.testing.assert_array_equal(getattr(back, name), getattr(cube_net, name))
    assert (back.part_name, back.mesh_sha256, back.coordinates, back.depth_scale, back.meta) == (
        cube_net.part_name, cube_net.mesh_sha256, cube_net.coordinates, cube_net.depth_scale, cube_net.meta)
    p = np.random.default_rng(0).uniform(-0.012, 0.012, (50, 3))
    np.testing.assert_array_equal(query(back, p)[0], query(cube_net, p)[0])
    assert [f.name for f in path.parent.iterdir()] == ["cube.safetensors"]  # no temporary file left


def test_another_mesh_is_refused(cube_net, tmp_path):
    path = save_depth_net(cube_net, tmp_path / "cube.safetensors")
    with pytest.raises(CheckpointError, match=r"cube\.safetensors.*trained on mesh"):
        load_depth_net(path, box((0.02, 0.02, 0.0201)))


@pytest.mark.parametrize("name", BAD_FILES)
def test_bad_input_catalog_is_refused_by_name(name):
    with pytest.raises(CheckpointError, match=name.replace(".", r"\.")):
        load_depth_net(DATA / "files" / name)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_depth_net(tmp_path / "none.safetensors")


def _write(path, tensors, desc, fmt=FORMAT, version=FORMAT_VERSION):
    meta = {"format": fmt, "format_version": version}
    if desc is not None:
        meta["depth_net"] = json.dumps(desc)
    path.write_bytes(safetensors.numpy.save(tensors, metadata=meta))
    return path


def _parts(net):
    tensors = dict(zip(WEIGHT_NAMES, net.weights, strict=True))
    path_desc = {"part_name": net.part_name, "mesh_sha256": net.mesh_sha256, "coordinates": net.coordinates.value,
                 "origin": net.origin.tolist(), "axis": net.axis.tolist(), "ref": net.ref.tolist(),
                 "pitch": net.pitch, "handedness": net.handedness, "feature_lo": net.feature_lo.tolist(),
                 "feature_hi": net.feature_hi.tolist(), "depth_scale": net.depth_scale, "meta": net.meta}
    return tensors, path_desc


def test_foreign_and_malformed_networks_are_refused(cube_net, tmp_path):
    tensors, desc = _parts(cube_net)
    assert load_depth_net(_write(tmp_path / "ok.safetensors", tensors, desc)).part_name == cube_net.part_name
    cases = {
        "foreign": (tensors, desc, "contactkit.gnn", FORMAT_VERSION, "not a contactkit depth network"),
        "version": (tensors, desc, FORMAT, "99", "format version"),
        "no_desc": (tensors, None, FORMAT, FORMAT_VERSION, "malformed"),
        "shape": ({**tensors, "W1": np.zeros((64, 63))}, desc, FORMAT, FORMAT_VERSION, "W1"),
        "nan": ({**tensors, "b0": np.full(64, np.nan)}, desc, FORMAT, FORMAT_VERSION, "b0"),
        "missing": ({k: v for k, v in tensors.items() if k != "b2"}, desc, FORMAT, FORMAT_VERSION, "tensors"),
        "coords": (tensors, {**desc, "coordinates": "cylindrical"}, FORMAT, FORMAT_VERSION, "W0"),
        "domain": (tensors, {**desc, "feature_hi": desc["feature_lo"]}, FORMAT, FORMAT_VERSION, "hi > lo"),
        "scale": (tensors, {**desc, "depth_scale": -1.0}, FORMAT, FORMAT_VERSION, "depth_scale"),
        "axis": (tensors, {**desc, "axis": [0, 0, 2]}, FORMAT, FORMAT_VERSION, "unit"),
        "hash": (tensors, {**desc, "mesh_sha256": "abc"}, FORMAT, FORMAT_VERSION, "sha256"),
    }
    for name, (t, d, fmt, ver, msg) in cases.items():
        path = _write(tmp_path / f"{name}.safetensors", t, d, fmt, ver)
        with pytest.raises(CheckpointError, match=rf"{name}\.safetensors.*{msg}"):
            load_depth_net(path)


def test_truncated_own_file_is_refused(cube_net, tmp_path):
    path = save_depth_net(cube_net, tmp_path / "cut.safetensors")
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match="truncated"):
        load_depth_net(path)


def test_save_overwrites_atomically(cube_net, tmp_path):
    path = tmp_path / "n.safetensors"
    save_depth_net(dataclasses.replace(cube_net, meta={"v": 1}), path)
    save_depth_net(dataclasses.replace(cube_net, meta={"v": 2}), path)
    assert load_depth_net(path).meta == {"v": 2}
