"""ImpedanceGains (issue 31 part 3): the TCP offset and the damping values, typed and bounded, in the scene JSON."""

import dataclasses
import json

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.gains import ImpedanceGains
from contactkit.scene import Scene
from contactkit.tasks import peg_in_hole

NEW_KEYS = {"tcp_offset", "damping_pos", "damping_rot"}


def test_a_default_controller_writes_the_json_it_always_wrote_and_an_old_json_loads():
    scene = peg_in_hole()
    controller = scene.to_dict()["controller"]
    assert not NEW_KEYS & set(controller)  # stored scenes and the scene keys of datasets are unchanged
    old = Scene.from_json(scene.to_json())
    assert old.controller.has_tcp is False and old.controller.damping_pos is None


def test_tcp_offset_and_damping_values_round_trip_through_the_scene_json():
    gains = ImpedanceGains(tcp_offset=[0.0, 0.01, 0.12], damping_pos=[30.0, 30.0, 40.0], damping_rot=[0.5, 0.5, 0.2])
    scene = peg_in_hole(controller=gains)
    back = Scene.from_json(scene.to_json()).controller
    assert back.tcp_offset.tolist() == [0.0, 0.01, 0.12] and back.has_tcp
    assert back.damping_pos.tolist() == [30.0, 30.0, 40.0] and back.damping_rot.tolist() == [0.5, 0.5, 0.2]
    assert Scene.from_json(scene.to_json()).to_json() == scene.to_json()


def test_calibration_reaches_the_new_fields_with_dataclasses_replace():
    scene = peg_in_hole()
    moved = dataclasses.replace(scene, controller=dataclasses.replace(
        scene.controller, tcp_offset=np.array([0.0, 0.0, 0.05]), damping_pos=np.full(3, 20.0),
        damping_rot=np.full(3, 0.1)))
    assert moved.controller.tcp_offset[2] == 0.05 and moved.controller.damping_pos[0] == 20.0
    with pytest.raises(InvalidInputError, match="exclusive"):  # replace validates like the constructor
        dataclasses.replace(moved.controller, damping_ratio=0.5)


@pytest.mark.parametrize("fields, message", [
    ({"tcp_offset": [0.0, 0.0, 3.0]}, r"controller.tcp_offset .* beyond 2 m"),
    ({"tcp_offset": [0.0, float("nan"), 0.0]}, r"controller.tcp_offset contains NaN"),
    ({"tcp_offset": [0.0, 0.1]}, r"controller.tcp_offset must have 3 values"),
    ({"tcp_offset": "0,0,0.1"}, r"controller.tcp_offset must be numbers"),
    ({"damping_pos": [1.0, 1.0, 1.0]}, r"damping_pos is given without controller.damping_rot"),
    ({"damping_rot": [1.0, 1.0, 1.0]}, r"damping_rot is given without controller.damping_pos"),
    ({"damping_pos": [1.0] * 3, "damping_rot": [1.0] * 3, "damping_ratio": 0.7}, r"exclusive"),
    ({"damping_pos": [1.0, -1.0, 1.0], "damping_rot": [1.0] * 3}, r"controller.damping_pos must be >= 0"),
    ({"damping_pos": [1.0] * 3, "damping_rot": [True] * 3}, r"controller.damping_rot must be numbers"),
])
def test_bad_controller_fields_are_refused_by_name(fields, message):
    with pytest.raises(InvalidInputError, match=message):
        ImpedanceGains(**fields)


def test_a_scene_json_with_a_bad_or_unknown_controller_key_is_one_clear_error():
    d = json.loads(peg_in_hole().to_json())
    d["controller"]["tcp_ofset"] = [0.0, 0.0, 0.1]
    with pytest.raises(InvalidInputError, match=r"controller has unknown key\(s\) \['tcp_ofset'\]"):
        Scene.from_dict(d)
    d["controller"].pop("tcp_ofset")
    d["controller"]["damping_pos"] = [10.0, 10.0, 10.0]
    with pytest.raises(InvalidInputError, match="without controller.damping_rot"):
        Scene.from_dict(d)
