"""Differential tests of the engine against MuJoCo (its best tuning: 0.25 ms steps, solref 0.0005 1) on small
scenes: a tilted box dropped on the table (rest pose, F/T), a box sliding to a stop, a peg resting in a slot."""

import numpy as np
import pytest

from contactkit.engine.world import EngineWorld
from contactkit.model import ActionMode
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import WorldParams
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

from ._world_scenes import BOX_SIZE, G, box_scene

MUJOCO_BEST = WorldParams(timestep=0.00025, n_substeps=40, solref=(0.0005, 1.0))
ENGINE = WorldParams(timestep=0.002, n_substeps=5)
REST_HEIGHT_TOL = 1e-6
"""Rest height of the box centre: the engine's rigid contact leaves < 1 nm, MuJoCo's stiffest soft contact
~0.07 µm of penetration under 1 kg [m]."""
REST_TILT_TOL = 1e-6
"""Both settle flat: the tilt quaternion components below this."""
LANDING_TOL = 1e-4
"""Where the tilted box comes to rest after bouncing on its corners [m]: the two contact models (rigid,
inelastic vs stiff spring-damper) agree to 0.03 mm (measured); this allows 3×."""
WRENCH_TOL = 1e-3
"""F/T readings of the resting tools agree (and equal the weight) to this fraction of the weight."""
MUJOCO_SLIDE_RTOL = 0.01
"""MuJoCo's box stops within 1 % of Coulomb's distance (measured 0.5 % short: its soft, regularised friction)."""
SLIDE_SPEED = 0.3
"""Initial speed [m/s] of the sliding box (μ = 0.4: it stops after v²/2μg = 11.5 mm)."""


def _run(world, start, steps, command=None, mode=ActionMode.WRENCH):
    command = np.zeros(6) if command is None else command
    world.reset(start)
    for _ in range(steps):
        result = world.step(command, mode)
    return result


def test_dropped_box_comes_to_the_same_rest_and_reads_its_weight():
    scene = box_scene(mass=1.0, friction=0.4, height=0.005)
    start = BodyState.at_rest(scene.tool.init_pos, rotvec_to_quat(np.array([0.05, -0.03, 0.0])))
    engine = _run(EngineWorld(scene, ENGINE), start, 60)
    mujoco = _run(MujocoWorld(scene, MUJOCO_BEST), start, 60)
    for result in (engine, mujoco):
        assert result.state.pos[2] == pytest.approx(BOX_SIZE[2] / 2, abs=REST_HEIGHT_TOL)
        assert np.abs(result.state.quat[1:3]).max() < REST_TILT_TOL
        assert result.wrench == pytest.approx([0.0, 0.0, G, 0.0, 0.0, 0.0], abs=WRENCH_TOL * G)
    assert engine.state.pos[:2] == pytest.approx(mujoco.state.pos[:2], abs=LANDING_TOL)
    assert engine.wrench == pytest.approx(mujoco.wrench, abs=WRENCH_TOL * G)


def test_sliding_box_stops_where_mujoco_and_coulomb_say():
    """Stopping distance ``v²/2μg``: the engine's semi-implicit Euler with step ``h`` falls short by exactly
    ``h v / 2`` (2.5 ms: 0.4 mm); MuJoCo within :data:`MUJOCO_SLIDE_RTOL`."""
    mu = 0.4
    scene = box_scene(mass=1.0, friction=mu)
    start = BodyState(np.array([0.0, 0.0, BOX_SIZE[2] / 2]), np.array([1.0, 0.0, 0.0, 0.0]),
                      np.array([SLIDE_SPEED, 0.0, 0.0]), np.zeros(3))
    coulomb = SLIDE_SPEED**2 / (2.0 * mu * G)
    engine_world = EngineWorld(scene, ENGINE)
    engine = _run(engine_world, start, 20)
    mujoco = _run(MujocoWorld(scene, MUJOCO_BEST), start, 20)
    step = engine_world.step_dt
    assert engine.state.pos[0] == pytest.approx(coulomb - 0.5 * step * SLIDE_SPEED, abs=0.05 * step * SLIDE_SPEED)
    assert mujoco.state.pos[0] == pytest.approx(coulomb, rel=MUJOCO_SLIDE_RTOL)
    agreement = MUJOCO_SLIDE_RTOL + step * SLIDE_SPEED / coulomb
    assert engine.state.pos[0] == pytest.approx(mujoco.state.pos[0], rel=agreement)
    assert abs(engine.state.lin_vel[0]) < 1e-9 and abs(mujoco.state.lin_vel[0]) < 1e-6


def test_peg_resting_in_slot_reads_the_same_as_mujoco():
    """A square peg pressed onto its slot floor by the impedance controller: same F/T in the sensor frame."""
    scene = peg_in_hole("square", 5e-3, tool_mass=0.3)
    start = BodyState.at_rest(scene.target_pos + [0.0, 0.0, 1e-4])
    press = np.array([0.0, 0.0, -0.005, 0.0, 0.0, 0.0])
    engine = _run(EngineWorld(scene, ENGINE), start, 60, press, ActionMode.POSE_DELTA)
    mujoco = _run(MujocoWorld(scene, MUJOCO_BEST), start, 60, press, ActionMode.POSE_DELTA)
    weight = scene.tool.mass * G
    assert engine.wrench[2] > 1.0
    assert engine.wrench == pytest.approx(mujoco.wrench, abs=WRENCH_TOL * weight)
    assert engine.applied == pytest.approx(mujoco.applied, abs=WRENCH_TOL * weight)
