"""peg_in_hole's yaw (issue 35 part 8): the peg and its slot turn together, so a turned peg inserts exactly as the
unturned one; a peg turned alone does not fit (the oracle can fail)."""

import dataclasses
import math

import numpy as np
import pytest

from contactkit.engine.world import EngineWorld
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.mujoco import MujocoWorld
from contactkit.tasks.scenes import peg_in_hole

DOWN = np.array([0.0, 0.0, -0.005, 0.0, 0.0, 0.0])
"""A pose-target step straight down [m]; 30 of them push the peg tip from 10 mm above the slot to its floor."""
FLOOR_TOL_M = 1e-4
"""How close to the hole's floor an inserted peg's tip ends [m] (MuJoCo's soft contact sinks 70 µm)."""


def _insert(world_type, scene) -> float:
    world = world_type(scene)
    for _ in range(30):
        state = world.step(DOWN, ActionMode.POSE_DELTA).state
    return float(state.pos[2])


@pytest.mark.parametrize("world_type", [MujocoWorld, EngineWorld])
def test_a_turned_square_peg_inserts_into_its_turned_slot(world_type):
    turned = peg_in_hole("square", 1e-3, yaw=math.radians(30))
    assert abs(_insert(world_type, turned) - turned.target_pos[2]) < FLOOR_TOL_M
    alone = dataclasses.replace(turned, statics=peg_in_hole("square", 1e-3).statics)  # the slot not turned
    assert _insert(world_type, alone) > turned.meta["slot_top_z"] - FLOOR_TOL_M  # rests on the slot's top face


def test_yaw_zero_is_the_unturned_scene_and_a_bad_yaw_is_refused():
    assert peg_in_hole("hexagon", 1e-3, yaw=0.0).to_json() == peg_in_hole("hexagon", 1e-3).to_json()
    with pytest.raises(InvalidInputError, match="yaw must be a finite angle"):
        peg_in_hole("square", 1e-3, yaw=float("nan"))


def test_an_absurd_tool_mass_or_start_height_is_refused_with_its_bound():
    with pytest.raises(InvalidInputError, match=r"tool mass 1e\+308 kg is out of \[1e-06, 10000\] kg"):
        peg_in_hole("square", 1e-3, tool_mass=1e308)  # was "degenerate mass distribution ... got inf"
    with pytest.raises(InvalidInputError, match=r"start_height 1e\+308 m must be in \[0, 0.165\] m"):
        peg_in_hole("hexagon", 1e-3, start_height=1e308)  # was written, the tool 1e308 m up
    top = peg_in_hole("hexagon", 1e-3, start_height=0.165)
    assert top.tool.init_pos[2] == pytest.approx(top.workspace_hi[2], abs=1e-15)  # the largest: at the top


@pytest.mark.parametrize("name", ["size", "length", "depth"])
def test_a_part_size_beyond_the_coordinate_limit_is_named(name):
    """size = 1e308 was refused as 'cup hole must be a convex polygon ... corner 1 is not'."""
    with pytest.raises(InvalidInputError, match=f"peg_in_hole: {name} 1e\\+308 m is beyond the geometry's "
                                                "coordinate limit of 1000 m"):
        peg_in_hole("square", 1e-3, **{name: 1e308})
