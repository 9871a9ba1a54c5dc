"""Scene: frozen, JSON round trip, clear errors on bad input."""

import dataclasses
import json
import math

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.scene import CommandLimits, Scene, Tool
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


@pytest.mark.parametrize("mass", [0.0, -1.0, float("nan"), 1e308, 1e-20])
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
    with pytest.raises(InvalidInputError, match="oval"):
        peg_in_hole("oval")
    with pytest.raises(InvalidInputError, match="2-gon"):
        peg_in_hole("2-gon")


def test_truncated_scene_json_names_the_missing_key():
    d = json.loads(peg_in_hole().to_json())
    del d["tool"]["mass"]
    with pytest.raises(InvalidInputError, match="mass"):
        Scene.from_dict(d)
    with pytest.raises(InvalidInputError, match="malformed"):
        Scene.from_json("{not json")


def test_command_limits_are_derived_from_the_tool_controller_and_workspace():
    scene = peg_in_hole("hexagon", 1e-3)
    limits, c = scene.limits, scene.controller
    assert scene.command_limits is None
    assert limits.force == pytest.approx(max(math.sqrt(3) * c.max_force, 10 * 9.81 * scene.tool.mass), rel=1e-15)
    reach = np.linalg.norm(scene.tool.part.vertices, axis=1).max()
    assert limits.torque == pytest.approx(max(math.sqrt(3) * c.max_torque, limits.force * reach), rel=1e-15)
    assert limits.pos_step == pytest.approx(np.linalg.norm(scene.workspace_hi - scene.workspace_lo), rel=1e-15)
    assert limits.rot_step == math.pi
    heavy = peg_in_hole("hexagon", 1e-3, tool_mass=5.0).limits  # 10 g on a 5 kg tool exceeds the controller's 69 N
    assert heavy.force == pytest.approx(10 * 9.81 * 5.0, rel=1e-12)


def test_command_limits_json_round_trip_and_old_json_loads_with_derived_limits():
    scene = peg_in_hole("hexagon", 1e-3)
    d = json.loads(scene.to_json())
    assert "command_limits" not in d  # derived limits are not written: a scene's JSON is unchanged by them
    explicit = dataclasses.replace(scene, command_limits=CommandLimits(10.0, 0.5, 0.01, 0.2))
    back = Scene.from_json(explicit.to_json())
    assert back.command_limits == CommandLimits(10.0, 0.5, 0.01, 0.2) and back.limits == back.command_limits
    assert back.to_dict() == explicit.to_dict()
    assert Scene.from_dict(d).limits == scene.limits


@pytest.mark.parametrize("bad", [{"force": 0.0}, {"torque": -1.0}, {"pos_step": float("nan")},
                                 {"rot_step": float("inf")}, {"force": "10"}])
def test_bad_command_limits_are_refused_naming_the_field(bad):
    fields = {"force": 10.0, "torque": 1.0, "pos_step": 0.01, "rot_step": 0.1} | bad
    with pytest.raises(InvalidInputError, match=f"command_limits.{next(iter(bad))}"):
        CommandLimits(**fields)
    d = json.loads(peg_in_hole().to_json()) | {"command_limits": fields}
    with pytest.raises(InvalidInputError, match=f"command_limits.{next(iter(bad))}"):
        Scene.from_dict(d)


def test_command_limits_check_names_the_part_and_accepts_the_limit():
    limits = CommandLimits(force=10.0, torque=1.0, pos_step=0.01, rot_step=0.1)
    limits.check(np.array([6.0, 8.0, 0.0, 0.0, 0.0, 1.0]), ActionMode.WRENCH, "here")  # exactly at both limits
    with pytest.raises(InvalidInputError, match="here: the wrench command's torque is 1.5 N·m.*command_limits.torque"):
        limits.check(np.array([0.0, 0.0, 0.0, 1.5, 0.0, 0.0]), ActionMode.WRENCH, "here")
    with pytest.raises(InvalidInputError, match="pose-delta command's translation is 0.02 m"):
        limits.check(np.array([0.0, 0.02, 0.0, 0.0, 0.0, 0.0]), ActionMode.POSE_DELTA, "here")
    with pytest.raises(InvalidInputError, match="unknown key"):
        Scene.from_dict(json.loads(peg_in_hole().to_json()) | {"command_limits": {"force": 1.0, "speed": 2.0}})


def test_parts_without_collision_pieces_are_refused_with_the_way_out():
    """A non-convex mesh loads with no convex piece; a scene would let the tool fall through it (issue 16)."""
    from pathlib import Path

    from contactkit.geometry import load_mesh
    from contactkit.scene import StaticBody

    ell = load_mesh(Path(__file__).parent / "data" / "meshes" / "nonconvex_L.obj", name="L")
    assert ell.pieces == ()
    with pytest.raises(InvalidInputError, match=r"static 'L' has no convex collision pieces.*geometry\.decompose"):
        StaticBody(ell)
    with pytest.raises(InvalidInputError, match=r"tool 'L' has no convex collision pieces.*geometry\.decompose"):
        Tool(ell, 0.1, np.zeros(3), np.eye(3) * 1e-5)
    d = json.loads(peg_in_hole("square", 1e-3).to_json())
    d["statics"][1]["part"]["pieces"] = []
    with pytest.raises(InvalidInputError, match="no convex collision pieces"):
        Scene.from_dict(d)


def test_depth_model_is_optional_validated_and_serialised_only_when_set():
    from contactkit.scene import StaticBody

    scene = peg_in_hole("square", 1e-3)
    assert all(s.depth_model is None for s in scene.statics)
    assert all("depth_model" not in s for s in scene.to_dict()["statics"])
    slot_body = dataclasses.replace(scene.statics[1], depth_model="models/slot-depth/best.safetensors")
    with_model = dataclasses.replace(scene, statics=(scene.statics[0], slot_body))
    d = with_model.to_dict()
    assert d["statics"][1]["depth_model"] == "models/slot-depth/best.safetensors"
    assert "depth_model" not in d["statics"][0]
    back = Scene.from_json(with_model.to_json())
    assert back.statics[1].depth_model == "models/slot-depth/best.safetensors" and back.to_dict() == d
    for bad in ("", "   ", 3, b"x.safetensors"):
        with pytest.raises(InvalidInputError, match="depth_model"):
            StaticBody(scene.statics[1].part, depth_model=bad)
    d["statics"][1]["depth_model"] = 7
    with pytest.raises(InvalidInputError, match="depth_model"):
        Scene.from_dict(d)


def test_an_absurd_tool_mass_or_inertia_is_refused_with_its_bounds():
    from contactkit.bounds import MAX_TOOL_INERTIA_KGM2, MAX_TOOL_MASS_KG

    part = peg_in_hole().tool.part
    with pytest.raises(InvalidInputError, match=r"mass must be in \[1e-06, 10000\] kg .*payload.* got 1e\+308"):
        Tool(part, 1e308, np.zeros(3), np.eye(3) * 1e-5)
    with pytest.raises(InvalidInputError, match=r"largest principal moment is beyond 10000 kg m\^2"):
        Tool(part, 1.0, np.zeros(3), np.eye(3) * MAX_TOOL_INERTIA_KGM2 * 2)
    assert Tool(part, MAX_TOOL_MASS_KG, np.zeros(3), np.eye(3) * MAX_TOOL_INERTIA_KGM2).mass == MAX_TOOL_MASS_KG


@pytest.mark.parametrize("where, value, message", [
    (("tool", "mass"), "0.3", r"tool.mass must be a number, got '0.3' \(str\)"),
    (("tool", "friction"), True, r"tool.friction must be a number, got True"),
    (("tool", "com"), ["0", "0", "0"], r"tool.com must be numbers"),
    (("tool", "inertia"), [["1e-5", 0, 0], [0, 1e-5, 0], [0, 0, 1e-5]], r"inertia must be numbers"),
    (("controller", "gravity_compensation"), "false", r"controller.gravity_compensation must be true or false"),
    (("controller", "max_force"), "40", r"controller.max_force must be a number, got '40'"),
    (("workspace_lo",), [-0.1, -0.1, "0"], r"scene.workspace_lo must be numbers"),
])
def test_scene_values_of_the_wrong_type_are_refused_naming_the_field(where, value, message):
    """Issue 35 part 2: JSON text where a number or a boolean belongs is refused, never converted ("false" would
    have turned gravity compensation on)."""
    d = json.loads(peg_in_hole("square", 1e-3).to_json())
    target = d
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    with pytest.raises(InvalidInputError, match=message):
        Scene.from_dict(d)
