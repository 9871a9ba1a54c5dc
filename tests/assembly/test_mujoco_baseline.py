"""MuJoCo baseline (issue 17 part 4): the contact wrench it reports is the force the contacts put on the tool.

Oracle: a tool pressed by the virtual coupling against a flat face comes to rest; there the mean contact wrench of
one 10 ms step balances the mean coupling wrench (Newton: the tool does not accelerate), force and torque about the
COM, whichever face it is pressed against (the contact frame's rotation to the world is exercised by a face whose
normal is not +z).
"""

import numpy as np
import pytest

from contactkit.assembly.coupling import critical_gains
from contactkit.assembly.mujoco_baseline import (
    DEFAULTS,
    FASTEST,
    MujocoSettings,
    build_model,
    mujoco_one_step,
    mujoco_simulate,
    mujoco_step,
)
from contactkit.assembly.task import AssemblyKind, AssemblyTask
from contactkit.engine.reference import RigidBody
from contactkit.errors import InvalidInputError
from contactkit.geometry.boxes import box
from contactkit.geometry.mass import mass_properties
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState

TOOL = 0.02
"""Edge of the cube tool [m]."""
PRESS = 0.003
"""How far the setpoint lies beyond the face [m] (30 N at 1e4 N/m)."""
BALANCE_RTOL = 1e-3
"""At rest the contact force matches the coupling force to this fraction of its size (MuJoCo converges to its
steady state exponentially; after 0.6 s of 20 ms time constants the residual is far below it)."""
SETTLE_STEPS = 60
"""10 ms steps to come to rest."""


@pytest.fixture(scope="module")
def task():
    """A 2 cm steel cube (the tool) and a 20 cm slab centred at the origin (top face z = 1 cm, side x = 10 cm)."""
    tool, slab = box((TOOL, TOOL, TOOL), "cube"), box((0.2, 0.2, 0.02), "slab")
    props = mass_properties(tool, density=7850.0)
    body = RigidBody(props.mass, props.inertia, props.com, name="cube")
    return AssemblyTask(AssemblyKind.PEG_IN_HOLE, "cube-on-slab", tool, slab, body, 0.3, np.unique(tool.vertices,
                        axis=0), None, 0.0, 0.01)


@pytest.fixture(scope="module")
def gains(task):
    """Critically damped; the angular spring is soft enough for MuJoCo's explicit 2 ms coupling on a 63 g cube."""
    return critical_gains(task.body, 1.0e4, 0.1)


def _settle(task, gains, pos, setpoint_pos, setpoint_quat, settings):
    T = SETTLE_STEPS
    run = mujoco_simulate(task, BodyState.at_rest(pos), np.tile(setpoint_pos, (T, 1)),
                          np.tile(setpoint_quat, (T, 1)), gains, settings)
    assert run.failure is None
    return run.states[-1]


@pytest.mark.parametrize("settings", [DEFAULTS, FASTEST], ids=lambda s: s.name)
@pytest.mark.parametrize("face", ["top", "side"])
def test_contact_wrench_balances_the_coupling_at_rest(task, gains, settings, face):
    if face == "top":  # pressed down on the top face, with a 0.05 rad commanded tilt about x (a torque)
        pos, normal = np.array([0.0, 0.0, 0.01 + TOOL / 2]), np.array([0.0, 0.0, 1.0])
        quat = rotvec_to_quat(np.array([0.05, 0.0, 0.0]))
    else:  # pushed sideways into the slab's +x side face (its half-height is 1 cm: the cube's centre at z = 0)
        pos, normal = np.array([0.1 + TOOL / 2, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
        quat = np.array([1.0, 0.0, 0.0, 0.0])
    setpoint = pos - PRESS * normal
    rest = _settle(task, gains, pos, setpoint, quat, settings)
    step = mujoco_step(task, rest, setpoint, quat, gains, settings)
    assert step.failure is None and step.n_contacts > 0
    scale = np.abs(step.applied[:3]).max()
    assert scale > 0.5 * gains.stiffness * PRESS  # really pressed (not resting on nothing)
    np.testing.assert_allclose(step.wrench[:3], -step.applied[:3], atol=BALANCE_RTOL * scale)
    torque = max(np.abs(step.applied[3:]).max(), gains.angular_stiffness * 0.01)
    np.testing.assert_allclose(step.wrench[3:], -step.applied[3:], atol=BALANCE_RTOL * torque)
    assert step.wrench[:3] @ normal > 0.9 * np.linalg.norm(step.wrench[:3])  # pushes out of the face
    np.testing.assert_allclose(mujoco_one_step(task, rest, setpoint, quat, gains, settings), step.wrench)


def test_free_tool_feels_no_contact_and_follows_the_coupling(task, gains):
    start = BodyState.at_rest([0.0, 0.0, 0.05])
    step = mujoco_step(task, start, np.array([0.0, 0.0, 0.06]), np.array([1.0, 0.0, 0.0, 0.0]), gains, DEFAULTS)
    assert step.n_contacts == 0 and np.all(step.wrench == 0.0)
    assert step.state.pos[2] > start.pos[2] and step.state.lin_vel[2] > 0.0


def test_model_is_built_once_per_task_and_settings(task):
    assert build_model(task, DEFAULTS) is build_model(task, DEFAULTS)
    assert build_model(task, FASTEST) is not build_model(task, DEFAULTS)
    assert build_model(task, FASTEST).model.opt.timestep == FASTEST.timestep


def test_settings_refuse_a_step_that_does_not_divide_the_simulation_step():
    with pytest.raises(InvalidInputError, match="does not divide"):
        MujocoSettings("bad", timestep=0.003)
    with pytest.raises(InvalidInputError, match="cone"):
        MujocoSettings("bad", cone="round")


def test_a_diverging_run_is_reported_as_nan_with_its_reason(task):
    """MuJoCo's explicit coupling on the 63 g cube with a stiff angular spring (h·d_r/J ≈ 2.8 > 2) blows up: the
    run stops with MuJoCo's warning as the reason and NaN rows from there, never the reset state's numbers."""
    stiff = critical_gains(task.body, 1.0e4, 2.0)
    T = SETTLE_STEPS
    quat = rotvec_to_quat(np.array([0.05, 0.0, 0.0]))
    run = mujoco_simulate(task, BodyState.at_rest([0.0, 0.0, 0.02]), np.tile([0.0, 0.0, 0.017], (T, 1)),
                          np.tile(quat, (T, 1)), stiff, DEFAULTS)
    assert run.failure is not None and "BADQACC" in run.failure
    failed = int(run.failure.split(":")[0].split()[1])
    assert np.all(np.isfinite(run.wrenches[:failed])) and np.all(np.isnan(run.wrenches[failed:]))
    assert len(run.states) == failed + 1
    states, wrenches = run  # unpacks as the contract's (states, wrenches)
    assert wrenches is run.wrenches
    step = mujoco_step(task, run.states[-1], np.array([0.0, 0.0, 0.017]), quat, stiff, DEFAULTS)
    assert step.failure is not None  # the same step again, alone: the same blow-up
    assert np.all(np.isnan(step.wrench)) and np.all(np.isnan(step.state.pos))


def test_paper_peg_pressed_on_the_hole_floor_balances_the_coupling():
    """The paper's peg on its 640-gon hole's exact pieces (no CoACD): pushed 3 mm into the floor it comes to rest
    with the floor's force balancing the coupling, pointing up; MuJoCo's soft contact lets it sink below the floor
    (measured 0.56 mm at the defaults), never through the 10 mm floor."""
    from contactkit.assembly.coupling import default_gains
    from contactkit.assembly.task import peg_in_hole_task

    task = peg_in_hole_task(depth_net=None)
    gains = default_gains(task)
    setpoint, quat = np.array([0.0, 0.0, -PRESS]), np.array([1.0, 0.0, 0.0, 0.0])
    rest = _settle(task, gains, np.array([0.0, 0.0, 0.001]), setpoint, quat, DEFAULTS)
    step = mujoco_step(task, rest, setpoint, quat, gains, DEFAULTS)
    assert step.failure is None and step.n_contacts > 0
    np.testing.assert_allclose(step.wrench[:3], -step.applied[:3], atol=BALANCE_RTOL * abs(step.applied[2]))
    assert step.wrench[2] > 0.5 * gains.stiffness * PRESS
    assert -PRESS < rest.pos[2] < 0.0
