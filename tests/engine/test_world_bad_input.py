"""Engine world on bad input: NaN pose or action, dt ≤ 0, zero mass, initial interpenetration, wild actions.

Each gets a clear contactkit error naming the problem, or the documented recovery (shallow initial
penetration is projected out without adding velocity); the state never holds NaN."""

import dataclasses
import math

import numpy as np
import pytest

from contactkit.engine.params import EngineParams
from contactkit.engine.world import EngineWorld
from contactkit.errors import InvalidInputError, SimulationDiverged
from contactkit.model import ActionMode
from contactkit.physics import WorldParams
from contactkit.scene import CommandLimits, Tool
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

from ._world_scenes import BOX_SIZE, box_scene, min_gap

RECOVERY_TOL = 2e-6
"""After one step from a shallow initial penetration the tool is out to within this [m] (the projection's
slop, 1 µm, plus the planar-surface prediction error)."""
RECOVERY_SPEED_TOL = 1e-9
"""The projection moves positions only: a tool released at rest stays (nearly) at rest [m/s]."""


@pytest.fixture(scope="module")
def world():
    return EngineWorld(peg_in_hole("hexagon", 1e-3))


@pytest.mark.parametrize("field, value", [("pos", [np.nan, 0.0, 0.1]), ("lin_vel", [0.0, np.inf, 0.0])])
def test_nan_pose_is_refused_and_state_kept(world, field, value):
    before = world.state().as_array()
    bad = BodyState.at_rest([0.0, 0.0, 0.1]).replace(**{field: np.array(value)})
    with pytest.raises(InvalidInputError, match=field):
        world.set_state(bad)
    assert np.array_equal(world.state().as_array(), before)


def test_non_unit_quaternion_and_batches_are_refused(world):
    with pytest.raises(InvalidInputError, match="quat"):
        world.set_state(BodyState.at_rest([0.0, 0.0, 0.1], [1.0, 0.2, 0.0, 0.0]))
    batch = BodyState.at_rest(np.zeros((2, 3)) + [0.0, 0.0, 0.1], np.tile([1.0, 0.0, 0.0, 0.0], (2, 1)))
    with pytest.raises(InvalidInputError, match="batch"):
        world.set_state(batch)


@pytest.mark.parametrize("bad", [[np.nan, 0, 0, 0, 0, 0], [0, 0, np.inf, 0, 0, 0], [0.0] * 5])
@pytest.mark.parametrize("mode", list(ActionMode))
def test_bad_action_is_refused_and_state_kept(world, bad, mode):
    before = world.state().as_array()
    with pytest.raises(InvalidInputError, match="action"):
        world.step(np.array(bad, dtype=float), mode)
    assert np.array_equal(world.state().as_array(), before)


def test_unknown_mode_is_refused(world):
    with pytest.raises(InvalidInputError, match="mode"):
        world.step(np.zeros(6), "teleport")


@pytest.mark.parametrize("dt", [0.0, -1e-3, float("nan")])
def test_non_positive_time_step_is_refused(dt):
    with pytest.raises(InvalidInputError, match="timestep"):
        WorldParams(timestep=dt)
    with pytest.raises(InvalidInputError, match="max_step"):
        EngineParams(max_step=dt)


def test_zero_mass_is_refused():
    scene = box_scene()
    with pytest.raises(InvalidInputError, match="mass"):
        Tool(scene.tool.part, 0.0, scene.tool.com, scene.tool.inertia)
    with pytest.raises(InvalidInputError, match="mass_scale"):
        WorldParams(mass_scale=0.0)


@pytest.mark.parametrize("bad", [{"relaxation": 2.0}, {"max_contacts": 0}, {"solver": "newton"},
                                 {"contact_margin": 1.0}, {"correction_fraction": 0.0}])
def test_bad_engine_settings_are_refused(bad):
    with pytest.raises(InvalidInputError, match="engine"):
        EngineParams(**bad)


def test_deep_initial_interpenetration_is_refused():
    scene = box_scene()
    world = EngineWorld(scene)
    before = world.state().as_array()
    with pytest.raises(InvalidInputError, match="deep"):
        world.set_state(BodyState.at_rest([0.0, 0.0, BOX_SIZE[2] / 2 - 0.005]))
    assert np.array_equal(world.state().as_array(), before)


def test_shallow_initial_interpenetration_is_projected_out_without_velocity():
    scene = box_scene()
    world = EngineWorld(scene, WorldParams(gravity=False))
    start = BodyState.at_rest([0.0, 0.0, BOX_SIZE[2] / 2 - 2e-4])
    world.set_state(start)
    assert min_gap(scene, start.pos, start.quat) == pytest.approx(-2e-4, abs=1e-9)
    state = world.step(np.zeros(6), ActionMode.WRENCH).state
    assert min_gap(scene, state.pos, state.quat) >= -RECOVERY_TOL
    assert np.linalg.norm(state.lin_vel) <= RECOVERY_SPEED_TOL and np.linalg.norm(state.ang_vel) <= RECOVERY_SPEED_TOL


def test_wild_actions_never_put_nan_in_the_state():
    """Wrenches of ~10 kN are refused by the scene's command limits (state kept); with the limits lifted, such
    wrenches and large pose jumps, repeatedly against the table, keep the state finite: a step is taken, or refused
    as SimulationDiverged (out of the workspace, through the table) with the state of before it kept. (Before the
    workspace bound, the first push threw the tool 1.65 m sideways, and no later step met the table.)"""
    scene = box_scene(height=0.001)
    world = EngineWorld(scene)
    before = world.state().as_array()
    with pytest.raises(InvalidInputError, match="command_limits.force"):
        world.step(np.array([0.0, 0.0, -1e4, 0.0, 0.0, 0.0]), ActionMode.WRENCH)
    assert np.array_equal(world.state().as_array(), before)
    world = EngineWorld(dataclasses.replace(scene, command_limits=CommandLimits(1e6, 1e4, 1.0, math.pi)))
    rng = np.random.default_rng(0)
    taken = 0
    for _ in range(30):
        wrench = rng.normal(0.0, 1.0, 6) * np.array([1e4, 1e4, 1e4, 1e2, 1e2, 1e2])
        for command, mode in ((wrench, ActionMode.WRENCH), (rng.normal(0.0, 0.05, 6), ActionMode.POSE_DELTA)):
            before = world.state().as_array()
            try:
                world.step(command, mode)
                taken += 1
            except SimulationDiverged:  # 10 kN may throw the tool out of the workspace or through the table
                assert np.array_equal(world.state().as_array(), before)
            assert np.all(np.isfinite(world.state().as_array()))
    assert taken >= 30, taken  # 32 of the 60 steps are taken with this seed
