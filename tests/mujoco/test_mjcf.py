"""The MJCF the world builds has the scene's geometry: clearance measured inside MuJoCo equals the requested one."""

import mujoco
import numpy as np
import pytest

from contactkit.mujoco import MujocoWorld
from contactkit.tasks import peg_in_hole

GEOM_DISTANCE_TOL = 1e-8
"""MuJoCo's convex distance (GJK/EPA, float64) agrees with the exact clearance to this [m]."""


def _min_tool_slot_distance(world: MujocoWorld) -> float:
    m, d = world.model, world.data
    slot_body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "static1")
    tool = np.nonzero(world.tool_geoms)[0]
    walls = np.nonzero(m.geom_bodyid == slot_body)[0]
    fromto = np.zeros(6)
    return min(mujoco.mj_geomDistance(m, d, int(g1), int(g2), 0.05, fromto) for g1 in tool for g2 in walls)


@pytest.mark.parametrize(
    ("shape", "slot_shape", "clearance"),
    [("hexagon", None, 1e-3), ("square", None, 5e-3), ("triangle", None, 6.5e-5), ("circle", None, 6.5e-5),
     ("circle", "square", 1e-3)],
)
def test_clearance_inside_mujoco_equals_request(shape, slot_shape, clearance):
    scene = peg_in_hole(shape, clearance, slot_shape=slot_shape)
    world = MujocoWorld(scene)
    inside = world.state().replace(pos=scene.target_pos + [0.0, 0.0, 0.005])
    world.set_state(inside)
    assert _min_tool_slot_distance(world) == pytest.approx(clearance, abs=GEOM_DISTANCE_TOL)


def test_mjcf_uses_radians_and_quaternions():
    xml = MujocoWorld(peg_in_hole("square", 1e-3)).xml
    assert 'angle="radian"' in xml
    assert "euler=" not in xml and "axisangle=" not in xml


def test_tool_mass_and_inertia_follow_world_scale():
    from contactkit.physics import WorldParams

    scene = peg_in_hole("hexagon", 1e-3, tool_mass=0.4)
    world = MujocoWorld(scene, WorldParams(mass_scale=1.1))
    body = mujoco.mj_name2id(world.model, mujoco.mjtObj.mjOBJ_BODY, "tool")
    assert world.model.body_mass[body] == pytest.approx(0.44, rel=1e-9)
    principal = np.sort(np.linalg.eigvalsh(scene.tool.inertia)) * 1.1
    assert np.sort(world.model.body_inertia[body]) == pytest.approx(principal, rel=1e-6)
