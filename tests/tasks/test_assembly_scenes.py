"""The tight-tolerance paper's parts as Scenes (issue 17, part 6): pieces, depth networks, masses against closed
forms of the geometry, engaged and collision-free starts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.geometry import signed_distance
from contactkit.geometry.fasteners import GENERALISATION_PAIRS
from contactkit.rotations import quat_to_mat
from contactkit.scene import Scene
from contactkit.tasks.assembly_scenes import (
    ALUMINIUM_DENSITY,
    STEEL_DENSITY,
    BoltPieces,
    bolting_scene,
    tight_peg_scene,
)

MASS_RTOL = 1e-9
"""The peg's mass against its closed-form volume (the mesh is exact: a chamfered regular polygon prism)."""


@pytest.fixture(scope="module")
def peg() -> Scene:
    return tight_peg_scene()


@pytest.fixture(scope="module")
def nut_on_bolt() -> Scene:
    return bolting_scene()  # CoACD of the nut: memoised in the process (~6 s once)


def _tool_nodes_world(scene: Scene) -> np.ndarray:
    t = scene.tool
    return t.part.vertices @ quat_to_mat(t.init_quat).T + t.init_pos


def test_peg_scene_has_pieces_network_and_the_mass_of_its_volume(peg):
    tool, (hole,) = peg.tool, peg.statics
    assert tool.part.pieces and len(hole.part.pieces) == hole.part.meta["circle_segments"] + 1
    assert hole.depth_model.endswith("models/depth-paper-hole/hole.safetensors")
    m = tool.part.meta
    n, a, c, length = m["circle_segments"], m["radius"], m["chamfer"], m["length"]

    def area(apothem):  # regular n-gon of this apothem
        return n * apothem**2 * math.tan(math.pi / n)

    lo, hi = area(a - c), area(a)
    volume = hi * (length - c) + c / 3.0 * (lo + hi + math.sqrt(lo * hi))
    assert tool.mass == pytest.approx(ALUMINIUM_DENSITY * volume, rel=MASS_RTOL)
    assert np.allclose(tool.sensor_pos, 0.0)


def test_peg_starts_engaged_centred_and_clear_of_the_hole(peg):
    hole = peg.statics[0].part
    depth, clearance = hole.meta["depth"], peg.meta["clearance"]
    assert clearance == pytest.approx(32.5e-6)
    assert 0.0 < depth - peg.tool.init_pos[2] < depth  # the tip is below the opening, above the floor
    d = signed_distance(hole, _tool_nodes_world(peg))
    assert d.min() > 0.0  # touching nothing
    assert d.min() < clearance + 1e-6  # the side of the peg is in the bore, a clearance from the wall


def test_bolting_scene_pieces_network_mass_and_free_bore(nut_on_bolt):
    tool, (bolt,) = nut_on_bolt.tool, nut_on_bolt.statics
    nut = tool.part
    assert len(nut.pieces) >= 4 and len(bolt.part.pieces) == 1
    assert bolt.depth_model.endswith("models/depth-m48-bolt/pieces/bolt.json")
    m = nut.meta
    hexagon = math.sqrt(3.0) / 2.0 * m["across_flats"] ** 2
    heavy = STEEL_DENSITY * m["thickness"] * (hexagon - math.pi * m["minor_radius"] ** 2)
    light = STEEL_DENSITY * m["thickness"] * (hexagon - math.pi * m["major_radius"] ** 2)
    assert light < tool.mass < heavy  # the bore lies between the thread's crest and root cylinders
    radii = np.concatenate([np.hypot(p.vertices[:, 0], p.vertices[:, 1]) for p in nut.pieces])
    assert radii.min() > bolt.part.meta["minor_radius"]  # the bolt's core passes the nut's pieces
    core = bolt.part.pieces[0].vertices
    assert np.hypot(core[:, 0], core[:, 1]).max() < bolt.part.meta["minor_radius"]
    assert np.allclose(tool.sensor_pos, 0.0)


def test_nut_starts_screwed_on_by_one_pitch_in_the_play(nut_on_bolt):
    s = nut_on_bolt
    bolt = s.statics[0].part
    pitch, play = s.meta["pitch"], s.meta["play"]
    assert s.tool.init_pos[2] == pytest.approx(bolt.meta["length"] - pitch, abs=1e-12)
    d = signed_distance(bolt, _tool_nodes_world(s))
    assert d.min() > play / 4.0 - 2.0 * bolt.meta["sagitta"]  # the flank gap, less the faceting of both meshes
    assert d.min() < play / 2.0  # engaged: the threads interleave
    assert np.count_nonzero(d < play / 2.0) > 100


def test_scene_round_trips_through_json(nut_on_bolt):
    back = Scene.from_json(nut_on_bolt.to_json())
    assert back.statics[0].depth_model == nut_on_bolt.statics[0].depth_model
    assert len(back.tool.part.pieces) == len(nut_on_bolt.tool.part.pieces)
    assert back.meta == nut_on_bolt.meta


def test_table_ii_pair_without_a_network_names_how_to_train_one():
    spec = GENERALISATION_PAIRS[4]
    with pytest.raises(InvalidInputError, match="contactkit learn depth"):
        bolting_scene(spec.diameter, spec.pitch)


@pytest.mark.parametrize("kwargs", [{"diameter": 0.05, "pitch": 0.005}, {"bolt_pieces": "voxels"},
                                    {"engaged_turns": 0.1}])
def test_bad_bolting_arguments_are_refused(kwargs):
    with pytest.raises(InvalidInputError):
        bolting_scene(**kwargs)


def test_a_missing_network_file_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="not found"):
        tight_peg_scene(depth_model=tmp_path / "none.safetensors")
    with pytest.raises(InvalidInputError, match="not found"):
        bolting_scene(depth_model=tmp_path / "none.safetensors", bolt_pieces=BoltPieces.EXACT)
