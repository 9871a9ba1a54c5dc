"""The MuJoCo "real" pushing world (issue 18 part 7, issue 32 parts 1–2): its hidden parameters are applied, the
joint loop as the drive runs it is stable where the explicit one chattered, and it pushes."""

import dataclasses

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.pushing.arm import Arm, JointPD, pd_from_ee_velocity
from contactkit.pushing.mismatch import PhysicsDraw, real_draw
from contactkit.pushing.patches import FrictionPatches
from contactkit.pushing.real import DriveLoop, RealPushWorld, RealWorldParams
from contactkit.pushing.scene import OBJECT_BODY, TABLE_GEOM, TIP_GEOMS, ObjectKind, PushScene, tip_offsets


@pytest.mark.parametrize("kind", list(ObjectKind))
def test_real_world_applies_its_hidden_parameters(kind):
    scene, draw = PushScene.for_object(kind), real_draw(0, 1, 2, 3)
    world = RealPushWorld(scene, RealWorldParams(physics=draw))
    m = world.model
    obj = m.body(OBJECT_BODY).id
    assert m.body_mass[obj] == pytest.approx(scene.object_mass * draw.object_mass_scale)
    assert m.geom_friction[m.geom(TIP_GEOMS[0]).id, 0] == pytest.approx(scene.mu_contact * draw.mu_contact_scale)
    assert m.dof_damping[:7] == pytest.approx(Arm(scene).damping * np.array(draw.damping_scale))
    assert m.dof_armature[:7] == pytest.approx(draw.armature)
    nominal = RealPushWorld(scene).model
    assert m.body_ipos[obj, :2] - nominal.body_ipos[obj, :2] == pytest.approx(draw.com_offset)
    assert m.geom_pos[m.geom(TIP_GEOMS[1]).id] == pytest.approx(tip_offsets(scene)[1] + draw.tip_offset)
    assert m.opt.timestep == pytest.approx(scene.dt / world.params.substeps)


def _step_response(drive: DriveLoop, armature: float) -> np.ndarray:
    """Joint 7 commanded 2 mm rad off and held, 0.5 s of eq 15 (K_p 1000, K_v 4) with gravity feed-forward."""
    scene = PushScene.for_object(ObjectKind.CUBE, object_pose=(0.75, 0.2, 0.3))
    world, arm = RealPushWorld(scene, RealWorldParams(PhysicsDraw(armature=(armature,) * 7), drive=drive)), Arm(scene)
    target = world.state.q + np.eye(7)[6] * 0.002
    pd = JointPD(np.full(7, 1000.0), np.full(7, 4.0), target, np.zeros(7))
    speeds = []
    for _ in range(50):
        world.step_pd(pd, arm.bias(world.state.q, world.state.qd))
        speeds.append(abs(world.state.qd[6]))
    return np.array(speeds), world.state.q[6] - target[6]


def test_implicit_joint_loop_is_stable_where_the_explicit_one_chattered():
    """Oracle: a PD step response with the former world's light wrist (armature 0.002 kg m²) settles when the
    drive's loop is integrated implicitly; the explicit 1 kHz loop keeps a limit cycle (the tapping artefact)."""
    speeds, error = _step_response(DriveLoop.IMPLICIT, 0.002)
    assert speeds[-10:].max() < 1e-6 and abs(error) < 1e-6
    speeds, error = _step_response(DriveLoop.EXPLICIT, 0.002)
    assert speeds[-10:].min() > 0.1 and abs(error) > 1e-4
    speeds, error = _step_response(DriveLoop.IMPLICIT, 0.0)  # stable even with no rotor inertia at all
    assert speeds[-10:].max() < 1e-6 and abs(error) < 1e-6


def test_real_world_push_moves_the_cube_with_bounded_forces():
    scene = PushScene.for_object(ObjectKind.CUBE)
    world, arm = RealPushWorld(scene), Arm(scene)
    touched = False
    for _ in range(60):
        s = world.state
        pd = pd_from_ee_velocity(arm, s.q, np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0]), scene.dt, 400.0, 20.0)
        step = world.step_pd(pd, arm.bias(s.q, np.zeros(7)))
        assert np.all(np.isfinite(step.contact_force)) and np.all(np.abs(step.torque) <= world.torque_limit + 1e-9)
        assert np.all(step.contact_force[:, 0] >= -1e-9)  # tips only push
        touched |= bool(step.in_contact.any())
    assert touched and world.state.obj_pose[0] > scene.object_pose[0] + 5e-3


def test_untouched_object_stays_put():
    scene = PushScene.for_object(ObjectKind.WEDGE, object_pose=(0.75, 0.2, 0.3))
    world, arm = RealPushWorld(scene, RealWorldParams(physics=real_draw(0, 0, 0, 0))), Arm(scene)
    for _ in range(20):
        step = world.step(arm.bias(world.state.q, world.state.qd))
    assert not step.in_contact.any()
    assert np.abs(world.state.obj_pose - scene.object_pose).max() < 1e-4


def test_table_friction_is_the_patch_under_the_object():
    """A uniform patch grid of scale 1.5 under the object: the table's coefficient is 1.5 μ_ground; off the grid
    it is μ_ground."""
    scene = PushScene.for_object(ObjectKind.CUBE)
    x, y, _ = scene.object_pose
    for origin, expected in (((x - 0.2, y - 0.2), 1.5), ((x + 1.0, y), 1.0)):
        patches = FrictionPatches(origin, 0.1, ((1.5,) * 4,) * 4)
        world = RealPushWorld(scene, RealWorldParams(PhysicsDraw(patches=patches)))
        world.step(np.zeros(7))
        assert world.model.geom_friction[world.model.geom(TABLE_GEOM).id, 0] == pytest.approx(
            expected * scene.mu_ground)


@pytest.mark.parametrize("bad", [dict(substeps=0), dict(solref=(0.01,)), dict(physics="x"), dict(drive="rk4")])
def test_bad_params_are_refused(bad):
    with pytest.raises(InvalidInputError):
        RealWorldParams(**bad)
    with pytest.raises(InvalidInputError):
        dataclasses.replace(PhysicsDraw(), object_mass_scale=0.0)
