"""What a real cell adds to the MuJoCo world (issue 19 part 1, issue 20 part 2), each checked by an oracle:
sensor mount (the reading rotates and its torque moves), mass override (free-fall of the uncompensated weight),
command latency (the response shifts by exactly k sub-steps), flange–tool compliance (static deflection = F/k),
the sensor's low-pass (step response of the time constant); and the worlds that cannot model them refuse them."""

import dataclasses
import math

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.mujoco import MujocoContactModel, MujocoWorld
from contactkit.mujoco.mjcf import FLANGE_INERTIA
from contactkit.mujoco.realcell import COMPLIANCE_MAX_OMEGA_DT, compliance_modes
from contactkit.mujoco.substeps import low_pass
from contactkit.physics import WorldParams, load_world
from contactkit.rotations import cross, quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

G = 9.81
EXACT_REL = 1e-9
"""Relative tolerance of oracles that hold to rounding (same physics, linear maps, constant force)."""
STATIC_REL = 1e-3
"""Relative tolerance of a settled spring deflection (the damped transient has decayed below this)."""
FREE = np.array([0.0, 0.0, 0.2])
"""A tool-origin position [m] well above the table and slot: free space."""


def _scene():
    return peg_in_hole("square", 5e-3, tool_mass=0.3)


def _pressing_readings(params: WorldParams, steps: int = 12) -> np.ndarray:
    """F/T readings ``(steps, 6)`` of the peg pushed sideways and down onto the slot floor by a wrench."""
    scene = _scene()
    world = MujocoWorld(scene, params)
    world.reset(BodyState.at_rest(scene.target_pos + [0.0, 0.0, 1e-4]))
    command = np.array([1.5, -0.8, -6.0, 0.01, 0.02, 0.0])
    return np.array([world.step(command, ActionMode.WRENCH).wrench for _ in range(steps)])


def test_mount_rotation_and_offset_move_the_reading():
    """Same physics, another sensor frame: F' = Rᵀ F and T' = Rᵀ (T − d × F) with the mount offset d."""
    quat = rotvec_to_quat(np.array([0.3, -0.2, 1.1]))
    offset = np.array([0.004, -0.002, 0.01])
    nominal = _pressing_readings(WorldParams())
    mounted = _pressing_readings(WorldParams(ft_mount_quat=tuple(quat), ft_mount_pos=tuple(offset)))
    rot = quat_to_mat(quat)
    force, torque = nominal[:, :3], nominal[:, 3:]
    assert np.abs(force).max() > 1.0  # the peg presses
    np.testing.assert_allclose(mounted[:, :3], force @ rot, atol=EXACT_REL * np.abs(force).max())
    np.testing.assert_allclose(mounted[:, 3:], (torque - cross(offset, force)) @ rot, atol=1e-9)


def test_batched_model_reads_in_the_mounted_frame():
    """The planner's MuJoCo (MujocoContactModel) applies the same mount to its noise-free readings."""
    scene = _scene()
    quat = rotvec_to_quat(np.array([0.2, 0.0, -0.9]))
    start = BodyState.at_rest(scene.target_pos + [0.0, 0.0, 1e-4])
    history = BodyState(*(np.asarray(a)[None, None] for a in (start.pos, start.quat, start.lin_vel, start.ang_vel)))
    action = np.array([[0.5, 0.0, -5.0, 0.0, 0.0, 0.0]])
    readings = [MujocoContactModel(scene, params, ActionMode.WRENCH).step(history, action)[1][0]
                for params in (WorldParams(), WorldParams(ft_mount_quat=tuple(quat)))]
    assert readings[0][2] > 1.0
    np.testing.assert_allclose(readings[1][:3], readings[0][:3] @ quat_to_mat(quat), atol=1e-9)
    np.testing.assert_allclose(readings[1][3:], readings[0][3:] @ quat_to_mat(quat), atol=1e-9)


def test_mass_override_falls_by_the_uncompensated_weight():
    """The controller compensates the scene's weight; an absolute tool mass m accelerates by (m₀ − m) g / m."""
    scene = _scene()
    mass = 0.45
    params = WorldParams(tool_mass=mass, linear_damping=0.0)
    world = MujocoWorld(scene, params)
    world.reset(BodyState.at_rest(FREE))
    state = world.step(np.zeros(6), ActionMode.WRENCH).state
    expected = (scene.tool.mass - mass) * G / mass * params.control_dt
    assert state.lin_vel[2] == pytest.approx(expected, rel=1e-6)


def test_inertia_override_sets_the_angular_acceleration():
    inertia = (2e-4, 2.5e-4, 1e-4, 0.0, 0.0, 0.0)
    params = WorldParams(tool_mass=0.3, tool_inertia=inertia, gravity=False)
    world = MujocoWorld(_scene(), params)
    world.reset(BodyState.at_rest(FREE))
    torque = 0.01
    state = world.step(np.array([0, 0, 0, 0, 0, torque]), ActionMode.WRENCH).state
    expected = torque / (inertia[2] + params.wrist_armature) * params.control_dt
    assert state.ang_vel[2] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("latency", [0, 7, 25 + 3])
def test_latency_delays_the_response_by_exactly_k_substeps(latency):
    """A force issued at step 1 moves the free tool only k sub-steps later: v after step j = F/m · h · (sub-steps
    under force), and the applied wrench of each period is F times the share of its sub-steps under force."""
    scene = _scene()
    params = WorldParams(gravity=False, command_latency_substeps=latency)
    world = MujocoWorld(scene, params)
    world.reset(BodyState.at_rest(FREE))
    force = np.array([2.0, 0.0, 0.0])
    command = np.concatenate([force, cross(scene.tool.com, force)])  # through the centre of mass: no rotation
    world.step(np.zeros(6), ActionMode.WRENCH)
    n, h = params.n_substeps, params.timestep
    for j in range(3):
        result = world.step(command, ActionMode.WRENCH)
        under = min(n, max(0, (j + 1) * n - latency))
        total = max(0, (j + 1) * n - latency)
        assert result.state.lin_vel[0] == pytest.approx(force[0] / scene.tool.mass * h * total, rel=EXACT_REL,
                                                        abs=1e-15)
        assert result.applied[0] == pytest.approx(force[0] * under / n, rel=EXACT_REL, abs=1e-15)


def test_reset_forgets_the_delayed_commands():
    params = WorldParams(gravity=False, command_latency_substeps=10)
    world = MujocoWorld(_scene(), params)
    world.reset(BodyState.at_rest(FREE))
    world.step(np.array([3.0, 0, 0, 0, 0, 0]), ActionMode.WRENCH)
    world.reset(BodyState.at_rest(FREE))
    assert world.step(np.zeros(6), ActionMode.WRENCH).state.lin_vel[0] == 0.0


def _compliant(**kwargs) -> WorldParams:
    base = dict(timestep=0.0005, n_substeps=100, compliance_stiffness=(2e4, 3e4, 5e4, 40.0, 40.0, 10.0),
                compliance_damping=(60.0, 60.0, 60.0, 0.05, 0.05, 0.01), compliance_mass=0.1)
    return WorldParams(**{**base, **kwargs})


def test_compliance_static_deflection_is_force_over_stiffness():
    """Hanging in free space with the weight compensated on the flange, the spring carries the tool's weight:
    z deflection = −m g / k_z, and nothing else deflects."""
    scene = _scene()
    params = _compliant()
    world = MujocoWorld(scene, params)
    world.reset(BodyState.at_rest(FREE))
    for _ in range(20):
        world.step(np.zeros(6), ActionMode.WRENCH)
    qz = world.data.qpos[world._compliance_q[2]]
    assert qz == pytest.approx(-scene.tool.mass * G / params.compliance_stiffness[2], rel=STATIC_REL)
    others = world.data.qpos[[world._compliance_q[i] for i in (0, 1, 3, 4, 5)]]
    assert np.abs(others).max() < STATIC_REL * abs(qz)
    assert np.linalg.norm(world.state().pos - world.data.xpos[world._driven]) == pytest.approx(abs(qz), rel=1e-6)


def test_compliance_torsion_carries_the_tools_share_of_a_torque():
    """Without gravity, a torque τ about the tool axis spins flange and tool together; the torsion spring carries
    the tool's share I_tool / (I_tool + I_flange) τ, so it twists by that over k (the axis through both centres of
    mass and the sensor, so nothing else couples)."""
    scene = _scene()
    params = _compliant(gravity=False)
    world = MujocoWorld(scene, params)
    world.reset(BodyState.at_rest(FREE))
    torque = 0.01
    for _ in range(10):
        world.step(np.array([0, 0, 0, 0, 0, torque]), ActionMode.WRENCH)
    tool_z = scene.tool.inertia[2, 2]
    flange_z = params.wrist_armature + FLANGE_INERTIA
    share = tool_z / (tool_z + flange_z) * torque
    assert world.data.qpos[world._compliance_q[5]] == pytest.approx(-share / params.compliance_stiffness[5],
                                                                    rel=STATIC_REL)


def test_compliance_too_stiff_for_the_timestep_is_refused():
    params = _compliant(timestep=0.002, n_substeps=25)
    omega = compliance_modes(_scene(), params).max()
    assert omega * params.timestep > COMPLIANCE_MAX_OMEGA_DT
    with pytest.raises(InvalidInputError, match="compliance_stiffness.*timestep <="):
        MujocoWorld(_scene(), params)


def test_low_pass_step_response_has_the_time_constant():
    """A unit step through the filter reads 1 − exp(−k h / τ) after k sub-steps, τ = 1 / (2π f_c)."""
    params = WorldParams(ft_filter_hz=20.0)
    from contactkit.mujoco.realcell import filter_gain

    rows, state = np.ones((25, 6)), np.zeros(6)
    mean = low_pass(rows, state, filter_gain(params))
    tau = 1.0 / (2 * math.pi * params.ft_filter_hz)
    k = np.arange(1, 26)
    np.testing.assert_allclose(rows[:, 0], 1.0 - np.exp(-k * params.timestep / tau), rtol=1e-12)
    assert mean[0] == pytest.approx(rows[:, 0].mean(), rel=1e-12)
    assert state[0] == rows[-1, 0]


def test_filter_changes_the_reading_not_the_motion():
    """Same states with and without the filter; the filtered reading lags the first contact and converges to the
    raw one once the force is steady."""
    raw = _pressing_readings(WorldParams(), steps=20)
    filtered = _pressing_readings(WorldParams(ft_filter_hz=20.0), steps=20)
    first = int(np.argmax(np.abs(raw[:, 2]) > 1.0))
    assert abs(filtered[first, 2]) < abs(raw[first, 2])
    np.testing.assert_allclose(filtered[-1], raw[-1], rtol=1e-3, atol=1e-6)


def test_the_batched_model_refuses_what_its_state_cannot_hold():
    scene = _scene()
    for params in (WorldParams(command_latency_substeps=3), WorldParams(ft_filter_hz=30.0), _compliant()):
        with pytest.raises(InvalidInputError, match="MujocoContactModel does not model"):
            MujocoContactModel(scene, params)


def test_target_is_target_parametric_plus_a_real_cell():
    """The new target differs from the stored results' target only by the real cell's effects (and the physics
    step their stiffness needs, at the same control period); nominal has none of them."""
    target, parametric = load_world("target"), load_world("target-parametric")
    assert target.unmodelled_effects() == ["command_latency_substeps", "compliance_stiffness", "ft_filter_hz"]
    assert parametric.unmodelled_effects() == [] and load_world("nominal").unmodelled_effects() == []
    assert target.control_dt == pytest.approx(parametric.control_dt, rel=1e-12)
    fields = ("timestep", "n_substeps", "command_latency_substeps", "compliance_stiffness", "compliance_damping",
              "compliance_mass", "ft_filter_hz")
    assert dataclasses.replace(target, **{f: getattr(parametric, f) for f in fields}) == parametric
    MujocoWorld(peg_in_hole("hexagon", 1e-3), target, rng=np.random.default_rng(0))  # integrates stably
