"""Engine world: statics (a resting tool reads its weight), non-penetration checked by COAL, momentum balance
of the applied wrench, impedance equilibrium, reproducibility, and the collect / ContactModel plumbing."""

import numpy as np
import pytest

from contactkit.data.collect import CollectSpec, collect
from contactkit.data.reader import open_dataset
from contactkit.engine.model import EngineContactModel
from contactkit.engine.params import EngineParams, Integrator, SolverKind
from contactkit.engine.world import EngineWorld
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, ContactModel
from contactkit.physics import WorldParams
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

from ._world_scenes import BOX_SIZE, G, box_scene, min_gap

WEIGHT_REL_TOL = 1e-4
"""A resting tool reads its weight to this (rigid contact: only the solver tolerance remains)."""
PENETRATION_TOL = 5e-6
"""Largest penetration [m] after any step, measured by COAL: the projection leaves
``EngineParams.correction_slop`` (1 µm) plus the planar-surface prediction error."""
MOMENTUM_REL_TOL = 1e-9
"""Free flight: Δ(m v) equals the mean applied force × period up to rounding (the engine's implicit damping
is reported at the velocity it acted on)."""
REST_SPEED_TOL = 2e-5
"""Largest speed [m/s] of a point of a resting tool: Gauss-Seidel stops at ``EngineParams.tolerance`` (1e-6 m/s)
per sweep and converges slowly on four coplanar corners under a tall tool, leaving ~10× that."""
EQUILIBRIUM_TOL = 1e-3
"""At rest, contact + applied + gravity balance to this [N] (the solver's velocity tolerance × m / h)."""

SOLVERS = [SolverKind.CONE_SOR, SolverKind.BOX_PGS]


def _resting_peg(solver=SolverKind.CONE_SOR, params=None):
    scene = peg_in_hole("square", 5e-3, tool_mass=0.3)
    world = EngineWorld(scene, params or WorldParams(), engine=EngineParams(solver=solver))
    world.reset(BodyState.at_rest(scene.target_pos + [0.0, 0.0, 1e-4]))
    return scene, world


@pytest.mark.parametrize("solver", SOLVERS)
def test_resting_tool_reads_its_weight(solver):
    scene, world = _resting_peg(solver)
    weight = scene.tool.mass * G
    for _ in range(20):  # cancel the gravity compensation: the peg rests on the slot floor under its weight
        result = world.step(np.array([0.0, 0.0, -weight, 0.0, 0.0, 0.0]), ActionMode.WRENCH)
    assert result.wrench[2] == pytest.approx(weight, rel=WEIGHT_REL_TOL)
    assert np.linalg.norm(result.wrench[:2]) < WEIGHT_REL_TOL * weight
    assert np.linalg.norm(result.wrench[3:]) < WEIGHT_REL_TOL * weight * 0.06  # centred: no torque
    rocking = np.linalg.norm(result.state.lin_vel) + np.linalg.norm(result.state.ang_vel) * 0.06
    assert rocking < REST_SPEED_TOL


def test_reading_is_in_the_sensor_frame():
    """A sensor turned 90° about x reads the weight of a resting box along its +y axis."""
    scene = box_scene(mass=1.0, sensor_quat=rotvec_to_quat(np.array([np.pi / 2, 0.0, 0.0])), height=0.0)
    world = EngineWorld(scene)
    for _ in range(20):
        result = world.step(np.zeros(6), ActionMode.WRENCH)
    assert result.wrench[:3] == pytest.approx([0.0, G, 0.0], abs=WEIGHT_REL_TOL * G)


@pytest.mark.parametrize("solver, integrator", [(SolverKind.CONE_SOR, Integrator.SEMI_IMPLICIT_EULER),
                                                (SolverKind.BOX_PGS, Integrator.SEMI_IMPLICIT_EULER),
                                                (SolverKind.CONE_SOR, Integrator.PASSIVE_MIDPOINT)])
def test_no_penetration_beyond_tolerance_after_any_step(solver, integrator):
    """A tilted box thrown down onto the table, then dragged: COAL never finds it deeper than the tolerance
    (with the midpoint pose update too, whose impact penetration the projection removes)."""
    scene = box_scene(height=0.008)
    world = EngineWorld(scene, engine=EngineParams(solver=solver, integrator=integrator))
    tilt = rotvec_to_quat(np.array([0.08, -0.05, 0.0]))
    world.reset(BodyState(scene.tool.init_pos, tilt, np.array([0.1, 0.0, -0.8]), np.array([2.0, 1.0, 0.0])))
    for k in range(40):
        command = np.array([3.0, 1.0, -20.0, 0.0, 0.0, 0.1]) if k > 20 else np.zeros(6)
        state = world.step(command, ActionMode.WRENCH).state
        assert min_gap(scene, state.pos, state.quat) >= -PENETRATION_TOL
    assert state.pos[2] < BOX_SIZE[2]  # it did land


def test_applied_force_equals_momentum_change_in_free_flight():
    scene = peg_in_hole("hexagon", 1e-3)
    world = EngineWorld(scene, WorldParams(gravity=False, wrist_armature=0.0))
    start = world.reset(BodyState.at_rest(scene.tool.init_pos + [0.0, 0.0, 0.05]))
    result = world.step(np.array([0.004, 0.0, 0.01, 0.0, 0.0, 0.0]), ActionMode.POSE_DELTA)
    assert result.applied[2] > 0.5 and result.applied[0] > 0.2

    def com_velocity(s):
        return s.lin_vel + np.cross(s.ang_vel, quat_to_mat(s.quat) @ scene.tool.com)

    dp = scene.tool.mass * (com_velocity(result.state) - com_velocity(start))
    assert dp == pytest.approx(result.applied[:3] * world.params.control_dt, rel=MOMENTUM_REL_TOL, abs=1e-15)


def test_impedance_equilibrium_reading_balances_controller():
    """Pressing down at rest: F/T (contact on the tool, world frame) + applied wrench + gravity = 0."""
    scene, world = _resting_peg()
    for _ in range(60):
        result = world.step(np.array([0.0, 0.0, -0.01, 0.0, 0.0, 0.0]), ActionMode.POSE_DELTA)
    contact_world = quat_to_mat(result.state.quat) @ result.wrench[:3]
    gravity = np.array([0.0, 0.0, -scene.tool.mass * G])
    assert contact_world + result.applied[:3] + gravity == pytest.approx(np.zeros(3), abs=EQUILIBRIUM_TOL)
    assert contact_world[2] > 1.0


def test_noise_needs_a_generator_and_is_reproducible():
    scene = peg_in_hole("hexagon", 1e-3)
    noisy = WorldParams(ft_noise_std=(0.3,) * 6)
    with pytest.raises(InvalidInputError, match="rng"):
        EngineWorld(scene, noisy)
    runs = []
    for _ in range(2):
        world = EngineWorld(scene, noisy, rng=np.random.default_rng(3))
        runs.append([world.step(np.array([0.001, 0.0, -0.02, 0.0, 0.0, 0.0]), ActionMode.POSE_DELTA) for _ in range(5)])
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a.wrench, b.wrench) and np.array_equal(a.state.as_array(), b.state.as_array())


def test_contact_model_matches_the_world_and_keeps_batch_shape():
    scene = peg_in_hole("hexagon", 1e-3)
    model = EngineContactModel(scene)
    assert isinstance(model, ContactModel)
    start = BodyState.at_rest(scene.target_pos + [0.0, 0.0, 0.003])
    history = BodyState(*(np.broadcast_to(np.asarray(a)[None, None, None], (2, 3, 1, a.shape[-1])).copy()
                          for a in (start.pos, start.quat, start.lin_vel, start.ang_vel)))
    action = np.zeros((2, 3, 6))
    action[..., 2] = -0.01
    nxt, wrench = model.step(history, action)
    assert nxt.pos.shape == (2, 3, 3) and wrench.shape == (2, 3, 6)
    world = EngineWorld(scene)
    world.set_state(start)
    reference = world.step(action[0, 0], ActionMode.POSE_DELTA)
    assert np.array_equal(nxt.pos[1, 2], reference.state.pos) and np.array_equal(wrench[0, 1], reference.wrench)


def test_collect_runs_with_the_engine_backend(tmp_path):
    spec = CollectSpec(episodes=1, steps=6, backend="engine", policy="random-spline", seed=1)
    assert collect(spec, str(tmp_path / "engine.h5")) == 1
    with open_dataset(tmp_path / "engine.h5") as ds:
        episode = ds.all_episodes()[0]
        assert ds.meta.backend == "engine"
    assert episode.pos.shape == (7, 3) and np.all(np.isfinite(episode.wrench))
