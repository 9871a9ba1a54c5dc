"""The engine world under a real cell's world parameters (docs/worlds.md): it models the sensor mount and the
tool's mass overrides, checked by the same oracles as the MuJoCo world's (tests/mujoco/test_realcell.py), and
refuses latency, compliance and the sensor filter by name."""

import math

import numpy as np
import pytest

from contactkit.engine import EngineWorld
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.physics import WorldParams
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

G = 9.81


def _scene():
    return peg_in_hole("square", 5e-3, tool_mass=0.3)


def test_engine_world_takes_the_mount_too():
    scene = _scene()
    quat = rotvec_to_quat(np.array([0.0, 0.0, math.pi / 2]))
    readings = []
    for params in (WorldParams(), WorldParams(ft_mount_quat=tuple(quat))):
        world = EngineWorld(scene, params)
        world.reset(BodyState.at_rest(scene.target_pos + [0.0, 0.0, 1e-4]))
        readings.append([world.step(np.array([0, 0, -5.0, 0, 0, 0]), ActionMode.WRENCH).wrench for _ in range(5)])
    nominal, mounted = np.array(readings)
    assert nominal[-1, 2] > 1.0  # the floor pushes up on the tool
    np.testing.assert_allclose(mounted[:, :3], nominal[:, :3] @ quat_to_mat(quat), atol=1e-9)


def test_mass_override_falls_by_the_uncompensated_weight():
    """The controller compensates the scene's weight; an absolute tool mass m accelerates by (m0 - m) g / m."""
    scene = _scene()
    mass = 0.45
    params = WorldParams(tool_mass=mass)
    world = EngineWorld(scene, params)
    world.reset(BodyState.at_rest(np.array([0.0, 0.0, 0.2])))
    state = world.step(np.zeros(6), ActionMode.WRENCH).state
    assert state.lin_vel[2] == pytest.approx((scene.tool.mass - mass) * G / mass * params.control_dt, rel=1e-6)


@pytest.mark.parametrize("params", [WorldParams(command_latency_substeps=3), WorldParams(ft_filter_hz=30.0),
                                    WorldParams(compliance_stiffness=(1e4,) * 3 + (10.0,) * 3)])
def test_a_real_cells_latency_compliance_and_filter_are_refused(params):
    with pytest.raises(InvalidInputError, match="engine world does not model"):
        EngineWorld(_scene(), params)
