"""Scene: frozen, JSON round trip, clear errors on bad input."""

import json

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.scene import Scene, Tool
from contactkit.tasks import peg_in_hole, random_training_scene


def test_json_round_trip_is_exact():
    scene = peg_in_hole("pentagon", 3e-4, chamfer=0.001)
    back = Scene.from_json(scene.to_json())
    assert back.to_dict() == scene.to_dict()
    assert np.array_equal(back.tool.part.vertices, scene.tool.part.vertices)
    assert back.statics[1].part.meta["clearance"] == 3e-4


def test_random_scenes_are_reproducible_and_varied():
    a = random_training_scene(np.random.default_rng(5))
    b = random_training_scene(np.random.default_rng(5))
    assert a.to_json() == b.to_json()
    counts = {len(random_training_scene(np.random.default_rng(s)).statics) - 1 for s in range(20)}
    assert counts <= {3, 4, 5, 6} and len(counts) > 1
    shapes = {random_training_scene(np.random.default_rng(s)).meta["shape"] for s in range(20)}
    assert shapes == {"triangle", "square", "hexagon"}


def test_scene_is_frozen():
    scene = peg_in_hole()
    with pytest.raises(AttributeError):
        scene.name = "x"


@pytest.mark.parametrize("mass", [0.0, -1.0, float("nan")])
def test_bad_mass_is_refused(mass):
    part = peg_in_hole().tool.part
    with pytest.raises(InvalidInputError, match="mass"):
        Tool(part, mass, np.zeros(3), np.eye(3) * 1e-5)


def test_bad_inertia_and_quaternion_are_refused():
    part = peg_in_hole().tool.part
    with pytest.raises(InvalidInputError, match="inertia"):
        Tool(part, 0.3, np.zeros(3), -np.eye(3))
    with pytest.raises(InvalidInputError, match="unit quaternion"):
        Tool(part, 0.3, np.zeros(3), np.eye(3) * 1e-5, init_quat=(1.0, 1.0, 0.0, 0.0))


def test_unknown_shape_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="octagon"):
        peg_in_hole("octagon")


def test_truncated_scene_json_names_the_missing_key():
    d = json.loads(peg_in_hole().to_json())
    del d["tool"]["mass"]
    with pytest.raises(InvalidInputError, match="mass"):
        Scene.from_dict(d)
    with pytest.raises(InvalidInputError, match="malformed"):
        Scene.from_json("{not json")
